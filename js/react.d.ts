import type { ListOptions } from "./nostr_outbox.js";
import type { OutboxSnapshot, OutboxSource, OutboxStore } from "./store.js";

export type { OutboxSnapshot, OutboxSource, OutboxStore } from "./store.js";
export { createOutboxStore } from "./store.js";

/**
 * The outbox's counts and `list(query)`'s records, through `useSyncExternalStore`: the
 * component renders again when they change (in this tab or another). A query object with the
 * same keys as the last render's is the same query.
 */
export function useOutbox(outbox: OutboxSource, query?: ListOptions | null): OutboxSnapshot;

/** The snapshot of a store made with `createOutboxStore` (one store shared by many components). */
export function useOutboxStore(store: OutboxStore): OutboxSnapshot;
