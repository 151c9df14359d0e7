//! The stored encoding of a record, shared by every durable store.
//!
//! # Format 2 (written by this build)
//!
//! A row is the record document itself, [`Record`]'s derived `Serialize` written by
//! `serde_json` (camelCase fields, `Policy` and `Outcome` tagged by `kind`), with the
//! format number as its first field:
//!
//! ```text
//! {"v":2,"id":"<item id>","event":{"id":"<64 hex>","raw":"{…}",…},"stage":"pending",…}
//! ```
//! The fields the key layout indexes ([`RowIndex`]: stage, due time, creation time,
//! event id, NIP-01 address, priority rank) are derived from the record
//! ([`index_of`]) when the row is written and again when it is read; nothing is kept
//! twice. Reading is one parse into a `serde_json::Value` and the record's fields taken
//! from it ([`super::doc`], which reads what [`Record`]'s derived `Deserialize` read):
//! unknown fields (`v` among them) are ignored, an absent or `null` optional field is
//! `None`.
//!
//! # Format 1 (read, never written)
//!
//! Rows written before: a flat object of index fields beside the record document as
//! JSON text ([`StoredRow`]):
//!
//! ```text
//! { "id": "<item id>", "v": 1, "stage": "pending", "dueMs": 1700000000000,
//!   "createdMs": 1700000000000, "eventId": "<64 hex>", "slot": "0:<pubkey>:",
//!   "slotPart": 1, "slotOrder": -1700000000, "rank": 1, "lane": "dm", "doc": "{...}" }
//! ```
//! Its event text was escaped twice (once in the document, once in the row) and every
//! read parsed the row and then its document. Such a row is read through
//! `serde_json::Value` (its index fields as stored: a row written before priorities has
//! no `rank`, and its claim-order key is layout 1's) and rewritten in format 2 the next
//! time the record changes; `tests/store/v1_fixture.rs` holds rows of the first format-1
//! writer and checks that they read back as the records they were written for.
//!
//! A row of another format is refused as corrupt (reported, never deleted), as is one
//! whose document does not parse or whose id differs from its key; the message says
//! what is wrong and where. Times are unix milliseconds, exact as JavaScript numbers up
//! to 2^53.
//!
//! Pure: no I/O. It must not decide anything about the record.

use crate::store::kv::keys;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::semantics;
use crate::core::{Record, Stage};

use super::doc::read_record;
use super::StoreError;

/// The row format this build writes.
pub const ROW_FORMAT: u32 = 2;

/// How a format-2 row begins.
const FORMAT_2: &str = "{\"v\":2,";

/// A format-1 row: index fields plus the record document as JSON text. Read by
/// [`read_row`] (through `serde_json::Value`); written only by [`encode_v1`], for tests
/// of the stores' upgrade paths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredRow {
    /// The item id (primary key).
    pub id: String,
    /// The row format version (1).
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
    /// The claim rank; `None` in rows written before priorities (IndexedDB schema v2
    /// and older, key-value layout 1).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rank: Option<f64>,
    /// The lane; absent for the default lane.
    #[serde(
        default = "crate::core::lane::default_lane",
        skip_serializing_if = "crate::core::lane::is_default_lane_str"
    )]
    pub lane: String,
    /// The record as JSON text.
    pub doc: String,
}

/// What the key layout indexes of a row ([`keys::index_keys`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowIndex {
    /// The item id.
    pub id: String,
    /// The stage name.
    pub stage: String,
    /// When the record can next be claimed; `None` when terminal.
    pub due_ms: Option<u64>,
    /// When the record was enqueued.
    pub created_ms: u64,
    /// The event id.
    pub event_id: String,
    /// The event's NIP-01 address with its partition ([`slot_part`]) and the event's
    /// `created_at`, for replaceable and addressable kinds.
    pub slot: Option<(String, u8, u64)>,
    /// The claim rank ([`keys::claim_rank`]); `None` only in format-1 rows written
    /// before priorities, whose claim-order key is layout 1's.
    pub rank: Option<u8>,
}

/// The partition of a record's slot-index key in `stage`: 1 may still be sent, 0
/// satisfied or superseded, 2 cancelled.
pub fn slot_part(stage: Stage) -> u8 {
    if stage.may_send() {
        1
    } else if stage == Stage::Cancelled {
        2
    } else {
        0
    }
}

/// The index fields of `record`.
pub fn index_of(record: &Record) -> RowIndex {
    let created_at = record.event.meta.as_ref().map_or(0, |m| m.created_at);
    RowIndex {
        id: record.id.clone(),
        stage: record.stage.as_str().to_string(),
        due_ms: record.due_ms,
        created_ms: record.created_ms,
        event_id: record.event.id.clone(),
        slot: semantics::slot_of(record).map(|s| (s, slot_part(record.stage), created_at)),
        rank: Some(keys::claim_rank(record)),
    }
}

