// What keeping a record's index keys in its row under a native multiEntry index saves
// (IndexedDB schema 6, src/store/idb/schema.rs), measured on IndexedDB alone, without the
// outbox: N rows of 1.3 KB, each with four index keys as the store makes them, written
// in strict transactions of 1 000 three ways, the ways interleaved round by round:
//   kv       schema 5: the row and each index key as an entry of its own (5 puts)
//   native   schema 6: the row `{v, n, k}`, its keys in `k` under the index (1 put)
//   raw      the row alone, no index (1 put): the floor
// then each row rewritten with two of its keys moved (an answer: kv 2 puts and 2 deletes
// besides the row), then the keys of one stage listed (kv: `getAllKeys` of the range;
// native: `getAll` of the index). Prints the medians and native ÷ kv; asserts nothing.
//
//   node tests/e2e/bench/idb-index.mjs [N=5000] [ROUNDS=3]
import { startServer, launch } from "../harness.mjs";

const N = Number(process.argv[2] || 5000);
const ROUNDS = Number(process.argv[3] || 3);
const server = await startServer();
const browser = await launch();
try {
  const page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  const runs = [];
  for (let round = 0; round < ROUNDS; round++) {
    runs.push(await page.evaluate(async ({ N, round }) => {
      const row = "x".repeat(1300);
      const pad = (n) => String(n).padStart(20, "0");
      const recs = [];
      for (let i = 0; i < N; i++) {
        const id = (round * 1e6 + i).toString(16).padStart(64, "0");
        const t = pad(1000 + i);
        recs.push({ id, keys: [`P/1/${t}/${t}/${id}`, `L/${t}/${id}`, `T/pending/${t}/${id}`, `E/${id}/${id}`] });
      }
      const done = (tx) => new Promise((ok, ko) => { tx.oncomplete = ok; tx.onerror = () => ko(tx.error); });
      const open = (name, native) => new Promise((ok, ko) => {
        const q = indexedDB.open(name, 1);
        q.onupgradeneeded = () => { const kv = q.result.createObjectStore("kv"); if (native) kv.createIndex("k", "k", { multiEntry: true }); };
        q.onsuccess = () => ok(q.result);
        q.onerror = () => ko(q.error);
      });
      const timed = async (db, per, fn) => {
        const t0 = performance.now();
        for (let b = 0; b < N; b += per) {
          const tx = db.transaction("kv", "readwrite", { durability: "strict" });
          const kv = tx.objectStore("kv");
          for (const r of recs.slice(b, b + per)) fn(kv, r);
          await done(tx);
        }
        return performance.now() - t0;
      };
      const out = {};
      const sides = ["kv", "native", "raw"];
      if (round % 2) sides.reverse();
      for (const side of sides) {
        const name = `idb-index-${side}-${round}-${Math.random()}`;
        const db = await open(name, side === "native");
        out[`${side} write`] = await timed(db, 1000, (kv, r) => {
          if (side === "kv") {
            kv.put([row, 1], "R/" + r.id);
            for (const k of r.keys) kv.put(["", 1], k);
          } else kv.put(side === "native" ? { v: row, n: 1, k: r.keys } : [row, 1], "R/" + r.id);
        });
        out[`${side} answer`] = await timed(db, 100, (kv, r) => {
          const moved = [`P/1/${"9".repeat(20)}/${r.id}`, r.keys[1], `T/done/${r.keys[2].slice(10)}`, r.keys[3]];
          if (side === "kv") {
            kv.put([row, 2], "R/" + r.id);
            kv.put(["", 2], moved[0]);
            kv.put(["", 2], moved[2]);
            kv.delete(r.keys[0]);
            kv.delete(r.keys[2]);
          } else kv.put(side === "native" ? { v: row, n: 2, k: moved } : [row, 2], "R/" + r.id);
        });
        if (side !== "raw") {
          const t0 = performance.now();
          const tx = db.transaction("kv", "readonly");
          const kv = tx.objectStore("kv");
          const range = IDBKeyRange.bound("T/done/", "T/done0");
          const q = side === "kv" ? kv.getAllKeys(range) : kv.index("k").getAll(range);
          const n = await new Promise((ok) => { q.onsuccess = () => ok(q.result.length); });
          if (n !== N) throw new Error(`${side} listed ${n} of ${N}`);
          out[`${side} list`] = performance.now() - t0;
        }
        db.close();
        indexedDB.deleteDatabase(name);
      }
      return out;
    }, { N, round }));
  }
  const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const names = Object.keys(runs[0]);
  const m = Object.fromEntries(names.map((k) => [k, median(runs.map((r) => r[k]))]));
  console.log(`IndexedDB, ${N} rows of 1.3 KB with 4 index keys, ${ROUNDS} rounds (medians, ms):`);
  for (const k of names) console.log(`  ${k.padEnd(22)} ${m[k].toFixed(0).padStart(6)}   runs [${runs.map((r) => r[k].toFixed(0)).join(", ")}]`);
  const r = (a, b) => (m[a] / m[b]).toFixed(2);
  console.log(`native ÷ kv (time): write ${r("native write", "kv write")}, answer ${r("native answer", "kv answer")}, list ${r("native list", "kv list")}; native ÷ raw: write ${r("native write", "raw write")}, answer ${r("native answer", "raw answer")}`);
} finally {
  await browser.close();
  await server.close();
}
