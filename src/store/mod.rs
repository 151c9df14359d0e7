//! Persistence of outbox records: the [`Store`] trait, written once as [`kv::KvStore`]
//! over memory ([`memory::MemoryStore`]), IndexedDB and storage adapters,
//! and the `conformance` suite every backend must pass (built for tests only: feature
//! `testing`). A store only loads and writes records atomically; every
//! decision (replay or conflict, readiness, the next stage) comes from
//! [`crate::core`]'s pure functions.

use std::rc::Rc;

use thiserror::Error;

use crate::core::{
    Change, ClaimRequest, Completion, CoreError, Enqueued, Heartbeat, ListQuery, Lookups, Plan,
    Record, RetryConfig, Signed, Stage, StageCounts,
};

pub mod codec;
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
pub mod doc;
#[cfg(all(target_arch = "wasm32", feature = "indexeddb"))]
pub mod idb;
pub mod kv;
pub mod memory;

pub use memory::MemoryStore;

/// Whether a commit must survive power loss (`strict`) or may trade that for
/// throughput (`relaxed`): IndexedDB's transaction durability; the storage adapters
/// commit as their runtime does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Flushed to disk before the transaction completes (the default).
    #[default]
    Strict,
    /// May lose the last writes on power loss (not on a tab or browser crash).
    Relaxed,
}

/// Told `(done, total)` of a long write while it is under way
/// ([`Store::enqueue_many_checked`]).
pub type Progress = Rc<dyn Fn(usize, usize)>;

/// A stored row that cannot be decoded into a record: written by other software or a
/// newer row format, or damaged. Stores skip it in claims and lists, report it in
/// [`Store::status`] and [`Store::corrupt_rows`], and never delete or change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptRow {
    /// The row's key (the item id it claims).
    pub id: String,
    /// The stage the store's stage index files the row under (so [`Store::status`]
    /// takes it out of that stage's count), when any.
    pub stage: Option<Stage>,
    /// Why it cannot be decoded.
    pub reason: String,
}

/// Why a store operation failed. Nothing was written when one of these is returned.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StoreError {
    /// The state machine refused the operation.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The browser's storage quota is exhausted.
    #[error("storage quota exceeded: {0}")]
    QuotaExceeded(String),
    /// The database is blocked (e.g. another tab holds an old connection).
    #[error("storage blocked: {0}")]
    Blocked(String),
    /// The database was written by a newer version of this library.
    #[error("storage schema version {found} is newer than the supported {supported}")]
    VersionTooNew {
        /// The version found on disk.
        found: u32,
        /// The highest version this build understands.
        supported: u32,
    },
    /// A stored record could not be read back.
    #[error("stored record `{id}` is corrupt: {message}")]
    Corrupt {
        /// The item id (or key) of the record.
        id: String,
        /// What went wrong.
        message: String,
    },
    /// The store was closed by its owner; it does not reopen.
    #[error("the store is closed")]
    Closed,
    /// Any other backend failure.
    #[error("storage error: {0}")]
    Backend(String),
}

impl StoreError {
    /// The stable snake_case code used in JSON and JavaScript.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Core(e) => e.code(),
            StoreError::QuotaExceeded(_) => "quota_exceeded",
            StoreError::Blocked(_) => "storage_blocked",
            StoreError::VersionTooNew { .. } => "storage_version_too_new",
            StoreError::Corrupt { .. } => "corrupt_record",
            StoreError::Closed => "closed",
            StoreError::Backend(_) => "storage",
        }
    }

    /// True for a lost claim (see [`CoreError::is_lost_claim`]).
    pub fn is_lost_claim(&self) -> bool {
        matches!(self, StoreError::Core(e) if e.is_lost_claim())
    }

    /// True for an error about one record (a core rule: lost claim, not found, bad
    /// argument; or a corrupt row), as opposed to a failure of the storage itself.
    pub fn is_item_error(&self) -> bool {
        matches!(self, StoreError::Core(_) | StoreError::Corrupt { .. })
    }
}

/// Durable storage of outbox records. Every method is atomic: it writes all of its
/// changes or none. Futures need not be `Send` (IndexedDB futures are not).
///
/// Implementations load records, call the pure functions of [`crate::core`] and write
/// what they return. Claim order is ascending `(priority rank, due_ms, created_ms, id)`
/// ([`Record::claim_key`]) over records with `due_ms <= now_ms`, taking those that are
/// ready ([`Record::is_ready`]) and that the request's filters admit
/// ([`ClaimRequest::admits`]); a store reads one index range per priority (and lane),
/// never a whole backlog of lower priority. List order is ascending `(created_ms, id)`.
///
/// Enqueues apply the queue's Nostr rules ([`crate::core::semantics`]): in the same
/// transaction as the write, a store reads what [`crate::core::semantics::lookups`]
/// names for each plan and lets [`crate::core::decide_enqueues`] decide the batch, so
/// two contexts enqueueing versions of one slot cannot both win.
#[allow(async_fn_in_trait)]
pub trait Store {
    /// Enqueues one plan: creates its record, replays an identical plan, or fails
    /// with `plan_conflict`. The default is [`Store::enqueue_many`] of the one plan.
    async fn enqueue(&self, plan: Plan, now_ms: u64) -> Result<Enqueued, StoreError> {
        let mut answers = self.enqueue_many(vec![plan], now_ms).await?;
        answers
            .pop()
            .ok_or_else(|| StoreError::Backend("enqueue produced no answer".into()))
    }

