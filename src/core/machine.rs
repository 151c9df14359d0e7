//! Every transition of a record, as pure functions from (record, input, now) to a
//! new record or a typed error: enqueue decisions, claim, complete an attempt,
//! release, retry, cancel, purge. Stores call these inside one transaction and
//! write the result; no function here reads a clock, draws randomness or does I/O.

use serde::{Deserialize, Serialize};

use super::envelope::EventEnvelope;
use super::error::CoreError;
use super::outcome::{Outcome, RejectReason};
use super::plan::Plan;
use super::policy::{Satisfaction, TargetState};
use super::record::{is_helper, Evidence, Lease, Record, Stage, StopReason, RESOLVER, SIGNER};
use super::retry::RetryConfig;

/// The longest relay message kept in evidence, in bytes.
pub const MAX_MESSAGE_LEN: usize = 512;
/// The longest `last_error` summary, in bytes.
pub const MAX_ERROR_LEN: usize = 1_024;
/// The most records one claim may take.
pub const MAX_CLAIM: u32 = 256;
/// The longest lease, in ms (one day).
pub const MAX_LEASE_MS: u64 = 86_400_000;
/// The longest lease owner or lease id, in bytes.
pub const MAX_LEASE_FIELD_LEN: usize = 128;
/// The most records one `list` returns.
pub const MAX_LIST: u32 = 1_000;

/// What [`decide_enqueue`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnqueueDecision {
    /// No record had the id: write this new record.
    Create(Record),
    /// A record with the same id and the same plan exists: write nothing.
    Replay(Record),
    /// No record had the id, but a newer version of the event's replaceable or
    /// addressable slot is already stored: write this new record, already terminal
    /// (stage `superseded`), never to be sent.
    Superseded(Record),
}

/// Whether an enqueue created a record or replayed an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EnqueueOutcome {
    /// A new record was written.
    Created,
    /// The same plan was already stored; nothing was written.
    Replay,
    /// A new record was written, already superseded by a newer version of its event
    /// that the outbox holds: it is never sent.
    Superseded,
}

/// The answer to an enqueue: what happened, and the stored record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Enqueued {
    /// Created or replayed.
    pub outcome: EnqueueOutcome,
    /// The record as stored.
    pub record: Record,
    /// Records this enqueue superseded or deleted (NIP-01 replacement, NIP-09), as
    /// stored: each now in stage `superseded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withdrawn: Vec<Record>,
}

impl EnqueueDecision {
    /// The record to report (new or existing).
    pub fn record(&self) -> &Record {
        match self {
            EnqueueDecision::Create(r)
            | EnqueueDecision::Replay(r)
            | EnqueueDecision::Superseded(r) => r,
        }
    }

    /// True when the decision writes a new record (`Create` or `Superseded`).
    pub fn writes(&self) -> bool {
        !matches!(self, EnqueueDecision::Replay(_))
    }

    /// Turns the decision into the caller-facing answer (nothing withdrawn).
    pub fn into_enqueued(self) -> Enqueued {
        let (outcome, record) = match self {
            EnqueueDecision::Create(record) => (EnqueueOutcome::Created, record),
            EnqueueDecision::Replay(record) => (EnqueueOutcome::Replay, record),
            EnqueueDecision::Superseded(record) => (EnqueueOutcome::Superseded, record),
        };
        Enqueued {
            outcome,
            record,
            withdrawn: Vec::new(),
        }
    }
}

/// A request to lease a batch of ready records, optionally only those of some lanes
/// that still wait for some relays ([`ClaimRequest::admits`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRequest {
    /// Who claims (1..=128 bytes, no control characters).
    pub owner: String,
    /// A fresh random lease id for this claim (1..=128 bytes, no control characters).
    pub lease_id: String,
    /// How many records at most (1..=256).
    pub limit: u32,
    /// How long the lease lasts (1..=86 400 000 ms).
    pub lease_ms: u64,
    /// Only records in these lanes (at most 64); empty: every lane.
    #[serde(default)]
    pub lanes: Vec<String>,
    /// Only records that still wait for one of these relays (normalized URLs, at most
    /// 64), and the attempt goes to those of them only ([`Lease::relays`]); empty: every
    /// record, to all of its unsettled targets.
    #[serde(default)]
    pub relays: Vec<String>,
    /// Claims records to prepare ([`Record::needs`]), and nothing else: those whose
    /// needs are all in this mask ([`crate::core::NEEDS_SIGNER`]: this context signs
    /// drafts, [`crate::core::NEEDS_RESOLVER`]: it resolves routes). 0 (the default)
    /// claims records ready to publish only, so a draft or an unresolved route is never
    /// published, and a context that cannot prepare a record never takes it.
    #[serde(default)]
    pub prepare: u8,
    /// A takeover ([`orphans`]) takes only the leases of owners whose heartbeat has
    /// lapsed ([`crate::core::heartbeat`]): for a flusher that cannot know it is the only
    /// live one (no Web Lock). `false`: the caller is the only live flusher, so every
    /// other owner is gone.
    #[serde(default)]
    pub lapsed_only: bool,
}

impl ClaimRequest {
    /// True when the filters take `record`: one that needs preparing exactly when
    /// [`ClaimRequest::prepare`] can prepare it, its lane is one of [`ClaimRequest::lanes`]
    /// (or there are none) and it waits for one of [`ClaimRequest::relays`] (or there
    /// are none). Readiness is apart ([`Record::is_ready`]).
    pub fn admits(&self, record: &Record) -> bool {
        ClaimRequest::takes(self.prepare, record.needs())
            && (self.lanes.is_empty() || self.lanes.contains(&record.lane))
            && (self.relays.is_empty() || self.relays.iter().any(|r| record.waits_for(r)))
    }

