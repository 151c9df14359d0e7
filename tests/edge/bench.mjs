// What a durable storage adapter costs in each edge runtime: enqueueMany of N signed events
// (chunks of at most 100) and their flush to one local nostr-rs-relay, on the runtime's
// durable adapter and on the memory store (`storage: "memory"`) in the same run, printed as
// ratios (durable ÷ memory time) and absolute ms, median of --reps runs. Each run first
// warms up, untimed (100 events enqueued and flushed on the memory store: whichever side
// ran first paid for the process's first compile and connection, about 0.3× of the ratio),
// then runs the two sides one after the other, in alternating order; the total's ratio is
// also given as the median of each run's own ratio, and per order:
//   Deno: deno-kv (Deno.openKv on a file; chunks of 100: Deno KV's 100 checks per atomic operation),
//   Bun: sqlite on bun:sqlite (a file), as opened (SQLite's rollback journal), and
//   bun-wal: the same with PRAGMA journal_mode=WAL, as README recommends for speed,
//   workerd (miniflare): durableObjectStorage on a SQLite-backed Durable Object persisted
//   to disk; timed from Node around each request (Date.now() stands still inside workerd).
// Deno and Bun time inside the runtime (tests/edge/scenario-agent.mjs, mode "bench"),
// one process per run. Needs the built package (pkg/) and nostr-rs-relay.
//   node tests/edge/bench.mjs [--events 1000] [--reps 4] [deno,bun,bun-wal,workerd]
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { relay as makeRelay } from "../e2e/harness.mjs";
import { signedEvents } from "../e2e/events.mjs";
import { bundle, workerOptions } from "./scenario-workerd.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, "node_modules", ".bin");
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const N = opt("--events", 1000);
const REPS = opt("--reps", 4);
const runtimes = (args.find((a) => /^[a-z][a-z,-]*$/.test(a)) ?? "deno,bun,bun-wal,workerd").split(",");
// enqueueMany in chunks of 100 everywhere: Deno KV takes at most 100 new records per call.
const CHUNK = 100;
const STORE = { deno: "deno-kv", bun: "bun:sqlite", "bun-wal": "bun:sqlite, WAL", workerd: "Durable Object, SQLite-backed" };
const OPTIONS = { connectTimeoutMs: 5000, publishTimeoutMs: 10000, leaseMs: 60000 };

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function agent(runtime, cfg) {
  const script = join(here, "scenario-agent.mjs");
  const [cmd, argv] =
    runtime === "deno"
      ? [join(bin, "deno"), ["run", "--no-prompt", "--unstable-kv", "--allow-read", "--allow-write", "--allow-env", "--allow-net", script, JSON.stringify(cfg)]]
      : [join(bin, "bun"), ["run", script, JSON.stringify(cfg)]];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 300000);
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err = (err + d).slice(-5000)));
    child.once("exit", (code) => {
      clearTimeout(timer);
      const line = out.split("\n").find((l) => l.startsWith("@"));
      if (code !== 0 || !line) reject(new Error(`${runtime} exited ${code}: ${err}${out.slice(-2000)}`));
      else resolve(JSON.parse(line.slice(1)));
    });
  });
}

// Even runs put the durable side first, odd runs the memory side.
const order = (rep) => (rep % 2 ? ["memory", "durable"] : ["durable", "memory"]);

