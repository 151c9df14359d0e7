import type { ListOptions } from "./nostr_outbox.js";
import type { OutboxSnapshot, OutboxSource } from "./store.js";

export type { OutboxSnapshot, OutboxSource, OutboxStore } from "./store.js";
export { createOutboxStore } from "./store.js";

/** A Svelte readable store (the store contract; no import of Svelte's types). */
export interface OutboxReadable {
  /** Calls `run` at once with the current snapshot, then after each change; returns the unsubscriber. */
  subscribe(run: (value: OutboxSnapshot) => void, invalidate?: () => void): () => void;
  /** Reads the outbox now (e.g. after `purge`, which fires no event). */
  refresh(): Promise<void>;
  /** The query read. */
  readonly query: Readonly<ListOptions>;
}

/** The outbox's counts and `list(query)`'s records as a store: `$store` in a component, `get`, `derived`. */
export function outboxStore(outbox: OutboxSource, query?: ListOptions | null): OutboxReadable;