    /// True when a claim that prepares `prepare` ([`ClaimRequest::prepare`]) takes a
    /// record that needs `needs` ([`Record::needs`]): one ready to publish exactly when
    /// it prepares nothing, else one whose every need it can meet. The store's claim
    /// ranks are chosen by it too.
    pub fn takes(prepare: u8, needs: u8) -> bool {
        (needs == 0) == (prepare == 0) && needs & !prepare == 0
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), CoreError> {
        super::lane::validate_lanes("lanes", &self.lanes)?;
        if self.relays.len() > super::lane::MAX_FILTER
            || self
                .relays
                .iter()
                .any(|r| r.is_empty() || r.len() > super::plan::MAX_TARGET_LEN)
        {
            return Err(CoreError::arg(
                "relays",
                "must name at most 64 relays of 1..=2048 bytes",
            ));
        }
        validate_lease_field("owner", &self.owner)?;
        validate_lease_field("leaseId", &self.lease_id)?;
        if self.limit == 0 || self.limit > MAX_CLAIM {
            return Err(CoreError::arg("limit", format!("must be 1..={MAX_CLAIM}")));
        }
        if self.lease_ms == 0 || self.lease_ms > MAX_LEASE_MS {
            return Err(CoreError::arg(
                "leaseMs",
                format!("must be 1..={MAX_LEASE_MS}"),
            ));
        }
        Ok(())
    }
}

fn validate_lease_field(field: &'static str, value: &str) -> Result<(), CoreError> {
    if value.is_empty() || value.len() > MAX_LEASE_FIELD_LEN {
        return Err(CoreError::arg(
            field,
            format!("must be 1..={MAX_LEASE_FIELD_LEN} bytes"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(CoreError::arg(field, "must not contain control characters"));
    }
    Ok(())
}

/// What a claim did to one ready record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The record is now leased to the caller for its next attempt.
    Leased(Record),
    /// Its deadline had passed: it is now exhausted with reason `expired` and must
    /// not be attempted. Stores write it and hand it back so the caller can report it.
    Expired(Record),
}

impl Claimed {
    /// The new record to write.
    pub fn into_record(self) -> Record {
        match self {
            Claimed::Leased(r) | Claimed::Expired(r) => r,
        }
    }
}

/// What one target answered in one attempt, as reported by a flusher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetResult {
    /// The relay URL (one of the attempt's unsettled targets).
    pub target: String,
    /// The typed outcome.
    pub outcome: Outcome,
    /// The relay's message or a transport description.
    pub message: String,
}

/// The result of one attempt, to record under the lease that made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The item id.
    pub id: String,
    /// The lease id the attempt was made under.
    pub lease_id: String,
    /// The record revision returned by the claim.
    pub revision: u64,
    /// One result per attempted target; unsettled targets not listed are recorded as
    /// `notAttempted`.
    pub results: Vec<TargetResult>,
    /// Uniform random input for the retry jitter.
    pub jitter: u32,
}

/// A page request for `list`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    /// Only records in this stage, when set.
    pub stage: Option<Stage>,
    /// How many records at most (1..=1000).
    pub limit: u32,
    /// Start after this item id (a cursor: the last id of the previous page).
    pub after: Option<String>,
    /// Only records in this lane, when set.
    #[serde(default)]
    pub lane: Option<String>,
}

impl ListQuery {
    /// Checks the limit and cursor.
    pub fn validate(&self) -> Result<(), CoreError> {
        if self.limit == 0 || self.limit > MAX_LIST {
            return Err(CoreError::arg("limit", format!("must be 1..={MAX_LIST}")));
        }
        if let Some(after) = &self.after {
            super::plan::validate_item_id(after)?;
        }
        if let Some(lane) = &self.lane {
            super::lane::validate_lane("lane", lane)?;
        }
        Ok(())
    }
}

/// How many records are in each stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StageCounts {
    /// Drafts waiting for the signer (`draft`).
    #[serde(default)]
    pub draft: u32,
    /// Records in `pending`.
    pub pending: u32,
    /// Records in `leased` (including expired leases not yet re-claimed).
    pub leased: u32,
    /// Records in `retryable`.
    pub retryable: u32,
    /// Records in `delivering`: the policy's verdict is in, delivery to the targets
    /// still open goes on.
    #[serde(default)]
    pub delivering: u32,
    /// Records in `satisfied`.
    pub satisfied: u32,
    /// Records in `exhausted`.
    pub exhausted: u32,
    /// Records in `cancelled`.
    pub cancelled: u32,
    /// Records in `superseded`.
    #[serde(default)]
    pub superseded: u32,
    /// Stored rows that cannot be decoded into a record, counted apart from the stages
    /// (a store that can hold them reports them; they are never deleted or changed).
    #[serde(default)]
    pub corrupt: u32,
}

impl StageCounts {
    /// The count for `stage`, to change.
    pub fn get_mut(&mut self, stage: Stage) -> &mut u32 {
        match stage {
            Stage::Draft => &mut self.draft,
            Stage::Pending => &mut self.pending,
            Stage::Leased => &mut self.leased,
            Stage::Retryable => &mut self.retryable,
            Stage::Delivering => &mut self.delivering,
            Stage::Satisfied => &mut self.satisfied,
            Stage::Exhausted => &mut self.exhausted,
            Stage::Cancelled => &mut self.cancelled,
            Stage::Superseded => &mut self.superseded,
        }
    }

    /// Counts one more record in `stage`.
    pub fn add(&mut self, stage: Stage) {
        let slot = self.get_mut(stage);
        *slot = slot.saturating_add(1);
    }

