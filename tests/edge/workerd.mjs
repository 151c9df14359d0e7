// The contract suite in workerd (Cloudflare's runtime) through miniflare, on
// js/durable-object.js over a KV-backed and a SQLite-backed Durable Object, with their
// storage persisted to a temp dir: the data must survive a miniflare restart. Also checks
// syncAlarm, an alarm that fires, and the runtime's own value size limit. Node script.
import { Miniflare } from "miniflare";
import { tally } from "./contract.mjs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const persist = mkdtempSync(join(tmpdir(), "nostr-outbox-edge-workerd-"));
const t = tally((line) => console.log(line));
const { bad, add, check } = t;

const start = () =>
  new Miniflare({
    modules: true,
    scriptPath: join(here, "worker.mjs"),
    modulesRoot: root,
    modulesRules: [{ type: "ESModule", include: ["**/*.js", "**/*.mjs"] }],
    compatibilityDate: "2026-07-30",
    durableObjects: {
      KV_OBJECT: "KvObject",
      SQL_OBJECT: { className: "SqlObject", useSQLite: true },
    },
    durableObjectsPersist: persist,
  });
const get = async (mf, path) => {
  const res = await mf.dispatchFetch(`http://localhost${path}`);
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text);
};

let mf;
const written = {};
try {
  const t0 = Date.now();
  mf = start();
  await mf.ready;
  const t1 = Date.now();
  for (const object of ["kv", "sql"]) {
    const label = `workerd::durable-object-${object}`;
    try {
      const r = await get(mf, `/contract?object=${object}&label=${label}`);
      for (const line of r.lines) console.log(line);
      add(r);
    } catch (err) {
      bad(`${label}::contract`, err.stack);
    }
    await check(`${label}::backend_is_${object}`, async () => {
      const r = await get(mf, `/backend?object=${object}`);
      if (r.sql !== (object === "sql")) throw new Error(`ctx.storage.sql present: ${r.sql}`);
    });
    await check(`${label}::refused_write_rolls_back`, async () => {
      const r = await get(mf, `/rollback?object=${object}&name=rollback`);
      if (!r.error) throw new Error("the commit did not reject");
      if (JSON.stringify(r.after) !== '[["keep",true]]') throw new Error(`written: ${JSON.stringify(r.after).slice(0, 200)}`);
      if (r.next !== true) throw new Error("the adapter is stuck after a rejected commit");
    });
    await check(`${label}::sync_alarm`, async () => {
      const r = await get(mf, `/alarm?object=${object}&name=alarm`);
      if (r.problems.length) throw new Error(r.problems.join("; "));
      let fired = null;
      for (let i = 0; i < 100 && !fired; i++) {
        await new Promise((f) => setTimeout(f, 50));
        fired = (await get(mf, `/alarm-fired?object=${object}&name=alarm`)).fired;
      }
      if (!fired) throw new Error("the alarm did not fire within 5 s");
    });
    await check(`${label}::declared_value_fits`, async () => {
      // The declared limit (UTF-8 bytes) plus the version and framing stays under what the
      // runtime takes; 2 KiB over the declared one, the runtime refuses (or the limit is
      // merely conservative, which is reported).
      const limits = await get(mf, `/limits?object=${object}`);
      const at = await get(mf, `/raw-value?object=${object}&bytes=${limits.maxValueBytes + 64}`);
      if (!at.ok) throw new Error(`the runtime refuses ${limits.maxValueBytes + 64} bytes: ${at.error}`);
      const over = await get(mf, `/raw-value?object=${object}&bytes=${128 * 1024 + 1}`);
      // Local workerd does not enforce production's 128 KiB per value (KV-backed objects;
      // SQLite-backed: 2 MB per key and value); printed for the record.
      console.log(`  (${object}: a raw value of 128 KiB + 1 byte: ${over.ok ? "accepted by local workerd" : over.error})`);
    });
    await check(`${label}::write_before_restart`, async () => {
      const r = await get(mf, `/write?object=${object}&name=persist`);
      if (!r.ok || r.entries.length !== 300) throw new Error(JSON.stringify(r).slice(0, 300));
      written[object] = r.entries;
    });
  }
  await mf.dispose();
  mf = undefined;
  const t2 = Date.now();
  mf = start();
  await mf.ready;
  for (const object of ["kv", "sql"]) {
    await check(`workerd::durable-object-${object}::survives_restart`, async () => {
      const r = await get(mf, `/read?object=${object}&name=persist`);
      if (!written[object]) throw new Error("nothing was written");
      if (JSON.stringify(r.entries) !== JSON.stringify(written[object])) throw new Error(`after the restart: ${JSON.stringify(r.entries).slice(0, 300)}`);
      if (!r.same) throw new Error("getMany disagrees with list");
    });
  }
  console.log(`workerd: start ${t1 - t0} ms, suites ${t2 - t1} ms, restart+read ${Date.now() - t2} ms`);
} catch (err) {
  bad("workerd::miniflare", err.stack);
} finally {
  if (mf) await mf.dispose();
  rmSync(persist, { recursive: true, force: true });
}
console.log(`workerd: ${t.passed} passed; ${t.failed} failed`);
process.exit(t.failed ? 1 : 0);
