//! The stored shape of an outbox item: [`Record`], its [`Stage`], [`Lease`],
//! append-only [`Evidence`] and terminal [`StopReason`], plus read-only derivations
//! (latest evidence per target, settled state, readiness, claim order). Transitions
//! live in [`super::machine`]; nothing here mutates a record.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::envelope::EventEnvelope;
use super::lane::{default_lane, is_default_lane_str, Priority};
use super::outcome::Outcome;
use super::plan::effective_deadline;
use super::policy::{Policy, Satisfaction, TargetState};

/// Where a record is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Waiting to be prepared ([`Record::needs`]): a draft ([`Record::is_draft`]), an
    /// unsigned event template waiting for the outbox's signer, or a route waiting for
    /// its resolver. Claimed only by a flusher that can prepare it
    /// ([`super::ClaimRequest::prepare`]), when due; resolved, signed, verified and
    /// stored signed before any relay sees it, it becomes `pending`. A signer or a
    /// resolver that is unreachable or times out brings it back here with a backoff (no
    /// attempt counted).
    Draft,
    /// Enqueued, never attempted (or re-armed before any attempt): claimable when due.
    Pending,
    /// A flusher holds a lease. Claimable again once the lease expires.
    Leased,
    /// At least one attempt made; claimable again from its retry time.
    Retryable,
    /// The policy's verdict is in ([`Record::satisfaction`] is `satisfied`, or
    /// `exhausted` when it can no longer be met) and delivery goes on to the targets
    /// still open, until they settle or the record's deadline or attempt budget ends
    /// it; claimable again from its retry time, like `retryable`. A record enqueued
    /// with [`Record::stop_when_satisfied`] never enters it.
    Delivering,
    /// Terminal: the policy is met and delivery is over (every target settled, or the
    /// budget or deadline ended delivery to the ones still open).
    Satisfied,
    /// Terminal: rejections, the attempt budget or the deadline ended it. `retry`
    /// re-arms it.
    Exhausted,
    /// Terminal: the application cancelled it.
    Cancelled,
    /// Terminal: a newer version of its replaceable or addressable event, or a NIP-09
    /// deletion of it, was enqueued before every target had it; it is not sent again
    /// (reason `superseded` or `deleted`, [`Record::superseded_by`] names the event).
    Superseded,
}

impl Stage {
    /// Every stage, in declaration order.
    pub const ALL: [Stage; 9] = [
        Stage::Draft,
        Stage::Pending,
        Stage::Leased,
        Stage::Retryable,
        Stage::Delivering,
        Stage::Satisfied,
        Stage::Exhausted,
        Stage::Cancelled,
        Stage::Superseded,
    ];

    /// The stages of a record that waits for its next attempt after one was made (its
    /// retry time in `due_ms`): what [`super::machine::relay_back`] may wake, and what a
    /// store reads for it.
    pub const AFTER_ATTEMPT: [Stage; 2] = [Stage::Retryable, Stage::Delivering];

