//! A durable store over a small async key-value contract, for runtimes without
//! IndexedDB (Cloudflare Durable Objects, Deno KV, bun:sqlite): the [`KvBackend`]
//! trait (the storage adapter contract), the [`KvStore`] implementing the whole
//! [`crate::store::Store`] trait on top of it, and [`MemoryKv`], an in-memory backend
//! for native tests.
//!
//! # The contract
//!
//! A backend holds string keys, each with a string value and an opaque version that
//! changes on every write of the key. Keys are compared as strings: UTF-8 byte order,
//! UTF-16 code unit order and SQLite's `BINARY` collation agree on every key this store
//! ranges over in order (ASCII but for a slot's `d` tag, which is only ever matched as a
//! prefix: [`keys`]). It answers three calls:
//!
//! 1. [`KvBackend::get_many`]: several keys at once → for each, its value and version,
//!    or `None` when absent.
//! 2. [`KvBackend::list`]: the keys in `[start, end)` in key order (or reverse), at
//!    most `limit` of them, with their values and versions.
//! 3. [`KvBackend::commit`]: one atomic commit of puts and deletes guarded by checks
//!    (compare-and-set): each [`KvCheck`] names a key and the version it must still
//!    have, or that it must still be absent. Either every check holds and every
//!    mutation is applied, or the answer is [`KvCommitted::Conflict`] and nothing is
//!    written. A conflict is not an error; an error means the backend failed (the
//!    commit must then have written nothing either).
//!
//! Reads need not be a snapshot of one instant: every operation of the store checks,
//! at commit, the version of every row it read and decided on, so an operation that
//! read a mix of states conflicts and is run again. A backend declares its
//! [`KvLimits`] (mutations and checks per commit, bytes per value and per commit);
//! the store never sends a commit over them (see [`KvStore`]).
//!
//! Values are record rows ([`crate::store::codec`]: the record's JSON, format 2), the
//! same on every backend; index keys and slot locks have an empty value.
//!
//! # How each runtime implements it (in a few lines of JavaScript, later)
//!
//! - **Cloudflare Durable Objects** (`ctx.storage`, one thread per object, every call
//!   transactional): keep each value with its version, e.g. `put(key, [value, n])`
//!   with `n` from a counter key. `getMany` is `storage.get(keys)`; `list` is
//!   `storage.list({start, end, limit, reverse})`; `commit` runs in
//!   `storage.transaction(async txn => …)` (or synchronously between two awaits, which
//!   the object's input gate makes atomic): read the checked keys, compare their
//!   versions, answer `conflict` on a mismatch, else put and delete. Limits: 128 keys
//!   per `put`/`delete` call (loop inside the transaction), 128 KiB per value.
//! - **Deno KV**: a key is `[prefix, key]` (one string part, so the order is the
//!   string order); the version is the `versionstamp` (`null` when absent, which is
//!   exactly a check of absence). `getMany` is `kv.getMany` (at most 10 keys per call:
//!   the adapter calls it in chunks; the commit's checks keep the result consistent),
//!   `list` is `kv.list({start, end}, {limit, reverse})`, `commit` is
//!   `kv.atomic().check({key, versionstamp})….set(key, value)….delete(key)….commit()`,
//!   whose `{ok: false}` is the conflict. Limits: [`KvLimits::DENO_KV`].
//! - **bun:sqlite**: a table `kv(key TEXT PRIMARY KEY, value TEXT, version INTEGER)`.
//!   `getMany` is `SELECT … WHERE key IN (…)`, `list` a `SELECT … WHERE key >= ? AND
//!   key < ? ORDER BY key [DESC] LIMIT ?`; `commit` is `BEGIN IMMEDIATE`, a `SELECT
//!   version` per check (rollback and answer `conflict` on a mismatch), then
//!   `INSERT OR REPLACE` (with the next value of a version counter) and `DELETE`, then
//!   `COMMIT`. No practical limits.

pub mod keys;
pub(crate) mod lease;
mod memory;
mod store;
#[cfg(any(feature = "adapter", feature = "testing"))]
mod turn;

pub use keys::*;
pub use memory::MemoryKv;
pub use store::{KvStore, MAX_COMMIT_TRIES};

use crate::store::{Progress, StoreError};

/// A key's value and its opaque version, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvValue {
    /// The value (a row's JSON, or empty for an index key).
    pub value: String,
    /// The version: opaque, changed by every write of the key.
    pub version: String,
}

/// One key of a [`KvBackend::list`] answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvEntry {
    /// The key.
    pub key: String,
    /// The value (a row's JSON, or empty for an index key).
    pub value: String,
    /// The version: opaque, changed by every write of the key.
    pub version: String,
}

