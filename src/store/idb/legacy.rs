//! The move of a database written by schemas v1–v4 into schema v5: every row of
//! `records` becomes the record's row and index keys in `kv` (the key layout of
//! [`crate::store::kv::keys`]), in batches of [`BATCH`] rows, each batch one
//! read-write transaction that writes the batch into `kv` and deletes it from
//! `records` (and `lookup`, schema v4). A crash between two batches leaves a database
//! whose next open moves the rest; two contexts opening it at once take turns (their
//! transactions cannot overlap) and never move a row twice.
//!
//! A row is re-encoded from its record, with its event's header fields (NIP-01 kind,
//! tags, `created_at`) read from its stored text when an older schema did not store
//! them (v1), and its priority (`normal`) and lane (the default) when it predates them
//! (v1, v2). A row that cannot be decoded is moved as it is, without index keys: the
//! store reports it as corrupt (`corruptRecords()`), as before, and never deletes it.

use indexed_db_futures::internals::SystemRepr;
use js_sys::Array;
use wasm_bindgen::prelude::*;

use super::{ops, settle, sys, IdbKv};
use crate::store::codec;
use crate::store::kv::keys;
use crate::store::StoreError;

/// Rows moved per transaction.
const BATCH: u32 = 200;

/// Adds to `puts` (key, value, ...) what stores one legacy row (`id` is its key in
/// `records`): its row, in this build's format, and its index keys. The row object is
/// read as its JSON text, by the reader of the rows in `kv` ([`codec::read_row`]); one
/// that does not decode is moved as it is.
fn moved(id: &str, value: JsValue, puts: &Array) {
    let put = |key: String, value: String| {
        puts.push(&key.into());
        puts.push(&value.into());
    };
    let text = js_sys::JSON::stringify(&value)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default();
    let Some((row, index)) = upgraded(id, &text) else {
        return put(keys::row_key(id), text);
    };
    put(keys::row_key(&index.id), row);
    for key in keys::index_keys(&index) {
        put(key, String::new());
    }
}

/// The row re-encoded from its record, with the event's header fields when the row
/// lacks them; `None` when it cannot be decoded.
fn upgraded(id: &str, text: &str) -> Option<(String, codec::RowIndex)> {
    let (mut record, _) = codec::read_row(id, text).ok()?;
    if record.event.meta.is_none() {
        record.event.meta = crate::nostr::Event::parse_json(&record.event.raw)
            .ok()
            .and_then(|e| e.to_envelope().meta);
    }
    Some((codec::write_row(&record).ok()?, codec::index_of(&record)))
}

/// Moves every row of `records` into `kv`; the number moved. Each batch is read and
/// written in one transaction by `ops.rs` (the rows converted in between, with nothing
/// else awaited, so the transaction stays active).
pub(super) async fn migrate(kv: &IdbKv) -> Result<u32, StoreError> {
    let mut total = 0;
    loop {
        let n = kv
            .run(async |db| {
                let raw: &web_sys::IdbDatabase = db.as_sys();
                let batch = settle(ops::legacy_batch(raw, BATCH).map_err(sys::failure)?).await?;
                let Some(batch) = batch.dyn_ref::<Array>() else {
                    return Ok(0);
                };
                let (tx, ids) = (batch.get(0), Array::from(&batch.get(1)));
                let rows = Array::from(&batch.get(2));
                let puts = Array::new();
                for (key, value) in ids.iter().zip(rows.iter()) {
                    let id = key.as_string().unwrap_or_else(|| format!("{key:?}"));
                    moved(&id, value, &puts);
                }
                let moved = ops::legacy_move(&tx, &ids, puts).map_err(sys::failure)?;
                settle(moved).await?;
                Ok(ids.length())
            })
            .await?;
        total += n;
        if n < BATCH {
            return Ok(total);
        }
    }
}
