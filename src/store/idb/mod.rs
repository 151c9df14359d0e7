//! IndexedDB as a backend of the one store: [`IdbKv`] implements the key-value contract
//! of [`crate::store::kv`] (reads of keys and ordered key ranges, atomic commits of puts
//! and deletes guarded by versions) over one object store, and [`IdbStore`] is
//! [`KvStore`] over it: every operation and rule of the outbox is written once, in
//! [`crate::store::kv`], for IndexedDB, the storage adapters and memory alike.
//!
//! Each call is one transaction: `get_many` and `list` a read-only one, `commit` a
//! read-write one that reads the checked keys' versions, compares, and writes (or
//! aborts and answers a conflict), awaiting nothing but IndexedDB inside it. The schema
//! is in `schema.rs`; databases written by schemas v1–v4 are moved into it by
//! `legacy.rs` when opened.
//!
//! Connection faults: another context's version change closes our connection (so its
//! upgrade can proceed) and the next call reopens it; a lost connection is reopened
//! once and the call retried; after [`IdbKv::close`] every call fails with `closed`
//! (it never reopens behind its owner's back); a blocked upgrade is a typed
//! `storage_blocked` error, not a hang; a database written by a newer schema is refused
//! with `storage_version_too_new` before anything is touched; `QuotaExceededError` (in
//! Chromium only the abort of the transaction carries it) is `quota_exceeded`.
//!
//! IndexedDB is reached through `indexed_db_futures` (`sys.rs` holds the plumbing and
//! the few web-sys calls the crate lacks).

mod legacy;
pub mod persistence;
mod row;
mod schema;
mod sys;

use std::cell::{Cell, RefCell};

use indexed_db_futures::database::Database;
use indexed_db_futures::KeyRange;
use js_sys::Array;
use wasm_bindgen::prelude::*;

use crate::store::kv::{
    KvBackend, KvCommit, KvCommitted, KvEntry, KvLimits, KvMutation, KvRange, KvStore, KvValue,
};
use crate::store::StoreError;

pub use schema::MAX_VERSION as SCHEMA_VERSION;
pub use sys::Durability;
use sys::{Conn, Failure, Tx};

use schema::{COMMIT, KV, META};

/// How to open an [`IdbStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdbOptions {
    /// The database name (one outbox per name per origin).
    pub name: String,
    /// The durability of commits (default [`Durability::Strict`]).
    pub durability: Durability,
}

impl IdbOptions {
    /// Options for the database `name` with strict durability.
    pub fn new(name: impl Into<String>) -> IdbOptions {
        IdbOptions {
            name: name.into(),
            durability: Durability::Strict,
        }
    }
}

/// The IndexedDB store: the one [`KvStore`] over [`IdbKv`].
pub type IdbStore = KvStore<IdbKv>;

/// The key-value contract over an IndexedDB database (see the module documentation).
pub struct IdbKv {
    options: IdbOptions,
    conn: RefCell<Option<Conn>>,
    /// The version it opens (the schema's; tests open higher ones).
    version: u32,
    closed: Cell<bool>,
}

impl std::fmt::Debug for IdbKv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdbKv")
            .field("options", &self.options)
            .field("open", &self.conn.borrow().is_some())
            .finish()
    }
}

/// A stored `[value, version]` row as a [`KvValue`]; anything else (written by other
/// software) reads as an empty value, which the store reports as a corrupt row.
fn stored(row: &JsValue) -> Option<KvValue> {
    if row.is_undefined() {
        return None;
    }
    let (value, version) = match row.dyn_ref::<Array>() {
        Some(pair) => (pair.get(0).as_string(), pair.get(1).as_f64()),
        None => (None, None),
    };
    Some(KvValue {
        value: value.unwrap_or_default(),
        version: version.map_or_else(String::new, |v| (v as u64).to_string()),
    })
}

/// The key range `[start, end)`.
fn range(start: &str, end: &str) -> KeyRange<JsValue> {
    KeyRange::Bound(start.into(), false, end.into(), true)
}

