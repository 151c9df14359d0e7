//! The IndexedDB store in a real browser: the shared conformance suite, durability
//! across reopen, two connections claiming concurrently (as two tabs would), schema
//! versions, version changes from another connection, corrupt rows, and a request the
//! browser leaves unanswered when its transaction aborts.
#![cfg(target_arch = "wasm32")]

use futures_util::future::{join, select, Either};
use nostr_outbox::core::{Completion, EnqueueOutcome, ListQuery, Policy, Stage};
use nostr_outbox::store::conformance::{
    self, fixture_claim, fixture_plan, fixture_retry, nostr_event, nostr_plan, ALICE,
};
use nostr_outbox::store::idb::{Durability, IdbKv, IdbOptions, IdbStore, SCHEMA_VERSION};
use nostr_outbox::store::kv::keys as kv_keys;
use nostr_outbox::store::kv::{KvBackend, KvCheck, KvCommit, KvCommitted, KvMutation};
use nostr_outbox::store::Store;
use std::collections::BTreeMap;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const RELAYS: [&str; 2] = ["wss://a.example", "wss://b.example"];

fn web_sys_user_agent() -> String {
    js_sys::Reflect::get(&js_sys::global(), &"navigator".into())
        .and_then(|n| js_sys::Reflect::get(&n, &"userAgent".into()))
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default()
}

fn random_name(prefix: &str) -> String {
    format!("{prefix}-{}", js_sys::Math::random())
}

async fn open(name: &str) -> IdbStore {
    IdbStore::open(IdbOptions::new(name))
        .await
        .expect("open IndexedDB store")
}

/// The database `name` opened raw at the current schema, to read or damage its rows
/// behind the store's back.
async fn raw_db(name: &str) -> JsValue {
    JsFuture::from(raw_open(name, SCHEMA_VERSION))
        .await
        .expect("raw open at the current version")
}

#[wasm_bindgen(inline_js = r#"
export function rawOpen(name, version) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, version);
    req.onupgradeneeded = () => {
      const db = req.result;
      if (!db.objectStoreNames.contains("future")) db.createObjectStore("future");
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => {};
  });
}
export function rawPut(db, store, value, key) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(store, "readwrite");
    if (key === undefined) tx.objectStore(store).put(value);
    else tx.objectStore(store).put(value, key);
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
  });
}
export function rawCount(db, store) {
  return new Promise((resolve, reject) => {
    const req = db.transaction(store).objectStore(store).count();
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}
export function rawClose(db) { db.close(); }
// The `kv` key of item `id`'s row: `R/` and the id (item ids are never escaped).
function rowKey(id) {
  return "R/" + id;
}
// Reads the row of item `id` (`{v: json, n: version, k: index keys}` in `kv`), sets the
// fields of `patch` (JSON; the string "__delete__" deletes a field) in its JSON and
// writes it back.
export function rawPatchRow(db, id, patch) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction("kv", "readwrite");
    const store = tx.objectStore("kv");
    const req = store.get(rowKey(id));
    req.onsuccess = () => {
      const stored = req.result;
      const row = JSON.parse(stored.v);
      for (const [k, v] of Object.entries(JSON.parse(patch))) {
        if (v === "__delete__") delete row[k];
        else row[k] = v;
      }
      store.put({ ...stored, v: JSON.stringify(row) }, rowKey(id));
    };
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
  });
}
// Every row of `kv` described as JSON: whether it is a `[string, number]` pair or a
// record's `{v: string, n: number, k: [string]}`, and for a record's row (`R/…`) its
// index keys, its JSON's own keys in order and each value's type.
export function rawRowShapes(db) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction("kv");
    const keys = tx.objectStore("kv").getAllKeys();
    const rows = tx.objectStore("kv").getAll();
    tx.oncomplete = () => resolve(JSON.stringify(rows.result.map((pair, i) => {
      const shape = {
        key: keys.result[i],
        pair: Array.isArray(pair) && pair.length === 2 && typeof pair[0] === "string" && typeof pair[1] === "number",
        record: !Array.isArray(pair) && Object.keys(pair).join() === "v,n,k" && typeof pair.v === "string"
          && typeof pair.n === "number" && pair.k.every((k) => typeof k === "string"),
      };
      if (keys.result[i].startsWith("R/")) {
        const row = JSON.parse(pair.v);
        shape.index = pair.k;
        shape.keys = Object.keys(row);
        shape.types = Object.keys(row).map((k) => typeof row[k]);
        shape.stage = row.stage;
      }
      return shape;
    })));
    tx.onerror = () => reject(tx.error);
  });
}
export function rawVersion(db) { return db.version; }
// Emulates Chromium (156) aborting a transaction over quota at its commit with a write
// still unanswered, and never answering it: while on, a `put` to the `kv` store that
// its transaction's abort answers with AbortError gets no event at all (swallowed
// before any other listener) and its readyState stays "pending".
let unanswered = false;
const realPut = IDBObjectStore.prototype.put;
const readyState = Object.getOwnPropertyDescriptor(IDBRequest.prototype, "readyState").get;
IDBObjectStore.prototype.put = function (...args) {
  const req = realPut.apply(this, args);
  if (unanswered && this.name === "kv") {
    let silenced = false;
    req.addEventListener("error", (event) => {
      if (req.error && req.error.name === "AbortError") {
        silenced = true;
        event.stopImmediatePropagation();
      }
    }, true);
    Object.defineProperty(req, "readyState", { get: () => (silenced ? "pending" : readyState.call(req)) });
  }
  return req;
};
export function setUnansweredOnAbort(on) { unanswered = on; }
export function sleep(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }
"#)]
extern "C" {
    #[wasm_bindgen(js_name = rawOpen)]
    fn raw_open(name: &str, version: u32) -> js_sys::Promise;
    #[wasm_bindgen(js_name = rawPut)]
    fn raw_put(db: &JsValue, store: &str, value: &JsValue, key: Option<&str>) -> js_sys::Promise;
    #[wasm_bindgen(js_name = rawCount)]
    fn raw_count(db: &JsValue, store: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = rawClose)]
    fn raw_close(db: &JsValue);
    #[wasm_bindgen(js_name = rawPatchRow)]
    fn raw_patch_row(db: &JsValue, id: &str, patch: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = rawRowShapes)]
    fn raw_row_shapes(db: &JsValue) -> js_sys::Promise;
    #[wasm_bindgen(js_name = rawVersion)]
    fn raw_version(db: &JsValue) -> u32;
    #[wasm_bindgen(js_name = setUnansweredOnAbort)]
    fn set_unanswered_on_abort(on: bool);
    fn sleep(ms: u32) -> js_sys::Promise;
}

