//! The stored encoding of a record (format 1), shared by every durable store.
//!
//! A row is a small flat object: the fields a database must index, kept beside the
//! record document itself as JSON text. The JSON text is the source of truth; the index
//! fields are derived from it on every write and never read back into the record.
//!
//! ```text
//! { "id": "<item id>",           primary key
//!   "v": 1,                      row format version
//!   "stage": "pending",          Stage::as_str()
//!   "dueMs": 1700000000000,      absent when terminal (keeps the row out of the due index)
//!   "createdMs": 1700000000000,
//!   "eventId": "<64 hex>",
//!   "doc": "{...}" }             core::Record as JSON (camelCase fields)
//! ```
//! A future format bumps `v`; a reader refuses (as corrupt, never deleting) a row
//! whose `v` it does not know. Times are unix milliseconds, exact as JavaScript numbers
//! up to 2^53.
//!
//! Pure: no I/O. It must not decide anything about the record.

use serde::{Deserialize, Serialize};

use crate::core::Record;

use super::StoreError;

/// The row format this build writes and reads.
pub const ROW_FORMAT: u32 = 1;

/// One stored record: index fields plus the record document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredRow {
    /// The item id (primary key).
    pub id: String,
    /// The row format version ([`ROW_FORMAT`]).
    pub v: u32,
    /// The stage name.
    pub stage: String,
    /// When the record can next be claimed; absent when terminal.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub due_ms: Option<f64>,
    /// When the record was enqueued.
    pub created_ms: f64,
    /// The event id.
    pub event_id: String,
    /// The record as JSON text.
    pub doc: String,
}

/// Encodes a record into its stored row.
pub fn encode(record: &Record) -> Result<StoredRow, StoreError> {
    Ok(StoredRow {
        id: record.id.clone(),
        v: ROW_FORMAT,
        stage: record.stage.as_str().to_string(),
        due_ms: record.due_ms.map(|d| d as f64),
        created_ms: record.created_ms as f64,
        event_id: record.event.id.clone(),
        doc: doc::write(record),
    })
}

/// Decodes a stored row. A row of an unknown format, a document that does not parse,
/// or one whose id disagrees with its key is [`StoreError::Corrupt`].
pub fn decode(row: &StoredRow) -> Result<Record, StoreError> {
    let corrupt = |message: String| StoreError::Corrupt {
        id: row.id.clone(),
        message,
    };
    if row.v != ROW_FORMAT {
        return Err(corrupt(format!(
            "row format {} is not supported (this build reads {ROW_FORMAT})",
            row.v
        )));
    }
    let record = doc::read(&row.doc).map_err(|e| corrupt(format!("document: {e}")))?;
    if record.id != row.id {
        return Err(corrupt(format!(
            "document id `{}` differs from its key",
            record.id
        )));
    }
    Ok(record)
}

/// The record document: the JSON that `serde_json` wrote for the derived
/// `Serialize` of [`Record`] (camelCase fields, `Policy` tagged by `kind`, `Outcome`
/// tagged by `kind` with its `reason`), written and read by hand. Hand-written
/// because the derived (de)serializers were the largest part of the .wasm; the text
/// is byte-identical (see the tests) and reading accepts what the derive accepted
/// from that writer: unknown fields are ignored, an absent or `null` optional field
/// is `None`, integers must be non-negative whole numbers in range.
mod doc {
    use std::cell::RefCell;

    use crate::core::{
        EventEnvelope, Evidence, Lease, Outcome, Policy, Record, RejectReason, Satisfaction, Stage,
        StopReason,
    };
    use crate::json::{self, JsonWriter, Value};

