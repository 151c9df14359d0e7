// The contract suite in Bun: js/sqlite.js on bun:sqlite (a temp file), and
// js/memory-storage.js. Run with `bun run bun.mjs`.
import { runContract, tally } from "./contract.mjs";
import { sqliteStorage } from "../../js/sqlite.js";
import { memoryStorage } from "../../js/memory-storage.js";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const print = (line) => console.log(line);
const dir = mkdtempSync(join(tmpdir(), "nostr-outbox-edge-bun-"));
const t = tally(print);
const { add, check } = t;
try {
  const path = join(dir, "outbox.db");
  const db = new Database(path, { create: true });
  add(await runContract((space) => sqliteStorage(db, { table: `s_${space}` }), print, { name: "bun::bun-sqlite" }));

  await check("bun::bun-sqlite::survives_reopen", async () => {
    const a = sqliteStorage(db, { table: "reopen" });
    if (!(await a.commit({ checks: [], puts: [{ key: "k", value: '{"x":"é"}' }], deletes: [] }))) throw new Error("commit");
    const [before] = await a.getMany(["k"]);
    db.close();
    const again = new Database(path);
    const b = sqliteStorage(again, { table: "reopen" });
    const [after] = await b.getMany(["k"]);
    if (JSON.stringify(after) !== JSON.stringify(before)) throw new Error(`${JSON.stringify(after)} != ${JSON.stringify(before)}`);
    // The version counter survives too: the next write gets a version never seen.
    await b.commit({ checks: [{ key: "k", version: before.version }], puts: [{ key: "k", value: "" }], deletes: [] });
    const [next] = await b.getMany(["k"]);
    if (Number(next.version) <= Number(before.version)) throw new Error(`version ${next.version} after ${before.version}`);
    again.close();
  });

  await check("bun::bun-sqlite::two_connections", async () => {
    // Two connections to one file (two workers): a commit checks what the other wrote.
    const d1 = new Database(path);
    const d2 = new Database(path);
    const a = sqliteStorage(d1, { table: "shared" });
    const b = sqliteStorage(d2, { table: "shared" });
    if (!(await a.commit({ checks: [{ key: "k", version: null }], puts: [{ key: "k", value: "a" }], deletes: [] }))) throw new Error("a");
    if (await b.commit({ checks: [{ key: "k", version: null }], puts: [{ key: "k", value: "b" }], deletes: [] })) throw new Error("b's check of absence held");
    const [got] = await b.getMany(["k"]);
    if (got.value !== "a") throw new Error(got.value);
    d1.close();
    d2.close();
  });

  await check("bun::bun-sqlite::error_rolls_back", async () => {
    const d = new Database(path);
    const a = sqliteStorage(d, { table: "rollback" });
    let threw = false;
    try {
      await a.commit({ checks: [], puts: [{ key: "ok", value: "1" }, { key: "bad", value: 42 }], deletes: [] });
    } catch {
      threw = true;
    }
    if (!threw) throw new Error("a non-string value was accepted");
    // A failure inside the transaction (the table dropped under it) rolls back.
    d.exec(`CREATE TRIGGER boom BEFORE DELETE ON "rollback" BEGIN SELECT RAISE(ABORT, 'boom'); END`);
    await a.commit({ checks: [], puts: [{ key: "x", value: "1" }], deletes: [] });
    let rejected = false;
    try {
      await a.commit({ checks: [], puts: [{ key: "y", value: "1" }], deletes: ["x"] });
    } catch {
      rejected = true;
    }
    if (!rejected) throw new Error("a failing DELETE did not reject");
    const got = await a.getMany(["x", "y", "ok"]);
    if (JSON.stringify(got.map((e) => e && e.value)) !== '["1",null,null]') throw new Error(JSON.stringify(got));
    // And the connection is usable afterwards (no transaction left open).
    if (!(await a.commit({ checks: [], puts: [{ key: "z", value: "1" }], deletes: [] }))) throw new Error("after");
    d.close();
  });

  const map = new Map();
  add(await runContract((space) => memoryStorage({ map, prefix: `${space}/` }), print, { name: "bun::memory" }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`bun: ${t.passed} passed; ${t.failed} failed`);
process.exit(t.failed ? 1 : 0);