/// `f`'s output, or `None` when it has not settled within `ms` (a hang fails the test
/// that meets it instead of holding the runner).
async fn within<T>(ms: u32, f: impl std::future::Future<Output = T>) -> Option<T> {
    match select(Box::pin(f), JsFuture::from(sleep(ms))).await {
        Either::Left((out, _)) => Some(out),
        Either::Right(_) => None,
    }
}

#[wasm_bindgen_test]
async fn conformance_suite_passes_on_indexeddb() {
    conformance::run_all(|| async { open(&random_name("conformance")).await }).await;
}

#[wasm_bindgen_test]
async fn conformance_suite_passes_with_relaxed_durability() {
    conformance::run_all(|| async {
        let mut options = IdbOptions::new(random_name("relaxed"));
        options.durability = Durability::Relaxed;
        IdbStore::open(options).await.expect("open relaxed store")
    })
    .await;
}

fn put(key: &str, value: &str) -> KvMutation {
    KvMutation::Put {
        key: key.into(),
        value: value.into(),
    }
}

/// A commit of `mutations` that checks `key` still has `version` (`None`: is absent).
fn checked(key: &str, version: Option<&str>, mutations: Vec<KvMutation>) -> KvCommit {
    KvCommit {
        checks: vec![KvCheck {
            key: key.into(),
            version: version.map(Into::into),
        }],
        mutations,
    }
}

/// Writes `key` and reads its version, lets that transaction end, then makes a new
/// one current (and active when this returns) that has not met `key`: the version.
async fn written_in_an_earlier_transaction(kv: &IdbKv, key: &str) -> String {
    let first = KvCommit {
        checks: Vec::new(),
        mutations: vec![put(key, "0")],
    };
    assert_eq!(
        kv.commit(first).await.expect("commit"),
        KvCommitted::Applied
    );
    let read = kv.get_many(&[key.to_string()]).await.expect("read");
    let version = read[0].clone().expect("written").version;
    JsFuture::from(sleep(50)).await.expect("sleep");
    kv.get_many(&["x/other".to_string()]).await.expect("read");
    version
}

/// Two commits issued at once into one transaction, each checking a row that its
/// operation read in an earlier transaction, both writing it: the second sees the
/// first's write and conflicts (both passed once: each read the row before the other's
/// write was issued) and the two never write one version number.
#[wasm_bindgen_test]
async fn two_commits_at_once_in_one_transaction_never_both_pass_a_check_of_one_row() {
    let store = open(&random_name("two-commits")).await;
    let kv = store.backend();
    let key = "x/k";
    let v0 = written_in_an_earlier_transaction(kv, key).await;
    let commit = |value: &str| {
        let marker = put(&format!("x/{value}"), "");
        checked(key, Some(&v0), vec![put(key, value), marker])
    };
    let (a, b) = join(kv.commit(commit("a")), kv.commit(commit("b"))).await;
    let answers = [a.expect("commit a"), b.expect("commit b")];
    assert_eq!(
        answers,
        [KvCommitted::Applied, KvCommitted::Conflict],
        "the second commit checks the row as the first left it"
    );
    let now = kv
        .get_many(&[key.to_string(), "x/a".to_string()])
        .await
        .expect("read");
    let (row, marker) = (
        now[0].clone().expect("row"),
        now[1].clone().expect("a's key"),
    );
    assert_eq!(row.value, "a");
    assert_ne!(row.version, v0);
    assert_eq!(row.version, marker.version, "one commit, one version");
    let next = checked(key, Some(&row.version), vec![put(key, "c")]);
    assert_eq!(kv.commit(next).await.expect("commit"), KvCommitted::Applied);
    let after = kv.get_many(&[key.to_string()]).await.expect("read");
    assert_ne!(
        after[0].clone().expect("row").version,
        row.version,
        "a new version"
    );
}

/// A read issued into a transaction before another commit's writes there, answered
/// after them, reads the row from before: a commit issued later in that transaction,
/// checking the version that read gave, conflicts instead of overwriting the write.
#[wasm_bindgen_test]
async fn a_read_answered_after_a_commit_in_its_transaction_does_not_hide_the_write() {
    let store = open(&random_name("stale-read")).await;
    let kv = store.backend();
    let key = "x/k";
    let v0 = written_in_an_earlier_transaction(kv, key).await;
    let commit = |value: &str| checked(key, Some(&v0), vec![put(key, value)]);
    // Issued in one turn: `a`'s commit, then a read of the row; once the read answers
    // (before the transaction ends), `b`'s commit, checking the version it read.
    let read_then_commit = async {
        let read = kv.get_many(&[key.to_string()]).await.expect("read");
        let version = read[0].clone().expect("row").version;
        (version, kv.commit(commit("b")).await.expect("commit b"))
    };
    let (a, (seen, b)) = join(kv.commit(commit("a")), read_then_commit).await;
    assert_eq!(a.expect("commit a"), KvCommitted::Applied);
    assert_eq!(seen, v0, "the read was answered from before a's write");
    assert_eq!(b, KvCommitted::Conflict, "b checks the row as a left it");
    let now = kv.get_many(&[key.to_string()]).await.expect("read");
    assert_eq!(now[0].clone().expect("row").value, "a");
}

