//! The platform: what the wasm side needs of the JavaScript runtime, written once and
//! used by every other wasm module (the WebSocket transport, the IndexedDB and adapter
//! stores, the JavaScript API): the clock, timers and sleep ([`timer`]), randomness
//! ([`random`]), Web Locks, `navigator.storage` ([`storage`]), NIP-13 mining in a
//! worker ([`pow`]) and the description of a thrown JavaScript value ([`thrown`]).
//! Everything works without a DOM (windows, workers, service workers, edge runtimes),
//! and nothing stands in for a missing piece: a clock that cannot be read is `None`, a
//! timer that cannot be set is counted.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

pub(crate) mod pow;
pub(crate) mod random;
pub mod storage;
pub(crate) mod thrown;
pub(crate) mod timer;

pub(crate) use random::{random_u32, RandomWords};
pub(crate) use thrown::{describe, thrown};
pub(crate) use timer::{failures as timer_failures, Sleep, Timer};

#[wasm_bindgen(module = "/src/js/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = clock)]
    fn glue_clock() -> f64;
    /// Whether `setTimeout` and `clearTimeout` exist.
    #[wasm_bindgen(js_name = hasTimers)]
    pub(crate) fn has_timers() -> bool;
    /// Takes the Web Lock `name` if it is free (`navigator.locks`, `ifAvailable`):
    /// resolves with a release function, `null` when another context holds it, or
    /// `undefined` where there are no Web Locks.
    #[wasm_bindgen(js_name = tryLock)]
    pub(crate) fn try_lock(name: &str) -> Promise;
}

/// The current time in unix milliseconds (`Date.now()`); `None` where it cannot be read
/// (`Date.now` missing or throwing, or not a finite number of milliseconds since 1970).
/// The API layer and the flusher read this one: a call without a clock fails.
pub(crate) fn clock() -> Option<u64> {
    let now = glue_clock();
    (now >= 0.0).then_some(now as u64)
}

/// `Date.now()` as it is, for the transport's timing of circuits, pauses and NIP-42
/// `created_at` (a flush run has checked [`clock`] before the transport is used).
pub(crate) fn now_ms() -> f64 {
    js_sys::Date::now()
}
