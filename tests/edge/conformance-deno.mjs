// The store conformance suite in Deno on js/deno-kv.js over Deno.openKv(<temp file>) and
// on js/sqlite.js over node:sqlite. Usage (tests/edge/run.sh):
//   deno run --unstable-kv --allow-read --allow-write --allow-env conformance-deno.mjs WASM_DIR
import { DatabaseSync } from "node:sqlite";
import { runConformance } from "./conformance.mjs";
import { denoKvStorage } from "../../js/deno-kv.js";
import { sqliteStorage } from "../../js/sqlite.js";

const dir = new URL(`file://${Deno.args[0]}/`);
const mod = await import(new URL("conformance_wasm.js", dir));
await mod.default({ module_or_path: await Deno.readFile(new URL("conformance_wasm_bg.wasm", dir)) });
const tmp = await Deno.makeTempDir({ prefix: "nostr-outbox-conformance-" });
let failed = 0;
try {
  const kv = await Deno.openKv(`${tmp}/kv`);
  failed += (await runConformance(mod, (i) => denoKvStorage(kv, { prefix: `case-${i}/` }), console.log, "deno::deno-kv")).failed;
  kv.close();
  const db = new DatabaseSync(`${tmp}/db.sqlite`);
  failed += (await runConformance(mod, (i) => sqliteStorage(db, { table: `case_${i}` }), console.log, "deno::node-sqlite")).failed;
  db.close();
} finally {
  await Deno.remove(tmp, { recursive: true });
}
Deno.exit(failed ? 1 : 0);