/// A new row written alone, checked absent and not read in its transaction (an
/// enqueue of a new id), is written with `add`, no read first. Where the row is there,
/// that commit conflicts and writes nothing, and the other commits of its transaction
/// stand (the refused `add` does not abort it); where it is not, it is written.
#[wasm_bindgen_test]
async fn a_new_row_is_added_without_a_read_and_a_row_that_is_there_conflicts_alone() {
    let store = open(&random_name("add")).await;
    let kv = store.backend();
    let key = "x/k";
    let v0 = written_in_an_earlier_transaction(kv, key).await;
    let absent = |key: &str, value: &str| checked(key, None, vec![put(key, value)]);
    let gets = count_gets();
    let (there, other, new) = futures_util::future::join3(
        kv.commit(absent(key, "a")),
        kv.commit(KvCommit {
            checks: Vec::new(),
            mutations: vec![put("x/other", "b")],
        }),
        kv.commit(absent("x/new", "c")),
    )
    .await;
    let reads = gets_counted(&gets);
    // Called from another task (a timer's) while the current transaction still has
    // requests to answer, so it is alive but not active there: the add, the first
    // request of its commit, throws at once, and the commit runs in a new transaction
    // (it was a `TransactionInactiveError` storage error before).
    let many: Vec<String> = (0..2_000).map(|i| format!("x/{i}")).collect();
    let (read, late) = join(kv.get_many(&many), async {
        JsFuture::from(sleep(0)).await.expect("sleep");
        kv.commit(absent("x/late", "d")).await
    })
    .await;
    assert_eq!(read.expect("read").len(), 2_000);
    assert_eq!(late.expect("commit d"), KvCommitted::Applied);
    assert_eq!(
        [
            there.expect("commit a"),
            other.expect("commit b"),
            new.expect("commit c")
        ],
        [
            KvCommitted::Conflict,
            KvCommitted::Applied,
            KvCommitted::Applied
        ]
    );
    assert_eq!(reads, 0, "no row read before the adds");
    let now = kv
        .get_many(&[key.into(), "x/other".into(), "x/new".into()])
        .await
        .expect("read");
    let row = now[0].clone().expect("row");
    assert_eq!((row.value.as_str(), row.version), ("0", v0), "untouched");
    assert_eq!(now[1].clone().expect("other").value, "b");
    assert_eq!(now[2].clone().expect("new").value, "c");
    // Through the store: a new id is one add; the same id again conflicts, is read and
    // replays, beside a new one enqueued at once.
    let gets = count_gets();
    let first = store
        .enqueue(fixture_plan(1, &RELAYS, Policy::All), 1_000)
        .await
        .expect("enqueue");
    assert_eq!(first.outcome, EnqueueOutcome::Created);
    assert_eq!(gets_counted(&gets), 0, "a new id is not read");
    let (again, second) = join(
        store.enqueue(fixture_plan(1, &RELAYS, Policy::All), 2_000),
        store.enqueue(fixture_plan(2, &RELAYS, Policy::All), 2_000),
    )
    .await;
    let (again, second) = (again.expect("again"), second.expect("second"));
    assert_eq!(
        (again.outcome, second.outcome),
        (EnqueueOutcome::Replay, EnqueueOutcome::Created)
    );
    assert_eq!(again.record, first.record);
    assert_eq!(store.status().await.expect("status").pending, 2);
    // Several new ids are read first (while their signatures would be checked): a
    // commit of several rows would read them anyway.
    let gets = count_gets();
    let plans = vec![
        fixture_plan(3, &RELAYS, Policy::All),
        fixture_plan(4, &RELAYS, Policy::All),
    ];
    let many = store
        .enqueue_many(plans, 3_000)
        .await
        .expect("enqueue many");
    assert!(many.iter().all(|e| e.outcome == EnqueueOutcome::Created));
    assert_eq!(gets_counted(&gets), 2, "each row read once");
}

/// How many `get`s `counter` ([`count_gets`]) counted.
fn gets_counted(counter: &JsValue) -> u32 {
    js_sys::Reflect::get(counter, &"gets".into())
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(-1.0) as u32
}

#[wasm_bindgen(inline_js = r#"
let original;
export function countGets() {
  original ??= IDBObjectStore.prototype.get;
  const counter = { gets: 0, keys: [] };
  IDBObjectStore.prototype.get = function (...args) {
    // A request issued (one that throws, its transaction not active, is not).
    const request = original.apply(this, args);
    counter.gets++;
    counter.keys.push(String(args[0]));
    return request;
  };
  return counter;
}
"#)]
extern "C" {
    /// Counts the `get`s issued on every object store from now on (until the next call).
    #[wasm_bindgen(js_name = countGets)]
    fn count_gets() -> JsValue;
}

/// A commit issued as soon as the one before it has committed (in the microtasks of
/// that transaction's `complete` event) draws its number from the block the one before
/// reserved, without reading `meta` first: the block is released before the first
/// commit's caller goes on (it was released after, and the second commit read `meta`).
#[wasm_bindgen_test]
async fn a_commit_right_after_the_one_that_reserved_numbers_draws_from_them_without_a_read() {
    let store = open(&random_name("block")).await;
    let kv = store.backend();
    let new_row = |key: &str| checked(key, None, vec![put(key, "v")]);
    let gets = count_gets();
    // The connection's first commit reserves a block: it reads `meta` and its key.
    let first = kv.commit(new_row("x/a")).await.expect("first");
    let second = kv.commit(new_row("x/b")).await.expect("second");
    assert_eq!(
        (first, second),
        (KvCommitted::Applied, KvCommitted::Applied)
    );
    assert_eq!(gets_counted(&gets), 2, "the second commit read nothing");
    store.close();
}

/// An operation whose read is still being answered when another operation, started
/// from another task, finds the transaction inactive and makes a new one current, still
/// commits in the transaction of its read (it continues from that read's answer, where
/// that transaction is active), so its commit reads nothing again: it read its row
/// again in a third transaction before, two `get`s more (the row and `meta`).
#[wasm_bindgen_test]
async fn a_commit_runs_in_the_transaction_of_its_reads_though_another_became_current() {
    let store = open(&random_name("reads-then-commit")).await;
    let kv = store.backend();
    let key = "x/k";
    written_in_an_earlier_transaction(kv, key).await;
    let mut keys: Vec<String> = (0..2_000).map(|i| format!("x/{i}")).collect();
    keys.push(key.to_string());
    let gets = count_gets();
    let read_then_commit = async {
        let read = kv.get_many(&keys).await.expect("read");
        let version = read[keys.len() - 1].clone().expect("row").version;
        kv.commit(checked(key, Some(&version), vec![put(key, "a")]))
            .await
            .expect("commit")
    };
    let other = async {
        JsFuture::from(sleep(0)).await.expect("sleep");
        kv.get_many(&["x/other".to_string()]).await.expect("read")
    };
    let (committed, _) = join(read_then_commit, other).await;
    assert_eq!(committed, KvCommitted::Applied);
    assert_eq!(
        gets_counted(&gets),
        2_002,
        "the 2 001 rows read and the other operation's one, nothing read again"
    );
    let now = kv.get_many(&[key.to_string()]).await.expect("read");
    assert_eq!(now[0].clone().expect("row").value, "a");
}

