// The UI entries in Chromium: nostr-outbox/store's snapshot contract, nostr-outbox/react's
// `useOutbox` in a React 19 app (react-dom/client's createRoot, StrictMode, React's
// development build, which warns when getSnapshot is not cached) and nostr-outbox/svelte's
// store in a Svelte 5 component (`$queue`, compiled by svelte/compiler) and with
// svelte/store's `get` and `derived`; React, react-dom and Svelte from npm (versions pinned
// in package.json), bundled with esbuild as in adapters.test.mjs.
// Run: cd tests/e2e && node --test subscribe.test.mjs   (needs pkg/ from `make build`)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile, readFile, symlink, rm } from "node:fs/promises";
import { join } from "node:path";
import { build } from "esbuild";
import { compile } from "svelte/compiler";
import { startServer, launch, IMPORT_PACKAGE, ROOT } from "./harness.mjs";
import { signedEvents } from "./events.mjs";

const OUT = join(ROOT, "target/e2e-subscribe");
const RELAYS = ["wss://a.example"];
let server, browser;

/** esbuild loads .svelte files through Svelte's own compiler (client output). */
const sveltePlugin = {
  name: "svelte",
  setup(b) {
    b.onLoad({ filter: /\.svelte$/ }, async (args) => {
      const { js, warnings } = compile(await readFile(args.path, "utf8"), { filename: args.path, generate: "client" });
      if (warnings.length) throw new Error(`svelte: ${warnings.map((w) => w.message).join("; ")}`);
      return { contents: js.code, loader: "js", resolveDir: join(ROOT, "tests/e2e/subscribe") };
    });
  },
};

