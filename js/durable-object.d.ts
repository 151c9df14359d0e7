import type { StorageAdapter, StorageLimits } from "./storage-adapter.d.ts";
export type { StorageAdapter, StorageEntry, StorageLimits, StorageListEntry, StorageRange, StorageCommit } from "./storage-adapter.d.ts";

/** The part of a Durable Object's `ctx.storage` the adapter uses (structural, so no
 *  @cloudflare/workers-types is needed). */
export interface DurableObjectStorageLike {
  /** Present on both kinds of object; only a SQLite-backed one runs a query (the adapter
   *  runs `SELECT 1` once to tell which kind it has, and declares a KV-backed one's
   *  2 KiB keys). */
  sql?: { exec(query: string, ...bindings: unknown[]): unknown };
  get(keys: string[]): Promise<Map<string, unknown>>;
  list(options: { start?: string; end?: string; limit?: number; reverse?: boolean }): Promise<Map<string, unknown>>;
  transaction<T>(closure: (txn: DurableObjectTransactionLike) => Promise<T>): Promise<T>;
}

/** The part of a Durable Object storage transaction the adapter uses. */
export interface DurableObjectTransactionLike {
  get(keys: string[]): Promise<Map<string, unknown>>;
  put(entries: Record<string, unknown>): Promise<void>;
  delete(keys: string[]): Promise<number>;
}

/** The alarm part of `ctx.storage`. */
export interface DurableObjectAlarmLike {
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTime: number | Date): Promise<void>;
}

export interface DurableObjectStorageOptions {
  /** Prepended to every key; default "nostr-outbox/". */
  prefix?: string;
  /**
   * Default true: no other live context reaches this storage (one instance of an object
   * runs at a time), so the flusher takes over at once what a killed incarnation left
   * leased. Open one outbox per object and prefix.
   */
  exclusive?: boolean;
}

/** What the adapter declares: 130 048 UTF-8 bytes per value (128 KiB stored, framing included);
 *  on a KV-backed object also `maxKeyLength`: {@link KV_BACKED_KEY_BYTES} less the prefix. */
export const DURABLE_OBJECT_LIMITS: Readonly<StorageLimits>;

/** The longest key of a KV-backed (legacy) Durable Object: 2 048 UTF-8 bytes. */
export const KV_BACKED_KEY_BYTES: number;

/** A storage adapter on a Durable Object's `ctx.storage` (KV- or SQLite-backed). */
export function durableObjectStorage(storage: DurableObjectStorageLike, options?: DurableObjectStorageOptions): StorageAdapter;

/**
 * Sets the object's alarm to `dueAt` (ms since the epoch) when it has none or `dueAt` is
 * earlier; `null` changes nothing. In `alarm()`: `const r = await outbox.flush();
 * await syncAlarm(this.ctx.storage, r.nextDueAt);`.
 */
export function syncAlarm(storage: DurableObjectAlarmLike, dueAt: number | null | undefined): Promise<void>;