/// A claim takes the rows its range read over the claim order answered (the index's
/// `getAll` answers whole rows): it reads none of them again one by one.
#[wasm_bindgen_test]
async fn a_claim_reads_its_records_once() {
    let store = open(&random_name("claim-reads")).await;
    let plans: Vec<_> = (0..40)
        .map(|n| fixture_plan(n, &RELAYS, Policy::All))
        .collect();
    store.enqueue_many(plans, 1_000).await.expect("enqueue");
    let gets = count_gets();
    let claimed = store
        .claim(&fixture_claim("tab-a", "l-1", 32, 60_000), 2_000)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 32);
    // Read one by one: the lease rows' lock and `meta` (the commit numbers), once per
    // claim; each of the 32 rows was read once more before.
    let keys: Vec<String> =
        js_sys::Array::from(&js_sys::Reflect::get(&gets, &"keys".into()).expect("the keys read"))
            .iter()
            .filter_map(|k| k.as_string())
            .collect();
    assert_eq!(keys, ["Q/", "commit"], "no record read one by one");
    let status = store.status().await.expect("status");
    assert_eq!((status.leased, status.pending), (32, 8));
}

/// Commit numbers are unique across connections: each takes a block of numbers at a
/// time, reserved in `meta` (`ops.rs`), and draws from it without reading `meta` again.
/// Two connections writing one key by turns never give it a version it had before, a
/// check of the version the other connection has since replaced conflicts, and a
/// connection opened later gives numbers past every one given before.
#[wasm_bindgen_test]
async fn connections_never_give_one_version_twice_and_stale_checks_conflict() {
    let name = random_name("blocks");
    let (a, b) = (open(&name).await, open(&name).await);
    let key = "x/k";
    let commit = |version: &Option<String>, value: &str| {
        let marker = put(&format!("x/{value}"), "");
        checked(key, version.as_deref(), vec![put(key, value), marker])
    };
    let mut given: Vec<String> = Vec::new();
    let mut version: Option<String> = None;
    for round in 0..6 {
        let (writer, other) = match round % 2 {
            0 => (a.backend(), b.backend()),
            _ => (b.backend(), a.backend()),
        };
        let value = round.to_string();
        assert_eq!(
            writer
                .commit(commit(&version, &value))
                .await
                .expect("commit"),
            KvCommitted::Applied,
            "round {round}"
        );
        let read = writer.get_many(&[key.to_string()]).await.expect("read");
        let now = read[0].clone().expect("written").version;
        assert!(!given.contains(&now), "{now} given twice: {given:?}");
        given.push(now.clone());
        assert_eq!(
            other
                .commit(commit(&version, "stale"))
                .await
                .expect("commit"),
            KvCommitted::Conflict,
            "round {round}: checks the version before the other connection's write"
        );
        version = Some(now);
    }
    a.backend().close();
    b.backend().close();
    let c = open(&name).await;
    assert_eq!(
        c.backend()
            .commit(commit(&version, "later"))
            .await
            .expect("commit"),
        KvCommitted::Applied
    );
    let read = c
        .backend()
        .get_many(&[key.to_string()])
        .await
        .expect("read");
    let later: u64 = read[0]
        .clone()
        .expect("row")
        .version
        .parse()
        .expect("a number");
    let mut before = given.iter().map(|v| v.parse::<u64>().expect("a number"));
    assert!(before.all(|v| v < later), "{later} after {given:?}");
    let stored = c
        .backend()
        .get_many(&["x/0".to_string(), "x/stale".to_string()])
        .await
        .expect("read");
    assert!(
        stored[0].is_some() && stored[1].is_none(),
        "no stale write landed"
    );
}

/// Schema v6 holds a record's index keys in its row: a commit that writes an index key
/// without its row, or deletes one (a commit made for keys of their own, which would
/// leave the row's unchanged keys out), is refused whole (the store never sends one),
/// and nothing is written.
#[wasm_bindgen_test]
async fn an_index_key_written_without_its_row_is_refused_and_nothing_is_written() {
    let store = open(&random_name("stray")).await;
    let kv = store.backend();
    let index = "T/pending/00000000000000000001/x";
    for mutations in [
        vec![put("x/marker", "1"), put(index, "")],
        vec![
            put("x/marker", "1"),
            KvMutation::Delete { key: index.into() },
        ],
        vec![
            put("x/marker", "1"),
            put("R/x", "{}"),
            KvMutation::Delete { key: index.into() },
        ],
    ] {
        let commit = KvCommit {
            checks: Vec::new(),
            mutations,
        };
        let err = kv.commit(commit).await.expect_err("refused");
        assert!(err.to_string().contains("index key"), "{err}");
        let read = kv
            .get_many(&["x/marker".to_string(), "R/x".to_string(), index.to_string()])
            .await
            .expect("read");
        assert_eq!(read, vec![None, None, None], "nothing written");
    }
    // With its row, the key is held by the row: listed, counted, read as a key.
    let commit = KvCommit {
        checks: Vec::new(),
        mutations: vec![put(index, ""), put("R/x", "{}")],
    };
    assert_eq!(
        kv.commit(commit).await.expect("commit"),
        KvCommitted::Applied
    );
    let read = kv.get_many(&[index.to_string()]).await.expect("read");
    assert_eq!(read[0].as_ref().map(|v| v.value.as_str()), Some(""));
    assert_eq!(kv.count("T/", "T0").await.expect("count"), 1);
}

#[wasm_bindgen_test]
async fn records_survive_close_and_reopen() {
    let name = random_name("reopen");
    let store = open(&name).await;
    let plans: Vec<_> = (0..20)
        .map(|n| fixture_plan(n, &RELAYS, Policy::All))
        .collect();
    store.enqueue_many(plans, 1_000).await.expect("enqueue");
    let claimed = store
        .claim(&fixture_claim("tab-1", "lease-1", 5, 60_000), 2_000)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 5);
    let before = store.list(&list_all()).await.expect("list before");
    store.close();
    drop(store);

    let reopened = open(&name).await;
    let after = reopened.list(&list_all()).await.expect("list after");
    assert_eq!(after.len(), 20);
    assert_eq!(
        before, after,
        "every record, lease and revision survives reopen"
    );
    let status = reopened.status().await.expect("status");
    assert_eq!((status.pending, status.leased), (15, 5));
}

