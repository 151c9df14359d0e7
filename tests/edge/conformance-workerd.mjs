// The store conformance suite in workerd (miniflare) on a KV-backed and a SQLite-backed
// Durable Object's storage (conformance-worker.mjs). Node script; the wasm module must be
// built into target/conformance-wasm (tests/edge/run.sh does).
import { Miniflare } from "miniflare";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const mf = new Miniflare({
  modules: true,
  scriptPath: join(here, "conformance-worker.mjs"),
  modulesRoot: root,
  modulesRules: [
    { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
    { type: "CompiledWasm", include: ["**/*.wasm"] },
  ],
  compatibilityDate: "2026-07-30",
  durableObjects: {
    KV_OBJECT: "ConformanceObject",
    SQL_OBJECT: { className: "SqlConformanceObject", useSQLite: true },
  },
});
let failed = 0;
try {
  for (const object of ["kv", "sql"]) {
    const label = `workerd::durable-object-${object}`;
    const res = await mf.dispatchFetch(`http://localhost/?object=${object}&label=${label}`);
    const text = await res.text();
    if (!res.ok) {
      console.log(`test ${label}::conformance ... FAILED\n  HTTP ${res.status}: ${text.slice(0, 800)}`);
      failed++;
      continue;
    }
    const r = JSON.parse(text);
    for (const line of r.lines) console.log(line);
    failed += r.failed;
  }
} finally {
  await mf.dispose();
}
process.exit(failed ? 1 : 0);
