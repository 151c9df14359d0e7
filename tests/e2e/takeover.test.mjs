// Issue 23: crash recovery in seconds. A flusher that dies mid-flush (a SIGKILLed
// browser, a closed tab, a terminated service worker) leaves records leased to it; the
// next holder of the database's Web Lock takes those leases over at once and sends the
// records in that run, instead of leaving them `leased` until the dead lease expires.
//
// Every scenario uses a ten-minute lease (`leaseMs: 600000`) against a relay whose OKs
// come 20 ms apart (so a flush is still publishing when it is killed), and none asserts
// a duration. The check that no record waited for its dead lease: the flusher that
// takes over must never finish a run that claimed nothing while records are still
// leased (today's code does exactly that: it has nothing it may claim until the dead
// leases expire), every record must be satisfied within a bounded number of flush
// calls, and each record leased at the crash shows its takeover (`takeovers`) and was
// answered before its dead lease could have expired (evidence `at` against the
// lease's `expiresAt` recorded at the crash).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocketServer } from "ws";
import { startServer, launch, IMPORT_PACKAGE } from "./harness.mjs";
import { startChromium } from "./torture/browser.mjs";
import { signedEvents } from "./events.mjs";

const N = 300;
const LEASE_MS = 600_000;
const OK_GAP_MS = 20;
// A crash once this many events reached the relay: publishes are in flight and whole
// claimed batches are still leased (about 1 s in at one OK per 20 ms).
const CRASH_AFTER = 50;
// Flush calls the survivor may make to deliver everything (each one is a whole run).
const MAX_FLUSHES = 20;
// A guard against a hang (a relay that never gets the events), not an assertion on
// speed: far above what a run takes, far below the ten-minute lease.
const HANG_GUARD = { timeout: 300_000 };

/**
 * A relay on 127.0.0.1 that stores each event when it arrives and answers OK in
 * arrival order, one OK every `OK_GAP_MS` (`duplicate:` for an event it already has).
 */
async function slowRelay() {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise((ok) => wss.once("listening", ok));
  const stored = new Set();
  const received = [];
  const queue = [];
  let pumping = false;
  const waiters = [];
  const pump = () => {
    if (pumping) return;
    pumping = true;
    const next = () => {
      const item = queue.shift();
      if (!item) { pumping = false; return; }
      if (item.ws.readyState === item.ws.OPEN) item.ws.send(JSON.stringify(item.ok));
      setTimeout(next, OK_GAP_MS);
    };
    setTimeout(next, OK_GAP_MS);
  };
  wss.on("connection", (ws) => {
    ws.on("message", (data) => {
      let msg;
      try { msg = JSON.parse(String(data)); } catch { return; }
      if (msg[0] !== "EVENT" || !msg[1] || typeof msg[1].id !== "string") return;
      const id = msg[1].id;
      received.push(id);
      const ok = stored.has(id)
        ? ["OK", id, true, "duplicate: already have this event"]
        : ["OK", id, true, ""];
      stored.add(id);
      queue.push({ ws, ok });
      pump();
      for (const w of waiters.splice(0)) w();
    });
  });
  const { port } = wss.address();
  return {
    url: `ws://127.0.0.1:${port}`,
    stored,
    received,
    /** Resolves once `n` EVENT messages have arrived. */
    async receivedAtLeast(n) {
      while (received.length < n) await new Promise((ok) => waiters.push(ok));
    },
    close: () => new Promise((ok) => { for (const c of wss.clients) c.terminate(); wss.close(ok); }),
  };
}

let server;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.close();
});

const OPTIONS = (name) => ({ name, leaseMs: LEASE_MS, publishTimeoutMs: 30_000 });

// Page side: opens the outbox (as `window.outbox`) with `options`.
async function openOutbox(page, options) {
  await page.evaluate(async ([options, IMPORT_PACKAGE]) => {
    const { Outbox } = await eval(IMPORT_PACKAGE);
    window.outbox = await Outbox.open(options);
  }, [options, IMPORT_PACKAGE]);
}

// Page side: every record of `window.outbox`.
async function allRecords(page) {
  return page.evaluate(async () => {
    const records = [];
    let after;
    for (;;) {
      const chunk = await window.outbox.list({ limit: 500, after });
      if (chunk.length === 0) break;
      records.push(...chunk);
      after = chunk[chunk.length - 1].id;
    }
    return records;
  });
}

