//! [`KvStore`]: the whole [`Store`] over a [`KvBackend`].

use std::cell::{Cell, RefCell};

use super::keys::{self, LEASES, ROWS};
use super::lease::{self, Entry, Head, Leases, Overlay};
#[cfg(any(feature = "adapter", feature = "testing"))]
use super::turn::Turn;
use super::{KvBackend, KvCheck, KvCommit, KvCommitted, KvEntry, KvLimits, KvMutation, KvRange};
use crate::core::semantics::{self, Lookups};
use crate::core::{
    self, Change, ClaimRequest, Completion, CoreError, Enqueued, Heartbeat, ListQuery, Plan,
    Record, RetryConfig, Signed, Stage, StageCounts,
};
use crate::store::codec::{self, RowIndex};
use crate::store::{CorruptRow, Progress, Store, StoreError};

/// How many times an operation is run when its commit conflicts with another writer's
/// before it fails with [`StoreError::Blocked`] (nothing written).
pub const MAX_COMMIT_TRIES: u32 = 8;

/// Keys per `list` call when a range is read whole.
const PAGE: u32 = 256;

/// The [`Store`] over a [`KvBackend`] (see the [module documentation](super) for the
/// contract and [`super::keys`] for the key layout).
///
/// Every operation reads what it needs (rows, index ranges), lets [`crate::core`]
/// decide, and sends one [`KvCommit`] that puts the changed rows with their index keys
/// (and deletes the index keys they no longer have), guarded by the versions of every
/// row it read and decided on; an enqueue also rewrites the lock key of each slot its
/// Nostr rules read, so two contexts enqueueing versions of one slot cannot both
/// commit. On a conflict the operation is read and decided again, up to
/// [`MAX_COMMIT_TRIES`] times, then fails with [`StoreError::Blocked`].
///
/// Commit limits ([`KvBackend::limits`]): an enqueue batch is all or nothing, so one
/// that needs a larger commit fails with `invalid_argument` (field `plans`) and writes
/// nothing (with Deno KV's 100 checks, at most 100 plans per batch). `claim` and
/// `take_over` answer what fits in one commit (they answer "up to `limit`" anyway);
/// `relay_back`, `purge` and `complete_attempts` commit in as many commits as needed,
/// each one atomic (each record's change stands alone, so a failure between two
/// commits leaves what a second call finishes).
///
/// `status` and `corrupt_rows` read every row.
#[derive(Debug, Default)]
pub struct KvStore<B> {
    backend: B,
    /// The rows that could not be decoded, found by the first [`Store::status`] (which
    /// reads every row once; the store never rewrites or deletes them): the stage key
    /// each still has in the stage index, if any. Later calls count by index.
    corrupt: RefCell<Option<Vec<Option<String>>>>,
    /// Whose turn it is, over a backend that runs one operation at a time
    /// ([`KvBackend::one_run_at_a_time`]).
    #[cfg(any(feature = "adapter", feature = "testing"))]
    turn: Turn,
}

/// A row as read in a transaction: its version and, when present, what it decoded to
/// (the record and the index fields its keys were derived from, read once).
#[derive(Debug)]
struct Seen {
    version: Option<String>,
    row: Option<Result<(Record, RowIndex), StoreError>>,
    /// Checked at commit (read and decided on, or written).
    checked: bool,
    /// The lease row entry of the record (row, entry), and whether it applies (the
    /// row has the version it names: the record reads as leased) or is stale.
    lease: Option<((usize, usize), bool)>,
    /// Leased anew by this run's lease row.
    granted: bool,
}

impl Seen {
    /// A row as read (`None`s: absent), not checked or leased anew yet.
    fn read(
        version: Option<String>,
        row: Option<Result<(Record, RowIndex), StoreError>>,
        lease: Option<((usize, usize), bool)>,
    ) -> Seen {
        Seen {
            version,
            row,
            checked: false,
            lease,
            granted: false,
        }
    }
}

/// What writing one row adds to a commit.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    mutations: usize,
    bytes: usize,
    value_bytes: usize,
    /// Of `bytes`, the keys'.
    key_bytes: usize,
}

/// Entries by string key, in key order: the few of one run, in a `Vec` searched by
/// bisection (three `BTreeMap` instantiations cost 13 KB of .wasm code).
struct Sorted<V>(Vec<(String, V)>);

impl<V> Sorted<V> {
    fn new() -> Sorted<V> {
        Sorted(Vec::new())
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    fn get(&self, key: &str) -> Option<&V> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.find(key).ok().map(|i| &mut self.0[i].1)
    }

    fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Inserts `value` under `key`, replacing the one there.
    fn insert(&mut self, key: String, value: V) {
        match self.find(&key) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key, value)),
        }
    }

    fn remove(&mut self, key: &str) {
        if let Ok(i) = self.find(key) {
            self.0.remove(i);
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }
}

/// A row to write: its JSON and index keys (`None`: delete the row).
type NewRow = Option<(String, Vec<String>)>;

/// One run of an operation: what it read and what it will write.
struct Tx<'a, B> {
    kv: &'a B,
    seen: RefCell<Sorted<Seen>>,
    /// By id: the new row, and what it adds to the commit.
    writes: RefCell<Sorted<(NewRow, Cost)>>,
    /// By slot: the lock's version as read, and whether the commit rewrites it.
    locks: RefCell<Sorted<(Option<String>, bool)>>,
    /// The lease rows ([`super::lease`]), read with the first stored row or index
    /// range of the run, and the index keys they move (made when an index range is
    /// first read: a run that reads rows only, an answer's, does not need them).
    leases: RefCell<Option<(Leases, Option<Overlay>)>>,
    /// The lease this run grants (a claim, a takeover), its entries, and the bytes
    /// of their lines.
    grant: RefCell<Option<(Head, Vec<Entry>, usize)>>,
}

/// Adds to `commit` the move of one entry of key layouts 1 and 2 ([`KvStore::migrate`]):
/// true when it was a row (checked, deleted and written again under the current
/// layout, [`codec::upgrade_row`]), false for any other old key (deleted).
fn move_old_entry(commit: &mut KvCommit, entry: &KvEntry) -> bool {
    commit.mutations.push(KvMutation::Delete {
        key: entry.key.clone(),
    });
    let Some(id) = keys::old_row_id(&entry.key) else {
        return false;
    };
    let key = keys::row_key(&id);
    commit.checks.push(KvCheck {
        key: entry.key.clone(),
        version: Some(entry.version.clone()),
    });
    commit.checks.push(KvCheck {
        key: key.clone(),
        version: None,
    });
    let value = match codec::upgrade_row(&id, &entry.value) {
        Some((row, index)) => {
            for index in keys::index_keys(&index) {
                commit.mutations.push(KvMutation::Put {
                    key: index,
                    value: String::new(),
                });
            }
            row
        }
        None => entry.value.clone(),
    };
    commit.mutations.push(KvMutation::Put { key, value });
    true
}

