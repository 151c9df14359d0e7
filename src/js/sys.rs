//! Bindings to `glue.js` and to a few globals (`setTimeout`, `clearTimeout`,
//! `Date.now`): the clock, randomness (`crypto.getRandomValues` through getrandom),
//! Web Locks, visibility, online state and event dispatch. Every call works without a
//! DOM. No business rule.

use std::cell::Cell;

use js_sys::Promise;
use wasm_bindgen::prelude::*;

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

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    pub(crate) fn set_timeout(callback: &js_sys::Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    pub(crate) fn clear_timeout(id: &JsValue);
}

/// The current time in unix milliseconds (`Date.now()`).
pub(crate) fn now_ms() -> u64 {
    let now = js_sys::Date::now();
    if now.is_finite() && now > 0.0 {
        now as u64
    } else {
        0
    }
}

thread_local! {
    /// Every random word drawn so far, mixed: the state of [`next_random_u32`]'s
    /// stand-in when the random source goes away after `open` drew from it.
    static MIXED: Cell<u64> = const { Cell::new(0) };
}

/// A uniformly random `u32` from the runtime's cryptographic source
/// (`crypto.getRandomValues`); an error where there is none. Never `Math.random`.
pub(crate) fn random_u32() -> Result<u32, getrandom::Error> {
    let n = getrandom::u32()?;
    mix(n);
    Ok(n)
}

/// Mixes a word drawn from the cryptographic source into [`MIXED`].
fn mix(word: u32) {
    MIXED.with(|m| m.set(m.get().rotate_left(32) ^ u64::from(word)));
}

/// Random words for one flush run's lease ids and retry jitter, drawn from the
/// cryptographic source 64 at a time: one `crypto.getRandomValues` call per word (one
/// per completion) was 58 ms of the 4.5 s the page's thread worked in a profiled flush
/// of 5 000 (`bench.mjs --profile=flush`). Should the source fail, words come from
/// [`next_random_u32`].
pub(crate) struct RandomWords {
    words: [u32; 64],
    used: usize,
}

impl RandomWords {
    /// An empty pool (the first word fills it).
    pub(crate) fn new() -> RandomWords {
        RandomWords {
            words: [0; 64],
            used: 64,
        }
    }

    /// The next word.
    pub(crate) fn next_u32(&mut self) -> u32 {
        if self.used == self.words.len() {
            let mut bytes = [0u8; 256];
            if getrandom::fill(&mut bytes).is_err() {
                return next_random_u32();
            }
            for (word, b) in self.words.iter_mut().zip(bytes.chunks_exact(4)) {
                *word = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            mix(self.words[0]);
            self.used = 0;
        }
        self.used += 1;
        self.words[self.used - 1]
    }
}

/// A random `u32` for lease ids and retry jitter. `Outbox.open` has drawn from the
/// cryptographic source (it refuses to open without one); should the source vanish
/// afterwards (a page replacing `globalThis.crypto`), the words come from a SplitMix64
/// sequence seeded by every word drawn before, so lease ids stay distinct.
pub(crate) fn next_random_u32() -> u32 {
    random_u32().unwrap_or_else(|_| {
        MIXED.with(|m| {
            let state = m.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
            m.set(state);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u32
        })
    })
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
