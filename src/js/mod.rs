//! The wasm-bindgen API: the only layer that knows about JavaScript. It converts
//! arguments and options into the domain types of [`crate::nostr`] and
//! [`crate::core`] (options objects read key by key, `input`), calls the
//! [`crate::store`] and the flusher runtime, and converts records, counts and errors
//! back to plain JavaScript objects (their JSON through one `JSON.parse`, `view`). It reads the clock
//! (`Date.now()`) and randomness (`crypto.getRandomValues` through getrandom) for the
//! layers below, with no stand-in: `open` refuses with `unsupported` (no clock, no
//! `setTimeout`) or `no_random_source`, and so does a later call that needs one that
//! failed. It holds no delivery rule.
//!
//! - `outbox`: the `Outbox` class (open, enqueue, get, list, status, retry, cancel,
//!   purge, flush, auto-flush, events, close).
//! - `runtime`: the flusher loop, Web Lock election, triggers and timers.
//! - `sw`: `registerBackgroundSync` and `handleSync` for service workers.
//! - `error`: `OutboxError` (`error.js`) and the mapping of every Rust error code.
//! - `input` / `view`: JavaScript values in and out (serde structs); `types`: the
//!   TypeScript types.
//! - `transfer`: the export format's lines (`export` / `import`, `js/transfer.js`).
//! - `events`: the internal `EventTarget` and the cross-context `BroadcastChannel`.

use wasm_bindgen::prelude::*;

mod backend;
pub mod error;
mod events;
mod input;
#[cfg(feature = "adapter")]
pub mod kv;
pub mod outbox;
mod runtime;
pub mod sw;
mod sys;
mod transfer;
mod types;
pub mod view;

pub use error::{ApiError, OutboxError};
pub use outbox::Outbox;

/// The library version, for JavaScript.
#[wasm_bindgen]
pub fn version() -> String {
    crate::VERSION.to_string()
}

/// True when `event` (an event's JSON text) is a valid signed NIP-01 event: its fields,
/// its id (sha256 of its serialization) and its BIP-340 signature checked. The
/// relay-list resolver (`nostr-outbox/routes`) checks what index relays send with it.
#[wasm_bindgen(js_name = verifyEvent)]
pub fn verify_event(event: &str) -> bool {
    crate::nostr::verify_event_json(event)
}

/// The relay URL as the outbox stores it (a record's `targets[].relay`, its evidence):
/// surrounding whitespace trimmed, scheme and host lowercased, an IPv6 literal in its
/// compressed form, the default port and a path of exactly `/` dropped, the rest of the
/// path and the query kept byte for byte. Throws an `OutboxError` (`invalid_relay_url`,
/// the message says why) for a URL the outbox refuses: not `ws://` or `wss://`, userinfo,
/// a fragment, a bad host or port, a non-ASCII host (give it in punycode).
#[wasm_bindgen(js_name = normalizeRelayUrl, unchecked_return_type = "string")]
pub fn normalize_relay_url(url: &str) -> Result<JsValue, JsValue> {
    crate::nostr::RelayUrl::parse(url)
        .map(|u| JsValue::from_str(u.as_str()))
        .map_err(|e| ApiError::from(e).into_js())
}