/**
 * The survivor flushes until every record is satisfied. A run that claimed nothing
 * while records are still leased means they wait for their dead leases to expire:
 * that fails at once. Returns the flush results.
 */
async function flushUntilDelivered(page, flush = () => page.evaluate(() => window.outbox.flush())) {
  const runs = [];
  for (let i = 0; i < MAX_FLUSHES; i++) {
    const result = await flush();
    runs.push(result);
    const status = await page.evaluate(() => window.outbox.status());
    if (status.satisfied === N) return runs;
    if (result.ran && result.claimed === 0 && status.leased > 0) {
      assert.fail(`${status.leased} record(s) stay leased to the dead flusher (they would wait ${LEASE_MS} ms for the lease to expire): ${JSON.stringify({ status, runs })}`);
    }
    await page.waitForTimeout(250);
  }
  assert.fail(`not every record was delivered in ${MAX_FLUSHES} flush calls: ${JSON.stringify(runs)}`);
}

/**
 * What every scenario checks once the survivor is done: all N satisfied; each record
 * leased at the crash was taken over (counted on the record and in the flush results),
 * answered before its dead lease would have expired; the relay has every event.
 */
function checkRecovered({ atCrash, records, runs, relay }) {
  const leased = atCrash.filter((r) => r.stage === "leased");
  assert.ok(leased.length > 0, "the crash left records leased (else the scenario tests nothing)");
  assert.equal(records.length, N, "nothing lost");
  assert.ok(records.every((r) => r.stage === "satisfied"), "every record satisfied");
  const byId = new Map(records.map((r) => [r.id, r]));
  for (const dead of leased) {
    const r = byId.get(dead.id);
    assert.equal(r.takeovers, 1, `${r.id}: its takeover is on the record`);
    const answered = Math.max(...r.evidence.map((e) => e.at));
    assert.ok(answered < dead.lease.expiresAt, `${r.id} was answered before its dead lease expired`);
    assert.equal(r.attempts, dead.lease.attempt, `${r.id}: the dead flusher's attempt, made again`);
  }
  for (const r of records) {
    if (!leased.some((d) => d.id === r.id)) assert.equal(r.takeovers, 0, `${r.id} was not leased at the crash`);
  }
  const takenOver = runs.reduce((n, run) => n + (run.takenOver ?? 0), 0);
  assert.equal(takenOver, leased.length, `FlushResult.takenOver counts them: ${JSON.stringify(runs)}`);
  for (const r of records) assert.ok(relay.stored.has(r.event.id), `the relay has ${r.event.id}`);
}

test(`SIGKILLed browser: the relaunched one takes over the dead flusher's leases (${N} events, ${LEASE_MS / 60000}-minute lease)`, HANG_GUARD, async () => {
  const relay = await slowRelay();
  const profile = await mkdtemp(join(tmpdir(), "outbox-takeover-"));
  let chromium = await startChromium(profile);
  try {
    const events = signedEvents(N);
    let page = await chromium.context.newPage();
    await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
    await openOutbox(page, OPTIONS("takeover-kill"));
    await page.evaluate(async ([events, relayUrl]) => {
      await window.outbox.enqueueMany(events.map((event) => ({ event, relays: [relayUrl] })));
      window.outbox.flush(); // not awaited: the browser dies mid-flush
    }, [events, relay.url]);
    await relay.receivedAtLeast(CRASH_AFTER);
    await chromium.kill();

    chromium = await startChromium(profile);
    page = await chromium.context.newPage();
    await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
    await openOutbox(page, OPTIONS("takeover-kill"));
    const atCrash = await allRecords(page);
    const t0 = Date.now();
    const runs = await flushUntilDelivered(page);
    const ms = Date.now() - t0;
    const records = await allRecords(page);
    const leased = atCrash.filter((r) => r.stage === "leased").length;
    console.log(`takeover (kill): ${leased} of ${N} records leased to the dead browser, all ${N} delivered ${ms} ms after the relaunch (${runs.length} flush calls; ${relay.received.length} EVENTs sent for ${N} events)`);
    checkRecovered({ atCrash, records, runs, relay });
  } finally {
    await chromium.kill();
    await relay.close();
    await rm(profile, { recursive: true, force: true });
  }
});

