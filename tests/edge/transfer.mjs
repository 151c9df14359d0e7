// Export and import on the edge build's durable adapters: tests/data/export_v1.ndjson, an
// export the browser build wrote from IndexedDB (tests/e2e/transfer.test.mjs writes it with
// WRITE_EXPORT_FIXTURE=1 and checks that IndexedDB reads it back the same), imported into
// Deno KV (Deno) or bun:sqlite (Bun), read back after the storage is reopened, exported
// byte for byte as the browser exported it (so an export of Deno KV imports into IndexedDB
// as the browser's own does); imported again as replays; a bad line writes nothing. An
// addressable event whose `d` tag needs a key longer than Deno KV holds: a typed refusal.
// The most notes one enqueueMany takes on Deno KV (100). And what the build before key
// layout 3 stored, moved when the storage is opened.
// Usage: deno run --unstable-kv --allow-read --allow-write --allow-env transfer.mjs
//        bun run transfer.mjs
import init, { Outbox } from "../../pkg/edge/index.js";
import { readFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const isDeno = typeof Deno !== "undefined";
const runtime = isDeno ? "deno" : "bun";
let passed = 0;
let failed = 0;
async function check(name, f) {
  try {
    await f();
    console.log(`test ${runtime}::transfer::${name} ... ok`);
    passed++;
  } catch (e) {
    console.log(`test ${runtime}::transfer::${name} ... FAILED`);
    console.log(`  ${e?.stack ?? e}`);
    failed++;
  }
}
const assert = (cond, what) => {
  if (!cond) throw new Error(what);
};

// The durable adapter of this runtime on `path`, and how to close it.
async function durable(path) {
  if (isDeno) {
    const { denoKvStorage } = await import("../../pkg/deno-kv.js");
    const kv = await Deno.openKv(path);
    return { adapter: denoKvStorage(kv), close: () => kv.close() };
  }
  const { sqliteStorage } = await import("../../pkg/sqlite.js");
  const { Database } = await import("bun:sqlite");
  const db = new Database(path, { create: true });
  return { adapter: sqliteStorage(db), close: () => db.close() };
}

const transport = { publish: async () => ({ ok: true, message: "" }) };
const open = (adapter) => Outbox.open({ storage: adapter, autoFlush: false, transport });
const text = (stream) => new Response(stream).text();

await init();
const fixture = await readFile(fileURLToPath(new URL("../data/export_v1.ndjson", import.meta.url)), "utf8");
const count = fixture.trimEnd().split("\n").length - 1;
const dir = await mkdtemp(join(tmpdir(), "nostr-outbox-transfer-"));
try {
  await check("an_indexeddb_export_imports_and_exports_the_same", async () => {
    const path = join(dir, "a.db");
    let storage = await durable(path);
    let outbox = await open(storage.adapter);
    const progress = [];
    outbox.addEventListener("progress", (e) => progress.push(e.detail.done));
    const result = await outbox.import(fixture);
    assert(result.total === count && result.created === count, `import: ${JSON.stringify(result)}`);
    assert(progress.at(-1) === count, `progress: ${progress}`);
    assert((await text(outbox.export())) === fixture, "the export differs from the file imported");
    await outbox.close();
    storage.close();
    storage = await durable(path);
    outbox = await open(storage.adapter);
    assert((await text(outbox.export())) === fixture, "after reopening, the export differs");
    const again = await outbox.import(new TextEncoder().encode(fixture));
    assert(again.replayed === count && again.created === 0, `import again: ${JSON.stringify(again)}`);
    await outbox.close();
    storage.close();
  });
  await check("a_bad_line_writes_nothing", async () => {
    const storage = await durable(join(dir, "b.db"));
    const outbox = await open(storage.adapter);
    const lines = fixture.trimEnd().split("\n");
    lines[lines.length - 1] = lines[lines.length - 1].replace('"attempts":', '"attempts":9');
    let error;
    try {
      await outbox.import(lines.join("\n"));
    } catch (e) {
      error = e;
    }
    assert(error?.code === "invalid_import" && error.details?.line === lines.length, `error: ${error?.code} ${error?.message}`);
    assert((await outbox.status()).total === 0, "a refused import wrote records");
    await outbox.close();
    storage.close();
  });
  // An addressable event's `d` tag makes its keys (Deno KV holds keys of 2 KB at most):
  // one too long for the storage is refused with a typed error, nothing written; a
  // storage without that limit stores it.
  await check("a_d_tag_longer_than_a_key_is_refused_typed_or_stored", async () => {
    const events = JSON.parse(await readFile(fileURLToPath(new URL("../data/long_d_tags.json", import.meta.url)), "utf8"));
    const storage = await durable(join(dir, "c.db"));
    const outbox = await open(storage.adapter);
    const seen = [];
    for (const event of events) {
      try {
        seen.push((await outbox.enqueue(event, ["wss://a.example"])).disposition);
      } catch (e) {
        seen.push(`${e.code}:${e.details?.field}`);
      }
    }
    const stored = (await outbox.status()).total;
    await outbox.close();
    storage.close();
    const expected = isDeno ? ["created", "created", "invalid_argument:event"] : ["created", "created", "created"];
    assert(JSON.stringify(seen) === JSON.stringify(expected), `d tags of 800, 1500, 60000 bytes: ${seen}`);
    assert(stored === (isDeno ? 2 : 3), `stored: ${stored}`);
  });
  // What the build before key layout 3 stored in this runtime's durable storage
  // (tests/data/kv_v2_entries.json: key layout 2, 11 records) moves to the current layout
  // when the edge build opens it: nothing is left in the old ranges, every record is
  // there, and the 6 that can be sent now are flushed.
  await check("a_key_layout_2_storage_is_moved_at_open", async () => {
    const entries = JSON.parse(await readFile(fileURLToPath(new URL("../data/kv_v2_entries.json", import.meta.url)), "utf8"));
    const storage = await durable(join(dir, "e.db"));
    const puts = entries.map(([key, value]) => ({ key, value }));
    assert(await storage.adapter.commit({ checks: [], puts, deletes: [] }), "the old entries written");
    const outbox = await open(storage.adapter);
    const old = [];
    for (const [start, end] of [["d/", "o/"], ["p/", "u/"]]) {
      old.push(...(await storage.adapter.list({ start, end, limit: 1000, reverse: false })));
    }
    const before = await outbox.status();
    const result = await outbox.flush();
    const after = await outbox.status();
    await outbox.close();
    storage.close();
    assert(old.length === 0, `keys of layout 2 left: ${old.map((e) => e.key)}`);
    assert(before.total === 11 && before.corrupt === 0, `status ${JSON.stringify(before)}`);
    assert(result.claimed === 6 && after.draft === 1, `flush ${JSON.stringify(result)} → ${JSON.stringify(after)}`);
  });
  // One enqueueMany is one atomic operation of the storage. Deno KV allows 100 checks per
  // atomic operation and the store checks each new record once: 100 notes (tests/data/
  // notes_101.json, signed by a fixed key) are enqueued in one call, 101 are refused,
  // typed, with nothing written. bun:sqlite has no such limit.
  await check("an_enqueue_many_of_100_notes_is_one_atomic_operation", async () => {
    const notes = JSON.parse(await readFile(fileURLToPath(new URL("../data/notes_101.json", import.meta.url)), "utf8"));
    const items = notes.map((event) => ({ event, relays: ["wss://a.example"] }));
    const storage = await durable(join(dir, "d.db"));
    const outbox = await open(storage.adapter);
    let refused = null;
    try {
      await outbox.enqueueMany(items);
    } catch (e) {
      refused = `${e.code}:${e.details?.field}`;
    }
    const afterAll = (await outbox.status()).total;
    if (isDeno) {
      assert(refused === "invalid_argument:plans", `101 notes: ${refused}`);
      assert(afterAll === 0, `nothing written: ${afterAll}`);
      const got = await outbox.enqueueMany(items.slice(0, 100));
      assert(got.length === 100 && got.every((r) => r.disposition === "created"), "100 notes created");
    } else {
      assert(refused === null && afterAll === 101, `101 notes: ${refused}, ${afterAll}`);
    }
    const stored = (await outbox.status()).total;
    await outbox.close();
    storage.close();
    assert(stored === (isDeno ? 100 : 101), `stored: ${stored}`);
  });
} finally {
  await rm(dir, { recursive: true, force: true });
}
console.log(`transfer: ${passed} passed; ${failed} failed`);
if (isDeno) Deno.exit(failed ? 1 : 0);
else process.exit(failed ? 1 : 0);