before(async () => {
  // `nostr-outbox` resolves to pkg/ through a node_modules of its own (as if installed).
  await rm(OUT, { recursive: true, force: true });
  await mkdir(join(OUT, "node_modules"), { recursive: true });
  await symlink(join(ROOT, "pkg"), join(OUT, "node_modules/nostr-outbox"));
  for (const app of ["react", "svelte"]) {
    await build({
      entryPoints: [join(ROOT, `tests/e2e/subscribe/${app}-app.js`)],
      bundle: true,
      format: "esm",
      target: "es2022",
      outfile: join(OUT, `${app}.js`),
      nodePaths: [join(OUT, "node_modules"), join(ROOT, "tests/e2e/node_modules")],
      conditions: ["browser"],
      define: { "process.env.NODE_ENV": '"development"' },
      plugins: [sveltePlugin],
      logLevel: "error",
    });
    await writeFile(join(OUT, `${app}.html`), `<!doctype html><meta charset="utf-8"><script type="module" src="./${app}.js"></script>\n`);
  }
  server = await startServer();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

/** A page whose uncaught errors and console errors and warnings are collected. */
async function newPage() {
  const page = await browser.context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    // A failed load is reported by its response below (the browser's favicon.ico is not one).
    if (m.text().startsWith("Failed to load resource")) return;
    if (m.type() === "error" || m.type() === "warning") problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on("response", (res) => {
    if (res.status() >= 400 && !res.url().endsWith("/favicon.ico")) problems.push(`${res.status()}: ${res.url()}`);
  });
  return { page, problems };
}

async function openApp(app) {
  const { page, problems } = await newPage();
  await page.goto(`${server.url}/target/e2e-subscribe/${app}.html`);
  await page.waitForFunction(() => window.app, null, { timeout: 20_000 }).catch(() => {
    throw new Error(`${app} app did not start: ${problems.join("; ")}`);
  });
  return { page, problems };
}

const counts = (page, text) =>
  page.waitForFunction((t) => document.getElementById("counts")?.textContent === t, text, { timeout: 10_000 }).catch(async () => {
    throw new Error(`counts never read "${text}"; the page shows "${await page.textContent("#counts")}"`);
  });
const stages = (page) => page.$$eval("li", (lis) => lis.map((li) => li.dataset.stage));
/**
 * Waits until the page shows the counts `text` and the rows' `stages`: the store reads
 * `status()` and `list()` side by side, so a commit between the two reads shows in one
 * before the other until the read its `change` event causes (js/store.js).
 */
const shows = (page, text, want) =>
  page.waitForFunction(([t, w]) => document.getElementById("counts")?.textContent === t &&
    JSON.stringify([...document.querySelectorAll("li")].map((li) => li.dataset.stage)) === JSON.stringify(w), [text, want], { timeout: 10_000 })
    .catch(async () => {
      throw new Error(`never showed "${text}" ${JSON.stringify(want)}: "${await page.textContent("#counts")}" ${JSON.stringify(await stages(page))}`);
    });

/** Another tab of the same origin enqueues into the outbox named `name`. */
async function enqueueFromAnotherTab(name, event) {
  const { page } = await newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  await page.evaluate(async ([IMPORT_PACKAGE, name, event, relays]) => {
    const m = await eval(IMPORT_PACKAGE);
    const outbox = await m.Outbox.open({ name, autoFlush: false });
    await outbox.enqueue(event, relays);
    await outbox.close();
  }, [IMPORT_PACKAGE, name, event, RELAYS]);
  await page.close();
}

test("store: the same snapshot until the data changes, one read per burst, unsubscribe stops it", async () => {
  const { page, problems } = await newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  const events = signedEvents(6);
  const r = await page.evaluate(async ([IMPORT_PACKAGE, events, relays]) => {
    const m = await eval(IMPORT_PACKAGE);
    const { createOutboxStore } = await import("/pkg/store.js");
    const outbox = await m.Outbox.open({ name: "subscribe-store", transport: { publish: async () => ({ ok: true, message: "" }) } });
    // Reads counted, and how many run at once.
    let reads = 0, dmReads = 0, inFlight = 0, maxInFlight = 0, changes = 0;
    const list = outbox.list.bind(outbox);
    outbox.list = async (q) => {
      if (q?.lane === "dm") dmReads++;
      else reads++;
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      try { return await list(q); } finally { inFlight--; }
    };
    outbox.addEventListener("change", () => changes++);
    const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
    const until = async (f) => { for (let i = 0; i < 200 && !f(); i++) await sleep(10); return f(); };
    const out = {};

    const store = createOutboxStore(outbox, { limit: 10 });
    const initial = store.getSnapshot();
    out.initial = { loading: initial.loading, stable: store.getSnapshot() === initial, server: store.getServerSnapshot() === initial, reads };
    const calls = [];
    const stop = store.subscribe((s) => calls.push(s));
    await store.refresh();
    const loaded = store.getSnapshot();
    out.loaded = { loading: loaded.loading, total: loaded.status.total, records: loaded.records.length, calls: calls.length, passed: calls[0] === loaded, frozen: Object.isFrozen(loaded) && Object.isFrozen(loaded.records) };

    await store.refresh();
    await sleep(50);
    out.unchanged = { same: store.getSnapshot() === loaded, calls: calls.length };

    await outbox.enqueue(events[0], relays);
    await until(() => calls.length === 2);
    const one = store.getSnapshot();
    out.enqueued = { changed: one !== loaded, pending: one.status.pending, ids: one.records.map((x) => x.id), calls: calls.length };

    await outbox.enqueue(events[1], relays);
    await until(() => store.getSnapshot().records.length === 2);
    const two = store.getSnapshot();
    out.kept = { firstRecordKept: two.records[0] === one.records[0], pending: two.status.pending };

    // A flush fires several events per record (attempt, delivered, settled, change…).
    const [readsBefore, changesBefore, callsBefore] = [reads, changes, calls.length];
    await outbox.flush();
    // Counts and records are two reads: a snapshot may show one a commit ahead of the
    // other until the read the last change caused (see js/store.js).
    await until(() => store.getSnapshot().status.satisfied === 2 && store.getSnapshot().records.every((x) => x.stage === "satisfied"));
    const done = store.getSnapshot();
    out.flushed = {
      satisfied: done.status.satisfied,
      stages: done.records.map((x) => x.stage),
      reads: reads - readsBefore,
      changes: changes - changesBefore,
      notified: calls.length - callsBefore,
      distinct: calls.every((s, i) => i === 0 || s !== calls[i - 1]),
      maxInFlight,
    };

    stop();
    stop(); // twice: nothing more
    const callsAtStop = calls.length;
    const readsAtStop = reads;
    await outbox.enqueue(events[2], relays);
    await sleep(100);
    out.afterUnsubscribe = { calls: calls.length - callsAtStop, reads: reads - readsAtStop, snapshotKept: store.getSnapshot() === done };

    // Subscribing again reads what changed meanwhile.
    const later = [];
    const stop2 = store.subscribe((s) => later.push(s));
    await until(() => later.length === 1);
    out.resubscribed = { total: store.getSnapshot().status.total, records: store.getSnapshot().records.length };

    // A lane's store counts that lane only and ignores other lanes' changes.
    const dm = createOutboxStore(outbox, { lane: "dm" });
    const dmCalls = [];
    const stopDm = dm.subscribe((s) => dmCalls.push(s));
    await dm.refresh();
    const dmLoaded = dm.getSnapshot();
    await outbox.enqueue(events[3], relays, { lane: "dm" });
    await until(() => dm.getSnapshot().records.length === 1);
    const dmOne = dm.getSnapshot();
    // The default lane's changes: the lane-less store reads, the dm store does not.
    const [readsNow, dmReadsNow] = [reads, dmReads];
    await outbox.enqueue(events[4], relays);
    await until(() => store.getSnapshot().records.length === 5);
    await sleep(50);
    out.lane = {
      before: dmLoaded.status.total,
      after: dmOne.status.total,
      records: dmOne.records.map((x) => x.lane),
      otherLane: { reads: reads > readsNow, dmReads: dmReads - dmReadsNow, same: dm.getSnapshot() === dmOne },
    };

    // A listener that throws: the others are still called, the store goes on.
    const stopBad = store.subscribe(() => { throw new Error("a listener's bug"); });
    const laterBefore = later.length;
    const afterBad = [];
    const stopAfter = store.subscribe((s) => afterBad.push(s));
    await outbox.enqueue(events[5], relays);
    await until(() => store.getSnapshot().records.length === 6);
    await store.refresh();
    out.throwing = { others: later.length > laterBefore && afterBad.length > 0, records: store.getSnapshot().records.length };
    stopBad();
    stopAfter();

    // A failed read is in the snapshot; the data stays.
    await outbox.close();
    await store.refresh();
    const failed = store.getSnapshot();
    out.closed = { code: failed.error?.code, records: failed.records.length, loading: failed.loading };
    stop2();
    stopDm();
    return out;
  }, [IMPORT_PACKAGE, events, RELAYS]);

  assert.deepEqual(r.initial, { loading: true, stable: true, server: true, reads: 0 }, "no read before a subscriber");
  assert.deepEqual(r.loaded, { loading: false, total: 0, records: 0, calls: 1, passed: true, frozen: true });
  assert.deepEqual(r.unchanged, { same: true, calls: 1 }, "no change: the same object and no call");
  assert.deepEqual(r.enqueued, { changed: true, pending: 1, ids: [events[0].id], calls: 2 });
  assert.deepEqual(r.kept, { firstRecordKept: true, pending: 2 }, "an unchanged record keeps its object");
  assert.equal(r.flushed.satisfied, 2);
  assert.deepEqual(r.flushed.stages, ["satisfied", "satisfied"]);
  assert.ok(r.flushed.distinct, "each call brings a new snapshot");
  assert.ok(r.flushed.notified >= 1);
  assert.ok(r.flushed.reads < r.flushed.changes, `coalesced: ${r.flushed.reads} reads for ${r.flushed.changes} change events`);
  assert.equal(r.flushed.maxInFlight, 1, "reads never overlap");
  assert.deepEqual(r.afterUnsubscribe, { calls: 0, reads: 0, snapshotKept: true });
  assert.deepEqual(r.resubscribed, { total: 3, records: 3 });
  assert.deepEqual(r.lane, { before: 0, after: 1, records: ["dm"], otherLane: { reads: true, dmReads: 0, same: true } }, "a lane's store: that lane's counts and changes");
  assert.deepEqual(r.throwing, { others: true, records: 6 });
  assert.deepEqual(r.closed, { code: "closed", records: 6, loading: false }, "a failed read keeps the data");
  assert.deepEqual(problems, ["pageerror: a listener's bug"], "the listener's error is reported, once");
  await page.close();
});

test("react: useOutbox re-renders a React 19 root on enqueue, flush and another tab's enqueue, and only then", async () => {
  const { page, problems } = await openApp("react");
  const events = signedEvents(2, { content: (i) => `react ${i}` });
  await counts(page, "pending 0 satisfied 0 total 0");
  const settled = await page.evaluate(() => app.seen());
  await page.waitForTimeout(300);
  assert.deepEqual(await page.evaluate(() => app.seen()), settled, "no change: no render");

  // The parent renders again: a new query object, the same query (no reload).
  await page.evaluate(() => app.rerender());
  await page.waitForFunction(() => document.querySelector("main").dataset.tick === "1");
  const after = await page.evaluate(() => app.seen());
  assert.equal(after.snapshots, settled.snapshots, "the same snapshot");
  assert.ok(after.renders > settled.renders, "it did render");
  assert.equal(after.loadingAgain, false);

  await page.evaluate(([e, relays]) => app.outbox.enqueue(e, relays), [events[0], RELAYS]);
  await shows(page, "pending 1 satisfied 0 total 1", ["pending"]);
  await page.evaluate(() => app.outbox.flush());
  await shows(page, "pending 0 satisfied 1 total 1", ["satisfied"]);
  assert.equal(await page.textContent("li"), "react 0: satisfied");

  await enqueueFromAnotherTab("subscribe-react", events[1]);
  await shows(page, "pending 1 satisfied 1 total 2", ["satisfied", "pending"]);
  const idle = await page.evaluate(() => app.seen());
  await page.waitForTimeout(300);
  assert.deepEqual(await page.evaluate(() => app.seen()), idle, "no change: no render");

  assert.ok((await page.evaluate(() => app.changeListeners())) > 0);
  await page.evaluate(() => app.unmount());
  assert.equal(await page.evaluate(() => app.changeListeners()), 0, "unmounted: no listener left on the outbox");
  assert.deepEqual(problems, [], "no React warning (getSnapshot cached, no update loop)");
  await page.close();
});

test("svelte: $store in a Svelte 5 component, and svelte/store's get and derived", async () => {
  const { page, problems } = await openApp("svelte");
  const events = signedEvents(3, { content: (i) => `svelte ${i}` });
  await counts(page, "pending 0 satisfied 0 total 0");
  const seen = await page.evaluate(() => app.seen());
  await page.waitForTimeout(300);
  assert.equal(await page.evaluate(() => app.seen()), seen, "no change: no new value");

  await page.evaluate(([e, relays]) => app.outbox.enqueue(e, relays), [events[0], RELAYS]);
  await counts(page, "pending 1 satisfied 0 total 1");
  await page.evaluate(() => app.outbox.flush());
  await shows(page, "pending 0 satisfied 1 total 1", ["satisfied"]);
  await enqueueFromAnotherTab("subscribe-svelte", events[1]);
  await counts(page, "pending 1 satisfied 1 total 2");

  const r = await page.evaluate(async ([e, relays]) => {
    const { get, derived } = app.svelte;
    const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
    const store = app.outboxStore(app.outbox, { stage: "pending" });
    const first = get(store); // the store contract: the value at once, synchronously
    await store.refresh();
    const loaded = get(store);
    const again = get(store);
    const pending = derived(store, ($s) => ($s.loading ? null : $s.records.map((x) => x.event.content)));
    const values = [];
    const stop = pending.subscribe((v) => values.push(v));
    const atOnce = values.length;
    await app.outbox.enqueue(e, relays);
    for (let i = 0; i < 200 && values[values.length - 1]?.length !== 2; i++) await sleep(10);
    stop();
    const count = values.length;
    await app.outbox.flush();
    await sleep(200);
    return {
      first: first.loading,
      loaded: loaded.loading ? null : loaded.records.map((x) => x.event.content),
      same: loaded === again,
      atOnce,
      last: values[values.length - 1],
      afterStop: values.length - count,
    };
  }, [events[2], RELAYS]);
  assert.equal(r.first, true, "get() before any read: the loading snapshot");
  assert.deepEqual(r.loaded, ["svelte 1"]);
  assert.equal(r.same, true, "get() twice with no change: the same object");
  assert.equal(r.atOnce, 1, "subscribe calls run at once");
  assert.deepEqual(r.last, ["svelte 1", "svelte 2"]);
  assert.equal(r.afterStop, 0, "no value after unsubscribe");
  await counts(page, "pending 0 satisfied 3 total 3");

  assert.ok((await page.evaluate(() => app.changeListeners())) > 0);
  await page.evaluate(() => app.unmount());
  assert.equal(await page.evaluate(() => app.changeListeners()), 0, "unmounted: $queue unsubscribed");
  assert.deepEqual(problems, []);
  await page.close();
});