/// The error of an operation whose every commit conflicted: out of line, one copy for
/// every operation's `atomic`.
fn conflicted() -> StoreError {
    StoreError::Blocked(format!(
        "the commit conflicted with other writers {MAX_COMMIT_TRIES} times; nothing was written"
    ))
}

/// The error of a record that does not fit in a commit of its own (`why`: what is
/// over the storage's limits), for every operation that writes in as many commits as
/// needed.
fn too_big(id: &str, why: &str) -> StoreError {
    StoreError::Backend(format!("record `{id}` does not fit in one commit: {why}"))
}

/// Decodes the value stored under item `id`'s row key.
fn decode_value(id: &str, value: &str) -> Result<Record, StoreError> {
    codec::read_row(id, value).map(|(record, _)| record)
}

/// The index keys of a row as read: none when it is absent or does not decode (the
/// store never rewrites or deletes such a row).
fn stored_index_keys(seen: Option<&Seen>) -> Vec<String> {
    match seen.and_then(|s| s.row.as_ref()) {
        Some(Ok((_, index))) => keys::stored_index_keys(index),
        _ => Vec::new(),
    }
}

impl<'a, B: KvBackend> Tx<'a, B> {
    fn new(kv: &'a B) -> Tx<'a, B> {
        Tx {
            kv,
            seen: RefCell::new(Sorted::new()),
            writes: RefCell::new(Sorted::new()),
            locks: RefCell::new(Sorted::new()),
            leases: RefCell::new(None),
            grant: RefCell::new(None),
        }
    }

    /// Takes the rows of `ids` not read yet in this run as absent, without reading
    /// them: [`Tx::check`] then guards the commit by their absence, which the
    /// storage answers as part of the commit (Deno KV's versionstamp `null`, SQLite in
    /// its write transaction, IndexedDB's `add`). A row that is there makes the commit
    /// conflict, and the run is tried again with the rows read.
    fn assume_absent(&self, ids: &[String]) {
        let mut seen = self.seen.borrow_mut();
        for id in ids {
            if !seen.contains_key(id) {
                seen.insert(id.clone(), Seen::read(None, None, None));
            }
        }
    }

    /// Reads the lease rows, once per run.
    async fn read_leases(&self) -> Result<(), StoreError> {
        if self.leases.borrow().is_some() {
            return Ok(());
        }
        let rows = scan_kv(self.kv, LEASES.to_string(), &keys::prefix_end(LEASES), None).await?;
        *self.leases.borrow_mut() = Some((Leases::read(rows), None));
        Ok(())
    }

    /// The entries of `[start, end)` (at most `limit`) as the lease rows read them:
    /// the claim order and stage keys of leased records where the claim would have
    /// moved them.
    async fn index(
        &self,
        start: String,
        end: &str,
        limit: Option<usize>,
    ) -> Result<Vec<KvEntry>, StoreError> {
        self.read_leases().await?;
        let gone = self.overlay(|o| o.gone_in(&start, end));
        let asked = limit.map(|l| l.saturating_add(gone));
        let page = scan_kv(self.kv, start.clone(), end, asked).await?;
        let asked = asked.unwrap_or(usize::MAX);
        let limit = limit.unwrap_or(usize::MAX);
        Ok(self.overlay(|o| o.merge(page, asked, &start, end, limit)))
    }

    /// True when `other` read the same lease rows as this run, at the same versions.
    fn same_leases(&self, other: &Tx<'_, B>) -> bool {
        match (&*self.leases.borrow(), &*other.leases.borrow()) {
            (Some((a, _)), Some((b, _))) => a.same_as(b),
            _ => false,
        }
    }

    fn overlay<T>(&self, f: impl FnOnce(&Overlay) -> T) -> T {
        let mut leases = self.leases.borrow_mut();
        match leases.as_mut() {
            Some((l, overlay)) => f(overlay.get_or_insert_with(|| l.overlay())),
            None => f(&Overlay::default()),
        }
    }

    /// Reads the rows of `ids` not read yet in this run; with `leased`, the lease rows
    /// first (rows that are leased: an answer's). Reading both at once (one round trip
    /// fewer) cost 900 B of gzipped .wasm, more than the room under issue 39's 232 KiB
    /// once `count_ranges` was needed; in two flush A/Bs against the build before lease
    /// rows the `OK` → commit p99 was 164 against 149 ms with it, 204 against 158 ms
    /// without.
    async fn load(&self, ids: &[String], leased: bool) -> Result<(), StoreError> {
        let mut missing: Vec<String> = {
            let seen = self.seen.borrow();
            ids.iter()
                .filter(|id| !seen.contains_key(id))
                .cloned()
                .collect()
        };
        core::order::sort_dedup(&mut missing);
        if missing.is_empty() {
            return Ok(());
        }
        let row_keys: Vec<String> = missing.iter().map(|id| keys::row_key(id)).collect();
        if leased {
            self.read_leases().await?;
        }
        let values = self.kv.get_many(&row_keys).await?;
        if values.len() != missing.len() {
            return Err(StoreError::Backend(format!(
                "get_many answered {} values for {} keys",
                values.len(),
                missing.len()
            )));
        }
        if values.iter().any(Option::is_some) {
            self.read_leases().await?;
        }
        let leases = self.leases.borrow();
        let mut seen = self.seen.borrow_mut();
        for (id, value) in missing.into_iter().zip(values) {
            let mut lease = None;
            let (version, row) = match value {
                Some(v) => {
                    let mut row = codec::read_row(&id, &v.value);
                    if let (Ok((record, _)), Some((l, _))) = (&mut row, leases.as_ref()) {
                        lease = l.apply_to(&v.version, record);
                    }
                    (Some(v.version), Some(row))
                }
                None => (None, None),
            };
            seen.insert(id, Seen::read(version, row, lease));
        }
        Ok(())
    }

    /// The record of `id` as read ([`Tx::load`] first): `None` when absent, a
    /// `corrupt_record` error when its row does not decode.
    fn record(&self, id: &str) -> Result<Option<Record>, StoreError> {
        let seen = self.seen.borrow();
        let Some(s) = seen.get(id) else {
            return Err(StoreError::Backend(format!("row `{id}` used before read")));
        };
        match &s.row {
            None => Ok(None),
            Some(Ok((record, _))) => Ok(Some(record.clone())),
            Some(Err(e)) => Err(e.clone()),
        }
    }

    /// Reads `id` and answers its record (see [`Tx::record`]).
    async fn get(&self, id: &str) -> Result<Option<Record>, StoreError> {
        self.load(std::slice::from_ref(&id.to_string()), false)
            .await?;
        self.record(id)
    }

    /// Guards the commit by the row of `id` as read: it fails if the row changed since.
    fn check(&self, id: &str) {
        if let Some(s) = self.seen.borrow_mut().get_mut(id) {
            s.checked = true;
        }
    }

    /// Writes `record` (checked against its row as read).
    fn put(&self, record: &Record) -> Result<(), StoreError> {
        let row = (codec::write_row(record)?, codec::index_of(record));
        self.write(&record.id, Some(row))
    }

    /// Deletes the row of `id` (checked against its row as read).
    fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.write(id, None)
    }

