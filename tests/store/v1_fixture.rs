//! Records stored by format 1 (schema v1) stay readable: `tests/data/store_v1_rows.json`
//! holds the rows that the build before the serde codec (commit ddc338e, the
//! hand-written writer) stored for the records of `v1_support::records()`. Every later
//! build must decode each row to the same record, with the index fields it was stored
//! with; rewritten, a record is a format-2 row.
//!
//! The browser half (`tests/store_idb_v1.rs`) puts these rows into a real schema-v1
//! database and reads them through the store.
#![cfg(not(target_arch = "wasm32"))]

use crate::v1_support;

use nostr_outbox::store::codec;
use v1_support::{records, rows as fixture};

#[test]
fn v1_rows_decode_to_the_records_they_were_written_for() {
    let rows = fixture();
    let records = records();
    assert_eq!(rows.len(), records.len());
    for (row, want) in rows.iter().zip(&records) {
        assert_eq!(row.v, 1, "{}", row.id);
        let text = serde_json::to_string(row).expect("json");
        let (got, _) =
            codec::read_row(&row.id, &text).unwrap_or_else(|e| panic!("{}: {e}", row.id));
        assert_eq!(&got, want, "{}", row.id);
    }
}

#[test]
fn format_1_rows_keep_their_index_fields_and_are_rewritten_in_format_2() {
    for (row, record) in fixture().iter().zip(&records()) {
        // Read as a stored row, a format-1 row gives the index fields it was stored
        // with: no `rank` (written before priorities), so its claim-order key is layout
        // 1's until the record is rewritten.
        let text = serde_json::to_string(row).expect("json");
        let (got, index) = codec::read_row(&row.id, &text).expect("read");
        assert_eq!(&got, record, "{}", record.id);
        assert_eq!(index.rank, None, "{}", record.id);
        assert_eq!(
            index,
            codec::RowIndex {
                rank: None,
                ..codec::index_of(record)
            },
            "{}",
            record.id
        );
        // Rewritten, it is a format-2 row that reads back as the same record, with
        // the priority's rank (`normal` = 1) and the same other index fields.
        let v2 = codec::write_row(record).expect("encode");
        let (again, index2) = codec::read_row(&row.id, &v2).expect("read v2");
        assert_eq!(&again, record);
        assert_eq!(index2.rank, Some(1));
        assert_eq!(
            codec::RowIndex {
                rank: None,
                ..index2
            },
            index
        );
        // The format-1 writer (kept for tests) still writes the fixture's row.
        let mut want = row.clone();
        want.rank = Some(1.0);
        assert_eq!(
            &codec::encode_v1(record).expect("v1"),
            &want,
            "{}",
            record.id
        );
    }
}