    /// True for `satisfied`, `exhausted`, `cancelled` and `superseded`.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Stage::Satisfied | Stage::Exhausted | Stage::Cancelled | Stage::Superseded
        )
    }

    /// True while the record may still be sent: queued (`pending`, `leased`,
    /// `retryable`, `delivering`) or `exhausted` (which `retry` re-arms). A newer
    /// version or a deletion supersedes exactly these.
    pub fn may_send(self) -> bool {
        matches!(
            self,
            Stage::Draft
                | Stage::Pending
                | Stage::Leased
                | Stage::Retryable
                | Stage::Delivering
                | Stage::Exhausted
        )
    }

    /// The stage named `name` ([`Stage::as_str`]), if any.
    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The stable lowercase name used in JSON and JavaScript.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Draft => "draft",
            Stage::Pending => "pending",
            Stage::Leased => "leased",
            Stage::Retryable => "retryable",
            Stage::Delivering => "delivering",
            Stage::Satisfied => "satisfied",
            Stage::Exhausted => "exhausted",
            Stage::Cancelled => "cancelled",
            Stage::Superseded => "superseded",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a record stopped without being satisfied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// Terminal rejections made the policy impossible to meet.
    Rejected,
    /// The attempt budget ran out with the policy still unmet.
    MaxAttempts,
    /// The deadline or the event's NIP-40 expiration passed.
    Expired,
    /// The application cancelled the record.
    Cancelled,
    /// A newer version of the same replaceable or addressable event was enqueued.
    Superseded,
    /// A NIP-09 deletion of the event (same author) was enqueued.
    Deleted,
    /// The signer refused to sign the draft.
    SignerRefused,
    /// The signer answered with an event that is not the draft signed by its author:
    /// a bad id or signature, another pubkey, or fields changed.
    SignatureInvalid,
    /// The draft's NIP-13 proof of work was not found in the time allowed.
    PowUnfinished,
    /// A NIP-62 request to vanish (same author, from every relay of the record) was
    /// enqueued.
    Vanished,
    /// A target relay holds a newer version of this replaceable or addressable event
    /// (published from elsewhere), found before sending it there: evidence
    /// `rejected` / `newer` from that relay; `superseded_by` is the newer event's id.
    RemoteNewer,
    /// NIP-17: a recipient of its `dm` route has no kind 10050 list of DM relays; it
    /// is never sent elsewhere instead.
    RecipientNotReady,
    /// Its route resolved to no relay, and it has no target of its own.
    NoRelays,
}

impl StopReason {
    /// Every reason, in declaration order.
    pub const ALL: [StopReason; 13] = [
        StopReason::Rejected,
        StopReason::MaxAttempts,
        StopReason::Expired,
        StopReason::Cancelled,
        StopReason::Superseded,
        StopReason::Deleted,
        StopReason::SignerRefused,
        StopReason::SignatureInvalid,
        StopReason::PowUnfinished,
        StopReason::Vanished,
        StopReason::RemoteNewer,
        StopReason::RecipientNotReady,
        StopReason::NoRelays,
    ];

    /// True for the reasons of stage `superseded`: a newer version (queued, or held by
    /// a relay), a deletion or a request to vanish.
    pub fn supersedes(self) -> bool {
        matches!(
            self,
            StopReason::Superseded
                | StopReason::Deleted
                | StopReason::Vanished
                | StopReason::RemoteNewer
        )
    }

    /// The stable name used in JSON and JavaScript.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Rejected => "rejected",
            StopReason::MaxAttempts => "maxAttempts",
            StopReason::Expired => "expired",
            StopReason::Cancelled => "cancelled",
            StopReason::Superseded => "superseded",
            StopReason::Deleted => "deleted",
            StopReason::SignerRefused => "signerRefused",
            StopReason::SignatureInvalid => "signatureInvalid",
            StopReason::PowUnfinished => "powUnfinished",
            StopReason::Vanished => "vanished",
            StopReason::RemoteNewer => "remoteNewer",
            StopReason::RecipientNotReady => "recipientNotReady",
            StopReason::NoRelays => "noRelays",
        }
    }
}

/// An exclusive, expiring right of one flusher to make one attempt of a record.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The caller-chosen lease id (random, unique per claim).
    pub id: String,
    /// Who holds it (redacted in `Debug`).
    pub owner: String,
    /// When it was taken (unix ms).
    pub acquired_ms: u64,
    /// When it stops being active (unix ms, exclusive).
    pub expires_ms: u64,
    /// The attempt number this lease is for.
    pub attempt: u32,
    /// The relays this attempt is for, when the claim was filtered by relay
    /// ([`super::ClaimRequest::relays`]): the record's unsettled targets among them. The
    /// attempt records answers of these only; the other targets stay untouched. `None`:
    /// every unsettled target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relays: Option<Vec<String>>,
}