    fn write(&self, id: &str, row: Option<(String, RowIndex)>) -> Result<(), StoreError> {
        let old_keys = {
            let mut seen = self.seen.borrow_mut();
            let Some(s) = seen.get_mut(id) else {
                return Err(StoreError::Backend(format!("row `{id}` written unread")));
            };
            s.checked = true;
            stored_index_keys(Some(&*s))
        };
        let (row, cost) = match row {
            Some((value, index)) => {
                let new_keys = keys::index_keys(&index);
                let changed = old_keys.iter().filter(|k| !new_keys.contains(k)).count()
                    + new_keys.iter().filter(|k| !old_keys.contains(k)).count();
                let key_bytes: usize = new_keys.iter().chain(&old_keys).map(String::len).sum();
                let cost = Cost {
                    mutations: 1 + changed,
                    bytes: keys::row_key(id).len() + value.len() + key_bytes,
                    value_bytes: value.len(),
                    key_bytes: keys::row_key(id).len() + key_bytes,
                };
                (Some((value, new_keys)), cost)
            }
            None => {
                let key_bytes =
                    keys::row_key(id).len() + old_keys.iter().map(String::len).sum::<usize>();
                let cost = Cost {
                    mutations: 1 + old_keys.len(),
                    bytes: key_bytes,
                    value_bytes: 0,
                    key_bytes,
                };
                (None, cost)
            }
        };
        self.writes.borrow_mut().insert(id.to_string(), (row, cost));
        Ok(())
    }

    /// Leases `next` (what a claim or takeover made of `before`) by an entry of this
    /// run's lease row instead of writing its row, when a lease row can say it
    /// ([`lease::lease_of`]); false when it cannot (write it then).
    fn lease(&self, before: &Record, next: &Record) -> bool {
        let found = {
            let seen = self.seen.borrow();
            match seen.get(&next.id) {
                Some(Seen {
                    version: Some(version),
                    row: Some(Ok((_, index))),
                    ..
                }) => lease::lease_of(before, index, version, next),
                _ => None,
            }
        };
        let Some((head, entry)) = found else {
            return false;
        };
        if self.leases.borrow().is_none() {
            return false;
        }
        let mut grant = self.grant.borrow_mut();
        let bytes = lease::encode_entry(&entry).len() + 1;
        match &mut *grant {
            Some((h, entries, size)) if *h == head => {
                entries.push(entry);
                *size += bytes;
            }
            Some(_) => return false,
            None => *grant = Some((head, vec![entry], bytes)),
        }
        if let Some(s) = self.seen.borrow_mut().get_mut(&next.id) {
            s.checked = true;
            s.granted = true;
        }
        true
    }

    /// Forgets the write or lease of `id` (it would not fit).
    fn unwrite(&self, id: &str) {
        self.writes.borrow_mut().remove(id);
        if let Some(s) = self.seen.borrow_mut().get_mut(id) {
            s.checked = false;
            s.granted = false;
        }
        if let Some((_, entries, size)) = self.grant.borrow_mut().as_mut() {
            if let Some(i) = entries.iter().position(|e| e.id == id) {
                *size -= lease::encode_entry(&entries[i]).len() + 1;
                entries.remove(i);
            }
        }
    }

    /// The lease rows this run rewrites: each with the entries it drops (of records
    /// it writes or leases anew, and stale ones when it writes anything).
    fn lease_changes(&self) -> Vec<(usize, Vec<usize>)> {
        let seen = self.seen.borrow();
        let writes = self.writes.borrow();
        let mut dropped: Vec<(usize, usize)> = seen
            .iter()
            .filter_map(|(id, s)| match s.lease {
                Some((at, false)) => Some(at),
                Some((at, true)) if writes.contains_key(id) || s.granted => Some(at),
                _ => None,
            })
            .collect();
        dropped.sort_unstable();
        let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
        for (row, entry) in dropped {
            match out.last_mut() {
                Some((r, entries)) if *r == row => entries.push(entry),
                _ => out.push((row, vec![entry])),
            }
        }
        out
    }

    /// Reads the lock of `slot` and guards the commit by it; with `bump`, the commit
    /// rewrites it (so a concurrent run that read it conflicts).
    async fn lock(&self, slot: &str, bump: bool) -> Result<(), StoreError> {
        if let Some(l) = self.locks.borrow_mut().get_mut(slot) {
            l.1 |= bump;
            return Ok(());
        }
        let value = self.kv.get_many(&[keys::lock_key(slot)]).await?;
        let version = value.into_iter().next().flatten().map(|v| v.version);
        self.locks
            .borrow_mut()
            .insert(slot.to_string(), (version, bump));
        Ok(())
    }

    fn has_writes(&self) -> bool {
        !self.writes.borrow().is_empty()
            || self
                .grant
                .borrow()
                .as_ref()
                .is_some_and(|(_, entries, _)| !entries.is_empty())
    }

    /// Why the commit as it stands would not fit `limits`, if it would not.
    fn over(&self, limits: &KvLimits) -> Option<String> {
        let writes = self.writes.borrow();
        let locks = self.locks.borrow();
        let bumped = locks.values().filter(|l| l.1).count();
        let mut mutations = writes.values().map(|w| w.1.mutations).sum::<usize>() + bumped;
        let mut checks = self.seen.borrow().values().filter(|s| s.checked).count() + locks.len();
        let mut bytes: usize = writes.values().map(|w| w.1.bytes).sum::<usize>()
            + locks
                .iter()
                .map(|(s, _)| keys::lock_key(s).len())
                .sum::<usize>();
        let lock_bytes: usize = locks
            .iter()
            .filter(|l| l.1 .1)
            .map(|(s, _)| keys::lock_key(s).len())
            .sum();
        let mut key_bytes = writes.values().map(|w| w.1.key_bytes).sum::<usize>() + lock_bytes;
        let mut value = writes.values().map(|w| w.1.value_bytes).max().unwrap_or(0);
        // The lease rows: the lock checked (and rewritten with a new row), each row
        // rewritten checked and at most as large as it was.
        if let Some((leases, _)) = self.leases.borrow().as_ref() {
            checks += 1;
            for (row, _) in self.lease_changes() {
                let len = leases.rows[row].len;
                mutations += 1;
                checks += 1;
                bytes += len + 22;
                key_bytes += 22;
                value = value.max(len);
            }
        }
        if let Some((_, _, size)) = self.grant.borrow().as_ref() {
            // The header line: two free texts of at most 128 bytes, escaped.
            let len = size + 800;
            mutations += 2;
            bytes += len + 44;
            key_bytes += 44;
            value = value.max(len);
        }
        if mutations > limits.max_mutations {
            Some(format!(
                "{mutations} mutations (at most {} per commit)",
                limits.max_mutations
            ))
        } else if checks > limits.max_checks {
            Some(format!(
                "{checks} checks (at most {} per commit)",
                limits.max_checks
            ))
        } else if value > limits.max_value_bytes {
            Some(format!(
                "a row of {value} bytes (at most {} per value)",
                limits.max_value_bytes
            ))
        } else if key_bytes > limits.max_key_bytes {
            Some(format!(
                "{key_bytes} bytes of keys (at most {} per commit)",
                limits.max_key_bytes
            ))
        } else if bytes > limits.max_commit_bytes {
            Some(format!(
                "{bytes} bytes (at most {} per commit)",
                limits.max_commit_bytes
            ))
        } else {
            None
        }
    }

