import type { StorageAdapter, StorageLimits } from "./storage-adapter.d.ts";
export type { StorageAdapter, StorageEntry, StorageLimits, StorageListEntry, StorageRange, StorageCommit } from "./storage-adapter.d.ts";

export interface MemoryStorageOptions {
  /** The backing Map (several adapters may share one, separated by `prefix`); a new one by default. */
  map?: Map<string, { value: string; version: string }>;
  /** Prepended to every key; default "nostr-outbox/". */
  prefix?: string;
  /** Emulated limits: declared as the adapter's `limits`; a commit over them rejects. */
  limits?: StorageLimits;
}

/** A storage adapter over a Map: nothing survives the process. For tests and as the reference implementation. */
export function memoryStorage(options?: MemoryStorageOptions): StorageAdapter;
