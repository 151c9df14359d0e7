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
/// the outbox's. It may also hold the app's resolver of routing intents
/// ([`Signer::resolve`]): the helpers that prepare a record before it is published.
pub trait Signer {
    /// What it prepares: [`crate::core::NEEDS_SIGNER`] (it signs; the default) and
    /// [`crate::core::NEEDS_RESOLVER`] (it resolves routes).
    fn can(&self) -> u8 {
        crate::core::NEEDS_SIGNER
    }

    /// Resolves the routing intents `route` (`outbox`, `inbox`, `dm`, in order) of the
    /// event or draft `event` (its JSON text), as lines: first why it cannot be sent (a
    /// `dm` recipient without DM relays: the record's `last_error`, as it is; the
    /// intents after it are not asked), or an empty line; then one line per relay
    /// chosen, `<relay>\t<why>` (the evidence's words: the intent and the resolver's
    /// reason). An error is the resolver's message: it could not tell (asked again
    /// later).
    fn resolve(
        &self,
        _route: &[String],
        _event: &str,
    ) -> LocalBoxFuture<'static, Result<String, String>> {
        Box::pin(async { Err("no resolver".into()) })
    }

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

/// The first spacing of a relay's `EVENT`s after a `rate-limited:` answer (ms).
pub const PACE_FIRST_MS: f64 = 100.0;
/// The widest spacing of a relay's `EVENT`s (ms).
pub const PACE_MAX_MS: f64 = 2_000.0;
/// The spacing is raised at most once in this long (ms): the refusals of one window of
/// publishes in flight, which all went out before the first refusal came back, count once.
pub const PACE_RAISE_EVERY_MS: f64 = 1_000.0;
/// The spacing halves every this long without a raise (ms), and is none below 10 ms.
pub const PACE_HALF_LIFE_MS: f64 = 60_000.0;

/// Per-relay pacing of `EVENT`s, slowed by the relay's `rate-limited:` answers.
///
/// None at first. A `rate-limited:` answer sets the spacing to [`PACE_FIRST_MS`], or
/// doubles it up to [`PACE_MAX_MS`], at most once per [`PACE_RAISE_EVERY_MS`]; it
/// halves every [`PACE_HALF_LIFE_MS`] without a raise and is none again below 10 ms.
/// While it is set, publishes take turns that far apart ([`Pace::turn`]). So a relay
/// that takes 20 events a second, after refusing a burst, gets 10 a second for a minute,
/// 20 the next (refusing again if that is too many), and so on: it recovers slowly,
/// because each refused record waits at least 30 s
/// ([`crate::core::RetryConfig::rate_limit_min_ms`]). Pure: the caller gives the time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pace {
    /// The spacing when last raised (ms; 0: none).
    spacing_ms: f64,
    /// When it was last raised (unix ms).
    raised_at: f64,
    /// When the next `EVENT` may go (unix ms).
    next_at: f64,
}

impl Pace {
    /// The spacing at `now` (ms; 0: none).
    pub fn spacing_at(&self, now: f64) -> f64 {
        let mut spacing = self.spacing_ms;
        let mut since = now - self.raised_at;
        while since >= PACE_HALF_LIFE_MS && spacing >= 10.0 {
            spacing *= 0.5;
            since -= PACE_HALF_LIFE_MS;
        }
        if spacing < 10.0 {
            0.0
        } else {
            spacing
        }
    }

    /// Takes the relay's answer at `now` into account: only `rate-limited:` changes it.
    pub fn answered(&mut self, now: f64, rate_limited: bool) {
        let spacing = self.spacing_at(now);
        if !rate_limited || (spacing > 0.0 && now - self.raised_at < PACE_RAISE_EVERY_MS) {
            return;
        }
        self.spacing_ms = (spacing * 2.0).clamp(PACE_FIRST_MS, PACE_MAX_MS);
        self.raised_at = now;
    }

