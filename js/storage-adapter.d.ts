// The storage adapter contract of nostr-outbox's key-value store (src/store/kv): what
// nostr-outbox/memory-storage, /durable-object, /deno-kv and /sqlite return, and what a
// storage adapter of one's own must implement. Types only (no module of its own at run
// time): import them with `import type`.

/** A key's value and version, as read. */
export interface StorageEntry {
  /** The value: JSON, or empty. */
  value: string;
  /** Opaque; changes on every write of the key. */
  version: string;
}

/** One key of a `list` answer. */
export interface StorageListEntry extends StorageEntry {
  key: string;
}

/** What one commit may hold; an omitted field means no limit. */
export interface StorageLimits {
  /** Puts and deletes per commit. */
  maxMutations?: number;
  /** Checks per commit. */
  maxChecks?: number;
  /** UTF-8 bytes of one value. */
  maxValueBytes?: number;
  /** UTF-8 bytes of one commit: every put's key and value, every delete's key. */
  maxCommitBytes?: number;
  /** UTF-8 bytes of the keys one commit puts and deletes. */
  maxKeyBytes?: number;
  /** UTF-8 bytes of one key, read or written (Deno KV: 2 KB). */
  maxKeyLength?: number;
}

/** A range of keys: `start <= key < end`, at most `limit`, ascending or (`reverse`) descending. */
export interface StorageRange {
  start: string;
  end: string;
  limit: number;
  reverse: boolean;
}

/** One atomic compare-and-set commit. A key is never both put and deleted by one commit. */
export interface StorageCommit {
  /** Each key must still have `version`, or still be absent when `version` is null. */
  checks: Array<{ key: string; version: string | null }>;
  puts: Array<{ key: string; value: string }>;
  deletes: string[];
}

/** The storage adapter contract. Keys are ASCII strings compared as strings. */
export interface StorageAdapter {
  /** What one commit may hold; an omitted field means no limit. */
  readonly limits?: StorageLimits;
  /**
   * True when no other live context can reach this storage while this one runs (a Durable
   * Object's). The outbox's flusher is then the only live one, as the Web Lock holder is in
   * a browser: at each flush it takes over the leases of other owners (a killed incarnation's)
   * at once, keeping their attempt numbers, instead of waiting until they expire. Never set
   * it on storage two live processes share (an SQLite file, Deno KV): their flushers would
   * take each other's records.
   */
  readonly exclusive?: boolean;
  /** For each key (same order): its value and version, or null when absent. */
  getMany(keys: string[]): Promise<Array<StorageEntry | null>>;
  /** The keys k with start <= k < end, ascending; with reverse, descending (the `limit` keys nearest `end`). At most `limit`. */
  list(range: StorageRange): Promise<StorageListEntry[]>;
  /** Atomically: if every check holds, apply every put and delete and resolve true; otherwise
   *  write nothing and resolve false. Rejects only when the backend itself fails (then nothing
   *  was written either). */
  commit(commit: StorageCommit): Promise<boolean>;
}
