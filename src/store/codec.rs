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
//!   "doc": "{...}" }             serde_json of core::Record (camelCase fields)
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
    let doc = serde_json::to_string(record)
        .map_err(|e| StoreError::Backend(format!("cannot encode record `{}`: {e}", record.id)))?;
    Ok(StoredRow {
        id: record.id.clone(),
        v: ROW_FORMAT,
        stage: record.stage.as_str().to_string(),
        due_ms: record.due_ms.map(|d| d as f64),
        created_ms: record.created_ms as f64,
        event_id: record.event.id.clone(),
        doc,
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
    let record: Record =
        serde_json::from_str(&row.doc).map_err(|e| corrupt(format!("document: {e}")))?;
    if record.id != row.id {
        return Err(corrupt(format!(
            "document id `{}` differs from its key",
            record.id
        )));
    }
    Ok(record)
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
