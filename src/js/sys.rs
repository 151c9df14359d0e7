//! Bindings to `glue.js`: the clock (`Date.now`), randomness
//! (`crypto.getRandomValues` through getrandom), the check that timers exist, Web
//! Locks, visibility, online state and event dispatch. Every call works without a
//! DOM. No business rule, and no stand-in: a clock, timer or random source that fails
//! is an `OutboxError` of the call that needed it.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use super::error::ApiError;

#[wasm_bindgen(module = "/src/js/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = eventFieldsJson, catch)]
    pub(crate) fn event_fields_json(event: &JsValue) -> Result<String, JsValue>;
    /// Runs `f`; returns `{ thrown }` if JavaScript code it reached threw (the Rust
    /// frames in between are abandoned: what they held leaks), else `undefined`.
    pub(crate) fn catching(f: &mut dyn FnMut()) -> JsValue;
    #[wasm_bindgen(js_name = isOnline)]
    pub(crate) fn is_online() -> bool;
    #[wasm_bindgen(js_name = pageDocument)]
    pub(crate) fn page_document() -> Option<web_sys::EventTarget>;
    #[wasm_bindgen(js_name = isVisible)]
    pub(crate) fn is_visible() -> bool;
    #[wasm_bindgen(js_name = tryLock)]
    pub(crate) fn try_lock(name: &str) -> Promise;
    #[wasm_bindgen(js_name = signerFunction)]
    pub(crate) fn signer_function(signer: &JsValue) -> Option<js_sys::Function>;
    #[wasm_bindgen(catch)]
    pub(crate) fn fire(
        target: &web_sys::EventTarget,
        kind: &str,
        detail: &JsValue,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(js_name = registerSync)]
    pub(crate) fn register_sync(registration: &JsValue, tag: &str) -> Promise;
    #[wasm_bindgen(js_name = ioBoundToRequest)]
    pub(crate) fn io_bound_to_request() -> bool;
    #[wasm_bindgen(js_name = clock)]
    fn glue_clock() -> f64;
    #[wasm_bindgen(js_name = hasTimers)]
    pub(crate) fn has_timers() -> bool;
    #[wasm_bindgen(js_name = hasWebSocket)]
    pub(crate) fn has_web_socket() -> bool;
    #[wasm_bindgen(js_name = hasIndexedDb)]
    pub(crate) fn has_indexed_db() -> bool;
    #[wasm_bindgen(js_name = openChannel)]
    pub(crate) fn open_channel(name: &str, local: &web_sys::EventTarget) -> Option<JsValue>;
    #[wasm_bindgen(js_name = postToChannel)]
    pub(crate) fn post_to_channel(joined: &JsValue, kind: &str, detail: &JsValue, change: bool);
    #[wasm_bindgen(js_name = closeChannel)]
    pub(crate) fn close_channel(joined: &JsValue);
}

/// The current time in unix milliseconds (`Date.now()`); `None` where it cannot be read
/// (`Date.now` missing or throwing, or not a finite number of milliseconds since 1970).
pub(crate) fn clock() -> Option<u64> {
    let now = glue_clock();
    (now >= 0.0).then_some(now as u64)
}

/// [`clock`], or `unsupported` where it cannot be read (never a made-up time: a clock
/// read as 0 would make every lease look expired).
pub(crate) fn now_ms() -> Result<u64, ApiError> {
    clock().ok_or_else(ApiError::no_clock)
}

/// What `Outbox.open` needs of the runtime besides randomness (a flush run checks the
/// same): a clock, and `setTimeout` and `clearTimeout` (a timer that fails later is
/// counted by the transport's timer module, and the run it fails in says so).
/// `unsupported` otherwise.
pub(crate) fn check_runtime() -> Result<(), ApiError> {
    now_ms()?;
    has_timers().then_some(()).ok_or_else(ApiError::no_timer)
}

/// A uniformly random `u32` from the runtime's cryptographic source
/// (`crypto.getRandomValues`); an error where there is none. Never `Math.random`.
pub(crate) fn random_u32() -> Result<u32, getrandom::Error> {
    getrandom::u32()
}

/// Random words for one flush run's lease ids and retry jitter, drawn from the
/// cryptographic source 64 at a time: one `crypto.getRandomValues` call per word (one
/// per completion) was 58 ms of the 4.5 s the page's thread worked in a profiled flush
/// of 5 000 (`bench.mjs --profile=flush`). There is no stand-in source: once a refill
/// fails the pool says so ([`RandomWords::ready`]) and the run claims nothing more.
pub(crate) struct RandomWords {
    words: [u32; 64],
    used: usize,
    failed: Option<getrandom::Error>,
}

impl RandomWords {
    /// An empty pool (the first [`RandomWords::ready`] or word fills it).
    pub(crate) fn new() -> RandomWords {
        RandomWords {
            words: [0; 64],
            used: 64,
            failed: None,
        }
    }

    /// Makes sure `n` (at most 64) more words are at hand, refilling the pool when
    /// fewer are left; the source's error, for good, once a refill failed (`ready(0)`
    /// tells whether one did).
    pub(crate) fn ready(&mut self, n: usize) -> Result<(), getrandom::Error> {
        if self.failed.is_none() && self.words.len() - self.used < n {
            let mut bytes = [0u8; 256];
            match getrandom::fill(&mut bytes) {
                Ok(()) => {
                    for (word, b) in self.words.iter_mut().zip(bytes.chunks_exact(4)) {
                        *word = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    }
                    self.used = 0;
                }
                Err(e) => self.failed = Some(e),
            }
        }
        self.failed.map_or(Ok(()), Err)
    }

    /// The next word. Once a refill failed and the pool is spent, the middle of the
    /// range: only the retry jitter of attempts already under way is drawn then, as a
    /// caller draws a lease id's words only after [`RandomWords::ready`] said yes, so a
    /// lease id is only ever made of fresh random words.
    pub(crate) fn next_u32(&mut self) -> u32 {
        if self.ready(1).is_err() {
            return u32::MAX / 2;
        }
        self.used += 1;
        self.words[self.used - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::RandomWords;
    use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

    wasm_bindgen_test_configure!(run_in_browser);

    #[wasm_bindgen_test]
    fn random_words_refill_after_each_draw_of_64() {
        let mut words = RandomWords::new();
        let drawn: Vec<u32> = (0..200).map(|_| words.next_u32()).collect();
        let mut distinct = drawn.clone();
        distinct.sort_unstable();
        distinct.dedup();
        // 200 uniform words collide with probability about 5 in a million.
        assert!(distinct.len() >= 199, "{} distinct of 200", distinct.len());
        assert_ne!(drawn[..64], drawn[64..128], "the second fill is fresh");
    }
}
