//! Errors at the JavaScript boundary: every failure becomes an `OutboxError` (a real
//! `Error` subclass defined in `error.js`) with a stable string `code`, a human
//! message and optional structured `details`. Every code is one of [`ErrorCode`]: every
//! Rust error's `code()` is passed through unchanged; this layer only adds
//! `invalid_options` (a malformed options object), `storage_unavailable`,
//! `no_random_source`, `unsupported`, `closed` and `sync_incomplete`. The
//! `details` are a typed [`Details`] (the `OutboxErrorDetails` of the TypeScript
//! declarations), handed to JavaScript as a plain object (its JSON, parsed: `view::to_js`).

use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::core::{CoreError, ErrorCode};
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
    fn make_error(code: &str, message: &str, details: JsValue, cause: JsValue) -> JsValue;
}

/// Structured facts about an error (`OutboxErrorDetails`); which fields are set depends
/// on the code. Absent fields are left out of the JavaScript object.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Details {
    /// The option at fault (`invalid_options`, `invalid_relay_url` in `policy.required`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
    /// The argument at fault (`invalid_argument`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument: Option<String>,
    /// The field at fault (`invalid_event`, `invalid_argument`, `invalid_config`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'static str>,
    /// The finer reason of `invalid_event`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// Position of the relay (`invalid_relay_url`) or of the `enqueueMany` item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// The item id concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The record's stage (`already_terminal`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<&'static str>,
    /// The schema version found (`storage_version_too_new`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<u32>,
    /// The highest schema version supported (`storage_version_too_new`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported: Option<u32>,
    /// The line of an import at fault (`invalid_import`, `plan_conflict`), 1-based.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// What the flush did (`sync_incomplete`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<super::view::FlushView>,
}

impl Details {
    /// Details naming an option.
    pub fn option(option: impl Into<String>) -> Details {
        Details {
            option: Some(option.into()),
            ..Details::default()
        }
    }

    /// Details naming a field.
    pub fn field(field: &'static str) -> Details {
        Details {
            field: Some(field),
            ..Details::default()
        }
    }

    /// Details naming a position.
    pub fn index(index: usize) -> Details {
        Details {
            index: Some(index),
            ..Details::default()
        }
    }

    /// Details naming an item id.
    pub fn id(id: impl Into<String>) -> Details {
        Details {
            id: Some(id.into()),
            ..Details::default()
        }
    }

    /// Details with the finer reason of `invalid_event`.
    pub fn reason(reason: &'static str) -> Details {
        Details {
            reason: Some(reason),
            ..Details::default()
        }
    }

    /// `self` with every field `extra` sets taken from `extra`.
    fn merge(self, extra: Details) -> Details {
        Details {
            option: extra.option.or(self.option),
            argument: extra.argument.or(self.argument),
            field: extra.field.or(self.field),
            reason: extra.reason.or(self.reason),
            index: extra.index.or(self.index),
            id: extra.id.or(self.id),
            stage: extra.stage.or(self.stage),
            found: extra.found.or(self.found),
            supported: extra.supported.or(self.supported),
            line: extra.line.or(self.line),
            stats: extra.stats.or(self.stats),
        }
    }
}

/// A failure on its way to JavaScript: code, message, details and an optional cause.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The stable snake_case code: an [`ErrorCode`]'s, or a lower layer's `code()`.
    code: &'static str,
    /// The human message.
    pub message: String,
    /// Structured details, if any (boxed: an `ApiError` travels in every `Result`).
    pub details: Option<Box<Details>>,
    /// The JavaScript value that caused it, if any.
    pub cause: Option<JsValue>,
}

