// What IndexedDB costs per record for the write patterns a durable flush can use, in
// headless Chromium, no network: a diagnostic behind docs/BENCHMARKS.md ("Goals missed
// and why"), not part of `make bench`. Rows are shaped like the outbox's (1.4 KB `doc`,
// the same four indexes); each pattern runs on a fresh database of N records, the
// patterns interleaved round by round; medians are printed.
//
//   node tests/e2e/bench/idb-costs.mjs [N=1000] [rounds=3]
//
// Patterns (per record):
//   lease+evidence  read and rewrite the row twice, in transactions of B (today's flush:
//                   the claim writes the lease, the completion the evidence)
//   evidence only   a read-only claim (getAll on the due index), then one rewrite
//   small rows      the same two rewrites of a 60-byte state row with one index (what a
//                   schema with the event kept apart would rewrite)
//   empty tx        one tiny write per transaction: the cost of a transaction itself
//   lease row       (batch 64) a claim that reads the due index and writes one small
//                   lease row for the batch instead of rewriting each record; the
//                   completion rewrites each record and deletes the lease row
//   split           (batch 64) the event kept in a row of its own (written once): the
//                   claim reads the state rows (300-byte doc, two indexes) and the
//                   event rows, then rewrites the state rows; the completion rewrites
//                   them again; "split + lease row" combines both
//   (IDB_COSTS_ONLY=64 runs only the batch-64 patterns)
// Under each: the CPU time each kind of process spent per 1000 records (cpu.mjs).
import { startServer, launch } from "../harness.mjs";
import { cpuSnapshot, cpuDelta, addCpu, cpuLine } from "./cpu.mjs";

