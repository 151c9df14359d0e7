//! How records, counts and flush results look in JavaScript: plain objects with
//! camelCase fields (see `docs/API.md`). Built from the stored [`Record`] through
//! read-only derivations of [`crate::core`] (latest evidence, target state,
//! effective deadline); nothing is decided here.

use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::core::{Evidence, Outcome, Policy, Record, Stage, StageCounts, TargetState};
use crate::flush::TickStats;

/// One answer of one relay in one attempt.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EvidenceView<'a> {
    relay: &'a str,
    attempt: u32,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reject_reason: Option<&'static str>,
    message: &'a str,
    at: u64,
    tries: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_at: Option<u64>,
}

impl<'a> From<&'a Evidence> for EvidenceView<'a> {
    fn from(e: &'a Evidence) -> Self {
        EvidenceView {
            relay: &e.target,
            attempt: e.attempt,
            outcome: e.outcome.as_str(),
            reject_reason: match e.outcome {
                Outcome::Rejected(r) => Some(r.as_str()),
                _ => None,
            },
            message: &e.message,
            at: e.at_ms,
            tries: e.tries,
            first_at: e.first_at_ms,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TargetView<'a> {
    relay: &'a str,
    state: &'static str,
    required: bool,
    latest: Option<EvidenceView<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LeaseView {
    attempt: u32,
    expires_at: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RecordView<'a> {
    id: &'a str,
    stage: &'static str,
    event: Value,
    policy: Value,
    targets: Vec<TargetView<'a>>,
    evidence: Vec<EvidenceView<'a>>,
    attempts: u32,
    max_attempts: u32,
    attempt_limit: u32,
    next_attempt_at: Option<u64>,
    lease: Option<LeaseView>,
    deadline: Option<u64>,
    reason: Option<&'static str>,
    last_error: Option<&'a str>,
    created_at: u64,
    updated_at: u64,
    last_attempt_at: Option<u64>,
    revision: u64,
}

/// The JavaScript form of a policy: `"all"`, `"any"`, `{ atLeast }`, `{ required }`.
pub(crate) fn policy_json(policy: &Policy) -> Value {
    match policy {
        Policy::All => Value::from("all"),
        Policy::Any => Value::from("any"),
        Policy::AtLeast { k } => serde_json::json!({ "atLeast": k }),
        Policy::Required { relays } => serde_json::json!({ "required": relays }),
    }
}

fn state_str(s: TargetState) -> &'static str {
    match s {
        TargetState::Open => "open",
        TargetState::Accepted => "accepted",
        TargetState::Rejected => "rejected",
    }
}

fn record_view(r: &Record) -> RecordView<'_> {
    let required = |t: &str| match &r.policy {
        Policy::Required { relays } => relays.iter().any(|x| x == t),
        Policy::All => true,
        _ => false,
    };
    RecordView {
        id: &r.id,
        stage: r.stage.as_str(),
        event: serde_json::from_str(&r.event.raw).unwrap_or(Value::Null),
        policy: policy_json(&r.policy),
        targets: r
            .targets
            .iter()
            .map(|t| TargetView {
                relay: t,
                state: state_str(r.target_state(t)),
                required: required(t),
                latest: r.latest_evidence(t).map(EvidenceView::from),
            })
            .collect(),
        evidence: r.evidence.iter().map(EvidenceView::from).collect(),
        attempts: r.attempts,
        max_attempts: r.max_attempts,
        attempt_limit: r.attempt_limit,
        next_attempt_at: match r.stage {
            Stage::Pending | Stage::Retryable => r.due_ms,
            _ => None,
        },
        lease: match (r.stage, &r.lease) {
            (Stage::Leased, Some(l)) => Some(LeaseView {
                attempt: l.attempt,
                expires_at: l.expires_ms,
            }),
            _ => None,
        },
        deadline: r.effective_deadline_ms(),
        reason: r.reason.map(|x| x.as_str()),
        last_error: r.last_error.as_deref(),
        created_at: r.created_ms,
        updated_at: r.updated_ms,
        last_attempt_at: r.last_attempt_ms,
        revision: r.revision,
    }
}

/// Serializes a view to a plain JavaScript object (one JSON crossing).
pub(crate) fn to_js<T: Serialize>(value: &T) -> JsValue {
    match serde_json::to_string(value) {
        Ok(text) => js_sys::JSON::parse(&text).unwrap_or(JsValue::NULL),
        Err(_) => JsValue::NULL,
    }
}

/// A record as a JavaScript `OutboxRecord`.
pub(crate) fn record(r: &Record) -> JsValue {
    to_js(&record_view(r))
}

/// Records as a JavaScript array of `OutboxRecord`.
pub(crate) fn records(rs: &[Record]) -> JsValue {
    to_js(&rs.iter().map(record_view).collect::<Vec<_>>())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusView {
    pending: u32,
    leased: u32,
    retryable: u32,
    satisfied: u32,
    exhausted: u32,
    cancelled: u32,
    corrupt: u32,
    total: u32,
}

#[derive(Serialize)]
struct CorruptView<'a> {
    id: &'a str,
    stage: Option<&'static str>,
    reason: &'a str,
}

/// Undecodable rows as a JavaScript array of `CorruptRecord`.
pub(crate) fn corrupt_rows(rows: &[crate::store::CorruptRow]) -> JsValue {
    to_js(
        &rows
            .iter()
            .map(|c| CorruptView {
                id: &c.id,
                stage: c.stage.map(|s| s.as_str()),
                reason: &c.reason,
            })
            .collect::<Vec<_>>(),
    )
}

/// Counts per stage as a JavaScript `OutboxStatus`.
pub(crate) fn status(c: &StageCounts) -> JsValue {
    to_js(&StatusView {
        pending: c.pending,
        leased: c.leased,
        retryable: c.retryable,
        satisfied: c.satisfied,
        exhausted: c.exhausted,
        cancelled: c.cancelled,
        corrupt: c.corrupt,
        total: c.total(),
    })
}

/// What a flush did, as a JavaScript `FlushResult`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlushView {
    /// True when this context ran the flusher.
    pub ran: bool,
    /// Why it did not run: `"locked"` (another context is flushing this database) or
    /// `"offline"`.
    pub skipped: Option<&'static str>,
    /// Records claimed.
    pub claimed: u32,
    /// Attempts made.
    pub attempts: u32,
    /// Single publishes to a relay.
    pub publishes: u32,
    /// Records that became satisfied.
    pub delivered: u32,
    /// Records scheduled for another attempt.
    pub retrying: u32,
    /// Records that became exhausted.
    pub exhausted: u32,
    /// Results that arrived after their lease was lost.
    pub lost_claims: u32,
    /// Claim rounds run.
    pub ticks: u32,
    /// When the next record is due (unix ms), if any.
    pub next_due_at: Option<u64>,
}

impl FlushView {
    /// Adds one tick's counts.
    pub(crate) fn add(&mut self, s: &TickStats) {
        self.claimed += s.claimed;
        self.attempts += s.attempts;
        self.publishes += s.publishes;
        self.delivered += s.satisfied;
        self.retrying += s.retrying;
        self.exhausted += s.exhausted;
        self.lost_claims += s.lost_claims;
        self.ticks += 1;
    }
}
