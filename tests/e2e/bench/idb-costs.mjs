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
import { startServer, launch } from "../harness.mjs";

const N = Number(process.argv[2] || 1000);
const ROUNDS = Number(process.argv[3] || 3);
const srv = await startServer();
const b = await launch();
try {
  const page = await b.context.newPage();
  await page.goto(srv.url + "/tests/e2e/pages/blank.html");
  const res = await page.evaluate(async ({ N, ROUNDS }) => {
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
        };
        r.onsuccess = () => ok(r.result);
        r.onerror = () => ko(r.error);
      });
    const doc = "x".repeat(1400);
    const key = (i) => "r" + String(i).padStart(6, "0");
    const row = (i, due, stage) => ({ id: key(i), v: 1, stage, dueMs: due, createdMs: i, eventId: "e" + i, doc });
    const small = (i, due, stage) => ({ id: key(i), stage, dueMs: due, lease: "0123456789abcdef" });
    const done = (tx) => new Promise((ok, ko) => { tx.oncomplete = ok; tx.onabort = () => ko(tx.error); });
    const req = (r) => new Promise((ok, ko) => { r.onsuccess = () => ok(r.result); r.onerror = () => ko(r.error); });
    async function fresh() {
      const db = await open("idb-costs-" + Math.random());
      const tx = db.transaction(["records", "small"], "readwrite");
      for (let i = 0; i < N; i++) {
        tx.objectStore("records").add(row(i, i, "pending"));
        tx.objectStore("small").add(small(i, i, "pending"));
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
    const out = {};
    const names = Object.keys(patterns);
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(r + k) % names.length];
        const db = await fresh();
        const t0 = performance.now();
        await patterns[name](db);
        (out[name] ||= []).push(performance.now() - t0);
        db.close();
      }
    }
    return out;
  }, { N, ROUNDS });
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`IndexedDB cost per pattern, ${N} records, ${ROUNDS} rounds (median ms; runs)`);
  for (const [name, runs] of Object.entries(res)) {
    console.log(`  ${name.padEnd(48)} ${median(runs).toFixed(0).padStart(6)} ms   [${runs.map((x) => x.toFixed(0)).join(", ")}]`);
  }
} finally {
  await b.close();
  await srv.close();
}
