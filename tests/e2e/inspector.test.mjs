// <nostr-outbox-inspector> (nostr-outbox/inspector, the built pkg/inspector.js) in Chromium
// (playwright-core), Firefox ESR (geckodriver, firefox.mjs) and WebKit (WebKitGTK's
// WebKitWebDriver, webkit.mjs), on an IndexedDB outbox and two real nostr-rs-relay
// instances: the rows a user sees appear and change as records are enqueued and relays
// answer (one relay down, then back), a relay's rejection exhausts a record and its Retry
// and Cancel buttons change the stored stage, the evidence opens on demand, the stage and
// lane filters narrow the rows and the counts, a failed action is shown, and removing the
// element removes its listener. In Chromium the buttons are reached and pressed with the
// keyboard (Tab, Enter, Space) and focus is visible. axe-core (pinned in package.json) finds
// no violation in the rendered element (shadow tree included) in each browser.
// Run: cd tests/e2e && node --test inspector.test.mjs   (needs pkg/ from `make build`)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, generateSecretKey } from "nostr-tools/pure";
import { startServer, launch, relay } from "./harness.mjs";
import { signedEvents } from "./events.mjs";
import { launchWebKit, webkitVersion } from "./webkit.mjs";
import { launchFirefox, firefoxVersion } from "./firefox.mjs";

