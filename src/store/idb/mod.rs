//! The durable store for browsers and workers: IndexedDB, one transaction per
//! operation, every transition computed by [`crate::core`].
//!
//! Transactions never span an await on anything but an IndexedDB request or the
//! transaction's own completion, so none is committed early. Writes are issued only
//! after every decision of an operation is made, so a refused operation writes
//! nothing; a failed write aborts its whole transaction.
//!
//! Connection faults: another context's version change closes our connection (so its
//! upgrade can proceed) and the next call reopens it; a lost connection is reopened
//! once and the operation retried; after [`IdbStore::close`] every call fails with
//! `closed` (it never reopens behind its owner's back); a blocked upgrade is a typed `storage_blocked`
//! error, not a hang; a database written by a newer schema is refused with
//! `storage_version_too_new` before anything is touched; `QuotaExceededError` (in
//! Chromium only the abort of the transaction carries it) is `quota_exceeded`.
//! A row that cannot be decoded is reported through [`IdbStore::corrupt_records`] and
//! `corrupt_record` errors, skipped by claims and lists, and never deleted.
//!
//! IndexedDB is reached through `indexed_db_futures` (`sys.rs` holds the plumbing and
//! the few web-sys calls the crate lacks); rows are plain objects converted by
//! serde-wasm-bindgen (`row.rs`).

pub mod persistence;
mod row;
mod schema;
mod sys;

use std::cell::{Cell, RefCell};

use indexed_db_futures::database::Database;
use indexed_db_futures::index::Index;
use indexed_db_futures::KeyRange;
use js_sys::{Array, Reflect};
use wasm_bindgen::prelude::*;

use crate::core::semantics;
use crate::core::{
    self, ClaimRequest, Completion, CoreError, EnqueueDecision, Enqueued, ListQuery, Lookups, Plan,
    Priority, Record, RetryConfig, Stage, StageCounts, DEFAULT_LANE,
};
use crate::store::codec;
use crate::store::{CorruptRow, Store, StoreError};

pub use schema::MAX_VERSION as SCHEMA_VERSION;
pub use sys::Durability;
use sys::{add_rows, get_all, get_many, Conn, Failure, Tx};

use indexed_db_futures::object_store::ObjectStore;
use schema::{IDX_CREATED, IDX_DUE, IDX_EVENT, IDX_LANE_DUE, IDX_SLOT, IDX_STAGE};

/// How to open an [`IdbStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdbOptions {
    /// The database name (one outbox per name per origin).
    pub name: String,
    /// The durability of enqueue and evidence writes (default [`Durability::Strict`]).
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

/// The IndexedDB [`Store`].
pub struct IdbStore {
    options: IdbOptions,
    conn: RefCell<Option<Conn>>,
    /// The version it opens (the schema's; tests open higher ones).
    version: u32,
    closed: std::cell::Cell<bool>,
    /// Corrupt rows seen so far, sorted by id (a sorted `Vec` instead of one more
    /// `BTreeMap` instantiation in the .wasm).
    corrupt: RefCell<Vec<CorruptRow>>,
    /// True once every row has been read (the first `status()` does it), so the
    /// corrupt rows above are all of them (but for rows written later by other software,
    /// noticed when a read meets them).
    scanned: std::cell::Cell<bool>,
    /// The records this store's claims leased, with the document text each was written
    /// as, sorted by id: a completion whose stored row still holds that very text uses
    /// the record instead of decoding the row (copying its text into wasm and parsing
    /// it). With the pooled random words, the page's CPU per 1 000 publishes of a flush
    /// went from 559–561 ms to 527–528 (two A/B runs, `bench.mjs --only=flush
    /// --compare`). The text is the record's source of truth, so equal text is an equal
    /// record; a row changed since (another tab's cancel, a take-over) holds other text
    /// and is decoded. Removed when used; cleared when it reaches [`LEASED_CACHE`]
    /// (leases never completed here: released, taken over, the flusher stopped).
    leased: RefCell<Vec<(String, JsValue, Record)>>,
}

/// How many leased records [`IdbStore`] keeps for their completion (a flush keeps at
/// most `concurrency` (256) publishes plus one claim in flight per relay).
const LEASED_CACHE: usize = 1024;

impl std::fmt::Debug for IdbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdbStore")
            .field("options", &self.options)
            .field("open", &self.conn.borrow().is_some())
            .finish()
    }
}

fn key(parts: &[JsValue]) -> JsValue {
    parts.iter().collect::<Array>().into()
}

/// A key greater than any number or string at its position (an empty array).
fn top() -> JsValue {
    Array::new().into()
}

/// Every key (IndexedDB reads an `undefined` query as no bound at all).
fn every_key() -> KeyRange<JsValue> {
    KeyRange::Only(JsValue::UNDEFINED)
}

/// Every `stage` index key of one stage: `[stage]` up to `[stage, []]`.
fn stage_range(stage: Stage) -> KeyRange<JsValue> {
    let s = JsValue::from_str(stage.as_str());
    KeyRange::Bound(
        key(std::slice::from_ref(&s)),
        false,
        key(&[s, top()]),
        false,
    )
}