impl Lease {
    /// True while the lease is held: `now_ms < expires_ms`.
    pub fn is_active(&self, now_ms: u64) -> bool {
        now_ms < self.expires_ms
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("id", &self.id)
            .field("owner", &"<redacted>")
            .field("acquired_ms", &self.acquired_ms)
            .field("expires_ms", &self.expires_ms)
            .field("attempt", &self.attempt)
            .field("relays", &self.relays)
            .finish()
    }
}

/// How a transport's message ends when the connection closed after the `EVENT` was
/// written and before the relay's `OK` ([`Record::unclear_at`]).
pub const UNANSWERED: &str = "before the relay answered";

/// The evidence message of a read-back: the relay, asked by id after an unclear answer,
/// sent the event back, so it is recorded as [`Outcome::Duplicate`] without sending it
/// again. It begins `read back:`.
pub const READ_BACK: &str =
    "read back: the relay sent the event back when asked by id after an unclear answer; \
     not sent again";

/// The evidence message of a relay found holding a newer version of the event before it
/// was sent there ([`super::RejectReason::Newer`], [`StopReason::RemoteNewer`]): the
/// newer event's id first, which the record is then superseded by.
pub fn newer_message(id: &str, created_at: u64) -> String {
    format!("{id} (created_at {created_at}) is a newer version on this relay: not sent")
}

/// What one target answered in one attempt. Appended, never removed; the one exception
/// to "never changed": consecutive tries of one attempt that reached no relay at all
/// (offline, every relay down) share one entry per target, whose [`Evidence::tries`]
/// and [`Evidence::at_ms`] grow, so a record waiting for connectivity stays small.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// The relay URL.
    pub target: String,
    /// The attempt number (1-based).
    pub attempt: u32,
    /// The typed outcome.
    pub outcome: Outcome,
    /// The relay's message (the `OK` message text, or a transport description),
    /// truncated to [`super::machine::MAX_MESSAGE_LEN`] bytes.
    pub message: String,
    /// When the attempt was recorded (unix ms); for a repeated unreached try, the last.
    pub at_ms: u64,
    /// How many tries this entry stands for: 1, or more for an attempt that reached no
    /// relay and was tried again (see the type's docs).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub tries: u32,
    /// When the first of several tries was recorded (unix ms); `None` for one try.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_at_ms: Option<u64>,
}