    /// Enqueues many plans all-or-nothing: any invalid plan or conflict (with a
    /// stored record or within the batch) writes nothing. Answers in input order.
    async fn enqueue_many(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
    ) -> Result<Vec<Enqueued>, StoreError>;

    /// Enqueues many plans as [`Store::enqueue_many`] does, after a `check` of the
    /// caller's that must pass first (the events' signatures): when `check` answers
    /// `false`, nothing is written and the answer is `Ok(None)`; a failed check wins
    /// over any other error of the batch. A store whose writes run off this thread may
    /// run `check` while they are in flight, before it commits them. `check` runs at
    /// most once. The default, and [`kv::KvStore`], run it first.
    ///
    /// `progress`, when given, is told `(done, total)` of the plans while a long write
    /// is under way (`done < total`, increasing; a store whose storage cannot tell how
    /// far its commit got tells nothing): what a progress bar draws, not what is stored,
    /// which is all or nothing once this answers. The default tells nothing.
    async fn enqueue_many_checked(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
        check: &mut dyn FnMut() -> bool,
        progress: Option<Progress>,
    ) -> Result<Option<Vec<Enqueued>>, StoreError> {
        let _ = progress;
        if !check() {
            return Ok(None);
        }
        self.enqueue_many(plans, now_ms).await.map(Some)
    }

    /// The record with this id.
    async fn get(&self, id: &str) -> Result<Option<Record>, StoreError>;

    /// Records answering `lookups`: every record whose event id is one of
    /// `lookups.event_ids`, and every record of each slot (address) in `lookups.slots`
    /// except cancelled ones (a store may return those too). Any order.
    async fn related(&self, lookups: &Lookups) -> Result<Vec<Record>, StoreError>;

    /// Leases up to `request.limit` ready records that `request` admits, in claim
    /// order. Records whose
    /// deadline has passed are exhausted as `expired` instead and returned too (with
    /// stage `exhausted`), so the caller can report them; they count toward the limit.
    async fn claim(&self, request: &ClaimRequest, now_ms: u64) -> Result<Vec<Record>, StoreError>;

    /// Takes over up to `request.limit` records whose active lease is held by another
    /// owner than `request.owner` ([`Record::is_orphan_for`], [`crate::core::take_over`]),
    /// in claim order (the lease expiring first, first), in one transaction; leases of
    /// `request.owner` and expired leases are left alone. Only the holder of the
    /// database's Web Lock (the only live flusher) may call it as it is: every other
    /// lease then belongs to a flusher that is gone. Any flusher may call it with
    /// [`ClaimRequest::lapsed_only`]: then only the leases of owners whose heartbeat
    /// ([`Store::beat`]) has lapsed are taken. Records whose deadline has passed are
    /// exhausted as `expired` instead and returned too, as [`Store::claim`] does.
    /// Answers the records as stored.
    async fn take_over(
        &self,
        request: &ClaimRequest,
        now_ms: u64,
    ) -> Result<Vec<Record>, StoreError>;

    /// Writes `owner`'s heartbeat ([`crate::core::heartbeat`]), or removes it (`None`:
    /// its run ended; the heartbeats of other owners that are stale at `now_ms` go too,
    /// and the answer is how many other owners' heartbeats are kept: flushers that run,
    /// or stopped lately, whose leases may still need a takeover). Not transactional
    /// with anything else: a heartbeat read as lapsed just as its owner renews it costs
    /// that owner lost claims, never a record.
    async fn beat(
        &self,
        owner: &str,
        beat: Option<Heartbeat>,
        now_ms: u64,
    ) -> Result<u32, StoreError>;

