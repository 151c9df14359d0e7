//! # nostr-outbox
//!
//! A durable, offline-first outbox for Nostr events. An application enqueues a signed
//! event together with its target relays and a satisfaction policy; the record is
//! persisted at once; a flusher publishes it when relays are reachable, keeps typed
//! evidence of every relay's answer, retries what can succeed later and stops on what
//! never will.
//!
//! Layers (data flows one way, top to bottom):
//! - [`nostr`]: NIP-01 events, relay URLs and relay messages (pure).
//! - [`core`]: the outbox state machine (pure: no I/O, no clock, no randomness).
//! - [`store`]: the [`store::Store`] trait, a memory store and (wasm only) IndexedDB.
//! - [`transport`]: the [`transport::Transport`] trait and (wasm only) WebSockets.
//! - [`flush`]: the flusher that drives claim → publish → record → release.
//! - `js` (wasm only): the wasm-bindgen API, the only layer that knows JavaScript.
#![warn(missing_docs)]

pub mod core;
pub mod flush;
pub mod nostr;
pub mod store;
pub mod transport;

#[cfg(target_arch = "wasm32")]
pub mod js;

/// The crate version, as published.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
