//! The WebSocket transport inside a dedicated worker (no `window`): publish, timeout
//! timers, NIP-42 with a Rust signer. Relays as for `transport_ws.rs`; run
//! through `scripts/with-relays.sh`.
#![cfg(target_arch = "wasm32")]

use std::rc::Rc;

use nostr_outbox::core::Outcome;
use nostr_outbox::transport::Transport;
use wasm_bindgen_test::*;

#[path = "ws_support/mod.rs"]
mod ws_support;
use ws_support::*;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

#[wasm_bindgen_test]
async fn worker_has_no_window() {
    let global = js_sys::global();
    let window = js_sys::Reflect::get(&global, &"window".into()).unwrap();
    assert!(window.is_undefined(), "this test must run in a worker");
}

#[wasm_bindgen_test]
async fn worker_publish_is_accepted_and_stored() {
    let t = transport(|_| {});
    let ev = note("worker accepted");
    let r = t.publish(&relay(), &ev).await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    assert_eq!(fetch_by_id(&relay(), &ev.id).await.len(), 1);
}

#[wasm_bindgen_test]
async fn worker_timers_time_out_a_silent_relay() {
    let t = transport(|c| c.publish_timeout_ms = 200);
    let r = t
        .publish(&fault("/silent?t=worker"), &note("worker silent"))
        .await;
    assert_eq!(r.outcome, Outcome::Timeout, "{r:?}");
}

#[wasm_bindgen_test]
async fn worker_authenticates_with_a_rust_signer() {
    let t = transport(|_| {});
    t.set_signer(Some(Rc::new(TestSigner)));
    let url = fault("/auth?t=worker");
    let ev = note("worker auth");
    let r = t.publish(&url, &ev).await;
    assert_eq!(r.outcome, Outcome::Accepted, "{r:?}");
    assert_eq!(fetch_by_id(&url, &ev.id).await.len(), 1);
}
