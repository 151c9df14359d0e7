// nostr-outbox/react: `useOutbox(outbox, query)`, the outbox's counts and a query's records
// in a React component (React 18 or later, a peer: this imports `react` and nothing else).
// Through `useSyncExternalStore` over nostr-outbox/store: the component renders again when
// a record it shows or a count changes, in this tab or another, and not otherwise.
import { useMemo, useSyncExternalStore } from "react";
import { createOutboxStore, queryKey } from "./store.js";

/** Renders with the store's snapshot (a store made once, e.g. at module level, shared by components). */
export function useOutboxStore(store) {
  return useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
}

/**
 * `{ status, records, loading, error }` of `outbox` for `query` (`list`'s `{ stage, limit,
 * after, lane }`; a new object with the same keys each render is the same query).
 */
export function useOutbox(outbox, query) {
  const key = queryKey(query);
  // eslint-disable-next-line react-hooks/exhaustive-deps -- the key stands for the query
  const store = useMemo(() => createOutboxStore(outbox, query), [outbox, key]);
  return useOutboxStore(store);
}

export { createOutboxStore };