#[wasm_bindgen_test]
async fn rows_hold_json_of_the_documented_shape_and_their_index_keys() {
    let name = random_name("shape");
    let store = open(&name).await;
    let plans: Vec<_> = (0..2)
        .map(|n| fixture_plan(n, &RELAYS, Policy::All))
        .collect();
    let ids: Vec<String> = plans.iter().map(|p| p.id.clone()).collect();
    store.enqueue_many(plans, 1_000).await.expect("enqueue");
    store.cancel(&ids[1], 2_000).await.expect("cancel");
    store.close();
    drop(store);
    let db = raw_db(&name).await;
    let shapes = JsFuture::from(raw_row_shapes(&db)).await.expect("rows");
    raw_close(&db);
    let shapes: serde_json::Value =
        serde_json::from_str(&shapes.as_string().expect("json")).expect("parse");
    let again = open(&name).await;
    let mut seen = Vec::new();
    for shape in shapes.as_array().expect("array") {
        let key = shape["key"].as_str().expect("key");
        let Some(stage) = shape["stage"].as_str() else {
            // Schema v6: no index key is a row of its own; the slot lock is a pair.
            assert!(!key.starts_with(['P', 'L', 'T', 'E', 'S']), "{shape}");
            assert_eq!(shape["pair"], true, "{shape}");
            continue;
        };
        assert_eq!(shape["record"], true, "{shape}");
        let stage = stage.to_string();
        // Its index keys, held in the row: the record's keys.rs keys, nothing else.
        let id = key.strip_prefix("R/").expect("row key");
        let record = again.get(id).await.expect("get").expect("kept");
        let mut want = kv_keys::index_keys(&nostr_outbox::store::codec::index_of(&record));
        want.sort();
        let mut index: Vec<String> = shape["index"]
            .as_array()
            .expect("index keys")
            .iter()
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect();
        index.sort();
        assert_eq!(index, want, "{shape}");
        // Row format 2: the format number first, then the record document itself (no
        // index fields kept beside it, no document as text inside the row).
        let keys: Vec<&str> = shape["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .filter_map(|k| k.as_str())
            .collect();
        assert_eq!(keys[..2], ["v", "id"], "{shape}");
        assert_eq!(shape["types"][0], "number", "{shape}");
        for field in ["event", "targets", "policy", "stage", "createdMs"] {
            assert!(keys.contains(&field), "{field}: {shape}");
        }
        assert!(!keys.contains(&"doc"), "{shape}");
        assert_eq!(
            keys.contains(&"dueMs")
                && shape["types"][keys.iter().position(|k| *k == "dueMs").unwrap_or(0)] == "number",
            stage != "cancelled",
            "{shape}"
        );
        seen.push(stage);
    }
    seen.sort();
    assert_eq!(seen, ["cancelled", "pending"]);
}

#[wasm_bindgen_test]
async fn rows_are_read_leniently_where_the_format_allows_and_refused_precisely_otherwise() {
    let name = random_name("leniency");
    let store = open(&name).await;
    let plans: Vec<_> = (0..5)
        .map(|n| fixture_plan(n, &RELAYS, Policy::All))
        .collect();
    let ids: Vec<String> = plans.iter().map(|p| p.id.clone()).collect();
    store.enqueue_many(plans, 1_000).await.expect("enqueue");
    store.close();
    drop(store);
    let db = raw_db(&name).await;
    let patches = [
        // Accepted: `dueMs` null or absent, `v` as a float that is an integer (JSON
        // writes it `2`), extra fields.
        r#"{"dueMs": null}"#,
        r#"{"dueMs": "__delete__", "v": 2.0, "extra": [1, 2]}"#,
        // Refused: `v` as a string, `createdMs` missing, `event` not an object.
        r#"{"v": "2"}"#,
        r#"{"createdMs": "__delete__"}"#,
        r#"{"event": 7}"#,
    ];
    for (id, patch) in ids.iter().zip(patches) {
        JsFuture::from(raw_patch_row(&db, id, patch))
            .await
            .expect("patch");
    }
    raw_close(&db);
    let store = open(&name).await;
    for id in &ids[..2] {
        let record = store.get(id).await.expect("lenient row").expect("found");
        assert_eq!(&record.id, id);
    }
    for (id, needle) in ids[2..].iter().zip([
        r#"row format "2" is not supported"#,
        "missing field `createdMs`",
        "`event`: expected an object",
    ]) {
        let err = store.get(id).await.expect_err("refused row");
        assert_eq!(err.code(), "corrupt_record", "{err}");
        assert!(err.to_string().contains(needle), "{id}: {err}");
    }
    let rows = store.corrupt_rows().await.expect("corrupt rows");
    assert_eq!(rows.len(), 3, "{rows:?}");
}

fn list_all() -> nostr_outbox::core::ListQuery {
    nostr_outbox::core::ListQuery {
        stage: None,
        limit: 1_000,
        after: None,
        ..Default::default()
    }
}

#[wasm_bindgen_test]
async fn two_connections_enqueueing_versions_of_one_slot_never_both_win() {
    let name = random_name("two-tabs-slot");
    let tab_a = open(&name).await;
    let tab_b = open(&name).await;
    // Rounds of versions of one profile, each pair enqueued at once from two connections
    // (as a tab and the service worker would), in both orders of created_at.
    let mut versions = Vec::new();
    for round in 0..20u32 {
        let (older, newer) = (100 + 2 * round, 101 + 2 * round);
        let a = nostr_event(1_000 + round * 2, ALICE, 0, u64::from(older), "", &[]);
        let b = nostr_event(1_001 + round * 2, ALICE, 0, u64::from(newer), "", &[]);
        let (first, second) = if round % 2 == 0 { (a, b) } else { (b, a) };
        let (ra, rb) = join(
            tab_a.enqueue(nostr_plan(first.clone()), 1_000 + u64::from(round)),
            tab_b.enqueue(nostr_plan(second.clone()), 1_000 + u64::from(round)),
        )
        .await;
        ra.expect("enqueue a");
        rb.expect("enqueue b");
        versions.push(first.id);
        versions.push(second.id);
        let mut live = Vec::new();
        for id in &versions {
            let r = tab_a.get(id).await.expect("get").expect("stored");
            if r.stage.may_send() {
                live.push(r.event.id.clone());
            }
        }
        let newest = nostr_event(1_001 + round * 2, ALICE, 0, 0, "", &[]).id;
        assert_eq!(
            live,
            vec![newest],
            "round {round}: exactly the newest may be sent"
        );
    }
}

/// A completion records over the row as it is stored, never over the copy the store
/// kept of what its claim wrote: a record another connection (another tab) cancelled
/// while this one held its lease stays cancelled, and the completion fails as a lost
/// lease. (The store may use its copy only while the row holds the very document the
/// claim wrote; using it regardless fails this test.)
#[wasm_bindgen_test]
async fn a_completion_sees_another_connections_cancel_of_its_record() {
    let (a, b) = two_tabs_with_x("cancel-across").await;
    completion_after("x", &a, &b, async |b: &IdbStore| {
        b.cancel("x", 2_100).await.expect("cancel from tab b");
    })
    .await;
}

/// Two connections to a new database (two tabs), and record `x` enqueued at 1 000.
async fn two_tabs_with_x(prefix: &str) -> (IdbStore, IdbStore) {
    let name = random_name(prefix);
    let (a, b) = (open(&name).await, open(&name).await);
    a.enqueue(fixture_plan(1, &RELAYS, Policy::All).with_id("x"), 1_000)
        .await
        .expect("enqueue");
    (a, b)
}

/// The completion of lease `lease` of record `id` at `revision`, with no answers.
fn bare_completion(id: &str, lease: &str, revision: u64) -> Completion {
    Completion {
        id: id.into(),
        lease_id: lease.into(),
        revision,
        results: Vec::new(),
        jitter: 0,
    }
}

/// Tab `a` claims record `id` (lease `lease-a`, 60 s from 2 000), `change` runs in tab
/// `b`, then `a` completes its lease at 2 200 (its clock): the completion must find
/// what `b` wrote and fail as a lost lease, and `b`'s record must stand. Completing
/// from the record `a`'s claim kept, without comparing it with the row, overwrites
/// `b`'s change: each caller below fails so.
async fn completion_after(
    id: &str,
    a: &IdbStore,
    b: &IdbStore,
    change: impl AsyncFnOnce(&IdbStore),
) {
    let claimed = a
        .claim(&fixture_claim("tab-a", "lease-a", 1, 60_000), 2_000)
        .await
        .expect("claim");
    let revision = claimed.first().expect("one record claimed").revision;
    change(b).await;
    let after_b = b.get(id).await.expect("get from b");
    let done = a
        .complete_attempt(
            &bare_completion(id, "lease-a", revision),
            &fixture_retry(),
            2_200,
        )
        .await;
    assert_eq!(
        done.map(|r| r.stage).map_err(|e| e.code()),
        Err("lease_expired"),
        "the completion finds b's change, not its own lease"
    );
    assert_eq!(a.get(id).await.expect("get"), after_b, "b's change stands");
}

/// Another tab's claim after the lease expired by its clock (clocks of two contexts
/// may differ; here `b`'s is 70 s ahead).
#[wasm_bindgen_test]
async fn a_completion_sees_another_connections_claim_after_its_lease_expired() {
    let (a, b) = two_tabs_with_x("reclaim-across").await;
    completion_after("x", &a, &b, async |b: &IdbStore| {
        let got = b
            .claim(&fixture_claim("tab-b", "lease-b", 1, 60_000), 62_100)
            .await
            .expect("claim from b");
        assert_eq!(got.len(), 1, "b claims the expired lease's record");
    })
    .await;
}

/// The Web Lock holder's take-over of a lease another owner holds.
#[wasm_bindgen_test]
async fn a_completion_sees_another_connections_take_over() {
    let (a, b) = two_tabs_with_x("take-over-across").await;
    completion_after("x", &a, &b, async |b: &IdbStore| {
        let got = b
            .take_over(&fixture_claim("tab-b", "lease-b", 8, 60_000), 2_100)
            .await
            .expect("take over from b");
        assert_eq!(got.len(), 1, "b takes the lease over");
    })
    .await;
}

/// A newer version of a replaceable event, enqueued in another tab, withdraws the
/// leased one.
#[wasm_bindgen_test]
async fn a_completion_sees_another_connections_newer_version() {
    let name = random_name("supersede-across");
    let (a, b) = (open(&name).await, open(&name).await);
    let old = nostr_event(1, ALICE, 0, 100, "", &[]);
    let id = old.id.clone();
    a.enqueue(nostr_plan(old), 1_000).await.expect("enqueue");
    completion_after(&id, &a, &b, async |b: &IdbStore| {
        let newer = nostr_plan(nostr_event(2, ALICE, 0, 200, "", &[]));
        b.enqueue(newer, 2_100).await.expect("enqueue from b");
    })
    .await;
    let old = a.get(&id).await.expect("get").expect("old profile");
    assert_eq!(old.stage, Stage::Superseded);
}

#[wasm_bindgen_test]
async fn two_connections_never_lease_the_same_record() {
    let name = random_name("two-tabs");
    let tab_a = open(&name).await;
    let tab_b = open(&name).await;
    let total = 300u32;
    let plans: Vec<_> = (0..total)
        .map(|n| fixture_plan(n, &RELAYS, Policy::All))
        .collect();
    tab_a.enqueue_many(plans, 1_000).await.expect("enqueue");

    let mut owner_of: BTreeMap<String, &str> = BTreeMap::new();
    let mut round = 0u32;
    loop {
        round += 1;
        let lease_a = format!("a-{round}");
        let lease_b = format!("b-{round}");
        let req_a = fixture_claim("tab-a", &lease_a, 7, 3_600_000);
        let req_b = fixture_claim("tab-b", &lease_b, 11, 3_600_000);
        let (got_a, got_b) = join(tab_a.claim(&req_a, 2_000), tab_b.claim(&req_b, 2_000)).await;
        let (got_a, got_b) = (got_a.expect("claim a"), got_b.expect("claim b"));
        if got_a.is_empty() && got_b.is_empty() {
            break;
        }
        for (records, who) in [(got_a, "a"), (got_b, "b")] {
            for r in records {
                if let Some(previous) = owner_of.insert(r.id.clone(), who) {
                    panic!("record {} leased to {previous} and again to {who}", r.id);
                }
            }
        }
        assert!(round < 1_000, "claims do not terminate");
    }
    assert_eq!(
        owner_of.len(),
        total as usize,
        "every record claimed exactly once"
    );
    let by_a = owner_of.values().filter(|w| **w == "a").count();
    assert!(
        by_a > 0 && by_a < total as usize,
        "both connections took part ({by_a} by a)"
    );
    let status = tab_b.status().await.expect("status");
    assert_eq!(status.leased, total);
}

#[wasm_bindgen_test]
async fn a_newer_schema_on_disk_is_refused_and_untouched() {
    let name = random_name("newer");
    let db = JsFuture::from(raw_open(&name, SCHEMA_VERSION + 1))
        .await
        .expect("raw open at a newer version");
    JsFuture::from(raw_put(
        &db,
        "future",
        &JsValue::from_str("keep me"),
        Some("k"),
    ))
    .await
    .expect("write into the newer database");
    raw_close(&db);

    let err = IdbStore::open(IdbOptions::new(&name))
        .await
        .expect_err("a newer schema must be refused");
    assert_eq!(err.code(), "storage_version_too_new");
    assert!(
        err.to_string().contains(&format!("{}", SCHEMA_VERSION + 1)),
        "{err}"
    );

    let db = JsFuture::from(raw_open(&name, SCHEMA_VERSION + 1))
        .await
        .expect("reopen");
    assert_eq!(raw_version(&db), SCHEMA_VERSION + 1);
    let count = JsFuture::from(raw_count(&db, "future"))
        .await
        .expect("count");
    assert_eq!(
        count.as_f64(),
        Some(1.0),
        "the newer database keeps its data"
    );
    raw_close(&db);
}

#[wasm_bindgen_test]
async fn a_version_change_elsewhere_closes_us_and_the_next_call_reopens() {
    let name = random_name("versionchange");
    let store = open(&name).await;
    store
        .enqueue(fixture_plan(1, &RELAYS, Policy::All), 1_000)
        .await
        .expect("enqueue");
    assert!(store.is_connected());
    // Another context upgrades the database: it must not be blocked by us.
    let other = JsFuture::from(raw_open(&name, SCHEMA_VERSION + 1))
        .await
        .expect("the other context's upgrade proceeds");
    assert!(
        !store.is_connected(),
        "our connection closed for the upgrade"
    );
    raw_close(&other);
    // The database is now newer than we support: the next call says so, typed.
    let err = store.status().await.expect_err("newer schema");
    assert_eq!(err.code(), "storage_version_too_new");
}

#[wasm_bindgen_test]
async fn a_lost_connection_is_reopened_and_the_operation_retried() {
    let name = random_name("lost");
    let store = open(&name).await;
    store
        .enqueue(fixture_plan(1, &RELAYS, Policy::All), 1_000)
        .await
        .expect("enqueue");
    // The browser drops the connection (Safari does after backgrounding): the next
    // write meets a dead handle, reopens once and succeeds.
    store.lose_connection_for_tests();
    store
        .enqueue(fixture_plan(2, &RELAYS, Policy::All), 1_000)
        .await
        .expect("enqueue after the connection was lost");
    let status = store.status().await.expect("status");
    assert_eq!(status.pending, 2);
}

#[wasm_bindgen_test]
async fn a_closed_store_refuses_calls_and_does_not_reopen() {
    let name = random_name("closed");
    let store = open(&name).await;
    store
        .enqueue(fixture_plan(1, &RELAYS, Policy::All), 1_000)
        .await
        .expect("enqueue");
    store.close();
    assert!(!store.is_connected());
    let err = store
        .enqueue(fixture_plan(2, &RELAYS, Policy::All), 1_000)
        .await
        .expect_err("closed");
    assert_eq!(err.code(), "closed");
    assert!(!store.is_connected(), "a call after close does not reopen");
    let again = open(&name).await;
    assert_eq!(
        again.status().await.expect("status").pending,
        1,
        "nothing written after close"
    );
}

/// A record's row as schema 6 stores it, written behind the store's back: `{v, n, k}`
/// with `value` as its JSON, a version past any the tests' stores reach, and `k` as its
/// index keys.
fn v6_row(value: &str, k: JsValue) -> JsValue {
    let row = js_sys::Object::new();
    for (field, v) in [
        ("v", JsValue::from_str(value)),
        ("n", JsValue::from_f64(1e9)),
        ("k", k),
    ] {
        js_sys::Reflect::set(&row, &field.into(), &v).expect("set");
    }
    row.into()
}

#[wasm_bindgen_test]
async fn corrupt_rows_are_reported_skipped_and_kept() {
    let name = random_name("corrupt");
    let store = open(&name).await;
    store
        .enqueue_many(
            vec![
                fixture_plan(1, &RELAYS, Policy::All),
                fixture_plan(2, &RELAYS, Policy::All),
            ],
            1_000,
        )
        .await
        .expect("enqueue");
    store.close();

    // Damage one row behind the store's back: a due row whose document is garbage,
    // filed in the claim order, the list order and the stage index as a row would be.
    let db = raw_db(&name).await;
    let bad = serde_json::json!({
        "id": "broken", "v": 1, "stage": "pending", "dueMs": 500, "createdMs": 500,
        "eventId": "00", "rank": 1, "doc": "{not json",
    });
    let row = nostr_outbox::store::codec::RowIndex {
        id: "broken".into(),
        stage: "pending".into(),
        due_ms: Some(500),
        created_ms: 500,
        event_id: "00".into(),
        slot: None,
        rank: Some(1),
    };
    // As schema v6 keeps a row: `{v, n, k}`, its index keys in `k`.
    let index: js_sys::Array = kv_keys::index_keys(&row)
        .iter()
        .map(|k| JsValue::from_str(k))
        .collect();
    let value = v6_row(&bad.to_string(), index.into());
    JsFuture::from(raw_put(
        &db,
        "kv",
        &value,
        Some(&kv_keys::row_key("broken")),
    ))
    .await
    .expect("put corrupt row");
    raw_close(&db);
    let store = open(&name).await;

    let err = store.get("broken").await.expect_err("corrupt get");
    assert_eq!(err.code(), "corrupt_record");
    let claimed = store
        .claim(&fixture_claim("tab", "lease", 10, 60_000), 2_000)
        .await
        .expect("claim skips the corrupt row");
    assert_eq!(
        claimed.len(),
        2,
        "both healthy records claimed past the corrupt head"
    );
    assert!(store
        .corrupt_rows()
        .await
        .expect("corrupt rows")
        .iter()
        .any(|c| c.id == "broken"));
    assert_eq!(store.purge(u64::MAX).await.expect("purge"), 0);
    assert_eq!(
        store.get("broken").await.expect_err("still there").code(),
        "corrupt_record",
        "a corrupt row is never deleted"
    );
    store.close();

    // A fresh connection: status() reads every row, so the corrupt row is counted
    // apart, not as the `pending` its index field claims.
    let store = open(&name).await;
    let counts = store.status().await.expect("status");
    assert_eq!(counts.corrupt, 1, "{counts:?}");
    assert_eq!(counts.leased, 2, "{counts:?}");
    assert_eq!(
        counts.pending, 0,
        "the corrupt row is not pending: {counts:?}"
    );
    assert_eq!(counts.total(), 3, "every stored row: {counts:?}");
    let rows = store.corrupt_rows().await.expect("corrupt rows");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].id, "broken");
    assert_eq!(rows[0].stage, Some(Stage::Pending));
    assert!(!rows[0].reason.is_empty());
    assert_eq!(
        store
            .list(&ListQuery {
                limit: 100,
                ..ListQuery::default()
            })
            .await
            .expect("list")
            .len() as u32,
        counts.total() - counts.corrupt,
        "list and status agree"
    );
}

