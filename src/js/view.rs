//! How records, counts and flush results look in JavaScript: plain objects with
//! camelCase fields (see `docs/API.md`), written by serde-wasm-bindgen from the view
//! structs here (fields in the order `docs/API.md` lists them). Built from the stored
//! [`Record`] through read-only derivations of [`crate::core`] (latest evidence, target
//! state, effective deadline); nothing is decided here. Times are unix milliseconds,
//! handed over as JavaScript numbers (`f64`), never as `BigInt`.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::core::{
    EnqueueOutcome, Evidence, Outcome, Policy, Record, Stage, StageCounts, TargetState,
};
use crate::flush::{FlushSummary, Latency};

/// The serializer of every value handed to JavaScript: plain objects (not `Map`s),
/// `null` for an absent value.
pub(crate) const SERIALIZER: serde_wasm_bindgen::Serializer =
    serde_wasm_bindgen::Serializer::json_compatible();

/// `value` as a plain JavaScript value (`null` if it cannot be one, which the view
/// types here rule out: no map keys, no integers beyond 2^53).
fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    value.serialize(&SERIALIZER).unwrap_or(JsValue::NULL)
}

/// A time or count as a JavaScript number.
fn num(n: u64) -> f64 {
    n as f64
}

/// One answer of one relay in one attempt: `Evidence`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EvidenceView<'a> {
    relay: &'a str,
    attempt: u32,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reject_reason: Option<&'static str>,
    message: &'a str,
    at: f64,
    tries: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_at: Option<f64>,
}

impl<'a> EvidenceView<'a> {
    fn new(e: &'a Evidence) -> EvidenceView<'a> {
        EvidenceView {
            relay: &e.target,
            attempt: e.attempt,
            outcome: e.outcome.as_str(),
            reject_reason: match e.outcome {
                Outcome::Rejected(r) => Some(r.as_str()),
                _ => None,
            },
            message: &e.message,
            at: num(e.at_ms),
            tries: e.tries,
            first_at: e.first_at_ms.map(num),
        }
    }
}

/// A policy: `"all"`, `"any"`, `{ atLeast }`, `{ required }`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum PolicyView<'a> {
    All,
    Any,
    AtLeast(u32),
    Required(&'a [String]),
}

impl<'a> PolicyView<'a> {
    pub(crate) fn new(policy: &'a Policy) -> PolicyView<'a> {
        match policy {
            Policy::All => PolicyView::All,
            Policy::Any => PolicyView::Any,
            Policy::AtLeast { k } => PolicyView::AtLeast(*k),
            Policy::Required { relays } => PolicyView::Required(relays),
        }
    }
}

fn state_str(s: TargetState) -> &'static str {
    match s {
        TargetState::Open => "open",
        TargetState::Accepted => "accepted",
        TargetState::Rejected => "rejected",
    }
}

/// One target of a record: `TargetStatus`.
#[derive(Serialize)]
struct TargetView<'a> {
    relay: &'a str,
    state: &'static str,
    required: bool,
    latest: Option<EvidenceView<'a>>,
}

/// The lease of a record in stage `leased`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LeaseView<'a> {
    attempt: u32,
    expires_at: f64,
    /// The relays of an attempt filtered by relay; absent when it goes to every
    /// unsettled target.
    #[serde(skip_serializing_if = "Option::is_none")]
    relays: Option<&'a [String]>,
}

/// A record: `OutboxRecord`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RecordView<'a> {
    id: &'a str,
    stage: &'static str,
    lane: &'a str,
    priority: &'static str,
    /// The event's stored text, parsed by `JSON.parse` (the signed event as enqueued).
    #[serde(serialize_with = "serde_wasm_bindgen::preserve::serialize")]
    event: JsValue,
    policy: PolicyView<'a>,
    targets: Vec<TargetView<'a>>,
    evidence: Vec<EvidenceView<'a>>,
    attempts: u32,
    max_attempts: u32,
    attempt_limit: u32,
    next_attempt_at: Option<f64>,
    lease: Option<LeaseView<'a>>,
    deadline: Option<f64>,
    reason: Option<&'static str>,
    superseded_by: Option<&'a str>,
    last_error: Option<&'a str>,
    created_at: f64,
    updated_at: f64,
    last_attempt_at: Option<f64>,
    revision: f64,
    takeovers: u32,
}