impl Evidence {
    /// Counts one more try in this entry (a try that reached no relay, a signer that
    /// failed again): `tries` grows, `first_at_ms` keeps the first, `at_ms`, the
    /// outcome and the message are the latest's.
    pub(super) fn again(&mut self, outcome: Outcome, message: String, at_ms: u64) {
        self.first_at_ms.get_or_insert(self.at_ms);
        self.tries = self.tries.saturating_add(1);
        self.outcome = outcome;
        self.message = message;
        self.at_ms = at_ms;
    }
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// A comparison of records, as a function pointer: every sort of records in the crate
/// passes one of [`claim_order`] and [`list_order`] to [`super::order::sort_records`].
pub type RecordOrder = fn(&&Record, &&Record) -> std::cmp::Ordering;

/// Claim order: `(priority rank, due_ms, created_ms, id)` ([`Record::claim_key`]).
pub fn claim_order(a: &&Record, b: &&Record) -> std::cmp::Ordering {
    a.claim_key().cmp(&b.claim_key())
}

/// List order: `(created_ms, id)` ([`Record::list_key`]).
pub fn list_order(a: &&Record, b: &&Record) -> std::cmp::Ordering {
    a.list_key().cmp(&b.list_key())
}

/// One outbox item: its plan, its stage and its whole delivery history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The item id.
    pub id: String,
    /// The signed event, exactly as enqueued.
    pub event: EventEnvelope,
    /// The target relays, sorted and de-duplicated.
    pub targets: Vec<String>,
    /// The satisfaction policy (normalized).
    pub policy: Policy,
    /// The plan's attempt budget.
    pub max_attempts: u32,
    /// The plan's deadline (unix ms), if any.
    pub deadline_ms: Option<u64>,
    /// The plan digest (sha256 hex): the idempotency fingerprint.
    pub plan_digest: String,
    /// Starts at 1 and grows by one on every change.
    pub revision: u64,
    /// The current stage.
    pub stage: Stage,
    /// The current (possibly expired) lease, when stage is `leased`.
    pub lease: Option<Lease>,
    /// The number of the last counted attempt (0 before the first). An attempt that
    /// reached no relay at all is not counted: it is tried again under the same number.
    pub attempts: u32,
    /// The highest attempt number allowed before exhaustion (`retry` raises it).
    pub attempt_limit: u32,
    /// Terminal rejections recorded at or before this attempt no longer settle their
    /// target (set by `retry`, so a re-armed record may try them again).
    pub rearmed_after_attempt: u32,
    /// When the last attempt was recorded (unix ms).
    pub last_attempt_ms: Option<u64>,
    /// Every answer of every target in every attempt, in order.
    pub evidence: Vec<Evidence>,
    /// The policy evaluated over the latest evidence per target.
    pub satisfaction: Satisfaction,
    /// The earliest time of the next attempt (unix ms), when deferred.
    pub retry_not_before_ms: Option<u64>,
    /// When the record can next be claimed: retry time (or creation) when pending or
    /// retryable, the lease expiry when leased, none when terminal. Stores index it.
    pub due_ms: Option<u64>,
    /// When it was enqueued (unix ms).
    pub created_ms: u64,
    /// When it last changed (unix ms).
    pub updated_ms: u64,
    /// Why it stopped, when exhausted, cancelled or superseded.
    pub reason: Option<StopReason>,
    /// The id of the event that superseded or deleted it (stage `superseded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// A summary of the failures of the last attempt, if any.
    pub last_error: Option<String>,
    /// How many times a flusher took this record's lease over from a flusher that was
    /// gone (a closed tab, a killed browser, a terminated worker) instead of waiting
    /// for the lease to expire ([`super::machine::take_over`]). Absent in stored
    /// documents while 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub takeovers: u32,
    /// The lane it was enqueued in ([`super::lane`]). Absent in stored documents while
    /// `"default"`.
    #[serde(default = "default_lane", skip_serializing_if = "is_default_lane_str")]
    pub lane: String,
    /// Its claim priority. Absent in stored documents while `normal`.
    #[serde(default, skip_serializing_if = "Priority::is_default")]
    pub priority: Priority,
    /// Delivery stops at the policy's verdict (today's `satisfied` or `exhausted` at
    /// once) instead of going on to the targets still open
    /// ([`super::Plan::stop_when_satisfied`]). Absent in stored documents while false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stop_when_satisfied: bool,
    /// The size of its group, when it was enqueued as a member of one
    /// ([`super::Plan::group_size`]; its place: [`Record::group`]). Absent in stored
    /// documents otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_size: Option<u32>,
    /// Its plan's routing intents ([`super::Plan::route`]). Absent in stored documents
    /// when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route: Vec<String>,
    /// Once its route is resolved ([`super::record_signing`]): the relays the resolution
    /// added to [`Record::targets`] (those that were not targets already). `None` while
    /// the route waits for a resolver (and with no route).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routed: Option<Vec<String>>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The [`Evidence::target`] of the signer's answers to a draft: not a relay URL, so it
/// is never one of a record's targets and settles none of them. Its entries have
/// attempt 0 (signing counts no attempt).
pub const SIGNER: &str = "signer";

/// The [`Evidence::target`] of a route's resolution ([`super::Route`]): one `accepted`
/// entry per relay chosen (its message: the relay, then why), or the resolver's failure.
/// Like [`SIGNER`], never a target, attempt 0.
pub const RESOLVER: &str = "resolver";

/// True for the evidence of the helpers that prepare a record ([`SIGNER`],
/// [`RESOLVER`]), not of a relay.
pub fn is_helper(target: &str) -> bool {
    target == SIGNER || target == RESOLVER
}

/// [`Record::needs`]: a signer, for a draft.
pub const NEEDS_SIGNER: u8 = 1;
/// [`Record::needs`]: a resolver, for a route not resolved yet.
pub const NEEDS_RESOLVER: u8 = 2;

impl Record {
    /// Its place in its group, when it is a member of one (a stored size, and an id
    /// `<group>:<index>` that fits it; a row changed behind the outbox's back that does
    /// not fit is no member).
    pub fn group(&self) -> Option<super::group::GroupRef<'_>> {
        super::group::GroupRef::of(&self.id, self.group_size?).ok()
    }

