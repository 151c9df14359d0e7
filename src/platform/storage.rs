//! Storage persistence and quota: `navigator.storage.persist()`, `persisted()` and
//! `estimate()`, in windows and workers. Without persistence, storage is
//! "best-effort" and the browser may evict it under pressure.

use std::pin::pin;

use futures_util::future::{select, Either};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::timer::Sleep;

/// `navigator.storage`, in windows and workers.
fn storage_manager() -> Option<web_sys::StorageManager> {
    let navigator = js_sys::Reflect::get(&js_sys::global(), &"navigator".into()).ok()?;
    js_sys::Reflect::get(&navigator, &"storage".into())
        .ok()?
        .dyn_into()
        .ok()
}

/// Settles with `promise`'s value, or with `undefined` after `ms` (Firefox shows a
/// permission prompt for `persist()`, which a headless or unattended page never answers).
async fn within(promise: js_sys::Promise, ms: u32) -> Option<JsValue> {
    match select(pin!(JsFuture::from(promise)), Sleep::new(ms)).await {
        Either::Left((answer, _)) => answer.ok(),
        Either::Right(_) => None,
    }
}

/// What `navigator.storage.estimate()` reported, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageEstimate {
    /// Bytes used by this origin.
    pub usage: Option<f64>,
    /// Bytes this origin may use.
    pub quota: Option<f64>,
}

/// How long [`request_persistence`] waits for an answer by default.
pub const PERSIST_TIMEOUT_MS: u32 = 5_000;

async fn call(promise: Result<js_sys::Promise, JsValue>) -> Option<JsValue> {
    JsFuture::from(promise.ok()?).await.ok()
}

/// Asks the browser to make this origin's storage persistent, waiting at most
/// [`PERSIST_TIMEOUT_MS`]. `None` when the Storage API is unavailable or nobody
/// answered in time (Firefox asks the user with a prompt); otherwise whether
/// persistence is granted.
pub async fn request_persistence() -> Option<bool> {
    request_persistence_within(PERSIST_TIMEOUT_MS).await
}

/// [`request_persistence`] with an explicit wait limit in milliseconds.
pub async fn request_persistence_within(timeout_ms: u32) -> Option<bool> {
    let manager = storage_manager()?;
    let asked = manager.persist().ok()?;
    within(asked, timeout_ms).await?.as_bool()
}

/// Whether this origin's storage is persistent (`None`: Storage API unavailable).
pub async fn is_persisted() -> Option<bool> {
    let manager = storage_manager()?;
    call(manager.persisted()).await?.as_bool()
}

/// Usage and quota of this origin (`None`: Storage API unavailable).
pub async fn estimate() -> Option<StorageEstimate> {
    let manager = storage_manager()?;
    let value = call(manager.estimate()).await?;
    let get = |k: &str| {
        js_sys::Reflect::get(&value, &JsValue::from_str(k))
            .ok()
            .and_then(|v| v.as_f64())
    };
    Some(StorageEstimate {
        usage: get("usage"),
        quota: get("quota"),
    })
}
