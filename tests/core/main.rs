//! Native tests of the pure core (`nostr_outbox::core`): the state machine case by case,
//! its properties (proptest), the Nostr rules' properties, and the lists the JavaScript
//! API and the docs must agree with (error codes, option keys).

#[cfg(not(target_arch = "wasm32"))]
#[path = "../support/proptest_config.rs"]
mod proptest_config;

mod api_lists;
#[cfg(not(target_arch = "wasm32"))]
mod group_props;
mod machine;
mod props;
#[cfg(not(target_arch = "wasm32"))]
mod route_props;
mod semantics_props;