    /// The commit of this run: `None` when it writes nothing. Its rows are moved out of
    /// the run, not copied (an `enqueueMany` of 10 000 would otherwise hold every row
    /// twice), which leaves each written entry `None`, a delete if read again: build a
    /// run's commit once, as [`KvStore::commit`] does, and drop the run after it.
    /// (Taking the run by value, or its whole write list, measured 117–459 B more of
    /// gzipped browser `.wasm`.)
    fn build(&self) -> Result<Option<KvCommit>, StoreError> {
        if !self.has_writes() {
            return Ok(None);
        }
        let seen = self.seen.borrow();
        let locks = self.locks.borrow();
        let mut commit = KvCommit::default();
        for (id, s) in seen.iter().filter(|(_, s)| s.checked) {
            commit.checks.push(KvCheck {
                key: keys::row_key(id),
                version: s.version.clone(),
            });
        }
        for (slot, (version, bump)) in locks.iter() {
            let key = keys::lock_key(slot);
            commit.checks.push(KvCheck {
                key: key.clone(),
                version: version.clone(),
            });
            if *bump {
                commit.mutations.push(KvMutation::Put {
                    key,
                    value: String::new(),
                });
            }
        }
        if let Some((leases, _)) = self.leases.borrow().as_ref() {
            commit.checks.push(KvCheck {
                key: LEASES.to_string(),
                version: leases.lock.clone(),
            });
            for (at, dropped) in self.lease_changes() {
                let row = &leases.rows[at];
                commit.checks.push(KvCheck {
                    key: row.key.clone(),
                    version: Some(row.version.clone()),
                });
                let kept: Vec<&Entry> = row
                    .entries
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !dropped.contains(i))
                    .map(|(_, e)| e)
                    .collect();
                commit.mutations.push(if kept.is_empty() {
                    KvMutation::Delete {
                        key: row.key.clone(),
                    }
                } else {
                    KvMutation::Put {
                        key: row.key.clone(),
                        value: lease::encode(&row.head, kept),
                    }
                });
            }
            if let Some((head, entries, _)) = self.grant.borrow().as_ref() {
                if !entries.is_empty() {
                    let n = leases.last + 1;
                    commit.mutations.push(KvMutation::Put {
                        key: lease::row_key(n),
                        value: lease::encode(head, entries),
                    });
                    commit.mutations.push(KvMutation::Put {
                        key: LEASES.to_string(),
                        value: n.to_string(),
                    });
                }
            }
        }
        let mut writes = self.writes.borrow_mut();
        let held = self.kv.holds_index_keys();
        for (id, (row, _)) in writes.0.iter_mut() {
            let old = match held {
                false => stored_index_keys(seen.get(id)),
                true => Vec::new(),
            };
            let key = keys::row_key(id);
            match row.take() {
                Some((value, new)) => {
                    for k in old.iter().filter(|k| !new.contains(k)) {
                        commit.mutations.push(KvMutation::Delete { key: k.clone() });
                    }
                    for k in new.iter().filter(|k| !old.contains(k)) {
                        commit.mutations.push(KvMutation::Put {
                            key: k.clone(),
                            value: String::new(),
                        });
                    }
                    commit.mutations.push(KvMutation::Put { key, value });
                }
                None => {
                    for k in old {
                        commit.mutations.push(KvMutation::Delete { key: k });
                    }
                    commit.mutations.push(KvMutation::Delete { key });
                }
            }
        }
        Ok(Some(commit))
    }
}

/// Every entry of `kv` in `[start, end)`, page by page, at most `limit` of them.
async fn scan_kv<B: KvBackend>(
    kv: &B,
    start: String,
    end: &str,
    limit: Option<usize>,
) -> Result<Vec<KvEntry>, StoreError> {
    let mut out: Vec<KvEntry> = Vec::new();
    let mut start = start;
    loop {
        let left = limit.map_or(usize::MAX, |l| l - out.len());
        let ask = u32::try_from(left).unwrap_or(u32::MAX).min(PAGE);
        if ask == 0 {
            break;
        }
        let page = kv
            .list(&KvRange {
                start: start.clone(),
                end: end.to_string(),
                limit: ask,
                reverse: false,
            })
            .await?;
        let fetched = page.len();
        if let Some(last) = page.last() {
            start = keys::after(&last.key);
        }
        out.extend(page);
        if fetched < ask as usize {
            break;
        }
    }
    Ok(out)
}

/// A read-modify-write of one record: the record and the records of its slot (when
/// asked for) to the next record.
type Transition<'a> = dyn Fn(&Record, &[Record]) -> Result<Record, CoreError> + 'a;

/// One record's part of a many-record operation: `None` leaves it alone; else the next
/// record (`None`: delete it), which is also its answer. (One answer type for every
/// operation: `in_commits` and its commit loop are compiled once.)
type Step<'a> = dyn Fn(&Record) -> Result<Option<Option<Record>>, StoreError> + 'a;

/// The ids of index entries (in key order), skipping keys whose id does not decode.
fn ids(entries: &[KvEntry]) -> Vec<String> {
    entries.iter().filter_map(|e| keys::id_of(&e.key)).collect()
}

