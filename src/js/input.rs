//! Reading JavaScript arguments and options objects into Rust values: type checks,
//! unknown-key checks and conversions, each failure a typed [`ApiError`] naming the
//! option. Ranges and every domain rule stay with [`crate::core`] and
//! [`crate::nostr`]; this module only checks shapes.

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::error::{details, ApiError};
use crate::core::Policy;
use crate::json::Value;
use crate::nostr::{Event, RelayUrl};

/// The largest integer a JavaScript number holds exactly (2^53 − 1).
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// A JavaScript options object (`undefined`/`null` read as empty).
pub(crate) struct Options {
    obj: Option<Object>,
    /// What it is, for messages (e.g. `Outbox.open options`).
    what: &'static str,
}

/// A short name of a JavaScript value's type, for messages.
pub(crate) fn type_name(v: &JsValue) -> &'static str {
    if v.is_undefined() {
        "undefined"
    } else if v.is_null() {
        "null"
    } else if v.as_bool().is_some() {
        "a boolean"
    } else if v.as_f64().is_some() {
        "a number"
    } else if v.is_string() {
        "a string"
    } else if v.is_bigint() {
        "a bigint"
    } else if v.is_function() {
        "a function"
    } else if Array::is_array(v) {
        "an array"
    } else if v.is_object() {
        "an object"
    } else {
        "a symbol"
    }
}

impl Options {
    /// Reads `value` as an options object accepting only the `allowed` keys.
    pub(crate) fn new(
        value: &JsValue,
        what: &'static str,
        allowed: &[&str],
    ) -> Result<Options, ApiError> {
        if value.is_undefined() || value.is_null() {
            return Ok(Options { obj: None, what });
        }
        if !value.is_object() || Array::is_array(value) || value.is_function() {
            return Err(ApiError::new(
                "invalid_options",
                format!(
                    "invalid options: {what} must be an object, got {}",
                    type_name(value)
                ),
            ));
        }
        let obj: Object = value.clone().unchecked_into();
        for key in Object::keys(&obj).iter() {
            let key = key.as_string().unwrap_or_default();
            if !allowed.contains(&key.as_str()) {
                return Err(ApiError::new(
                    "invalid_options",
                    format!(
                        "invalid options: unknown option `{key}` in {what} (known: {})",
                        allowed.join(", ")
                    ),
                )
                .with_details(details(vec![("option", Value::from(key))])));
            }
        }
        Ok(Options {
            obj: Some(obj),
            what,
        })
    }

    /// The raw value of `key` (`undefined` when absent).
    pub(crate) fn raw(&self, key: &str) -> JsValue {
        match &self.obj {
            Some(obj) => Reflect::get(obj, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED),
            None => JsValue::UNDEFINED,
        }
    }

    /// `key` when present and not `undefined`.
    pub(crate) fn present(&self, key: &str) -> Option<JsValue> {
        let v = self.raw(key);
        (!v.is_undefined()).then_some(v)
    }

    fn bad(&self, key: &str, expected: &str, got: &JsValue) -> ApiError {
        ApiError::options(
            key,
            format!(
                "in {} must be {expected}, got {}",
                self.what,
                type_name(got)
            ),
        )
    }

    /// An optional string.
    pub(crate) fn string(&self, key: &str) -> Result<Option<String>, ApiError> {
        match self.present(key) {
            None => Ok(None),
            Some(v) => v
                .as_string()
                .map(Some)
                .ok_or_else(|| self.bad(key, "a string", &v)),
        }
    }

    /// An optional boolean.
    pub(crate) fn boolean(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.present(key) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.bad(key, "a boolean", &v)),
        }
    }

    /// An optional non-negative integer (a JavaScript safe integer).
    pub(crate) fn uint(&self, key: &str) -> Result<Option<u64>, ApiError> {
        match self.present(key) {
            None => Ok(None),
            Some(v) => as_uint(&v)
                .map(Some)
                .ok_or_else(|| self.bad(key, "a non-negative integer", &v)),
        }
    }

    /// An optional non-negative integer saturated to `u32`.
    pub(crate) fn uint32(&self, key: &str) -> Result<Option<u32>, ApiError> {
        Ok(self
            .uint(key)?
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)))
    }

    /// An optional string from a fixed set.
    pub(crate) fn choice<'c>(
        &self,
        key: &str,
        choices: &[&'c str],
    ) -> Result<Option<&'c str>, ApiError> {
        let Some(s) = self.string(key)? else {
            return Ok(None);
        };
        choices
            .iter()
            .find(|c| **c == s)
            .copied()
            .map(Some)
            .ok_or_else(|| {
                ApiError::options(
                    key,
                    format!(
                        "in {} must be one of {}, got \"{s}\"",
                        self.what,
                        choices.join(", ")
                    ),
                )
            })
    }

    /// An optional satisfaction policy.
    pub(crate) fn policy(&self, key: &str) -> Result<Option<Policy>, ApiError> {
        match self.present(key) {
            None => Ok(None),
            Some(v) => parse_policy(&v).map(Some),
        }
    }
}

/// A JavaScript number that is a non-negative safe integer.
pub(crate) fn as_uint(v: &JsValue) -> Option<u64> {
    let n = v.as_f64()?;
    ((0.0..=MAX_SAFE).contains(&n) && n.fract() == 0.0).then_some(n as u64)
}