/// A row whose index keys are a string, not an array (no build writes one; other software
/// could): the index holds the string as one key, and a list over it skips the row as
/// corrupt instead of hanging on it.
#[wasm_bindgen_test]
async fn a_row_whose_index_keys_are_a_string_is_skipped_as_corrupt_not_a_hang() {
    let name = random_name("string-k");
    let store = open(&name).await;
    store
        .enqueue_many(vec![fixture_plan(1, &RELAYS, Policy::All)], 1_000)
        .await
        .expect("enqueue");
    store.close();
    let db = raw_db(&name).await;
    let value = v6_row(
        "{not json",
        JsValue::from_str("T/pending/00000000000000000500/broken"),
    );
    JsFuture::from(raw_put(&db, "kv", &value, Some("R/broken")))
        .await
        .expect("put");
    raw_close(&db);
    let store = open(&name).await;
    let query = ListQuery {
        stage: Some(Stage::Pending),
        limit: 100,
        ..ListQuery::default()
    };
    let listed = within(10_000, store.list(&query))
        .await
        .expect("the list answers")
        .expect("list");
    assert_eq!(listed.len(), 1, "the healthy record only");
    let corrupt = store.corrupt_rows().await.expect("corrupt rows");
    assert!(corrupt.iter().any(|c| c.id == "broken"), "{corrupt:?}");
}