    /// The count for `stage` (through [`StageCounts::get_mut`]: one match of the stages).
    pub fn get(&self, stage: Stage) -> u32 {
        let mut copy = *self;
        *copy.get_mut(stage)
    }

    /// All records.
    /// Every stored row: the records of every stage plus the corrupt rows.
    pub fn total(&self) -> u32 {
        Stage::ALL
            .iter()
            .map(|s| self.get(*s))
            .fold(self.corrupt, u32::saturating_add)
    }
}

/// Builds the first record of a normalized plan, due at once (at its
/// [`Plan::not_before_ms`] when later). An ephemeral event
/// (kinds 20000–29999) without a deadline gets one
/// [`super::semantics::EPHEMERAL_DEADLINE_MS`] from now.
pub fn new_record(plan: Plan, digest: String, now_ms: u64) -> Record {
    let deadline_ms = plan.deadline_ms.or_else(|| {
        super::semantics::is_ephemeral(&plan.event)
            .then(|| now_ms.saturating_add(super::semantics::EPHEMERAL_DEADLINE_MS))
    });
    let mut record = Record {
        id: plan.id,
        event: plan.event,
        targets: plan.targets,
        policy: plan.policy,
        max_attempts: plan.max_attempts,
        deadline_ms,
        plan_digest: digest,
        revision: 1,
        stage: Stage::Pending,
        lease: None,
        attempts: 0,
        attempt_limit: plan.max_attempts,
        rearmed_after_attempt: 0,
        last_attempt_ms: None,
        evidence: Vec::new(),
        satisfaction: Satisfaction::Pending,
        retry_not_before_ms: plan.not_before_ms.filter(|&at| at > now_ms),
        due_ms: Some(plan.not_before_ms.map_or(now_ms, |at| at.max(now_ms))),
        created_ms: now_ms,
        updated_ms: now_ms,
        reason: None,
        superseded_by: None,
        last_error: None,
        takeovers: 0,
        lane: plan.lane,
        priority: plan.priority,
        stop_when_satisfied: plan.stop_when_satisfied,
        group_size: plan.group_size,
        route: plan.route,
        routed: None,
    };
    record.satisfaction = record.evaluate();
    record.stage = waiting_stage(&record);
    record
}

/// Decides an enqueue: validates and normalizes `plan`, then compares it with the
/// record already stored under its id. Same digest → `Replay`; different →
/// [`CoreError::PlanConflict`]; none → `Create`, unless the event's NIP-40 expiration
/// has passed ([`CoreError::EventExpired`]). It applies none of the rules that need
/// other records (supersession, deletions): [`super::semantics::decide_enqueues`] does.
pub fn decide_enqueue(
    existing: Option<&Record>,
    plan: Plan,
    now_ms: u64,
) -> Result<EnqueueDecision, CoreError> {
    let mut plan = plan.normalize()?;
    let imported = plan.imported.take();
    let digest = plan.digest();
    match existing {
        Some(r) if r.id != plan.id => Err(CoreError::arg(
            "existing",
            "the existing record has another id",
        )),
        Some(r) if r.plan_digest == digest => Ok(EnqueueDecision::Replay(r.clone())),
        Some(r) => Err(CoreError::PlanConflict { id: r.id.clone() }),
        // An import stores the record it brings (`super::import::plan_for` checked it
        // is this plan's), whether or not its event has expired since.
        None if imported.is_some() => Ok(EnqueueDecision::Create(
            *imported.ok_or_else(|| CoreError::arg("plan", "no record"))?,
        )),
        None => {
            if let Some(expiration) = plan.event.expiration {
                if expiration.saturating_mul(1_000) <= now_ms {
                    return Err(CoreError::EventExpired {
                        id: plan.event.id.clone(),
                        expiration,
                    });
                }
            }
            Ok(EnqueueDecision::Create(new_record(plan, digest, now_ms)))
        }
    }
}

/// Ends a record that may still be sent ([`Stage::may_send`]) as `superseded`: a newer
/// version (`reason` `superseded`), a deletion (`deleted`) or a request to vanish
/// (`vanished`) with event id `by` was enqueued. Its evidence stays (targets that
/// accepted keep their answer); a held lease becomes a lost claim. Fails with [`CoreError::AlreadyTerminal`] for a
/// satisfied, cancelled or superseded record.
pub fn supersede(
    record: &Record,
    by: &str,
    reason: StopReason,
    now_ms: u64,
) -> Result<Record, CoreError> {
    if !record.stage.may_send() {
        return Err(CoreError::AlreadyTerminal {
            id: record.id.clone(),
            stage: record.stage,
        });
    }
    if !matches!(
        reason,
        StopReason::Superseded | StopReason::Deleted | StopReason::Vanished
    ) {
        return Err(CoreError::arg(
            "reason",
            "must be superseded, deleted or vanished",
        ));
    }
    let mut next = record.clone();
    bump(&mut next, now_ms);
    finish(&mut next, Stage::Superseded, Some(reason));
    next.superseded_by = Some(by.to_string());
    Ok(next)
}

fn bump(record: &mut Record, now_ms: u64) {
    record.revision += 1;
    record.updated_ms = record.updated_ms.max(now_ms);
}

/// Ends delivery with the terminal stage its verdict gives: `satisfied` when the policy
/// is met, `exhausted` as `rejected` when it can no longer be, else `exhausted` for
/// `unmet` (the budget or the deadline ran out first).
fn end_delivery(record: &mut Record, unmet: StopReason) {
    match record.satisfaction {
        Satisfaction::Satisfied => finish(record, Stage::Satisfied, None),
        Satisfaction::Exhausted => finish(record, Stage::Exhausted, Some(StopReason::Rejected)),
        Satisfaction::Pending => finish(record, Stage::Exhausted, Some(unmet)),
    }
}

