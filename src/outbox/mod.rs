//! The outbox service's rules on what the app is told: which events each enqueue answer
//! ([`told`]) and each flusher report ([`tell`]) dispatch. Pure and platform-neutral,
//! tested natively (`tests/flush/enqueue.rs`) as `core` is; the JavaScript layer
//! dispatches them and converts the records.
//!
//! An `enqueue`'s own steps stay in `src/js/outbox.rs`, in order: the time rule
//! ([`crate::core::Plan::hold_until_created_at`]: a plan with no time of its own waits
//! for its event's `created_at` and for the undo window); NIP-70 (a protected event of
//! another key than the signer's is refused, asked of the signer); a running flush held
//! back while a `high` plan is written; the store's all-or-nothing write with the
//! signatures checked while its transaction waits
//! ([`crate::store::Store::enqueue_many_checked`]); the flusher woken; the events.
//! Why they are not here: as one async service behind a trait of the runtime (with its
//! own error type) they were built and measured at 555 B more of gzipped browser
//! `.wasm`, and as pure functions for each step at 198 B more, than the same steps
//! written once in the API layer, in a build at its size budget.

use crate::core::{EnqueueOutcome, Enqueued, Record};
use crate::flush::FlushEvent;

/// The events one enqueue answer dispatches, in order: for its own record (the
/// answer's) `enqueued` when created or `superseded` when born superseded (a newer
/// version is held), none for a replay; then `superseded` for each record it withdrew
/// (a newer version, a deletion, a request to vanish). Each record event is followed by
/// `change`.
pub fn told(
    answer: &Enqueued,
) -> (
    Option<&'static str>,
    impl Iterator<Item = (&'static str, &Record)>,
) {
    let own = match answer.outcome {
        EnqueueOutcome::Created => Some("enqueued"),
        EnqueueOutcome::Superseded => Some("superseded"),
        EnqueueOutcome::Replay => None,
    };
    (own, answer.withdrawn.iter().map(|r| ("superseded", r)))
}

/// How the app hears of one of the flusher's reports ([`tell`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tell<'a> {
    /// A record event `name` (then `change`) with the record as stored; `ends_attempt`
    /// when it ends one of a `flush()` call's attempts (its `progress` counts it).
    Record {
        /// The event's name.
        name: &'static str,
        /// The record as stored.
        record: &'a Record,
        /// The report ends an attempt.
        ends_attempt: bool,
    },
    /// `change` alone: only the record's stage, lease or due time changed (handed back
    /// unattempted, or due at once because its relay answered again).
    Change(&'a Record),
    /// Nothing (a claim lost to another flusher: the winner tells).
    Nothing,
}

/// The event a flusher report dispatches: `attempt`, `delivered`, `retrying`,
/// `exhausted`, `settled`, `signed`, or `change` alone.
pub fn tell<'a>(report: &FlushEvent<'a>) -> Tell<'a> {
    let (name, record, ends_attempt) = match *report {
        FlushEvent::AttemptStarted { record, .. } => ("attempt", record, false),
        FlushEvent::Delivered { record } => ("delivered", record, true),
        FlushEvent::Retrying { record } => ("retrying", record, true),
        FlushEvent::Exhausted { record } => ("exhausted", record, true),
        FlushEvent::Settled { record } => ("settled", record, true),
        FlushEvent::Superseded { record } => ("superseded", record, true),
        FlushEvent::Signed { record } => ("signed", record, false),
        FlushEvent::Released { record } | FlushEvent::Woken { record } => {
            return Tell::Change(record)
        }
        FlushEvent::LostClaim { .. } => return Tell::Nothing,
    };
    Tell::Record {
        name,
        record,
        ends_attempt,
    }
}
