//! The signed event as the outbox keeps it: opaque to the state machine, which only
//! needs its id (the idempotency key), the exact bytes to resend, its NIP-40
//! expiration and, for the queue's Nostr rules ([`super::semantics`]), a few header
//! fields ([`EventMeta`]). The Nostr layer builds envelopes from parsed, verified events.

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
    /// The header fields the queue's Nostr rules read (kind, author, time, `d` tag,
    /// deletion references). `None` for an envelope built without them (by hand, or
    /// stored by a build before 0.2 and not migrated yet): such an event is treated as
    /// a regular one, superseding and deleting nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<EventMeta>,
}

/// What the queue's Nostr rules need of an event, read from it by the Nostr layer
/// (`nostr::Event::to_envelope`). Kept in the record document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventMeta {
    /// The author: 64 lowercase hex characters.
    pub pubkey: String,
    /// The event kind.
    pub kind: u16,
    /// The event's `created_at`, unix seconds.
    pub created_at: u64,
    /// The value of the first `d` tag (`""` when there is none). Kept for addressable
    /// kinds (30000–39999) only.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub d: String,
    /// A kind-5 deletion's `e` tags: the ids of the events it asks to delete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deletes_ids: Vec<String>,
    /// A kind-5 deletion's `a` tags: the addresses (`kind:pubkey:d`) it asks to delete,
    /// every version up to the deletion's `created_at`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deletes_addresses: Vec<String>,
    /// A NIP-70 protected event (a `["-"]` tag): sent only to relays where its author
    /// has authenticated (NIP-42).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub protected: bool,
    /// A kind-62 request to vanish's `relay` tags (NIP-62), as written: relay URLs, or
    /// [`crate::core::semantics::ALL_RELAYS`]. Not stored: the rule acts when the
    /// request is enqueued, from the event just read.
    #[serde(skip)]
    pub vanish_relays: Vec<String>,
}