/// The stage of a record that waits for its next attempt: `draft` while unsigned,
/// `pending` before any attempt (the signer's answers are no attempt), `delivering`
/// once the policy's verdict is in, else `retryable`.
pub(super) fn waiting_stage(record: &Record) -> Stage {
    if record.needs() != 0 {
        Stage::Draft
    } else if record.evidence.iter().all(|e| is_helper(&e.target)) {
        Stage::Pending
    } else if record.satisfaction == Satisfaction::Pending {
        Stage::Retryable
    } else {
        Stage::Delivering
    }
}

fn finish(record: &mut Record, stage: Stage, reason: Option<StopReason>) {
    record.stage = stage;
    record.reason = reason;
    record.lease = None;
    record.due_ms = None;
    record.retry_not_before_ms = None;
}

/// Leases a ready record for its next attempt (`attempts + 1`), or exhausts it as
/// `expired` when its deadline has passed. The request must be valid
/// ([`ClaimRequest::validate`]) and admit the record ([`ClaimRequest::admits`]); a
/// claim filtered by relay leases the attempt for those relays only ([`Lease::relays`]).
pub fn claim(record: &Record, request: &ClaimRequest, now_ms: u64) -> Result<Claimed, CoreError> {
    request.validate()?;
    if !record.is_ready(now_ms) || !request.admits(record) {
        return Err(CoreError::NotReady {
            id: record.id.clone(),
        });
    }
    Ok(lease_to(record, request, now_ms))
}

/// What [`claim`] and [`take_over`] do to a record they may take: exhausted as
/// `expired` when its deadline has passed, else leased to the caller for attempt
/// `attempts + 1` (the dead flusher's attempt was never recorded, so a takeover uses
/// the same number).
fn lease_to(record: &Record, request: &ClaimRequest, now_ms: u64) -> Claimed {
    let mut next = record.clone();
    bump(&mut next, now_ms);
    if record.is_expired_at(now_ms) {
        end_delivery(&mut next, StopReason::Expired);
        return Claimed::Expired(next);
    }
    let expires_ms = now_ms.saturating_add(request.lease_ms);
    let relays = (!request.relays.is_empty()).then(|| {
        record
            .unsettled_targets()
            .into_iter()
            .filter(|t| request.relays.contains(t))
            .collect()
    });
    next.lease = Some(Lease {
        id: request.lease_id.clone(),
        owner: request.owner.clone(),
        acquired_ms: now_ms,
        expires_ms,
        attempt: record.attempts + 1,
        relays,
    });
    next.stage = Stage::Leased;
    next.due_ms = Some(expires_ms);
    Claimed::Leased(next)
}

/// Takes over the live lease of a flusher that is gone: the caller holds the
/// database's Web Lock, so it is the only live flusher, and a lease whose owner is not
/// the caller (`request.owner`) belongs to a context that no longer runs (a closed
/// tab, a killed browser, a terminated worker). The record is leased to the caller at
/// once instead of after the dead lease expires, and its `takeovers` count grows.
///
/// The accounting is the expiry path's ([`claim`] of an expired lease): the dead
/// flusher's attempt was never recorded, so the new lease is for the same attempt
/// number (`attempts + 1`) and the budget is unchanged; relays that accepted it before
/// the crash answer `duplicate:` (at-least-once). A record whose deadline has passed
/// is exhausted as `expired` instead ([`Claimed::Expired`]), as a claim does.
///
/// Fails with [`CoreError::NotReady`] unless [`Record::is_orphan_for`] holds: not
/// leased, the lease already expired (a claim takes it), or the lease is the
/// caller's own (its in-flight work), or the request's filters do not admit it
/// ([`ClaimRequest::admits`]). The request must be valid.
pub fn take_over(
    record: &Record,
    request: &ClaimRequest,
    now_ms: u64,
) -> Result<Claimed, CoreError> {
    request.validate()?;
    if !record.is_orphan_for(&request.owner, now_ms) || !request.admits(record) {
        return Err(CoreError::NotReady {
            id: record.id.clone(),
        });
    }
    Ok(match lease_to(record, request, now_ms) {
        Claimed::Leased(mut next) => {
            next.takeovers = next.takeovers.saturating_add(1);
            Claimed::Leased(next)
        }
        expired => expired,
    })
}

/// The records a takeover by `request` takes, in the order it takes them: those of
/// `records` whose live lease another owner holds ([`Record::is_orphan_for`]) and that
/// the request's filters admit, in claim order, at most `request.limit`. With
/// [`ClaimRequest::lapsed_only`], only leases whose owner `gone` says is gone (its
/// heartbeat lapsed). Stores read their leased records (and the owners' heartbeats) and
/// pass them here.
pub fn orphans<'r>(
    records: impl IntoIterator<Item = &'r Record>,
    request: &ClaimRequest,
    now_ms: u64,
    gone: &dyn Fn(&str) -> bool,
) -> Vec<&'r Record> {
    let mut out: Vec<&Record> = records
        .into_iter()
        .filter(|r| r.is_orphan_for(&request.owner, now_ms) && request.admits(r))
        .filter(|r| !request.lapsed_only || r.lease.as_ref().is_some_and(|l| gone(&l.owner)))
        .collect();
    super::order::sort_records(&mut out, super::record::claim_order);
    out.truncate(request.limit as usize);
    out
}