#[wasm_bindgen_test]
async fn storage_estimate_and_persistence_are_readable() {
    use nostr_outbox::platform::storage as persistence;
    let estimate = persistence::estimate()
        .await
        .expect("navigator.storage.estimate() exists in Chromium, Firefox and WebKit (Safari 17+)");
    assert!(estimate.quota.unwrap_or(0.0) > 0.0, "{estimate:?}");
    // Chromium and WebKit answer at once without a prompt (WebKit: false for a page
    // that is not a home-screen web app). Firefox asks the user, and nobody answers in a
    // headless run: the call must still return (as `None`), not hang.
    let firefox = web_sys_user_agent().contains("Firefox");
    let granted = persistence::request_persistence_within(1_500).await;
    if firefox {
        assert_eq!(
            granted, None,
            "an unanswered prompt is reported as no answer"
        );
    } else {
        assert!(granted.is_some(), "persist() answered");
        assert_eq!(persistence::is_persisted().await, granted);
    }
}

#[wasm_bindgen_test]
async fn a_blocked_upgrade_is_a_typed_error_not_a_hang() {
    let name = random_name("blocked");
    open(&name).await.close();
    // A connection that ignores `versionchange` (as an old tab of another library would).
    let stubborn = raw_db(&name).await;
    let err = IdbStore::open_at_version_for_tests(IdbOptions::new(&name), SCHEMA_VERSION + 1)
        .await
        .expect_err("the upgrade is blocked");
    assert_eq!(err.code(), "storage_blocked", "{err}");
    // Once the stubborn connection goes, the abandoned open completes (its upgrade runs
    // whole) and is closed at once, so it does not block anyone either.
    raw_close(&stubborn);
    let later = JsFuture::from(raw_open(&name, SCHEMA_VERSION + 2))
        .await
        .expect("a later upgrade is not blocked by the abandoned open");
    assert_eq!(raw_version(&later), SCHEMA_VERSION + 2);
    raw_close(&later);
}

