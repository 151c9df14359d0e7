// The adapters against the real libraries from npm (versions in tests/e2e/package.json),
// in Chromium: a small app per library, written the way its docs show and bundled with
// esbuild, publishes through the outbox while its nostr-rs-relay is down; the library
// reports the failure its own way, at once (the apps wait SLOW, far beyond each test's
// timeout: a report that came only at the end of the wait fails the test); the relay comes
// back and the outbox delivers the same signed event (no re-sign, no re-publish by the app).
// Then relay a (the fault relay's /accept) accepts, b (/reply/blocked) refuses and c (the
// nostr-rs-relay) is down: each library reports the three its own way, and c gets the event
// once it is back. Those "c gets it" steps need the core to keep delivering after a record's
// policy is settled (issue 38, point 1; marked [delivery goes on]).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile, symlink, rm } from "node:fs/promises";
import { join } from "node:path";
import { build } from "esbuild";
import { startServer, launch, relay, queryRelay, ROOT } from "./harness.mjs";
import { startFaultRelay } from "./torture/fault-relay.mjs";

const OUT = join(ROOT, "target/e2e-adapters");
let server, browser, nrr, fault;

before(async () => {
  // `nostr-outbox` resolves to pkg/ through a node_modules of its own (as if installed).
  await rm(OUT, { recursive: true, force: true });
  await mkdir(join(OUT, "node_modules"), { recursive: true });
  await symlink(join(ROOT, "pkg"), join(OUT, "node_modules/nostr-outbox"));
  for (const lib of ["nostr-tools", "applesauce", "ndk", "welshman"]) {
    await build({
      entryPoints: [join(ROOT, `tests/e2e/adapters/${lib}-app.js`)],
      bundle: true,
      format: "esm",
      target: "es2022",
      outfile: join(OUT, `${lib}.js`),
      nodePaths: [join(OUT, "node_modules"), join(ROOT, "tests/e2e/node_modules")],
      logLevel: "error",
    });
    await writeFile(join(OUT, `${lib}.html`), `<!doctype html><meta charset="utf-8"><script type="module" src="./${lib}.js"></script>\n`);
  }
  server = await startServer();
  browser = await launch();
  nrr = await relay();
  fault = await startFaultRelay();
  if (!fault) throw new Error("tests/fault-relay is not built (scripts/setup.sh builds it)");
});
after(async () => {
  await browser?.close();
  await fault?.stop();
  await nrr?.destroy();
  await server?.close();
});