/// A range of keys for [`KvBackend::list`]: `[start, end)`, at most `limit` keys, in
/// ascending key order or, with `reverse`, descending (the `limit` keys nearest `end`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvRange {
    /// The first key that may be listed (inclusive).
    pub start: String,
    /// The first key past the range (exclusive).
    pub end: String,
    /// At most this many keys (at least 1).
    pub limit: u32,
    /// Descending order.
    pub reverse: bool,
}

/// One compare-and-set check of a [`KvCommit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvCheck {
    /// The key checked.
    pub key: String,
    /// The version it must still have, or `None`: it must still be absent.
    pub version: Option<String>,
}

/// One write of a [`KvCommit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvMutation {
    /// Sets `key` to `value` (a new version).
    Put {
        /// The key.
        key: String,
        /// The value (a row's JSON, or empty for an index key).
        value: String,
    },
    /// Deletes `key` (deleting an absent key is no error).
    Delete {
        /// The key.
        key: String,
    },
}

impl KvMutation {
    /// The key it writes.
    pub fn key(&self) -> &str {
        match self {
            KvMutation::Put { key, .. } | KvMutation::Delete { key } => key,
        }
    }
}

/// One atomic commit: every check must hold, then every mutation is applied, in order
/// (a key is never both put and deleted by one commit of this store).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KvCommit {
    /// The compare-and-set checks.
    pub checks: Vec<KvCheck>,
    /// The writes.
    pub mutations: Vec<KvMutation>,
}

impl KvCommit {
    /// The bytes of the keys it writes and deletes (UTF-8).
    pub fn key_bytes(&self) -> usize {
        self.mutations.iter().map(|m| m.key().len()).sum()
    }

    /// The bytes it writes: every key and value of its mutations (UTF-8).
    pub fn bytes(&self) -> usize {
        self.mutations
            .iter()
            .map(|m| match m {
                KvMutation::Put { key, value } => key.len() + value.len(),
                KvMutation::Delete { key } => key.len(),
            })
            .sum()
    }
}

/// What a commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvCommitted {
    /// Every check held; every mutation was applied.
    Applied,
    /// A check failed; nothing was written.
    Conflict,
}

/// What one commit of a backend may hold. The store never sends a larger commit: an
/// enqueue batch that does not fit is refused (nothing written), and the operations
/// over many records (claims, purges, …) take what fits (see [`KvStore`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvLimits {
    /// Mutations (puts and deletes) per commit.
    pub max_mutations: usize,
    /// Checks per commit.
    pub max_checks: usize,
    /// Bytes of one value.
    pub max_value_bytes: usize,
    /// Bytes of one commit ([`KvCommit::bytes`]).
    pub max_commit_bytes: usize,
    /// Bytes of the keys one commit writes or deletes ([`KvCommit::key_bytes`]).
    pub max_key_bytes: usize,
    /// Bytes of one key (read or written).
    pub max_key_len: usize,
}

impl KvLimits {
    /// What `nostr-outbox/deno-kv` declares with its default prefix (measured in Deno
    /// 2.9): 1000 mutations, 100 checks, 64 KiB per value, 700 KiB per commit (Deno's
    /// 800 KiB counts written keys twice) and 64 920 bytes of keys (Deno refuses an
    /// atomic operation whose keys total over 80 KiB, each counted as prefix + key + 4
    /// bytes: 80 KiB less 1000 keys' overhead), and keys of at most 2 031 bytes (Deno
    /// refuses a key of over 2 048 bytes, counted as above).
    pub const DENO_KV: KvLimits = KvLimits {
        max_mutations: 1000,
        max_checks: 100,
        max_value_bytes: 64 * 1024,
        max_commit_bytes: 700 * 1024,
        max_key_bytes: 64_920,
        max_key_len: 2_031,
    };

    /// No practical limit (SQLite, the memory backend by default).
    pub const UNLIMITED: KvLimits = KvLimits {
        max_mutations: usize::MAX,
        max_checks: usize::MAX,
        max_value_bytes: usize::MAX,
        max_commit_bytes: usize::MAX,
        max_key_bytes: usize::MAX,
        max_key_len: usize::MAX,
    };

    /// Why `commit` does not fit, if it does not.
    pub fn refuse(&self, commit: &KvCommit) -> Option<String> {
        if commit.mutations.len() > self.max_mutations {
            return Some(format!(
                "{} mutations (at most {} per commit)",
                commit.mutations.len(),
                self.max_mutations
            ));
        }
        if commit.checks.len() > self.max_checks {
            return Some(format!(
                "{} checks (at most {} per commit)",
                commit.checks.len(),
                self.max_checks
            ));
        }
        for m in &commit.mutations {
            let (KvMutation::Put { key, .. } | KvMutation::Delete { key }) = m;
            if key.len() > self.max_key_len {
                return Some(format!(
                    "a key of {} bytes (at most {})",
                    key.len(),
                    self.max_key_len
                ));
            }
            if let KvMutation::Put { key, value } = m {
                if value.len() > self.max_value_bytes {
                    return Some(format!(
                        "a value of {} bytes under `{key}` (at most {})",
                        value.len(),
                        self.max_value_bytes
                    ));
                }
            }
        }
        let key_bytes = commit.key_bytes();
        if key_bytes > self.max_key_bytes {
            return Some(format!(
                "{key_bytes} bytes of keys (at most {} per commit)",
                self.max_key_bytes
            ));
        }
        let bytes = commit.bytes();
        (bytes > self.max_commit_bytes).then(|| {
            format!(
                "{bytes} bytes (at most {} per commit)",
                self.max_commit_bytes
            )
        })
    }
}