impl IdbKv {
    /// Opens (creating, upgrading or migrating) the database.
    pub async fn open(options: IdbOptions) -> Result<IdbKv, StoreError> {
        IdbKv::open_version(options, schema::MAX_VERSION).await
    }

    async fn open_version(options: IdbOptions, version: u32) -> Result<IdbKv, StoreError> {
        let kv = IdbKv {
            options,
            conn: RefCell::new(None),
            version,
            closed: Cell::new(false),
        };
        kv.connection().await?;
        legacy::migrate(&kv).await?;
        Ok(kv)
    }

    /// The options it was opened with.
    pub fn options(&self) -> &IdbOptions {
        &self.options
    }

    /// Closes the connection for good: every later call fails with `closed`
    /// ([`StoreError::Closed`]). Open a new store to continue.
    pub fn close(&self) {
        self.closed.set(true);
        if let Some(conn) = self.conn.borrow_mut().take() {
            conn.close();
        }
    }

    /// True while it holds an open connection (false after another context's
    /// version change closed it, until the next operation reopens it).
    pub fn is_connected(&self) -> bool {
        self.conn.borrow().as_ref().is_some_and(|c| !c.is_closed())
    }

    async fn connection(&self) -> Result<Database, Failure> {
        if self.closed.get() {
            return Err(Failure::Store(StoreError::Closed));
        }
        if let Some(conn) = self.conn.borrow().as_ref() {
            if !conn.is_closed() {
                return Ok(conn.db().clone());
            }
        }
        self.conn.borrow_mut().take();
        let conn = sys::open(&self.options.name, self.version)
            .await
            .map_err(|e| match e {
                Failure::Lost(m) => Failure::Store(StoreError::Backend(m)),
                other => other,
            })?;
        let db = conn.db().clone();
        *self.conn.borrow_mut() = Some(conn);
        Ok(db)
    }

    /// Runs `op` on the connection; when the connection turns out closed or lost,
    /// reopens once and runs it again.
    async fn run<T>(
        &self,
        op: impl AsyncFn(&Database) -> Result<T, Failure>,
    ) -> Result<T, StoreError> {
        let db = self.connection().await?;
        match op(&db).await {
            Err(Failure::Lost(_)) => {
                self.conn.borrow_mut().take();
                let db = self.connection().await?;
                op(&db).await.map_err(StoreError::from)
            }
            other => other.map_err(StoreError::from),
        }
    }
}

/// Writes `mutations` in `tx` as the commit after the one `meta` names (read there),
/// recording its number, and waits until every write has answered. Every check of the
/// caller has been made in `tx`.
///
/// A write that fails (Firefox refuses one over quota at the request) aborts `tx` at
/// once, being unhandled, so waiting for the writes' answers before the caller commits
/// keeps the commit whole: a transaction asked to commit while a write is pending may
/// complete without the refused write (Firefox does), which would store part of a commit.
async fn apply(tx: &Tx<'_>, mutations: &[KvMutation]) -> Result<(), Failure> {
    let meta = tx.store(META)?;
    let kv = tx.store(KV)?;
    let last = sys::get(&meta, COMMIT)?.await?.as_f64().unwrap_or(0.0);
    let version = JsValue::from_f64(last + 1.0);
    for m in mutations {
        match m {
            KvMutation::Put { key, value } => {
                let row = Array::of2(&JsValue::from_str(value), &version);
                sys::put(&kv, key, &row)?;
            }
            KvMutation::Delete { key } => sys::delete(&kv, key)?,
        }
    }
    sys::put(&meta, COMMIT, &version)?;
    // Requests are answered in order: this read answers after every write above.
    match sys::get(&meta, COMMIT)?.await {
        Ok(_) => Ok(()),
        Err(e) => Err(tx.failed(e)),
    }
}