    /// The document text of `r`.
    pub(super) fn write(r: &Record) -> String {
        let mut w = JsonWriter::new();
        w.begin_object().key("id").str(&r.id);
        w.key("event").begin_object();
        w.key("id").str(&r.event.id).key("raw").str(&r.event.raw);
        w.key("expiration").opt_u64(r.event.expiration).end_object();
        w.key("targets").strs(&r.targets);
        w.key("policy").begin_object().key("kind");
        match &r.policy {
            Policy::All => w.str("all"),
            Policy::Any => w.str("any"),
            Policy::AtLeast { k } => w.str("atLeast").key("k").u64(u64::from(*k)),
            Policy::Required { relays } => w.str("required").key("relays").strs(relays),
        };
        w.end_object();
        w.key("maxAttempts").u64(u64::from(r.max_attempts));
        w.key("deadlineMs").opt_u64(r.deadline_ms);
        w.key("planDigest").str(&r.plan_digest);
        w.key("revision").u64(r.revision);
        w.key("stage").str(r.stage.as_str());
        w.key("lease");
        match &r.lease {
            None => w.null(),
            Some(l) => w
                .begin_object()
                .key("id")
                .str(&l.id)
                .key("owner")
                .str(&l.owner)
                .key("acquiredMs")
                .u64(l.acquired_ms)
                .key("expiresMs")
                .u64(l.expires_ms)
                .key("attempt")
                .u64(u64::from(l.attempt))
                .end_object(),
        };
        w.key("attempts").u64(u64::from(r.attempts));
        w.key("attemptLimit").u64(u64::from(r.attempt_limit));
        w.key("rearmedAfterAttempt")
            .u64(u64::from(r.rearmed_after_attempt));
        w.key("lastAttemptMs").opt_u64(r.last_attempt_ms);
        w.key("evidence").begin_array();
        for e in &r.evidence {
            w.begin_object().key("target").str(&e.target);
            w.key("attempt").u64(u64::from(e.attempt));
            w.key("outcome")
                .begin_object()
                .key("kind")
                .str(e.outcome.as_str());
            if let Outcome::Rejected(reason) = e.outcome {
                w.key("reason").str(reason.as_str());
            }
            w.end_object();
            w.key("message").str(&e.message).key("atMs").u64(e.at_ms);
            if e.tries != 1 {
                w.key("tries").u64(u64::from(e.tries));
            }
            if let Some(first) = e.first_at_ms {
                w.key("firstAtMs").u64(first);
            }
            w.end_object();
        }
        w.end_array();
        w.key("satisfaction").str(satisfaction_str(r.satisfaction));
        w.key("retryNotBeforeMs").opt_u64(r.retry_not_before_ms);
        w.key("dueMs").opt_u64(r.due_ms);
        w.key("createdMs").u64(r.created_ms);
        w.key("updatedMs").u64(r.updated_ms);
        w.key("reason").opt_str(r.reason.map(StopReason::as_str));
        w.key("lastError").opt_str(r.last_error.as_deref());
        w.end_object();
        w.finish()
    }

