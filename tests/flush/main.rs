//! Native tests of the flusher (`nostr_outbox::flush`) over the memory store and the
//! scripted transport: one tick, whole runs, the pipeline's rules, crashes mid-flush,
//! and its properties (proptest).

#[cfg(not(target_arch = "wasm32"))]
#[path = "../support/proptest_config.rs"]
mod proptest_config;

mod support;

mod crash;
mod drafts;
mod enqueue;
mod newer;
mod pipeline;
mod props;
mod readback;
mod routes;
mod tick;
