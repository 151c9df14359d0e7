// Issue 6's recovery scenario against a real nostr-rs-relay: 1,000 events enqueued while
// the relay is down are all queued (nothing lost); once the relay is up, one flush
// delivers every one, each accepted exactly once, and the relay holds the same signed
// events. Prints how long delivery took (a figure, not an assertion).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, relay, IMPORT_PACKAGE } from "./harness.mjs";
import { signedEvents } from "./events.mjs";
import WebSocket from "ws";

const N = 1000;
let server, browser, nrr;
before(async () => {
  server = await startServer();
  browser = await launch();
  nrr = await relay();
});
after(async () => {
  await browser?.close();
  await nrr?.destroy();
  await server?.close();
});

// REQ by ids, 100 ids per subscription (relays cap filter sizes), until EOSE each.
async function countOnRelay(url, ids) {
  const ws = new WebSocket(url);
  await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = () => fail(new Error("relay unreachable")); });
  let count = 0;
  const seen = new Set();
  for (let i = 0; i < ids.length; i += 100) {
    const chunk = ids.slice(i, i + 100);
    await new Promise((ok, fail) => {
      const sub = `q${i}`;
      const timer = setTimeout(() => fail(new Error(`REQ ${sub} timed out`)), 60_000);
      ws.onmessage = (m) => {
        const msg = JSON.parse(String(m.data));
        if (msg[1] !== sub) return;
        if (msg[0] === "EVENT") { count += 1; seen.add(msg[2].id + msg[2].sig); }
        if (msg[0] === "EOSE") { clearTimeout(timer); ok(); }
        if (msg[0] === "CLOSED") { clearTimeout(timer); fail(new Error(`relay closed ${sub}: ${msg[2]}`)); }
      };
      ws.send(JSON.stringify(["REQ", sub, { ids: chunk, limit: chunk.length }]));
    });
    ws.send(JSON.stringify(["CLOSE", `q${i}`]));
  }
  ws.close();
  return { count, seen };
}

test(`${N} events queued while the relay is down are all delivered once it is up`, async () => {
  const events = signedEvents(N);
  const page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  const relayUrl = nrr.url;

  // Relay down: enqueue and flush; everything stays queued with `unreachable` evidence.
  const down = await page.evaluate(async ([events, relayUrl, IMPORT_PACKAGE]) => {
    const { Outbox } = await eval(IMPORT_PACKAGE);
    const outbox = await Outbox.open({ name: "recovery", connectTimeoutMs: 1000, baseDelayMs: 1000, maxDelayMs: 2000, batchSize: 64, concurrency: 64 });
    window.outbox = outbox;
    await outbox.enqueueMany(events.map((event) => ({ event, relays: [relayUrl] })));
    const stats = await outbox.flush();
    return { stats, status: await outbox.status() };
  }, [events, relayUrl, IMPORT_PACKAGE]);
  assert.equal(down.status.total, N, "nothing lost while the relay is down");
  assert.equal(down.status.satisfied, 0);

  await nrr.start();
  const up = await page.evaluate(async () => {
    const outbox = window.outbox;
    await new Promise((r) => setTimeout(r, 2100)); // the retry time of the last attempt
    const t0 = performance.now();
    let stats = await outbox.flush();
    const runs = [stats];
    // Bounded by time, not by a number of flushes: the relay's circuit opened while it
    // was down (3 failed connections) and stays open for up to `circuitOpenMs` (30 s by
    // default) whatever the number of flushes; a faster flush only makes more calls.
    while ((await outbox.status()).satisfied < 1000 && performance.now() - t0 < 90_000) {
      await new Promise((r) => setTimeout(r, 500));
      runs.push(await outbox.flush());
    }
    const ms = performance.now() - t0;
    const records = [];
    let after;
    for (;;) {
      const page = await outbox.list({ limit: 500, after });
      if (page.length === 0) break;
      records.push(...page);
      after = page[page.length - 1].id;
    }
    const accepted = records.map((r) => r.evidence.filter((e) => e.outcome === "accepted" || e.outcome === "duplicate").length);
    return { ms, runs: runs.length, status: await outbox.status(), accepted, ids: records.map((r) => r.id) };
  });
  console.log(`recovery: ${N} events delivered ${up.ms.toFixed(0)} ms after the relay came back (${up.runs} flush calls, ${(N / up.ms * 1000).toFixed(0)} events/s)`);
  assert.equal(up.status.satisfied, N, JSON.stringify(up.status));
  assert.ok(up.accepted.every((n) => n === 1), "each record accepted exactly once");
  const onRelay = await countOnRelay(relayUrl, up.ids);
  assert.equal(onRelay.count, N, "the relay holds every event");
  for (const e of events) assert.ok(onRelay.seen.has(e.id + e.sig), "same id and sig as signed");
});
