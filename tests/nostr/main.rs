//! Tests of the Nostr layer (`nostr_outbox::nostr`): event shape and ids, relay URLs and
//! messages, and the cross-implementation vectors, natively and in the browser (wasm);
//! the parser's and the batch verifier's properties (proptest), natively.

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[cfg(not(target_arch = "wasm32"))]
#[path = "../sig_support/mod.rs"]
mod sig_support;

mod batch_props;
mod event;
mod parse_props;
mod relay;
mod vectors;
