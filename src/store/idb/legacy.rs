//! The move of what older builds wrote into schema v5 and the current key layout, in
//! batches, each batch one read-write transaction that writes the batch into `kv` and
//! deletes what it moved, when the database opens:
//! - every row of `records` (schemas v1–v4) becomes the record's row and index keys in
//!   `kv` ([`BATCH`] rows per transaction), and is deleted from `records` (and
//!   `lookup`, schema v4);
//! - every entry of key layouts 1 and 2 in `kv` ([`keys::OLD_RANGES`]) is deleted, and
//!   each row among them written again under the current layout with its index keys
//!   ([`BATCH`] entries of each old range per transaction).
//!
//! A crash between two batches leaves a database whose next open moves the rest; two
//! contexts opening it at once take turns (their transactions cannot overlap) and never
//! move a row twice.
//!
//! A row is re-encoded from its record, with its event's header fields (NIP-01 kind,
//! tags, `created_at`) read from its stored text when an older schema did not store
//! them (v1), and its priority (`normal`) and lane (the default) when it predates them
//! (v1, v2). A row that cannot be decoded is moved as it is, without index keys: the
//! store reports it as corrupt (`corruptRecords()`), as before, and never deletes it.
//!
//! Why not [`crate::store::kv::KvStore::migrate`], which moves the old key layouts on
//! the storage adapters: called at open, it added 2.2 KB gzipped to the browser
//! `.wasm` (at its 256 KiB cap), against a few lines here and in `ops.rs`, where the
//! move of `records` already is.

use indexed_db_futures::internals::SystemRepr;
use js_sys::Array;

use super::{ops, settle, sys, IdbKv};
use crate::store::codec;
use crate::store::kv::keys;
use crate::store::StoreError;

/// Rows moved per transaction.
const BATCH: u32 = 200;

/// Adds to `puts` (key, value, ...) what stores one legacy row of item `id` (its JSON
/// text): its row, in this build's format, and its index keys ([`codec::upgrade_row`]);
/// one that does not decode is moved as it is.
fn moved(id: &str, text: String, puts: &Array) {
    let put = |key: String, value: String| {
        puts.push(&key.into());
        puts.push(&value.into());
    };
    let Some((row, index)) = codec::upgrade_row(id, &text) else {
        return put(keys::row_key(id), text);
    };
    put(keys::row_key(&index.id), row);
    for key in keys::index_keys(&index) {
        put(key, String::new());
    }
}

/// Moves what older builds wrote (see the module documentation); the number of rows
/// and old keys moved. Each batch is read and written in one transaction by `ops.rs`
/// (the rows converted in between, with nothing else awaited, so the transaction stays
/// active).
pub(super) async fn migrate(kv: &IdbKv) -> Result<u32, StoreError> {
    let mut total = 0;
    let [(a, b), (c, d)] = keys::OLD_RANGES;
    let ranges = Array::of4(&a.into(), &b.into(), &c.into(), &d.into());
    loop {
        let n = kv
            .run(async |db| {
                let raw: &web_sys::IdbDatabase = db.as_sys();
                let batch = ops::legacy_batch(raw, BATCH, ranges.clone()).map_err(sys::failure)?;
                let batch = Array::from(&settle(batch).await?);
                let (tx, ids, old) = (batch.get(0), batch.get(1), batch.get(2));
                let texts = Array::from(&batch.get(4));
                let puts = Array::new();
                for (key, text) in Array::from(&batch.get(3)).iter().zip(texts.iter()) {
                    let key = key.as_string().unwrap_or_default();
                    // A row of `records` is under its id; one of `kv` under `r/<hex id>`.
                    let id = keys::old_row_id(&key).unwrap_or(key);
                    moved(&id, text.as_string().unwrap_or_default(), &puts);
                }
                let (ids, old) = (Array::from(&ids), Array::from(&old));
                let n = ids.length() + old.length();
                if n > 0 {
                    settle(ops::legacy_move(&tx, &ids, &old, puts).map_err(sys::failure)?).await?;
                }
                Ok(n)
            })
            .await?;
        total += n;
        if n < BATCH {
            return Ok(total);
        }
    }
}
