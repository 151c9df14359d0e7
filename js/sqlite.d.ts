import type { StorageAdapter } from "./storage-adapter.d.ts";
export type { StorageAdapter, StorageEntry, StorageLimits, StorageListEntry, StorageRange, StorageCommit } from "./storage-adapter.d.ts";

/** A prepared statement, as both drivers have it (positional `?` parameters). */
export interface SqliteStatementLike {
  all(...params: Array<string | number>): unknown[];
  run(...params: Array<string | number>): unknown;
}

/** The part of `bun:sqlite`'s `Database` and `node:sqlite`'s `DatabaseSync` the adapter uses. */
export interface SqliteDatabaseLike {
  prepare(sql: string): SqliteStatementLike;
  exec(sql: string): unknown;
}

export interface SqliteStorageOptions {
  /** The table (letters, digits and `_`); default "nostr_outbox". A second table `<table>_version` holds the version counter. */
  table?: string;
  /** `PRAGMA busy_timeout` set on the connection, in ms; default 5000. */
  busyTimeout?: number;
}

/** A storage adapter on a SQLite database (`bun:sqlite` or `node:sqlite`); no limits. */
export function sqliteStorage(db: SqliteDatabaseLike, options?: SqliteStorageOptions): StorageAdapter;
