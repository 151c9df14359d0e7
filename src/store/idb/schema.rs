//! The IndexedDB schema and its migrations: one function per version step, run in
//! order inside the `upgradeneeded` transaction. A migration only adds; it never
//! deletes user data. The database version equals the schema version.
//!
//! Schema v1
//! - `records` (key path `id`): one [`crate::store::codec::StoredRow`] per item, with
//!   indexes `due` = `[dueMs, createdMs, id]` (claim order; terminal rows have no
//!   `dueMs` and are not in it), `created` = `[createdMs, id]` (list order),
//!   `stage` = `[stage, createdMs, id]` (list by stage, counts, purge) and
//!   `event` = `eventId` (find an event's record under a custom item id).
//! - `meta` (out-of-line keys): `"schema"` → `{ version, library }`.

use js_sys::Array;
use wasm_bindgen::prelude::*;
use web_sys::{IdbDatabase, IdbObjectStoreParameters, IdbTransaction};

/// The object store of records.
pub const RECORDS: &str = "records";
/// The object store of metadata.
pub const META: &str = "meta";
/// Index: claim order.
pub const IDX_DUE: &str = "due";
/// Index: list order.
pub const IDX_CREATED: &str = "created";
/// Index: stage, then list order.
pub const IDX_STAGE: &str = "stage";
/// Index: event id.
pub const IDX_EVENT: &str = "event";

type Migration = fn(&IdbDatabase, &IdbTransaction) -> Result<(), JsValue>;

/// One entry per version step: `MIGRATIONS[n]` upgrades version `n` to `n + 1`.
const MIGRATIONS: &[Migration] = &[v0_to_v1];

/// The highest schema version this build can open.
pub const MAX_VERSION: u32 = MIGRATIONS.len() as u32;

fn key_path(fields: &[&str]) -> Array {
    fields.iter().map(|f| JsValue::from_str(f)).collect()
}

fn v0_to_v1(db: &IdbDatabase, _tx: &IdbTransaction) -> Result<(), JsValue> {
    let params = IdbObjectStoreParameters::new();
    params.set_key_path(&JsValue::from_str("id"));
    let records = db.create_object_store_with_optional_parameters(RECORDS, &params)?;
    records
        .create_index_with_str_sequence(IDX_DUE, &key_path(&["dueMs", "createdMs", "id"]).into())?;
    records.create_index_with_str_sequence(IDX_CREATED, &key_path(&["createdMs", "id"]).into())?;
    records.create_index_with_str_sequence(
        IDX_STAGE,
        &key_path(&["stage", "createdMs", "id"]).into(),
    )?;
    records.create_index_with_str(IDX_EVENT, "eventId")?;
    db.create_object_store(META)?;
    Ok(())
}

/// Runs every migration from `old_version` up to [`MAX_VERSION`], then records the
/// schema version in `meta`. Called inside `upgradeneeded`.
pub fn upgrade(db: &IdbDatabase, tx: &IdbTransaction, old_version: u32) -> Result<(), JsValue> {
    for step in MIGRATIONS.iter().skip(old_version as usize) {
        step(db, tx)?;
    }
    let meta = tx.object_store(META)?;
    let info = js_sys::Object::new();
    js_sys::Reflect::set(&info, &"version".into(), &MAX_VERSION.into())?;
    js_sys::Reflect::set(&info, &"library".into(), &crate::VERSION.into())?;
    meta.put_with_key(&info, &JsValue::from_str("schema"))?;
    Ok(())
}
