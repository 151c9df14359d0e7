// nostr-outbox/store: a store UI frameworks subscribe to, on the outbox's public API only
// (`status()`, `list(query)` and `change` events, which come from other tabs and workers
// too). `createOutboxStore(outbox, query)` gives `{ subscribe(listener) → unsubscribe,
// getSnapshot() }`, the contract of React's `useSyncExternalStore`; nostr-outbox/react and
// nostr-outbox/svelte wrap it. Imports nothing: it works with the browser and the edge build.
//
// The snapshot is `{ status, records, loading, error }`: `status()`'s counts (of the query's
// lane) and `list(query)`'s records, read side by side (two reads, not one snapshot of the
// database: when a commit lands between them, the counts and the records may differ by it
// until the read that commit's `change` event causes, which follows at once). It is read again when a `change` fires (the changes of
// one task make one read; a read never overlaps another: changes during a read make one more
// after it), only while someone is subscribed. getSnapshot() returns the same object until
// the data changed: records are compared by id and revision, counts one by one; a record
// that did not change keeps its object, so do the counts and the records array when theirs
// did not. `purge` fires no event: call `refresh()` after it.

const COUNTS = ["draft", "pending", "leased", "retryable", "delivering", "satisfied", "exhausted", "cancelled", "superseded", "corrupt", "total"];

const sameStatus = (a, b) => a !== null && b !== null && COUNTS.every((k) => a[k] === b[k]);

/** The query's own copy: the four keys `list` reads, nothing else (the lane also scopes the counts). */
function readQuery(query) {
  const q = {};
  if (query == null) return q;
  if (typeof query !== "object") throw new TypeError("createOutboxStore: query must be an object ({ stage?, limit?, after?, lane? })");
  for (const k of ["stage", "limit", "after", "lane"]) if (query[k] !== undefined && query[k] !== null) q[k] = query[k];
  return q;
}

/** A key that is the same for two queries `list` reads the same way (nostr-outbox/react memoizes on it). */
export function queryKey(query) {
  const q = readQuery(query);
  return JSON.stringify([q.stage ?? null, q.limit ?? null, q.after ?? null, q.lane ?? null]);
}

export function createOutboxStore(outbox, query) {
  if (!outbox || typeof outbox.list !== "function" || typeof outbox.addEventListener !== "function") {
    throw new TypeError("createOutboxStore: the first argument must be an Outbox");
  }
  const q = readQuery(query);
  const statusQuery = q.lane === undefined ? {} : { lane: q.lane };
  const initial = Object.freeze({ status: null, records: Object.freeze([]), loading: true, error: null });
  let snapshot = initial;
  const entries = new Set(); // one per subscribe call, so the same function may subscribe twice
  let dirty = false;
  let running = null; // the read loop's promise while it runs

  // A listener that throws does not stop the others or the store: its error is reported
  // as uncaught, in a task of its own.
  const notify = () => {
    for (const entry of [...entries]) {
      if (!entries.has(entry)) continue;
      try {
        entry.listener(snapshot);
      } catch (error) {
        setTimeout(() => {
          throw error;
        });
      }
    }
  };

  function update(status, list) {
    const old = snapshot;
    const byId = new Map(old.records.map((r) => [r.id, r]));
    let same = list.length === old.records.length;
    const records = list.map((r, i) => {
      const prev = byId.get(r.id);
      const keep = prev !== undefined && prev.revision === r.revision ? prev : r;
      if (keep !== old.records[i]) same = false;
      return keep;
    });
    const nextStatus = sameStatus(old.status, status) ? old.status : Object.freeze({ ...status });
    if (same && nextStatus === old.status && !old.loading && old.error === null) return false;
    snapshot = Object.freeze({
      status: nextStatus,
      records: same ? old.records : Object.freeze(records),
      loading: false,
      error: null,
    });
    return true;
  }

  async function loop() {
    // One microtask first: the other `change` events of this task join this read.
    await Promise.resolve();
    while (dirty) {
      dirty = false;
      let changed;
      try {
        const [status, list] = await Promise.all([outbox.status(statusQuery), outbox.list(q)]);
        changed = update(status, list);
      } catch (error) {
        changed = snapshot.error !== error || snapshot.loading;
        if (changed) snapshot = Object.freeze({ ...snapshot, loading: false, error });
      }
      if (changed) notify();
    }
    running = null;
  }

  function refresh() {
    dirty = true;
    if (!running) running = loop();
    return running;
  }

  const onChange = (e) => {
    if (q.lane !== undefined && e?.detail?.lane !== undefined && e.detail.lane !== q.lane) return;
    refresh();
  };

  return {
    /**
     * Calls `listener(snapshot)` after each change of the snapshot, until the returned
     * function is called. The first subscriber starts listening to the outbox (and reads it);
     * the last one to leave stops it.
     */
    subscribe(listener) {
      if (typeof listener !== "function") throw new TypeError("subscribe: the listener must be a function");
      const entry = { listener };
      entries.add(entry);
      if (entries.size === 1) {
        outbox.addEventListener("change", onChange);
        refresh(); // what changed while nobody listened
      }
      return () => {
        if (!entries.delete(entry)) return;
        if (entries.size === 0) outbox.removeEventListener("change", onChange);
      };
    },
    /** The current snapshot: the same object until the data changes. */
    getSnapshot: () => snapshot,
    /** The snapshot before the first read (React's `getServerSnapshot`: server rendering, hydration). */
    getServerSnapshot: () => initial,
    /** Reads the outbox now (after `purge`, which fires no event); resolves when the snapshot is current. */
    refresh,
    /** The query this store reads (`list`'s keys; `lane` also scopes the counts). */
    query: Object.freeze({ ...q }),
  };
}
