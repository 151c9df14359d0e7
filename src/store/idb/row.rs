//! Stored rows ([`StoredRow`]) to and from JavaScript objects, through
//! serde-wasm-bindgen: a plain object `{ id, v, stage, dueMs?, createdMs, eventId, doc }`
//! (`dueMs` absent when the record is terminal, numbers as JS numbers). Reading accepts a
//! string where `StoredRow` has a `String`, a number where it has an `f64`, an integer in
//! `u32` range for `v`, and `dueMs` absent, `undefined`, `null` or a number; anything else
//! is an error naming the field.
//!
//! Since schema v4 a record is two rows: the state row above, whose document holds the
//! event without its text, and the event row `{ id, eventId, createdMs, raw }` in
//! `events`, written once. No business rule.

use serde::Serialize;
use wasm_bindgen::JsValue;

use crate::core::Record;
use crate::store::codec::{self, StoredRow};
use crate::store::StoreError;

/// A record's row in `events`: its event's text and the immutable index fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventRow<'a> {
    id: &'a str,
    event_id: &'a str,
    created_ms: f64,
    raw: &'a str,
}

/// The state row of `record`: its stored row with the event's text left out (it is in
/// the event row).
pub(super) fn state_to_js(record: &Record) -> Result<JsValue, StoreError> {
    let mut state = record.clone();
    state.event.raw = String::new();
    to_js(&codec::encode(&state)?)
}

/// The event row of `record`.
pub(super) fn event_to_js(record: &Record) -> Result<JsValue, StoreError> {
    EventRow {
        id: &record.id,
        event_id: &record.event.id,
        created_ms: record.created_ms as f64,
        raw: &record.event.raw,
    }
    .serialize(&serde_wasm_bindgen::Serializer::new())
    .map_err(|e| StoreError::Backend(format!("event of `{}` cannot be stored: {e}", record.id)))
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