fn policy_error(message: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        "invalid_policy",
        format!(
            "invalid policy: {message} (expected \"all\", \"any\", {{ atLeast: n }} or {{ required: [urls] }})"
        ),
    )
}

/// Reads a policy: `"all"`, `"any"`, `{ atLeast: n }` or `{ required: [urls] }`.
/// Relay URLs in `required` are normalized like targets.
pub(crate) fn parse_policy(v: &JsValue) -> Result<Policy, ApiError> {
    if let Some(s) = v.as_string() {
        return match s.as_str() {
            "all" => Ok(Policy::All),
            "any" => Ok(Policy::Any),
            other => Err(policy_error(format!("unknown policy \"{other}\""))),
        };
    }
    if !v.is_object() || Array::is_array(v) || v.is_function() {
        return Err(policy_error(format!("got {}", type_name(v))));
    }
    let obj: &Object = v.unchecked_ref();
    let keys: Vec<String> = Object::keys(obj)
        .iter()
        .filter_map(|k| k.as_string())
        .collect();
    if keys.len() != 1 {
        return Err(policy_error("an object policy must have exactly one key"));
    }
    let value = Reflect::get(obj, &JsValue::from_str(&keys[0])).unwrap_or(JsValue::UNDEFINED);
    match keys[0].as_str() {
        "atLeast" => {
            let k = as_uint(&value)
                .ok_or_else(|| policy_error("`atLeast` must be a positive integer"))?;
            Ok(Policy::AtLeast {
                k: u32::try_from(k).unwrap_or(u32::MAX),
            })
        }
        "required" => {
            let relays = string_array(&value)
                .ok_or_else(|| policy_error("`required` must be an array of relay URL strings"))?;
            let mut out = Vec::with_capacity(relays.len());
            for (index, url) in relays.iter().enumerate() {
                let url = RelayUrl::parse(url).map_err(|e| {
                    ApiError::from(e).with_details(details(vec![
                        ("option", Value::from("policy.required")),
                        ("index", Value::from(index)),
                    ]))
                })?;
                out.push(url.as_str().to_string());
            }
            Ok(Policy::Required { relays: out })
        }
        other => Err(policy_error(format!("unknown policy key `{other}`"))),
    }
}

/// An array whose elements are all strings.
pub(crate) fn string_array(v: &JsValue) -> Option<Vec<String>> {
    if !Array::is_array(v) {
        return None;
    }
    let arr: &Array = v.unchecked_ref();
    arr.iter().map(|x| x.as_string()).collect()
}

/// Reads relay URLs: an array of strings, each parsed and normalized, repeats dropped
/// (first-seen order kept; the core sorts them).
pub(crate) fn parse_relays(v: &JsValue) -> Result<Vec<String>, ApiError> {
    if !Array::is_array(v) {
        return Err(ApiError::argument(
            "relays",
            format!(
                "must be an array of relay URL strings, got {}",
                type_name(v)
            ),
        ));
    }
    let arr: &Array = v.unchecked_ref();
    let mut urls = Vec::with_capacity(arr.length() as usize);
    for (index, item) in arr.iter().enumerate() {
        let Some(s) = item.as_string() else {
            return Err(ApiError::new(
                "invalid_relay_url",
                format!(
                    "target relay #{index}: must be a string, got {}",
                    type_name(&item)
                ),
            )
            .with_details(details(vec![("index", Value::from(index))])));
        };
        urls.push(s);
    }
    let normalized = crate::nostr::normalize_targets(&urls)?;
    Ok(normalized
        .into_iter()
        .map(|u| u.as_str().to_string())
        .collect())
}

/// Reads a signed event (an object with the NIP-01 fields, or its JSON text) and
/// checks its id; the caller checks its signature ([`Event::signature`]).
/// Either way the event is kept in its compact NIP-01 form (the seven fields; other
/// properties are dropped).
pub(crate) fn parse_event(v: &JsValue) -> Result<Event, ApiError> {
    let event = if let Some(text) = v.as_string() {
        // Strict parse of the text, then the same compact form as for objects, so one
        // signed event is one plan whichever way it is given (same id, same sig).
        let e = Event::parse_json(&text)?;
        Event::from_parts(
            e.id().to_string(),
            e.pubkey().to_string(),
            e.created_at(),
            e.kind(),
            e.tags().to_vec(),
            e.content().to_string(),
            e.sig().to_string(),
        )?
    } else if v.is_object() && !Array::is_array(v) && !v.is_function() {
        let text = super::sys::event_fields_json(v).map_err(|e| {
            ApiError::new(
                "invalid_event",
                "invalid event: its fields cannot be serialized as JSON",
            )
            .with_details(details(vec![("reason", Value::from("not_json"))]))
            .with_cause(e)
        })?;
        Event::parse_json_compact(&text)?
    } else {
        return Err(ApiError::new(
            "invalid_event",
            format!(
                "invalid event: expected a signed event object or its JSON text, got {}",
                type_name(v)
            ),
        )
        .with_details(details(vec![("reason", Value::from("not_object"))])));
    };
    event.verify_id()?;
    Ok(event)
}
