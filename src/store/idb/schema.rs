//! The IndexedDB schema: the object stores of [`super::IdbKv`] and the upgrade that
//! creates them. The database version equals the schema version.
//!
//! Schema v6 (the store written once: [`crate::store::kv::KvStore`] over IndexedDB)
//! - `kv` (out-of-line string keys): the key-value contract of [`crate::store::kv`].
//!   A record's row (`R/…`, [`crate::store::codec`]) is `{v, n, k}`: the row's JSON, its
//!   version (the number of the commit that wrote it) and the record's index keys
//!   ([`crate::store::kv::keys`]: `P/`, `L/`, `T/`, `E/`, `S/`), which the multiEntry
//!   index `k` orders. Every other key (slot locks, lease rows, heartbeats) is a row
//!   `[value, version]`. The key layout is [`crate::store::kv::keys`]'s, the same as on
//!   every storage adapter, where index keys are keys of their own.
//! - `meta` (out-of-line keys): `"schema"` → `{ version, library }`, and `"commit"` →
//!   the last commit number given out: each connection reserves a block of numbers past
//!   it in the transaction of the commit that needs one (`ops.rs`), so commit numbers are
//!   unique across connections, and a commit reads `meta` only when its connection's
//!   block is used up.
//!
//! Why the index keys are in the row: a record written is then one put, whose index
//! entries the browser writes with it, instead of a put of the row and a put (or delete)
//! of each index key that changed (five puts for a new record, two puts and two deletes
//! for an answer). Measured in Chromium 156 (`tests/e2e/bench/idb-index.mjs`: 5 000 rows
//! of 1.3 KB with four index keys, strict transactions, medians of 3 rounds): new rows
//! 658 ms against 1 728 (0.38), rows moving two keys 904 against 2 025 (0.45); listing
//! the 5 000 keys of one stage reads their rows, 133 ms against 18.
//!
//! Schema v5 kept the index keys as rows of their own (`[value, version]`, empty values).
//! The upgrade to v6 (`ops.rs`, `toV6`), in the `versionchange` transaction itself,
//! creates a new object store with the index, copies every entry of `kv` into it (each
//! index key into its row), deletes `kv` and renames the new store `kv`. Not an index
//! added to the old store: in WebKitGTK 2.50, once an upgrade that created an index on an
//! existing object store was aborted, every later upgrade of that database that creates
//! an index aborts too (probed: with the index named `k` again or `k2`, with the store
//! empty or not), while an aborted upgrade that created a new store with its index leaves
//! no such trace. The transaction is atomic: a crash leaves v5 as it was, and the next
//! open runs the upgrade again (tested, in every browser).
//!
//! Databases written by schemas v1–v4 kept one IndexedDB row per record in `records`
//! (key path `id`; v4 added `lookup`, the rows' immutable keys). The upgrade leaves both
//! and adds `kv`; [`super::legacy`] then moves their rows into `kv` in batches, each
//! batch in one transaction that also deletes what it moved, so a crash between two
//! leaves a database the next open goes on migrating.

use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;
use wasm_bindgen::prelude::*;
use web_sys::IdbTransaction;

/// The object store of metadata.
pub const META: &str = "meta";

/// The highest schema version this build can open.
pub const MAX_VERSION: u32 = 6;

/// Whether the database has the object store `name`.
pub fn has_store(db: &Database, name: &str) -> bool {
    db.object_store_names().any(|n| n == name)
}

/// Creates what schema v6 has and the database lacks (moving a v5 database's index keys
/// into their rows), then records the schema version
/// in `meta`. Called inside `upgradeneeded`, with its `versionchange` transaction.
pub fn upgrade(db: &Database, tx: &IdbTransaction) -> indexed_db_futures::Result<()> {
    if !has_store(db, META) {
        db.create_object_store(META).build()?;
    }
    // Creates `kv` with its index, or moves a v5 `kv` into that shape.
    super::ops::to_v6(tx.as_ref())?;
    let meta = tx.object_store(META)?;
    let info = js_sys::Object::new();
    js_sys::Reflect::set(&info, &"version".into(), &MAX_VERSION.into())?;
    js_sys::Reflect::set(&info, &"library".into(), &crate::VERSION.into())?;
    meta.put_with_key(&info, &JsValue::from_str("schema"))?;
    Ok(())
}