/// The record document: [`Record`]'s derived form as JSON text.
fn doc_of(record: &Record) -> Result<String, StoreError> {
    serde_json::to_string(record).map_err(|e| StoreError::Corrupt {
        id: record.id.clone(),
        message: format!("document cannot be written: {e}"),
    })
}

/// The format-2 row of `record`.
pub fn write_row(record: &Record) -> Result<String, StoreError> {
    let doc = doc_of(record)?;
    // A record is a non-empty object: `{"id":…`.
    let mut row = String::with_capacity(doc.len() + FORMAT_2.len());
    row.push_str(FORMAT_2);
    row.push_str(doc.get(1..).unwrap_or_default());
    Ok(row)
}

/// Reads the row stored under item `id`'s key, of either format: the record and the
/// index fields the row's keys were derived from.
pub fn read_row(id: &str, text: &str) -> Result<(Record, RowIndex), StoreError> {
    let corrupt = |message: String| StoreError::Corrupt {
        id: id.to_string(),
        message,
    };
    let (record, index) = if text.starts_with(FORMAT_2) {
        let record = read_record(text).map_err(|e| corrupt(format!("row: {e}")))?;
        let index = index_of(&record);
        (record, index)
    } else {
        let row: Value = serde_json::from_str(text).map_err(|e| corrupt(format!("row: {e}")))?;
        match row.get("v").and_then(Value::as_u64) {
            Some(1) => read_v1(&row).map_err(corrupt)?,
            _ => {
                return Err(corrupt(format!(
                    "row format {} is not supported (this build reads 1 and {ROW_FORMAT})",
                    row.get("v")
                        .map_or_else(|| "(none)".to_string(), Value::to_string)
                )))
            }
        }
    };
    // `index.id` is the record's (format 2) or the row's, which `read_v1` holds equal.
    if index.id != id {
        return Err(corrupt(format!(
            "row id `{}` differs from its key",
            index.id
        )));
    }
    Ok((record, index))
}

/// A format-1 row's record and its index fields as stored. Its fields are typed as
/// [`StoredRow`] types them: an optional field may be absent or `null`, a field of
/// another type makes the row corrupt.
fn read_v1(row: &Value) -> Result<(Record, RowIndex), String> {
    let text = |name| v1_field(row, name, Value::as_str, "a string").map(|t| t.map(str::to_string));
    let number = |name| v1_field(row, name, Value::as_f64, "a number");
    let required = |name: &str, value: Option<String>| {
        value.ok_or_else(|| format!("row: missing field `{name}`"))
    };
    let id = required("id", text("id")?)?;
    let record =
        read_record(&required("doc", text("doc")?)?).map_err(|e| format!("document: {e}"))?;
    if record.id != id {
        return Err(format!("document id `{}` differs from its key", record.id));
    }
    text("lane")?;
    // Numbers are whole and in 0..2^53 (format 1 wrote them from u64s); `slotOrder` is
    // `created_at` negated.
    let slot = match (text("slot")?, number("slotPart")?, number("slotOrder")?) {
        (Some(slot), Some(part), Some(order)) => {
            Some((slot, (part as u64).min(9) as u8, -order as u64))
        }
        _ => None,
    };
    let created_ms = number("createdMs")?.ok_or("row: missing field `createdMs`")?;
    let index = RowIndex {
        id,
        stage: required("stage", text("stage")?)?,
        due_ms: number("dueMs")?.map(|n| n as u64),
        created_ms: created_ms as u64,
        event_id: required("eventId", text("eventId")?)?,
        slot,
        rank: number("rank")?.map(|r| (r as u64).min(9) as u8),
    };
    Ok((record, index))
}

/// Format-1 field `name` of `row` read by `read` (`None` when absent or `null`), or
/// that it is not `want`.
fn v1_field<'a, T>(
    row: &'a Value,
    name: &str,
    read: fn(&'a Value) -> Option<T>,
    want: &str,
) -> Result<Option<T>, String> {
    match row.get(name).filter(|v| !v.is_null()) {
        None => Ok(None),
        Some(v) => read(v)
            .map(Some)
            .ok_or_else(|| format!("row: invalid type for `{name}`, expected {want}")),
    }
}