impl<B: KvBackend> KvStore<B> {
    /// Enqueues `plans` all or nothing (the rules of [`Store::enqueue_many`]), telling
    /// `progress` as the commit is written.
    async fn enqueue_reporting(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
        progress: Option<(Progress, usize)>,
    ) -> Result<Vec<Enqueued>, StoreError> {
        let limits = self.backend.limits();
        // A key this storage cannot hold (Deno KV: 2 KB), of the event's NIP-01 address
        // (its `d` tag) or of one a deletion names: refused before anything is read.
        for plan in &plans {
            let key = |slot: &String| keys::slot_key(slot, 1, 0, &plan.event.id, &plan.id).len();
            let longest = semantics::lookups(plan).slots.iter().map(key).max();
            if let Some(len) = longest.filter(|&len| len > limits.max_key_len) {
                return Err(CoreError::arg(
                    "event",
                    format!(
                        "event {} needs a key of {len} bytes for its NIP-01 address (its `d` \
                         tag, or an `a` tag it deletes); this storage holds keys of at most {} \
                         bytes: use a shorter `d` tag, or another storage",
                        plan.event.id, limits.max_key_len
                    ),
                )
                .into());
            }
        }
        // The first run takes the plans' ids as new (what an app enqueues almost
        // always is), where the storage checks their absence in the commit at no more
        // cost than a read ([`KvBackend::checks_new_rows`]): one round trip fewer (Deno
        // KV reads 10 keys per call; IndexedDB adds one row). An id that is there
        // conflicts, and the next run reads it.
        let guess = Cell::new(self.backend.checks_new_rows(plans.len()));
        loop {
            let decided = self
                .atomic(async |tx| {
                    let ids: Vec<String> = plans.iter().map(|p| p.id.clone()).collect();
                    let guessing = guess.replace(false);
                    if guessing {
                        tx.assume_absent(&ids);
                    } else {
                        tx.load(&ids, false).await?;
                    }
                    let mut stored = Vec::with_capacity(plans.len());
                    for plan in &plans {
                        let current = tx.record(&plan.id)?;
                        tx.check(&plan.id);
                        let lookups = semantics::lookups(plan);
                        for slot in &lookups.slots {
                            tx.lock(slot, true).await?;
                        }
                        let related = self.read_related(tx, &lookups, false).await?;
                        stored.push((current, related));
                    }
                    // A refusal may come from the guess (an expired event is refused,
                    // its replay is not): decided again with the rows read.
                    let decided = match core::decide_enqueues(plans.clone(), stored, now_ms) {
                        Err(_) if guessing => return Ok(None),
                        decided => decided?,
                    };
                    // Each record written is dropped once its row is made (the answers
                    // keep their own copies).
                    let writes_any = !decided.writes.is_empty();
                    for record in decided.writes {
                        tx.put(&record)?;
                    }
                    if let Some(why) = tx.over(&limits) {
                        return Err(CoreError::arg(
                            "plans",
                            format!(
                                "the batch does not fit in one commit of this storage ({why}); \
                                 enqueue fewer plans at once"
                            ),
                        )
                        .into());
                    }
                    // The commit that follows at once (nothing is awaited before it) is
                    // told.
                    if let (Some((progress, units)), true) = (&progress, writes_any) {
                        self.backend.tell_next_commit(progress.clone(), *units);
                    }
                    Ok(Some(decided.answers))
                })
                .await?;
            if let Some(answers) = decided {
                return Ok(answers);
            }
        }
    }

    /// A store over `backend`.
    pub fn new(backend: B) -> KvStore<B> {
        KvStore {
            backend,
            corrupt: RefCell::new(None),
            #[cfg(any(feature = "adapter", feature = "testing"))]
            turn: Turn::default(),
        }
    }

    /// Its backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Moves what key layouts 1 and 2 wrote ([`keys::OLD_RANGES`]: lowercase prefixes,
    /// ids in hex) to the current layout, page by page, each page one atomic commit.
    /// An old row is checked (its version, and that its new key is still free),
    /// deleted, and written under its new key with the current layout's index keys:
    /// in the current row format when it decodes, as it is when it does not (so it is
    /// still reported as corrupt, and never lost; [`keys::old_row_id`] gives it an id
    /// even when its key is not hex). Every other old key (index keys, slot locks) is
    /// deleted.
    /// Idempotent, and safe from several contexts at once (a page another one moved
    /// first conflicts and is read again). Answers how many rows it moved. Call it once
    /// after opening, before anything else: the store reads only the current layout.
    pub async fn migrate(&self) -> Result<u32, StoreError> {
        let limits = self.backend.limits();
        let page_size = (limits.max_checks / 2).clamp(1, 64);
        let (mut moved, mut conflicts) = (0u32, 0u32);
        for (start, end) in keys::OLD_RANGES {
            let mut from = start.to_string();
            loop {
                let page = self.scan(from.clone(), end, Some(page_size)).await?;
                let mut commit = KvCommit::default();
                let mut rows = 0u32;
                let mut next = None;
                for entry in &page {
                    let (checks, mutations) = (commit.checks.len(), commit.mutations.len());
                    let row = move_old_entry(&mut commit, entry);
                    // What does not fit goes in the next commit; a first entry that
                    // does not fit alone is refused.
                    if let Some(why) = limits.refuse(&commit) {
                        if mutations == 0 {
                            return Err(StoreError::Backend(format!("commit too large: {why}")));
                        }
                        commit.checks.truncate(checks);
                        commit.mutations.truncate(mutations);
                        next = Some(entry.key.clone());
                        break;
                    }
                    rows += u32::from(row);
                }
                let done = next.is_none() && page.len() < page_size;
                let next = match (next, page.last()) {
                    (Some(key), _) => key,
                    (None, Some(last)) => keys::after(&last.key),
                    (None, None) => break,
                };
                if commit.mutations.is_empty()
                    || matches!(self.backend.commit(commit).await?, KvCommitted::Applied)
                {
                    moved += rows;
                    from = next;
                    conflicts = 0;
                    // A moved row may be one that does not decode: found again.
                    *self.corrupt.borrow_mut() = None;
                } else {
                    conflicts += 1;
                    if conflicts >= MAX_COMMIT_TRIES {
                        return Err(conflicted());
                    }
                    continue;
                }
                if done {
                    break;
                }
            }
        }
        Ok(moved)
    }

    /// Commits what `tx` wrote (nothing to commit is applied): false when the commit
    /// conflicted. Not generic: every operation's `atomic` awaits this one state
    /// machine instead of a copy of it.
    async fn commit(&self, tx: &Tx<'_, B>) -> Result<bool, StoreError> {
        let Some(commit) = tx.build()? else {
            return Ok(true);
        };
        if let Some(why) = self.backend.limits().refuse(&commit) {
            return Err(StoreError::Backend(format!("commit too large: {why}")));
        }
        Ok(matches!(
            self.backend.commit(commit).await?,
            KvCommitted::Applied
        ))
    }

