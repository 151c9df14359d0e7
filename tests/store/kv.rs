//! Runs the store conformance suite against the key-value store over the in-memory
//! backend (one test per case), once more under Deno KV's commit limits and once on a
//! backend that holds a record's index keys in its row (as IndexedDB does), then what
//! is its own: conflicting writers, a backend that always conflicts, the key encodings'
//! order, commit limits, corrupt rows; and shows that these tests catch broken backends.
//! Native only (as `store::kv` for now).
#![cfg(not(target_arch = "wasm32"))]

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::Rc;

use futures::executor::block_on;
use nostr_outbox::core::{Completion, EnqueueOutcome, Outcome, Plan, Policy, Stage, TargetResult};
use nostr_outbox::store::conformance::{
    self, fixture_claim, fixture_plan, nostr_event, nostr_plan, ALICE, RELAYS,
};
use nostr_outbox::store::kv::{
    self, KvBackend, KvCommit, KvCommitted, KvEntry, KvLimits, KvMutation, KvRange, KvStore,
    KvValue, MemoryKv, MAX_COMMIT_TRIES,
};
use nostr_outbox::store::{Progress, Store, StoreError};

fn store() -> KvStore<MemoryKv> {
    KvStore::new(MemoryKv::new())
}

macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                block_on(conformance::$case(&store()));
            }
        )*
    };
}

nostr_outbox::conformance_cases!(cases);

#[test]
fn kv_store_passes_the_whole_suite_under_deno_kv_limits() {
    block_on(conformance::run_all(|| async {
        KvStore::new(MemoryKv::with_limits(KvLimits::DENO_KV))
    }));
}

// ---------------------------------------------------------------------------------
// A backend that holds a record's index keys in its row, as IndexedDB's schema 6 does
// (`KvBackend::holds_index_keys`): natively, the store's side of that contract under the
// whole suite. It keeps the keys as keys of a memory backend, but owns them: a row's put
// replaces every index key the row had with the ones put beside it (so a key the store
// left out is gone), a row's delete takes them along, and a commit that writes an index
// key without its row, or deletes one, is refused, as `src/store/idb/ops.rs` refuses it.

#[derive(Default)]
struct Holding {
    kv: MemoryKv,
    /// Per row key, the index keys it holds.
    held: RefCell<std::collections::BTreeMap<String, Vec<String>>>,
}

fn is_index_key(key: &str) -> bool {
    [kv::DUE, kv::CREATED, kv::STAGE, kv::EVENT, kv::SLOT]
        .iter()
        .any(|p| key.starts_with(p))
}

fn row_of(key: &str) -> String {
    format!(
        "{}{}",
        kv::ROWS,
        &key[key.rfind('/').map_or(0, |i| i + 1)..]
    )
}

impl KvBackend for Holding {
    fn limits(&self) -> KvLimits {
        self.kv.limits()
    }
    fn holds_index_keys(&self) -> bool {
        true
    }
    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<KvValue>>, StoreError> {
        self.kv.get_many(keys).await
    }
    async fn list(&self, range: &KvRange) -> Result<Vec<KvEntry>, StoreError> {
        self.kv.list(range).await
    }
    async fn count(&self, start: &str, end: &str) -> Result<usize, StoreError> {
        self.kv.count(start, end).await
    }
    async fn commit(&self, commit: KvCommit) -> Result<KvCommitted, StoreError> {
        let mut rows: std::collections::BTreeMap<String, Option<Vec<String>>> = Default::default();
        let mut index = Vec::new();
        for m in &commit.mutations {
            match m {
                KvMutation::Put { key, .. } if is_index_key(key) => index.push(key.clone()),
                KvMutation::Put { key, .. } if key.starts_with(kv::ROWS) => {
                    rows.insert(key.clone(), Some(Vec::new()));
                }
                KvMutation::Delete { key } if is_index_key(key) => {
                    return Err(StoreError::Backend(format!("index key {key} deleted")));
                }
                KvMutation::Delete { key } if key.starts_with(kv::ROWS) => {
                    rows.insert(key.clone(), None);
                }
                _ => {}
            }
        }
        for key in index {
            match rows.get_mut(&row_of(&key)) {
                Some(Some(keys)) => keys.push(key),
                _ => {
                    return Err(StoreError::Backend(format!(
                        "index key {key} without its row"
                    )))
                }
            }
        }
        let mut inner = KvCommit {
            checks: commit.checks,
            mutations: Vec::new(),
        };
        {
            let held = self.held.borrow();
            for row in rows.keys() {
                for old in held.get(row).into_iter().flatten() {
                    inner
                        .mutations
                        .push(KvMutation::Delete { key: old.clone() });
                }
            }
        }
        inner.mutations.extend(commit.mutations);
        let answer = self.kv.commit(inner).await?;
        if answer == KvCommitted::Applied {
            let mut held = self.held.borrow_mut();
            for (row, keys) in rows {
                match keys {
                    Some(keys) => held.insert(row, keys),
                    None => held.remove(&row),
                };
            }
        }
        Ok(answer)
    }
}

#[test]
fn kv_store_passes_the_whole_suite_on_a_backend_holding_index_keys_in_rows() {
    block_on(conformance::run_all(|| async {
        KvStore::new(Holding::default())
    }));
}

/// The held backend is strict enough to matter: a store that sent only the keys that
/// changed (as to an adapter) loses a row's other keys on it.
#[test]
fn a_row_written_with_only_its_changed_keys_loses_the_others_on_a_holding_backend() {
    let store = KvStore::new(Holding::default());
    let plan = fixture_plan(1, &RELAYS, Policy::All);
    block_on(store.enqueue(plan, 1_000)).expect("enqueue");
    let row = kv::row_key(&format!("{:064x}", 1));
    let keys = |store: &KvStore<Holding>| -> Vec<String> {
        store
            .backend()
            .kv
            .dump()
            .into_iter()
            .map(|(k, _)| k)
            .filter(|k| is_index_key(k))
            .collect()
    };
    assert_eq!(keys(&store).len(), 4, "{:?}", keys(&store));
    let value = store
        .backend()
        .kv
        .dump()
        .into_iter()
        .find(|(k, _)| *k == row)
        .expect("row")
        .1;
    let only_changed = KvCommit {
        checks: Vec::new(),
        mutations: vec![KvMutation::Put {
            key: row.clone(),
            value,
        }],
    };
    assert_eq!(
        block_on(store.backend().commit(only_changed)).expect("commit"),
        KvCommitted::Applied
    );
    assert_eq!(keys(&store), Vec::<String>::new());
    let deleted = KvCommit {
        checks: Vec::new(),
        mutations: vec![KvMutation::Delete {
            key: "T/pending/1/x".into(),
        }],
    };
    assert!(block_on(store.backend().commit(deleted)).is_err());
}

// ---------------------------------------------------------------------------------
// Backends for the tests: a shared memory backend, with optional defects and a hook
// that runs another store's operation just before the next commit.

type Hook = Pin<Box<dyn Future<Output = ()>>>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Defect {
    None,
    /// Commits without checking anything (a backend without compare-and-set).
    IgnoreChecks,
    /// Drops the checks of rows (`R/…`) only.
    IgnoreRowChecks,
    /// Drops the checks of slot locks (`K/…`) only.
    IgnoreLockChecks,
    /// Drops the checks of the lease rows and their lock (`Q/…`) only.
    IgnoreLeaseChecks,
    /// Lists in reverse key order whatever was asked.
    ReversedLists,
}

/// A handle on a shared [`MemoryKv`].
#[derive(Clone)]
struct Shared {
    kv: Rc<MemoryKv>,
    defect: Defect,
    /// Runs (once) before the next commit reaches the backend.
    hook: Rc<RefCell<Option<Hook>>>,
    /// Runs (once) before the next count reaches the backend.
    count_hook: Rc<RefCell<Option<Hook>>>,
    /// Answer every commit with a conflict.
    always_conflict: bool,
    commits: Rc<Cell<u32>>,
    conflicts: Rc<Cell<u32>>,
    /// Rows read (values under `r/…`), by `get_many` and `list`.
    rows_read: Rc<Cell<usize>>,
}

impl Shared {
    fn new(kv: Rc<MemoryKv>) -> Shared {
        Shared {
            kv,
            defect: Defect::None,
            hook: Rc::new(RefCell::new(None)),
            count_hook: Rc::new(RefCell::new(None)),
            always_conflict: false,
            commits: Rc::new(Cell::new(0)),
            conflicts: Rc::new(Cell::new(0)),
            rows_read: Rc::new(Cell::new(0)),
        }
    }

    fn with_defect(mut self, defect: Defect) -> Shared {
        self.defect = defect;
        self
    }

    fn before_next_commit(&self, hook: impl Future<Output = ()> + 'static) {
        *self.hook.borrow_mut() = Some(Box::pin(hook));
    }
}

