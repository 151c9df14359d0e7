//! Stored rows ([`StoredRow`]) to and from JavaScript objects, by hand: the object
//! is built by `glue.js` in one call and read back field by field. This replaces
//! `serde_wasm_bindgen`, whose generic (de)serializer cost about 20 KB of wasm, with
//! the same object shape and the same acceptance: a string where `StoredRow` has a
//! `String`, a number where it has an `f64`, an integer in `u32` range for `v`, and
//! `dueMs` absent, `undefined`, `null` or a number. No business rule.

use js_sys::Reflect;
use wasm_bindgen::prelude::*;

use crate::store::codec::StoredRow;

#[wasm_bindgen(module = "/src/store/idb/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = newRow)]
    fn new_row(
        id: &str,
        v: u32,
        stage: &str,
        due_ms: Option<f64>,
        created_ms: f64,
        event_id: &str,
        doc: &str,
    ) -> JsValue;
}

/// The row as a plain object `{ id, v, stage, dueMs?, createdMs, eventId, doc }`.
pub(super) fn to_js(row: &StoredRow) -> JsValue {
    new_row(
        &row.id,
        row.v,
        &row.stage,
        row.due_ms,
        row.created_ms,
        &row.event_id,
        &row.doc,
    )
}

/// Reads a row object; the error says which field is missing or of the wrong type.
pub(super) fn from_js(value: &JsValue) -> Result<StoredRow, String> {
    if !value.is_object() {
        return Err("not an object".into());
    }
    let get = |key: &str| Reflect::get(value, &JsValue::from_str(key)).unwrap_or_default();
    let string = |key: &'static str| {
        get(key)
            .as_string()
            .ok_or_else(|| format!("`{key}` is missing or not a string"))
    };
    let number = |key: &'static str| {
        get(key)
            .as_f64()
            .ok_or_else(|| format!("`{key}` is missing or not a number"))
    };
    let id = string("id")?;
    let v = number("v").and_then(|v| {
        (v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v))
            .then_some(v as u32)
            .ok_or_else(|| "`v` is not a row format number".to_string())
    })?;
    let stage = string("stage")?;
    let due = get("dueMs");
    let due_ms = if due.is_undefined() || due.is_null() {
        None
    } else {
        Some(number("dueMs")?)
    };
    Ok(StoredRow {
        id,
        v,
        stage,
        due_ms,
        created_ms: number("createdMs")?,
        event_id: string("eventId")?,
        doc: string("doc")?,
    })
}
