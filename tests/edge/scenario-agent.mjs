// The runtime half of tests/edge/scenario.mjs and tests/edge/bench.mjs, run in Deno
// (js/deno-kv.js on Deno.openKv(<file>)) or Bun (js/sqlite.js on bun:sqlite): one phase
// per process, on the same storage file, so the Node driver can SIGKILL a process in the
// middle of a flush and relaunch another on what it left. Reports to the driver on stdout
// as lines `@{json}`. Usage: `<runtime> scenario-agent.mjs '<json config>'`:
//   { mode: "down" | "flush" | "recover" | "bench", db, relay, events (a JSON file of
//     signed events), holdAfter?, options? }
// Events come pre-signed from the driver (nostr-tools in Node).
import init, { Outbox, OutboxError } from "../../pkg/edge/index.js";

const isDeno = typeof Deno !== "undefined";
const argv = isDeno ? Deno.args : process.argv.slice(2);
const config = JSON.parse(argv[0]);
const report = (value) => console.log("@" + JSON.stringify(value));
const exit = (code) => (isDeno ? Deno.exit(code) : process.exit(code));
const sleep = (ms) => new Promise((f) => setTimeout(f, ms));

// The outbox's timing for the scenario: short relay timeouts and retries, and the
// default lease (120 s with these timeouts). An adapter outbox has no Web Locks: a killed
// flusher's records come back because its heartbeat lapses (6 s), not because their
// leases run out; the recover phase gives up after 40 s.
const OPTIONS = {
  autoFlush: false,
  connectTimeoutMs: 500,
  publishTimeoutMs: 1000,
  baseDelayMs: 100,
  maxDelayMs: 1000,
  ...(config.options ?? {}),
};

async function readText(path) {
  if (isDeno) return Deno.readTextFile(path);
  const { readFile } = await import("node:fs/promises");
  return readFile(path, "utf8");
}

// The durable adapter of this runtime, and how to close it.
async function durable(path) {
  if (isDeno) {
    const { denoKvStorage } = await import("../../pkg/deno-kv.js");
    const kv = await Deno.openKv(path);
    return { name: "deno-kv", adapter: denoKvStorage(kv), close: () => kv.close() };
  }
  const { sqliteStorage } = await import("../../pkg/sqlite.js");
  const { Database } = await import("bun:sqlite");
  const db = new Database(path, { create: true });
  // `wal` (the edge bench's bun-wal): the write-ahead log README recommends for speed.
  if (config.wal) db.exec("PRAGMA journal_mode=WAL");
  return { name: "bun-sqlite", adapter: sqliteStorage(db), close: () => db.close() };
}

// enqueueMany's batch size: at most 100 (Deno KV: 100 checks per commit); smaller where the
// adapter's declared commit size is the limit (Deno KV: 64 920 bytes, about 27 notes).
const CHUNK = config.chunk ?? 100;
const chunks = (items, n = CHUNK) => Array.from({ length: Math.ceil(items.length / n) }, (_, i) => items.slice(i * n, i * n + n));
const waiting = (s) => s.pending + s.leased + s.retryable + (s.delivering ?? 0);

// Flushes until nothing waits (or `limitMs` passes); sleeps until the next due time.
async function flushAll(outbox, limitMs) {
  const until = Date.now() + limitMs;
  const runs = [];
  for (;;) {
    const s = await outbox.status();
    if (waiting(s) === 0 || Date.now() > until) return { runs, status: s };
    const r = await outbox.flush();
    runs.push({ claimed: r.claimed, delivered: r.delivered, retrying: r.retrying, exhausted: r.exhausted, lostClaims: r.lostClaims });
    if (r.claimed === 0) {
      const due = r.nextDueAt ?? Date.now() + 200;
      await sleep(Math.max(20, Math.min(500, due - Date.now())));
    }
  }
}

async function listAll(outbox) {
  const out = [];
  let after;
  for (;;) {
    const page = await outbox.list(after === undefined ? { limit: 100 } : { limit: 100, after });
    out.push(...page);
    if (page.length < 100) return out;
    after = page[page.length - 1].id;
  }
}

const codeOf = async (fn) => {
  try {
    await fn();
    return "no error";
  } catch (err) {
    return err instanceof OutboxError ? err.code : `not an OutboxError: ${err}`;
  }
};

