//! The IndexedDB schema: the object stores of [`super::IdbKv`] and the upgrade that
//! creates them. The database version equals the schema version.
//!
//! Schema v5 (the store written once: [`crate::store::kv::KvStore`] over IndexedDB)
//! - `kv` (out-of-line string keys): the key-value contract of [`crate::store::kv`],
//!   one IndexedDB row per key: `[value, version]`, the value a string (a record's
//!   row ([`crate::store::codec`]) under `r/…`, empty for index keys), the
//!   version a number (the commit that wrote it). The key layout is
//!   [`crate::store::kv::keys`]'s, the same as on every storage adapter.
//! - `meta` (out-of-line keys): `"schema"` → `{ version, library }`, and `"commit"` →
//!   the number of the last commit (a commit's version: one more).
//!
//! Databases written by schemas v1–v4 kept one IndexedDB row per record in `records`
//! (key path `id`; v4 added `lookup`, the rows' immutable keys). The upgrade to v5
//! leaves both and adds `kv`; [`super::legacy`] then moves their rows into `kv` in
//! batches, each batch in one transaction that also deletes what it moved, so a crash
//! between two leaves a database the next open goes on migrating.

use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;
use wasm_bindgen::prelude::*;
use web_sys::IdbTransaction;

/// The object store of keys and values (schema v5).
pub const KV: &str = "kv";
/// The object store of metadata.
pub const META: &str = "meta";

/// The highest schema version this build can open.
pub const MAX_VERSION: u32 = 5;

/// Whether the database has the object store `name`.
pub fn has_store(db: &Database, name: &str) -> bool {
    db.object_store_names().any(|n| n == name)
}

/// Creates what schema v5 has and the database lacks, then records the schema version
/// in `meta`. Called inside `upgradeneeded`, with its `versionchange` transaction.
pub fn upgrade(db: &Database, tx: &IdbTransaction) -> indexed_db_futures::Result<()> {
    if !has_store(db, META) {
        db.create_object_store(META).build()?;
    }
    if !has_store(db, KV) {
        db.create_object_store(KV).build()?;
    }
    let meta = tx.object_store(META)?;
    let info = js_sys::Object::new();
    js_sys::Reflect::set(&info, &"version".into(), &MAX_VERSION.into())?;
    js_sys::Reflect::set(&info, &"library".into(), &crate::VERSION.into())?;
    meta.put_with_key(&info, &JsValue::from_str("schema"))?;
    Ok(())
}
