//! Storage persistence and quota: `navigator.storage.persist()`, `persisted()` and
//! `estimate()`, in windows and workers. Without persistence, storage is
//! "best-effort" and the browser may evict it under pressure.

use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use super::sys;

/// What `navigator.storage.estimate()` reported, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageEstimate {
    /// Bytes used by this origin.
    pub usage: Option<f64>,
    /// Bytes this origin may use.
    pub quota: Option<f64>,
}

async fn call(promise: Result<js_sys::Promise, JsValue>) -> Option<JsValue> {
    JsFuture::from(promise.ok()?).await.ok()
}

/// Asks the browser to make this origin's storage persistent. `None` when the
/// Storage API is unavailable; otherwise whether persistence is granted.
pub async fn request_persistence() -> Option<bool> {
    let manager = sys::storage_manager()?;
    call(manager.persist()).await?.as_bool()
}

/// Whether this origin's storage is persistent (`None`: Storage API unavailable).
pub async fn is_persisted() -> Option<bool> {
    let manager = sys::storage_manager()?;
    call(manager.persisted()).await?.as_bool()
}

/// Usage and quota of this origin (`None`: Storage API unavailable).
pub async fn estimate() -> Option<StorageEstimate> {
    let manager = sys::storage_manager()?;
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
