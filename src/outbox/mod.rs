//! The outbox service: what an `enqueue` does besides storing, and what each answer
//! tells the app. Platform-neutral; the runtime it runs in is behind [`Host`], so the
//! rules are tested natively (`tests/flush/enqueue.rs`) as `core` is.
//!
//! [`enqueue`] of a batch of plans, in this order:
//! 1. the time rule: a plan with no time of its own waits for its event's `created_at`
//!    (relays refuse events from the future) and for the outbox's undo window
//!    (`holdMs`) ([`Plan::hold_until_created_at`]);
//! 2. NIP-70: a protected event whose author is not the signer's key is refused
//!    ([`Host::foreign_author`]: it could only be sent where its author authenticates);
//! 3. while a `high` plan is written the host holds a running flush's bulk
//!    transactions back ([`Host::hold`]), so its claim need not queue behind one;
//! 4. the store writes the batch all or nothing, and checks the events' signatures
//!    while its transaction waits ([`Store::enqueue_many_checked`]): a bad signature
//!    writes nothing;
//! 5. when records were created, the host wakes the flusher, told how many must not
//!    wait behind a backlog ([`Host::created`]: neither `low` nor born terminal).
//!
//! Then [`told`] says which events each answer dispatches, and [`tell`] which event
//! each of the flusher's reports dispatches. The JavaScript layer only
//! converts: plans from the app's values, answers and events to JavaScript values, and
//! [`EnqueueError`] to an `Error` with its stable code.

use crate::core::{CoreError, EnqueueOutcome, Enqueued, Plan, Priority, Record};
use crate::flush::FlushEvent;
use crate::nostr::{EventError, SignatureCheck};
use crate::store::{Progress, Store, StoreError};

/// What the service needs from the runtime it runs in: the flusher's scheduling and
/// the app's signer.
#[allow(async_fn_in_trait)]
pub trait Host {
    /// Kept while `high` records are written; dropping it lets the flusher go on.
    type Hold;

    /// Holds a running flush's bulk transactions back until the answer is dropped.
    fn hold(&self) -> Self::Hold;

    /// Records were created; `urgent` of them must not wait behind a backlog: a run in
    /// progress claims them at once, and an auto-flushing outbox starts a run.
    fn created(&self, urgent: u32);

    /// Of `authors` (one per plan: the pubkey of a protected event, `""` for any other),
    /// the index of the first that is not the signer's key, when the signer can tell.
    /// Asked only when a plan is protected. `None`: all the signer's, or it cannot tell
    /// (no signer, offline): the transport's rule still holds when it is sent.
    async fn foreign_author(&self, authors: &[&str]) -> Option<usize>;
}

/// Why an enqueue wrote nothing. `index` is the batch item it is about, when the
/// caller asked for indices (`enqueueMany`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueError {
    /// A plan breaks a rule of the state machine (the time rule).
    Core {
        /// Why.
        error: CoreError,
        /// The item.
        index: Option<usize>,
    },
    /// The store refused the batch, or failed.
    Store(StoreError),
    /// An event's signature does not verify (or its id is not its hash).
    Signature {
        /// Why (`None` from a store that refused the batch without asking).
        error: Option<EventError>,
        /// The item.
        index: Option<usize>,
    },
    /// A protected event (NIP-70) signed by another key than the signer's.
    Protected {
        /// The item.
        index: Option<usize>,
    },
}

impl From<StoreError> for EnqueueError {
    fn from(error: StoreError) -> EnqueueError {
        EnqueueError::Store(error)
    }
}

/// Enqueues `plans` all or nothing, as the module's steps say. `signatures[i]` is the
/// check of `plans[i]`'s event (`None`: a draft, or already checked, as in an import);
/// it may be shorter than `plans`. With `indexed`, errors name their item.
#[allow(clippy::too_many_arguments)]
pub async fn enqueue<S: Store + ?Sized, H: Host>(
    store: &S,
    host: &H,
    now_ms: u64,
    hold_ms: Option<u64>,
    plans: Vec<Plan>,
    signatures: &[Option<SignatureCheck>],
    indexed: bool,
    progress: Option<Progress>,
) -> Result<Vec<Enqueued>, EnqueueError> {
    let at = |i: usize| indexed.then_some(i);
    let undo_until = hold_ms.map(|ms| now_ms.saturating_add(ms));
    let mut held = Vec::with_capacity(plans.len());
    for (i, plan) in plans.into_iter().enumerate() {
        match plan.hold_until_created_at(now_ms, undo_until) {
            Ok(plan) => held.push(plan),
            Err(error) => {
                return Err(EnqueueError::Core {
                    error,
                    index: at(i),
                })
            }
        }
    }
    let plans = held;
    if plans.iter().any(|p| protected_author(p).is_some()) {
        let authors: Vec<&str> = plans
            .iter()
            .map(|p| protected_author(p).unwrap_or(""))
            .collect();
        if let Some(i) = host.foreign_author(&authors).await {
            return Err(EnqueueError::Protected { index: at(i) });
        }
    }
    let mut failed = None;
    let mut check = || {
        failed = SignatureCheck::first_bad_of(signatures);
        failed.is_none()
    };
    let _hold = plans
        .iter()
        .any(|p| p.priority == Priority::High)
        .then(|| host.hold());
    let answers = store
        .enqueue_many_checked(plans, now_ms, &mut check, progress)
        .await?;
    let Some(answers) = answers else {
        let (index, error) = failed.map_or((None, None), |(i, e)| (at(i), Some(e)));
        return Err(EnqueueError::Signature { error, index });
    };
    let created = |a: &&Enqueued| a.outcome == EnqueueOutcome::Created;
    if answers.iter().any(|a| created(&a)) {
        // (An imported record may arrive terminal: nothing to hurry for it.)
        let urgent = answers
            .iter()
            .filter(created)
            .filter(|a| a.record.priority != Priority::Low && !a.record.is_terminal())
            .count();
        host.created(u32::try_from(urgent).unwrap_or(u32::MAX));
    }
    Ok(answers)
}

/// The author of `plan`'s event when it is protected (NIP-70).
fn protected_author(plan: &Plan) -> Option<&str> {
    let meta = plan.event.meta.as_ref().filter(|m| m.protected)?;
    Some(meta.pubkey.as_str())
}

/// The events one enqueue answer dispatches, in order: for its own record (the
/// answer's) `enqueued` when created or `superseded` when born superseded (a newer
/// version is held), none for a replay; then `superseded` for each record it withdrew
/// (a newer version, a deletion). Each record event is followed by `change`.
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
