//! Publishing events to relays: the [`Transport`] trait, the deterministic
//! [`scripted::ScriptedTransport`] for tests and, on wasm32, the browser WebSocket
//! relay transport. A transport sends the event's exact bytes and classifies the
//! answer; it never retries and never touches a store.

use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};

use crate::core::{EventEnvelope, Outcome};

pub mod scripted;
#[cfg(target_arch = "wasm32")]
pub mod websocket;

pub use scripted::ScriptedTransport;

/// The app's signer (the NIP-07 `signEvent` shape): it signs NIP-42 AUTH events for the
/// transport and drafts for the flusher (`crate::flush::sign`). The app's key, never
/// the outbox's.
pub trait Signer {
    /// Signs an unsigned template, JSON text (`kind`, `created_at`, `tags`, `content`,
    /// and for a draft `pubkey`), and returns the signed event as JSON text (with `id`,
    /// `pubkey`, `sig`). An error is the signer's message (a throw or a rejection).
    fn sign(&self, template: String) -> LocalBoxFuture<'static, Result<String, String>>;

    /// Mines the NIP-13 nonce of `template` (the JSON [`Signer::sign`] is given, with
    /// its `nonce` tag) away from the thread that flushes, for at most `ms`: the nonce,
    /// `Ok(None)` when none was found in time, `Err` when this signer's runtime has no
    /// such place (the default: the flush then mines itself, in slices that yield).
    fn mine(
        &self,
        _template: String,
        _ms: u64,
    ) -> LocalBoxFuture<'static, Result<Option<u64>, ()>> {
        Box::pin(async { Err(()) })
    }
}

/// What one publish of one event to one relay produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishReport {
    /// The typed outcome.
    pub outcome: Outcome,
    /// The relay's `OK` message, or a description of the transport failure.
    pub message: String,
}

impl PublishReport {
    /// A report with this outcome and message.
    pub fn new(outcome: Outcome, message: impl Into<String>) -> PublishReport {
        PublishReport {
            outcome,
            message: message.into(),
        }
    }
}

/// Sends a signed event to a relay and reports its answer. Implementations must
/// resolve (with `Timeout` or `Unreachable` when the relay does not answer) and must
/// send `event.raw` unchanged. Futures need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait Transport {
    /// Publishes `event` to `relay` once and reports the outcome.
    async fn publish(&self, relay: &str, event: &EventEnvelope) -> PublishReport;

    /// The device's network came back (the `online` event): forget what being offline
    /// caused (open circuits, counted connection failures) so the next publish tries
    /// at once. Rate-limit pauses a relay asked for stay. Default: nothing to forget.
    fn network_restored(&self) {}

    /// The relays (as published to) that answered again after a failed connection
    /// since the last call; each once. The flusher then makes the records waiting for
    /// them due at once ([`crate::store::Store::relay_back`]). Default: none.
    fn take_recovered(&self) -> Vec<String> {
        Vec::new()
    }

    /// The relays (as published to) whose last connection failed and that have not
    /// answered since. While records wait, an auto-flushing outbox probes them
    /// ([`Transport::probe`]) more often than the records retry. Default: none.
    fn unreachable(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether `relay` holds the event `event_id`, asked with a `REQ` by id until its
    /// `EOSE` (read-back, after an answer that left it unclear): `Some(true)` when the
    /// relay sent the event back, `Some(false)` when it ended its stored events without
    /// it, `None` when it could not tell (unreachable, `CLOSED`, no `EOSE` in time).
    /// Default: `None` (the event is sent again).
    async fn holds(&self, _relay: &str, _event_id: &str) -> Option<bool> {
        None
    }

    /// Tries to connect to `relay` without publishing anything, ignoring an open
    /// circuit; true when the connection opened. A relay that opens counts as
    /// answering again ([`Transport::take_recovered`]). Default: `false`.
    async fn probe(&self, _relay: &str) -> bool {
        false
    }
}
