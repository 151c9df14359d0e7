//! How records, counts and flush results look in JavaScript: plain objects with
//! camelCase fields (see `docs/API.md`). Built from the stored [`Record`] through
//! read-only derivations of [`crate::core`] (latest evidence, target state,
//! effective deadline); nothing is decided here.

use serde::Serialize;

use super::error::details;
use crate::json::{self, JsonWriter, Value};
use wasm_bindgen::prelude::*;

use crate::core::{Evidence, Outcome, Policy, Record, Stage, StageCounts, TargetState};
use crate::flush::FlushSummary;

/// One answer of one relay in one attempt: `{ relay, attempt, outcome, rejectReason?,
/// message, at, tries, firstAt? }`.
fn evidence(w: &mut JsonWriter, e: &Evidence) {
    w.begin_object().key("relay").str(&e.target);
    w.key("attempt").u64(u64::from(e.attempt));
    w.key("outcome").str(e.outcome.as_str());
    if let Outcome::Rejected(r) = e.outcome {
        w.key("rejectReason").str(r.as_str());
    }
    w.key("message").str(&e.message).key("at").u64(e.at_ms);
    w.key("tries").u64(u64::from(e.tries));
    if let Some(first) = e.first_at_ms {
        w.key("firstAt").u64(first);
    }
    w.end_object();
}

/// The JavaScript form of a policy: `"all"`, `"any"`, `{ atLeast }`, `{ required }`.
pub(crate) fn policy_json(policy: &Policy) -> Value {
    match policy {
        Policy::All => Value::from("all"),
        Policy::Any => Value::from("any"),
        Policy::AtLeast { k } => details(vec![("atLeast", Value::from(*k))]),
        Policy::Required { relays } => details(vec![("required", Value::from(relays.clone()))]),
    }
}

fn state_str(s: TargetState) -> &'static str {
    match s {
        TargetState::Open => "open",
        TargetState::Accepted => "accepted",
        TargetState::Rejected => "rejected",
    }
}

/// A record as `OutboxRecord` JSON (fields in the order `docs/API.md` lists them).
fn record_view(w: &mut JsonWriter, r: &Record) {
    let required = |t: &str| match &r.policy {
        Policy::Required { relays } => relays.iter().any(|x| x == t),
        Policy::All => true,
        _ => false,
    };
    w.begin_object().key("id").str(&r.id);
    w.key("stage").str(r.stage.as_str());
    w.key("event")
        .value(&json::parse(&r.event.raw).unwrap_or(Value::Null));
    w.key("policy").value(&policy_json(&r.policy));
    w.key("targets").begin_array();
    for t in &r.targets {
        w.begin_object().key("relay").str(t);
        w.key("state").str(state_str(r.target_state(t)));
        w.key("required").bool(required(t)).key("latest");
        match r.latest_evidence(t) {
            Some(e) => evidence(w, e),
            None => {
                w.null();
            }
        }
        w.end_object();
    }
    w.end_array();
    w.key("evidence").begin_array();
    for e in &r.evidence {
        evidence(w, e);
    }
    w.end_array();
    w.key("attempts").u64(u64::from(r.attempts));
    w.key("maxAttempts").u64(u64::from(r.max_attempts));
    w.key("attemptLimit").u64(u64::from(r.attempt_limit));
    w.key("nextAttemptAt").opt_u64(match r.stage {
        Stage::Pending | Stage::Retryable => r.due_ms,
        _ => None,
    });
    w.key("lease");
    match (r.stage, &r.lease) {
        (Stage::Leased, Some(l)) => {
            w.begin_object().key("attempt").u64(u64::from(l.attempt));
            w.key("expiresAt").u64(l.expires_ms).end_object();
        }
        _ => {
            w.null();
        }
    }
    w.key("deadline").opt_u64(r.effective_deadline_ms());
    w.key("reason").opt_str(r.reason.map(|x| x.as_str()));
    w.key("lastError").opt_str(r.last_error.as_deref());
    w.key("createdAt").u64(r.created_ms);
    w.key("updatedAt").u64(r.updated_ms);
    w.key("lastAttemptAt").opt_u64(r.last_attempt_ms);
    w.key("revision").u64(r.revision);
    w.end_object();
}

/// JSON text to a plain JavaScript object (one JSON crossing).
fn parse(text: &str) -> JsValue {
    js_sys::JSON::parse(text).unwrap_or(JsValue::NULL)
}

/// A record as a JavaScript `OutboxRecord`.
pub(crate) fn record(r: &Record) -> JsValue {
    let mut w = JsonWriter::new();
    record_view(&mut w, r);
    parse(&w.finish())
}

/// Records as a JavaScript array of `OutboxRecord`.
pub(crate) fn records(rs: &[Record]) -> JsValue {
    let mut w = JsonWriter::new();
    w.begin_array();
    for r in rs {
        record_view(&mut w, r);
    }
    w.end_array();
    parse(&w.finish())
}

/// Counts per stage as a JavaScript `OutboxStatus`.
pub(crate) fn status(c: &StageCounts) -> JsValue {
    let mut w = JsonWriter::new();
    w.begin_object();
    for (key, n) in [
        ("pending", c.pending),
        ("leased", c.leased),
        ("retryable", c.retryable),
        ("satisfied", c.satisfied),
        ("exhausted", c.exhausted),
        ("cancelled", c.cancelled),
        ("corrupt", c.corrupt),
        ("total", c.total()),
    ] {
        w.key(key).u64(u64::from(n));
    }
    w.end_object();
    parse(&w.finish())
}

/// Undecodable rows as a JavaScript array of `CorruptRecord`: `{ id, stage, reason }`.
pub(crate) fn corrupt_rows(rows: &[crate::store::CorruptRow]) -> JsValue {
    let mut w = JsonWriter::new();
    w.begin_array();
    for c in rows {
        w.begin_object().key("id").str(&c.id);
        w.key("stage").opt_str(c.stage.map(|s| s.as_str()));
        w.key("reason").str(&c.reason);
        w.end_object();
    }
    w.end_array();
    parse(&w.finish())
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
    /// Claim rounds run.
    pub ticks: u32,
    /// When the next record is due (unix ms), if any.
    pub next_due_at: Option<u64>,
}

impl FlushView {
    /// The fields in `FlushResult` order, with their JSON values.
    fn fields(self) -> [(&'static str, Value); 13] {
        [
            ("ran", Value::Bool(self.ran)),
            ("skipped", self.skipped.map_or(Value::Null, Value::from)),
            ("claimed", Value::from(self.claimed)),
            ("attempts", Value::from(self.attempts)),
            ("publishes", Value::from(self.publishes)),
            ("delivered", Value::from(self.delivered)),
            ("retrying", Value::from(self.retrying)),
            ("exhausted", Value::from(self.exhausted)),
            ("lostClaims", Value::from(self.lost_claims)),
            ("released", Value::from(self.released)),
            ("woken", Value::from(self.woken)),
            ("ticks", Value::from(self.ticks)),
            (
                "nextDueAt",
                self.next_due_at.map_or(Value::Null, Value::from),
            ),
        ]
    }

    /// As a JavaScript `FlushResult`.
    pub(crate) fn to_js(self) -> JsValue {
        parse(&self.to_value().to_string())
    }

    /// As a JSON value (an object with the fields in `FlushResult` order).
    pub(crate) fn to_value(self) -> Value {
        Value::object(self.fields())
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
        self.ticks += summary.ticks;
    }
}
