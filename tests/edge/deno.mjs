// The contract suite in Deno: js/deno-kv.js on `Deno.openKv(<temp file>)`, and js/sqlite.js
// on node:sqlite's DatabaseSync (Deno implements node:sqlite). Run with
// `deno run --unstable-kv --allow-read --allow-write --allow-env deno.mjs`.
import { runContract, tally } from "./contract.mjs";
import { denoKvStorage } from "../../js/deno-kv.js";
import { sqliteStorage } from "../../js/sqlite.js";
import { DatabaseSync } from "node:sqlite";

const print = (line) => console.log(line);
const dir = await Deno.makeTempDir({ prefix: "nostr-outbox-edge-deno-" });
const t = tally(print);
const { add, check } = t;
try {
  const kv = await Deno.openKv(`${dir}/kv.sqlite3`);
  add(await runContract((space) => denoKvStorage(kv, { prefix: space }), print, { name: "deno::deno-kv" }));
  // The app's own keys beside the adapter's, and a prefix that extends another: separate
  // key parts, so nothing leaks.
  await check("deno::deno-kv::prefix_is_a_key_part", async () => {
    await kv.set(["app", "x"], 1);
    const a = denoKvStorage(kv, { prefix: "p" });
    const b = denoKvStorage(kv, { prefix: "p/x" });
    await a.commit({ checks: [], puts: [{ key: "k", value: "A" }], deletes: [] });
    await b.commit({ checks: [], puts: [{ key: "k", value: "B" }], deletes: [] });
    const listed = await a.list({ start: "", end: "\u007f", limit: 10, reverse: false });
    if (JSON.stringify(listed.map((e) => [e.key, e.value])) !== '[["k","A"]]') throw new Error(JSON.stringify(listed));
  });
  kv.close();
  const db = new DatabaseSync(`${dir}/node-sqlite.db`);
  add(await runContract((space) => sqliteStorage(db, { table: `s_${space}` }), print, { name: "deno::node-sqlite" }));
  db.close();
} finally {
  await Deno.remove(dir, { recursive: true });
}
console.log(`deno: ${t.passed} passed; ${t.failed} failed`);
Deno.exit(t.failed ? 1 : 0);