let server, relayA, relayB;
before(async () => {
  server = await startServer();
  relayA = await relay();
  relayB = await relay();
  await relayA.start();
});
after(async () => {
  await relayA?.destroy();
  await relayB?.destroy();
  await server?.close();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `read()` until `ok(value)`; fails with the last value seen. */
async function until(what, read, ok, ms = 20_000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    last = await read();
    if (ok(last)) return last;
    if (Date.now() > end) throw new Error(`${what}: never happened; last seen ${JSON.stringify(last, null, 1)}`);
    await sleep(100);
  }
}

/**
 * The user's path through the element, the same in every browser. `call(name, ...args)`
 * runs the page's window[name]; `press(id, part)` activates a row's button (a click, or the
 * keyboard in Chromium).
 */
async function scenario(label, call, press) {
  await relayB.stop();
  const [note, laneNote] = signedEvents(2, { content: (i) => `${label} note ${i}` });
  // Dated 2 h ahead: the outbox holds it until then (relays refuse events from the future);
  // sent at once with Send now, nostr-rs-relay refuses it for good (more than 30 min ahead:
  // "invalid: …").
  const future = finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000) + 7200, tags: [], content: `${label} from the future` }, generateSecretKey());
  const view = () => call("view");
  const rowOf = (v, id) => v.rows.find((r) => r.id === id);

  const opened = await call("openOutbox", `inspector-${label}`);
  assert.deepEqual(opened, { defined: true, listeners: 1 }, "the element listens to the outbox it was given");
  let v = await view();
  assert.deepEqual(v.rows, []);
  assert.equal(v.empty, "No records.");
  assert.equal(v.counts.total, 0);
  assert.equal(v.countsLive, "polite", "the counts are a live region");

  // Enqueue: the row appears (a `change` event, no reload).
  await call("enqueue", note, [relayA.url, relayB.url], { policy: "all" });
  v = await until("the enqueued row", view, (x) => rowOf(x, note.id)?.stage === "pending");
  let r = rowOf(v, note.id);
  assert.deepEqual(r.buttons, ["Evidence (0)", "Cancel"], "pending: Cancel, no Retry");
  assert.deepEqual(r.relays.map((x) => x.text.replace(/^\S+ /, "")), ["not tried yet", "not tried yet"]);
  assert.equal(v.counts.pending, 1);
  assert.equal(v.empty, null);

  // Relay A accepts, relay B is down: the record waits for a retry.
  await call("flush");
  v = await until("relay A's answer", view, (x) => rowOf(x, note.id)?.stage === "retryable");
  r = rowOf(v, note.id);
  const [a, b] = [r.relays.find((x) => x.relay === relayA.url), r.relays.find((x) => x.relay === relayB.url)];
  assert.equal(a.state, "accepted", JSON.stringify(r));
  assert.match(a.text, /accepted/);
  assert.equal(b.state, "open", JSON.stringify(r));
  assert.match(b.text, /unreachable|timeout/);
  assert.match(r.attempts, /^1 of \d+$/);
  assert.match(r.next, /^(due|in \d+ s)$/);
  assert.equal(v.counts.retryable, 1);

  // Relay B comes back and answers: the stage changes to satisfied.
  await relayB.start();
  v = await until(
    "relay B's answer",
    async () => {
      await call("flush");
      return view();
    },
    (x) => rowOf(x, note.id)?.stage === "satisfied",
    30_000,
  );
  r = rowOf(v, note.id);
  assert.deepEqual(r.relays.map((x) => x.state), ["accepted", "accepted"]);
  assert.equal(r.buttons.length, 1, "satisfied: no Retry, no Cancel");
  assert.equal(await call("storedStage", note.id), "satisfied");

  // The evidence, on demand: every answer, relay B's failure included.
  assert.equal(await call("click", note.id, "evidence-button"), true);
  const ev = await call("evidence", note.id);
  assert.equal(ev.expanded, "true");
  assert.equal(ev.hidden, false);
  assert.equal(ev.follows, true, "the evidence row follows its record's row");
  const outcomes = ev.answers.map((x) => x.outcome);
  assert.ok(outcomes.filter((o) => o === "accepted").length === 2, JSON.stringify(ev.answers));
  assert.ok(outcomes.some((o) => o === "unreachable" || o === "timeout"), JSON.stringify(ev.answers));

  // An event dated ahead waits for its time: Send now and Cancel; the flush leaves it.
  await call("enqueue", future, [relayA.url], { policy: "all" });
  await call("flush");
  v = await until("the held row", view, (x) => rowOf(x, future.id)?.stage === "pending");
  r = rowOf(v, future.id);
  assert.deepEqual(r.buttons, ["Evidence (0)", "Send now", "Cancel"], "waiting for its time: Send now");
  assert.match(r.next, /^in (1 h|[0-9]+ min)/, JSON.stringify(r));
  assert.equal(await call("storedStage", future.id), "pending", "not sent by the flush");

  // Send now: rescheduled to now in the store; the next flush sends it, and the relay's
  // rejection for good exhausts it: Retry, no Cancel.
  await press(future.id, "send-now-button");
  await until("Send now in the store", () => call("storedNext", future.id), (at) => at !== null && at <= Date.now());
  await call("flush");
  v = await until("the rejection", view, (x) => rowOf(x, future.id)?.stage === "exhausted");
  r = rowOf(v, future.id);
  assert.equal(r.relays[0].state, "rejected");
  assert.match(r.relays[0].text, /rejected \(invalid\)/);
  assert.match(r.stageText, /exhausted \(rejected\)/);
  assert.deepEqual(r.buttons, ["Evidence (1)", "Retry"]);

  // Retry re-arms it in the store; the row follows and offers Cancel; Cancel cancels it.
  await press(future.id, "retry-button");
  const retried = await until("retry in the store", () => call("storedStage", future.id), (s) => s !== "exhausted");
  assert.equal(retried, "retryable", "re-armed, due at once");
  v = await until("the retried row", view, (x) => rowOf(x, future.id)?.stage === retried);
  assert.deepEqual(rowOf(v, future.id).buttons, ["Evidence (1)", "Cancel"]);
  await press(future.id, "cancel-button");
  assert.equal(await until("cancel in the store", () => call("storedStage", future.id), (s) => s === "cancelled"), "cancelled");
  v = await until("the cancelled row", view, (x) => rowOf(x, future.id)?.stage === "cancelled");
  assert.equal(rowOf(v, future.id).buttons.length, 1, "cancelled: no Retry, no Cancel");
  assert.equal(v.error, null, "no error shown");
  assert.equal(v.counts.satisfied, 1);
  assert.equal(v.counts.cancelled, 1);

  // Filters: a lane (its counts too), then a stage.
  await call("enqueue", laneNote, [relayA.url], { lane: "dm" });
  v = await until("the dm row", view, (x) => rowOf(x, laneNote.id) && x.lanes.includes("dm"));
  assert.equal(v.rows.length, 3);
  assert.equal(v.counts.total, 3);
  assert.deepEqual((await call("choose", "lane-filter", "dm")).attribute, "dm");
  v = await until("the lane filter", view, (x) => x.rows.length === 1 && x.counts.total === 1);
  assert.deepEqual(v.rows.map((x) => [x.id, x.lane]), [[laneNote.id, "dm"]]);
  assert.equal(v.counts.pending, 1);
  await call("choose", "lane-filter", "");
  await until("every lane again", view, (x) => x.rows.length === 3 && x.counts.total === 3);
  await call("choose", "stage-filter", "satisfied");
  v = await until("the stage filter", view, (x) => x.rows.length === 1);
  assert.deepEqual(v.rows.map((x) => x.id), [note.id]);
  assert.equal(v.counts.total, 3, "the counts are every stage's");
  await call("choose", "stage-filter", "exhausted");
  v = await until("an empty filter", view, (x) => x.rows.length === 0 && x.empty !== "Loading…");
  assert.equal(v.empty, "No records match the filters.");
  await call("choose", "stage-filter", "");
  await until("every stage again", view, (x) => x.rows.length === 3);

  // Pages of `limit` records: two, then the one after them, then the first page again.
  const ids = (await view()).rows.map((x) => x.id);
  await call("paging", 2, null);
  v = await until("a page of two", view, (x) => x.rows.length === 2);
  assert.deepEqual(v.rows.map((x) => x.id), ids.slice(0, 2));
  assert.deepEqual(await call("pager"), { "first-page": false, "next-page": true });
  assert.equal(await call("paging", null, "next-page"), true);
  v = await until("the next page", view, (x) => x.rows.length === 1 && x.rows[0].id === ids[2]);
  assert.deepEqual(await call("pager"), { "first-page": true, "next-page": false });
  assert.equal(v.counts.total, 3, "the counts are the outbox's, not the page's");
  await call("paging", null, "first-page");
  await until("the first page again", view, (x) => x.rows.length === 2 && x.rows[0].id === ids[0]);
  await call("paging", 100, null);
  await until("one page of all", view, (x) => x.rows.length === 3);

  // Accessibility: axe-core on the element, with a record's evidence open.
  assert.equal(await call("click", note.id, "evidence-button"), true); // closes it
  assert.equal(await call("click", note.id, "evidence-button"), true); // opens it again
  const axe = await call("axeCheck");
  assert.equal(axe.version, "4.14.1");
  assert.ok(axe.passes > 10, `axe ran its rules (${axe.passes} passed)`);
  assert.deepEqual(axe.violations, [], "axe-core: no violations");

  // Export with the button, import the file in another outbox's element; a bad file is
  // refused with its line, shown in the alert.
  const moved = await call("transfer", `inspector-${label}-imported`);
  assert.equal(moved.header, '{"format":"nostr-outbox/records","version":1}');
  assert.match(moved.filename, new RegExp(`^inspector-${label}-\\d{4}-\\d{2}-\\d{2}\\.ndjson$`));
  assert.equal(moved.exportStatus, "Exported 3 records.");
  assert.equal(moved.imported, "Imported 3 records: 3 new, 0 already here, 0 superseded.");
  assert.equal(moved.shown, 3, "the imported records are shown");
  assert.deepEqual([...moved.stored].sort(), [...ids].sort());
  assert.match(moved.refused, /^Import of bad\.ndjson failed: invalid_import: line 1: /);
  await until("the first outbox's rows back", view, (x) => x.rows.length === 3);

  // Removed from the page, the element lets go of the outbox; put back, it listens again.
  assert.deepEqual(await call("removeInspector"), { before: 1, after: 0, again: 1 });

  // A failed action is shown, not swallowed: the outbox is closed, Cancel fails.
  await until("the dm row back", view, (x) => rowOf(x, laneNote.id)?.buttons.includes("Cancel"));
  await call("closeOutbox");
  assert.equal(await call("click", laneNote.id, "cancel-button"), true);
  v = await until("the error", view, (x) => x.error !== null);
  assert.match(v.error, /^Cancel of [0-9a-f]{8}… failed: closed: /);
}

