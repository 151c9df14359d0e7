//! Records stored by format 1 (schema v1) stay readable: `tests/data/store_v1_rows.json`
//! holds the rows that the build before the serde codec (commit ddc338e, the
//! hand-written writer) stored for the records of `v1_support::records()`. Every later
//! build must decode each row to the same record and, while the row format is still
//! 1, encode the record to the same row.
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
        let got = codec::decode(row).unwrap_or_else(|e| panic!("{}: {e}", row.id));
        assert_eq!(&got, want, "{}", row.id);
    }
}

#[test]
fn format_1_rows_are_written_as_before_plus_the_priority_rank() {
    for (row, record) in fixture().iter().zip(&records()) {
        // Schema v3 adds one index field, `rank` (the record's priority, `normal` = 1,
        // for every record written before priorities); `lane` reads back as
        // "default" when absent. The rest is byte for byte as before.
        assert_eq!(row.rank, None, "{}", record.id);
        let mut want = row.clone();
        want.rank = Some(1.0);
        assert_eq!(
            &codec::encode(record).expect("encode"),
            &want,
            "{}",
            record.id
        );
    }
}
