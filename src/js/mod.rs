//! The wasm-bindgen API: the only layer that knows about JavaScript. It converts
//! arguments and options into the domain types of [`crate::nostr`] and
//! [`crate::core`] (serde derives read by serde-wasm-bindgen), calls the
//! [`crate::store`] and the flusher runtime, and converts records, counts and errors
//! back to plain JavaScript objects (serde-wasm-bindgen again). It reads the clock
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
mod types;
pub mod view;

pub use error::{ApiError, OutboxError};
pub use outbox::Outbox;

/// The library version, for JavaScript.
#[wasm_bindgen]
pub fn version() -> String {
    crate::VERSION.to_string()
}