/// A row an older schema or key layout stored, as this build stores it: the row
/// re-encoded from its record (format 2), with the event's header fields (NIP-01 kind,
/// tags, `created_at`) read from its text when the row lacks them (IndexedDB schema v1),
/// and its index fields; `None` when it cannot be decoded (it is then kept as it is).
/// One reader for both moves: IndexedDB's (`store::idb::legacy`) and the adapters'
/// ([`crate::store::kv::KvStore::migrate`]).
pub fn upgrade_row(id: &str, text: &str) -> Option<(String, RowIndex)> {
    let (mut record, _) = read_row(id, text).ok()?;
    if record.event.meta.is_none() {
        record.event.meta = crate::nostr::Event::parse_json(&record.event.raw)
            .ok()
            .and_then(|e| e.to_envelope().meta);
    }
    Some((write_row(&record).ok()?, index_of(&record)))
}

/// The stage-index key of a stored row that may not decode (either format keeps `id`,
/// `stage` and `createdMs` at its top level): how [`crate::store::Store::status`]
/// counts a corrupt row apart from its stage.
pub fn stage_key_of(text: &str) -> Option<String> {
    let row: Value = serde_json::from_str(text).ok()?;
    let created = row.get("createdMs")?.as_f64()?;
    Some(keys::stage_key(
        row.get("stage")?.as_str()?,
        created as u64,
        row.get("id")?.as_str()?,
    ))
}