impl<'a> RecordView<'a> {
    fn new(r: &'a Record) -> RecordView<'a> {
        let required = |t: &str| match &r.policy {
            Policy::Required { relays } => relays.iter().any(|x| x == t),
            Policy::All => true,
            _ => false,
        };
        RecordView {
            id: &r.id,
            stage: r.stage.as_str(),
            lane: &r.lane,
            priority: r.priority.as_str(),
            event: js_sys::JSON::parse(&r.event.raw).unwrap_or(JsValue::NULL),
            policy: PolicyView::new(&r.policy),
            targets: r
                .targets
                .iter()
                .map(|t| TargetView {
                    relay: t,
                    state: state_str(r.target_state(t)),
                    required: required(t),
                    latest: r.latest_evidence(t).map(EvidenceView::new),
                })
                .collect(),
            evidence: r.evidence.iter().map(EvidenceView::new).collect(),
            attempts: r.attempts,
            max_attempts: r.max_attempts,
            attempt_limit: r.attempt_limit,
            next_attempt_at: match r.stage {
                Stage::Pending | Stage::Retryable => r.due_ms.map(num),
                _ => None,
            },
            lease: match (r.stage, &r.lease) {
                (Stage::Leased, Some(l)) => Some(LeaseView {
                    attempt: l.attempt,
                    expires_at: num(l.expires_ms),
                    relays: l.relays.as_deref(),
                }),
                _ => None,
            },
            deadline: r.effective_deadline_ms().map(num),
            reason: r.reason.map(|x| x.as_str()),
            superseded_by: r.superseded_by.as_deref(),
            last_error: r.last_error.as_deref(),
            created_at: num(r.created_ms),
            updated_at: num(r.updated_ms),
            last_attempt_at: r.last_attempt_ms.map(num),
            revision: num(r.revision),
            takeovers: r.takeovers,
        }
    }
}

/// A record as a JavaScript `OutboxRecord`.
pub(crate) fn record(r: &Record) -> JsValue {
    to_js(&RecordView::new(r))
}

/// Records as a JavaScript array of `OutboxRecord`.
pub(crate) fn records(rs: &[Record]) -> JsValue {
    to_js(&rs.iter().map(RecordView::new).collect::<Vec<_>>())
}

/// Counts per stage: `OutboxStatus`.
#[derive(Serialize)]
struct StatusView {
    pending: u32,
    leased: u32,
    retryable: u32,
    satisfied: u32,
    exhausted: u32,
    cancelled: u32,
    superseded: u32,
    corrupt: u32,
    total: u32,
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
        superseded: c.superseded,
        corrupt: c.corrupt,
        total: c.total(),
    })
}

/// An undecodable row: `CorruptRecord`.
#[derive(Serialize)]
struct CorruptView<'a> {
    id: &'a str,
    stage: Option<&'static str>,
    reason: &'a str,
}

/// Undecodable rows as a JavaScript array of `CorruptRecord`: `{ id, stage, reason }`.
pub(crate) fn corrupt_rows(rows: &[crate::store::CorruptRow]) -> JsValue {
    let views: Vec<CorruptView<'_>> = rows
        .iter()
        .map(|c| CorruptView {
            id: &c.id,
            stage: c.stage.map(|s| s.as_str()),
            reason: &c.reason,
        })
        .collect();
    to_js(&views)
}

/// The answer of `enqueue`: `EnqueueResult` (`record` is already a JavaScript value,
/// the same object the `enqueued` event carries).
#[derive(Serialize)]
struct EnqueueResultView<'a> {
    id: &'a str,
    disposition: &'static str,
    #[serde(serialize_with = "preserved")]
    record: &'a JsValue,
}

/// A JavaScript value kept as it is (serde-wasm-bindgen only).
fn preserved<S: serde::Serializer>(v: &&JsValue, s: S) -> Result<S::Ok, S::Error> {
    serde_wasm_bindgen::preserve::serialize(*v, s)
}

/// An `EnqueueResult` around a record already converted by [`record`].
pub(crate) fn enqueue_result(id: &str, outcome: EnqueueOutcome, record: &JsValue) -> JsValue {
    to_js(&EnqueueResultView {
        id,
        disposition: match outcome {
            EnqueueOutcome::Created => "created",
            EnqueueOutcome::Replay => "replay",
            EnqueueOutcome::Superseded => "superseded",
        },
        record,
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
    /// Claimed records handed back unattempted (half their lease passed before a
    /// relay had room for them); due again at once.
    pub released: u32,
    /// Waiting records made due at once because a relay they could not reach
    /// answered again.
    pub woken: u32,
    /// Records whose live lease was taken over from a flusher that was gone (a closed
    /// tab, a killed browser, a terminated worker): attempted in this run, not after
    /// the dead lease's expiry. Counted in `claimed` too.
    pub taken_over: u32,
    /// Claim rounds run (a takeover round included).
    pub ticks: u32,
    /// When the next record is due (unix ms), if any.
    #[serde(serialize_with = "opt_num")]
    pub next_due_at: Option<u64>,
    /// How long answers waited from their arrival to the commit that recorded them
    /// (the last run that recorded any).
    pub ok_to_commit: Option<Latency>,
}

impl FlushView {
    /// As a JavaScript `FlushResult`.
    pub(crate) fn to_js(self) -> JsValue {
        to_js(&self)
    }

    /// Adds a run's counts.
    pub(crate) fn add(&mut self, summary: &FlushSummary) {
        let s = &summary.stats;
        self.claimed += s.claimed;
        self.attempts += s.attempts;
        self.publishes += s.publishes;
        self.delivered += s.satisfied;
        self.retrying += s.retrying;
        self.exhausted += s.exhausted;
        self.lost_claims += s.lost_claims;
        self.released += s.released;
        self.woken += s.woken;
        self.taken_over += s.taken_over;
        self.ticks += summary.ticks;
        if summary.ok_to_commit.count > 0 {
            self.ok_to_commit = Some(summary.ok_to_commit);
        }
    }
}

/// An optional time as a JavaScript number (any `u64`, as [`num`]).
fn opt_num<S: serde::Serializer>(n: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    n.map(num).serialize(s)
}
