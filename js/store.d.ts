import type { ListOptions, Outbox, OutboxRecord, OutboxStatus } from "./nostr_outbox.js";

/** What a store reads of an outbox (an `Outbox` of the browser or the edge build). */
export type OutboxSource = Pick<Outbox, "list" | "status" | "addEventListener" | "removeEventListener">;

/**
 * What a UI shows: the same object until the data changes (then a new one; records and
 * counts that did not change keep their objects). Frozen: do not mutate.
 */
export interface OutboxSnapshot {
  /** `status({ lane })` of the query's lane (every lane without one); `null` before the first read. */
  readonly status: Readonly<OutboxStatus> | null;
  /** `list(query)`: the query's page of records, in creation order. */
  readonly records: readonly OutboxRecord[];
  /** `true` until the first read finished. */
  readonly loading: boolean;
  /** Why the last read failed (an `OutboxError`, e.g. `closed`); `null` after a read that worked. */
  readonly error: unknown;
}

/** The contract of React's `useSyncExternalStore` (`subscribe`, `getSnapshot`, `getServerSnapshot`). */
export interface OutboxStore {
  /**
   * Calls `listener` with the new snapshot after each change of it (not at once), until the
   * returned function is called. While anyone is subscribed the store listens to `change`
   * events (this tab's and other contexts') and reads the outbox again after them.
   */
  subscribe(listener: (snapshot: OutboxSnapshot) => void): () => void;
  /** The current snapshot: the same object until the data changes. */
  getSnapshot(): OutboxSnapshot;
  /** The snapshot before the first read (`loading: true`), for server rendering and hydration. */
  getServerSnapshot(): OutboxSnapshot;
  /** Reads the outbox now (e.g. after `purge`, which fires no event); resolves once the snapshot is current. */
  refresh(): Promise<void>;
  /** The query read (`list`'s keys; its `lane` also scopes the counts). */
  readonly query: Readonly<ListOptions>;
}

/** A store of `outbox`'s counts and `list(query)`'s records (a new store per call). */
export function createOutboxStore(outbox: OutboxSource, query?: ListOptions | null): OutboxStore;

/** A string equal for two queries that `list` reads the same way. */
export function queryKey(query?: ListOptions | null): string;