/// The `slot` index keys of one address: `[slot, part]` up to `[slot, part, []]`, or
/// every part.
fn slot_range(slot: &str, part: Option<f64>) -> KeyRange<JsValue> {
    let mut lower = vec![JsValue::from_str(slot)];
    lower.extend(part.map(JsValue::from_f64));
    let mut upper = lower.clone();
    upper.push(top());
    KeyRange::Bound(key(&lower), false, key(&upper), false)
}

/// The rewrite of a row written by an older schema, for every migration that rewrites
/// rows (v1 → v2, v2 → v3): the same record with its event's header fields (read from
/// its stored text, v2) and the row's `slot` (v2), `rank` and `lane` (v3) fields.
/// `None` (the row is kept as it is) for a row that cannot be decoded or that already
/// has them; a row whose event text does not parse gets no header fields (so no `slot`)
/// but its `rank` and `lane`. One function for both steps, because an upgrade from v1
/// runs both cursors in one transaction and they interleave: each writes the whole
/// current row, so whichever writes last leaves it complete.
pub(super) fn upgrade_row(value: JsValue) -> Option<JsValue> {
    let row = row::from_js(value).ok()?;
    let mut record = codec::decode(&row).ok()?;
    let parsed = || crate::nostr::Event::parse_json(&record.event.raw).ok();
    let meta = match &record.event.meta {
        Some(_) => None,
        None => parsed().and_then(|e| e.to_envelope().meta),
    };
    if meta.is_none() && row.rank.is_some() {
        return None;
    }
    if meta.is_some() {
        record.event.meta = meta;
    }
    row::to_js(&codec::encode(&record).ok()?).ok()
}

/// The claim-order range of one priority (and lane): from `[lane?, rank]` (exclusive
/// `after`, the last key read, when continuing) up to the keys due at `now_ms`.
fn due_range(prefix: &[JsValue], after: Option<JsValue>, now_ms: u64) -> KeyRange<JsValue> {
    let mut upper = prefix.to_vec();
    upper.push(JsValue::from_f64(now_ms as f64));
    upper.push(top());
    match after {
        None => KeyRange::Bound(key(prefix), false, key(&upper), false),
        Some(after) => KeyRange::Bound(after, true, key(&upper), false),
    }
}

/// A read-modify-write of one record: the record and the records of its slot (when
/// asked for) to the next record.
type Transition<'a> = dyn Fn(&Record, &[Record]) -> Result<Record, CoreError> + 'a;