/// Checks that `lease_id` is the record's active lease at `now_ms` and that the
/// record is at `revision`; returns the lease.
pub fn check_lease<'r>(
    record: &'r Record,
    lease_id: &str,
    revision: u64,
    now_ms: u64,
) -> Result<&'r Lease, CoreError> {
    let lost = || CoreError::LeaseExpired {
        id: record.id.clone(),
    };
    let lease = match (&record.stage, &record.lease) {
        (Stage::Leased, Some(l)) if l.id == lease_id && l.is_active(now_ms) => l,
        _ => return Err(lost()),
    };
    if record.revision != revision {
        return Err(CoreError::RevisionConflict {
            id: record.id.clone(),
            expected: revision,
            actual: record.revision,
        });
    }
    Ok(lease)
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

/// Records one attempt under its lease and releases the lease with the next stage:
/// appends one evidence entry per unsettled target (unreported ones as
/// `notAttempted`) and re-evaluates the policy.
///
/// The policy's verdict (`satisfied`, or `exhausted` when it can no longer be met) is
/// what the application is told; it ends delivery only when the record was enqueued
/// with [`Record::stop_when_satisfied`] or no target is left open. Otherwise the
/// record waits as `delivering` (verdict in) or `retryable` (no verdict yet) until
/// `now + delay` from the retry schedule, and delivery to the open targets goes on.
/// When the attempt budget is spent or the next retry would fall past the deadline,
/// delivery ends with the stage the verdict gives: `satisfied`, `exhausted` as
/// `rejected`, or (no verdict) `exhausted` as `maxAttempts` / `expired`. A target that
/// accepted or refused for good is never in an attempt again.
///
/// An attempt that reached no relay at all (every answer `unreachable` or
/// `notAttempted`) is not counted: `attempts` and the budget stay, the next claim tries
/// the same attempt number again, and its evidence entries are reused (`tries` and
/// `at_ms` grow) instead of appended, so a record waiting offline stays bounded. Its
/// backoff still grows with every try, and a deadline still ends the wait.
///
/// A stale lease or revision is a lost claim ([`CoreError::LeaseExpired`] /
/// [`CoreError::RevisionConflict`]) and nothing changes.
pub fn complete_attempt(
    record: &Record,
    completion: &Completion,
    now_ms: u64,
    retry: &RetryConfig,
) -> Result<Record, CoreError> {
    retry.validate()?;
    if completion.id != record.id {
        return Err(CoreError::arg("id", "completion is for another record"));
    }
    let lease = check_lease(record, &completion.lease_id, completion.revision, now_ms)?;
    let attempt = lease.attempt;
    // A claim filtered by relay leased the attempt for some targets only: the others
    // get no evidence and stay as they were.
    let all_open = record.unsettled_targets();
    let (open, left_out): (Vec<String>, Vec<String>) = match &lease.relays {
        None => (all_open, Vec::new()),
        Some(scope) => all_open.into_iter().partition(|t| scope.contains(t)),
    };
    for (i, r) in completion.results.iter().enumerate() {
        if !open.contains(&r.target) {
            return Err(CoreError::arg(
                "results",
                format!("`{}` is not an unsettled target of this attempt", r.target),
            ));
        }
        if completion.results[..i].iter().any(|p| p.target == r.target) {
            return Err(CoreError::arg(
                "results",
                format!("`{}` is reported twice", r.target),
            ));
        }
    }
    let answers: Vec<(&String, Outcome, String)> = open
        .iter()
        .map(
            |target| match completion.results.iter().find(|r| r.target == *target) {
                Some(r) => (target, r.outcome, r.message.clone()),
                None => (target, Outcome::NotAttempted, String::new()),
            },
        )
        .collect();
    // An attempt that reached no relay at all (offline, every relay down, circuit
    // open) is not counted: waiting for connectivity is not a failed delivery. It is
    // tried again under the same number, its evidence entries are reused (their
    // `tries` grow) and the backoff keeps growing; a deadline still ends the wait.
    let unreached = !answers.is_empty()
        && answers
            .iter()
            .all(|(_, o, _)| matches!(o, Outcome::Unreachable | Outcome::NotAttempted));
    let mut next = record.clone();
    let mut failures = Vec::new();
    // A relay holds a newer version of the event (the flusher's check before sending,
    // [`newer_message`]): the record ends superseded by it, whatever the others said.
    let newer = answers.iter().find_map(|(_, outcome, message)| {
        (*outcome == Outcome::Rejected(RejectReason::Newer))
            .then(|| message.split(' ').next().unwrap_or_default().to_string())
    });
    let mut rate_limited = false;
    let mut streak = 1u32;
    for (target, outcome, message) in answers {
        rate_limited |= outcome == Outcome::RateLimited;
        if !outcome.is_accepted() {
            if message.is_empty() {
                failures.push(format!("{target}: {}", outcome.as_str()));
            } else {
                failures.push(format!("{target}: {} ({message})", outcome.as_str()));
            }
        }
        let message = truncate(message, MAX_MESSAGE_LEN);
        let repeat = if unreached {
            next.evidence
                .iter_mut()
                .rev()
                .find(|e| e.target == *target)
                .filter(|e| {
                    e.attempt == attempt
                        && matches!(e.outcome, Outcome::Unreachable | Outcome::NotAttempted)
                })
        } else {
            None
        };
        match repeat {
            Some(e) => {
                e.again(outcome, message, now_ms);
                streak = streak.max(e.tries);
            }
            None => next.evidence.push(Evidence {
                target: target.clone(),
                attempt,
                outcome,
                message,
                at_ms: now_ms,
                tries: 1,
                first_at_ms: None,
            }),
        }
    }
    next.attempts = if unreached { record.attempts } else { attempt };
    next.last_attempt_ms = Some(now_ms);
    next.last_error = if failures.is_empty() {
        None
    } else {
        Some(truncate(failures.join("; "), MAX_ERROR_LEN))
    };
    next.satisfaction = next.evaluate();
    bump(&mut next, now_ms);
    if let Some(by) = newer {
        finish(&mut next, Stage::Superseded, Some(StopReason::RemoteNewer));
        next.superseded_by = Some(by);
        return Ok(next);
    }
    // The backoff of an unreached wait grows with its tries: 1st try of attempt n
    // waits as after attempt n, the k-th as after attempt n + k - 1.
    let backoff_after = if unreached {
        record.attempts.saturating_add(streak)
    } else {
        attempt
    };
    // An attempt for some relays only that settled all of them leaves the record due
    // at once for the targets it left out (they were due when it was claimed, and have
    // not had this attempt); otherwise the retry schedule and the budget apply.
    let settled_scope = !left_out.is_empty()
        && open
            .iter()
            .all(|t| next.target_state(t) != TargetState::Open);
    // The verdict stops delivery when the record asked for that or when no target is
    // left open; otherwise delivery goes on (stage `delivering`) like a pending record's.
    let verdict = next.satisfaction != Satisfaction::Pending;
    if verdict && (next.stop_when_satisfied || !next.has_open_targets()) {
        // The verdict gives the stage; the reason for an unmet policy is not used here.
        end_delivery(&mut next, StopReason::Rejected);
    } else if !unreached && !settled_scope && attempt >= next.attempt_limit {
        end_delivery(&mut next, StopReason::MaxAttempts);
    } else {
        let at = if settled_scope {
            now_ms
        } else {
            now_ms.saturating_add(retry.delay_ms(backoff_after, completion.jitter, rate_limited))
        };
        if next.effective_deadline_ms().is_some_and(|d| at >= d) {
            end_delivery(&mut next, StopReason::Expired);
        } else {
            next.stage = waiting_stage(&next);
            next.lease = None;
            next.reason = None;
            next.retry_not_before_ms = Some(at);
            next.due_ms = Some(at);
        }
    }
    Ok(next)
}

