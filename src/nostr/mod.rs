//! Everything the outbox must know about Nostr: NIP-01 events (parse, id, signature),
//! relay URLs, relay messages, NIP-42 AUTH and NIP-40 expiration. Pure: no I/O, no
//! clock (times come in as arguments), no panics on any input.
//!
//! - [`event`]: [`Event`] parsing, canonical id, BIP-340 verification, expiration.
//! - [`relay_url`]: [`RelayUrl`] parsing/normalization and target de-duplication.
//! - [`message`]: [`RelayMessage`] parsing, [`classify_ok`], client message builders.
//! - [`auth`]: the NIP-42 AUTH event template and the check of the signed answer.
//! - [`error`]: the typed errors, each with a stable `code()`.

pub mod auth;
mod batch;
pub mod error;
pub mod event;
pub mod message;
pub mod relay_url;
mod schnorr;

pub use auth::{auth_template, check_auth_event, AUTH_KIND};
pub use error::{AuthError, EventError, RelayUrlError, TargetsError};
pub use event::{verify_event_json, Event, SignatureCheck, MAX_CREATED_AT};
pub use message::{
    auth_message, classify_ok, close_message, event_message, is_auth_required, req_by_ids,
    RelayMessage, DEFAULT_MAX_MESSAGE_LEN,
};
pub use relay_url::{normalize_targets, RelayUrl, MAX_RELAY_URL_LEN};
