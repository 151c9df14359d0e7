// `tsc -p tests/edge`: the adapters' declarations compile with lib ES2023 alone (no DOM, no
// @cloudflare/workers-types, no Deno types), and each adapter is a StorageAdapter.
import { memoryStorage } from "../../js/memory-storage.js";
import { durableObjectStorage, syncAlarm, DURABLE_OBJECT_LIMITS } from "../../js/durable-object.js";
import type { DurableObjectStorageLike, DurableObjectAlarmLike } from "../../js/durable-object.js";
import { denoKvStorage, denoKvLimits } from "../../js/deno-kv.js";
import type { DenoKvLike } from "../../js/deno-kv.js";
import { sqliteStorage } from "../../js/sqlite.js";
import type { SqliteDatabaseLike } from "../../js/sqlite.js";
import type { StorageAdapter, StorageEntry, StorageLimits } from "../../js/storage-adapter.d.ts";

declare const doStorage: DurableObjectStorageLike & DurableObjectAlarmLike;
declare const kv: DenoKvLike;
declare const db: SqliteDatabaseLike;

const adapters: StorageAdapter[] = [
  memoryStorage(),
  memoryStorage({ map: new Map(), prefix: "a/", limits: { maxMutations: 10 } }),
  durableObjectStorage(doStorage, { prefix: "outbox/" }),
  denoKvStorage(kv),
  sqliteStorage(db, { table: "outbox", busyTimeout: 1000 }),
];
const limits: StorageLimits | undefined = adapters[0]?.limits;
const deno: Required<StorageLimits> = denoKvLimits("p");
const valueBytes: number | undefined = DURABLE_OBJECT_LIMITS.maxValueBytes;

export async function use(a: StorageAdapter): Promise<void> {
  const got: Array<StorageEntry | null> = await a.getMany(["k"]);
  const listed = await a.list({ start: "a", end: "b", limit: 10, reverse: false });
  const key: string = listed[0]?.key ?? "";
  const ok: boolean = await a.commit({ checks: [{ key, version: got[0]?.version ?? null }], puts: [{ key, value: "" }], deletes: [] });
  await syncAlarm(doStorage, ok ? Date.now() : null);
  // @ts-expect-error a value must be a string
  await a.commit({ checks: [], puts: [{ key, value: 1 }], deletes: [] });
  // @ts-expect-error no table option on the memory adapter
  memoryStorage({ table: "x" });
  void limits;
  void deno;
  void valueBytes;
}