    /// Records an attempt and releases its lease with the next stage
    /// ([`crate::core::complete_attempt`]). A lost claim changes nothing.
    async fn complete_attempt(
        &self,
        completion: &Completion,
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Result<Record, StoreError>;

    /// Records several attempts (a flush round's), in order, each as
    /// [`Store::complete_attempt`] would. The answer has one entry per completion, in
    /// order: the next record, or that completion's own error (a lost claim, a corrupt
    /// row), which leaves its record unchanged. A storage failure ends the answer early
    /// with that error as its last entry; what the entries before it say was recorded.
    /// The default records one after another; a store may do it in one transaction
    /// (then a storage failure records none of them).
    async fn complete_attempts(
        &self,
        completions: &[Completion],
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Vec<Result<Record, StoreError>> {
        let mut out = Vec::with_capacity(completions.len());
        for completion in completions {
            let result = self.complete_attempt(completion, retry, now_ms).await;
            let stop = matches!(&result, Err(e) if !e.is_item_error());
            out.push(result);
            if stop {
                break;
            }
        }
        out
    }

    /// Records what preparing a leased record produced (its route's resolution, the
    /// signer's answer) and releases it ([`crate::core::record_signing`]). A lost
    /// claim changes nothing.
    async fn record_signing(
        &self,
        signed: &Signed,
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Result<Record, StoreError>;

    /// Hands a lease back without recording an attempt ([`crate::core::release`]).
    async fn release(
        &self,
        id: &str,
        lease_id: &str,
        revision: u64,
        now_ms: u64,
    ) -> Result<Record, StoreError>;

    /// A relay answered again after it was unreachable: every record waiting for it
    /// ([`crate::core::relay_back`]) comes due at `now_ms`, in one transaction. Answers
    /// the records it changed, as stored.
    async fn relay_back(&self, relay: &str, now_ms: u64) -> Result<Vec<Record>, StoreError>;

    /// Applies `change` (retry, cancel, reschedule: [`Change::apply`]) to the record
    /// `id` in one transaction, with the records of its slot when
    /// [`Change::reads_slot`]; answers the record as stored.
    async fn change(&self, id: &str, change: Change, now_ms: u64) -> Result<Record, StoreError>;

    /// Re-arms an exhausted record ([`crate::core::retry()`]), unless a newer version
    /// of its event is held ([`crate::core::semantics::check_retry`]).
    async fn retry(&self, id: &str, now_ms: u64) -> Result<Record, StoreError> {
        self.change(id, Change::Retry, now_ms).await
    }

    /// Cancels a non-terminal record ([`crate::core::cancel`]).
    async fn cancel(&self, id: &str, now_ms: u64) -> Result<Record, StoreError> {
        self.change(id, Change::Cancel, now_ms).await
    }

    /// Moves a waiting record's next attempt to `at_ms` ([`crate::core::reschedule`]).
    async fn reschedule(&self, id: &str, at_ms: u64, now_ms: u64) -> Result<Record, StoreError> {
        self.change(id, Change::Reschedule { at_ms }, now_ms).await
    }

    /// Deletes terminal records last changed before `before_ms`; returns how many.
    async fn purge(&self, before_ms: u64) -> Result<u32, StoreError>;

    /// A page of records in `(created_ms, id)` order.
    async fn list(&self, query: &ListQuery) -> Result<Vec<Record>, StoreError>;

    /// How many records are in each stage, and how many rows are corrupt (counted
    /// apart, in no stage).
    async fn status(&self) -> Result<StageCounts, StoreError>;

    /// Every stored row that cannot be decoded into a record, sorted by id. It reads
    /// every row. The default (for stores that cannot hold such rows, like the memory
    /// store) is none.
    async fn corrupt_rows(&self) -> Result<Vec<CorruptRow>, StoreError> {
        Ok(Vec::new())
    }

    /// The smallest `due_ms` of any non-terminal record ready to publish, and of those
    /// this context can prepare ([`crate::core::ClaimRequest::prepare`]: 0 none): when
    /// the next claim can succeed (a leased record is due when its lease expires) in a
    /// context that publishes, or that also signs or resolves.
    async fn next_due(&self, prepare: u8) -> Result<Option<u64>, StoreError>;

    /// How many signed records are due at `now_ms` (`due_ms <= now_ms`; a leased
    /// record whose lease expired included): what a flush starting then has ahead of
    /// it.
    async fn count_due(&self, now_ms: u64) -> Result<u32, StoreError>;
}

/// How many records of `lane` are in each stage (`corrupt` is 0: a row that cannot be
/// decoded has no lane). An invalid lane name is `invalid_argument`. It pages through
/// [`Store::list`] by lane (reading every record of the lane); a free function rather
/// than a trait method so the `.wasm` has one copy (over the JS layer's store) instead
/// of one per store type.
pub async fn lane_status<S: Store>(store: &S, lane: &str) -> Result<StageCounts, StoreError> {
    crate::core::lane::validate_lane("lane", lane)?;
    let mut counts = StageCounts::default();
    let mut query = ListQuery {
        limit: crate::core::machine::MAX_LIST,
        lane: Some(lane.to_string()),
        ..ListQuery::default()
    };
    loop {
        let page = store.list(&query).await?;
        for record in &page {
            counts.add(record.stage);
        }
        match page.last() {
            Some(last) if page.len() == query.limit as usize => {
                query.after = Some(last.id.clone());
            }
            _ => return Ok(counts),
        }
    }
}