    /// True while the record holds an unsigned event template, not a signed event:
    /// its [`EventEnvelope::id`] is empty and [`EventEnvelope::raw`] is the template
    /// (`nostr::Template`). A draft is never published.
    pub fn is_draft(&self) -> bool {
        self.event.id.is_empty()
    }

    /// What it needs before it can be published: [`NEEDS_SIGNER`] (a draft) and
    /// [`NEEDS_RESOLVER`] (a route not resolved yet), or 0. A record that needs any is
    /// in stage `draft` while it waits.
    pub fn needs(&self) -> u8 {
        let route = !self.route.is_empty() && self.routed.is_none();
        (u8::from(self.is_draft()) * NEEDS_SIGNER) | (u8::from(route) * NEEDS_RESOLVER)
    }

    /// What names its event: the event id, or for a draft (which has none yet) the
    /// record id. [`Record::superseded_by`] of what a draft supersedes, and the
    /// tie-break between versions of one slot with one `created_at`.
    pub fn event_name(&self) -> &str {
        if self.is_draft() {
            &self.id
        } else {
            &self.event.id
        }
    }

    /// How many times in a row the signer or the resolver last failed to answer
    /// (unreachable or timed out): the retry schedule's attempt number for the next try.
    pub fn signer_tries(&self) -> u32 {
        self.evidence
            .iter()
            .rev()
            .take_while(|e| is_helper(&e.target))
            .filter(|e| !e.outcome.is_accepted())
            .map(|e| e.tries)
            .sum()
    }

    /// True for a terminal stage.
    pub fn is_terminal(&self) -> bool {
        self.stage.is_terminal()
    }

    /// The latest evidence recorded for `target`.
    pub fn latest_evidence(&self, target: &str) -> Option<&Evidence> {
        self.evidence.iter().rev().find(|e| e.target == target)
    }

    /// True when the latest answer of `target` left unclear whether it stored the event:
    /// the `EVENT` was written and no `OK` came (a [`Outcome::Timeout`], or an
    /// [`Outcome::Unreachable`] whose message ends with [`UNANSWERED`]). The flusher asks
    /// such a relay for the event by id before sending it again (read-back).
    pub fn unclear_at(&self, target: &str) -> bool {
        self.latest_evidence(target)
            .is_some_and(|e| match e.outcome {
                Outcome::Timeout => true,
                Outcome::Unreachable => e.message.ends_with(UNANSWERED),
                _ => false,
            })
    }

    /// The settled state of `target` derived from its latest evidence.
    pub fn target_state(&self, target: &str) -> TargetState {
        self.state_of(self.latest_evidence(target))
    }

    /// The settled state that `latest` (a target's latest evidence, if any) gives.
    fn state_of(&self, latest: Option<&Evidence>) -> TargetState {
        match latest {
            None => TargetState::Open,
            Some(e) if e.outcome.is_accepted() => TargetState::Accepted,
            Some(e)
                if e.outcome.is_terminal_rejection() && e.attempt > self.rearmed_after_attempt =>
            {
                TargetState::Rejected
            }
            Some(_) => TargetState::Open,
        }
    }

    /// The targets still open: the ones an attempt sends the event to.
    pub fn unsettled_targets(&self) -> Vec<String> {
        self.targets
            .iter()
            .filter(|t| self.target_state(t) == TargetState::Open)
            .cloned()
            .collect()
    }

    /// The targets the current attempt sends to: the unsettled targets, only those of
    /// the lease's relays when the claim was filtered by relay ([`Lease::relays`]).
    pub fn attempt_targets(&self) -> Vec<String> {
        let mut targets = self.unsettled_targets();
        if let Some(scope) = self.lease.as_ref().and_then(|l| l.relays.as_ref()) {
            targets.retain(|t| scope.contains(t));
        }
        targets
    }

