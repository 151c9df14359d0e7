// The package's API end to end in WebKit (WebKitGTK's MiniBrowser, Safari's engine), driven
// through WebKitWebDriver (tests/e2e/webkit.mjs; playwright-core drives only its own WebKit
// builds). The page is tests/e2e/pages/webkit-api.html; the relay is a real nostr-rs-relay.
// Covers the paths Safari takes: IndexedDB, persist() answered without a prompt, typed
// refusals, and no Background Sync (registerBackgroundSync says false; the service worker
// flushes on a message; auto-flush delivers on `online`), and a WebKit without
// navigator.storage (WebKitGTK's default; Safari before 17 had no estimate()).
// WebKit missing (no webkit2gtk-driver) fails the test: scripts/setup.sh installs it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, relay, queryRelay } from "./harness.mjs";
import { signedEvents } from "./events.mjs";
import { launchWebKit, webkitVersion } from "./webkit.mjs";

let server, wk, nrr;
before(async () => {
  server = await startServer();
  nrr = await relay();
  await nrr.start();
  wk = await launchWebKit();
  await wk.goto(`${server.url}/tests/e2e/pages/webkit-api.html`);
  for (let i = 0; ; i++) {
    const ready = await wk.execute("return document.body && document.body.dataset.ready === 'true'");
    if (ready) break;
    if (i > 300) throw new Error("webkit-api.html did not load the package");
    await new Promise((r) => setTimeout(r, 100));
  }
});
after(async () => {
  await wk?.close();
  await nrr?.destroy();
  await server?.close();
});

// Calls the page's window[name](...args); returns its value or fails with the page's error.
async function page(name, ...args) {
  const r = await wk.run(name, args);
  if (!r.ok) throw new Error(`${name} in WebKit: ${JSON.stringify(r.error)}`);
  return r.value;
}

