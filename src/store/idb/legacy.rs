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

use wasm_bindgen::prelude::*;

use super::schema::{has_store, KV, LOOKUP, META, RECORDS};
use super::sys::{self, Durability, Failure, Tx};
use super::{apply, IdbKv};
use crate::store::codec::{self, StoredRow};
use crate::store::kv::{keys, KvMutation};
use crate::store::StoreError;

/// Rows moved per transaction.
const BATCH: u32 = 200;

/// The mutations that store one legacy row (`id` is its key in `records`). The row
/// object is read as its JSON text, by the reader of the rows in `kv` (one reader of
/// `StoredRow` in the .wasm).
fn moved(id: &str, value: JsValue) -> Vec<KvMutation> {
    let put = |key: String, value: String| KvMutation::Put { key, value };
    let text = js_sys::JSON::stringify(&value)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default();
    let row = match serde_json::from_str::<StoredRow>(&text) {
        Ok(row) => row,
        Err(_) => return vec![put(keys::row_key(id), text)],
    };
    let Some(row) = upgraded(&row) else {
        let text = serde_json::to_string(&row).unwrap_or_default();
        return vec![put(keys::row_key(id), text)];
    };
    let mut mutations = vec![put(
        keys::row_key(&row.id),
        serde_json::to_string(&row).unwrap_or_default(),
    )];
    mutations.extend(
        keys::index_keys(&row)
            .into_iter()
            .map(|key| put(key, String::new())),
    );
    mutations
}

/// The row re-encoded from its record, with the event's header fields when the row
/// lacks them; `None` when it cannot be decoded.
fn upgraded(row: &StoredRow) -> Option<StoredRow> {
    let mut record = codec::decode(row).ok()?;
    if record.event.meta.is_none() {
        record.event.meta = crate::nostr::Event::parse_json(&record.event.raw)
            .ok()
            .and_then(|e| e.to_envelope().meta);
    }
    codec::encode(&record).ok()
}

/// Moves every row of `records` into `kv`; the number moved.
pub(super) async fn migrate(kv: &IdbKv) -> Result<u32, StoreError> {
    let mut total = 0;
    loop {
        let n = kv
            .run(async |db| {
                if !has_store(db, RECORDS) {
                    return Ok(0);
                }
                let mut stores = vec![RECORDS, KV, META];
                if has_store(db, LOOKUP) {
                    stores.push(LOOKUP);
                }
                let tx = Tx::open(db, &stores, true, Durability::Strict)?;
                let records = tx.store(RECORDS)?;
                let every = || indexed_db_futures::KeyRange::Only(JsValue::UNDEFINED);
                let ids = sys::request_keys(&records, every(), Some(BATCH))?;
                let rows = sys::request_all(&records, every(), Some(BATCH))?;
                let (ids, rows) = (ids.await?, rows.await?);
                let mut mutations = Vec::new();
                for (key, value) in ids.iter().zip(rows) {
                    let id = key.as_string().unwrap_or_else(|| format!("{key:?}"));
                    mutations.extend(moved(&id, value));
                    sys::delete_key(&records, key)?;
                    if stores.len() > 3 {
                        sys::delete_key(&tx.store(LOOKUP)?, key)?;
                    }
                }
                if !mutations.is_empty() {
                    apply(&tx, &mutations).await?;
                }
                tx.commit().await?;
                Ok::<u32, Failure>(ids.len() as u32)
            })
            .await?;
        total += n;
        if n < BATCH {
            return Ok(total);
        }
    }
}