impl KvBackend for IdbKv {
    fn limits(&self) -> KvLimits {
        KvLimits::UNLIMITED
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<KvValue>>, StoreError> {
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let rows = self
            .run(async |db| {
                let tx = Tx::open(db, &[KV], false, Durability::Relaxed)?;
                sys::get_many(&tx.store(KV)?, &keys).await
            })
            .await?;
        Ok(rows.iter().map(stored).collect())
    }

    async fn list(&self, r: &KvRange) -> Result<Vec<KvEntry>, StoreError> {
        if r.start >= r.end {
            return Ok(Vec::new());
        }
        // IndexedDB's `getAll` reads forward only: a reverse list reads the whole range
        // (the store itself never lists in reverse; the contract allows it).
        let limit = (!r.reverse).then_some(r.limit);
        let (keys, rows) = self
            .run(async |db| {
                let tx = Tx::open(db, &[KV], false, Durability::Relaxed)?;
                let kv = tx.store(KV)?;
                let keys = sys::request_keys(&kv, range(&r.start, &r.end), limit)?;
                let rows = sys::request_all(&kv, range(&r.start, &r.end), limit)?;
                Ok((keys.await?, rows.await?))
            })
            .await?;
        let mut entries: Vec<KvEntry> = keys
            .iter()
            .zip(&rows)
            .filter_map(|(key, row)| {
                let KvValue { value, version } = stored(row)?;
                Some(KvEntry {
                    key: key.as_string()?,
                    value,
                    version,
                })
            })
            .collect();
        if r.reverse {
            entries.reverse();
            entries.truncate(r.limit as usize);
        }
        Ok(entries)
    }

    async fn commit(&self, commit: KvCommit) -> Result<KvCommitted, StoreError> {
        let durability = self.options.durability;
        self.run(async |db| {
            let tx = Tx::open(db, &[KV, META], true, durability)?;
            let keys: Vec<&str> = commit.checks.iter().map(|c| c.key.as_str()).collect();
            let rows = sys::get_many(&tx.store(KV)?, &keys).await?;
            let holds = commit
                .checks
                .iter()
                .zip(&rows)
                .all(|(check, row)| stored(row).map(|v| v.version) == check.version);
            if !holds {
                tx.abort().await;
                return Ok(KvCommitted::Conflict);
            }
            apply(&tx, &commit.mutations).await?;
            tx.commit().await?;
            Ok(KvCommitted::Applied)
        })
        .await
    }
}

impl KvStore<IdbKv> {
    /// Opens (creating, upgrading or migrating) the database.
    ///
    /// Errors: `storage_version_too_new` when the database was written by a newer
    /// schema (nothing is touched), `storage_blocked` when the upgrade is blocked by
    /// another connection, `storage` when IndexedDB is unavailable.
    pub async fn open(options: IdbOptions) -> Result<IdbStore, StoreError> {
        Ok(KvStore::new(IdbKv::open(options).await?))
    }

    /// Test hook: [`IdbStore::open`] at another database version (e.g. one that needs
    /// an upgrade another connection blocks).
    #[doc(hidden)]
    pub async fn open_at_version_for_tests(
        options: IdbOptions,
        version: u32,
    ) -> Result<IdbStore, StoreError> {
        Ok(KvStore::new(IdbKv::open_version(options, version).await?))
    }

    /// The options it was opened with.
    pub fn options(&self) -> &IdbOptions {
        self.backend().options()
    }

    /// See [`IdbKv::close`].
    pub fn close(&self) {
        self.backend().close();
    }

    /// See [`IdbKv::is_connected`].
    pub fn is_connected(&self) -> bool {
        self.backend().is_connected()
    }

    /// Test hook: closes the underlying `IDBDatabase` behind the store's back, as a
    /// browser does when it drops a connection, so the next call meets a dead handle
    /// and must reopen and retry.
    #[doc(hidden)]
    pub fn lose_connection_for_tests(&self) {
        if let Some(conn) = self.backend().conn.borrow().as_ref() {
            conn.db().clone().close();
        }
    }
}

impl Drop for IdbKv {
    fn drop(&mut self) {
        self.close();
    }
}
