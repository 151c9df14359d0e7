//! Everything the outbox must know about Nostr: NIP-01 events (parse, id, signature),
//! relay URLs, relay messages, NIP-42 AUTH and NIP-40 expiration. Pure: no I/O, no
//! clock (times come in as arguments), no panics on any input.
//!
//! - [`event`]: [`Event`] parsing, canonical id, BIP-340 verification, expiration.
//! - [`relay_url`]: [`RelayUrl`] parsing/normalization and target de-duplication.
//! - [`message`]: [`RelayMessage`] parsing, [`classify_ok`], client message builders.
//! - [`template`]: drafts: the unsigned [`template::Template`], the check of its
//!   signed answer, NIP-13 mining.
//! - [`auth`]: the NIP-42 AUTH event template and the check of the signed answer.
//! - [`error`]: the typed errors, each with a stable `code()`.

pub mod auth;
mod batch;
pub mod error;
pub mod event;
pub mod message;
pub mod relay_url;
mod schnorr;
pub mod template;

/// What the fuzz targets (`fuzz/`) call: the batch and the single check, on decoded
/// bytes. Built only by `cargo fuzz` (`--cfg fuzzing`); not part of the API.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    /// The batch's verdict on `(id, pubkey, sig)` triples, through its entry point.
    pub fn batch_verifies(items: &[([u8; 32], [u8; 32], [u8; 64])]) -> bool {
        let hex = |bytes: &[u8]| -> String { bytes.iter().map(|b| format!("{b:02x}")).collect() };
        let encoded: Vec<(String, String, String)> = items
            .iter()
            .map(|(id, x, sig)| (hex(id), hex(x), hex(sig)))
            .collect();
        super::batch::all_verify(
            encoded
                .iter()
                .map(|(id, x, sig)| (id.as_str(), x.as_str(), sig.as_str())),
        )
    }

    /// The single check's verdict (with the key's table once it has one).
    pub fn single_verifies(id: &[u8; 32], pubkey: &[u8; 32], sig: &[u8; 64]) -> bool {
        super::schnorr::verify(id, pubkey, sig).is_ok()
    }
}

pub use auth::{auth_template, check_auth_event, AUTH_KIND};
pub use error::{AuthError, EventError, RelayUrlError, TargetsError};
pub use event::{newer_version, verify_event_json, Event, SignatureCheck, MAX_CREATED_AT};
pub use message::{
    auth_message, classify_ok, close_message, event_message, is_auth_required, req_by_ids,
    req_newest, RelayMessage, DEFAULT_MAX_MESSAGE_LEN,
};
pub use relay_url::{normalize_targets, RelayUrl, MAX_RELAY_URL_LEN};