/// What the signer made of a draft ([`record_signing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signing {
    /// The draft signed, checked against its template by the Nostr layer
    /// (`nostr::Template::check`): id, signature, author and fields.
    Signed(EventEnvelope),
    /// Nothing to sign: the record holds a signed event (only its route was resolved).
    NotNeeded,
    /// The signer (or, before it, the resolver: [`Signed::routes`] is `None` for a
    /// record whose route is not resolved) could not be asked, failed, or did not
    /// answer in time (`outcome` `unreachable` or `timeout`): asked again after a
    /// backoff.
    Unavailable {
        /// `unreachable` or `timeout`.
        outcome: Outcome,
        /// What the signer or the resolver (or the timer) said.
        message: String,
    },
    /// Terminal: the signer refused ([`StopReason::SignerRefused`]), answered with
    /// something that is not the draft signed ([`StopReason::SignatureInvalid`]), the
    /// proof of work was not found in time ([`StopReason::PowUnfinished`]); or the
    /// resolver found a `dm` recipient without DM relays
    /// ([`StopReason::RecipientNotReady`]).
    Failed {
        /// The stop reason.
        reason: StopReason,
        /// Why.
        message: String,
    },
}

/// One relay a route resolved to, and why it was chosen (the resolver's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The relay URL, normalized by the Nostr layer.
    pub relay: String,
    /// Why: the intent and the resolver's reason (`<intent>: <reason>`, or the intent).
    pub reason: String,
}

/// What preparing one record produced, to record under the lease that claimed it
/// ([`ClaimRequest::prepare`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The item id.
    pub id: String,
    /// The lease the record was claimed under.
    pub lease_id: String,
    /// The record revision returned by the claim.
    pub revision: u64,
    /// What the signer made of it ([`Signing::NotNeeded`] for a signed event).
    pub signing: Signing,
    /// Its route's resolution, when it had one to resolve and the resolver answered:
    /// the relays chosen (the resolver is asked before the signer).
    pub routes: Option<Vec<Route>>,
    /// Uniform random input for the retry jitter.
    pub jitter: u32,
}

