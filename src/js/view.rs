//! How records, counts and flush results look in JavaScript: plain objects with
//! camelCase fields (see `docs/API.md`), written as JSON by serde_json from the view
//! structs here (fields in the order `docs/API.md` lists them) and parsed by one
//! `JSON.parse`. serde-wasm-bindgen's serializer wrote them field by field; with every
//! view on the JSON path it left the browser `.wasm`: 2 486 B gzipped less (262 980 →
//! 260 494 B, scripts/build.sh). Built from the stored [`Record`] through read-only
//! derivations of [`crate::core`] (latest evidence, target state, effective deadline);
//! nothing is decided here. Times are unix milliseconds, handed over as JavaScript
//! numbers (`f64`), never as `BigInt`.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::core::{
    EnqueueOutcome, Evidence, GroupRef, Outcome, Policy, Record, Satisfaction, Stage, StageCounts,
    TargetState,
};
use crate::flush::{FlushSummary, Latency};

/// `value` as a plain JavaScript value: its JSON, parsed (`null` if it cannot be one,
/// which the view types here rule out: no map keys, no integers beyond 2^53).
pub(crate) fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    serde_json::to_string(value)
        .ok()
        .and_then(|text| js_sys::JSON::parse(&text).ok())
        .unwrap_or(JsValue::NULL)
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
    at: u64,
    tries: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_at: Option<u64>,
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
            at: e.at_ms,
            tries: e.tries,
            first_at: e.first_at_ms,
        }
    }
}

/// A policy: `"all"`, `"any"`, `{ atLeast }`, `{ required }`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum PolicyView<'a> {
    All,
    Any,
    AtLeast(u32),
    Required(&'a [String]),
}

impl<'a> PolicyView<'a> {
    fn new(policy: &'a Policy) -> PolicyView<'a> {
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
    expires_at: u64,
    /// The relays of an attempt filtered by relay; absent when it goes to every
    /// unsettled target.
    #[serde(skip_serializing_if = "Option::is_none")]
    relays: Option<&'a [String]>,
}

/// A record (`OutboxRecord`) up to its event.
#[derive(Serialize)]
struct RecordHead<'a> {
    id: &'a str,
    stage: &'static str,
    lane: &'a str,
    priority: &'static str,
}

/// A record (`OutboxRecord`) after its event.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RecordTail<'a> {
    policy: PolicyView<'a>,
    satisfaction: Satisfaction,
    stop_when_satisfied: bool,
    targets: Vec<TargetView<'a>>,
    evidence: Vec<EvidenceView<'a>>,
    attempts: u32,
    max_attempts: u32,
    attempt_limit: u32,
    next_attempt_at: Option<u64>,
    lease: Option<LeaseView<'a>>,
    deadline: Option<u64>,
    reason: Option<&'static str>,
    superseded_by: Option<&'a str>,
    last_error: Option<&'a str>,
    created_at: u64,
    updated_at: u64,
    last_attempt_at: Option<u64>,
    revision: u64,
    takeovers: u32,
    /// An unsigned draft: `event` is its template.
    draft: bool,
    /// Its place in a group (`{ id, index, size }`), or `null`.
    group: Option<GroupRef<'a>>,
    /// Its routing intents (`[]`: none).
    route: &'a [String],
    /// Once its route is resolved, the relays that added; `null` before.
    routed: Option<&'a [String]>,
}

impl<'a> RecordTail<'a> {
    fn new(r: &'a Record) -> RecordTail<'a> {
        let required = |t: &str| match &r.policy {
            Policy::Required { relays } => relays.iter().any(|x| x == t),
            Policy::All => true,
            _ => false,
        };
        RecordTail {
            policy: PolicyView::new(&r.policy),
            satisfaction: r.satisfaction,
            stop_when_satisfied: r.stop_when_satisfied,
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
                Stage::Draft | Stage::Pending | Stage::Retryable | Stage::Delivering => r.due_ms,
                _ => None,
            },
            lease: match (r.stage, &r.lease) {
                (Stage::Leased, Some(l)) => Some(LeaseView {
                    attempt: l.attempt,
                    expires_at: l.expires_ms,
                    relays: l.relays.as_deref(),
                }),
                _ => None,
            },
            deadline: r.effective_deadline_ms(),
            reason: r.reason.map(|x| x.as_str()),
            superseded_by: r.superseded_by.as_deref(),
            last_error: r.last_error.as_deref(),
            created_at: r.created_ms,
            updated_at: r.updated_ms,
            last_attempt_at: r.last_attempt_ms,
            revision: r.revision,
            takeovers: r.takeovers,
            draft: r.is_draft(),
            group: r.group(),
            route: &r.route,
            routed: r.routed.as_deref(),
        }
    }
}

/// Appends `r` as an `OutboxRecord` in JSON to `out`, fields in the order of
/// `docs/API.md`, with `event` as the event's stored text (or `null`, `with_event`
/// false). A record view is written here as JSON and handed to JavaScript as one
/// string for one `JSON.parse`, not built field by field by serde-wasm-bindgen: a
/// flush makes two per record (`attempt`, `delivered`), and each of those was some
/// sixty calls across the boundary (the numbers are in docs/BENCHMARKS.md).
fn write_record(out: &mut Vec<u8>, r: &Record, with_event: bool) {
    let head = RecordHead {
        id: &r.id,
        stage: r.stage.as_str(),
        lane: &r.lane,
        priority: r.priority.as_str(),
    };
    // Serializing these borrowed views cannot fail (no maps, no non-string keys).
    let (Ok(head), Ok(tail)) = (
        serde_json::to_vec(&head),
        serde_json::to_vec(&RecordTail::new(r)),
    ) else {
        out.extend_from_slice(b"null");
        return;
    };
    out.extend_from_slice(&head[..head.len() - 1]); // without its `}`
    out.extend_from_slice(b",\"event\":");
    out.extend_from_slice(if with_event {
        r.event.raw.as_bytes()
    } else {
        b"null"
    });
    out.push(b',');
    out.extend_from_slice(&tail[1..]); // without its `{`
}