    /// Runs `op` and commits what it wrote; on a conflict, runs it again (up to
    /// [`MAX_COMMIT_TRIES`] times).
    async fn atomic<T>(
        &self,
        op: impl AsyncFn(&Tx<'_, B>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // Only the edge build has a backend that asks for turns (the browser .wasm is
        // 440 B smaller without them).
        #[cfg(any(feature = "adapter", feature = "testing"))]
        let _turn = match self.backend.one_run_at_a_time() {
            true => Some(self.turn.take().await),
            false => None,
        };
        for _ in 0..MAX_COMMIT_TRIES {
            let tx = Tx::new(&self.backend);
            let out = op(&tx).await?;
            if self.commit(&tx).await? {
                return Ok(out);
            }
        }
        Err(conflicted())
    }

    /// Every entry in `[start, end)`, page by page, at most `limit` of them.
    async fn scan(
        &self,
        start: String,
        end: &str,
        limit: Option<usize>,
    ) -> Result<Vec<KvEntry>, StoreError> {
        scan_kv(&self.backend, start, end, limit).await
    }

    /// Up to `want` records of the index range `[start, end)` that `keep` admits, in key
    /// order, read into `tx` page by page past the others (and past rows that cannot
    /// be decoded): what a claim (ready and admitted by its filters) and a list (of a
    /// stage, a lane) both need, since lanes are not in the keys.
    async fn scan_records(
        &self,
        tx: &Tx<'_, B>,
        mut start: String,
        end: &str,
        want: usize,
        keep: &dyn Fn(&Record) -> bool,
    ) -> Result<Vec<Record>, StoreError> {
        let mut out = Vec::new();
        while out.len() < want {
            let ask = want - out.len();
            let page = tx.index(start.clone(), end, Some(ask)).await?;
            let fetched = page.len();
            if let Some(last) = page.last() {
                start = keys::after(&last.key);
            }
            let page_ids = ids(&page);
            tx.load(&page_ids, false).await?;
            out.extend(
                page_ids
                    .iter()
                    .filter_map(|id| tx.record(id).ok().flatten())
                    .filter(|r| keep(r)),
            );
            if fetched < ask {
                break;
            }
        }
        Ok(out)
    }

    /// For a takeover with [`ClaimRequest::lapsed_only`], the owners of `leased` (other
    /// than the caller) whose heartbeat has lapsed at `now_ms`; empty otherwise (the
    /// caller then takes every other owner's leases, and `orphans` asks nothing).
    #[cfg(any(feature = "adapter", feature = "testing"))]
    async fn gone_owners(
        &self,
        request: &ClaimRequest,
        leased: &[Record],
        now_ms: u64,
    ) -> Result<Vec<String>, StoreError> {
        if !request.lapsed_only {
            return Ok(Vec::new());
        }
        // The heartbeats are few (one per flusher running or lately gone): all read.
        let owners: Vec<&str> = leased
            .iter()
            .filter_map(|r| r.lease.as_ref())
            .map(|l| l.owner.as_str())
            .filter(|o| *o != request.owner)
            .collect();
        Ok(self
            .scan_prefix(keys::OWNER, None)
            .await?
            .into_iter()
            .filter(|e| Heartbeat::decode(&e.value).is_some_and(|b| b.lapsed(now_ms)))
            .filter_map(|e| owners.iter().find(|o| keys::owner_key(o) == e.key))
            .map(|o| o.to_string())
            .collect())
    }

    /// Every entry under `prefix` (at most `limit`).
    async fn scan_prefix(
        &self,
        prefix: &str,
        limit: Option<usize>,
    ) -> Result<Vec<KvEntry>, StoreError> {
        self.scan(prefix.to_string(), &keys::prefix_end(prefix), limit)
            .await
    }

    /// The records answering `lookups`, read in `tx` and guarded: for each slot its
    /// versions that may still be sent and its newest other one (with `every_version`,
    /// all but cancelled ones); for each event id its records; with `live`, every
    /// record that may still be sent (by the stage index). Corrupt rows are skipped.
    async fn read_related(
        &self,
        tx: &Tx<'_, B>,
        lookups: &Lookups,
        every_version: bool,
    ) -> Result<Vec<Record>, StoreError> {
        // The index ranges (each with its limit) first, then one loop that reads them:
        // one `await` of a scan in this state machine instead of one per kind of range.
        let mut ranges: Vec<(String, Option<usize>)> = Vec::new();
        for slot in &lookups.slots {
            ranges.push((keys::slot_prefix(slot, 1), None));
            ranges.push((keys::slot_prefix(slot, 0), (!every_version).then_some(1)));
        }
        for event_id in &lookups.event_ids {
            ranges.push((keys::event_prefix(event_id), None));
        }
        if lookups.live {
            for stage in Stage::ALL.into_iter().filter(|s| s.may_send()) {
                ranges.push((keys::stage_prefix(stage), None));
            }
        }
        let mut found: Vec<String> = Vec::new();
        for (prefix, limit) in &ranges {
            found.extend(ids(&self.scan_prefix(prefix, *limit).await?));
        }
        let mut unique = found.clone();
        core::order::sort_dedup(&mut unique);
        tx.load(&unique, false).await?;
        let mut out = Vec::new();
        for (i, id) in found.iter().enumerate() {
            if found[..i].contains(id) {
                continue;
            }
            tx.check(id);
            if let Ok(Some(record)) = tx.record(id) {
                out.push(record);
            }
        }
        Ok(out)
    }

    /// Read-modify-write of one record; with `slot`, the records of its slot are read
    /// (and its lock watched) and handed to `f`.
    async fn update(&self, id: &str, slot: bool, f: &Transition<'_>) -> Result<Record, StoreError> {
        self.atomic(async |tx| {
            let current = tx
                .get(id)
                .await?
                .ok_or_else(|| CoreError::NotFound { id: id.to_string() })?;
            tx.check(id);
            let wanted = Lookups {
                slots: semantics::slot_of(&current)
                    .filter(|_| slot)
                    .into_iter()
                    .collect(),
                event_ids: Vec::new(),
                live: false,
            };
            for s in &wanted.slots {
                tx.lock(s, false).await?;
            }
            let related = self.read_related(tx, &wanted, false).await?;
            let next = f(&current, &related)?;
            tx.put(&next)?;
            Ok(next)
        })
        .await
    }

    /// Applies `step` to the records of `ids`, as many per commit as fit, each commit
    /// atomic; answers what `step` wrote (the next record, `None` for a deletion), in
    /// order. A record that does not fit in a commit of its own is a storage error.
    async fn in_commits(
        &self,
        ids: &[String],
        step: &Step<'_>,
    ) -> Result<Vec<Option<Record>>, StoreError> {
        let limits = self.backend.limits();
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < ids.len() {
            let (answers, used) = self
                .atomic(async |tx| {
                    let mut answers = Vec::new();
                    let mut used = 0;
                    let chunk = &ids[pos..ids.len().min(pos + PAGE as usize)];
                    tx.load(chunk, false).await?;
                    for id in chunk {
                        let Ok(Some(record)) = tx.record(id) else {
                            used += 1;
                            continue;
                        };
                        if let Some(next) = step(&record)? {
                            match &next {
                                Some(next) => tx.put(next)?,
                                None => tx.delete(id)?,
                            }
                            if let Some(why) = tx.over(&limits) {
                                tx.unwrite(id);
                                if used == 0 {
                                    return Err(too_big(id, &why));
                                }
                                break;
                            }
                            answers.push(next);
                        }
                        used += 1;
                    }
                    Ok((answers, used))
                })
                .await?;
            out.extend(answers);
            pos += used.max(1);
        }
        Ok(out)
    }

    /// How many keys each of `ranges` holds, as the lease rows read them. Counts are
    /// not checked at a commit as a run's reads are: the lease rows are read again
    /// after the counts, and the counts taken again while they changed meanwhile (a
    /// claim or an answer committed), so a record an answer moved is never counted
    /// both as leased (by its old lease row) and under its new stage (up to
    /// [`MAX_COMMIT_TRIES`] times; then the last counts).
    async fn count_ranges(&self, ranges: &[(String, String)]) -> Result<Vec<usize>, StoreError> {
        let mut out = Vec::new();
        let mut tx = Tx::new(&self.backend);
        tx.read_leases().await?;
        for _ in 0..MAX_COMMIT_TRIES {
            out.clear();
            for (start, end) in ranges {
                let n = self.backend.count(start, end).await?;
                out.push(tx.overlay(|o| o.count(n, start, end)));
            }
            // The lease rows read after the counts are those the next counts use.
            let again = Tx::new(&self.backend);
            again.read_leases().await?;
            if tx.same_leases(&again) {
                break;
            }
            tx = again;
        }
        Ok(out)
    }

    /// The ids filed under `stage`, in list order.
    async fn ids_in_stage(&self, stage: Stage) -> Result<Vec<String>, StoreError> {
        Ok(ids(&self
            .scan_prefix(&keys::stage_prefix(stage), None)
            .await?))
    }
}

impl<B: KvBackend> Store for KvStore<B> {
    async fn enqueue_many(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
    ) -> Result<Vec<Enqueued>, StoreError> {
        self.enqueue_reporting(plans, now_ms, None).await
    }

