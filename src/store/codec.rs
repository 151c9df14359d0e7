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
//!   "slot": "0:<pubkey>:",       replaceable/addressable events only: the NIP-01 address
//!   "slotPart": 1,               1 may still be sent, 0 satisfied/superseded, 2 cancelled
//!   "slotOrder": -1700000000,    −created_at (seconds): the newest version sorts first
//!   "rank": 1,                   priority rank: 0 high, 1 normal, 2 low (claim order)
//!   "lane": "dm",                the record's lane, absent for the default lane
//!   "doc": "{...}" }             core::Record as serde_json text (its derived form)
//! ```
//! `slot`, `slotPart` and `slotOrder` are absent for other events, so an IndexedDB
//! index over `[slot, slotPart, slotOrder, eventId]` holds only versions of
//! replaceable and addressable events: the queue's Nostr rules read a slot's versions
//! that may still be sent, and its newest other one, without touching other rows.
//! The document is [`Record`]'s derived `Serialize` written by `serde_json` (camelCase
//! fields, `Policy` and `Outcome` tagged by `kind`); reading is its derived
//! `Deserialize` (with hand-written readers for `Policy`, `Outcome` and the unit enums,
//! which accept what their derives accepted and were measured smaller): unknown fields
//! are ignored, an absent or `null` optional field is `None`. `tests/store/v1_fixture.rs`
//! holds rows written before the codec was derived and checks both directions against
//! them (the rows of today add the `rank` index field).
//!
//! A future format bumps `v`; a reader refuses (as corrupt, never deleting) a row
//! whose `v` it does not know. Times are unix milliseconds, exact as JavaScript numbers
//! up to 2^53.
//!
//! Pure: no I/O. It must not decide anything about the record.

use crate::store::kv::keys;
use serde::{Deserialize, Serialize};

use crate::core::semantics;
use crate::core::{Record, Stage};

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
    /// The event's NIP-01 address, for replaceable and addressable kinds.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub slot: Option<String>,
    /// With `slot`: 1 while the record may still be sent, 0 when satisfied or
    /// superseded, 2 when cancelled.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub slot_part: Option<f64>,
    /// With `slot`: the event's `created_at`, negated (newest first).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub slot_order: Option<f64>,
    /// The claim rank ([`crate::core::Priority::rank`]: 0 high, 1 normal, 2 low), the
    /// first field of the claim order. `None` only in rows written before priorities
    /// (IndexedDB schema v2 and older, key-value layout 1), which migrations rewrite.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rank: Option<f64>,
    /// The lane; absent for the default lane, so that the IndexedDB index `laneDue`
    /// holds only the rows of named lanes (an index entry costs a write on every
    /// change of the row). Read back as `"default"` when absent.
    #[serde(
        default = "crate::core::lane::default_lane",
        skip_serializing_if = "crate::core::lane::is_default_lane_str"
    )]
    pub lane: String,
    /// The record as JSON text.
    pub doc: String,
}

/// The `slotPart` of a record in `stage`: 1 may still be sent, 0 satisfied or
/// superseded, 2 cancelled.
pub fn slot_part(stage: Stage) -> f64 {
    if stage.may_send() {
        1.0
    } else if stage == Stage::Cancelled {
        2.0
    } else {
        0.0
    }
}

/// Encodes a record into its stored row.
pub fn encode(record: &Record) -> Result<StoredRow, StoreError> {
    let doc = serde_json::to_string(record).map_err(|e| StoreError::Corrupt {
        id: record.id.clone(),
        message: format!("document cannot be written: {e}"),
    })?;
    let slot = semantics::slot_of(record);
    let created_at = record.event.meta.as_ref().map_or(0, |m| m.created_at);
    Ok(StoredRow {
        id: record.id.clone(),
        v: ROW_FORMAT,
        stage: record.stage.as_str().to_string(),
        due_ms: record.due_ms.map(|d| d as f64),
        created_ms: record.created_ms as f64,
        event_id: record.event.id.clone(),
        slot_part: slot.as_ref().map(|_| slot_part(record.stage)),
        slot_order: slot.as_ref().map(|_| -(created_at as f64)),
        slot,
        rank: Some(f64::from(keys::claim_rank(record))),
        lane: record.lane.clone(),
        doc,
    })
}

/// Decodes a stored row. A row of an unknown format, a document that does not parse,
/// or one whose id disagrees with its key is [`StoreError::Corrupt`]; the message
/// says what is wrong and where.
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
    let record = read_doc(&row.doc).map_err(|e| corrupt(format!("document: {e}")))?;
    if record.id != row.id {
        return Err(corrupt(format!(
            "document id `{}` differs from its key",
            record.id
        )));
    }
    Ok(record)
}

