//! Runs the store conformance suite against the memory store.

use futures::executor::block_on;
use nostr_outbox::store::{conformance, MemoryStore};

#[test]
fn memory_store_passes_the_conformance_suite() {
    block_on(conformance::run_all(|| async { MemoryStore::new() }));
}