    /// The policy evaluated over the current evidence.
    pub fn evaluate(&self) -> Satisfaction {
        self.evaluate_before(u32::MAX)
    }

    /// The policy evaluated over the evidence of the attempts numbered below `attempt`
    /// only: what the verdict was before that attempt was recorded. The flusher
    /// compares it with [`Record::satisfaction`] to tell a new verdict (reported once)
    /// from one already reported.
    pub fn evaluate_before(&self, attempt: u32) -> Satisfaction {
        // A route not resolved yet (or resolved to nothing): no verdict over no relay.
        if self.targets.is_empty() {
            return Satisfaction::Pending;
        }
        self.policy.evaluate(self.targets.iter().map(|t| {
            let latest = self
                .evidence
                .iter()
                .rev()
                .find(|e| e.target == *t && e.attempt < attempt);
            (t.as_str(), self.state_of(latest))
        }))
    }

    /// True when the policy's verdict (`satisfied`, or `exhausted` when it can no longer
    /// be met) came with the latest recorded attempt: the attempts before it gave none,
    /// or another. The flusher reports a verdict once, when it is new.
    pub fn verdict_is_new(&self) -> bool {
        let latest = self.evidence.iter().map(|e| e.attempt).max().unwrap_or(0);
        self.satisfaction != Satisfaction::Pending
            && self.evaluate_before(latest) != self.satisfaction
    }

    /// True when some target is still open: an attempt would send to it.
    pub fn has_open_targets(&self) -> bool {
        self.targets
            .iter()
            .any(|t| self.target_state(t) == TargetState::Open)
    }

    /// True while a lease is held at `now_ms`.
    pub fn has_active_lease(&self, now_ms: u64) -> bool {
        self.lease.as_ref().is_some_and(|l| l.is_active(now_ms))
    }

    /// True when the Web Lock holder `owner` may take it over at `now_ms`
    /// ([`super::machine::take_over`]): leased, its lease still active and held by
    /// another owner. Its own live leases are never taken; an expired lease is the
    /// claim path's.
    pub fn is_orphan_for(&self, owner: &str, now_ms: u64) -> bool {
        self.stage == Stage::Leased
            && self
                .lease
                .as_ref()
                .is_some_and(|l| l.is_active(now_ms) && l.owner != owner)
    }

    /// True when a claim at `now_ms` may take it: not terminal, due, no active lease.
    pub fn is_ready(&self, now_ms: u64) -> bool {
        !self.is_terminal()
            && self.due_ms.is_some_and(|d| d <= now_ms)
            && !self.has_active_lease(now_ms)
    }

    /// The claim-order key `(priority rank, due_ms, created_ms, id)`: among due
    /// records, `high` first, then the earliest due, then the oldest; `None` for
    /// terminal records.
    pub fn claim_key(&self) -> Option<(u8, u64, u64, &str)> {
        self.due_ms
            .map(|d| (self.priority.rank(), d, self.created_ms, self.id.as_str()))
    }

    /// True when `relay` is one of its targets still open (an attempt would send to it).
    pub fn waits_for(&self, relay: &str) -> bool {
        self.targets
            .iter()
            .any(|t| t == relay && self.target_state(t) == TargetState::Open)
    }

    /// The list-order key `(created_ms, id)`.
    pub fn list_key(&self) -> (u64, &str) {
        (self.created_ms, self.id.as_str())
    }

    /// The earlier of the plan deadline and the event's NIP-40 expiration (unix ms).
    pub fn effective_deadline_ms(&self) -> Option<u64> {
        effective_deadline(self.deadline_ms, &self.event)
    }

    /// True when the deadline has passed at `now_ms`.
    pub fn is_expired_at(&self, now_ms: u64) -> bool {
        self.effective_deadline_ms().is_some_and(|d| now_ms >= d)
    }
}
