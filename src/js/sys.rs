//! The API layer's bindings to `glue.js` (visibility, online state, event dispatch,
//! channels, NIP-42 signers, Background Sync) and the platform's clock and timers as
//! `OutboxError`s ([`crate::platform`] has the clock, timers, randomness and Web
//! Locks). Every call works without a DOM. No business rule, and no stand-in: a clock,
//! timer or random source that fails is an `OutboxError` of the call that needed it.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use super::error::ApiError;
use crate::platform;

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
    #[wasm_bindgen(js_name = signerFunction)]
    pub(crate) fn signer_function(signer: &JsValue) -> Option<js_sys::Function>;
    #[wasm_bindgen(js_name = foreignAuthor)]
    pub(crate) fn foreign_author(signer: &JsValue, authors: &js_sys::Array) -> Promise;
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

/// [`platform::clock`], or `unsupported` where it cannot be read (never a made-up time: a clock
/// read as 0 would make every lease look expired).
pub(crate) fn now_ms() -> Result<u64, ApiError> {
    platform::clock().ok_or_else(ApiError::no_clock)
}

/// What `Outbox.open` needs of the runtime besides randomness (a flush run checks the
/// same): a clock, and `setTimeout` and `clearTimeout` (a timer that fails later is
/// counted by the transport's timer module, and the run it fails in says so).
/// `unsupported` otherwise.
pub(crate) fn check_runtime() -> Result<(), ApiError> {
    now_ms()?;
    platform::has_timers()
        .then_some(())
        .ok_or_else(ApiError::no_timer)
}