    fn satisfaction_str(s: Satisfaction) -> &'static str {
        match s {
            Satisfaction::Satisfied => "satisfied",
            Satisfaction::Pending => "pending",
            Satisfaction::Exhausted => "exhausted",
        }
    }

    /// Why a document does not read: the field (a path such as `evidence[2].outcome`)
    /// and what is wrong with it.
    type Read<T> = Result<T, String>;

    fn bad(field: &str, what: &str) -> String {
        format!("field `{field}`: {what}")
    }

    /// What stands in for a field that is missing or of the wrong type once an error
    /// is noted (reading goes on; only the first error is reported).
    static NULL: Value = Value::Null;

    /// The first error met while reading a document. Reading goes on after it with
    /// placeholder values and ends in one place, instead of returning at every field
    /// (each return dropping what was read so far: many KB of wasm). Only the first
    /// error is kept, so the answer is that of returning at the first error.
    #[derive(Default)]
    struct Errors(RefCell<Option<String>>);

    impl Errors {
        /// Notes `message()` unless an error was noted before.
        #[cold]
        #[inline(never)]
        fn note(&self, message: &dyn Fn() -> String) {
            let mut first = self.0.borrow_mut();
            if first.is_none() {
                *first = Some(message());
            }
        }
    }

    /// An object's fields, with the path of the object for messages.
    struct Obj<'a> {
        /// The members; a repeated key reads as its last value.
        object: &'a Value,
        path: &'a str,
        errors: &'a Errors,
    }

    impl<'a> Obj<'a> {
        /// The object `value` (an error when it is not one).
        fn of(errors: &'a Errors, value: &'a Value, path: &'a str) -> Obj<'a> {
            if !matches!(value, Value::Object(_)) {
                errors.note(&|| bad(path, "expected an object"));
            }
            Obj {
                object: value,
                path,
                errors,
            }
        }

        /// Notes the error for a bad field `key` of this object.
        fn fail(&self, key: &str, what: &str) {
            self.errors.note(&|| {
                if self.path.is_empty() {
                    bad(key, what)
                } else {
                    bad(&format!("{}.{key}", self.path), what)
                }
            });
        }

        /// A field that must be present and not null.
        fn req(&self, key: &str) -> &'a Value {
            match self.object.get(key) {
                None | Some(Value::Null) => {
                    self.fail(key, "missing");
                    &NULL
                }
                Some(v) => v,
            }
        }

        /// A field that may be absent or null.
        fn opt(&self, key: &str) -> Option<&'a Value> {
            self.object.get(key).filter(|v| !v.is_null())
        }

        fn str_of(&self, v: &Value, key: &str, what: &str) -> String {
            match v.as_str() {
                Some(s) => s.to_owned(),
                None => {
                    self.fail(key, what);
                    String::new()
                }
            }
        }

        fn string(&self, key: &str) -> String {
            self.str_of(self.req(key), key, "expected a string")
        }

        fn opt_string(&self, key: &str) -> Option<String> {
            self.opt(key)
                .map(|v| self.str_of(v, key, "expected a string"))
        }

        fn u64(&self, key: &str) -> u64 {
            self.num(self.req(key), key)
        }

        fn opt_u64(&self, key: &str) -> Option<u64> {
            self.opt(key).map(|v| self.num(v, key))
        }

        fn num(&self, v: &Value, key: &str) -> u64 {
            v.as_u64().unwrap_or_else(|| {
                self.fail(key, "expected a non-negative integer");
                0
            })
        }

        fn to_u32(&self, n: u64, key: &str) -> u32 {
            u32::try_from(n).unwrap_or_else(|_| {
                self.fail(key, "out of range for u32");
                0
            })
        }

        fn u32(&self, key: &str) -> u32 {
            self.to_u32(self.u64(key), key)
        }

        fn strings(&self, key: &str) -> Vec<String> {
            let Value::Array(items) = self.req(key) else {
                self.fail(key, "expected an array");
                return Vec::new();
            };
            items
                .iter()
                .map(|v| self.str_of(v, key, "expected an array of strings"))
                .collect()
        }

        /// A string field that must be one of `names`; its index.
        fn one_of(&self, value: &Value, key: &str, names: &[&str]) -> usize {
            let s = value.as_str();
            s.and_then(|s| names.iter().position(|n| *n == s))
                .unwrap_or_else(|| {
                    self.fail(key, "unknown variant");
                    0
                })
        }

        fn variant(&self, key: &str, names: &[&str]) -> usize {
            self.one_of(self.req(key), key, names)
        }

        fn opt_variant(&self, key: &str, names: &[&str]) -> Option<usize> {
            self.opt(key).map(|v| self.one_of(v, key, names))
        }
    }

    pub(super) const STAGES: [&str; 6] = [
        "pending",
        "leased",
        "retryable",
        "satisfied",
        "exhausted",
        "cancelled",
    ];
    pub(super) const STOPS: [&str; 4] = ["rejected", "maxAttempts", "expired", "cancelled"];
    pub(super) const SATISFACTIONS: [&str; 3] = ["satisfied", "pending", "exhausted"];
    pub(super) const POLICIES: [&str; 4] = ["all", "any", "atLeast", "required"];
    pub(super) const OUTCOMES: [&str; 9] = [
        "accepted",
        "duplicate",
        "rejected",
        "rateLimited",
        "authRequired",
        "error",
        "timeout",
        "unreachable",
        "notAttempted",
    ];
    pub(super) const REJECTS: [&str; 6] =
        ["blocked", "invalid", "restricted", "pow", "mute", "other"];

    /// Reads a document written by [`write`] (or by the derived `Serialize` before it).
    pub(super) fn read(text: &str) -> Read<Record> {
        let value = json::parse(text).map_err(|e| e.to_string())?;
        let errors = Errors::default();
        let o = Obj::of(&errors, &value, "");
        let ev = Obj::of(&errors, o.req("event"), "event");
        let event = EventEnvelope {
            id: ev.string("id"),
            raw: ev.string("raw"),
            expiration: ev.opt_u64("expiration"),
        };
        let p = Obj::of(&errors, o.req("policy"), "policy");
        let policy = match p.variant("kind", &POLICIES) {
            0 => Policy::All,
            1 => Policy::Any,
            2 => Policy::AtLeast { k: p.u32("k") },
            _ => Policy::Required {
                relays: p.strings("relays"),
            },
        };
        let lease = o.opt("lease").map(|v| {
            let l = Obj::of(&errors, v, "lease");
            Lease {
                id: l.string("id"),
                owner: l.string("owner"),
                acquired_ms: l.u64("acquiredMs"),
                expires_ms: l.u64("expiresMs"),
                attempt: l.u32("attempt"),
            }
        });
        let items: &[Value] = match o.req("evidence") {
            Value::Array(items) => items,
            _ => {
                errors.note(&|| bad("evidence", "expected an array"));
                &[]
            }
        };
        let mut evidence = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("evidence[{i}]");
            let e = Obj::of(&errors, item, &path);
            let out_path = format!("{path}.outcome");
            let out = Obj::of(&errors, e.req("outcome"), &out_path);
            let outcome = match out.variant("kind", &OUTCOMES) {
                0 => Outcome::Accepted,
                1 => Outcome::Duplicate,
                2 => Outcome::Rejected(match out.variant("reason", &REJECTS) {
                    0 => RejectReason::Blocked,
                    1 => RejectReason::Invalid,
                    2 => RejectReason::Restricted,
                    3 => RejectReason::Pow,
                    4 => RejectReason::Mute,
                    _ => RejectReason::Other,
                }),
                3 => Outcome::RateLimited,
                4 => Outcome::AuthRequired,
                5 => Outcome::Error,
                6 => Outcome::Timeout,
                7 => Outcome::Unreachable,
                _ => Outcome::NotAttempted,
            };
            evidence.push(Evidence {
                target: e.string("target"),
                attempt: e.u32("attempt"),
                outcome,
                message: e.string("message"),
                at_ms: e.u64("atMs"),
                tries: e.opt_u64("tries").map_or(1, |n| e.to_u32(n, "tries")),
                first_at_ms: e.opt_u64("firstAtMs"),
            });
        }
        let record = Record {
            id: o.string("id"),
            event,
            targets: o.strings("targets"),
            policy,
            max_attempts: o.u32("maxAttempts"),
            deadline_ms: o.opt_u64("deadlineMs"),
            plan_digest: o.string("planDigest"),
            revision: o.u64("revision"),
            stage: Stage::ALL[o.variant("stage", &STAGES)],
            lease,
            attempts: o.u32("attempts"),
            attempt_limit: o.u32("attemptLimit"),
            rearmed_after_attempt: o.u32("rearmedAfterAttempt"),
            last_attempt_ms: o.opt_u64("lastAttemptMs"),
            evidence,
            satisfaction: match o.variant("satisfaction", &SATISFACTIONS) {
                0 => Satisfaction::Satisfied,
                1 => Satisfaction::Pending,
                _ => Satisfaction::Exhausted,
            },
            retry_not_before_ms: o.opt_u64("retryNotBeforeMs"),
            due_ms: o.opt_u64("dueMs"),
            created_ms: o.u64("createdMs"),
            updated_ms: o.u64("updatedMs"),
            reason: o.opt_variant("reason", &STOPS).map(|i| match i {
                0 => StopReason::Rejected,
                1 => StopReason::MaxAttempts,
                2 => StopReason::Expired,
                _ => StopReason::Cancelled,
            }),
            last_error: o.opt_string("lastError"),
        };
        match errors.0.into_inner() {
            Some(message) => Err(message),
            None => Ok(record),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{self, EventEnvelope, Plan, Policy};

    fn record() -> Record {
        let envelope = EventEnvelope {
            id: "a".repeat(64),
            raw: "{\"id\":\"x\"}".into(),
            expiration: None,
        };
        let plan = Plan::new(envelope, vec!["wss://r.example".into()], Policy::All);
        match core::decide_enqueue(None, plan, 1_000).expect("valid plan") {
            core::EnqueueDecision::Create(r) => r,
            other => panic!("expected create, got {other:?}"),
        }
    }

    #[test]
    fn round_trips_and_derives_index_fields() {
        let r = record();
        let row = encode(&r).expect("encode");
        assert_eq!(row.stage, "pending");
        assert_eq!(row.due_ms, Some(1_000.0));
        assert_eq!(row.event_id, "a".repeat(64));
        assert_eq!(decode(&row).expect("decode"), r);
    }

    #[test]
    fn unknown_format_and_bad_document_are_corrupt() {
        let mut row = encode(&record()).expect("encode");
        row.v = 2;
        assert_eq!(decode(&row).unwrap_err().code(), "corrupt_record");
        let mut row = encode(&record()).expect("encode");
        row.doc = "{not json".into();
        assert_eq!(decode(&row).unwrap_err().code(), "corrupt_record");
        let mut row = encode(&record()).expect("encode");
        row.id = "other".into();
        assert_eq!(decode(&row).unwrap_err().code(), "corrupt_record");
    }
}