/// Records what preparing a leased record produced and releases the lease. First the
/// route's resolution, when [`Signed::routes`] holds it: one `accepted` evidence entry
/// from [`RESOLVER`] per relay (its message: the relay, then why), the relays added to
/// the targets (at most [`crate::core::plan::MAX_TARGETS`] in all; those added kept in
/// [`Record::routed`]); a record left with no target ends `exhausted` as `noRelays`.
/// Then the signer's answer:
/// - signed: the event replaces the template (the one write that changes a record's
///   event), with evidence `accepted` from [`SIGNER`]. The event must be the draft's
///   kind and author (the Nostr layer checked the rest).
/// - not needed: the record was signed already.
/// - unavailable: evidence from the helper that failed ([`RESOLVER`] when the route
///   was not resolved, else [`SIGNER`]; repeats of one outcome share an entry, whose
///   `tries` grow); back to `draft`, due after the retry schedule's delay for that many
///   tries; `exhausted` as `expired` when that falls past the deadline. No attempt is
///   counted.
/// - failed: evidence `rejected` from that helper; `exhausted` with the reason
///   (`retry` makes it a draft again, its route still to resolve).
///
/// Ready, the record is `pending`, due at once, and published like any record.
/// A stale lease or revision is a lost claim and nothing changes; a record that needs
/// no preparing, or an answer that does not fit it, is `invalid_argument`.
pub fn record_signing(
    record: &Record,
    signed: &Signed,
    now_ms: u64,
    retry: &RetryConfig,
) -> Result<Record, CoreError> {
    if signed.id != record.id {
        return Err(CoreError::arg("id", "the answer is for another record"));
    }
    check_lease(record, &signed.lease_id, signed.revision, now_ms)?;
    if record.needs() == 0 {
        return Err(CoreError::arg("id", "the record needs no preparing"));
    }
    match (&signed.signing, record.is_draft()) {
        (Signing::NotNeeded, true) => {
            return Err(CoreError::arg("event", "the draft is not signed"))
        }
        (Signing::Signed(_), false) => {
            return Err(CoreError::arg("event", "the record is signed already"))
        }
        _ => {}
    }
    let mut next = record.clone();
    bump(&mut next, now_ms);
    next.lease = None;
    next.retry_not_before_ms = None;
    let evidence = |target: &str, outcome, message: String| Evidence {
        target: target.to_string(),
        attempt: 0,
        outcome,
        message: truncate(message, MAX_MESSAGE_LEN),
        at_ms: now_ms,
        tries: 1,
        first_at_ms: None,
    };
    let mut helper = SIGNER;
    let resolving = next.needs() & super::record::NEEDS_RESOLVER != 0;
    match (&signed.routes, resolving) {
        (Some(routes), true) => {
            let mut added = Vec::new();
            for r in routes {
                let known = next.targets.contains(&r.relay) || added.contains(&r.relay);
                if !known && next.targets.len() + added.len() < super::plan::MAX_TARGETS {
                    added.push(r.relay.clone());
                }
                next.evidence.push(evidence(
                    RESOLVER,
                    Outcome::Accepted,
                    format!("{} {}", r.relay, r.reason),
                ));
            }
            next.targets.extend(added.iter().cloned());
            super::order::sort_dedup(&mut next.targets);
            next.routed = Some(added);
            next.satisfaction = next.evaluate();
            if next.targets.is_empty() {
                next.last_error = Some("its route resolved to no relay".into());
                finish(&mut next, Stage::Exhausted, Some(StopReason::NoRelays));
                return Ok(next);
            }
        }
        (None, true) => helper = RESOLVER,
        (None, false) => {}
        (Some(_), false) => {
            return Err(CoreError::arg(
                "routes",
                "the record has no route to resolve",
            ))
        }
    }
    match &signed.signing {
        Signing::Signed(event) => {
            match (record.event.meta.as_ref(), event.meta.as_ref()) {
                (Some(a), Some(b))
                    if !event.id.is_empty() && a.pubkey == b.pubkey && a.kind == b.kind => {}
                _ => {
                    return Err(CoreError::arg(
                        "event",
                        "is not the draft's kind and author",
                    ))
                }
            }
            next.event = event.clone();
            next.evidence
                .push(evidence(SIGNER, Outcome::Accepted, String::new()));
            next.last_error = None;
        }
        Signing::NotNeeded => next.last_error = None,
        Signing::Unavailable { outcome, message } => {
            let entry = evidence(helper, *outcome, message.clone());
            next.last_error = Some(entry.message.clone());
            let repeat = next
                .evidence
                .last_mut()
                .filter(|e| e.target == helper && e.outcome == *outcome);
            match repeat {
                Some(e) => e.again(*outcome, entry.message, now_ms),
                None => next.evidence.push(entry),
            }
            let at =
                now_ms.saturating_add(retry.delay_ms(next.signer_tries(), signed.jitter, false));
            if next.effective_deadline_ms().is_some_and(|d| at >= d) {
                finish(&mut next, Stage::Exhausted, Some(StopReason::Expired));
            } else {
                next.stage = Stage::Draft;
                next.retry_not_before_ms = Some(at);
                next.due_ms = Some(at);
            }
            return Ok(next);
        }
        Signing::Failed { reason, message } => {
            let why = match reason {
                StopReason::SignatureInvalid => super::outcome::RejectReason::Invalid,
                StopReason::PowUnfinished => super::outcome::RejectReason::Pow,
                _ => super::outcome::RejectReason::Other,
            };
            let entry = evidence(helper, Outcome::Rejected(why), message.clone());
            next.last_error = Some(entry.message.clone());
            next.evidence.push(entry);
            finish(&mut next, Stage::Exhausted, Some(*reason));
            return Ok(next);
        }
    }
    next.stage = waiting_stage(&next);
    next.due_ms = Some(now_ms);
    Ok(next)
}

/// Hands a lease back without recording an attempt: the record is claimable again
/// at once (its previous retry time, if later). A stale lease is a lost claim.
pub fn release(
    record: &Record,
    lease_id: &str,
    revision: u64,
    now_ms: u64,
) -> Result<Record, CoreError> {
    check_lease(record, lease_id, revision, now_ms)?;
    let mut next = record.clone();
    bump(&mut next, now_ms);
    next.lease = None;
    next.stage = waiting_stage(&next);
    next.due_ms = Some(next.retry_not_before_ms.unwrap_or(now_ms).max(now_ms));
    Ok(next)
}