const N = Number(process.argv[2] || 1000);
const ROUNDS = Number(process.argv[3] || 3);
const ONLY64 = process.env.IDB_COSTS_ONLY === "64";
const srv = await startServer();
const b = await launch();
try {
  const page = await b.context.newPage();
  await page.goto(srv.url + "/tests/e2e/pages/blank.html");
  const names = await page.evaluate(async ({ N, ROUNDS, ONLY64 }) => {
    const open = (name) =>
      new Promise((ok, ko) => {
        const r = indexedDB.open(name, 1);
        r.onupgradeneeded = () => {
          const s = r.result.createObjectStore("records", { keyPath: "id" });
          s.createIndex("due", ["dueMs", "createdMs", "id"]);
          s.createIndex("created", ["createdMs", "id"]);
          s.createIndex("stage", ["stage", "createdMs", "id"]);
          s.createIndex("event", "eventId");
          const t = r.result.createObjectStore("small", { keyPath: "id" });
          t.createIndex("due", ["dueMs", "id"]);
          const st = r.result.createObjectStore("state", { keyPath: "id" });
          st.createIndex("due", ["dueMs", "createdMs", "id"]);
          st.createIndex("stage", ["stage", "createdMs", "id"]);
          const ev = r.result.createObjectStore("events", { keyPath: "id" });
          ev.createIndex("created", ["createdMs", "id"]);
          ev.createIndex("event", "eventId");
          r.result.createObjectStore("leases", { keyPath: "leaseId" });
        };
        r.onsuccess = () => ok(r.result);
        r.onerror = () => ko(r.error);
      });
    const doc = "x".repeat(1400);
    const key = (i) => "r" + String(i).padStart(6, "0");
    const row = (i, due, stage) => ({ id: key(i), v: 1, stage, dueMs: due, createdMs: i, eventId: "e" + i, doc });
    const small = (i, due, stage) => ({ id: key(i), stage, dueMs: due, lease: "0123456789abcdef" });
    const stateDoc = "s".repeat(300);
    const state = (i, due, stage) => ({ id: key(i), v: 2, stage, dueMs: due, createdMs: i, doc: stateDoc });
    const eventRow = (i) => ({ id: key(i), createdMs: i, eventId: "e" + i, doc: "x".repeat(1100) });
    const done = (tx) => new Promise((ok, ko) => { tx.oncomplete = ok; tx.onabort = () => ko(tx.error); });
    const req = (r) => new Promise((ok, ko) => { r.onsuccess = () => ok(r.result); r.onerror = () => ko(r.error); });
    async function fresh() {
      const db = await open("idb-costs-" + Math.random());
      const tx = db.transaction(["records", "small", "state", "events"], "readwrite");
      for (let i = 0; i < N; i++) {
        tx.objectStore("records").add(row(i, i, "pending"));
        tx.objectStore("small").add(small(i, i, "pending"));
        tx.objectStore("state").add(state(i, i, "pending"));
        tx.objectStore("events").add(eventRow(i));
      }
      await done(tx);
      return db;
    }
    // One pass over every record in transactions of B: read each, then rewrite it.
    async function rewrite(db, store, B, make, durability) {
      for (let k = 0; k < N; k += B) {
        const tx = db.transaction([store], "readwrite", { durability });
        const s = tx.objectStore(store);
        const ids = [];
        for (let i = k; i < Math.min(N, k + B); i++) ids.push(i);
        await Promise.all(ids.map((i) => req(s.get(key(i)))));
        for (const i of ids) s.put(make(i));
        tx.commit?.();
        await done(tx);
      }
    }
    async function readClaims(db, B) {
      for (let k = 0; k < N; k += B) {
        const tx = db.transaction(["records"], "readonly");
        const range = IDBKeyRange.bound([k, -Infinity, ""], [k + B, Infinity, "\uffff"], false, true);
        await req(tx.objectStore("records").index("due").getAll(range, B));
      }
    }
    const patterns = {};
    for (const B of [16, 64, 256]) {
      patterns[`lease+evidence, batch ${B}`] = async (db) => {
        await rewrite(db, "records", B, (i) => row(i, 1e12 + i, "leased"), "relaxed");
        await rewrite(db, "records", B, (i) => row(i, 2e12 + i, "retryable"), "strict");
      };
      patterns[`evidence only (read-only claim), batch ${B}`] = async (db) => {
        await readClaims(db, B);
        await rewrite(db, "records", B, (i) => row(i, 2e12 + i, "retryable"), "strict");
      };
      patterns[`small rows, lease+evidence, batch ${B}`] = async (db) => {
        await rewrite(db, "small", B, (i) => small(i, 1e12 + i, "leased"), "relaxed");
        await rewrite(db, "small", B, (i) => small(i, 2e12 + i, "retryable"), "strict");
      };
    }
    patterns[`empty tx x ${Math.ceil(N / 16)} (one per 16 records)`] = async (db) => {
      for (let k = 0; k < N; k += 16) {
        const tx = db.transaction(["small"], "readwrite", { durability: "strict" });
        tx.objectStore("small").put(small(0, 0, "pending"));
        await done(tx);
      }
    };
    // Claims and completions of the designs above, batch 64, one pass over all records.
    const B = 64;
    const range = (k) => IDBKeyRange.bound([k, -Infinity, ""], [k + B, Infinity, "\uffff"], false, true);
    const ids = (k) => Array.from({ length: Math.min(N, k + B) - k }, (_, j) => k + j);
    async function pass(db, { split, leaseRow }) {
      const main = split ? "state" : "records";
      const make = split ? state : row;
      for (let k = 0; k < N; k += B) {
        // claim
        const stores = [main, ...(split ? ["events"] : []), ...(leaseRow ? ["leases"] : [])];
        let tx = db.transaction(stores, "readwrite", { durability: "relaxed" });
        await req(tx.objectStore(main).index("due").getAll(range(k), B));
        if (split) await Promise.all(ids(k).map((i) => req(tx.objectStore("events").get(key(i)))));
        if (leaseRow) tx.objectStore("leases").put({ leaseId: "L" + k, expires: 1e12, ids: ids(k).map(key) });
        else for (const i of ids(k)) tx.objectStore(main).put(make(i, 1e12 + i, "leased"));
        tx.commit?.();
        await done(tx);
        // completion
        tx = db.transaction([main, ...(leaseRow ? ["leases"] : [])], "readwrite", { durability: "strict" });
        const s = tx.objectStore(main);
        await Promise.all(ids(k).map((i) => req(s.get(key(i)))));
        for (const i of ids(k)) s.put(make(i, 2e12 + i, "retryable"));
        if (leaseRow) tx.objectStore("leases").delete("L" + k);
        tx.commit?.();
        await done(tx);
      }
    }
    patterns["design: today (claim rewrites, completion rewrites), batch 64"] = (db) => pass(db, {});
    patterns["design: lease row, batch 64"] = (db) => pass(db, { leaseRow: true });
    patterns["design: split, batch 64"] = (db) => pass(db, { split: true });
    patterns["design: split + lease row, batch 64"] = (db) => pass(db, { split: true, leaseRow: true });
    if (ONLY64) for (const name of Object.keys(patterns)) if (!/64/.test(name)) delete patterns[name];
    // The node side runs the rounds, so it can count CPU around each pattern.
    let db = null;
    window.idbCosts = {
      names: Object.keys(patterns),
      prepare: async () => {
        db = await fresh();
      },
      run: async (name) => {
        const t0 = performance.now();
        await patterns[name](db);
        const ms = performance.now() - t0;
        db.close();
        return ms;
      },
    };
    return window.idbCosts.names;
  }, { N, ROUNDS, ONLY64 });
  const out = {};
  const cpu = {};
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(r + k) % names.length];
      await page.evaluate(() => window.idbCosts.prepare());
      const a = cpuSnapshot();
      const ms = await page.evaluate((name) => window.idbCosts.run(name), name);
      addCpu((cpu[name] ||= {}), cpuDelta(a, cpuSnapshot()));
      (out[name] ||= []).push(ms);
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`IndexedDB cost per pattern, ${N} records, ${ROUNDS} rounds (median ms; runs)`);
  for (const [name, runs] of Object.entries(out)) {
    console.log(`  ${name.padEnd(48)} ${median(runs).toFixed(0).padStart(6)} ms   [${runs.map((x) => x.toFixed(0)).join(", ")}]`);
    console.log(`      ${cpuLine(cpu[name], N * ROUNDS).replace("publishes", "records")}`);
  }
} finally {
  await b.close();
  await srv.close();
}