/// Parses what [`write_record`] wrote for `rs`: one record, or with `array` an array of
/// them. The event's stored text was checked as JSON when it was enqueued; a row changed
/// behind the outbox's back could hold text that is not, and then the record is shown
/// with `event: null`, as before.
fn parse_records(rs: &[Record], array: bool) -> JsValue {
    for with_event in [true, false] {
        let mut out = Vec::with_capacity(rs.len() * 1_024 + 2);
        if array {
            out.push(b'[');
        }
        for (i, r) in rs.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_record(&mut out, r, with_event);
        }
        if array {
            out.push(b']');
        }
        // Every byte written is UTF-8: JSON punctuation, serde_json's output and the
        // stored text of a `String`.
        let text = String::from_utf8(out).unwrap_or_default();
        if let Ok(v) = js_sys::JSON::parse(&text) {
            return v;
        }
    }
    JsValue::NULL
}

/// A record as a JavaScript `OutboxRecord`.
pub(crate) fn record(r: &Record) -> JsValue {
    parse_records(std::slice::from_ref(r), false)
}

/// Records as a JavaScript array of `OutboxRecord`.
pub(crate) fn records(rs: &[Record]) -> JsValue {
    parse_records(rs, true)
}

/// Counts per stage: `OutboxStatus`.
#[derive(Serialize)]
struct StatusView {
    draft: u32,
    pending: u32,
    leased: u32,
    retryable: u32,
    delivering: u32,
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
        draft: c.draft,
        pending: c.pending,
        leased: c.leased,
        retryable: c.retryable,
        delivering: c.delivering,
        satisfied: c.satisfied,
        exhausted: c.exhausted,
        cancelled: c.cancelled,
        superseded: c.superseded,
        corrupt: c.corrupt,
        total: c.total(),
    })
}

/// Progress of long work: `OutboxProgress` (`progress` events).
#[derive(Serialize)]
struct ProgressView {
    operation: &'static str,
    done: usize,
    total: usize,
}

/// `{ operation, done, total }`.
pub(crate) fn progress(operation: &'static str, done: usize, total: usize) -> JsValue {
    to_js(&ProgressView {
        operation,
        done,
        total,
    })
}

/// The answer of `import`: `ImportResult`.
#[derive(Serialize)]
struct ImportView {
    total: usize,
    created: u32,
    replayed: u32,
    superseded: u32,
}

/// `{ total, created, replayed, superseded }` from the counts per enqueue outcome
/// (created, replay, superseded).
pub(crate) fn import_result(total: usize, counts: [u32; 3]) -> JsValue {
    to_js(&ImportView {
        total,
        created: counts[0],
        replayed: counts[1],
        superseded: counts[2],
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

/// An `EnqueueResult` (`{ id, disposition, record }`) around a record already
/// converted by [`record`]: the same object the `enqueued` event carries.
pub(crate) fn enqueue_result(id: &str, outcome: EnqueueOutcome, record: &JsValue) -> JsValue {
    let disposition = match outcome {
        EnqueueOutcome::Created => "created",
        EnqueueOutcome::Replay => "replay",
        EnqueueOutcome::Superseded => "superseded",
    };
    object([
        ("id", JsValue::from_str(id)),
        ("disposition", JsValue::from_str(disposition)),
        ("record", record.clone()),
    ])
}

/// A plain object of these three properties.
fn object(entries: [(&str, JsValue); 3]) -> JsValue {
    let out = js_sys::Object::new();
    for (key, value) in entries {
        // Setting a property of a fresh plain object does not fail.
        let _ = js_sys::Reflect::set(&out, &JsValue::from_str(key), &value);
    }
    out.into()
}

/// `enqueueGroup`'s answer from the `.wasm`: `{ id, results, group: null }`, `results`
/// one `EnqueueResult` per member (`js/groups.js` sums them up into `group`).
pub(crate) fn group_enqueued(id: &str, results: js_sys::Array) -> JsValue {
    object([
        ("id", JsValue::from_str(id)),
        ("results", results.into()),
        ("group", JsValue::NULL),
    ])
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
    /// Records that became satisfied (some still delivering).
    pub delivered: u32,
    /// Records scheduled for another attempt, their verdict not in yet.
    pub retrying: u32,
    /// Records that became exhausted (some still delivering).
    pub exhausted: u32,
    /// Records whose delivery ended after an earlier run reported their verdict.
    pub settled: u32,
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
    /// Drafts signed and stored signed (then published in the same run).
    pub signed: u32,
    /// Publishes not made because the relay, asked by id after an unclear answer, sent
    /// the event back (recorded `duplicate`, "read back:").
    pub read_back: u32,
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
        self.settled += s.settled;
        self.lost_claims += s.lost_claims;
        self.released += s.released;
        self.woken += s.woken;
        self.taken_over += s.taken_over;
        self.signed += s.signed;
        self.read_back += s.read_back;
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