/// The storage adapter contract: what a runtime implements for [`KvStore`] (see the
/// module documentation). Futures need not be `Send`. Errors are the runtime's
/// failures (I/O, quota) as a [`StoreError`]; a failed check is not one.
#[allow(async_fn_in_trait)]
pub trait KvBackend {
    /// What one commit may hold.
    fn limits(&self) -> KvLimits;

    /// The value and version of each key, in order (`None`: absent).
    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<KvValue>>, StoreError>;

    /// The keys of `range`, in key order (descending with `range.reverse`).
    async fn list(&self, range: &KvRange) -> Result<Vec<KvEntry>, StoreError>;

    /// Applies `commit` atomically if every check holds ([`KvCommitted::Applied`]),
    /// else writes nothing ([`KvCommitted::Conflict`]).
    async fn commit(&self, commit: KvCommit) -> Result<KvCommitted, StoreError>;

    /// Has the next [`KvBackend::commit`] tell `progress` `(done, units)` as the
    /// storage takes its writes, `units` spread evenly over them: `done` increasing
    /// and below `units` (the commit's answer is the end). A progress bar of a long
    /// commit. The store calls it right before that commit, with nothing awaited in
    /// between, so no other commit can come first. The default tells nothing (a commit
    /// that is one call, as an adapter's, cannot); IndexedDB tells.
    fn tell_next_commit(&self, progress: Progress, units: usize) {
        let _ = (progress, units);
    }

    /// True when the backend keeps a record's index keys ([`keys::index_keys`]) in the
    /// record's row rather than as keys of their own (IndexedDB, schema v6: one put per
    /// record written, its index entries written by the database). The store then puts
    /// every index key of a row it writes, in the same commit as the row (not only the
    /// keys that changed), and never deletes one: a row's puts are its index keys, and
    /// a deleted row takes them along. Lists and counts of index ranges, and gets of index
    /// keys, still answer as if they were keys (empty values; versions nothing checks).
    /// No default: a backend that wraps another must answer as the one it wraps (a
    /// wrapper that said `false` over IndexedDB lost a written row's unchanged keys).
    fn holds_index_keys(&self) -> bool;

    /// True when the store must run its operations over this backend one at a time
    /// (each operation's reads, decision and commit before the next one's reads):
    /// where operations run at once and each commits on its own, as over a storage
    /// adapter, a flusher's claims commit between its recordings' reads and commits
    /// and make them conflict (on Deno KV, 8 of 23 recordings of a flush of 1 000, each
    /// read and decided again; a busy machine once saw one conflict 8 times, the most
    /// the store tries, and the flush failed with `storage_blocked`). IndexedDB says
    /// no: its operations share a transaction, where they never conflict. The default
    /// is false.
    fn one_run_at_a_time(&self) -> bool {
        false
    }

    /// True when a commit that writes `rows` new rows checks their absence at no more
    /// cost than reading them first: the store then enqueues new ids without reading
    /// their rows ([`KvStore`]'s enqueue takes them as new; one that is there makes the
    /// commit conflict and is read on the next try). True by default (an adapter's
    /// commit checks the keys it is given; Deno KV compares versionstamps). IndexedDB
    /// says so for one row, written with `add`; for more, its commit would read each
    /// row anyway (`enqueueMany` of 10 000 took 2 834 against 2 580–2 629 ms when the
    /// commit read them).
    fn checks_new_rows(&self, rows: usize) -> bool {
        let _ = rows;
        true
    }

    /// How many keys are in `[start, end)`. The default lists them page by page; a
    /// backend that can count without reading values (IndexedDB's `count()`) does.
    async fn count(&self, start: &str, end: &str) -> Result<usize, StoreError> {
        let mut n = 0;
        let mut from = start.to_string();
        loop {
            let page = self
                .list(&KvRange {
                    start: from.clone(),
                    end: end.to_string(),
                    limit: COUNT_PAGE,
                    reverse: false,
                })
                .await?;
            n += page.len();
            match page.last() {
                Some(last) if page.len() == COUNT_PAGE as usize => from = keys::after(&last.key),
                _ => return Ok(n),
            }
        }
    }
}

/// Keys listed per call by [`KvBackend::count`]'s default.
const COUNT_PAGE: u32 = 1_000;