test("closed tab: the tab still open takes over its leases", HANG_GUARD, async () => {
  const relay = await slowRelay();
  const browser = await launch();
  try {
    const events = signedEvents(N);
    const name = "takeover-tab";
    const [a, b] = [await browser.context.newPage(), await browser.context.newPage()];
    for (const p of [a, b]) {
      await p.goto(`${server.url}/tests/e2e/pages/blank.html`);
      await openOutbox(p, OPTIONS(name));
    }
    await a.evaluate(async ([events, relayUrl]) => {
      await window.outbox.enqueueMany(events.map((event) => ({ event, relays: [relayUrl] })));
      window.outbox.flush();
    }, [events, relay.url]);
    await relay.receivedAtLeast(CRASH_AFTER);
    // While tab A flushes, B's flush is skipped: A holds the lock.
    const skipped = await b.evaluate(() => window.outbox.flush());
    assert.equal(skipped.skipped, "locked", JSON.stringify(skipped));
    await a.close({ runBeforeUnload: false });
    const atCrash = await allRecords(b);
    const runs = await flushUntilDelivered(b);
    const records = await allRecords(b);
    console.log(`takeover (closed tab): ${atCrash.filter((r) => r.stage === "leased").length} records leased to the closed tab, delivered by the other in ${runs.length} flush calls`);
    checkRecovered({ atCrash, records, runs, relay });
  } finally {
    await browser.close();
    await relay.close();
    await rm(browser.dir, { recursive: true, force: true });
  }
});

test("terminated service worker: the restarted worker's handleSync takes over its leases", HANG_GUARD, async () => {
  const relay = await slowRelay();
  const browser = await launch();
  try {
    const events = signedEvents(N);
    const options = OPTIONS("takeover-sw");
    const page = await browser.context.newPage();
    await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
    // The torture suite's module service worker: enqueues and flushes (handleSync) on
    // messages, answering on the message's port.
    await page.evaluate(async (options) => {
      const url = `/tests/e2e/torture/sw.js?options=${encodeURIComponent(JSON.stringify(options))}`;
      const reg = await navigator.serviceWorker.register(url, { type: "module", scope: "/" });
      await navigator.serviceWorker.ready;
      window.sw = (op, ...args) => new Promise((ok, fail) => {
        const channel = new MessageChannel();
        channel.port1.onmessage = (m) => (m.data.ok ? ok(m.data.value) : fail(new Error(JSON.stringify(m.data.error))));
        (reg.active || navigator.serviceWorker.controller).postMessage({ op, args }, [channel.port2]);
      });
    }, options);
    const cdp = await browser.context.newCDPSession(page);
    const versions = new Map();
    cdp.on("ServiceWorker.workerVersionUpdated", ({ versions: vs }) => {
      for (const v of vs) versions.set(v.versionId, v);
    });
    await cdp.send("ServiceWorker.enable");
    await page.evaluate(async ([events, relayUrl]) => {
      await window.sw("enqueueMany", events.map((event) => ({ event, relays: [relayUrl] })));
      window.sw("flush").catch(() => {}); // the worker is stopped mid-flush
    }, [events, relay.url]);
    await relay.receivedAtLeast(CRASH_AFTER);
    const running = [...versions.values()].filter((v) => v.runningStatus === "running");
    assert.ok(running.length > 0, `a running service worker version: ${JSON.stringify([...versions.values()])}`);
    for (const v of running) await cdp.send("ServiceWorker.stopWorker", { versionId: v.versionId });
    // The page reads the records through its own outbox (it does not flush).
    await openOutbox(page, options);
    const atCrash = await allRecords(page);
    // The next message starts a new worker: a new outbox (another owner) whose
    // handleSync holds the lock and takes the dead worker's leases over.
    const runs = await flushUntilDelivered(page, () => page.evaluate(() => window.sw("flush")));
    const records = await allRecords(page);
    console.log(`takeover (service worker): ${atCrash.filter((r) => r.stage === "leased").length} records leased to the stopped worker, delivered by its successor in ${runs.length} flush calls`);
    checkRecovered({ atCrash, records, runs, relay });
  } finally {
    await browser.close();
    await relay.close();
    await rm(browser.dir, { recursive: true, force: true });
  }
});
