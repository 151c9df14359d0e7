//! NIP-13 mining off the thread that flushes: a dedicated `Worker` instantiates this
//! very `.wasm` module (the compiled `WebAssembly.Module`, posted to it, so nothing is
//! fetched or bundled again) and runs [`pow_slice`], the one miner
//! ([`crate::nostr::template::Template::mine`]), in slices until its deadline. The
//! worker calls nothing else of the module, so it is instantiated with imports that
//! throw if reached. A runtime without workers (Cloudflare Workers, Node), or a page
//! whose Content Security Policy refuses a `blob:` worker, mines where the flush runs,
//! in slices that yield (`flush::sign`).

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::nostr::template::Template;

#[wasm_bindgen(module = "/src/js/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = mineInWorker)]
    fn mine_in_worker(module: &JsValue, template: &str, ms: f64) -> Promise;
}

/// Mines the NIP-13 nonce of `template` (unsigned event JSON with its `nonce` tag) in a
/// worker, for at most `ms`: the nonce, `Ok(None)` when none was found in time, `Err`
/// when no worker could run it (the caller mines here instead).
pub(crate) async fn mine(template: &str, ms: u64) -> Result<Option<u64>, ()> {
    let found = JsFuture::from(mine_in_worker(&wasm_bindgen::module(), template, ms as f64))
        .await
        .map_err(drop)?
        .as_f64()
        .ok_or(())?;
    Ok((found >= 0.0).then_some(found as u64))
}

/// The worker's entry (not an API): tries `count` nonces from `start` on `template`
/// (as [`mine`] is given it). The nonce found, -1 when none of them does, -2 when the
/// template cannot be read.
#[doc(hidden)]
#[wasm_bindgen(js_name = "__powSlice", skip_typescript)]
pub fn pow_slice(template: &str, start: f64, count: u32) -> f64 {
    match Template::parse(template, None) {
        Ok(mut t) => t
            .mine(start as u64, u64::from(count))
            .map_or(-1.0, |n| n as f64),
        Err(_) => -2.0,
    }
}