impl ApiError {
    /// An error with a code and a message. Inlined, so that a call site passes its
    /// code's string (no lookup in a table of every code in the .wasm).
    #[inline(always)]
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError::coded(code.as_str(), message)
    }

    /// An error with a lower layer's `code()` (one of [`ErrorCode`]'s) and a message.
    fn coded(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            details: None,
            cause: None,
        }
    }

    /// A malformed options object (`invalid_options`), naming the option.
    pub fn options(option: &str, message: impl std::fmt::Display) -> ApiError {
        ApiError::options_of(option, &message)
    }

    /// [`ApiError::options`]'s one copy (not one per message type).
    fn options_of(option: &str, message: &dyn std::fmt::Display) -> ApiError {
        ApiError::new(
            ErrorCode::InvalidOptions,
            format!("invalid options: `{option}` {message}"),
        )
        .with_details(Details::option(option))
    }

    /// A malformed argument (`invalid_argument`), naming it.
    pub fn argument(argument: &str, message: impl std::fmt::Display) -> ApiError {
        ApiError::argument_of(argument, &message)
    }

    /// [`ApiError::argument`]'s one copy (not one per message type).
    fn argument_of(argument: &str, message: &dyn std::fmt::Display) -> ApiError {
        ApiError::new(
            ErrorCode::InvalidArgument,
            format!("invalid argument `{argument}`: {message}"),
        )
        .with_details(Details {
            argument: Some(argument.into()),
            ..Details::default()
        })
    }

    /// True for `invalid_argument` naming `field` (`details.field`).
    pub(crate) fn is_invalid_argument(&self, field: &str) -> bool {
        self.code == ErrorCode::InvalidArgument.as_str()
            && self.details.as_ref().and_then(|d| d.field) == Some(field)
    }

    /// This runtime has no cryptographic random source (`crypto.getRandomValues`).
    pub fn no_random_source(cause: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            ErrorCode::NoRandomSource,
            format!(
                "this runtime has no cryptographic random source (crypto.getRandomValues): {cause}"
            ),
        )
    }

    /// This runtime's clock (`Date.now()`) cannot be read (`unsupported`).
    pub(crate) fn no_clock() -> ApiError {
        ApiError::new(
            ErrorCode::Unsupported,
            "this runtime's clock cannot be read (Date.now() threw or is not a time)",
        )
    }

    /// This runtime has no working `setTimeout` (`unsupported`).
    pub(crate) fn no_timer() -> ApiError {
        ApiError::new(
            ErrorCode::Unsupported,
            "this runtime has no working setTimeout",
        )
    }

    /// The outbox was closed.
    pub fn closed() -> ApiError {
        ApiError::new(ErrorCode::Closed, "the outbox is closed")
    }

    /// Adds structured details.
    pub fn with_details(mut self, details: Details) -> ApiError {
        self.details = Some(Box::new(details));
        self
    }

    /// Adds the JavaScript value that caused it.
    pub fn with_cause(mut self, cause: JsValue) -> ApiError {
        self.cause = Some(cause);
        self
    }

    /// Merges `extra` into the details (a field already set takes the new value).
    pub fn add_details(mut self, extra: Details) -> ApiError {
        self.details = Some(Box::new(match self.details.take() {
            Some(details) => (*details).merge(extra),
            None => extra,
        }));
        self
    }

    /// The `OutboxError` object.
    pub fn into_js(self) -> JsValue {
        make_error(
            self.code,
            &self.message,
            self.details
                .map_or(JsValue::UNDEFINED, |d| super::view::to_js(&d)),
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
                Some(Details::field(field))
            }
            CoreError::PlanConflict { id }
            | CoreError::NotFound { id }
            | CoreError::LeaseExpired { id }
            | CoreError::NotReady { id }
            | CoreError::InFlight { id }
            | CoreError::NotRetryable { id, .. }
            | CoreError::EventExpired { id, .. }
            | CoreError::RevisionConflict { id, .. } => Some(Details::id(id.as_str())),
            CoreError::AlreadyTerminal { id, stage } => Some(Details {
                stage: Some(stage.as_str()),
                ..Details::id(id.as_str())
            }),
            _ => None,
        };
        ApiError {
            code: e.code(),
            message: e.to_string(),
            details: details.map(Box::new),
            cause: None,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::Core(core) => core.into(),
            StoreError::VersionTooNew { found, supported } => {
                ApiError::coded(e.code(), e.to_string()).with_details(Details {
                    found: Some(found),
                    supported: Some(supported),
                    ..Details::default()
                })
            }
            StoreError::Corrupt { ref id, .. } => {
                let d = Details::id(id.as_str());
                ApiError::coded(e.code(), e.to_string()).with_details(d)
            }
            other => ApiError::coded(other.code(), other.to_string()),
        }
    }
}

impl From<EventError> for ApiError {
    fn from(e: EventError) -> ApiError {
        let details = Details {
            field: e.field(),
            ..Details::reason(e.reason())
        };
        ApiError::coded(e.code(), e.to_string()).with_details(details)
    }
}

impl From<RelayUrlError> for ApiError {
    fn from(e: RelayUrlError) -> ApiError {
        ApiError::coded(e.code(), e.to_string())
    }
}

impl From<TargetsError> for ApiError {
    fn from(e: TargetsError) -> ApiError {
        ApiError::coded(e.code(), e.to_string()).with_details(Details::index(e.index))
    }
}

impl From<WsConfigError> for ApiError {
    fn from(e: WsConfigError) -> ApiError {
        ApiError::coded(e.code(), e.to_string()).with_details(Details::field(e.field))
    }
}
