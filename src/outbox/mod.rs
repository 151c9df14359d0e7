//! The outbox service: an enqueue's steps in their order ([`enqueue`]), and which
//! events each enqueue answer ([`told`]) and each flusher report ([`tell`]) dispatch.
//! Platform-neutral: the runtime it needs (a signer to ask, a running flush to hold
//! back, a flusher to wake, the shape of its errors) is the [`Host`] trait, and the time
//! is an argument, so it is tested natively (`tests/flush/enqueue.rs`) as `core` is. The
//! JavaScript layer (`src/js/outbox.rs`) converts arguments into plans, implements
//! [`Host`], and converts answers and events (docs/FLUSH.md).
//!
//! An enqueue's steps, in order:
//! 1. the time rule ([`crate::core::Plan::hold_until_created_at`]): a plan with no time
//!    of its own waits for its event's `created_at` (relays refuse events from the
//!    future) and for the undo window (`holdMs`);
//! 2. NIP-70: a protected event of another key than the signer's is refused (it could
//!    only be sent where its author authenticates); the signer is asked only when a
//!    plan is protected, and one that cannot tell lets it in;
//! 3. a running flush is held back from starting a bulk transaction while a `high`
//!    plan is written, so its claim need not queue behind one;
//! 4. the store's all-or-nothing write, with the signatures checked while its
//!    transaction waits ([`crate::store::Store::enqueue_many_checked`]): a bad one
//!    writes nothing;
//! 5. the flusher woken when records were created, told how many of them must not
//!    wait behind a backlog (not `low`, not terminal).
//!
//! Each step's refusal names its item (`indexed`, an `enqueueMany`) and leaves the store
//! as it was.
//!
//! An import's batches (`importLines`: [`enqueue`] per batch of 50, halved while one
//! commit of the storage cannot hold a batch) stay in the JavaScript layer: written
//! here over [`Host`] they measured 365 B more of gzipped browser `.wasm`, which is at
//! its cap.

use std::future::Future;

use crate::core::{CoreError, EnqueueOutcome, Enqueued, Plan, Priority, Record};
use crate::flush::FlushEvent;
use crate::nostr::{EventError, SignatureCheck};
use crate::store::{Progress, Store, StoreError};

/// What the service needs of the runtime it runs in.
pub trait Host {
    /// The runtime's error: the service's refusals convert into it.
    type Error: From<CoreError> + From<StoreError> + From<EventError>;
    /// Held while a `high` plan is written ([`Host::hold_flush`]); dropping it lets a
    /// running flush go on.
    type Hold;
    /// Of `authors` (one per plan, `""` for a plan that is not protected), the index of
    /// the first that is not the signer's key; `None` when every one is, or when there
    /// is no signer or it cannot tell (offline).
    fn foreign_author<'a>(
        &self,
        authors: impl Iterator<Item = &'a str>,
    ) -> impl Future<Output = Option<usize>>;
    /// The refusal of a protected event of another author than the signer's.
    fn protected_refused(&self) -> Self::Error;
    /// `e`, about the plan at `index` (0-based) of an `enqueueMany`.
    fn at_item(e: Self::Error, index: usize) -> Self::Error;
    /// Holds a running flush back from starting a bulk transaction until the guard drops.
    fn hold_flush(&self) -> Self::Hold;
    /// Wakes the flusher after records were created; `urgent` of them must not wait
    /// behind a backlog.
    fn kick(&self, urgent: u32);
}

/// One enqueue: plans, the signatures to check (one per plan, `None` for a draft or a
/// plan whose signature was checked already), and how to tell its progress.
pub struct Enqueue<'a> {
    /// The time of the enqueue, unix ms.
    pub now_ms: u64,
    /// The undo window every plan without a time of its own gets (`holdMs`).
    pub hold_ms: Option<u64>,
    /// The plans, written all or nothing.
    pub plans: Vec<Plan>,
    /// The signatures to check, by plan.
    pub signatures: &'a [Option<SignatureCheck>],
    /// A refusal names its plan's index ([`Host::at_item`]): an `enqueueMany`.
    pub indexed: bool,
    /// Told `(done, total)` while the storage takes the writes.
    pub progress: Option<Progress>,
}

/// The steps of one enqueue (the module's documentation), over `store`: the answers,
/// one per plan in order, or the first refusal with nothing written.
pub async fn enqueue<S: Store, H: Host>(
    store: &S,
    host: &H,
    request: Enqueue<'_>,
) -> Result<Vec<Enqueued>, H::Error> {
    let Enqueue {
        now_ms,
        hold_ms,
        plans,
        signatures,
        indexed,
        progress,
    } = request;
    let about = |e: H::Error, index: usize| {
        if indexed {
            H::at_item(e, index)
        } else {
            e
        }
    };
    let undo_until = hold_ms.map(|ms| now_ms.saturating_add(ms));
    let mut held = Vec::with_capacity(plans.len());
    for (i, plan) in plans.into_iter().enumerate() {
        match plan.hold_until_created_at(now_ms, undo_until) {
            Ok(plan) => held.push(plan),
            Err(e) => return Err(about(e.into(), i)),
        }
    }
    let plans = held;
    let protected = |p: &Plan| p.event.meta.as_ref().is_some_and(|m| m.protected);
    if plans.iter().any(protected) {
        let authors = plans.iter().map(|p| match &p.event.meta {
            Some(m) if m.protected => m.pubkey.as_str(),
            _ => "",
        });
        if let Some(i) = host.foreign_author(authors).await {
            return Err(about(host.protected_refused(), i));
        }
    }
    let _hold = plans
        .iter()
        .any(|p| p.priority == Priority::High)
        .then(|| host.hold_flush());
    let mut failed = None;
    let mut check = || {
        failed = SignatureCheck::first_bad_of(signatures);
        failed.is_none()
    };
    let answers = store
        .enqueue_many_checked(plans, now_ms, &mut check, progress)
        .await?;
    let Some(answers) = answers else {
        let (i, e) = failed.unwrap_or((
            0,
            EventError::BadSignature {
                reason: "does not verify for this id and pubkey",
            },
        ));
        return Err(about(e.into(), i));
    };
    let mut created = answers
        .iter()
        .filter(|a| a.outcome == EnqueueOutcome::Created)
        .peekable();
    if created.peek().is_some() {
        // (An imported record may arrive terminal: nothing to hurry for it.)
        let urgent = created
            .filter(|a| a.record.priority != Priority::Low && !a.record.is_terminal())
            .count();
        host.kick(u32::try_from(urgent).unwrap_or(u32::MAX));
    }
    Ok(answers)
}

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