test("webkit: the engine and the features the outbox uses", async () => {
  const facts = await page("webkitFacts");
  console.log(`webkit: WebKitGTK ${webkitVersion()}; ${facts.userAgent}; package ${facts.version}`);
  assert.match(facts.userAgent, /AppleWebKit\/[\d.]+ .*Safari\//);
  assert.doesNotMatch(facts.userAgent, /Chrome|Firefox/);
  assert.equal(facts.indexedDB, true);
  assert.equal(facts.locks, true, "Web Locks (Safari 15.4+)");
  assert.equal(facts.broadcastChannel, true);
  assert.equal(facts.storage, true, "navigator.storage (Safari 17+; MiniBrowser --features=+StorageAPI)");
  assert.equal(facts.serviceWorker, true);
  assert.equal(facts.backgroundSync, false, "no Background Sync in WebKit");
});

test("webkit: open on IndexedDB with persist(), enqueue, flush to a real relay", async () => {
  const [event] = signedEvents(1, { content: () => "hello from WebKit" });
  const opened = await page("openPersistent", "wk-api");
  // WebKit answers persist() at once, without a prompt (false for a page that is not a
  // home-screen web app); the outbox reports the answer, never a hang.
  assert.equal(typeof opened.persisted, "boolean", JSON.stringify(opened));
  assert.ok(opened.estimate && opened.estimate.quota > 0, JSON.stringify(opened.estimate));
  assert.equal(opened.estimate.persisted, opened.persisted);
  assert.equal(opened.status.total, 0);

  const done = await page("enqueueAndFlush", "wk-api", event, [nrr.url]);
  assert.equal(done.enqueued.disposition, "created");
  assert.equal(done.record.stage, "satisfied", JSON.stringify(done.record));
  assert.equal(done.record.evidence.at(-1).outcome, "accepted", JSON.stringify(done.record.evidence));
  assert.equal(done.status.satisfied, 1);
  const stored = await queryRelay(nrr.url, [event.id]);
  assert.equal(stored.length, 1, "the relay has the event");
  assert.equal(stored[0].sig, event.sig, "as signed");
});

test("webkit: bad input is a typed OutboxError and stores nothing", async () => {
  const [event] = signedEvents(1);
  await page("openPersistent", "wk-refusals");
  const r = await page("refusals", "wk-refusals", event, nrr.url);
  for (const [what, e] of Object.entries(r)) {
    if (what === "storedAfter") continue;
    assert.ok(e, `${what}: refused`);
    assert.ok(e.isOutboxError && e.isError, `${what}: an OutboxError (${JSON.stringify(e)})`);
  }
  assert.equal(r.tampered.code, "invalid_event", JSON.stringify(r.tampered));
  assert.equal(r.badRelay.code, "invalid_relay_url", JSON.stringify(r.badRelay));
  assert.equal(r.badOptions.code, "invalid_options", JSON.stringify(r.badOptions));
  assert.equal(r.badConfig.code, "invalid_config", JSON.stringify(r.badConfig));
  assert.equal(r.batch.code, "invalid_event", JSON.stringify(r.batch));
  assert.equal(r.closed.code, "closed", JSON.stringify(r.closed));
  assert.equal(r.storedAfter, 0, "nothing stored");
});

test("webkit: no Background Sync, and the fallbacks deliver", async (t) => {
  const down = await relay();
  t.after(() => down.destroy());
  const sync = await page("backgroundSync");
  assert.deepEqual(sync, { registered: false, hasSync: false }, "registerBackgroundSync says false");

  // The service worker flushes on a page's message (handleSync), with IndexedDB there.
  const [queued, auto] = signedEvents(2, { content: (i) => `webkit fallback ${i}` });
  const waits = await page("enqueueWithRelayDown", "wk-sw", queued, [down.url]);
  assert.equal(waits.stage, "retryable", JSON.stringify(waits));
  await down.start();
  const flushed = await page("flushInServiceWorker", "wk-sw", 30_000);
  assert.ok(!flushed.error, JSON.stringify(flushed));
  assert.equal(flushed.result?.delivered, 1, JSON.stringify(flushed));
  assert.equal((await queryRelay(down.url, [queued.id])).length, 1, "delivered by the service worker");
  await down.stop();

  // Auto-flush with the relay down: the record waits (its retry 10 min off); the relay
  // comes back and `online` fires: delivered with no flush() call (by the `online` wake
  // or auto-flush's probe of the unreachable relay, whichever comes first).
  const waiting = await page("openAuto", "wk-auto", auto, [down.url]);
  assert.equal(waiting.record.stage, "retryable", JSON.stringify(waiting.record));
  await down.start();
  const back = await page("onlineDelivers", "wk-auto", auto.id, 30_000);
  assert.equal(back.record.stage, "satisfied", JSON.stringify(back.record));
  assert.equal((await queryRelay(down.url, [auto.id])).length, 1, "delivered after `online`");
});

test("webkit: without navigator.storage the outbox opens and says it does not know", async () => {
  // A second MiniBrowser with WebKitGTK's own defaults: the Storage API off.
  const bare = await launchWebKit({ features: [] });
  try {
    await bare.goto(`${server.url}/tests/e2e/pages/webkit-api.html`);
    for (let i = 0; !(await bare.execute("return document.body.dataset.ready === 'true'")); i++) {
      if (i > 300) throw new Error("webkit-api.html did not load the package");
      await new Promise((r) => setTimeout(r, 100));
    }
    const facts = await bare.run("webkitFacts");
    assert.equal(facts.value.storage, false, "this MiniBrowser has no navigator.storage");
    const [event] = signedEvents(1, { content: () => "no storage API" });
    const opened = await bare.run("openPersistent", ["wk-bare"]);
    assert.ok(opened.ok, JSON.stringify(opened));
    assert.equal(opened.value.persisted, null, "no persist(): no answer, not an error");
    assert.equal(opened.value.estimate, null, "no estimate()");
    const done = await bare.run("enqueueAndFlush", ["wk-bare", event, [nrr.url]]);
    assert.ok(done.ok, JSON.stringify(done));
    assert.equal(done.value.record.stage, "satisfied", JSON.stringify(done.value.record));
  } finally {
    await bare.close();
  }
});