test("inspector in Chromium: live rows, send now/retry/cancel by keyboard, filters, evidence, axe", async () => {
  const browser = await launch();
  try {
    const page = await browser.context.newPage();
    const problems = [];
    page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
    page.on("console", (m) => {
      // Relay B is down on purpose at first: Chromium logs its refused connection.
      if (m.type() === "error" && !/^Failed to load resource|^WebSocket connection to .* failed/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    await page.goto(`${server.url}/tests/e2e/pages/inspector.html`);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
    const call = async (name, ...args) => page.evaluate(([n, a]) => window[n](...a), [name, args]);

    // The keyboard: Tab from the top of the page until the row's button has focus, then
    // Enter or Space, in turns (Send now: Enter, Retry: Space, Cancel: Enter). Focus must be visible (an outline) on the way.
    const seen = new Set();
    let presses = 0;
    const press = async (id, part) => {
      await page.evaluate(() => {
        document.activeElement?.blur();
        window.getSelection()?.removeAllRanges();
      });
      for (let i = 0; i < 60; i++) {
        await page.keyboard.press("Tab");
        const at = await page.evaluate(() => {
          const host = document.activeElement;
          const el = host?.shadowRoot?.activeElement;
          if (!el) return null;
          const style = getComputedStyle(el);
          return { part: el.getAttribute("part"), id: el.closest("tr")?.dataset.id ?? null, outline: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0 };
        });
        if (!at) continue;
        seen.add(at.part);
        assert.ok(at.outline, `focus is visible on ${at.part}`);
        if (at.id === id && at.part.split(" ").includes(part)) {
          await page.keyboard.press(presses++ % 2 ? "Space" : "Enter");
          return;
        }
      }
      throw new Error(`Tab never reached ${part} of ${id}; focus went through ${[...seen].join(", ")}`);
    };
    await scenario("chromium", call, press);
    assert.ok(seen.has("filter stage-filter") && seen.has("filter lane-filter"), `the filters are in the tab order: ${[...seen]}`);
    assert.ok(seen.has("button evidence-button"), "the Evidence buttons are in the tab order");
    assert.equal(presses, 3, "Send now, Retry and Cancel were pressed with the keyboard");
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
  }
});

/** A WebDriver browser's page function caller (webkit.mjs and firefox.mjs share `run`). */
const webdriverCall = (driver, name) => async (fn, ...args) => {
  const r = await driver.run(fn, args);
  if (!r.ok) throw new Error(`${fn} in ${name}: ${JSON.stringify(r.error)}`);
  return r.value;
};

async function loadPage(driver) {
  await driver.goto(`${server.url}/tests/e2e/pages/inspector.html`);
  for (let i = 0; !(await driver.execute("return document.body && document.body.dataset.ready === 'true'")); i++) {
    if (i > 300) throw new Error("inspector.html did not load the package");
    await sleep(100);
  }
}

test("inspector in Firefox: live rows, retry/cancel, filters, evidence, axe", async () => {
  console.log(`firefox: ${firefoxVersion()}`);
  const ff = await launchFirefox();
  try {
    await loadPage(ff);
    const call = webdriverCall(ff, "Firefox");
    await scenario("firefox", call, async (id, part) => assert.equal(await call("click", id, part), true));
  } finally {
    await ff.close();
  }
});

test("inspector in WebKit: live rows, retry/cancel, filters, evidence, axe", async () => {
  console.log(`webkit: WebKitGTK ${webkitVersion()}`);
  const wk = await launchWebKit();
  try {
    await loadPage(wk);
    const call = webdriverCall(wk, "WebKit");
    await scenario("webkit", call, async (id, part) => assert.equal(await call("click", id, part), true));
  } finally {
    await wk.close();
  }
});
