//! IndexedDB as a backend of the one store: [`IdbKv`] implements the key-value contract
//! of [`crate::store::kv`] (reads of keys and ordered key ranges, atomic commits of puts
//! and deletes guarded by versions) over one object store, and [`IdbStore`] is
//! [`KvStore`] over it: every operation and rule of the outbox is written once, in
//! [`crate::store::kv`], for IndexedDB, the storage adapters and memory alike.
//!
//! Every call is issued on the backend's current read-write transaction while it is
//! active, else on a new one: a store operation's reads and its commit (and those of
//! other operations under way at once) share one transaction as long as nothing but
//! IndexedDB is awaited between them. A commit checks the versions of what its
//! operation read, in the transaction it writes in. The requests are issued by a few
//! lines of JavaScript (`ops.rs`). The schema is in `schema.rs`; databases written by schemas v1–v4 are
//! moved into it by `legacy.rs` when opened.
//!
//! Connection faults: another context's version change closes our connection (so its
//! upgrade can proceed) and the next call reopens it; a lost connection is reopened
//! once and the call retried; after [`IdbKv::close`] every call fails with `closed`
//! (it never reopens behind its owner's back); a blocked upgrade is a typed
//! `storage_blocked` error, not a hang; a database written by a newer schema is refused
//! with `storage_version_too_new` before anything is touched; `QuotaExceededError` (in
//! Chromium only the abort of the transaction carries it) is `quota_exceeded`.
//!
//! Connections are opened and upgraded through `indexed_db_futures` (`sys.rs`). Every
//! read and write, the move of legacy rows included, is a few lines of JavaScript
//! (`ops.rs`): the move through the crate's transactions and requests compiled to
//! 17 KB of code, 7 925 B of the gzipped browser .wasm (measured).

mod legacy;
mod ops;
mod schema;
mod sys;

use std::cell::{Cell, RefCell};

use indexed_db_futures::database::Database;
use indexed_db_futures::internals::SystemRepr;
use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::store::kv::{
    KvBackend, KvCommit, KvCommitted, KvEntry, KvLimits, KvMutation, KvRange, KvStore, KvValue,
};
use crate::store::{Progress, StoreError};

pub use crate::store::Durability;
pub use schema::MAX_VERSION as SCHEMA_VERSION;
use sys::{Conn, Failure};

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
    /// The read-write transaction calls are issued on while it is active.
    current: RefCell<Option<JsValue>>,
    /// Told how far the next commit got, in units ([`KvBackend::tell_next_commit`]).
    next_progress: RefCell<Option<(Progress, usize)>>,
}

impl std::fmt::Debug for IdbKv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdbKv")
            .field("options", &self.options)
            .field("open", &self.conn.borrow().is_some())
            .finish()
    }
}

/// A stored `[value, version]` row (`ops.rs` answers v6's record rows so) as a [`KvValue`]; anything else (written by other
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