/// A relay answered again after it was unreachable: a record waiting for it comes
/// due at `now_ms` instead of at the end of its backoff. Applies to a `retryable`
/// record with no active lease, due later than `now_ms`, for which `relay` is an
/// unsettled target whose latest evidence is `unreachable`, and none of whose
/// unsettled targets last answered `rateLimited` (a relay that asked to slow down
/// keeps its pause). Evidence, attempts and the budget stay; the revision grows.
/// `None` when the record does not qualify.
pub fn relay_back(record: &Record, relay: &str, now_ms: u64) -> Option<Record> {
    let waiting = Stage::AFTER_ATTEMPT.contains(&record.stage)
        && !record.has_active_lease(now_ms)
        && record.due_ms.is_some_and(|d| d > now_ms);
    if !waiting {
        return None;
    }
    let open = record.unsettled_targets();
    let unreachable = open.iter().any(|t| {
        t == relay
            && record
                .latest_evidence(t)
                .is_some_and(|e| e.outcome == Outcome::Unreachable)
    });
    let paused = open.iter().any(|t| {
        record
            .latest_evidence(t)
            .is_some_and(|e| e.outcome == Outcome::RateLimited)
    });
    if !unreachable || paused {
        return None;
    }
    let mut next = record.clone();
    bump(&mut next, now_ms);
    next.due_ms = Some(now_ms);
    next.retry_not_before_ms = Some(now_ms);
    Some(next)
}

/// Re-arms an exhausted record: keeps all evidence, continues the attempt numbering,
/// grants a fresh attempt budget (`attempts + max_attempts`), re-opens targets that
/// rejected terminally, and makes it due at once. Fails with
/// [`CoreError::NotRetryable`] for any other stage or when the deadline has passed.
pub fn retry(record: &Record, now_ms: u64) -> Result<Record, CoreError> {
    let not = |reason: String| CoreError::NotRetryable {
        id: record.id.clone(),
        reason,
    };
    if record.stage != Stage::Exhausted {
        return Err(not(format!("it is {}, not exhausted", record.stage)));
    }
    if record.is_expired_at(now_ms) {
        return Err(not("its deadline has passed".into()));
    }
    let mut next = record.clone();
    bump(&mut next, now_ms);
    // A route that resolved to no relay is resolved again (it added none).
    if next.reason == Some(StopReason::NoRelays) {
        next.routed = None;
    }
    next.rearmed_after_attempt = next.attempts;
    next.attempt_limit = next.attempts.saturating_add(next.max_attempts);
    next.satisfaction = next.evaluate();
    next.stage = waiting_stage(&next);
    next.reason = None;
    next.lease = None;
    next.retry_not_before_ms = None;
    next.due_ms = Some(now_ms);
    Ok(next)
}

/// Moves the next attempt of a waiting record to `at_ms` (now when earlier): a
/// scheduled record is first sent then, one waiting for a retry is tried then instead.
/// [`CoreError::AlreadyTerminal`] for a terminal record, [`CoreError::InFlight`] while
/// it is leased, `invalid_argument` (`at`) when `at_ms` is not before its deadline.
pub fn reschedule(record: &Record, at_ms: u64, now_ms: u64) -> Result<Record, CoreError> {
    not_terminal(record)?;
    if record.lease.as_ref().is_some_and(|l| l.is_active(now_ms)) {
        return Err(CoreError::InFlight {
            id: record.id.clone(),
        });
    }
    let at = at_ms.max(now_ms);
    super::plan::before_deadline("at", at, record.effective_deadline_ms())?;
    let mut next = record.clone();
    bump(&mut next, now_ms);
    next.lease = None;
    next.stage = waiting_stage(&next);
    next.retry_not_before_ms = Some(at);
    next.due_ms = Some(at);
    Ok(next)
}

/// Cancels a non-terminal record (a lease held on it becomes a lost claim).
/// Fails with [`CoreError::AlreadyTerminal`] when it is already terminal.
pub fn cancel(record: &Record, now_ms: u64) -> Result<Record, CoreError> {
    not_terminal(record)?;
    let mut next = record.clone();
    bump(&mut next, now_ms);
    finish(&mut next, Stage::Cancelled, Some(StopReason::Cancelled));
    Ok(next)
}

/// What the app asks of one record by its id: `retry`, `cancel`, `reschedule`. One type,
/// so a store applies all three through one path ([`crate::store::Store::change`]) and the
/// `.wasm` has one copy of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// [`retry()`], unless a newer version of its event is held
    /// ([`super::semantics::check_retry`]).
    Retry,
    /// [`cancel`].
    Cancel,
    /// [`reschedule`] to `at_ms`.
    Reschedule {
        /// The new due time, unix ms.
        at_ms: u64,
    },
}

impl Change {
    /// True when the store must read the record's NIP-01 slot (and watch its lock) for
    /// it: a retry must not re-arm a version older than one held.
    pub fn reads_slot(self) -> bool {
        self == Change::Retry
    }

    /// The record after the change; `related` are the records of its slot the store read
    /// (when [`Change::reads_slot`]).
    pub fn apply(
        self,
        record: &Record,
        related: &[Record],
        now_ms: u64,
    ) -> Result<Record, CoreError> {
        match self {
            Change::Retry => {
                super::semantics::check_retry(record, related)?;
                retry(record, now_ms)
            }
            Change::Cancel => cancel(record, now_ms),
            Change::Reschedule { at_ms } => reschedule(record, at_ms, now_ms),
        }
    }
}

/// [`CoreError::AlreadyTerminal`] for a terminal record (`cancel`, `reschedule`).
fn not_terminal(record: &Record) -> Result<(), CoreError> {
    if record.is_terminal() {
        return Err(CoreError::AlreadyTerminal {
            id: record.id.clone(),
            stage: record.stage,
        });
    }
    Ok(())
}

/// True when `purge(before_ms)` deletes the record: terminal, last changed before
/// `before_ms`.
pub fn is_purgeable(record: &Record, before_ms: u64) -> bool {
    record.is_terminal() && record.updated_ms < before_ms
}
