import type { StorageAdapter, StorageLimits } from "./storage-adapter.d.ts";
export type { StorageAdapter, StorageEntry, StorageLimits, StorageListEntry, StorageRange, StorageCommit } from "./storage-adapter.d.ts";

/** A Deno KV key (the parts this adapter uses: strings). */
type DenoKvKey = readonly unknown[];

/** The part of `Deno.Kv` the adapter uses (structural, so no Deno types are needed). */
export interface DenoKvLike {
  getMany(keys: DenoKvKey[]): Promise<Array<{ key: DenoKvKey; value: unknown; versionstamp: string | null }>>;
  list(
    selector: { start: DenoKvKey; end: DenoKvKey },
    options?: { limit?: number; reverse?: boolean; batchSize?: number },
  ): AsyncIterable<{ key: DenoKvKey; value: unknown; versionstamp: string }>;
  atomic(): DenoKvAtomicLike;
}

/** The part of `Deno.AtomicOperation` the adapter uses. */
export interface DenoKvAtomicLike {
  check(...checks: Array<{ key: DenoKvKey; versionstamp: string | null }>): DenoKvAtomicLike;
  set(key: DenoKvKey, value: unknown): DenoKvAtomicLike;
  delete(key: DenoKvKey): DenoKvAtomicLike;
  commit(): Promise<{ ok: boolean }>;
}

export interface DenoKvStorageOptions {
  /** The first key part of every key; default "nostr-outbox/". */
  prefix?: string;
}

/** The limits the adapter declares for `prefix` (Deno KV's: 80 KiB of keys per commit is `maxKeyBytes`, 2 KiB per key `maxKeyLength`). */
export function denoKvLimits(prefix: string): Required<StorageLimits>;

/** A storage adapter on a `Deno.Kv` (`await Deno.openKv(path)`, `--unstable-kv` outside Deno Deploy). */
export function denoKvStorage(kv: DenoKvLike, options?: DenoKvStorageOptions): StorageAdapter;