/// Awaits a request batch of `ops.rs`.
async fn settle(promise: Promise) -> Result<JsValue, Failure> {
    JsFuture::from(promise).await.map_err(sys::failure)
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
            current: RefCell::new(None),
            next_progress: RefCell::new(None),
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

impl IdbKv {
    /// A new read-write transaction over `kv` and `meta`.
    async fn open_tx(&self) -> Result<JsValue, Failure> {
        let strict = self.options.durability == Durability::Strict;
        self.run(async |db| {
            let raw: &web_sys::IdbDatabase = db.as_sys();
            ops::open_tx(raw, strict).map_err(sys::failure)
        })
        .await
        .map_err(Failure::Store)
    }

    /// Runs `call` (one of `ops.rs`) on the current transaction while it is active, else
    /// on a new one (then the current one), and awaits its answer. A lost connection is
    /// reopened once and `call` run again.
    async fn exec(
        &self,
        call: &dyn Fn(&JsValue) -> Result<Promise, JsValue>,
    ) -> Result<JsValue, StoreError> {
        match self.exec_once(call).await {
            Err(Failure::Lost(_)) => {
                self.conn.borrow_mut().take();
                self.current.borrow_mut().take();
                self.exec_once(call).await.map_err(StoreError::from)
            }
            other => other.map_err(StoreError::from),
        }
    }

    async fn exec_once(
        &self,
        call: &dyn Fn(&JsValue) -> Result<Promise, JsValue>,
    ) -> Result<JsValue, Failure> {
        let current = self.current.borrow().clone();
        if let Some(tx) = current {
            // Throws at once when the transaction has finished.
            if let Ok(promise) = call(&tx) {
                return settle(promise).await;
            }
        }
        let tx = self.open_tx().await?;
        *self.current.borrow_mut() = Some(tx.clone());
        settle(call(&tx).map_err(sys::failure)?).await
    }
}

impl KvBackend for IdbKv {
    fn limits(&self) -> KvLimits {
        KvLimits::UNLIMITED
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<KvValue>>, StoreError> {
        let keys: Array = keys.iter().map(|k| JsValue::from_str(k)).collect();
        let rows = self.exec(&|tx| ops::get_many(tx, keys.clone())).await?;
        Ok(Array::from(&rows).iter().map(|row| stored(&row)).collect())
    }

    async fn list(&self, r: &KvRange) -> Result<Vec<KvEntry>, StoreError> {
        if r.start >= r.end {
            return Ok(Vec::new());
        }
        // IndexedDB's `getAll` reads forward only: a reverse list reads the whole range
        // (the store itself never lists in reverse; the contract allows it).
        let limit = match r.reverse {
            false => JsValue::from(r.limit),
            true => JsValue::UNDEFINED,
        };
        let answer = self
            .exec(&|tx| ops::list(tx, &r.start, &r.end, limit.clone()))
            .await?;
        let answer = Array::from(&answer);
        let (keys, rows) = (Array::from(&answer.get(0)), Array::from(&answer.get(1)));
        let mut entries: Vec<KvEntry> = keys
            .iter()
            .zip(rows.iter())
            .filter_map(|(key, row)| {
                let KvValue { value, version } = stored(&row)?;
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

    async fn count(&self, start: &str, end: &str) -> Result<usize, StoreError> {
        if start >= end {
            return Ok(0);
        }
        let n = self.exec(&|tx| ops::count(tx, start, end)).await?;
        Ok(n.as_f64().map_or(0, |n| n as usize))
    }

    fn tell_next_commit(&self, progress: Progress, units: usize) {
        *self.next_progress.borrow_mut() = Some((progress, units));
    }

    /// Schema v6 keeps a record's index keys in its row (`ops.rs`).
    fn holds_index_keys(&self) -> bool {
        true
    }

    /// One new row is written with `add` (`ops.rs`); more are read first (a commit of
    /// several rows would read them anyway).
    fn checks_new_rows(&self, rows: usize) -> bool {
        rows == 1
    }

    /// Tells the listener of [`KvBackend::tell_next_commit`] as the browser answers the
    /// writes (about every hundredth of them; `ops.rs` spreads the units over them).
    async fn commit(&self, commit: KvCommit) -> Result<KvCommitted, StoreError> {
        // Called only while the commit is awaited below: its requests have all answered
        // (or the transaction ended) before the closure is dropped. A commit sent again
        // (a lost connection) tells only what goes past what was told.
        let (units, written) = match self.next_progress.take() {
            Some((progress, units)) => {
                let told = Cell::new(0);
                let report = Closure::<dyn FnMut(u32)>::new(move |done: u32| {
                    if done > told.get() {
                        told.set(done);
                        progress(done as usize, units);
                    }
                });
                (units, Some(report))
            }
            None => (0, None),
        };
        let on_written = written
            .as_ref()
            .map_or(JsValue::UNDEFINED, |c| c.as_ref().clone());
        let puts = Array::new();
        let deletes = Array::new();
        for m in &commit.mutations {
            match m {
                KvMutation::Put { key, value } => {
                    puts.push(&JsValue::from_str(key));
                    puts.push(&JsValue::from_str(value));
                }
                KvMutation::Delete { key } => {
                    deletes.push(&JsValue::from_str(key));
                }
            }
        }
        let checks: Array = commit
            .checks
            .iter()
            .map(|c| JsValue::from_str(&c.key))
            .collect();
        let versions: Array = commit
            .checks
            .iter()
            .map(|c| {
                c.version
                    .as_deref()
                    .map_or(JsValue::NULL, JsValue::from_str)
            })
            .collect();
        let applied = self
            .exec(&|tx| {
                ops::commit(
                    tx,
                    checks.clone(),
                    versions.clone(),
                    puts.clone(),
                    deletes.clone(),
                    &on_written,
                    units as u32,
                )
            })
            .await?;
        Ok(match applied.as_bool() {
            Some(true) => KvCommitted::Applied,
            _ => KvCommitted::Conflict,
        })
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
