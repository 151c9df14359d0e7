//! Native tests of the store (`nostr_outbox::store`): the conformance suite on the
//! key-value store over memory and over an adapter-shaped backend, its key layout and
//! migrations, the claim order's properties against a reference store, and the records
//! of storage format 1 read back.

#[cfg(not(target_arch = "wasm32"))]
#[path = "../support/proptest_config.rs"]
mod proptest_config;

#[cfg(not(target_arch = "wasm32"))]
mod reference_store;
#[cfg(not(target_arch = "wasm32"))]
#[path = "../v1_support/mod.rs"]
mod v1_support;

mod claim_order_props;
#[cfg(not(target_arch = "wasm32"))]
mod group_props;
mod kv;
mod memory;
mod v1_fixture;
