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
//!
//! Schema v2 (the queue's Nostr rules)
//! - `records` gains the index `slot` = `[slot, slotPart, slotOrder, eventId]`: the
//!   versions of replaceable and addressable events by address, those that may still
//!   be sent apart (`slotPart` 1) and the newest first (`slotOrder` = −created_at).
//! - Every row written by v1 is rewritten in the upgrade transaction with its event's
//!   header fields ([`crate::core::EventMeta`], read from its stored text) and, for
//!   replaceable and addressable events, its `slot` fields, so the rules see the records
//!   queued before the upgrade. A row that cannot be decoded is left as it is.
//!
//! Schema v3 (lanes and priorities)
//! - `due` becomes `[rank, dueMs, createdMs, id]` (the index is dropped and made again):
//!   `rank` is the priority (0 high, 1 normal, 2 low), so a claim reads one range per
//!   priority, high first, and never a backlog of lower priority.
//! - `laneDue` = `[lane, rank, dueMs, createdMs, id]`: claims restricted to named lanes
//!   read one range per lane and priority. Rows of the default lane have no `lane`
//!   field, so it holds only named lanes' rows (and costs the default lane nothing).
//! - Every row written before (no `rank`) is rewritten with its `rank` (its record is
//!   `normal`, in the default lane). A row that cannot be decoded is left as
//!   it is (it is in neither index, as a corrupt row was in no claim before).
//!
//! Schema v4 (the hot row keeps only the indexes that change)
//! - `lookup` (key path `id`, the item id): one row per record, `{ id, eventId?,
//!   createdMs }`, written once by the enqueue and deleted with the record by `purge`,
//!   with the indexes `created` = `[createdMs, id]` (list order) and `event` =
//!   `eventId`, moved here from `records`. Their keys never change, but IndexedDB
//!   writes every index entry of a row on every `put`: on `records` they cost two of
//!   the four index writes of each claim and each answer. `eventId` is left out when it
//!   is the item id (the default): a lookup by event id also reads the record stored
//!   under it.
//! - `records` keeps `due`, `laneDue`, `stage` and `slot`; its rows are unchanged.
//! - Every row's keys are copied into `lookup` by a cursor in the upgrade transaction
//!   (`sys::fill_lookup`); a row whose document cannot be decoded gets them too when
//!   its key fields are well formed (as before, list order meets it and skips it).

use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;
use indexed_db_futures::KeyPath;
use wasm_bindgen::prelude::*;
use web_sys::IdbTransaction;

/// The object store of records.
pub const RECORDS: &str = "records";
/// The object store of the records' immutable lookup keys (schema v4).
pub const LOOKUP: &str = "lookup";
/// The object store of metadata.
pub const META: &str = "meta";
/// Index: claim order.
pub const IDX_DUE: &str = "due";
/// Index: list order (on `lookup` since schema v4).
pub const IDX_CREATED: &str = "created";
/// Index: stage, then list order.
pub const IDX_STAGE: &str = "stage";
/// Index: event id (on `lookup` since schema v4).
pub const IDX_EVENT: &str = "event";
/// Index: versions of replaceable and addressable events by address (schema v2).
pub const IDX_SLOT: &str = "slot";
/// Index: claim order within a lane (schema v3).
pub const IDX_LANE_DUE: &str = "laneDue";

/// A migration step: the database (object stores are created and deleted through it)
/// and the `versionchange` transaction (existing object stores are reached through it).
type Migration = fn(&Database, &IdbTransaction) -> indexed_db_futures::Result<()>;

/// One entry per version step: `MIGRATIONS[n]` upgrades version `n` to `n + 1`.
const MIGRATIONS: &[Migration] = &[v0_to_v1, v1_to_v2, v2_to_v3, v3_to_v4];

/// The highest schema version this build can open.
pub const MAX_VERSION: u32 = MIGRATIONS.len() as u32;

fn v0_to_v1(db: &Database, _tx: &IdbTransaction) -> indexed_db_futures::Result<()> {
    let records = db
        .create_object_store(RECORDS)
        .with_key_path(KeyPath::One("id"))
        .build()?;
    let index = |name: &str, fields: Vec<&str>| {
        records
            .create_index(name, KeyPath::from(fields))
            .build()
            .map(drop)
    };
    index(IDX_DUE, vec!["dueMs", "createdMs", "id"])?;
    index(IDX_CREATED, vec!["createdMs", "id"])?;
    index(IDX_STAGE, vec!["stage", "createdMs", "id"])?;
    records
        .create_index(IDX_EVENT, KeyPath::One("eventId"))
        .build()?;
    db.create_object_store(META).build()?;
    Ok(())
}

fn v1_to_v2(_db: &Database, tx: &IdbTransaction) -> indexed_db_futures::Result<()> {
    let records = tx.object_store(RECORDS)?;
    let fields = js_sys::Array::of4(
        &"slot".into(),
        &"slotPart".into(),
        &"slotOrder".into(),
        &"eventId".into(),
    );
    records.create_index_with_str_sequence(IDX_SLOT, &fields)?;
    super::sys::rewrite_rows(&records, super::upgrade_row)?;
    Ok(())
}

fn v2_to_v3(_db: &Database, tx: &IdbTransaction) -> indexed_db_futures::Result<()> {
    let records = tx.object_store(RECORDS)?;
    records.delete_index(IDX_DUE)?;
    let fields = |names: &[&str]| {
        names
            .iter()
            .map(|n| JsValue::from_str(n))
            .collect::<js_sys::Array>()
    };
    records
        .create_index_with_str_sequence(IDX_DUE, &fields(&["rank", "dueMs", "createdMs", "id"]))?;
    records.create_index_with_str_sequence(
        IDX_LANE_DUE,
        &fields(&["lane", "rank", "dueMs", "createdMs", "id"]),
    )?;
    super::sys::rewrite_rows(&records, super::upgrade_row)?;
    Ok(())
}

fn v3_to_v4(db: &Database, tx: &IdbTransaction) -> indexed_db_futures::Result<()> {
    let lookup = db
        .create_object_store(LOOKUP)
        .with_key_path(KeyPath::One("id"))
        .build()?;
    lookup
        .create_index(IDX_CREATED, KeyPath::from(vec!["createdMs", "id"]))
        .build()?;
    lookup
        .create_index(IDX_EVENT, KeyPath::One("eventId"))
        .build()?;
    let records = tx.object_store(RECORDS)?;
    records.delete_index(IDX_CREATED)?;
    records.delete_index(IDX_EVENT)?;
    super::sys::fill_lookup(tx)?;
    Ok(())
}

/// Runs every migration from `old_version` up to [`MAX_VERSION`], then records the
/// schema version in `meta`. Called inside `upgradeneeded`, with its `versionchange`
/// transaction.
pub fn upgrade(
    db: &Database,
    tx: &IdbTransaction,
    old_version: u32,
) -> indexed_db_futures::Result<()> {
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
