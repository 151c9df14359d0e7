//! Stored rows ([`StoredRow`]) to and from JavaScript objects, through
//! serde-wasm-bindgen: a plain object `{ id, v, stage, dueMs?, createdMs, eventId, doc }`
//! (`dueMs` absent when the record is terminal, numbers as JS numbers). Reading accepts a
//! string where `StoredRow` has a `String`, a number where it has an `f64`, an integer in
//! `u32` range for `v`, and `dueMs` absent, `undefined`, `null` or a number; anything else
//! is an error naming the field. No business rule.

use serde::Serialize;
use wasm_bindgen::JsValue;

use crate::store::codec::StoredRow;
use crate::store::StoreError;

/// The `lookup` row (schema v4) of the record stored as `row`: `{ id, eventId?,
/// createdMs }`, the keys of the indexes that never change. `eventId` only when the
/// item id is not the event id (an app's own id): by default they are the same, and
/// a lookup by event id reads the record under it directly, so the `event` index holds
/// only the others (one index entry less per enqueue).
pub(super) fn lookup_to_js(row: &StoredRow) -> Result<JsValue, StoreError> {
    let keys = js_sys::Object::new();
    let set = |name: &str, value: JsValue| js_sys::Reflect::set(&keys, &name.into(), &value);
    set("id", row.id.as_str().into())
        .and_then(|_| match row.event_id == row.id {
            true => Ok(true),
            false => set("eventId", row.event_id.as_str().into()),
        })
        .and_then(|_| set("createdMs", row.created_ms.into()))
        .map_err(|e| StoreError::Backend(format!("row `{}` cannot be stored: {e:?}", row.id)))?;
    Ok(keys.into())
}

/// The row as a plain object.
pub(super) fn to_js(row: &StoredRow) -> Result<JsValue, StoreError> {
    // The default serializer writes a struct as a plain object, `f64` and `u32` as
    // numbers, and leaves out `dueMs` (skipped when `None` by `StoredRow`'s derive).
    row.serialize(&serde_wasm_bindgen::Serializer::new())
        .map_err(|e| StoreError::Backend(format!("row `{}` cannot be stored: {e}", row.id)))
}

/// Reads a row object; the error names the missing field (``missing field `createdMs` ``)
/// or the wrong value and what was expected (`invalid type: string "1", expected u32`).
pub(super) fn from_js(value: JsValue) -> Result<StoredRow, String> {
    if !value.is_object() {
        return Err("not an object".into());
    }
    serde_wasm_bindgen::from_value(value).map_err(|e| {
        // The error is a JavaScript `Error`: its message, without the "Error: " prefix.
        let error = JsValue::from(e);
        js_sys::Reflect::get(&error, &JsValue::from_str("message"))
            .ok()
            .and_then(|m| m.as_string())
            .unwrap_or_else(|| format!("{error:?}"))
    })
}