    /// This publish's turn at `now`: how long it waits before sending (ms; 0: at once),
    /// its turn taken; `None` (no turn taken) when that wait would be longer than
    /// `within_ms`: the publish is then answered `RateLimited` without being sent.
    pub fn turn(&mut self, now: f64, within_ms: f64) -> Option<f64> {
        let spacing = self.spacing_at(now);
        if spacing == 0.0 {
            return Some(0.0);
        }
        let at = self.next_at.max(now);
        if at - now > within_ms {
            return None;
        }
        self.next_at = at + spacing;
        Some(at - now)
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

    /// Whether `relay` holds the event `event_id`, asked with a `REQ` by id until the
    /// event or the `EOSE` comes (read-back, after an answer that left it unclear):
    /// `Some(true)` when the relay sent the event back, `Some(false)` when it ended its
    /// stored events without it, `None` when it could not tell (unreachable, `CLOSED`,
    /// neither in time).
    /// Default: `None` (the event is sent again).
    async fn holds(&self, _relay: &str, _event_id: &str) -> Option<bool> {
        None
    }

    /// A version of the replaceable or addressable `event` newer than it that `relay`
    /// holds, as `(id, created_at)`: asked with a `REQ` for the author's newest version
    /// (`limit: 1`) until `EOSE`, the answer checked ([`crate::nostr::newer_version`]).
    /// `None` when it holds none, or cannot tell (unreachable, `CLOSED`, no `EOSE` in
    /// time): the event is then sent. Default: `None`.
    async fn newer(&self, _relay: &str, _event: &EventEnvelope) -> Option<(String, u64)> {
        None
    }

    /// Tries to connect to `relay` without publishing anything, ignoring an open
    /// circuit; true when the connection opened. A relay that opens counts as
    /// answering again ([`Transport::take_recovered`]). Default: `false`.
    async fn probe(&self, _relay: &str) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::{Pace, PACE_FIRST_MS, PACE_HALF_LIFE_MS, PACE_MAX_MS, PACE_RAISE_EVERY_MS};

    #[test]
    fn pacing_is_raised_once_per_window_of_refusals() {
        let mut pace = Pace::default();
        // None until a relay says `rate-limited:`: every turn is at once.
        pace.answered(0.0, false);
        assert_eq!(pace.turn(0.0, 10_000.0), Some(0.0));
        // Forty refusals of one burst in flight count once.
        for ms in 0..40 {
            pace.answered(1_000.0 + f64::from(ms), true);
        }
        assert_eq!(pace.spacing_at(1_040.0), PACE_FIRST_MS);
        // Refusals a window apart double it, up to the widest.
        let mut seen = Vec::new();
        for i in 1..=6 {
            pace.answered(1_000.0 + f64::from(i) * PACE_RAISE_EVERY_MS, true);
            seen.push(pace.spacing_at(1_000.0 + f64::from(i) * PACE_RAISE_EVERY_MS));
        }
        assert_eq!(
            seen,
            [200.0, 400.0, 800.0, 1_600.0, PACE_MAX_MS, PACE_MAX_MS]
        );
    }

    #[test]
    fn pacing_recovers_by_halves_with_time_and_ends() {
        let mut pace = Pace::default();
        pace.answered(0.0, true);
        pace.answered(PACE_RAISE_EVERY_MS, true);
        assert_eq!(pace.spacing_at(PACE_RAISE_EVERY_MS), 200.0);
        // Accepted answers change nothing; time does.
        pace.answered(5_000.0, false);
        let t0 = PACE_RAISE_EVERY_MS;
        assert_eq!(pace.spacing_at(t0 + PACE_HALF_LIFE_MS - 1.0), 200.0);
        assert_eq!(pace.spacing_at(t0 + PACE_HALF_LIFE_MS), 100.0);
        assert_eq!(pace.spacing_at(t0 + 4.0 * PACE_HALF_LIFE_MS), 12.5);
        assert_eq!(
            pace.spacing_at(t0 + 5.0 * PACE_HALF_LIFE_MS),
            0.0,
            "none below 10 ms"
        );
        // A refusal after it ended starts again from the first spacing.
        pace.answered(t0 + 6.0 * PACE_HALF_LIFE_MS, true);
        assert_eq!(pace.spacing_at(t0 + 6.0 * PACE_HALF_LIFE_MS), PACE_FIRST_MS);
        // A refusal after a half-life doubles what is left, not the old spacing.
        let mut pace = Pace::default();
        pace.answered(0.0, true);
        pace.answered(PACE_HALF_LIFE_MS, true);
        assert_eq!(pace.spacing_at(PACE_HALF_LIFE_MS), PACE_FIRST_MS);
    }

    #[test]
    fn turns_are_spaced_and_one_too_far_away_is_not_taken() {
        let mut pace = Pace::default();
        pace.answered(0.0, true);
        // Three publishes at once: at once, 100 ms later, 200 ms later.
        let turns: Vec<_> = (0..3).map(|_| pace.turn(10.0, 250.0)).collect();
        assert_eq!(turns, [Some(0.0), Some(100.0), Some(200.0)]);
        // The next would wait 300 ms, more than it may: not taken, so the one after
        // it, later, is not pushed back by it.
        assert_eq!(pace.turn(10.0, 250.0), None);
        assert_eq!(pace.turn(110.0, 250.0), Some(200.0));
        // A publish long after the last turn goes at once.
        assert_eq!(pace.turn(5_000.0, 250.0), Some(0.0));
    }
}