await init();
const events = config.events ? JSON.parse(await readText(config.events)) : [];
const relays = [config.relay];

if (config.mode === "bench") {
  // A warm-up first, untimed (the process's first enqueue and flush pay for compiling the
  // .wasm's hot paths and the relay's first connection), on the memory store like the
  // memory side; then enqueueMany of every event (chunks of 100) and their flush, on each
  // store in the order the driver gives (it alternates).
  const out = {};
  const sides = config.order ?? ["durable", "memory"];
  for (const kind of events.warm ? ["warm", ...sides] : sides) {
    const store = kind === "durable" ? await durable(config.db) : { name: "memory", adapter: "memory", close() {} };
    const outbox = await Outbox.open({ ...OPTIONS, storage: store.adapter, leaseMs: 60000, publishTimeoutMs: 10000, connectTimeoutMs: 5000 });
    const mine = events[kind];
    const t0 = performance.now();
    for (const c of chunks(mine)) await outbox.enqueueMany(c.map((event) => ({ event, relays })));
    const t1 = performance.now();
    const { status } = await flushAll(outbox, 60000);
    const t2 = performance.now();
    await outbox.close();
    store.close();
    if (kind !== "warm") out[kind] = { store: store.name, enqueueMs: t1 - t0, flushMs: t2 - t1, satisfied: status.satisfied, total: status.total };
  }
  report(out);
  exit(0);
}

const store = await durable(config.db);
const outbox = await Outbox.open({ ...OPTIONS, storage: store.adapter });

if (config.mode === "down") {
  // The relay is down: enqueue everything, one flush records the relay unreachable.
  let created = 0;
  for (const c of chunks(events)) {
    const results = await outbox.enqueueMany(c.map((event) => ({ event, relays })));
    created += results.filter((r) => r.disposition === "created").length;
  }
  const r = await outbox.flush();
  const status = await outbox.status();
  const sample = await outbox.get(events[0].id);
  report({ created, flush: { claimed: r.claimed, delivered: r.delivered, retrying: r.retrying, nextDueAt: r.nextDueAt }, status, sample: { stage: sample.stage, attempts: sample.attempts, evidence: sample.evidence } });
} else if (config.mode === "flush") {
  // Flushes; at the `holdAfter`-th delivery, in the middle of the flush, it says so and
  // stops the event loop (the driver SIGKILLs it then): nothing after that point runs.
  let delivered = 0;
  outbox.addEventListener("delivered", () => {
    delivered++;
    if (delivered === config.holdAfter) {
      report({ holding: delivered });
      const until = Date.now() + 20000;
      while (Date.now() < until) {
        /* held until killed */
      }
    }
  });
  const r = await flushAll(outbox, 30000);
  report({ finished: true, delivered, status: r.status });
} else if (config.mode === "inspect") {
  report({ status: await outbox.status() });
} else if (config.mode === "recover") {
  const before = await outbox.status();
  const started = Date.now();
  const { runs, status } = await flushAll(outbox, 40000);
  const records = (await listAll(outbox)).map((r) => ({
    id: r.id,
    stage: r.stage,
    attempts: r.attempts,
    evidence: r.evidence.length,
    accepted: r.evidence.filter((e) => e.outcome === "accepted" || e.outcome === "duplicate").length,
    outcomes: [...new Set(r.evidence.map((e) => e.outcome))],
  }));
  // Bad input: typed codes, nothing written.
  const tampered = { ...events[0], content: events[0].content + "!" };
  const bad = {
    tampered: await codeOf(() => outbox.enqueue(tampered, relays)),
    tamperedMany: await codeOf(() => outbox.enqueueMany([{ event: events[1], relays }, { event: tampered, relays }])),
    unknownOption: await codeOf(() => Outbox.open({ storage: store.adapter, autoFlush: false, bogus: 1 })),
    badRelayUrl: await codeOf(() => outbox.enqueue(events[0], ["http://127.0.0.1:1"])),
  };
  const after = await outbox.status();
  report({ before, runs: runs.length, recoverMs: Date.now() - started, status, records, bad, totalAfterBad: after.total });
}
await outbox.close();
store.close();
exit(0);
