//! The signed event as the outbox keeps it: opaque to the state machine, which only
//! needs its id (the idempotency key), the exact bytes to resend, and its NIP-40
//! expiration. The Nostr layer builds envelopes from parsed, verified events.

use serde::{Deserialize, Serialize};

/// A signed Nostr event, kept exactly as enqueued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventEnvelope {
    /// The event id: 64 lowercase hex characters (sha256 of the NIP-01 serialization).
    pub id: String,
    /// The event's JSON text exactly as it will be sent in `["EVENT", <raw>]`.
    pub raw: String,
    /// The NIP-40 `expiration` tag, in unix seconds, when present.
    pub expiration: Option<u64>,
}