async function openApp(lib) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}/target/e2e-adapters/${lib}.html`);
  await page.waitForFunction(() => window.app, null, { timeout: 20_000 }).catch(() => {
    throw new Error(`${lib} app did not start: ${errors.join("; ")}`);
  });
  return page;
}

/** A test's own timeout (ms): a library's report must come from the relays' answers. */
const PROMPT = 60_000;

const faultUrls = (tag) => ({ a: `${fault.url}/accept?t=${tag}`, b: `${fault.url}/reply/blocked?t=${tag}` });

/**
 * Brings the nostr-rs-relay back and waits for the outbox's own delivery of each event there
 * (no call from the app); checks the relay holds each signed event, sent once after it came back.
 */
async function receivedOnceBack(page, ...events) {
  await nrr.start();
  for (const event of events) {
    const record = await page.evaluate(([id, relay]) => new Promise((ok) => {
      const done = (r) => r?.targets.find((t) => t.relay === relay)?.state === "accepted";
      const on = (e) => e.detail.id === id && done(e.detail) && ok(e.detail);
      app.outbox.addEventListener("change", on);
      app.outbox.get(id).then((r) => done(r) && ok(r));
    }), [event.id, nrr.url]);
    assert.equal(record.evidence.filter((e) => e.relay === nrr.url && e.outcome === "accepted").length, 1, "sent once after it came back");
    const stored = await queryRelay(nrr.url, [event.id]);
    assert.equal(stored.length, 1);
    assert.equal(stored[0].sig, event.sig, "the signed event, not re-signed");
  }
  await nrr.stop();
}

const DOWN = /^connection failure: connection (failed|timed out)$/;

/** [delivery goes on]: the records of `events` are still in delivery (not in a terminal stage). */
async function stillDelivered(page, ...events) {
  for (const event of events) {
    const stage = await page.evaluate(async (id) => (await app.outbox.get(id)).stage, event.id);
    assert.ok(!["satisfied", "exhausted", "cancelled", "superseded"].includes(stage), `[delivery goes on]: ${event.content} is ${stage}`);
  }
}

test("nostr-tools: pool.publish through the outbox", { timeout: PROMPT }, async () => {
  await nrr.stop(); // whatever an earlier test left
  const page = await openApp("nostr-tools");
  const down = await page.evaluate((url) => app.post([url], "nostr-tools, relay down"), nrr.url);
  assert.equal(down.report.length, 1);
  assert.equal(down.report[0].ok, false);
  assert.equal(down.report[0].isError, true);
  assert.match(down.report[0].message, DOWN, JSON.stringify(down.report));
  assert.equal(down.report[0].queued, true);
  assert.equal(down.report[0].outcome, "unreachable");
  await receivedOnceBack(page, down.event);

  const { a, b } = faultUrls("nostr-tools");
  const three = await page.evaluate((urls) => app.post(urls, "nostr-tools, a b c"), [a, b, nrr.url]);
  assert.equal(three.report[0].ok, true, JSON.stringify(three.report));
  assert.match(three.report[1].message, /^blocked: /);
  assert.equal(three.report[1].queued, false);
  assert.match(three.report[2].message, DOWN);
  assert.equal(three.report[2].queued, true, "[delivery goes on]");
  await stillDelivered(page, three.event);
  await receivedOnceBack(page, three.event); // [delivery goes on]
  await page.close();
});

test("applesauce: ActionRunner's publish method and the pool's PublishResponse[]", { timeout: PROMPT }, async () => {
  await nrr.stop();
  const page = await openApp("applesauce");
  // Every relay down: actions.run throws (the note is still queued), as Promise.any would.
  const down = await page.evaluate((url) => app.post([url], "applesauce, relay down"), nrr.url);
  assert.equal(down.inStore, true, "the action ran and saved its event");
  assert.equal(down.error?.isAggregateError, true, JSON.stringify(down));
  assert.match(down.error.message, /^no relay accepted the event: /);
  assert.equal(down.error.queued, true);
  assert.equal(down.error.id, down.event.id);
  assert.match(down.error.errors[0].message, DOWN);
  assert.deepEqual(down.error.responses.map((r) => r.ok), [false]);
  await receivedOnceBack(page, down.event);

  // Every relay refused: actions.run throws, and nothing is queued.
  const { a, b } = faultUrls("applesauce");
  const refused = await page.evaluate((url) => app.post([url], "applesauce, blocked"), b);
  assert.equal(refused.error?.isAggregateError, true, JSON.stringify(refused));
  assert.equal(refused.error.queued, false);
  assert.match(refused.error.errors[0].message, /^blocked: /);
  const pooled = await page.evaluate((url) => app.poolPublish([url], "applesauce, blocked"), b);
  assert.equal(pooled.responses.length, 1);
  assert.equal(pooled.responses[0].ok, false);
  assert.match(pooled.responses[0].message, /^blocked: /);
  assert.equal(pooled.responses[0].from, b);

  // a accepts, b refuses, c is down: the action succeeds; the pool reports the three.
  const three = await page.evaluate((urls) => app.post(urls, "applesauce, a b c"), [a, b, nrr.url]);
  assert.equal(three.error, null, JSON.stringify(three));
  const threePooled = await page.evaluate((urls) => app.poolPublish(urls, "applesauce, a b c, pool"), [a, b, nrr.url]);
  assert.deepEqual(threePooled.responses.map((r) => [r.ok, r.from]), [[true, a], [false, b], [false, nrr.url]]);
  assert.match(threePooled.responses[1].message, /^blocked: /);
  assert.match(threePooled.responses[2].message, DOWN);
  await stillDelivered(page, three.event, threePooled.event);
  await receivedOnceBack(page, three.event, threePooled.event); // [delivery goes on]
  await page.close();
});

test("ndk: NDKEvent.publish() through the outbox, NDKPublishError on failure", { timeout: PROMPT }, async () => {
  await nrr.stop();
  const page = await openApp("ndk");
  const down = await page.evaluate((url) => app.post([url], "ndk, relay down"), nrr.url);
  assert.equal(down.isNDKPublishError, true, JSON.stringify(down));
  assert.match(down.message, /^Not enough relays received the event \(0 published, 1 required\)/);
  assert.equal(down.errors.length, 1);
  assert.match(down.errors[0][1], DOWN);
  assert.equal(down.errors[0][2], true, "still queued");
  assert.equal(down.status, "error");
  assert.equal(down.failedEvent, true, "ndk emitted event:publish-failed");
  await receivedOnceBack(page, down.event);

  // NDK normalizes relay URLs its own way (a trailing `/`), so paths without a query here.
  const a = `${fault.url}/accept`;
  const b = `${fault.url}/reply/blocked`;
  const enough = await page.evaluate((urls) => app.post(urls, "ndk, a b c, one required"), [a, b, nrr.url]);
  assert.deepEqual(enough.published, [`${a}/`], JSON.stringify(enough));
  assert.equal(enough.status, "success");
  const short = await page.evaluate((urls) => app.post(urls, "ndk, a b c, two required", 2), [a, b, nrr.url]);
  assert.equal(short.isNDKPublishError, true, JSON.stringify(short));
  assert.match(short.message, /\(1 published, 2 required\)/);
  assert.deepEqual(short.publishedToRelays, [`${a}/`]);
  const errors = Object.fromEntries(short.errors.map(([url, message, queued]) => [url, { message, queued }]));
  assert.match(errors[`${b}/`].message, /^blocked: /);
  assert.equal(errors[`${b}/`].queued, false);
  assert.match(errors[`${nrr.url}/`].message, DOWN);
  assert.equal(errors[`${nrr.url}/`].queued, true, "[delivery goes on]");
  await stillDelivered(page, enough.event, short.event);
  await receivedOnceBack(page, enough.event, short.event); // [delivery goes on]

  await nrr.start();
  const fine = await page.evaluate((url) => app.post([url], "ndk, relay up"), nrr.url);
  assert.deepEqual(fine.published, [`${nrr.url}/`]);
  assert.equal(fine.status, "success");
  await nrr.stop();
  await page.close();
});

test("welshman: publish({ event, relays, timeout }) statuses through the outbox", { timeout: PROMPT }, async () => {
  await nrr.stop();
  const page = await openApp("welshman");
  const down = await page.evaluate((url) => app.post([url], "welshman, relay down"), nrr.url);
  const r = down.results[nrr.url];
  assert.equal(r.status, down.statuses.timeout, JSON.stringify(down));
  assert.match(r.detail, DOWN);
  assert.deepEqual(down.seen, ["pending", "timeout", "complete"]);
  await receivedOnceBack(page, down.event);

  const { a, b } = faultUrls("welshman");
  const three = await page.evaluate((urls) => app.post(urls, "welshman, a b c"), [a, b, nrr.url]);
  assert.equal(three.results[a].status, three.statuses.success, JSON.stringify(three));
  assert.equal(three.results[b].status, three.statuses.failure);
  assert.match(three.results[b].detail, /^blocked: /);
  assert.equal(three.results[nrr.url].status, three.statuses.timeout, "[delivery goes on]: still queued");
  assert.match(three.results[nrr.url].detail, DOWN);
  assert.deepEqual(three.seen.slice(0, 3), ["pending", "pending", "pending"]);
  assert.equal(three.seen.at(-1), "complete");
  await stillDelivered(page, three.event);
  await receivedOnceBack(page, three.event); // [delivery goes on]
  await page.close();
});
