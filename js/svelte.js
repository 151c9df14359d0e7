// nostr-outbox/svelte: `outboxStore(outbox, query)`, a Svelte readable store (the store
// contract: `subscribe(run)` calls `run` at once with the current value, then on each
// change, and returns the unsubscriber) of the outbox's counts and a query's records.
// `$store` in a Svelte 5 (or 3, 4) component, `get`, `derived`. Imports nothing of Svelte.
import { createOutboxStore } from "./store.js";

export function outboxStore(outbox, query) {
  const store = createOutboxStore(outbox, query);
  return {
    subscribe(run, invalidate) {
      if (typeof run !== "function") throw new TypeError("subscribe: run must be a function");
      // Svelte's second argument marks derived stores stale before `run`.
      const unsubscribe = store.subscribe((value) => {
        if (typeof invalidate === "function") invalidate();
        run(value);
      });
      run(store.getSnapshot());
      return unsubscribe;
    },
    refresh: store.refresh,
    query: store.query,
  };
}

export { createOutboxStore };