/// The record in a document, or what is wrong with it and where (serde_json's
/// message: the field for a missing field or an unknown variant, the line and column
/// otherwise). Field paths for every error (`serde_path_to_error`) were measured at
/// 19.5 KB of gzipped wasm, for a message only a corrupt row ever shows.
fn read_doc(text: &str) -> Result<Record, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
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
            meta: None,
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
        row.doc.push_str(" []");
        assert_eq!(decode(&row).unwrap_err().code(), "corrupt_record");
        let mut row = encode(&record()).expect("encode");
        row.id = "other".into();
        assert_eq!(decode(&row).unwrap_err().code(), "corrupt_record");
    }

    #[test]
    fn bad_documents_say_what_is_wrong() {
        let doc = serde_json::to_string(&record()).expect("json");
        let edit = |from: &str, to: &str| {
            assert!(doc.contains(from), "{from}");
            doc.replacen(from, to, 1)
        };
        let cases = [
            (r#""x""#.to_string(), "invalid type: string"),
            (r#"{"id":"a"}"#.to_string(), "missing field `event`"),
            (
                edit(r#""expiration":null"#, r#""expiration":-1"#),
                "invalid value: integer `-1`, expected u64",
            ),
            (
                edit(r#""kind":"all""#, r#""kind":"most""#),
                "unknown variant `most`",
            ),
            (
                edit(r#""attempts":0"#, r#""attempts":4294967296"#),
                "invalid value: integer `4294967296`, expected u32",
            ),
            (
                edit(r#""revision":1"#, r#""revision":1.5"#),
                "invalid type: floating point `1.5`, expected u64",
            ),
        ];
        for (text, want) in cases {
            let err = read_doc(&text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}

/// Any record reads back as itself; a document broken anywhere is an error or a
/// record, never a panic.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod doc_props {
    use proptest::prelude::*;

    use super::{decode, encode, read_doc};
    use crate::core::{
        EventEnvelope, EventMeta, Evidence, Lease, Outcome, Policy, Record, RejectReason,
        Satisfaction, Stage, StopReason,
    };

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9:/.]{0,12}",
            any::<String>(),
            Just("\"\\\u{0}\u{1f}\u{7f}\n\t€😀".to_string()),
        ]
    }

    fn outcome() -> impl Strategy<Value = Outcome> {
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
            prop::sample::select(RejectReason::ALL.to_vec()).prop_map(Outcome::Rejected),
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

    fn owner_relay(attempt: u32) -> String {
        format!("wss://r{}.example/", attempt % 5)
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
                    relays: (attempt % 2 == 1).then(|| vec![owner_relay(attempt)]),
                },
            ),
        )
    }

    fn record() -> impl Strategy<Value = Record> {
        let head = (
            text(),
            (
                text(),
                text(),
                any::<Option<u64>>(),
                prop::option::of(meta()),
            ),
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
            (
                prop::option::of(prop::sample::select(StopReason::ALL.to_vec())),
                prop::option::of(text()),
            ),
            prop::option::of(text()),
        );
        (head, tail).prop_map(
            |(
                (
                    id,
                    (eid, raw, expiration, meta),
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
                    (reason, superseded_by),
                    last_error,
                ),
            )| Record {
                id,
                event: EventEnvelope {
                    id: eid,
                    raw,
                    expiration,
                    meta,
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
                superseded_by,
                last_error,
                takeovers: 0,
                // Lane and priority vary with the revision (the tuple strategy is full).
                lane: if revision % 2 == 0 {
                    "dm".into()
                } else {
                    crate::core::DEFAULT_LANE.into()
                },
                priority: crate::core::Priority::from_rank((revision % 3) as u8)
                    .unwrap_or_default(),
                stop_when_satisfied: revision % 5 == 0,
            },
        )
    }

    fn meta() -> impl Strategy<Value = EventMeta> {
        (
            text(),
            any::<u16>(),
            any::<u64>(),
            text(),
            prop::collection::vec(text(), 0..3),
            prop::collection::vec(text(), 0..3),
            any::<bool>(),
        )
            .prop_map(
                |(pubkey, kind, created_at, d, deletes_ids, deletes_addresses, protected)| {
                    EventMeta {
                        pubkey,
                        kind,
                        created_at,
                        d,
                        deletes_ids,
                        deletes_addresses,
                        protected,
                        vanish_relays: Vec::new(),
                    }
                },
            )
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
        fn rows_read_back_as_the_record(r in record()) {
            let row = encode(&r).unwrap();
            prop_assert_eq!(decode(&row).unwrap(), r);
        }

        #[test]
        fn broken_documents_are_an_error_or_a_record(
            r in record(),
            edits in prop::collection::vec((any::<usize>(), any::<usize>(), any::<bool>()), 1..8),
        ) {
            let mut text = serde_json::to_string(&r).unwrap();
            for (pick, replacement, remove) in edits {
                text = broken(&text, pick, replacement, remove);
            }
            // The derive is the oracle of itself here; what matters is no panic, and
            // that an error names a place.
            if let Err(e) = read_doc(&text) {
                prop_assert!(!e.is_empty());
            }
        }
    }
}
