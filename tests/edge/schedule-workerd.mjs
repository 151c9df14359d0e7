// Scheduled posts and wake-ups on the edge: examples/worker-durable-object (through
// tests/edge/schedule-worker.mjs, which only counts the object's alarm runs) bundled as
// wrangler does and run by miniflare (workerd), against a real nostr-rs-relay.
//   1. A post scheduled 4 s ahead is on the relay at its time with no request in between:
//      the Durable Object's alarm is the only trigger. A second one cancelled before its
//      time (an undo) never reaches the relay; a third, scheduled a minute ahead and
//      rescheduled to 6 s, goes out at its new time. Bad calls get typed errors.
//   2. With the relay down (nothing listens on its port) and the example's defaults, 50
//      queued records wake the object at most 10 times in 10 s (the issue measured 140),
//      and every record keeps its backoff (tried about 4 times, no attempt counted).
// Needs the built package (pkg/) and nostr-rs-relay. Prints `test … ok|FAILED`.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { relay as makeRelay, queryRelay, freePort } from "../e2e/harness.mjs";
import { signedEvents } from "../e2e/events.mjs";
import { tally } from "./contract.mjs";
import { bundle, workerOptions } from "./scenario-workerd.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const requireE2e = createRequire(join(root, "tests", "e2e", "package.json"));
const t = tally((line) => console.log(line));
const sleep = (ms) => new Promise((f) => setTimeout(f, ms));
const expect = (cond, what) => {
  if (!cond) throw new Error(what);
};

/** A Miniflare running the harness worker; `call(method, path, body)` → { status, body }. */
async function start(script, options) {
  const { Miniflare } = await import("miniflare");
  const mf = new Miniflare(
    workerOptions(script, {
      durableObjects: { OUTBOX: { className: "OutboxObject", useSQLite: true } },
      bindings: { OUTBOX_OPTIONS: JSON.stringify(options) },
    }),
  );
  await mf.ready;
  const call = async (method, path, value) => {
    const res = await mf.dispatchFetch("http://localhost" + path, {
      method,
      headers: value === undefined ? {} : { "content-type": "application/json" },
      body: value === undefined ? undefined : JSON.stringify(value),
    });
    const text = await res.text();
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    return { status: res.status, body };
  };
  return { mf, call };
}

/** Live arrival times (Date.now()) of `ids` on the relay, by a subscription opened first. */
async function arrivals(url, ids) {
  const WebSocket = requireE2e("ws");
  const ws = new WebSocket(url);
  const at = new Map();
  await new Promise((ok, fail) => {
    setTimeout(() => fail(new Error("no EOSE from the relay in 5 s")), 5000);
    ws.onerror = () => fail(new Error(`cannot reach ${url}`));
    ws.onopen = () => ws.send(JSON.stringify(["REQ", "watch", { ids }]));
    ws.onmessage = (m) => {
      const msg = JSON.parse(String(m.data));
      if (msg[0] === "EOSE") ok();
      if (msg[0] === "EVENT" && !at.has(msg[2].id)) at.set(msg[2].id, Date.now());
    };
  });
  return { at, close: () => ws.close() };
}

const dir = mkdtempSync(join(tmpdir(), "outbox-schedule-"));
const script = await bundle(join(here, "schedule-worker.mjs"), dir, join(dir, "out"));
const relay = await makeRelay();
await relay.start();