impl KvBackend for Shared {
    fn limits(&self) -> KvLimits {
        self.kv.limits()
    }
    fn holds_index_keys(&self) -> bool {
        self.kv.holds_index_keys()
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<KvValue>>, StoreError> {
        let rows = keys.iter().filter(|k| k.starts_with(kv::ROWS)).count();
        self.rows_read.set(self.rows_read.get() + rows);
        self.kv.get_many(keys).await
    }

    async fn count(&self, start: &str, end: &str) -> Result<usize, StoreError> {
        let hook = self.count_hook.borrow_mut().take();
        if let Some(hook) = hook {
            hook.await;
        }
        self.kv.count(start, end).await
    }

    async fn list(&self, range: &KvRange) -> Result<Vec<KvEntry>, StoreError> {
        let listed = self.kv.list(range).await?;
        let rows = listed
            .iter()
            .filter(|e| e.key.starts_with(kv::ROWS))
            .count();
        self.rows_read.set(self.rows_read.get() + rows);
        if self.defect == Defect::ReversedLists {
            let mut all = self.kv.list(range).await?;
            all.reverse();
            return Ok(all);
        }
        self.kv.list(range).await
    }

    async fn commit(&self, mut commit: KvCommit) -> Result<KvCommitted, StoreError> {
        let hook = self.hook.borrow_mut().take();
        if let Some(hook) = hook {
            hook.await;
        }
        self.commits.set(self.commits.get() + 1);
        if self.always_conflict {
            self.conflicts.set(self.conflicts.get() + 1);
            return Ok(KvCommitted::Conflict);
        }
        match self.defect {
            Defect::IgnoreChecks => commit.checks.clear(),
            Defect::IgnoreRowChecks => commit.checks.retain(|c| !c.key.starts_with(kv::ROWS)),
            Defect::IgnoreLockChecks => commit.checks.retain(|c| !c.key.starts_with(kv::LOCK)),
            Defect::IgnoreLeaseChecks => commit.checks.retain(|c| !c.key.starts_with(kv::LEASES)),
            Defect::None | Defect::ReversedLists => {}
        }
        let done = self.kv.commit(commit).await?;
        if done == KvCommitted::Conflict {
            self.conflicts.set(self.conflicts.get() + 1);
        }
        Ok(done)
    }
}

/// Two stores over one backend: `a`'s commits can be preceded by a hook (`b`'s work).
fn two_stores(defect: Defect) -> (KvStore<Shared>, Rc<KvStore<Shared>>, Shared) {
    let kv = Rc::new(MemoryKv::new());
    let a = Shared::new(kv.clone()).with_defect(defect);
    let b = Shared::new(kv).with_defect(defect);
    (KvStore::new(a.clone()), Rc::new(KvStore::new(b)), a)
}

/// Makes `b` claim (up to one record, lease `lease-b`, at 2 000) just before `a`'s next
/// commit: what it got.
fn b_claims_before_next_commit(
    a_backend: &Shared,
    b: &Rc<KvStore<Shared>>,
) -> Rc<RefCell<Vec<nostr_outbox::core::Record>>> {
    let b_got = Rc::new(RefCell::new(Vec::new()));
    let (b, got) = (b.clone(), b_got.clone());
    a_backend.before_next_commit(async move {
        *got.borrow_mut() = b
            .claim(&fixture_claim("b", "lease-b", 1, 30_000), 2_000)
            .await
            .expect("b claims");
    });
    b_got
}

/// Two contexts claim the one record at once: `b` commits its claim between `a`'s
/// read and `a`'s commit. Exactly one of them must hold the lease.
async fn claimers_race(defect: Defect) -> Result<(), String> {
    let (a, b, a_backend) = two_stores(defect);
    a.enqueue(fixture_plan(1, &RELAYS, Policy::All), 1_000)
        .await
        .map_err(|e| e.to_string())?;
    let b_got = b_claims_before_next_commit(&a_backend, &b);
    let a_got = a
        .claim(&fixture_claim("a", "lease-a", 1, 30_000), 2_000)
        .await
        .map_err(|e| e.to_string())?;
    let b_got = b_got.borrow().clone();
    let stored = a
        .get(&fixture_plan(1, &RELAYS, Policy::All).id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("record gone")?;
    if a_got.len() + b_got.len() != 1 {
        return Err(format!(
            "both leased it: a got {}, b got {}",
            a_got.len(),
            b_got.len()
        ));
    }
    let owner = stored.lease.as_ref().map(|l| l.owner.clone());
    if owner.as_deref() != Some("b") || stored.revision != 2 {
        return Err(format!(
            "stored lease {owner:?} at revision {}",
            stored.revision
        ));
    }
    if a_backend.conflicts.get() == 0 {
        return Err("a's first commit did not conflict".into());
    }
    Ok(())
}

/// `b` claims the one record between `a`'s read for a reschedule and `a`'s commit:
/// `a` must see the lease and refuse, and the record stay leased to `b`.
async fn reschedule_race(defect: Defect) -> Result<(), String> {
    let (a, b, a_backend) = two_stores(defect);
    let plan = fixture_plan(1, &RELAYS, Policy::All);
    a.enqueue(plan.clone(), 1_000)
        .await
        .map_err(|e| e.to_string())?;
    let b_got = b_claims_before_next_commit(&a_backend, &b);
    match a.reschedule(&plan.id, 50_000, 2_000).await {
        Err(e) if e.code() == "in_flight" => {}
        other => {
            return Err(format!(
                "a's reschedule answered {:?}",
                other.map(|r| r.stage)
            ))
        }
    }
    let stored = a
        .get(&plan.id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("record gone")?;
    if b_got.borrow().len() != 1 {
        return Err("b did not lease it".into());
    }
    match stored.lease.as_ref().map(|l| l.owner.as_str()) {
        Some("b") if stored.stage == Stage::Leased => Ok(()),
        other => Err(format!("stored {:?} leased to {other:?}", stored.stage)),
    }
}

/// `a` records an answer within its lease (1 s from 500), and `b`, whose clock says the
/// lease has run out (at 2 000), claims the record between `a`'s read and `a`'s
/// commit: `a` must lose its claim, and the record stay leased to `b`.
async fn late_answer_race(defect: Defect) -> Result<(), String> {
    let (a, b, a_backend) = two_stores(defect);
    let plan = fixture_plan(1, &RELAYS, Policy::All);
    a.enqueue(plan.clone(), 100)
        .await
        .map_err(|e| e.to_string())?;
    let got = a
        .claim(&fixture_claim("a", "lease-a", 1, 1_000), 500)
        .await
        .map_err(|e| e.to_string())?;
    let mine = got.first().ok_or("a claimed nothing")?;
    let b_got = b_claims_before_next_commit(&a_backend, &b);
    let answer = accepted_by_all(mine, "lease-a");
    let done = a
        .complete_attempts(&[answer], &conformance::fixture_retry(), 1_400)
        .await;
    match done.first() {
        Some(Err(e)) if e.is_item_error() => {}
        other => {
            return Err(format!(
                "a's late answer was {:?}",
                other.map(|r| r.as_ref().map(|r| r.stage))
            ))
        }
    }
    if b_got.borrow().len() != 1 {
        return Err("b did not lease it".into());
    }
    let stored = a
        .get(&plan.id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("record gone")?;
    match stored.lease.as_ref().map(|l| l.owner.as_str()) {
        Some("b") if stored.stage == Stage::Leased => Ok(()),
        other => Err(format!("stored {:?} leased to {other:?}", stored.stage)),
    }
}

/// Two contexts enqueue versions of one replaceable slot at once: `b` commits one
/// version between `a`'s read of the slot and `a`'s commit of the other (`a` has the
/// newer one unless `b_newer`). `a` must see `b`'s version on its retry: exactly the
/// newer version may be sent, the older is superseded (or born superseded).
async fn slot_race(defect: Defect, b_newer: bool) -> Result<(), String> {
    let (a, b, a_backend) = two_stores(defect);
    let older = nostr_plan(nostr_event(1, ALICE, 0, 100, "", &[]));
    let newer = nostr_plan(nostr_event(2, ALICE, 0, 200, "", &[]));
    let (mine, theirs) = if b_newer {
        (older.clone(), newer.clone())
    } else {
        (newer.clone(), older.clone())
    };
    {
        let b = b.clone();
        a_backend.before_next_commit(async move {
            b.enqueue(theirs, 1_000).await.expect("b enqueues");
        });
    }
    let answer = a.enqueue(mine, 1_000).await.map_err(|e| e.to_string())?;
    let get = async |plan: &Plan| {
        a.get(&plan.id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("`{}` missing", plan.id))
    };
    let (older_now, newer_now) = (get(&older).await?, get(&newer).await?);
    if older_now.stage != Stage::Superseded || newer_now.stage != Stage::Pending {
        return Err(format!(
            "older is {}, newer is {}: both versions may be sent",
            older_now.stage, newer_now.stage
        ));
    }
    let want = if b_newer {
        EnqueueOutcome::Superseded
    } else {
        EnqueueOutcome::Created
    };
    if answer.outcome != want {
        return Err(format!("a's enqueue answered {:?}", answer.outcome));
    }
    Ok(())
}

/// Two contexts enqueue different plans under one item id at once (`b` commits
/// between `a`'s read and commit): one is created, the other is a `plan_conflict`.
async fn same_id_race(defect: Defect) -> Result<(), String> {
    let (a, b, a_backend) = two_stores(defect);
    let mine = fixture_plan(1, &RELAYS, Policy::All);
    let mut theirs = fixture_plan(1, &RELAYS, Policy::Any);
    theirs.id = mine.id.clone();
    {
        let b = b.clone();
        a_backend.before_next_commit(async move {
            b.enqueue(theirs, 1_000).await.expect("b enqueues");
        });
    }
    match a.enqueue(mine.clone(), 1_000).await {
        Err(e) if e.code() == "plan_conflict" => {}
        other => return Err(format!("a's enqueue answered {other:?}")),
    }
    let stored = a.get(&mine.id).await.map_err(|e| e.to_string())?;
    match stored.map(|r| r.policy) {
        Some(Policy::Any) => Ok(()),
        other => Err(format!("stored policy {other:?}")),
    }
}

#[test]
fn an_enqueue_that_loses_an_id_race_conflicts() {
    block_on(same_id_race(Defect::None)).expect("one plan per id");
    let err = block_on(same_id_race(Defect::IgnoreRowChecks)).expect_err("overwrites");
    assert!(err.contains("answered Ok"), "{err}");
}

#[test]
fn a_claim_that_loses_a_race_retries_and_leases_nothing() {
    block_on(claimers_race(Defect::None)).expect("one lease");
}

#[test]
fn an_enqueue_that_loses_a_slot_race_retries_and_supersedes() {
    block_on(slot_race(Defect::None, false)).expect("the newer version wins");
    block_on(slot_race(Defect::None, true)).expect("the newer version wins");
}

#[test]
fn the_race_tests_catch_a_backend_without_compare_and_set() {
    let err = block_on(claimers_race(Defect::IgnoreChecks)).expect_err("both lease");
    assert!(err.contains("both leased"), "{err}");
    for b_newer in [false, true] {
        let err = block_on(slot_race(Defect::IgnoreChecks, b_newer)).expect_err("both versions");
        assert!(err.contains("both versions may be sent"), "{err}");
    }
}

#[test]
fn each_guard_is_what_wins_its_race() {
    // A claim leaves the record's row as it is and writes a lease row: the lease rows'
    // lock keeps two claims of one record apart; row checks and slot locks are not
    // involved.
    let err = block_on(claimers_race(Defect::IgnoreLeaseChecks)).expect_err("both lease");
    assert!(err.contains("both leased"), "{err}");
    block_on(claimers_race(Defect::IgnoreRowChecks)).expect("the lease lock suffices");
    block_on(claimers_race(Defect::IgnoreLockChecks)).expect("the lease lock suffices");
    // And keeps a claim and another write of the record apart: a reschedule whose read
    // came before another context's claim, and its commit after, is read again and
    // refused (`in_flight`), whatever the rows' versions say.
    block_on(reschedule_race(Defect::None)).expect("refused while leased");
    block_on(reschedule_race(Defect::IgnoreRowChecks)).expect("the lease lock suffices");
    let err = block_on(reschedule_race(Defect::IgnoreLeaseChecks)).expect_err("rescheduled");
    assert!(err.contains("reschedule answered Ok"), "{err}");
    // A late answer and a claim of its record after the lease ran out: the claim's
    // new lease entry drops the first lease's, so the answer's commit, which drops it
    // too, meets a changed lease row (and the rows' lock) and reads again.
    block_on(late_answer_race(Defect::None)).expect("the late answer loses");
    block_on(late_answer_race(Defect::IgnoreRowChecks)).expect("the lease rows suffice");
    let err = block_on(late_answer_race(Defect::IgnoreLeaseChecks)).expect_err("answer wins");
    assert!(err.contains("late answer was Some(Ok"), "{err}");
    // A new version is a new key no row check sees: the slot's lock keeps two versions
    // apart.
    for b_newer in [false, true] {
        let err = block_on(slot_race(Defect::IgnoreLockChecks, b_newer)).expect_err("no lock");
        assert!(err.contains("both versions may be sent"), "{err}");
        block_on(slot_race(Defect::IgnoreRowChecks, b_newer)).expect("the lock suffices");
    }
}

#[test]
fn a_backend_that_always_conflicts_ends_in_a_typed_error_with_nothing_written() {
    let kv = Rc::new(MemoryKv::new());
    let seeded = KvStore::new(Shared::new(kv.clone()));
    block_on(seeded.enqueue(fixture_plan(1, &RELAYS, Policy::All), 1_000)).expect("seed");
    let before = kv.dump();
    let mut backend = Shared::new(kv.clone());
    backend.always_conflict = true;
    let store = KvStore::new(backend.clone());
    let err = block_on(store.enqueue(fixture_plan(2, &RELAYS, Policy::All), 1_000))
        .expect_err("never commits");
    assert!(matches!(err, StoreError::Blocked(_)), "{err:?}");
    assert_eq!(err.code(), "storage_blocked");
    assert_eq!(backend.commits.get(), MAX_COMMIT_TRIES);
    let err = block_on(store.claim(&fixture_claim("o", "l", 5, 30_000), 2_000))
        .expect_err("never commits");
    assert!(matches!(err, StoreError::Blocked(_)), "{err:?}");
    let err = block_on(store.cancel(&fixture_plan(1, &RELAYS, Policy::All).id, 2_000))
        .expect_err("never commits");
    assert!(matches!(err, StoreError::Blocked(_)), "{err:?}");
    assert_eq!(kv.dump(), before, "nothing written");
    // Reads need no commit.
    assert_eq!(block_on(store.status()).expect("status").pending, 1);
}

fn plans(from: u32, n: u32) -> Vec<Plan> {
    (from..from + n)
        .map(|i| fixture_plan(i, &RELAYS, Policy::All))
        .collect()
}

#[test]
fn a_batch_over_the_commit_limits_is_refused_and_writes_nothing() {
    // Deno KV: 100 checks per atomic operation, one per plan.
    let store = KvStore::new(MemoryKv::with_limits(KvLimits::DENO_KV));
    let err = block_on(store.enqueue_many(plans(0, 101), 1_000)).expect_err("too large");
    assert_eq!(err.code(), "invalid_argument", "{err}");
    assert!(err.to_string().contains("101 checks"), "{err}");
    assert!(store.backend().is_empty(), "nothing written");
    // And 80 KiB of keys: with item ids of 128 characters a record's row and index
    // keys are some 800 bytes, so 100 such plans do not fit.
    let long_ids = |n: u32| -> Vec<Plan> {
        plans(0, n)
            .into_iter()
            .map(|p| {
                let id = format!("{}{}", p.id, "x".repeat(64));
                p.with_id(id)
            })
            .collect()
    };
    let err = block_on(store.enqueue_many(long_ids(100), 1_000)).expect_err("too many keys");
    assert!(err.to_string().contains("bytes of keys"), "{err}");
    assert!(store.backend().is_empty(), "nothing written");
    block_on(store.enqueue_many(long_ids(70), 1_000)).expect("70 fit");
    // With the default item id (the event id, 64 characters), the checks are the only
    // bound: 100 plans fit (key layout 2, with ids in hex, took about 74).
    let store = KvStore::new(MemoryKv::with_limits(KvLimits::DENO_KV));
    assert_eq!(
        block_on(store.enqueue_many(plans(0, 100), 1_000))
            .expect("fits")
            .len(),
        100
    );
    assert_eq!(block_on(store.status()).expect("status").pending, 100);

    // Mutations: a new regular record is its row and 4 index keys.
    let limits = KvLimits {
        max_mutations: 20,
        ..KvLimits::UNLIMITED
    };
    let store = KvStore::new(MemoryKv::with_limits(limits));
    let err = block_on(store.enqueue_many(plans(0, 5), 1_000)).expect_err("25 mutations");
    assert_eq!(err.code(), "invalid_argument");
    assert!(err.to_string().contains("25 mutations"), "{err}");
    assert!(store.backend().is_empty(), "nothing written");
    block_on(store.enqueue_many(plans(0, 4), 1_000)).expect("20 mutations fit");

    // A value over the limit (a large event) is refused too.
    let limits = KvLimits {
        max_value_bytes: 2_000,
        ..KvLimits::UNLIMITED
    };
    let store = KvStore::new(MemoryKv::with_limits(limits));
    let mut big = fixture_plan(1, &RELAYS, Policy::All);
    big.event.raw = format!(r#"{{"content":"{}"}}"#, "x".repeat(4_000));
    let err = block_on(store.enqueue(big, 1_000)).expect_err("value too large");
    assert_eq!(err.code(), "invalid_argument");
    assert!(store.backend().is_empty(), "nothing written");
}

#[test]
fn an_address_too_long_for_the_storage_is_a_typed_refusal() {
    // Deno KV refuses keys over 2 KB (to reads too): an addressable event whose `d` tag
    // makes a longer slot key, or a deletion naming such an address, is refused before
    // anything is read, with `invalid_argument`, and nothing is written.
    let store = KvStore::new(MemoryKv::with_limits(KvLimits::DENO_KV));
    let article = |n, d: &str| nostr_plan(nostr_event(n, ALICE, 30_023, 100, d, &[]));
    // A slot key is its address plus some 220 bytes, a key at most 2 031: ASCII and
    // non-ASCII `d` tags of 1 800 bytes fit (key layout 2, in hex, took about 800).
    block_on(store.enqueue(article(1, &"x".repeat(1_800)), 1_000)).expect("1 800 bytes fit");
    block_on(store.enqueue(article(5, &"é".repeat(900)), 1_000)).expect("1 800 bytes of é");
    let long = "x".repeat(1_900);
    let err = block_on(store.enqueue(article(2, &long), 1_000)).expect_err("a 1900-byte d tag");
    assert_eq!(err.code(), "invalid_argument");
    assert!(err.to_string().contains("`d` tag"), "{err}");
    let address = format!("30023:{ALICE}:{long}");
    let deletion = nostr_plan(nostr_event(3, ALICE, 5, 200, "", &[address.as_str()]));
    let err = block_on(store.enqueue_many(vec![article(4, "short"), deletion], 1_000))
        .expect_err("a deletion naming it");
    assert_eq!(err.code(), "invalid_argument");
    assert_eq!(
        block_on(store.status()).expect("status").total(),
        2,
        "nothing written"
    );
    // Where keys are not limited, any `d` tag is stored.
    let unlimited = KvStore::new(MemoryKv::new());
    block_on(unlimited.enqueue(article(2, &"x".repeat(100_000)), 1_000)).expect("stored");
}

#[test]
fn claims_and_purges_over_the_commit_limits_take_what_fits() {
    let limits = KvLimits {
        max_mutations: 20,
        max_checks: 5,
        ..KvLimits::UNLIMITED
    };
    let store = KvStore::new(MemoryKv::with_limits(limits));
    for chunk in plans(0, 12).chunks(4) {
        block_on(store.enqueue_many(chunk.to_vec(), 1_000)).expect("enqueue");
    }
    // A claim checks each record's row and the lease rows' lock (and writes one lease
    // row and the lock): 4 records fit in 5 checks.
    let got = block_on(store.claim(&fixture_claim("o", "l", 10, 30_000), 2_000)).expect("claim");
    assert_eq!(got.len(), 4, "what fits in one commit");
    assert_eq!(block_on(store.status()).expect("status").leased, 4);
    for r in block_on(store.list(&nostr_outbox::core::ListQuery {
        stage: Some(Stage::Pending),
        after: None,
        limit: 100,
        ..Default::default()
    }))
    .expect("list")
    {
        block_on(store.cancel(&r.id, 3_000)).expect("cancel");
    }
    // Purge deletes the row and its 4 index keys: 4 per commit, 8 in two commits.
    let commits = store.backend().applied_commits();
    assert_eq!(block_on(store.purge(10_000)).expect("purge"), 8);
    assert_eq!(store.backend().applied_commits() - commits, 2);
    assert_eq!(block_on(store.status()).expect("status").leased, 4);
}

#[test]
fn corrupt_rows_are_reported_skipped_and_kept() {
    let store = store();
    block_on(store.enqueue(fixture_plan(1, &RELAYS, Policy::All), 1_000)).expect("enqueue");
    let kv = store.backend();
    kv.put_raw(
        &kv::row_key("broken"),
        r#"{"id":"broken","stage":"pending"}"#,
    );
    kv.put_raw(
        &kv::due_key(1, 500, 500, "broken"),
        "", // filed as due before the healthy record
    );
    let err = block_on(store.get("broken")).expect_err("corrupt");
    assert_eq!(err.code(), "corrupt_record");
    let got = block_on(store.claim(&fixture_claim("o", "l", 5, 30_000), 2_000)).expect("claim");
    assert_eq!(
        got.len(),
        1,
        "the healthy record is claimed past the corrupt one"
    );
    let counts = block_on(store.status()).expect("status");
    assert_eq!((counts.leased, counts.corrupt), (1, 1));
    let rows = block_on(store.corrupt_rows()).expect("corrupt rows");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].id, "broken");
    assert_eq!(rows[0].stage, Some(Stage::Pending));
    let err = block_on(store.cancel("broken", 3_000)).expect_err("not rewritten");
    assert_eq!(err.code(), "corrupt_record");
    assert!(block_on(store.get("broken")).is_err(), "kept");
}

/// The suite (run whole) against a store over a defective backend: the message of its
/// failure.
fn suite_fails_on(defect: Defect) -> String {
    let result = catch_unwind(AssertUnwindSafe(|| {
        block_on(conformance::run_all(|| async move {
            KvStore::new(Shared::new(Rc::new(MemoryKv::new())).with_defect(defect))
        }))
    }));
    match result {
        Ok(()) => panic!("the suite passed a broken backend"),
        Err(e) => e
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "<non-string panic>".into()),
    }
}

#[test]
fn the_suite_catches_a_backend_that_lists_out_of_order() {
    let msg = suite_fails_on(Defect::ReversedLists);
    assert!(msg.contains("store conformance case"), "{msg}");
}

mod key_order {
    use super::kv;
    use proptest::prelude::*;

    /// Item ids (1..=128 of `[A-Za-z0-9._:-]`) and event ids (64 hex digits).
    fn id() -> impl Strategy<Value = String> {
        prop_oneof![
            "[A-Za-z0-9:._-]{1,12}",
            "[A-Za-z0-9:._-]{120,128}",
            "[0-9a-f]{64}",
        ]
    }

    fn time() -> impl Strategy<Value = u64> {
        prop_oneof![
            0u64..3,
            any::<u64>(),
            1_700_000_000_000u64..1_700_000_000_010
        ]
    }

    proptest! {
        #[test]
        fn any_text_is_written_without_separators_and_read_back(text in any::<String>()) {
            // Slots hold any `d` tag: escaped where it would break the layout.
            let key = kv::row_key(&text);
            prop_assert_eq!(kv::id_of(&key), Some(text.clone()));
            let written = &key[kv::ROWS.len()..];
            prop_assert!(!written.contains('/') && written.chars().all(|c| c >= '%'));
            let other = format!("{text}/x");
            let prefix = kv::lock_key(&text) + "/";
            prop_assert!(!kv::lock_key(&other).starts_with(&prefix));
        }

        #[test]
        fn claim_keys_sort_in_claim_order(
            a in (0u8..3, time(), time(), id()),
            b in (0u8..3, time(), time(), id()),
        ) {
            let ka = kv::due_key(a.0, a.1, a.2, &a.3);
            let kb = kv::due_key(b.0, b.1, b.2, &b.3);
            prop_assert_eq!(ka.cmp(&kb), (a.0, a.1, a.2, &a.3).cmp(&(b.0, b.1, b.2, &b.3)));
            prop_assert_eq!(kv::due_of(&ka), Some(a.1));
            prop_assert_eq!(kv::id_of(&ka), Some(a.3.clone()));
            prop_assert!(ka.starts_with(kv::DUE) && ka.is_ascii());
        }

        #[test]
        fn list_and_stage_keys_sort_in_list_order(
            a in (time(), id()),
            b in (time(), id()),
        ) {
            let order = (a.0, &a.1).cmp(&(b.0, &b.1));
            prop_assert_eq!(kv::created_key(a.0, &a.1).cmp(&kv::created_key(b.0, &b.1)), order);
            prop_assert_eq!(
                kv::stage_key("pending", a.0, &a.1).cmp(&kv::stage_key("pending", b.0, &b.1)),
                order
            );
            // The successor of a key comes after it and before every greater key.
            let (ka, kb) = (kv::created_key(a.0, &a.1), kv::created_key(b.0, &b.1));
            let next = kv::after(&ka);
            prop_assert!(next > ka);
            if kb > ka {
                prop_assert!(next < kb);
            }
        }

        #[test]
        fn slot_keys_sort_newest_first_within_their_slot_and_part(
            slot_a in any::<String>(), slot_b in any::<String>(),
            a in (time(), id(), id()),
            b in (time(), id(), id()),
            part in 0u8..3,
        ) {
            let ka = kv::slot_key(&slot_a, part, a.0, &a.1, &a.2);
            let kb = kv::slot_key(&slot_a, part, b.0, &b.1, &b.2);
            // Newest created_at first, then the lower event id, then the item id.
            let want = (std::cmp::Reverse(a.0), &a.1, &a.2)
                .cmp(&(std::cmp::Reverse(b.0), &b.1, &b.2));
            prop_assert_eq!(ka.cmp(&kb), want);
            // A slot's prefix holds its keys and no other slot's.
            let prefix = kv::slot_prefix(&slot_a, part);
            prop_assert!(ka.starts_with(&prefix) && ka < kv::prefix_end(&prefix));
            let other = kv::slot_key(&slot_b, part, b.0, &b.1, &b.2);
            prop_assert_eq!(other.starts_with(&prefix), slot_a == slot_b);
            prop_assert_eq!(
                kv::event_key(&a.1, &a.2).starts_with(&kv::event_prefix(&b.1)),
                a.1 == b.1
            );
        }
    }
}

#[test]
fn the_key_order_test_catches_an_unpadded_encoding() {
    // Unpadded numbers (what the padding prevents) sort 10 before 9.
    let unpadded = |due: u64, id: &str| format!("P/1/{due}/{id}");
    assert!(unpadded(10, "a") < unpadded(9, "a"));
    assert!(kv::due_key(1, 10, 0, "a") > kv::due_key(1, 9, 0, "a"));
    // Unescaped text with a separator would mix slots: "a/b" + "c" vs "a" + "b/c".
    assert_ne!(kv::slot_prefix("a/b", 1), kv::slot_prefix("a", 1));
    assert!(!kv::slot_key("a/b", 1, 0, "e", "i").starts_with(&kv::slot_prefix("a", 1)));
}

#[test]
fn memory_kv_keeps_the_contract() {
    use kv::{KvCheck, KvMutation};
    let kv = MemoryKv::new();
    let put = |key: &str, value: &str| KvMutation::Put {
        key: key.into(),
        value: value.into(),
    };
    let commit = |checks: Vec<KvCheck>, mutations: Vec<KvMutation>| {
        block_on(kv.commit(KvCommit { checks, mutations })).expect("commit")
    };
    let absent = |key: &str| KvCheck {
        key: key.into(),
        version: None,
    };
    assert_eq!(
        commit(
            vec![absent("a")],
            vec![put("a", "1"), put("b", "2"), put("c", "3")]
        ),
        KvCommitted::Applied
    );
    // A failed check writes nothing.
    assert_eq!(
        commit(vec![absent("a")], vec![put("d", "4")]),
        KvCommitted::Conflict
    );
    let got = block_on(kv.get_many(&["a".into(), "d".into()])).expect("get");
    let a = got[0].clone().expect("a");
    assert_eq!((a.value.as_str(), got[1].clone()), ("1", None));
    // A version check holds until the key is written again.
    let at = |version: &str| KvCheck {
        key: "a".into(),
        version: Some(version.into()),
    };
    assert_eq!(
        commit(vec![at(&a.version)], vec![put("a", "5")]),
        KvCommitted::Applied
    );
    assert_eq!(
        commit(
            vec![at(&a.version)],
            vec![KvMutation::Delete { key: "b".into() }]
        ),
        KvCommitted::Conflict
    );
    let range = |start: &str, end: &str, limit: u32, reverse: bool| {
        block_on(kv.list(&KvRange {
            start: start.into(),
            end: end.into(),
            limit,
            reverse,
        }))
        .expect("list")
        .into_iter()
        .map(|e| e.key)
        .collect::<Vec<_>>()
    };
    assert_eq!(range("a", "c", 10, false), ["a", "b"]);
    assert_eq!(range("a", "z", 2, false), ["a", "b"]);
    assert_eq!(range("a", "z", 2, true), ["c", "b"]);
    assert!(range("c", "a", 2, false).is_empty());
    // Over its limits it refuses the commit as an error and writes nothing.
    let small = MemoryKv::with_limits(KvLimits {
        max_mutations: 1,
        ..KvLimits::UNLIMITED
    });
    let err = block_on(small.commit(KvCommit {
        checks: Vec::new(),
        mutations: vec![put("x", ""), put("y", "")],
    }))
    .expect_err("too many");
    assert_eq!(err.code(), "storage");
    assert!(small.is_empty());
}

/// The key-value store answers every operation exactly as the memory store (the
/// reference) does, over random sequences of operations, under Deno KV's limits.
mod same_as_reference {
    use super::*;
    use crate::reference_store::ReferenceStore;
    use nostr_outbox::core::{
        ClaimRequest, Completion, ListQuery, Outcome, RejectReason, TargetResult,
    };
    use nostr_outbox::store::conformance::{fixture_retry, BOB};
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        /// Plans by number: < 8 regular events, else versions of two replaceable slots
        /// and deletions.
        Enqueue(Vec<u8>),
        Claim(u32, String),
        /// Completes the `i`th record of the last claim with one outcome for all targets.
        Complete(usize, u8),
        Release(usize),
        Cancel(u8),
        Retry(u8),
        RelayBack(usize),
        Purge(u64),
        List(Option<usize>, u32, bool),
        TakeOver(String),
    }

    fn op() -> impl Strategy<Value = Op> {
        let owner = prop::sample::select(vec!["a".to_string(), "b".to_string()]);
        prop_oneof![
            3 => prop::collection::vec(0u8..20, 1..4).prop_map(Op::Enqueue),
            2 => (1u32..4, owner.clone()).prop_map(|(l, o)| Op::Claim(l, o)),
            2 => (0usize..4, 0u8..5).prop_map(|(i, o)| Op::Complete(i, o)),
            1 => (0usize..4).prop_map(Op::Release),
            1 => (0u8..20).prop_map(Op::Cancel),
            1 => (0u8..20).prop_map(Op::Retry),
            1 => (0usize..3).prop_map(Op::RelayBack),
            1 => (0u64..200_000).prop_map(Op::Purge),
            1 => (prop::option::of(0usize..7), 1u32..5, any::<bool>())
                .prop_map(|(s, l, c)| Op::List(s, l, c)),
            1 => owner.prop_map(Op::TakeOver),
        ]
    }

    fn plan(n: u8) -> Plan {
        let n32 = u32::from(n);
        match n {
            0..8 => fixture_plan(n32, &RELAYS, Policy::Any),
            8..14 => nostr_plan(nostr_event(n32, ALICE, 0, 100 + u64::from(n % 3), "", &[])),
            14..18 => nostr_plan(nostr_event(n32, BOB, 30_000, u64::from(n), "x", &[])),
            _ => {
                let address = format!("0:{ALICE}:");
                let named = format!("{:064x}", 2);
                nostr_plan(nostr_event(n32, ALICE, 5, 105, "", &[&address, &named]))
            }
        }
    }

    /// An answer as compared: an error by its code (a message may name any of several
    /// records that justify it, e.g. which newer version forbids a retry: the first in
    /// the store's read order, which is id order in the memory store and newest first
    /// here).
    fn show<T: std::fmt::Debug>(answer: Result<T, StoreError>) -> String {
        match answer {
            Ok(v) => format!("Ok({v:?})"),
            Err(e) => format!("Err({})", e.code()),
        }
    }

    fn id(n: u8) -> String {
        plan(n).id
    }

    async fn run<S: Store>(s: &S, ops: &[Op]) -> Vec<String> {
        let mut out = Vec::new();
        let mut now = 1_000u64;
        let mut claimed: Vec<nostr_outbox::core::Record> = Vec::new();
        for (step, op) in ops.iter().enumerate() {
            now += 7_000;
            let answer = match op {
                Op::Enqueue(ns) => show(
                    s.enqueue_many(ns.iter().map(|&n| plan(n)).collect(), now)
                        .await,
                ),
                Op::Claim(limit, owner) => {
                    let request = ClaimRequest {
                        owner: owner.clone(),
                        lease_id: format!("lease-{step}"),
                        limit: *limit,
                        lease_ms: 20_000,
                        ..Default::default()
                    };
                    let got = s.claim(&request, now).await;
                    if let Ok(got) = &got {
                        claimed = got.clone();
                    }
                    show(got)
                }
                Op::Complete(i, outcome) => match claimed.get(*i) {
                    None => "none".into(),
                    Some(r) => {
                        let outcome = match outcome {
                            0 => Outcome::Accepted,
                            1 => Outcome::Error,
                            2 => Outcome::Unreachable,
                            3 => Outcome::Rejected(RejectReason::ALL[0]),
                            _ => Outcome::RateLimited,
                        };
                        let completion = Completion {
                            id: r.id.clone(),
                            lease_id: r.lease.as_ref().map(|l| l.id.clone()).unwrap_or_default(),
                            revision: r.revision,
                            results: r
                                .targets
                                .iter()
                                .map(|t| TargetResult {
                                    target: t.clone(),
                                    outcome,
                                    message: String::new(),
                                })
                                .collect(),
                            jitter: 0,
                        };
                        show(s.complete_attempt(&completion, &fixture_retry(), now).await)
                    }
                },
                Op::Release(i) => match claimed.get(*i) {
                    None => "none".into(),
                    Some(r) => {
                        let lease = r.lease.as_ref().map(|l| l.id.clone()).unwrap_or_default();
                        show(s.release(&r.id, &lease, r.revision, now).await)
                    }
                },
                Op::Cancel(n) => show(s.cancel(&id(*n), now).await),
                Op::Retry(n) => show(s.retry(&id(*n), now).await),
                Op::RelayBack(i) => show(s.relay_back(RELAYS[*i], now).await),
                Op::Purge(age) => show(s.purge(now.saturating_sub(*age)).await),
                Op::List(stage, limit, cursor) => {
                    let query = ListQuery {
                        stage: stage.map(|i| Stage::ALL[i]),
                        limit: *limit,
                        after: cursor.then(|| id(0)),
                        ..Default::default()
                    };
                    show(s.list(&query).await)
                }
                Op::TakeOver(owner) => {
                    let request = ClaimRequest {
                        owner: owner.clone(),
                        lease_id: format!("takeover-{step}"),
                        limit: 3,
                        lease_ms: 20_000,
                        ..Default::default()
                    };
                    show(s.take_over(&request, now).await)
                }
            };
            out.push(format!("{op:?} → {answer}"));
            out.push(format!("status {}", show(s.status().await)));
            out.push(format!("next due {}", show(s.next_due(0).await)));
        }
        out
    }

    /// The comparison sees what a store gets wrong: a backend listing out of order
    /// answers a claim differently; a fixed sequence does real work in both.
    #[test]
    fn the_comparison_catches_a_backend_that_lists_out_of_order() {
        let ops = vec![
            Op::Enqueue(vec![0, 1, 8, 9, 14]),
            Op::Claim(3, "a".into()),
            Op::Complete(0, 0),
            Op::Complete(1, 1),
            Op::Enqueue(vec![10, 19]),
            Op::List(None, 4, false),
            Op::Purge(0),
        ];
        let want = block_on(run(&ReferenceStore::new(), &ops));
        assert!(
            want[0].contains("Ok(") && want[3].contains("Ok("),
            "{want:?}"
        );
        assert!(want.iter().any(|a| a.contains("Satisfied")), "{want:?}");
        let good = block_on(run(&KvStore::new(MemoryKv::new()), &ops));
        assert_eq!(good, want);
        let broken =
            KvStore::new(Shared::new(Rc::new(MemoryKv::new())).with_defect(Defect::ReversedLists));
        assert_ne!(block_on(run(&broken, &ops)), want);
    }

    /// The reference model keeps every rule the suite checks, so agreeing with it means
    /// something.
    #[test]
    fn the_reference_model_passes_the_conformance_suite() {
        block_on(conformance::run_all(|| async { ReferenceStore::new() }));
    }

    proptest! {
        #![proptest_config(crate::proptest_config::cases(64))]
        #[test]
        fn kv_store_answers_as_the_reference_model(ops in prop::collection::vec(op(), 1..40)) {
            let want = block_on(run(&ReferenceStore::new(), &ops));
            let got = block_on(run(
                &KvStore::new(MemoryKv::with_limits(KvLimits::DENO_KV)),
                &ops,
            ));
            for (w, g) in want.iter().zip(&got) {
                prop_assert_eq!(w, g);
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Key layouts 1 and 2 → 3. `tests/data/kv_v1_entries.json` holds every entry the build
// of a6161fd (layout 1: claim order under `d/`, rows without `rank`) wrote for 8 records
// in 6 stages (tests/gen_v2_fixture.rs at that commit made it);
// `tests/data/kv_v2_entries.json` every entry the build of 2a75019 (layout 2: ids in
// hex, rows in format 2) wrote for 11 records (tests/gen_kv_v2_fixture.rs at cd21ad1).

/// A store holding `fixture`'s entries, and the records its old rows hold.
fn old_layout_store(fixture: &str) -> (KvStore<MemoryKv>, Vec<nostr_outbox::core::Record>) {
    let text = std::fs::read_to_string(fixture).expect("fixture");
    let entries: Vec<(String, String)> = serde_json::from_str(&text).expect("fixture json");
    let kv = MemoryKv::new();
    let mut records = Vec::new();
    for (key, value) in &entries {
        kv.put_raw(key, value);
        if let Some(id) = kv::old_row_id(key) {
            let (record, _) = nostr_outbox::store::codec::read_row(&id, value).expect("decodes");
            records.push(record);
        }
    }
    (KvStore::new(kv), records)
}

fn keys_under(store: &KvStore<MemoryKv>, prefix: &str) -> Vec<String> {
    store
        .backend()
        .dump()
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with(prefix))
        .collect()
}

/// What every migration must show: before it the store sees nothing; after it every
/// record reads back unchanged, no key of the old layouts is left (but `left` keys that
/// name no id), and a second run finds nothing. `corrupt` rows that do not decode move
/// too.
fn migrate_and_check(
    store: &KvStore<MemoryKv>,
    records: &[nostr_outbox::core::Record],
    corrupt: usize,
    left: usize,
) {
    let old_keys = |store: &KvStore<MemoryKv>| {
        store
            .backend()
            .dump()
            .into_iter()
            .filter(|(k, _)| {
                kv::OLD_RANGES
                    .iter()
                    .any(|(a, b)| k.as_str() >= *a && k.as_str() < *b)
            })
            .count()
    };
    assert!(
        old_keys(store) > records.len(),
        "index keys of the old layout"
    );
    assert_eq!(block_on(store.status()).expect("status").total(), 0);
    let moved = block_on(store.migrate()).expect("migrate");
    assert_eq!(moved as usize, records.len() + corrupt);
    assert_eq!(old_keys(store), left, "no key of the old layouts is left");
    assert_eq!(block_on(store.migrate()).expect("again"), 0, "idempotent");
    for want in records {
        let got = block_on(store.get(&want.id)).expect("get").expect("kept");
        assert_eq!(&got, want);
    }
    let status = block_on(store.status()).expect("status");
    assert_eq!(status.corrupt as usize, corrupt);
    assert_eq!(status.total() as usize, records.len() + corrupt);
}

#[test]
fn a_layout_1_store_is_migrated_in_place_and_keeps_every_record() {
    let (store, records) = old_layout_store("tests/data/kv_v1_entries.json");
    assert_eq!(
        keys_under(&store, "d/").len(),
        5,
        "5 records are not terminal"
    );
    migrate_and_check(&store, &records, 0, 0);
    assert_eq!(
        keys_under(&store, "P/1/").len(),
        5,
        "filed under normal priority"
    );
    // Claims, lists and next_due see the migrated records; the leased one (#4, lease
    // until t0 + 100 + 60 000) comes back after its lease.
    let ids: Vec<String> = (1..=8u32).map(|n| format!("{n:064x}")).collect();
    let t0 = 1_700_000_000_000u64;
    assert_eq!(block_on(store.next_due(0)).expect("next_due"), Some(t0 + 6));
    let claimed =
        block_on(store.claim(&fixture_claim("o", "l", 10, 1_000), t0 + 70_000_000)).expect("claim");
    let got: Vec<&str> = claimed.iter().map(|r| r.id.as_str()).collect();
    let want: Vec<&str> = [6, 7, 8, 2, 4]
        .iter()
        .map(|n| ids[*n - 1].as_str())
        .collect();
    assert_eq!(got, want, "every non-terminal record, in claim order");
    let page = block_on(store.list(&nostr_outbox::core::ListQuery {
        limit: 100,
        lane: Some("default".into()),
        ..Default::default()
    }))
    .expect("list");
    assert_eq!(page.len(), 8, "every record is in the default lane");
}

#[test]
fn a_layout_2_store_is_migrated_in_place_and_keeps_every_record() {
    let (store, records) = old_layout_store("tests/data/kv_v2_entries.json");
    assert_eq!(records.len(), 11);
    // A row that does not decode is moved as it is (and still reported), also one whose
    // key is not hex of an id (its id is then the key's text).
    let broken = format!("r/{}", "6e6f7065"); // "nope"
    store.backend().put_raw(&broken, "{not json");
    store.backend().put_raw("r/zz", "{}");
    migrate_and_check(&store, &records, 2, 0);
    let moved: Vec<(String, String)> = store
        .backend()
        .dump()
        .into_iter()
        .filter(|(k, _)| k == "R/nope" || k == "R/zz")
        .collect();
    assert_eq!(
        moved,
        vec![
            ("R/nope".to_string(), "{not json".to_string()),
            ("R/zz".to_string(), "{}".to_string())
        ]
    );
    let corrupt = block_on(store.corrupt_rows()).expect("corrupt rows");
    assert_eq!(corrupt.len(), 2, "{corrupt:?}");
    // Records 1 (high) … 11: the claim order holds across priorities and due times.
    let t0 = 1_700_000_000_000u64;
    let id = |n: u32| format!("{n:064x}");
    let long = format!("long.{}", "x".repeat(120));
    assert_eq!(block_on(store.next_due(0)).expect("next_due"), Some(t0 + 6));
    let claimed =
        block_on(store.claim(&fixture_claim("o", "l", 10, 1_000), t0 + 70_000_000)).expect("claim");
    let got: Vec<String> = claimed.iter().map(|r| r.id.clone()).collect();
    assert_eq!(got, vec![id(8), id(9), id(2), id(4), long], "claim order");
    let dm = block_on(store.list(&nostr_outbox::core::ListQuery {
        limit: 100,
        lane: Some("dm".into()),
        ..Default::default()
    }))
    .expect("list");
    assert_eq!(dm.len(), 1, "the lane is kept");
    // The slot keys moved: a newer version of the article supersedes it, and a
    // deletion of event 2 finds it through the event index.
    let newer = nostr_plan(nostr_event(12, ALICE, 30_023, 2_000, "post/1 é", &[]));
    block_on(store.enqueue(newer, t0 + 80_000_000)).expect("newer article");
    let article = block_on(store.get(&id(8))).expect("get").expect("kept");
    assert_eq!(article.stage, Stage::Superseded);
}

#[test]
fn an_enqueue_of_new_ids_reads_no_row_and_a_replay_reads_after_one_conflict() {
    // New ids (what an app enqueues almost always) are checked absent by the commit
    // itself: no read before it (on Deno KV, one `getMany` of 10 keys fewer per 10
    // plans). An id that is there makes that commit conflict; the next run reads it.
    let shared = Shared::new(Rc::new(MemoryKv::new()));
    let store = KvStore::new(shared.clone());
    let first = block_on(store.enqueue_many(plans(0, 30), 1_000)).expect("enqueue");
    assert!(first.iter().all(|e| e.outcome == EnqueueOutcome::Created));
    assert_eq!(shared.rows_read.get(), 0, "no row read for new ids");
    assert_eq!((shared.commits.get(), shared.conflicts.get()), (1, 0));
    let before = shared.kv.entries();
    // 10 of them again, beside 5 new: one conflict, then a run that reads the rows.
    let again = block_on(store.enqueue_many(plans(20, 15), 2_000)).expect("again");
    let outcomes: Vec<EnqueueOutcome> = again.iter().map(|e| e.outcome).collect();
    let mut expected = vec![EnqueueOutcome::Replay; 10];
    expected.extend([EnqueueOutcome::Created; 5]);
    assert_eq!(outcomes, expected);
    assert_eq!((shared.commits.get(), shared.conflicts.get()), (3, 1));
    assert_eq!(shared.rows_read.get(), 15);
    for (e, a) in again.iter().take(10).zip(&first[20..]) {
        assert_eq!(e.record, a.record, "a replay answers the record as stored");
    }
    let after = shared.kv.entries();
    for entry in &before {
        assert!(after.contains(entry), "{} rewritten", entry.key);
    }
    let rows = after.iter().filter(|e| e.key.starts_with(kv::ROWS)).count();
    assert_eq!(rows, 35);
    // A plan that conflicts with what is stored (same id, another event) is refused as
    // before, with nothing written.
    let mut other = fixture_plan(1, &RELAYS, Policy::All);
    other.id = first[0].record.id.clone();
    let err = block_on(store.enqueue(other, 3_000)).expect_err("another event under a used id");
    assert_eq!(err.code(), "plan_conflict", "{err}");
    assert_eq!(shared.kv.entries(), after);
    // A refusal that only the guess makes is decided again with the row read: an event
    // that has expired since it was enqueued replays (a new one would be refused).
    let mut expiring = fixture_plan(50, &RELAYS, Policy::All);
    expiring.event.expiration = Some(10);
    block_on(store.enqueue(expiring.clone(), 5_000)).expect("before it expires");
    let replay = block_on(store.enqueue(expiring, 20_000)).expect("after it expired");
    assert_eq!(replay.outcome, EnqueueOutcome::Replay);
}

/// A backend whose every call first yields once (as a storage adapter's promise
/// does), so operations under way at once interleave; `turns` is what it answers to
/// [`KvBackend::one_run_at_a_time`].
struct Yielding {
    shared: Shared,
    turns: bool,
}

/// Ready after being polled once more.
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut yielded, true) {
            return std::task::Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await
}

impl KvBackend for Yielding {
    fn limits(&self) -> KvLimits {
        self.shared.limits()
    }
    fn holds_index_keys(&self) -> bool {
        self.shared.holds_index_keys()
    }
    fn one_run_at_a_time(&self) -> bool {
        self.turns
    }
    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<KvValue>>, StoreError> {
        yield_once().await;
        self.shared.get_many(keys).await
    }
    async fn list(&self, range: &KvRange) -> Result<Vec<KvEntry>, StoreError> {
        yield_once().await;
        self.shared.list(range).await
    }
    async fn commit(&self, commit: KvCommit) -> Result<KvCommitted, StoreError> {
        yield_once().await;
        self.shared.commit(commit).await
    }
}

/// A flusher's claims and its recordings under way at once on one store: how many
/// commits conflicted, and the stages the records ended in.
fn claims_beside_recordings(turns: bool) -> (u32, Vec<Stage>) {
    let shared = Shared::new(Rc::new(MemoryKv::new()));
    let store = KvStore::new(Yielding {
        shared: shared.clone(),
        turns,
    });
    block_on(store.enqueue_many(plans(0, 40), 1_000)).expect("enqueue");
    let first = block_on(store.claim(&fixture_claim("o", "l1", 20, 60_000), 2_000)).expect("claim");
    let answers: Vec<Completion> = first.iter().map(|r| accepted_by_all(r, "l1")).collect();
    let retry = conformance::fixture_retry();
    // The recording starts a little after the claim: it reads before the claim
    // commits, and commits after.
    let (done, more) = block_on(futures::future::join(
        async {
            for _ in 0..3 {
                yield_once().await;
            }
            store.complete_attempts(&answers, &retry, 2_100).await
        },
        store.claim(&fixture_claim("o", "l2", 20, 60_000), 2_100),
    ));
    assert!(done.iter().all(Result::is_ok), "{done:?}");
    assert_eq!(more.expect("second claim").len(), 20);
    let stages = block_on(store.list(&nostr_outbox::core::ListQuery {
        limit: 100,
        ..Default::default()
    }))
    .expect("list")
    .iter()
    .map(|r| r.stage)
    .collect();
    (shared.conflicts.get(), stages)
}

#[test]
fn operations_under_way_at_once_over_an_adapter_take_turns_and_never_conflict() {
    // Over a storage adapter every call is its own transaction: a claim that commits
    // between a recording's reads and its commit makes the recording conflict (it
    // checks the lease rows' lock), and each conflict reads and decides again (8 in a
    // row fail with `storage_blocked`). The store runs such a backend's operations one
    // at a time.
    let (conflicts, stages) = claims_beside_recordings(true);
    assert_eq!(conflicts, 0, "operations taking turns never conflict");
    let satisfied = stages.iter().filter(|s| **s == Stage::Satisfied).count();
    let leased = stages.iter().filter(|s| **s == Stage::Leased).count();
    assert_eq!((satisfied, leased), (20, 20));
    // Without turns, the same operations interleave and the recording conflicts: what
    // the turns are for (the answers are the same, after more work).
    let (conflicts, stages_without) = claims_beside_recordings(false);
    assert!(
        conflicts > 0,
        "the interleaving this test needs did not happen"
    );
    assert_eq!(stages_without, stages);
}

#[test]
fn status_reads_every_row_once_then_counts_by_index() {
    // The UI stores call status() after every change: past the first call (which finds
    // the rows that cannot be decoded), it reads no row, whatever the queue's size.
    let shared = Shared::new(Rc::new(MemoryKv::new()));
    let store = KvStore::new(shared.clone());
    block_on(store.enqueue_many(plans(0, 30), 1_000)).expect("enqueue");
    shared.kv.put_raw(&kv::row_key("broken"), "{not json");
    shared.rows_read.set(0);
    let first = block_on(store.status()).expect("status");
    assert_eq!((first.pending, first.corrupt, first.total()), (30, 1, 31));
    assert_eq!(shared.rows_read.get(), 31, "the first call reads every row");
    block_on(store.claim(&fixture_claim("o", "l", 10, 30_000), 2_000)).expect("claim");
    let before = shared.rows_read.get();
    let second = block_on(store.status()).expect("status");
    assert_eq!(shared.rows_read.get(), before, "later calls read no row");
    assert_eq!(
        (
            second.pending,
            second.leased,
            second.corrupt,
            second.total()
        ),
        (20, 10, 1, 31)
    );
}

/// A backend that tells the listener given for the next commit once, `(units - 1,
/// units)`, and counts the commits told and not told; with `fail_first` its first
/// commit fails after telling.
struct Reporting {
    kv: MemoryKv,
    next: RefCell<Option<(Progress, usize)>>,
    told: Cell<usize>,
    untold: Cell<usize>,
    fail_first: Cell<bool>,
}

impl KvBackend for Reporting {
    fn limits(&self) -> KvLimits {
        self.kv.limits()
    }
    fn holds_index_keys(&self) -> bool {
        self.kv.holds_index_keys()
    }
    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<KvValue>>, StoreError> {
        self.kv.get_many(keys).await
    }
    async fn list(&self, range: &KvRange) -> Result<Vec<KvEntry>, StoreError> {
        self.kv.list(range).await
    }
    fn tell_next_commit(&self, progress: Progress, units: usize) {
        *self.next.borrow_mut() = Some((progress, units));
    }
    /// Tells as IndexedDB does: once the checks hold, as the writes are taken (a
    /// commit that conflicts writes and tells nothing).
    async fn commit(&self, commit: KvCommit) -> Result<KvCommitted, StoreError> {
        let next = self.next.take();
        let tell = |next: Option<(Progress, usize)>| match next {
            Some((progress, units)) => {
                progress(units - 1, units);
                self.told.set(self.told.get() + 1);
            }
            None => self.untold.set(self.untold.get() + 1),
        };
        if self.fail_first.replace(false) {
            tell(next);
            return Err(StoreError::Backend("disk on fire".into()));
        }
        let done = self.kv.commit(commit).await?;
        if done == KvCommitted::Applied {
            tell(next);
        }
        Ok(done)
    }
}

fn reporting(fail_first: bool) -> KvStore<Reporting> {
    KvStore::new(Reporting {
        kv: MemoryKv::new(),
        next: RefCell::new(None),
        told: Cell::new(0),
        untold: Cell::new(0),
        fail_first: Cell::new(fail_first),
    })
}

/// `(done, total)` as told.
type Reports = Vec<(usize, usize)>;

/// Enqueues `plans` with a progress listener: the answer and every report.
fn enqueue_reporting(
    store: &KvStore<Reporting>,
    plans: Vec<Plan>,
) -> (Result<Option<usize>, StoreError>, Reports) {
    let reports = Rc::new(RefCell::new(Vec::new()));
    let seen = reports.clone();
    let got = block_on(store.enqueue_many_checked(
        plans,
        1_000,
        &mut || true,
        Some(Rc::new(move |done, total| {
            seen.borrow_mut().push((done, total))
        })),
    ));
    let reports = reports.borrow().clone();
    (got.map(|a| a.map(|a| a.len())), reports)
}

#[test]
fn an_enqueue_with_progress_has_its_own_commit_told_and_no_other() {
    let store = reporting(false);
    let (got, reports) = enqueue_reporting(&store, plans(0, 40));
    assert_eq!(got, Ok(Some(40)));
    assert_eq!(reports, vec![(39, 40)], "the commit is told its 40 units");
    assert_eq!(
        (store.backend().told.get(), store.backend().untold.get()),
        (1, 0)
    );
    // A batch of replays writes nothing: its one commit (the ids taken as new)
    // conflicts and tells nothing, and none is left to tell later.
    let (got, reports) = enqueue_reporting(&store, plans(0, 40));
    assert_eq!(got, Ok(Some(40)));
    assert!(reports.is_empty(), "{reports:?}");
    block_on(store.claim(&fixture_claim("o", "l", 10, 30_000), 2_000)).expect("claim");
    assert_eq!(
        (store.backend().told.get(), store.backend().untold.get()),
        (1, 1)
    );
    // No listener, nothing told.
    block_on(store.enqueue_many(plans(40, 2), 3_000)).expect("enqueue");
    assert_eq!(
        (store.backend().told.get(), store.backend().untold.get()),
        (1, 2)
    );
    // A commit that fails after telling: an error, nothing stored.
    let store = reporting(true);
    let (got, reports) = enqueue_reporting(&store, plans(0, 40));
    assert!(matches!(got, Err(StoreError::Backend(_))), "{got:?}");
    assert_eq!(reports, vec![(39, 40)]);
    assert_eq!(block_on(store.status()).expect("status").total(), 0);
}

/// The versions of the record rows (`R/…`) and the lease rows (`Q/…`, the lock `Q/`
/// left out) of `kv`.
/// Keys with a value or version each.
type Pairs = Vec<(String, String)>;

fn rows_and_leases(kv: &MemoryKv) -> (Pairs, Pairs) {
    let entries = kv.entries();
    let of = |prefix: &str| -> Pairs {
        entries
            .iter()
            .filter(|e| e.key.starts_with(prefix) && e.key != kv::LEASES)
            .map(|e| (e.key.clone(), e.value.clone()))
            .collect()
    };
    let versions = entries
        .iter()
        .filter(|e| e.key.starts_with(kv::ROWS))
        .map(|e| (e.key.clone(), e.version.clone()))
        .collect();
    (versions, of(kv::LEASES))
}

/// The answer to the attempt of `record`, leased as `lease`: every target accepted.
fn accepted_by_all(record: &nostr_outbox::core::Record, lease: &str) -> Completion {
    Completion {
        id: record.id.clone(),
        lease_id: lease.into(),
        revision: record.revision,
        results: record
            .targets
            .iter()
            .map(|t| TargetResult {
                target: t.clone(),
                outcome: Outcome::Accepted,
                message: String::new(),
            })
            .collect(),
        jitter: 0,
    }
}

#[test]
fn a_claim_writes_one_lease_row_and_every_read_sees_the_records_leased() {
    use nostr_outbox::core::ListQuery;
    let store = store();
    block_on(store.enqueue_many(plans(0, 3), 1_000)).expect("enqueue");
    let (rows, leases) = rows_and_leases(store.backend());
    assert!(leases.is_empty());
    let commits = store.backend().applied_commits();
    let got = block_on(store.claim(&fixture_claim("o", "l", 10, 30_000), 2_000)).expect("claim");
    assert_eq!(got.len(), 3);
    assert_eq!(store.backend().applied_commits() - commits, 1, "one commit");
    let (rows_now, leases) = rows_and_leases(store.backend());
    assert_eq!(rows_now, rows, "no record row written");
    assert_eq!(leases.len(), 1, "one lease row: {leases:?}");
    // Every read sees them leased, as the claim answered them.
    for r in &got {
        let read = block_on(store.get(&r.id)).expect("get").expect("there");
        assert_eq!(&read, r);
        assert_eq!(read.stage, Stage::Leased);
        assert_eq!(read.due_ms, Some(32_000));
    }
    let counts = block_on(store.status()).expect("status");
    assert_eq!((counts.pending, counts.leased), (0, 3));
    let query = |stage| ListQuery {
        stage: Some(stage),
        limit: 100,
        ..Default::default()
    };
    let listed = block_on(store.list(&query(Stage::Leased))).expect("list");
    assert_eq!(listed, got, "listed leased, in list order");
    assert!(block_on(store.list(&query(Stage::Pending)))
        .expect("list")
        .is_empty());
    assert_eq!(block_on(store.count_due(10_000)).expect("count"), 0);
    assert_eq!(block_on(store.next_due(0)).expect("next"), Some(32_000));
    let again = block_on(store.claim(&fixture_claim("p", "m", 10, 30_000), 3_000)).expect("claim");
    assert!(again.is_empty(), "not claimed twice");
    // The answer rewrites its record and drops its entry; the release of the others
    // drops the lease row.
    let first = &got[0];
    let done = block_on(store.complete_attempt(
        &accepted_by_all(first, "l"),
        &conformance::fixture_retry(),
        4_000,
    ))
    .expect("complete");
    assert_eq!(done.stage, Stage::Satisfied);
    let (rows_now, leases) = rows_and_leases(store.backend());
    assert_ne!(rows_now, rows, "the answer is written to its row");
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].1.lines().count(), 3, "a header and two entries");
    for r in &got[1..] {
        block_on(store.release(&r.id, "l", r.revision, 5_000)).expect("release");
    }
    let (_, leases) = rows_and_leases(store.backend());
    assert!(leases.is_empty(), "lease row deleted with its last entry");
    let counts = block_on(store.status()).expect("status");
    assert_eq!((counts.pending, counts.leased, counts.satisfied), (2, 0, 1));
    // An expired lease is taken again, by a new lease row.
    let got = block_on(store.claim(&fixture_claim("o", "l2", 10, 1_000), 6_000)).expect("claim");
    assert_eq!(got.len(), 2);
    let got = block_on(store.claim(&fixture_claim("p", "l3", 10, 1_000), 8_000)).expect("claim");
    assert_eq!(got.len(), 2, "expired leases claimed again");
    assert!(got
        .iter()
        .all(|r| r.lease.as_ref().is_some_and(|l| l.id == "l3")));
    let (_, leases) = rows_and_leases(store.backend());
    assert_eq!(
        leases.len(),
        1,
        "the expired lease's row dropped: {leases:?}"
    );
}

#[test]
fn a_lease_row_that_no_longer_applies_or_does_not_parse_leaves_records_as_stored() {
    let store = store();
    block_on(store.enqueue_many(plans(0, 2), 1_000)).expect("enqueue");
    let got = block_on(store.claim(&fixture_claim("o", "l", 10, 30_000), 2_000)).expect("claim");
    assert_eq!(got.len(), 2);
    // A writer that knows nothing of lease rows (an older build) rewrites one row as
    // it read it: that record reads as written; the other stays leased.
    let kv = store.backend();
    let key = kv::row_key(&got[0].id);
    let raw = kv
        .entries()
        .into_iter()
        .find(|e| e.key == key)
        .expect("row")
        .value;
    kv.put_raw(&key, &raw);
    let first = block_on(store.get(&got[0].id))
        .expect("get")
        .expect("there");
    assert_eq!(first.stage, Stage::Pending);
    assert!(first.lease.is_none());
    let second = block_on(store.get(&got[1].id))
        .expect("get")
        .expect("there");
    assert_eq!(second.stage, Stage::Leased);
    // A write drops its own entry, and a stale one when it reads that record: until
    // then the stale entry still files its record as leased in the index (claimed
    // when the lease would have expired, at the latest: late, never lost).
    block_on(store.release(&got[1].id, "l", got[1].revision, 3_000)).expect("release");
    let (_, leases) = rows_and_leases(kv);
    assert_eq!(leases[0].1.lines().count(), 2, "{leases:?}");
    block_on(store.reschedule(&got[0].id, 50_000, 3_000)).expect("reschedule");
    let (_, leases) = rows_and_leases(kv);
    assert!(leases.is_empty(), "{leases:?}");
    // A lease row that does not parse is ignored: its records read as stored.
    let got = block_on(store.claim(&fixture_claim("o", "m", 10, 30_000), 60_000)).expect("claim");
    assert_eq!(got.len(), 2);
    let (_, leases) = rows_and_leases(kv);
    kv.put_raw(&leases[0].0, "not\ta lease row");
    for r in &got {
        let read = block_on(store.get(&r.id)).expect("get").expect("there");
        assert_ne!(read.stage, Stage::Leased);
    }
    let again = block_on(store.claim(&fixture_claim("p", "n", 10, 30_000), 61_000)).expect("claim");
    assert_eq!(again.len(), 2, "claimed again: sent again, never lost");
}

#[test]
fn status_never_counts_an_answered_record_twice() {
    // An answer committed by another context between the lease rows' read and the
    // counts of `status`: the record's old lease entry would count it as leased and its
    // new key as satisfied. The counts are taken again when the lease rows changed.
    let kv = Rc::new(MemoryKv::new());
    let a = Shared::new(kv.clone());
    let store = KvStore::new(a.clone());
    let other = Rc::new(KvStore::new(Shared::new(kv)));
    block_on(store.enqueue_many(plans(0, 2), 1_000)).expect("enqueue");
    let got = block_on(store.claim(&fixture_claim("o", "l", 10, 30_000), 2_000)).expect("claim");
    let first = got[0].clone();
    {
        let other = other.clone();
        *a.count_hook.borrow_mut() = Some(Box::pin(async move {
            other
                .complete_attempt(
                    &accepted_by_all(&first, "l"),
                    &conformance::fixture_retry(),
                    3_000,
                )
                .await
                .expect("answered");
        }));
    }
    let counts = block_on(store.status()).expect("status");
    assert_eq!(
        (counts.leased, counts.satisfied, counts.total()),
        (1, 1, 2),
        "{counts:?}"
    );
}

/// Earlier builds filed the claim-order key of a draft with a route at normal or low
/// priority (ranks 10 and 11) under rank 9, one digit. Such a key is still claimed
/// (and `next_due` sees it), hidden while its record is leased, and deleted by the
/// record's next write: no key of it stays behind to wake a flusher for nothing.
#[test]
fn claim_order_keys_filed_under_one_digit_are_claimed_and_then_deleted() {
    use nostr_outbox::core::{ClaimRequest, NEEDS_RESOLVER, NEEDS_SIGNER};
    use nostr_outbox::store::kv::KvMutation;
    block_on(async {
        let store = store();
        let mut plan = Plan::new(
            conformance::draft_event(ALICE, 1, 1),
            Vec::new(),
            Policy::All,
        )
        .with_id("dr");
        plan.route = vec!["outbox".into()];
        store
            .enqueue_many(vec![plan], 1_000)
            .await
            .expect("enqueued");
        let kv = store.backend();
        let due_keys = || -> Vec<String> {
            kv.dump()
                .into_iter()
                .map(|(k, _)| k)
                .filter(|k| k.starts_with("P/"))
                .collect()
        };
        let filed = due_keys();
        assert_eq!(filed.len(), 1, "{filed:?}");
        assert!(
            filed[0].starts_with("P/10/"),
            "normal, a draft with a route: {filed:?}"
        );
        // As an earlier build filed it.
        let old = filed[0].replacen("P/10/", "P/9/", 1);
        kv.commit(KvCommit {
            checks: Vec::new(),
            mutations: vec![
                KvMutation::Delete {
                    key: filed[0].clone(),
                },
                KvMutation::Put {
                    key: old.clone(),
                    value: String::new(),
                },
            ],
        })
        .await
        .expect("moved");
        let prepare = NEEDS_SIGNER | NEEDS_RESOLVER;
        assert_eq!(
            store.next_due(prepare).await.expect("next_due"),
            Some(1_000)
        );
        let request = ClaimRequest {
            prepare,
            ..fixture_claim("o", "l1", 64, 60_000)
        };
        let claimed = store.claim(&request, 2_000).await.expect("claim");
        assert_eq!(claimed.len(), 1, "claimed through the old key");
        assert_eq!(
            store.next_due(prepare).await.expect("next_due"),
            Some(62_000),
            "leased: the old key is hidden"
        );
        assert_eq!(
            due_keys(),
            [old],
            "a claim writes a lease row, not the keys"
        );
        store.cancel("dr", 3_000).await.expect("cancel");
        assert_eq!(due_keys(), Vec::<String>::new(), "the old key is deleted");
        assert_eq!(store.next_due(prepare).await.expect("next_due"), None);
    });
}