/// The format-1 row of `record` (for tests of the upgrade paths: this build writes
/// format 2).
pub fn encode_v1(record: &Record) -> Result<StoredRow, StoreError> {
    let doc = doc_of(record)?;
    let index = index_of(record);
    let (slot, slot_part, slot_order) = match index.slot {
        Some((slot, part, created_at)) => (
            Some(slot),
            Some(f64::from(part)),
            Some(-(created_at as f64)),
        ),
        None => (None, None, None),
    };
    Ok(StoredRow {
        id: record.id.clone(),
        v: 1,
        stage: index.stage,
        due_ms: index.due_ms.map(|d| d as f64),
        created_ms: index.created_ms as f64,
        event_id: index.event_id,
        slot,
        slot_part,
        slot_order,
        rank: index.rank.map(f64::from),
        lane: record.lane.clone(),
        doc,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::core::{self, EventEnvelope, Plan, Policy};

    /// A pending record to one relay (shared with `store::doc`'s tests).
    pub(in crate::store) fn record() -> Record {
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
        let row = write_row(&r).expect("encode");
        assert!(row.starts_with(r#"{"v":2,"id":""#), "{row}");
        let (back, index) = read_row(&r.id, &row).expect("decode");
        assert_eq!(back, r);
        assert_eq!(index, index_of(&r));
        assert_eq!(index.stage, "pending");
        assert_eq!(index.due_ms, Some(1_000));
        assert_eq!(index.event_id, "a".repeat(64));
        assert_eq!(index.rank, Some(1));
        assert_eq!(
            stage_key_of(&row),
            Some(keys::stage_key("pending", r.created_ms, &r.id))
        );
    }

    #[test]
    fn the_event_text_is_escaped_once() {
        let r = record();
        let v2 = write_row(&r).expect("v2");
        let v1 = serde_json::to_string(&encode_v1(&r).expect("v1")).expect("json");
        assert!(v2.contains(r#""raw":"{\"id\":\"x\"}""#), "{v2}");
        assert!(v2.len() < v1.len(), "{} < {}", v2.len(), v1.len());
    }

    #[test]
    fn format_1_rows_read_with_their_stored_index_fields() {
        let r = record();
        let mut row = encode_v1(&r).expect("v1");
        row.rank = None; // written before priorities: layout 1's claim-order key
        let text = serde_json::to_string(&row).expect("json");
        let (back, index) = read_row(&r.id, &text).expect("decode");
        assert_eq!(back, r);
        assert_eq!(
            index,
            RowIndex {
                rank: None,
                ..index_of(&r)
            }
        );
        assert_eq!(
            stage_key_of(&text),
            Some(keys::stage_key("pending", r.created_ms, &r.id))
        );
    }

    #[test]
    fn format_1_fields_are_typed_as_they_were() {
        let r = record();
        let v1 = serde_json::to_value(encode_v1(&r).expect("v1")).expect("json");
        let with = |name: &str, value: Value| {
            let mut row = v1.clone();
            row[name] = value;
            row.to_string()
        };
        // Optional fields may be null (absent).
        let (back, index) = read_row(&r.id, &with("dueMs", Value::Null)).expect("null dueMs");
        assert_eq!((back, index.due_ms), (r.clone(), None));
        for (name, value, want) in [
            (
                "rank",
                Value::from("1"),
                "invalid type for `rank`, expected a number",
            ),
            (
                "dueMs",
                Value::from("x"),
                "invalid type for `dueMs`, expected a number",
            ),
            ("createdMs", Value::Null, "missing field `createdMs`"),
            (
                "slot",
                Value::from(5),
                "invalid type for `slot`, expected a string",
            ),
            (
                "lane",
                Value::from(true),
                "invalid type for `lane`, expected a string",
            ),
            (
                "stage",
                Value::from(1),
                "invalid type for `stage`, expected a string",
            ),
            ("doc", Value::Null, "missing field `doc`"),
        ] {
            match read_row(&r.id, &with(name, value)) {
                Err(e @ StoreError::Corrupt { .. }) => {
                    assert!(e.to_string().contains(want), "{name}: {e}")
                }
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn unknown_format_and_bad_rows_are_corrupt() {
        let r = record();
        let id = r.id.clone();
        let v2 = write_row(&r).expect("encode");
        let v1 = || encode_v1(&r).expect("v1");
        let json = |row: StoredRow| serde_json::to_string(&row).expect("json");
        let mut other = v1();
        other.v = 3;
        let mut bad_doc = v1();
        bad_doc.doc = "{not json".into();
        let mut trailing = v1();
        trailing.doc.push_str(" []");
        let mut other_id = v1();
        other_id.id = "other".into();
        let cases = [
            (json(other), "row format 3 is not supported"),
            (json(bad_doc), "document: "),
            (json(trailing), "document: trailing characters"),
            (json(other_id), "differs from its key"),
            (
                v2.replacen(r#""v":2"#, r#""v":7"#, 1),
                "row format 7 is not supported",
            ),
            (v2.replacen(&id, "other", 1), "differs from its key"),
            (
                v2.replacen(r#""stage":"pending""#, r#""stage":"sent""#, 1),
                "`stage`: expected one of `draft`, `pending`,",
            ),
            ("{not json".to_string(), "row: "),
            ("[]".to_string(), "row format (none) is not supported"),
        ];
        for (text, want) in cases {
            match read_row(&id, &text) {
                Err(e @ StoreError::Corrupt { .. }) => {
                    assert!(e.to_string().contains(want), "{text}: {e}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn bad_documents_say_what_is_wrong() {
        let doc = serde_json::to_string(&record()).expect("json");
        let edit = |from: &str, to: &str| {
            assert!(doc.contains(from), "{from}");
            doc.replacen(from, to, 1)
        };
        let cases = [
            (r#""x""#.to_string(), "expected an object"),
            (r#"{"id":"a"}"#.to_string(), "missing field `event`"),
            (
                edit(r#""expiration":null"#, r#""expiration":-1"#),
                "`event.expiration`: expected an unsigned integer",
            ),
            (
                edit(r#""kind":"all""#, r#""kind":"most""#),
                "`policy`: expected one of `all`, `any`, `atLeast`, `required`",
            ),
            (
                edit(r#""attempts":0"#, r#""attempts":4294967296"#),
                "`attempts`: expected an unsigned 32-bit integer",
            ),
            (
                edit(r#""revision":1"#, r#""revision":1.5"#),
                "`revision`: expected an unsigned integer",
            ),
        ];
        for (text, want) in cases {
            let err = read_record(&text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}

/// Any record reads back as itself; a document broken anywhere is an error or a
/// record, never a panic.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod doc_props {
    use proptest::prelude::*;

    use super::{encode_v1, index_of, read_record, read_row, write_row};
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
            prop::sample::select(
                Outcome::KINDS
                    .into_iter()
                    .filter(|o| !o.is_terminal_rejection())
                    .collect::<Vec<_>>()
            ),
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
            prop::sample::select(Satisfaction::ALL.to_vec()),
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
                group_size: (revision % 7 == 0).then_some(3),
                route: if revision % 5 == 0 {
                    vec!["dm".into()]
                } else {
                    Vec::new()
                },
                routed: (revision % 10 == 0).then(|| vec!["wss://a.example/".into()]),
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
            let row = write_row(&r).unwrap();
            let (back, index) = read_row(&r.id, &row).unwrap();
            prop_assert_eq!(index, index_of(&r));
            prop_assert_eq!(back, r.clone());
            let v1 = serde_json::to_string(&encode_v1(&r).unwrap()).unwrap();
            // Format 1 kept its index fields as JavaScript numbers (exact below 2^53).
            prop_assert_eq!(read_row(&r.id, &v1).unwrap().0, r.clone());
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
            // The derive (kept on `Record` for this) is the reference: the same
            // documents read, to the same record; an error names a place.
            match (read_record(&text), serde_json::from_str::<Record>(&text)) {
                (Ok(hand), Ok(derived)) => prop_assert_eq!(hand, derived),
                (Err(e), Err(_)) => prop_assert!(!e.is_empty()),
                (hand, derived) => prop_assert!(
                    false,
                    "{text}: read {:?}, the derive {:?}",
                    hand.map(|r| r.id),
                    derived.map(|r| r.id)
                ),
            }
        }
    }
}
