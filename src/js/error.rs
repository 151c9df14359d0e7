//! Errors at the JavaScript boundary: every failure becomes an `OutboxError` (a real
//! `Error` subclass defined in `error.js`) with a stable string `code`, a human
//! message and optional structured `details`. Every Rust error's `code()` is passed
//! through unchanged; this layer only adds `invalid_options` (a malformed options
//! object), `storage_unavailable` and `closed`.

use crate::json::Value;
use wasm_bindgen::prelude::*;

use crate::core::CoreError;
use crate::nostr::{EventError, RelayUrlError, TargetsError};
use crate::store::StoreError;
use crate::transport::websocket::WsConfigError;

#[wasm_bindgen(module = "/src/js/error.js")]
extern "C" {
    /// The JavaScript `OutboxError` class (`extends Error`), exported by the package.
    #[wasm_bindgen(extends = js_sys::Error)]
    #[derive(Debug, Clone)]
    pub type OutboxError;

    /// The stable error code.
    #[wasm_bindgen(method, getter)]
    pub fn code(this: &OutboxError) -> String;

    #[wasm_bindgen(js_name = makeError)]
    fn make_error(code: &str, message: &str, details: Option<String>, cause: JsValue) -> JsValue;
}

/// A details object from `(key, value)` pairs, in their order.
pub(crate) fn details(pairs: Vec<(&str, Value)>) -> Value {
    Value::object(pairs)
}

/// A failure on its way to JavaScript: code, message, details and an optional cause.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The stable snake_case code.
    pub code: &'static str,
    /// The human message.
    pub message: String,
    /// Structured details (a JSON object), if any.
    pub details: Option<Value>,
    /// The JavaScript value that caused it, if any.
    pub cause: Option<JsValue>,
}

impl ApiError {
    /// An error with a code and a message.
    pub fn new(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            details: None,
            cause: None,
        }
    }

    /// A malformed options object (`invalid_options`), naming the option.
    pub fn options(option: &str, message: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            "invalid_options",
            format!("invalid options: `{option}` {message}"),
        )
        .with_details(details(vec![("option", Value::from(option))]))
    }

    /// A malformed argument (`invalid_argument`), naming it.
    pub fn argument(argument: &str, message: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            "invalid_argument",
            format!("invalid argument `{argument}`: {message}"),
        )
        .with_details(details(vec![("argument", Value::from(argument))]))
    }

    /// The outbox was closed.
    pub fn closed() -> ApiError {
        ApiError::new("closed", "the outbox is closed")
    }

    /// Adds structured details.
    pub fn with_details(mut self, details: Value) -> ApiError {
        self.details = Some(details);
        self
    }

    /// Adds the JavaScript value that caused it.
    pub fn with_cause(mut self, cause: JsValue) -> ApiError {
        self.cause = Some(cause);
        self
    }

    /// Merges `extra` into the details object (a key already there takes the new
    /// value).
    pub fn add_details(mut self, extra: Value) -> ApiError {
        match (&mut self.details, extra) {
            (Some(Value::Object(members)), Value::Object(more)) => {
                for (key, value) in more {
                    match members.iter_mut().find(|(k, _)| *k == key) {
                        Some(member) => member.1 = value,
                        None => members.push((key, value)),
                    }
                }
            }
            (slot, extra) => *slot = Some(extra),
        }
        self
    }

    /// The `OutboxError` object.
    pub fn into_js(self) -> JsValue {
        make_error(
            self.code,
            &self.message,
            self.details.map(|d| d.to_string()),
            self.cause.unwrap_or(JsValue::UNDEFINED),
        )
    }
}

impl From<ApiError> for JsValue {
    fn from(e: ApiError) -> JsValue {
        e.into_js()
    }
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> ApiError {
        let details = match &e {
            CoreError::InvalidArgument { field, .. } | CoreError::InvalidConfig { field, .. } => {
                Some(details(vec![("field", Value::from(*field))]))
            }
            CoreError::PlanConflict { id }
            | CoreError::NotFound { id }
            | CoreError::LeaseExpired { id }
            | CoreError::NotReady { id }
            | CoreError::NotRetryable { id, .. } => {
                Some(details(vec![("id", Value::from(id.as_str()))]))
            }
            CoreError::AlreadyTerminal { id, stage } => Some(details(vec![
                ("id", Value::from(id.as_str())),
                ("stage", Value::from(stage.as_str())),
            ])),
            CoreError::RevisionConflict { id, .. } => {
                Some(details(vec![("id", Value::from(id.as_str()))]))
            }
            _ => None,
        };
        ApiError {
            code: e.code(),
            message: e.to_string(),
            details,
            cause: None,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::Core(core) => core.into(),
            StoreError::VersionTooNew { found, supported } => {
                ApiError::new(e.code(), e.to_string()).with_details(details(vec![
                    ("found", Value::from(found)),
                    ("supported", Value::from(supported)),
                ]))
            }
            StoreError::Corrupt { ref id, .. } => {
                let d = details(vec![("id", Value::from(id.as_str()))]);
                ApiError::new(e.code(), e.to_string()).with_details(d)
            }
            other => ApiError::new(other.code(), other.to_string()),
        }
    }
}

impl From<EventError> for ApiError {
    fn from(e: EventError) -> ApiError {
        let mut pairs = vec![("reason", Value::from(e.reason()))];
        if let Some(field) = e.field() {
            pairs.push(("field", Value::from(field)));
        }
        ApiError::new(e.code(), e.to_string()).with_details(details(pairs))
    }
}

impl From<RelayUrlError> for ApiError {
    fn from(e: RelayUrlError) -> ApiError {
        ApiError::new(e.code(), e.to_string())
    }
}

impl From<TargetsError> for ApiError {
    fn from(e: TargetsError) -> ApiError {
        ApiError::new(e.code(), e.to_string())
            .with_details(details(vec![("index", Value::from(e.index))]))
    }
}

impl From<WsConfigError> for ApiError {
    fn from(e: WsConfigError) -> ApiError {
        ApiError::new(e.code(), e.to_string())
            .with_details(details(vec![("field", Value::from(e.field))]))
    }
}