#[wasm_bindgen_test]
async fn an_add_the_browser_leaves_unanswered_at_an_abort_does_not_hang_the_enqueue() {
    // Seen in Chromium with a full origin quota: an enqueue's transaction aborted at its
    // commit (QuotaExceededError), its lookup add never answered, and the enqueue's
    // promise never settled. Here the abort comes from a failed signature check (the
    // enqueue hung here before the store stopped waiting at an abort) and from a stored
    // key (a replay's first attempt; Chromium answers its lookup add before the abort).
    let s = open(&random_name("unanswered")).await;
    let plan = fixture_plan(1, &RELAYS, Policy::Any);
    s.enqueue(plan.clone(), 1_000).await.expect("first enqueue");
    set_unanswered_on_abort(true);
    let replay = within(5_000, s.enqueue(plan, 2_000)).await;
    let fresh = fixture_plan(2, &RELAYS, Policy::Any);
    let checked = within(
        5_000,
        s.enqueue_many_checked(vec![fresh.clone()], 3_000, &mut || false, None),
    )
    .await;
    set_unanswered_on_abort(false);
    let replay = replay.expect("the replay settles").expect("replay");
    assert_eq!(replay.outcome, EnqueueOutcome::Replay);
    let checked = checked.expect("the refused enqueue settles");
    assert!(matches!(checked, Ok(None)), "{checked:?}");
    assert!(
        s.get(&fresh.id).await.expect("get").is_none(),
        "nothing written"
    );
    assert_eq!(s.status().await.expect("status").pending, 1);
    s.close();
}