/// A field of a row object (`undefined` when absent or not an object).
fn field(row: &JsValue, name: &str) -> JsValue {
    Reflect::get(row, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
}

/// Encodes a record into its row object.
fn to_row(record: &Record) -> Result<JsValue, StoreError> {
    row::to_js(&codec::encode(record)?)
}

/// The rows of `records` named by `lookup` rows (`undefined` where one is gone), in
/// their order.
async fn rows_of(store: &ObjectStore<'_>, keys: Vec<JsValue>) -> Result<Vec<JsValue>, Failure> {
    let ids: Vec<String> = keys
        .iter()
        .filter_map(|row| field(row, "id").as_string())
        .collect();
    get_many(store, &ids.iter().map(String::as_str).collect::<Vec<_>>()).await
}

/// Encodes a new record into its row object and its `lookup` row.
fn to_new_rows(record: &Record) -> Result<(JsValue, JsValue), StoreError> {
    let row = codec::encode(record)?;
    Ok((row::to_js(&row)?, row::lookup_to_js(&row)?))
}

impl IdbStore {
    /// Opens (creating or upgrading) the database.
    ///
    /// Errors: `storage_version_too_new` when the database was written by a newer
    /// schema (nothing is touched), `storage_blocked` when the upgrade is blocked by
    /// another connection, `storage` when IndexedDB is unavailable.
    pub async fn open(options: IdbOptions) -> Result<IdbStore, StoreError> {
        IdbStore::open_version(options, schema::MAX_VERSION).await
    }

    /// Test hook: [`IdbStore::open`] at another database version (e.g. one that needs
    /// an upgrade another connection blocks).
    #[doc(hidden)]
    pub async fn open_at_version_for_tests(
        options: IdbOptions,
        version: u32,
    ) -> Result<IdbStore, StoreError> {
        IdbStore::open_version(options, version).await
    }

    async fn open_version(options: IdbOptions, version: u32) -> Result<IdbStore, StoreError> {
        let store = IdbStore {
            options,
            conn: RefCell::new(None),
            version,
            closed: std::cell::Cell::new(false),
            corrupt: RefCell::new(Vec::new()),
            scanned: std::cell::Cell::new(false),
            leased: RefCell::new(Vec::new()),
        };
        store.connection().await?;
        Ok(store)
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

    /// Test hook: closes the underlying `IDBDatabase` behind the store's back, as a
    /// browser does when it drops a connection, so the next call meets a dead handle
    /// and must reopen and retry.
    #[doc(hidden)]
    pub fn lose_connection_for_tests(&self) {
        if let Some(conn) = self.conn.borrow().as_ref() {
            conn.db().clone().close();
        }
    }

    /// True while it holds an open connection (false after another context's
    /// version change closed it, until the next operation reopens it).
    pub fn is_connected(&self) -> bool {
        self.conn.borrow().as_ref().is_some_and(|c| !c.is_closed())
    }

    /// Rows seen so far that could not be decoded, sorted by id. They stay stored,
    /// untouched. [`Store::corrupt_rows`] reads every row first.
    pub fn corrupt_records(&self) -> Vec<CorruptRow> {
        self.corrupt.borrow().clone()
    }

    /// Reads (and decodes) every row, page by page in short read-only transactions,
    /// so that the corrupt rows noted are all of them.
    async fn scan_all(&self) -> Result<(), StoreError> {
        const PAGE: u32 = 500;
        let mut after: Option<JsValue> = None;
        loop {
            let page = self
                .run(async |db| {
                    let tx = Tx::open(db, false, Durability::Relaxed)?;
                    let store = tx.store()?;
                    let range = match &after {
                        Some(last) => KeyRange::LowerBound(last.clone(), true),
                        None => every_key(),
                    };
                    get_all(&store, range, Some(PAGE)).await
                })
                .await?;
            let n = page.len();
            after = page.last().map(|row| field(row, "id"));
            for row in page {
                let _ = self.decode(row);
            }
            if n < PAGE as usize || after.is_none() {
                break;
            }
        }
        self.scanned.set(true);
        Ok(())
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

    /// Decodes a row value, noting corrupt rows.
    fn decode(&self, value: JsValue) -> Result<Option<Record>, StoreError> {
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        let result = row::from_js(value.clone())
            .map_err(|e| StoreError::Corrupt {
                id: field(&value, "id").as_string().unwrap_or_default(),
                message: format!("row: {e}"),
            })
            .and_then(|row| codec::decode(&row));
        match result {
            Ok(record) => {
                // A row rewritten since (by other software) is no longer corrupt.
                let mut corrupt = self.corrupt.borrow_mut();
                if let Ok(i) = corrupt.binary_search_by(|c| c.id.as_str().cmp(&record.id)) {
                    corrupt.remove(i);
                }
                Ok(Some(record))
            }
            Err(StoreError::Corrupt { id, message }) => {
                // The stage the `stage` index files the row under: its `stage` names one
                // and `createdMs` is a valid key (else the row is in no index entry).
                let created = field(&value, "createdMs");
                let indexed =
                    !created.is_undefined() && web_sys::IdbKeyRange::only(&created).is_ok();
                let stage = field(&value, "stage")
                    .as_string()
                    .and_then(|s| Stage::from_name(&s))
                    .filter(|_| indexed);
                let row = CorruptRow {
                    id: id.clone(),
                    stage,
                    reason: message.clone(),
                };
                let mut corrupt = self.corrupt.borrow_mut();
                match corrupt.binary_search_by(|c| c.id.as_str().cmp(&id)) {
                    Ok(i) => corrupt[i] = row,
                    Err(i) => corrupt.insert(i, row),
                }
                Err(StoreError::Corrupt { id, message })
            }
            Err(e) => Err(e),
        }
    }

    /// Keeps `record`, just leased and written as `row`, for its completion.
    fn keep_leased(&self, row: &JsValue, record: &Record) {
        let mut kept = self.leased.borrow_mut();
        if kept.len() >= LEASED_CACHE {
            kept.clear();
        }
        let entry = (record.id.clone(), field(row, "doc"), record.clone());
        match kept.binary_search_by(|k| k.0.as_str().cmp(&record.id)) {
            Ok(i) => kept[i] = entry,
            Err(i) => kept.insert(i, entry),
        }
    }

    /// The record stored as `row`: the one kept by [`IdbStore::keep_leased`] when the
    /// row holds the document it was written as (taken out of the cache either way),
    /// else the row decoded.
    fn decode_leased(&self, id: &str, row: JsValue) -> Result<Option<Record>, StoreError> {
        let kept = {
            let mut kept = self.leased.borrow_mut();
            match kept.binary_search_by(|k| k.0.as_str().cmp(id)) {
                Ok(i) => Some(kept.remove(i)),
                Err(_) => None,
            }
        };
        match kept {
            Some((_, doc, record)) if field(&row, "doc") == doc => Ok(Some(record)),
            _ => self.decode(row),
        }
    }

    /// Decodes a page of rows, skipping (and noting) corrupt ones.
    fn decode_page(&self, rows: Vec<JsValue>) -> Vec<Record> {
        rows.into_iter()
            .filter_map(|v| self.decode(v).ok().flatten())
            .collect()
    }

    /// Read-modify-write of one record in one transaction (`f` is a trait object:
    /// one copy of this state machine in the .wasm for every caller). With `slot`, the
    /// records of the record's slot ([`semantics::slot_of`]) are read in the same
    /// transaction and handed to `f` (else `f` gets none).
    async fn update(&self, id: &str, slot: bool, f: &Transition<'_>) -> Result<Record, StoreError> {
        self.run(async |db| {
            let tx = Tx::open(db, true, self.options.durability)?;
            let store = tx.store()?;
            let current = sys::get(&store, id)?.await?;
            let current = self
                .decode(current)?
                .ok_or_else(|| CoreError::NotFound { id: id.to_string() })?;
            let wanted = Lookups {
                slots: semantics::slot_of(&current)
                    .filter(|_| slot)
                    .into_iter()
                    .collect(),
                event_ids: Vec::new(),
            };
            let related = self
                .read_related(&tx, std::slice::from_ref(&wanted), false)
                .await?;
            let next = f(&current, related.first().map_or(&[], Vec::as_slice))?;
            sys::put(&store, &to_row(&next)?)?;
            tx.commit().await?;
            Ok(next)
        })
        .await
    }

    /// [`Store::enqueue_many_checked`]: the batch's rows are handed to the browser
    /// first and `check` runs while it writes them; a failed check aborts the
    /// transaction (and wins over any error of the batch, which also writes nothing).
    async fn enqueue_batch(
        &self,
        plans: &[Plan],
        now_ms: u64,
        check: &mut dyn FnMut() -> bool,
    ) -> Result<Option<Vec<Enqueued>>, StoreError> {
        let verdict: Cell<Option<bool>> = Cell::new(None);
        let check = RefCell::new(check);
        let passes = || {
            if verdict.get().is_none() {
                verdict.set(Some((check.borrow_mut())()));
            }
            verdict.get() == Some(true)
        };
        let result = self.write_batch(plans, now_ms, &passes).await;
        if !passes() {
            return Ok(None);
        }
        result.map(Some)
    }

    async fn write_batch(
        &self,
        plans: &[Plan],
        now_ms: u64,
        passes: &dyn Fn() -> bool,
    ) -> Result<Vec<Enqueued>, StoreError> {
        if plans.iter().any(semantics::needs_lookups) {
            return self.write_with_rules(plans, now_ms, passes).await;
        }
        // Decide every plan against the batch itself first (a repeated id in one batch
        // replays or conflicts with its first occurrence), assuming no stored record.
        // `first[i]`: the index of the first plan with plan i's id (a stable sort of the
        // indices by id groups them, lowest index first; no map instantiation).
        let by_id =
            semantics::sorted_positions(&plans.iter().map(|p| p.id.as_str()).collect::<Vec<_>>());
        let mut first: Vec<usize> = (0..plans.len()).collect();
        for pair in by_id.windows(2) {
            if plans[pair[0]].id == plans[pair[1]].id {
                first[pair[1]] = first[pair[0]];
            }
        }
        let mut decisions: Vec<EnqueueDecision> = Vec::with_capacity(plans.len());
        for (i, plan) in plans.iter().enumerate() {
            let earlier = (first[i] != i).then(|| decisions[first[i]].record().clone());
            let decision = core::decide_enqueue(earlier.as_ref(), plan.clone(), now_ms)?;
            decisions.push(decision);
        }
        let created: Vec<usize> = decisions
            .iter()
            .enumerate()
            .filter(|(_, d)| matches!(d, EnqueueDecision::Create(_)))
            .map(|(i, _)| i)
            .collect();
        let (rows, lookups): (Vec<JsValue>, Vec<JsValue>) = created
            .iter()
            .map(|&i| to_new_rows(decisions[i].record()))
            .collect::<Result<Vec<_>, StoreError>>()?
            .into_iter()
            .unzip();
        // Made only once the rows are with the browser, so a batch holds two copies of
        // its records at most (the decisions and the answers), not three.
        let answers = || -> Vec<Enqueued> {
            decisions
                .iter()
                .map(|d| d.clone().into_enqueued())
                .collect()
        };
        // One new row (every single enqueue): first as if its key were not stored (a
        // replay is the rare case), so the commit is asked for as soon as the check has
        // passed, without waiting for the add's answer: a round trip to the browser less
        // per enqueue. If that transaction fails, its one write did not happen, whether
        // the browser then aborted it (Chromium) or committed it empty (Firefox commits
        // what did succeed once `commit()` was called, even after an unhandled request
        // error, which is why a batch of several new rows never takes this path: it
        // could not stay all or nothing). The row is then written again the tolerant
        // way, which decides a stored key against its record and reports any other
        // error as the browser gives it (a full quota, for one, reaches a Firefox
        // transaction already committing only as an AbortError).
        let attempts: &[bool] = if created.len() == 1 {
            &[false, true]
        } else {
            &[true]
        };
        self.run(async |db| {
            for &tolerate_existing in attempts {
                let tx = Tx::open(db, true, self.options.durability)?;
                let store = tx.store()?;
                // The rows, then their lookup rows (numbered after them), added and
                // never put: a stored record's lookup row is never overwritten (a
                // Firefox transaction may commit the writes that succeeded beside a
                // refused add), and one exists only beside its record.
                let lookup = tx.lookup()?;
                let batches = [(&store, rows.as_slice()), (&lookup, lookups.as_slice())];
                let adding = add_rows(&tx, &batches, tolerate_existing)?;
                // The browser writes the rows while the caller's check runs here.
                if !passes() {
                    tx.abort().await;
                    let _ = adding.finish().await;
                    return Err(Failure::Store(StoreError::Backend(
                        "enqueue check failed".into(),
                    )));
                }
                if !tolerate_existing {
                    let committed = tx.commit().await;
                    // Done only if the add itself answered success: an add that threw
                    // (Firefox refuses writes on a connection after a quota error) left
                    // an empty transaction, and an empty one commits fine.
                    let added = adding.finish().await;
                    if committed.is_ok() && added.is_ok_and(|existing| existing.is_empty()) {
                        return Ok(answers());
                    }
                    continue;
                }
                // Rows whose key exists come back by index and are decided against the
                // stored record (replay, or conflict → abort).
                // (A lookup row's number is past the rows': not a record's.)
                let existing = adding.finish().await?;
                let mut answers = answers();
                for slot in existing {
                    let Some(&i) = created.get(slot) else {
                        continue;
                    };
                    let stored = match sys::get(&store, &plans[i].id) {
                        Ok(request) => request.await,
                        Err(e) => Err(e),
                    };
                    let outcome = stored
                        .and_then(|v| self.decode(v).map_err(Failure::Store))
                        .and_then(|stored| {
                            core::decide_enqueue(stored.as_ref(), plans[i].clone(), now_ms)
                                .map_err(Failure::from)
                        });
                    match outcome {
                        Ok(EnqueueDecision::Replay(record)) => {
                            // Later duplicates of this id in the batch replay it too.
                            for (j, plan) in plans.iter().enumerate() {
                                if plan.id == plans[i].id {
                                    answers[j] =
                                        EnqueueDecision::Replay(record.clone()).into_enqueued();
                                }
                            }
                        }
                        Ok(EnqueueDecision::Create(_) | EnqueueDecision::Superseded(_)) => {
                            tx.abort().await;
                            return Err(Failure::Store(StoreError::Backend(format!(
                                "record `{}` vanished during enqueue",
                                plans[i].id
                            ))));
                        }
                        Err(e) => {
                            tx.abort().await;
                            return Err(e);
                        }
                    }
                }
                tx.commit().await?;
                return Ok(answers);
            }
            Err(Failure::Store(StoreError::Backend(
                "enqueue wrote nothing".into(),
            )))
        })
        .await
    }

    /// The records answering each of `lookups`, read in `tx`: for each slot its
    /// versions that may still be sent and its newest other one (with `every_version`,
    /// all but cancelled ones); for each event id its records (their ids read from the
    /// `lookup` rows, then their rows). Every request of a kind is issued before the
    /// first answer is awaited.
    async fn read_related(
        &self,
        tx: &Tx<'_>,
        lookups: &[Lookups],
        every_version: bool,
    ) -> Result<Vec<Vec<Record>>, Failure> {
        let store = tx.store()?;
        let lookup = tx.lookup()?;
        let slot_index = match lookups.iter().all(|l| l.slots.is_empty()) {
            true => None,
            false => Some(store.index(IDX_SLOT)?),
        };
        let event_index = match lookups.iter().all(|l| l.event_ids.is_empty()) {
            true => None,
            false => Some(lookup.index(IDX_EVENT)?),
        };
        let others = (!every_version).then_some(1);
        let mut reads = Vec::new();
        let mut by_event = Vec::new();
        for (k, wanted) in lookups.iter().enumerate() {
            if let Some(index) = &slot_index {
                for slot in &wanted.slots {
                    let live = slot_range(slot, Some(1.0));
                    reads.push((k, sys::request_all(index, live, None)?));
                    let done = slot_range(slot, Some(0.0));
                    reads.push((k, sys::request_all(index, done, others)?));
                }
            }
            if let Some(index) = &event_index {
                for id in &wanted.event_ids {
                    let only = KeyRange::Only(JsValue::from_str(id));
                    by_event.push((k, id, sys::request_all(index, only, None)?));
                }
            }
        }
        let mut rows: Vec<Vec<JsValue>> = vec![Vec::new(); lookups.len()];
        for (k, read) in reads {
            rows[k].extend(read.await?);
        }
        let mut found: Vec<Vec<Record>> = rows.into_iter().map(|r| self.decode_page(r)).collect();
        // By event id: the records the `event` index names (those stored under another
        // item id) and the one stored under the event id itself (the default item id,
        // which `lookup` rows leave out of the index), all read at once, kept if they
        // hold that event.
        let mut named: Vec<(usize, &str, String)> = Vec::new();
        for (k, id, read) in by_event {
            let keys = read.await?;
            let ids = keys.iter().filter_map(|row| field(row, "id").as_string());
            named.extend(
                ids.chain([id.clone()])
                    .map(|record| (k, id.as_str(), record)),
            );
        }
        let ids: Vec<&str> = named.iter().map(|(_, _, record)| record.as_str()).collect();
        let rows = get_many(&store, &ids).await?;
        for ((k, id, _), row) in named.iter().zip(rows) {
            if let Ok(Some(record)) = self.decode(row) {
                if record.event.id == *id {
                    found[*k].push(record);
                }
            }
        }
        Ok(found)
    }

    /// A batch with replaceable, addressable or deletion events: one transaction reads
    /// each plan's stored record and the records its rules need
    /// ([`semantics::lookups`]), [`core::decide_enqueues`] decides the batch, and the
    /// new and withdrawn records are written while `passes` runs.
    async fn write_with_rules(
        &self,
        plans: &[Plan],
        now_ms: u64,
        passes: &dyn Fn() -> bool,
    ) -> Result<Vec<Enqueued>, StoreError> {
        self.run(async |db| {
            let tx = Tx::open(db, true, self.options.durability)?;
            let store = tx.store()?;
            let ids: Vec<&str> = plans.iter().map(|p| p.id.as_str()).collect();
            let rows = get_many(&store, &ids).await?;
            let wanted: Vec<Lookups> = plans.iter().map(semantics::lookups).collect();
            let related = self.read_related(&tx, &wanted, false).await?;
            let mut stored = Vec::with_capacity(plans.len());
            for (row, related) in rows.into_iter().zip(related) {
                stored.push((self.decode(row)?, related));
            }
            let decided = core::decide_enqueues(plans.to_vec(), stored, now_ms)?;
            let lookup = tx.lookup()?;
            for record in &decided.writes {
                // A new record's lookup row, or the same keys again for a stored one.
                let (row, keys) = to_new_rows(record)?;
                sys::put(&store, &row)?;
                sys::put(&lookup, &keys)?;
            }
            if !passes() {
                tx.abort().await;
                return Err(Failure::Store(StoreError::Backend(
                    "enqueue check failed".into(),
                )));
            }
            tx.commit().await?;
            Ok(decided.answers)
        })
        .await
    }

    /// Up to `want` records of one claim-order range ([`due_range`] of `prefix`) that
    /// are ready and that `request` admits, in claim order, page by page past rows that
    /// are corrupt, not ready or filtered out.
    async fn ready_in(
        &self,
        index: &Index<'_>,
        prefix: &[JsValue],
        request: &ClaimRequest,
        now_ms: u64,
        want: usize,
    ) -> Result<Vec<Record>, Failure> {
        let mut out = Vec::new();
        let mut after: Option<JsValue> = None;
        while out.len() < want {
            let ask = (want - out.len()) as u32;
            let page = get_all(index, due_range(prefix, after.clone(), now_ms), Some(ask)).await?;
            let fetched = page.len() as u32;
            for value in page {
                let mut last: Vec<JsValue> = prefix[..prefix.len() - 1].to_vec();
                for name in ["rank", "dueMs", "createdMs", "id"] {
                    last.push(field(&value, name));
                }
                after = Some(key(&last));
                let Ok(Some(record)) = self.decode(value) else {
                    continue;
                };
                if record.is_ready(now_ms) && request.admits(&record) {
                    out.push(record);
                }
            }
            if fetched < ask {
                break;
            }
        }
        Ok(out)
    }
}

impl Store for IdbStore {
    async fn enqueue_many(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
    ) -> Result<Vec<Enqueued>, StoreError> {
        self.write_batch(&plans, now_ms, &|| true).await
    }

    async fn enqueue_many_checked(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
        check: &mut dyn FnMut() -> bool,
    ) -> Result<Option<Vec<Enqueued>>, StoreError> {
        self.enqueue_batch(&plans, now_ms, check).await
    }

    async fn get(&self, id: &str) -> Result<Option<Record>, StoreError> {
        let value = self
            .run(async |db| {
                let tx = Tx::open(db, false, Durability::Relaxed)?;
                let store = tx.store()?;
                sys::get(&store, id)?.await
            })
            .await?;
        self.decode(value)
    }

    async fn claim(&self, request: &ClaimRequest, now_ms: u64) -> Result<Vec<Record>, StoreError> {
        request.validate()?;
        let limit = request.limit as usize;
        // A lease lost to power loss only makes the record claimable again: relaxed.
        self.run(async |db| {
            let tx = Tx::open(db, true, Durability::Relaxed)?;
            let store = tx.store()?;
            // One range per priority, high first; with lanes, one per lane and
            // priority, merged in claim order within each priority: `laneDue` for a
            // named lane, `due` for the default lane (whose rows `laneDue` does not
            // hold), keeping that lane's rows.
            let due = store.index(IDX_DUE)?;
            let lane_due = store.index(IDX_LANE_DUE)?;
            let lanes: Vec<Option<JsValue>> = if request.lanes.is_empty() {
                vec![None]
            } else {
                let lane = |l: &String| (l != DEFAULT_LANE).then(|| JsValue::from_str(l));
                request.lanes.iter().map(lane).collect()
            };
            let mut claimed: Vec<Record> = Vec::new();
            for priority in Priority::ALL {
                let want = limit - claimed.len();
                if want == 0 {
                    break;
                }
                let rank = JsValue::from_f64(f64::from(priority.rank()));
                let mut ready: Vec<Record> = Vec::new();
                for lane in &lanes {
                    let prefix: Vec<JsValue> = lane.iter().cloned().chain([rank.clone()]).collect();
                    let index = if lane.is_some() { &lane_due } else { &due };
                    ready.extend(self.ready_in(index, &prefix, request, now_ms, want).await?);
                }
                if lanes.len() > 1 {
                    let mut order: Vec<&Record> = ready.iter().collect();
                    core::order::sort_records(&mut order, core::claim_order);
                    ready = order.into_iter().take(want).cloned().collect();
                }
                for record in ready {
                    let next = core::claim(&record, request, now_ms)?.into_record();
                    let row = to_row(&next)?;
                    sys::put(&store, &row)?;
                    if next.stage == Stage::Leased {
                        self.keep_leased(&row, &next);
                    }
                    claimed.push(next);
                }
            }
            tx.commit().await?;
            Ok(claimed)
        })
        .await
    }

    async fn take_over(
        &self,
        request: &ClaimRequest,
        now_ms: u64,
    ) -> Result<Vec<Record>, StoreError> {
        request.validate()?;
        // Leased rows sit in the due index under their lease expiry, mixed with every
        // due record: read the `leased` ones through the stage index instead.
        self.run(async |db| {
            let tx = Tx::open(db, true, Durability::Relaxed)?;
            let store = tx.store()?;
            let index = store.index(IDX_STAGE)?;
            let page = get_all(&index, stage_range(Stage::Leased), None).await?;
            let decoded = self.decode_page(page);
            let orphans = core::orphans(&decoded, request, now_ms);
            let mut taken = Vec::with_capacity(orphans.len());
            for record in orphans {
                let next = core::take_over(record, request, now_ms)?.into_record();
                sys::put(&store, &to_row(&next)?)?;
                taken.push(next);
            }
            tx.commit().await?;
            Ok(taken)
        })
        .await
    }

    async fn complete_attempt(
        &self,
        completion: &Completion,
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        // A round of one: the same read, decision and write as a flush round.
        self.complete_attempts(std::slice::from_ref(completion), retry, now_ms)
            .await
            .pop()
            .unwrap_or_else(|| Err(StoreError::Backend("no answer for the completion".into())))
    }

    /// One readwrite transaction for the whole round (not one per record): every row
    /// read at once, then each decided by [`core::complete_attempt`] and written back;
    /// a storage failure aborts it, so none is recorded.
    async fn complete_attempts(
        &self,
        completions: &[Completion],
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Vec<Result<Record, StoreError>> {
        let done = self
            .run(async |db| {
                let tx = Tx::open(db, true, self.options.durability)?;
                let store = tx.store()?;
                let mut out = Vec::with_capacity(completions.len());
                // Every row read at once, then decided and written in order.
                let ids: Vec<&str> = completions.iter().map(|c| c.id.as_str()).collect();
                let rows = get_many(&store, &ids).await?;
                for (c, current) in completions.iter().zip(rows) {
                    let next = match self.decode_leased(&c.id, current) {
                        Ok(Some(record)) => core::complete_attempt(&record, c, now_ms, retry)
                            .map_err(StoreError::from),
                        Ok(None) => Err(CoreError::NotFound { id: c.id.clone() }.into()),
                        Err(e) => Err(e),
                    };
                    if let Ok(next) = &next {
                        sys::put(&store, &to_row(next)?)?;
                    }
                    out.push(next);
                }
                tx.commit().await?;
                Ok(out)
            })
            .await;
        done.unwrap_or_else(|e| vec![Err(e)])
    }

    async fn release(
        &self,
        id: &str,
        lease_id: &str,
        revision: u64,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        self.update(id, false, &|r, _| {
            core::release(r, lease_id, revision, now_ms)
        })
        .await
    }

    async fn retry(&self, id: &str, now_ms: u64) -> Result<Record, StoreError> {
        self.update(id, true, &|r, related| {
            semantics::check_retry(r, related)?;
            core::retry(r, now_ms)
        })
        .await
    }

    async fn related(&self, lookups: &Lookups) -> Result<Vec<Record>, StoreError> {
        self.run(async |db| {
            let tx = Tx::open(db, false, Durability::Relaxed)?;
            let mut found = self
                .read_related(&tx, std::slice::from_ref(lookups), true)
                .await?;
            Ok(found.pop().unwrap_or_default())
        })
        .await
    }

    async fn cancel(&self, id: &str, now_ms: u64) -> Result<Record, StoreError> {
        self.update(id, false, &|r, _| core::cancel(r, now_ms))
            .await
    }

    async fn relay_back(&self, relay: &str, now_ms: u64) -> Result<Vec<Record>, StoreError> {
        // Only rows waiting after an attempt (`Stage::AFTER_ATTEMPT`) can qualify: read
        // those through the stage index.
        self.run(async |db| {
            let tx = Tx::open(db, true, Durability::Relaxed)?;
            let store = tx.store()?;
            let index = store.index(IDX_STAGE)?;
            let mut woken = Vec::new();
            for stage in Stage::AFTER_ATTEMPT {
                let page = get_all(&index, stage_range(stage), None).await?;
                for record in self.decode_page(page) {
                    if let Some(next) = core::relay_back(&record, relay, now_ms) {
                        sys::put(&store, &to_row(&next)?)?;
                        woken.push(next);
                    }
                }
            }
            tx.commit().await?;
            Ok(woken)
        })
        .await
    }

    async fn purge(&self, before_ms: u64) -> Result<u32, StoreError> {
        self.run(async |db| {
            let tx = Tx::open(db, true, self.options.durability)?;
            let store = tx.store()?;
            let index = store.index(IDX_STAGE)?;
            let mut doomed: Vec<String> = Vec::new();
            for stage in Stage::ALL.into_iter().filter(|s| s.is_terminal()) {
                let page = get_all(&index, stage_range(stage), None).await?;
                for record in self.decode_page(page) {
                    if core::is_purgeable(&record, before_ms) {
                        doomed.push(record.id);
                    }
                }
            }
            let lookup = tx.lookup()?;
            for (store, id) in [&store, &lookup]
                .into_iter()
                .flat_map(|s| doomed.iter().map(move |id| (s, id)))
            {
                sys::delete(store, id)?;
            }
            tx.commit().await?;
            Ok(u32::try_from(doomed.len()).unwrap_or(u32::MAX))
        })
        .await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Record>, StoreError> {
        query.validate()?;
        self.run(async |db| {
            let tx = Tx::open(db, false, Durability::Relaxed)?;
            let store = tx.store()?;
            let cursor = match &query.after {
                None => None,
                Some(id) => {
                    let value = sys::get(&store, id)?.await?;
                    if value.is_undefined() {
                        return Err(CoreError::NotFound { id: id.clone() }.into());
                    }
                    Some((field(&value, "createdMs"), JsValue::from_str(id)))
                }
            };
            // By lane: the pages of list order, keeping that lane's rows (read from the
            // row's `lane` field, before decoding), until the page is full.
            let mut cursor = cursor;
            let mut out: Vec<Record> = Vec::new();
            let limit = query.limit as usize;
            loop {
                let ask = (limit - out.len()) as u32;
                // The page's rows, and the index entry it ends at (the cursor).
                let (page, last) = match &query.stage {
                    Some(stage) => {
                        let s = JsValue::from_str(stage.as_str());
                        let lower = match &cursor {
                            Some((c, id)) => key(&[s.clone(), c.clone(), id.clone()]),
                            None => key(std::slice::from_ref(&s)),
                        };
                        let range =
                            KeyRange::Bound(lower, cursor.is_some(), key(&[s, top()]), false);
                        let index = store.index(IDX_STAGE)?;
                        let page = get_all(&index, range, Some(ask)).await?;
                        let last = page.last().cloned();
                        (page, last)
                    }
                    None => {
                        let range = match &cursor {
                            Some((c, id)) => {
                                KeyRange::LowerBound(key(&[c.clone(), id.clone()]), true)
                            }
                            None => every_key(),
                        };
                        // The page's ids in list order from `lookup`, then the rows.
                        let lookup = tx.lookup()?;
                        let keys = get_all(&lookup.index(IDX_CREATED)?, range, Some(ask)).await?;
                        let last = keys.last().cloned();
                        (rows_of(&store, keys).await?, last)
                    }
                };
                let fetched = page.len() as u32;
                if let Some(last) = last {
                    cursor = Some((field(&last, "createdMs"), field(&last, "id")));
                }
                let kept = page.into_iter().filter(|row| match &query.lane {
                    None => true,
                    Some(lane) => {
                        field(row, "lane")
                            .as_string()
                            .as_deref()
                            .unwrap_or(DEFAULT_LANE)
                            == lane
                    }
                });
                out.extend(self.decode_page(kept.collect()));
                if fetched < ask || out.len() >= limit || query.lane.is_none() {
                    break;
                }
            }
            Ok(out)
        })
        .await
    }

    async fn status(&self) -> Result<StageCounts, StoreError> {
        if !self.scanned.get() {
            self.scan_all().await?;
        }
        let mut counts = self
            .run(async |db| {
                let tx = Tx::open(db, false, Durability::Relaxed)?;
                let store = tx.store()?;
                let index = store.index(IDX_STAGE)?;
                let mut counts = StageCounts::default();
                for stage in Stage::ALL {
                    *counts.get_mut(stage) = sys::count(&index, stage_range(stage)).await?;
                }
                Ok(counts)
            })
            .await?;
        // Corrupt rows are counted apart, not under the stage their index field names.
        for row in self.corrupt.borrow().iter() {
            if let Some(stage) = row.stage {
                let slot = counts.get_mut(stage);
                *slot = slot.saturating_sub(1);
            }
            counts.corrupt = counts.corrupt.saturating_add(1);
        }
        Ok(counts)
    }

    async fn corrupt_rows(&self) -> Result<Vec<CorruptRow>, StoreError> {
        self.corrupt.borrow_mut().clear();
        self.scan_all().await?;
        Ok(self.corrupt_records())
    }

    async fn next_due(&self) -> Result<Option<u64>, StoreError> {
        self.run(async |db| {
            let tx = Tx::open(db, false, Durability::Relaxed)?;
            let store = tx.store()?;
            let index = store.index(IDX_DUE)?;
            // The first key of each priority's range, all requests issued at once.
            let mut firsts = Vec::new();
            for priority in Priority::ALL {
                let rank = JsValue::from_f64(f64::from(priority.rank()));
                let range = KeyRange::Bound(
                    key(std::slice::from_ref(&rank)),
                    false,
                    key(&[rank, top()]),
                    false,
                );
                firsts.push(sys::request_all(&index, range, Some(1))?);
            }
            let mut due: Option<u64> = None;
            for first in firsts {
                if let Some(d) = first
                    .await?
                    .first()
                    .and_then(|r| field(r, "dueMs").as_f64())
                {
                    let d = d as u64;
                    due = Some(due.map_or(d, |m| m.min(d)));
                }
            }
            Ok(due)
        })
        .await
    }
}

impl Drop for IdbStore {
    fn drop(&mut self) {
        self.close();
    }
}
