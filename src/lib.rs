//! # nostr-outbox
//!
//! A durable, offline-first outbox for Nostr events. An application enqueues a signed
//! event together with its target relays and a satisfaction policy; the record is
//! persisted at once; a flusher publishes it when relays are reachable, keeps typed
//! evidence of every relay's answer, retries what can succeed later and stops on what
//! never will.
//!
//! Layers, each using only the layers above it (`use crate::…`):
//! - `platform` (wasm only): the JavaScript runtime's clock, timers, randomness, Web
//!   Locks, `navigator.storage` and the description of thrown values; uses no other
//!   layer, and every wasm module below uses it.
//! - [`core`]: the outbox state machine and the stable error codes (pure: no I/O, no
//!   clock, no randomness); it uses no other layer.
//! - [`nostr`]: NIP-01 events, relay URLs and relay messages (pure); uses `core` (the
//!   event envelope, outcomes, error codes).
//! - [`store`]: the [`store::Store`] trait, written once over a key-value backend:
//!   memory, the storage adapters and (wasm, feature `indexeddb`) IndexedDB; uses
//!   `core`, and `nostr` in IndexedDB (the move of old rows).
//! - [`transport`]: the [`transport::Transport`] trait and (wasm only) WebSockets; uses
//!   `core` and `nostr`.
//! - [`flush`]: the flusher that drives claim → publish → record → release; uses
//!   `core`, `store` and `transport`.
//! - [`outbox`]: the service's rules on what the app is told, pure and
//!   platform-neutral: which event each enqueue answer and each flusher report
//!   dispatches; uses `core` and `flush` (its report type).
//! - `js` (wasm only): the wasm-bindgen API, the only layer that knows JavaScript; uses
//!   all of them.
#![warn(missing_docs)]

pub mod core;
pub mod flush;
pub mod nostr;
pub mod outbox;
pub mod store;
pub mod transport;

#[cfg(target_arch = "wasm32")]
pub mod platform;

#[cfg(target_arch = "wasm32")]
pub mod js;

/// The allocator of the `.wasm` (single-threaded WebAssembly): talc, which grows the
/// module's memory as it needs, instead of the standard library's dlmalloc (smaller
/// code: Cargo.toml gives the figure).
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// The crate version, as published.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