async function workerdRun(mf, events, relayUrl, rep) {
  const out = {};
  for (const kind of ["warm", ...order(rep)]) {
    const base = `http://localhost/?name=${kind}-${rep}`;
    const post = async (path, value) => {
      const res = await mf.dispatchFetch(base.replace("/?", `${path}?`), { method: "POST", body: JSON.stringify(value) });
      const text = await res.text();
      if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
      return JSON.parse(text);
    };
    await post("/open", { storage: kind === "durable" ? "durable" : "memory", options: OPTIONS });
    const mine = events[kind];
    const t0 = performance.now();
    for (let i = 0; i < mine.length; i += CHUNK) {
      await post("/enqueue", { items: mine.slice(i, i + CHUNK).map((event) => ({ event, relays: [relayUrl] })) });
    }
    const t1 = performance.now();
    const status = await post("/flush", {});
    const t2 = performance.now();
    if (kind !== "warm") out[kind] = { enqueueMs: t1 - t0, flushMs: t2 - t1, satisfied: status.satisfied, total: status.total };
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), "nostr-outbox-edge-bench-"));
const relay = await makeRelay();
await relay.start();
let mf;
try {
  console.log(`edge bench: ${N} events per store per run, ${REPS} runs per runtime, one nostr-rs-relay on 127.0.0.1`);
  for (const runtime of runtimes) {
    const runs = [];
    let workerdMf;
    if (runtime === "workerd") {
      const { Miniflare } = await import("miniflare");
      const script = await bundle(join(here, "bench-worker.mjs"), dir, join(dir, "bench-worker"));
      mf = workerdMf = new Miniflare(
        workerOptions(script, {
          durableObjects: { BENCH: { className: "BenchObject", useSQLite: true } },
          durableObjectsPersist: join(dir, "do-persist"),
        }),
      );
      await mf.ready;
    }
    for (let rep = 0; rep < REPS; rep++) {
      const events = {
        warm: signedEvents(100, { content: (i) => `bench ${runtime} ${rep} warm-up ${i}` }),
        durable: signedEvents(N, { content: (i) => `bench ${runtime} ${rep} durable ${i}` }), memory: signedEvents(N, { content: (i) => `bench ${runtime} ${rep} memory ${i}` }) };
      let r;
      if (runtime === "workerd") r = await workerdRun(workerdMf, events, relay.url, rep);
      else {
        const file = join(dir, `${runtime}-${rep}.json`);
        writeFileSync(file, JSON.stringify(events));
        const wal = runtime === "bun-wal";
        r = await agent(wal ? "bun" : runtime, { mode: "bench", db: join(dir, `${runtime}-${rep}.db`), relay: relay.url, events: file, chunk: CHUNK, options: OPTIONS, wal, order: order(rep) });
      }
      for (const kind of ["durable", "memory"]) {
        if (r[kind].satisfied !== N) throw new Error(`${runtime} ${kind}: ${r[kind].satisfied} of ${N} satisfied`);
      }
      runs.push(r);
    }
    if (workerdMf) {
      await workerdMf.dispose();
      mf = undefined;
    }
    const m = (kind, field) => median(runs.map((r) => r[kind][field]));
    const e = [m("durable", "enqueueMs"), m("memory", "enqueueMs")];
    const f = [m("durable", "flushMs"), m("memory", "flushMs")];
    const t = [median(runs.map((r) => r.durable.enqueueMs + r.durable.flushMs)), median(runs.map((r) => r.memory.enqueueMs + r.memory.flushMs))];
    const own = (r) => (r.durable.enqueueMs + r.durable.flushMs) / (r.memory.enqueueMs + r.memory.flushMs);
    const paired = median(runs.map(own));
    // The same by which side ran first: what the order alone moves.
    const byOrder = ["durable", "memory"].map((first) => runs.filter((_, rep) => order(rep)[0] === first).map(own));
    const ms = (x) => x.toFixed(0);
    const ratio = ([d, mem]) => (d / mem).toFixed(2);
    console.log(
      `BENCH edge ${runtime} (${STORE[runtime]} vs memory, chunks of ${CHUNK}): ${N} events, median of ${REPS}: ` +
        `enqueueMany durable ${ms(e[0])} ms, memory ${ms(e[1])} ms (durable/memory ${ratio(e)}); ` +
        `flush durable ${ms(f[0])} ms, memory ${ms(f[1])} ms (${ratio(f)}); ` +
        `total durable/memory ${ratio(t)} (median of each run's own: ${paired.toFixed(2)}; ` +
        `durable first ${byOrder[0].map((x) => x.toFixed(2)).join(", ")}, memory first ${byOrder[1].map((x) => x.toFixed(2)).join(", ")})`,
    );
  }
} finally {
  if (mf) await mf.dispose();
  await relay.destroy();
  rmSync(dir, { recursive: true, force: true });
}
