//! Persistence of outbox records: the `Store` trait, a memory store and, on wasm32,
//! the IndexedDB store.