await t.check("workerd-example-scheduled-post-sent-by-the-alarm-alone", async () => {
  const { mf, call } = await start(script, { connectTimeoutMs: 2000, publishTimeoutMs: 3000 });
  try {
    const [a, b, c] = signedEvents(3, { content: (i) => `scheduled on the edge ${i}` });
    const watch = await arrivals(relay.url, [a.id, b.id, c.id]);
    const t0 = Date.now();
    const post = (event, notBefore) => call("POST", "/enqueue", { event, relays: [relay.url], options: { notBefore } });
    const ra = await post(a, t0 + 4000);
    expect(ra.status === 202 && ra.body.stage === "pending" && ra.body.notBefore === t0 + 4000, `enqueue a: ${JSON.stringify(ra)}`);
    expect((await post(b, t0 + 4000)).status === 202, "enqueue b");
    const undo = await call("POST", "/cancel", { id: b.id });
    expect(undo.status === 200 && undo.body.stage === "cancelled", `cancel b: ${JSON.stringify(undo)}`);
    expect((await post(c, t0 + 60_000)).status === 202, "enqueue c");
    const moved = await call("POST", "/reschedule", { id: c.id, at: t0 + 6000 });
    expect(moved.status === 200 && moved.body.nextAttemptAt === t0 + 6000, `reschedule c: ${JSON.stringify(moved)}`);
    // Typed refusals, nothing changed.
    const missing = await call("POST", "/reschedule", { id: "f".repeat(64), at: t0 + 5000 });
    expect(missing.status === 404 && missing.body.error === "not_found", `reschedule unknown: ${JSON.stringify(missing)}`);
    const again = await call("POST", "/cancel", { id: b.id });
    expect(again.status === 409 && again.body.error === "already_terminal", `cancel twice: ${JSON.stringify(again)}`);
    const badAt = await call("POST", "/reschedule", { id: c.id, at: "soon" });
    expect(badAt.status === 400 && badAt.body.error.startsWith("invalid_"), `reschedule at "soon": ${JSON.stringify(badAt)}`);
    // No request from here on: only the object's alarm can send.
    const end = t0 + 15_000;
    while (!(watch.at.has(a.id) && watch.at.has(c.id)) && Date.now() < end) await sleep(50);
    await sleep(Math.max(0, t0 + 7500 - Date.now()));
    watch.close();
    const lateA = watch.at.get(a.id) - (t0 + 4000);
    const lateC = watch.at.get(c.id) - (t0 + 6000);
    expect(lateA >= 0 && lateA < 3000, `a arrived ${lateA} ms after its time`);
    expect(lateC >= 0 && lateC < 3000, `c arrived ${lateC} ms after its new time`);
    expect(!watch.at.has(b.id), "the cancelled post reached the relay");
    expect((await queryRelay(relay.url, [b.id])).length === 0, "the cancelled post is on the relay");
    const recA = (await call("GET", `/record?id=${a.id}`)).body;
    const recB = (await call("GET", `/record?id=${b.id}`)).body;
    expect(recA.stage === "satisfied", `a: ${recA.stage}`);
    expect(recB.stage === "cancelled" && recB.evidence.length === 0, `b: ${JSON.stringify(recB).slice(0, 300)}`);
    const runs = (await call("GET", "/alarm-runs")).body;
    console.log(`  scheduled: a ${lateA} ms and c ${lateC} ms after their times; ${runs.length} alarm runs`);
  } finally {
    await mf.dispose();
  }
});

await t.check("workerd-example-few-alarm-runs-while-the-relay-is-down", async () => {
  const { mf, call } = await start(script, {}); // the example's defaults, as a new user has them
  try {
    const down = `ws://127.0.0.1:${await freePort()}`; // nothing listens: refused at once
    const events = signedEvents(50, { content: (i) => `relay down ${i}` });
    const t0 = Date.now();
    const r = await call("POST", "/enqueue", { items: events.map((event) => ({ event, relays: [down] })) });
    expect(r.status === 202 && r.body.results.length === 50, `enqueue: ${JSON.stringify(r).slice(0, 300)}`);
    await sleep(Math.max(0, t0 + 10_000 - Date.now()));
    const runs = (await call("GET", "/alarm-runs")).body.filter((at) => at < t0 + 10_000);
    const status = (await call("GET", "/status")).body;
    expect(status.retryable === 50, `status ${JSON.stringify(status)}`);
    const tries = [];
    for (const e of events) {
      const rec = (await call("GET", `/record?id=${e.id}`)).body;
      expect(rec.attempts === 0, `record ${e.id}: ${rec.attempts} attempts counted while the relay was down`);
      tries.push(rec.evidence[0].tries);
    }
    console.log(`  relay down: ${runs.length} alarm runs in 10 s for 50 records; tries per record ${Math.min(...tries)}–${Math.max(...tries)}`);
    expect(runs.length <= 10, `${runs.length} alarm runs in 10 s`);
    expect(tries.every((n) => n >= 3 && n <= 5), `tries ${tries}`);
  } finally {
    await mf.dispose();
  }
});

await relay.destroy();
rmSync(dir, { recursive: true, force: true });
if (t.failed) {
  console.log(`test result: FAILED. ${t.passed} passed; ${t.failed} failed`);
  process.exit(1);
}
console.log(`test result: ok. ${t.passed} passed; ${t.failed} failed`);
