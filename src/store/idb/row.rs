//! Stored rows ([`StoredRow`]) to and from JavaScript objects, through
//! serde-wasm-bindgen: a plain object `{ id, v, stage, dueMs?, createdMs, eventId, doc }`
//! (`dueMs` absent when the record is terminal, numbers as JS numbers). Reading accepts a
//! string where `StoredRow` has a `String`, a number where it has an `f64`, an integer in
//! `u32` range for `v`, and `dueMs` absent, `undefined`, `null` or a number; anything else
//! is an error naming the field. No business rule.

use wasm_bindgen::JsValue;

use crate::store::codec::StoredRow;

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