    async fn enqueue_many_checked(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
        check: &mut dyn FnMut() -> bool,
        progress: Option<Progress>,
    ) -> Result<Option<Vec<Enqueued>>, StoreError> {
        if !check() {
            return Ok(None);
        }
        let units = plans.len();
        self.enqueue_reporting(plans, now_ms, progress.map(|p| (p, units)))
            .await
            .map(Some)
    }

    async fn get(&self, id: &str) -> Result<Option<Record>, StoreError> {
        Tx::new(&self.backend).get(id).await
    }

    async fn related(&self, lookups: &Lookups) -> Result<Vec<Record>, StoreError> {
        let tx = Tx::new(&self.backend);
        self.read_related(&tx, lookups, true).await
    }

    async fn claim(&self, request: &ClaimRequest, now_ms: u64) -> Result<Vec<Record>, StoreError> {
        request.validate()?;
        let limits = self.backend.limits();
        let limit = request.limit as usize;
        self.atomic(async |tx| {
            let mut claimed: Vec<Record> = Vec::new();
            // One range per priority, high first: `p/<rank>/` up to the keys due at
            // `now_ms`. The filters are applied to the records read.
            'ranks: for rank in keys::claim_ranks(request.prepare) {
                let prefix = keys::rank_prefix(rank);
                let end = keys::due_end(rank, now_ms);
                let ready = self
                    .scan_records(tx, prefix, &end, limit - claimed.len(), &|r| {
                        r.is_ready(now_ms) && request.admits(r)
                    })
                    .await?;
                for record in ready {
                    let next = core::claim(&record, request, now_ms)?.into_record();
                    if !tx.lease(&record, &next) {
                        tx.put(&next)?;
                    }
                    if tx.over(&limits).is_some() {
                        tx.unwrite(&record.id);
                        break 'ranks;
                    }
                    claimed.push(next);
                }
                if claimed.len() >= limit {
                    break;
                }
            }
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
        let limits = self.backend.limits();
        self.atomic(async |tx| {
            let prefix = keys::stage_prefix(Stage::Leased);
            let leased = ids(&tx
                .index(prefix.clone(), &keys::prefix_end(&prefix), None)
                .await?);
            tx.load(&leased, false).await?;
            let decoded: Vec<Record> = leased
                .iter()
                .filter_map(|id| tx.record(id).ok().flatten())
                .collect();
            // The browser build's flushers hold Web Locks and never ask for
            // `lapsed_only` (it would take nothing there): heartbeats are read only
            // where flushers keep them, which saves the browser .wasm 805 B gzipped.
            #[cfg(any(feature = "adapter", feature = "testing"))]
            let gone = self.gone_owners(request, &decoded, now_ms).await?;
            #[cfg(not(any(feature = "adapter", feature = "testing")))]
            let gone: Vec<String> = Vec::new();
            let orphans =
                core::orphans(&decoded, request, now_ms, &|o| gone.iter().any(|g| g == o));
            let mut taken = Vec::with_capacity(orphans.len());
            for record in orphans {
                let next = core::take_over(record, request, now_ms)?.into_record();
                if !tx.lease(record, &next) {
                    tx.put(&next)?;
                }
                if tx.over(&limits).is_some() {
                    tx.unwrite(&next.id);
                    break;
                }
                taken.push(next);
            }
            Ok(taken)
        })
        .await
    }

    async fn beat(
        &self,
        owner: &str,
        beat: Option<Heartbeat>,
        now_ms: u64,
    ) -> Result<u32, StoreError> {
        let key = keys::owner_key(owner);
        let mut mutations = vec![match beat {
            Some(b) => KvMutation::Put {
                key: key.clone(),
                value: b.encode(),
            },
            None => KvMutation::Delete { key: key.clone() },
        }];
        // A run that ends forgets the owners that are long gone, and counts the others.
        let mut others = 0;
        if beat.is_none() {
            for entry in self.scan_prefix(keys::OWNER, None).await? {
                if entry.key == key {
                    continue;
                }
                match Heartbeat::decode(&entry.value) {
                    Some(b) if !b.stale(now_ms) => others += 1,
                    _ => mutations.push(KvMutation::Delete { key: entry.key }),
                }
            }
        }
        self.backend
            .commit(KvCommit {
                checks: Vec::new(),
                mutations,
            })
            .await?;
        Ok(others)
    }

    async fn complete_attempt(
        &self,
        completion: &Completion,
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        self.complete_attempts(std::slice::from_ref(completion), retry, now_ms)
            .await
            .pop()
            .unwrap_or_else(|| Err(StoreError::Backend("no answer for the completion".into())))
    }

    /// As many completions per commit as fit (one commit for a usual flush round); each
    /// commit is atomic.
    async fn complete_attempts(
        &self,
        completions: &[Completion],
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Vec<Result<Record, StoreError>> {
        let limits = self.backend.limits();
        let mut out: Vec<Result<Record, StoreError>> = Vec::with_capacity(completions.len());
        while out.len() < completions.len() {
            let pos = out.len();
            let done = self
                .atomic(async |tx| {
                    let chunk = &completions[pos..completions.len().min(pos + PAGE as usize)];
                    let ids: Vec<String> = chunk.iter().map(|c| c.id.clone()).collect();
                    tx.load(&ids, true).await?;
                    let mut answers = Vec::with_capacity(chunk.len());
                    for c in chunk {
                        let next = match tx.record(&c.id) {
                            Ok(Some(record)) => core::complete_attempt(&record, c, now_ms, retry)
                                .map_err(StoreError::from),
                            Ok(None) => Err(CoreError::NotFound { id: c.id.clone() }.into()),
                            Err(e) => Err(e),
                        };
                        if let Ok(next) = &next {
                            tx.put(next)?;
                            if let Some(why) = tx.over(&limits) {
                                tx.unwrite(&c.id);
                                if answers.is_empty() {
                                    return Err(too_big(&c.id, &why));
                                }
                                break;
                            }
                        }
                        answers.push(next);
                    }
                    Ok(answers)
                })
                .await;
            match done {
                Ok(answers) => out.extend(answers),
                Err(e) => {
                    out.push(Err(e));
                    break;
                }
            }
        }
        out
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

    async fn record_signing(
        &self,
        signed: &Signed,
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        self.update(&signed.id, false, &|r, _| {
            core::record_signing(r, signed, now_ms, retry)
        })
        .await
    }

    async fn relay_back(&self, relay: &str, now_ms: u64) -> Result<Vec<Record>, StoreError> {
        // Only records waiting after an attempt (`Stage::AFTER_ATTEMPT`) can qualify:
        // read those through the stage index.
        let mut waiting = Vec::new();
        for stage in Stage::AFTER_ATTEMPT {
            waiting.extend(self.ids_in_stage(stage).await?);
        }
        let woken = self
            .in_commits(&waiting, &|record| {
                Ok(core::relay_back(record, relay, now_ms).map(Some))
            })
            .await?;
        Ok(woken.into_iter().flatten().collect())
    }

    async fn change(&self, id: &str, change: Change, now_ms: u64) -> Result<Record, StoreError> {
        self.update(id, change.reads_slot(), &|r, related| {
            change.apply(r, related, now_ms)
        })
        .await
    }

    async fn purge(&self, before_ms: u64) -> Result<u32, StoreError> {
        let mut doomed = Vec::new();
        for stage in Stage::ALL.into_iter().filter(|s| s.is_terminal()) {
            doomed.extend(self.ids_in_stage(stage).await?);
        }
        let purged = self
            .in_commits(&doomed, &|record| {
                Ok(core::is_purgeable(record, before_ms).then_some(None))
            })
            .await?;
        Ok(u32::try_from(purged.len()).unwrap_or(u32::MAX))
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Record>, StoreError> {
        query.validate()?;
        let tx = Tx::new(&self.backend);
        let cursor = match &query.after {
            None => None,
            Some(id) => {
                tx.load(std::slice::from_ref(id), false).await?;
                let created_ms = match tx.seen.borrow().get(id).and_then(|s| s.row.as_ref()) {
                    None => return Err(CoreError::NotFound { id: id.clone() }.into()),
                    Some(Err(e)) => return Err(e.clone()),
                    Some(Ok((_, index))) => index.created_ms,
                };
                Some((created_ms, id.clone()))
            }
        };
        let (prefix, start) = match query.stage {
            Some(stage) => (
                keys::stage_prefix(stage),
                cursor.map(|(c, id)| keys::after(&keys::stage_key(stage.as_str(), c, &id))),
            ),
            None => (
                keys::CREATED.to_string(),
                cursor.map(|(c, id)| keys::after(&keys::created_key(c, &id))),
            ),
        };
        // A lane is not in the keys (each index key costs commit bytes; Deno KV counts
        // them): a page by lane reads list order and keeps that lane's records.
        let start = start.unwrap_or_else(|| prefix.clone());
        let keep = |r: &Record| {
            query.stage.is_none_or(|s| r.stage == s)
                && query.lane.as_ref().is_none_or(|l| r.lane == *l)
        };
        self.scan_records(
            &tx,
            start,
            &keys::prefix_end(&prefix),
            query.limit as usize,
            &keep,
        )
        .await
    }

    /// Counts each stage's index keys (IndexedDB counts them without reading a value).
    /// The first call reads every row once to find those that cannot be decoded (see
    /// [`KvStore`]'s `corrupt`): they are counted apart, not under the stage their index
    /// key names.
    async fn status(&self) -> Result<StageCounts, StoreError> {
        let known = self.corrupt.borrow().clone();
        let corrupt = match known {
            Some(corrupt) => corrupt,
            None => {
                let mut found = Vec::new();
                for entry in self.scan_prefix(ROWS, None).await? {
                    let id = keys::id_of(&entry.key).unwrap_or_default();
                    if decode_value(&id, &entry.value).is_err() {
                        found.push(codec::stage_key_of(&entry.value));
                    }
                }
                // Of those stage keys, the ones really in the index.
                let wanted: Vec<String> = found.iter().flatten().cloned().collect();
                let there = self.backend.get_many(&wanted).await?;
                let present: Vec<&String> = wanted
                    .iter()
                    .zip(&there)
                    .filter(|(_, v)| v.is_some())
                    .map(|(k, _)| k)
                    .collect();
                let found: Vec<Option<String>> = found
                    .into_iter()
                    .map(|k| k.filter(|k| present.contains(&k)))
                    .collect();
                *self.corrupt.borrow_mut() = Some(found.clone());
                found
            }
        };
        let mut counts = StageCounts::default();
        let ranges: Vec<(String, String)> = Stage::ALL
            .into_iter()
            .map(|stage| {
                let prefix = keys::stage_prefix(stage);
                let end = keys::prefix_end(&prefix);
                (prefix, end)
            })
            .collect();
        let counted = self.count_ranges(&ranges).await?;
        for ((stage, (prefix, _)), n) in Stage::ALL.into_iter().zip(&ranges).zip(counted) {
            let filed = corrupt.iter().flatten().filter(|k| k.starts_with(prefix));
            *counts.get_mut(stage) =
                u32::try_from(n.saturating_sub(filed.count())).unwrap_or(u32::MAX);
        }
        counts.corrupt = u32::try_from(corrupt.len()).unwrap_or(u32::MAX);
        Ok(counts)
    }

    async fn corrupt_rows(&self) -> Result<Vec<CorruptRow>, StoreError> {
        let mut out = Vec::new();
        for entry in self.scan_prefix(ROWS, None).await? {
            let id = keys::id_of(&entry.key).unwrap_or_else(|| entry.key.clone());
            if let Err(e) = decode_value(&id, &entry.value) {
                let stage = serde_json::from_str::<serde_json::Value>(&entry.value)
                    .ok()
                    .and_then(|v| v.get("stage")?.as_str().and_then(Stage::from_name));
                let reason = match e {
                    StoreError::Corrupt { message, .. } => message,
                    other => other.to_string(),
                };
                out.push(CorruptRow { id, stage, reason });
            }
        }
        core::order::sort_with(&mut out, &|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    async fn count_due(&self, now_ms: u64) -> Result<u32, StoreError> {
        // The claim order's keys up to `now_ms`, one range per priority, counted (no
        // value read).
        let ranges: Vec<(String, String)> = keys::claim_ranks(0)
            .map(|rank| (keys::rank_prefix(rank), keys::due_end(rank, now_ms)))
            .collect();
        let count: usize = self.count_ranges(&ranges).await?.into_iter().sum();
        Ok(u32::try_from(count).unwrap_or(u32::MAX))
    }

    async fn next_due(&self, prepare: u8) -> Result<Option<u64>, StoreError> {
        let mut due: Option<u64> = None;
        let tx = Tx::new(&self.backend);
        // Ready records' ranks, then those of the records this context can prepare.
        let prepared = keys::claim_ranks(prepare).filter(|_| prepare != 0);
        for rank in keys::claim_ranks(0).chain(prepared) {
            let prefix = keys::rank_prefix(rank);
            let first = tx
                .index(prefix.clone(), &keys::prefix_end(&prefix), Some(1))
                .await?;
            if let Some(d) = first.first().and_then(|e| keys::due_of(&e.key)) {
                due = Some(due.map_or(d, |m| m.min(d)));
            }
        }
        Ok(due)
    }
}