/// The hand-written document against the derived `Serialize`/`Deserialize` it
/// replaced: the same text for arbitrary records, and reading gives the record back.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod doc_props {
    use proptest::prelude::*;

    use super::doc;
    use crate::core::{
        EventEnvelope, Evidence, Lease, Outcome, Policy, Record, RejectReason, Satisfaction, Stage,
        StopReason,
    };

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9:/.]{0,12}",
            any::<String>(),
            Just("\"\\\u{0}\u{1f}\u{7f}\n\t€😀".to_string()),
        ]
    }

    fn outcome() -> impl Strategy<Value = Outcome> {
        let reasons = [
            RejectReason::Blocked,
            RejectReason::Invalid,
            RejectReason::Restricted,
            RejectReason::Pow,
            RejectReason::Mute,
            RejectReason::Other,
        ];
        prop_oneof![
            prop::sample::select(vec![
                Outcome::Accepted,
                Outcome::Duplicate,
                Outcome::RateLimited,
                Outcome::AuthRequired,
                Outcome::Error,
                Outcome::Timeout,
                Outcome::Unreachable,
                Outcome::NotAttempted,
            ]),
            prop::sample::select(reasons.to_vec()).prop_map(Outcome::Rejected),
        ]
    }

    fn evidence() -> impl Strategy<Value = Evidence> {
        (
            (text(), any::<u32>(), outcome(), text(), any::<u64>()),
            (
                prop_oneof![Just(1u32), any::<u32>()],
                prop::option::of(any::<u64>()),
            ),
        )
            .prop_map(
                |((target, attempt, outcome, message, at_ms), (tries, first_at_ms))| Evidence {
                    target,
                    attempt,
                    outcome,
                    message,
                    at_ms,
                    tries,
                    first_at_ms,
                },
            )
    }

    fn policy() -> impl Strategy<Value = Policy> {
        prop_oneof![
            Just(Policy::All),
            Just(Policy::Any),
            any::<u32>().prop_map(|k| Policy::AtLeast { k }),
            prop::collection::vec(text(), 0..3).prop_map(|relays| Policy::Required { relays }),
        ]
    }

    fn lease() -> impl Strategy<Value = Option<Lease>> {
        prop::option::of(
            (text(), text(), any::<u64>(), any::<u64>(), any::<u32>()).prop_map(
                |(id, owner, acquired_ms, expires_ms, attempt)| Lease {
                    id,
                    owner,
                    acquired_ms,
                    expires_ms,
                    attempt,
                },
            ),
        )
    }

    fn record() -> impl Strategy<Value = Record> {
        let head = (
            text(),
            (text(), text(), any::<Option<u64>>()),
            prop::collection::vec(text(), 0..4),
            policy(),
            any::<u32>(),
            any::<Option<u64>>(),
            text(),
            any::<u64>(),
            prop::sample::select(Stage::ALL.to_vec()),
            lease(),
        );
        let tail = (
            (any::<u32>(), any::<u32>(), any::<u32>()),
            any::<Option<u64>>(),
            prop::collection::vec(evidence(), 0..4),
            prop::sample::select(vec![
                Satisfaction::Satisfied,
                Satisfaction::Pending,
                Satisfaction::Exhausted,
            ]),
            (any::<Option<u64>>(), any::<Option<u64>>()),
            (any::<u64>(), any::<u64>()),
            prop::option::of(prop::sample::select(vec![
                StopReason::Rejected,
                StopReason::MaxAttempts,
                StopReason::Expired,
                StopReason::Cancelled,
            ])),
            prop::option::of(text()),
        );
        (head, tail).prop_map(
            |(
                (
                    id,
                    (eid, raw, expiration),
                    targets,
                    policy,
                    max_attempts,
                    deadline_ms,
                    plan_digest,
                    revision,
                    stage,
                    lease,
                ),
                (
                    (attempts, attempt_limit, rearmed_after_attempt),
                    last_attempt_ms,
                    evidence,
                    satisfaction,
                    (retry_not_before_ms, due_ms),
                    (created_ms, updated_ms),
                    reason,
                    last_error,
                ),
            )| Record {
                id,
                event: EventEnvelope {
                    id: eid,
                    raw,
                    expiration,
                },
                targets,
                policy,
                max_attempts,
                deadline_ms,
                plan_digest,
                revision,
                stage,
                lease,
                attempts,
                attempt_limit,
                rearmed_after_attempt,
                last_attempt_ms,
                evidence,
                satisfaction,
                retry_not_before_ms,
                due_ms,
                created_ms,
                updated_ms,
                reason,
                last_error,
            },
        )
    }

    proptest! {
        #[test]
        fn document_is_the_derived_json_and_reads_back(r in record()) {
            let text = doc::write(&r);
            prop_assert_eq!(&text, &serde_json::to_string(&r).unwrap());
            prop_assert_eq!(doc::read(&text).unwrap(), r.clone());
            let derived: Record = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(derived, r);
        }
    }

    /// The reader as it was before it went on past the first error (each field
    /// returned at once with `?`): the oracle for the error a broken document gets.
    mod old {
        use crate::core::{
            EventEnvelope, Evidence, Lease, Outcome, Policy, Record, RejectReason, Satisfaction,
            Stage, StopReason,
        };
        use crate::json::{self, Value};
        // The stored names are the format's, shared with the reader this one checks
        // (the round trip against the derived serde form checks the names themselves).
        use super::super::doc::{OUTCOMES, POLICIES, REJECTS, SATISFACTIONS, STAGES, STOPS};

        /// Why a document does not read: the field (a path such as `evidence[2].outcome`)
        /// and what is wrong with it.
        type Read<T> = Result<T, String>;

        fn bad(field: &str, what: &str) -> String {
            format!("field `{field}`: {what}")
        }

        /// An object's fields, with the path of the object for messages.
        struct Obj<'a> {
            /// The members; a repeated key reads as its last value.
            object: &'a Value,
            path: &'a str,
        }

        impl<'a> Obj<'a> {
            fn of(value: &'a Value, path: &'a str) -> Read<Obj<'a>> {
                match value {
                    Value::Object(_) => Ok(Obj {
                        object: value,
                        path,
                    }),
                    _ => Err(bad(path, "expected an object")),
                }
            }

            /// The message for a bad field `key` of this object (one cold function, so
            /// the many error paths stay small).
            #[cold]
            #[inline(never)]
            fn err(&self, key: &str, what: &str) -> String {
                if self.path.is_empty() {
                    bad(key, what)
                } else {
                    bad(&format!("{}.{key}", self.path), what)
                }
            }

            /// A field that must be present and not null.
            fn req(&self, key: &str) -> Read<&'a Value> {
                match self.object.get(key) {
                    None | Some(Value::Null) => Err(self.err(key, "missing")),
                    Some(v) => Ok(v),
                }
            }

            /// A field that may be absent or null.
            fn opt(&self, key: &str) -> Option<&'a Value> {
                self.object.get(key).filter(|v| !v.is_null())
            }

            fn string(&self, key: &str) -> Read<String> {
                self.req(key)?
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| self.err(key, "expected a string"))
            }

            fn opt_string(&self, key: &str) -> Read<Option<String>> {
                self.opt(key)
                    .map(|v| {
                        v.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| self.err(key, "expected a string"))
                    })
                    .transpose()
            }

            fn u64(&self, key: &str) -> Read<u64> {
                self.num(self.req(key)?, key)
            }

            fn opt_u64(&self, key: &str) -> Read<Option<u64>> {
                self.opt(key).map(|v| self.num(v, key)).transpose()
            }

            fn num(&self, v: &Value, key: &str) -> Read<u64> {
                v.as_u64()
                    .ok_or_else(|| self.err(key, "expected a non-negative integer"))
            }

            fn u32(&self, key: &str) -> Read<u32> {
                u32::try_from(self.u64(key)?).map_err(|_| self.err(key, "out of range for u32"))
            }

            fn strings(&self, key: &str) -> Read<Vec<String>> {
                let Value::Array(items) = self.req(key)? else {
                    return Err(self.err(key, "expected an array"));
                };
                items
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| self.err(key, "expected an array of strings"))
                    })
                    .collect()
            }

            /// A string field that must be one of `names`; its index.
            fn one_of(&self, value: Option<&Value>, key: &str, names: &[&str]) -> Read<usize> {
                let s = value.and_then(Value::as_str);
                s.and_then(|s| names.iter().position(|n| *n == s))
                    .ok_or_else(|| self.err(key, "unknown variant"))
            }

            fn variant(&self, key: &str, names: &[&str]) -> Read<usize> {
                self.one_of(Some(self.req(key)?), key, names)
            }

            fn opt_variant(&self, key: &str, names: &[&str]) -> Read<Option<usize>> {
                self.opt(key)
                    .map(|v| self.one_of(Some(v), key, names))
                    .transpose()
            }
        }

        /// Reads a document written by [`write`] (or by the derived `Serialize` before it).
        pub(super) fn read(text: &str) -> Read<Record> {
            let value = json::parse(text).map_err(|e| e.to_string())?;
            let o = Obj::of(&value, "")?;
            let ev = Obj::of(o.req("event")?, "event")?;
            let event = EventEnvelope {
                id: ev.string("id")?,
                raw: ev.string("raw")?,
                expiration: ev.opt_u64("expiration")?,
            };
            let p = Obj::of(o.req("policy")?, "policy")?;
            let policy = match p.variant("kind", &POLICIES)? {
                0 => Policy::All,
                1 => Policy::Any,
                2 => Policy::AtLeast { k: p.u32("k")? },
                _ => Policy::Required {
                    relays: p.strings("relays")?,
                },
            };
            let lease = match o.opt("lease") {
                None => None,
                Some(v) => {
                    let l = Obj::of(v, "lease")?;
                    Some(Lease {
                        id: l.string("id")?,
                        owner: l.string("owner")?,
                        acquired_ms: l.u64("acquiredMs")?,
                        expires_ms: l.u64("expiresMs")?,
                        attempt: l.u32("attempt")?,
                    })
                }
            };
            let Value::Array(items) = o.req("evidence")? else {
                return Err(bad("evidence", "expected an array"));
            };
            let mut evidence = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let path = format!("evidence[{i}]");
                let e = Obj::of(item, &path)?;
                let out_path = format!("{path}.outcome");
                let out = Obj::of(e.req("outcome")?, &out_path)?;
                let outcome = match out.variant("kind", &OUTCOMES)? {
                    0 => Outcome::Accepted,
                    1 => Outcome::Duplicate,
                    2 => Outcome::Rejected(match out.variant("reason", &REJECTS)? {
                        0 => RejectReason::Blocked,
                        1 => RejectReason::Invalid,
                        2 => RejectReason::Restricted,
                        3 => RejectReason::Pow,
                        4 => RejectReason::Mute,
                        _ => RejectReason::Other,
                    }),
                    3 => Outcome::RateLimited,
                    4 => Outcome::AuthRequired,
                    5 => Outcome::Error,
                    6 => Outcome::Timeout,
                    7 => Outcome::Unreachable,
                    _ => Outcome::NotAttempted,
                };
                evidence.push(Evidence {
                    target: e.string("target")?,
                    attempt: e.u32("attempt")?,
                    outcome,
                    message: e.string("message")?,
                    at_ms: e.u64("atMs")?,
                    tries: match e.opt_u64("tries")? {
                        None => 1,
                        Some(n) => {
                            u32::try_from(n).map_err(|_| e.err("tries", "out of range for u32"))?
                        }
                    },
                    first_at_ms: e.opt_u64("firstAtMs")?,
                });
            }
            Ok(Record {
                id: o.string("id")?,
                event,
                targets: o.strings("targets")?,
                policy,
                max_attempts: o.u32("maxAttempts")?,
                deadline_ms: o.opt_u64("deadlineMs")?,
                plan_digest: o.string("planDigest")?,
                revision: o.u64("revision")?,
                stage: Stage::ALL[o.variant("stage", &STAGES)?],
                lease,
                attempts: o.u32("attempts")?,
                attempt_limit: o.u32("attemptLimit")?,
                rearmed_after_attempt: o.u32("rearmedAfterAttempt")?,
                last_attempt_ms: o.opt_u64("lastAttemptMs")?,
                evidence,
                satisfaction: match o.variant("satisfaction", &SATISFACTIONS)? {
                    0 => Satisfaction::Satisfied,
                    1 => Satisfaction::Pending,
                    _ => Satisfaction::Exhausted,
                },
                retry_not_before_ms: o.opt_u64("retryNotBeforeMs")?,
                due_ms: o.opt_u64("dueMs")?,
                created_ms: o.u64("createdMs")?,
                updated_ms: o.u64("updatedMs")?,
                reason: o.opt_variant("reason", &STOPS)?.map(|i| match i {
                    0 => StopReason::Rejected,
                    1 => StopReason::MaxAttempts,
                    2 => StopReason::Expired,
                    _ => StopReason::Cancelled,
                }),
                last_error: o.opt_string("lastError")?,
            })
        }
    }

    /// A broken variant of the document `text`: at some place, a member removed or its
    /// value replaced by one of another type (or out of range).
    fn broken(text: &str, pick: usize, replacement: usize, remove: bool) -> String {
        use serde_json::Value as J;
        fn count(v: &J) -> usize {
            1 + match v {
                J::Object(m) => m.values().map(count).sum(),
                J::Array(a) => a.iter().map(count).sum(),
                _ => 0,
            }
        }
        /// Applies `f` to the `n`th value of a pre-order walk.
        fn edit(v: &mut J, n: &mut usize, f: &mut dyn FnMut(&mut J)) -> bool {
            if *n == 0 {
                f(v);
                return true;
            }
            *n -= 1;
            match v {
                J::Object(m) => m.values_mut().any(|c| edit(c, n, f)),
                J::Array(a) => a.iter_mut().any(|c| edit(c, n, f)),
                _ => false,
            }
        }
        let replacements = [
            serde_json::json!(null),
            serde_json::json!(-1),
            serde_json::json!(1.5),
            serde_json::json!(4_294_967_296u64),
            serde_json::json!("x"),
            serde_json::json!("atLeast"),
            serde_json::json!([]),
            serde_json::json!(["a", 1]),
            serde_json::json!({}),
            serde_json::json!(true),
        ];
        let mut doc: J = serde_json::from_str(text).unwrap();
        let mut n = pick % count(&doc);
        edit(&mut doc, &mut n, &mut |target| match target {
            J::Object(m) if remove && !m.is_empty() => {
                let key = m.keys().nth(replacement % m.len()).unwrap().clone();
                m.remove(&key);
            }
            _ => *target = replacements[replacement % replacements.len()].clone(),
        });
        doc.to_string()
    }

    proptest! {
        #[test]
        fn broken_documents_get_the_error_of_the_old_reader(
            r in record(),
            edits in prop::collection::vec((any::<usize>(), any::<usize>(), any::<bool>()), 1..8),
        ) {
            let mut text = doc::write(&r);
            for (pick, replacement, remove) in edits {
                text = broken(&text, pick, replacement, remove);
            }
            prop_assert_eq!(doc::read(&text), old::read(&text));
        }
    }

    #[test]
    fn bad_documents_name_the_field() {
        let cases = [
            ("[]", "expected an object"),
            (r#"{"id":"a"}"#, "field `event`: missing"),
            (
                r#"{"id":"a","event":{"id":"x","raw":"{}","expiration":-1}}"#,
                "field `event.expiration`",
            ),
        ];
        for (text, want) in cases {
            let err = doc::read(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
