// The store conformance suite in Bun on js/sqlite.js over bun:sqlite (a temp file).
// Usage (tests/edge/run.sh): bun run conformance-bun.mjs WASM_DIR
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runConformance } from "./conformance.mjs";
import { sqliteStorage } from "../../js/sqlite.js";

const dir = process.argv[2];
const mod = await import(join(dir, "conformance_wasm.js"));
await mod.default({ module_or_path: readFileSync(join(dir, "conformance_wasm_bg.wasm")) });
const tmp = mkdtempSync(join(tmpdir(), "nostr-outbox-conformance-"));
let failed = 0;
try {
  const db = new Database(join(tmp, "db.sqlite"));
  failed += (await runConformance(mod, (i) => sqliteStorage(db, { table: `case_${i}` }), console.log, "bun::bun-sqlite")).failed;
  db.close();
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
