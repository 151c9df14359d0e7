//! Databases written by the builds of schemas v3 and v4 open and are migrated in place
//! to schema v5 (the one store's `kv` layout): each is made here by hand, exactly as
//! that build laid it out (object stores, key paths, indexes, v4's `lookup` rows, the
//! `meta` schema row), filled with the rows those builds wrote
//! (`tests/data/idb_v3_rows.json`: 12 records in 6 stages, lanes `dm` and `profile`,
//! all three priorities, a replaceable and two addressable events; v4 stored the same
//! rows) and one row no build can read, then opened through [`IdbStore`].
//!
//! Every record reads back unchanged, through `get`, `list` (all, by stage, by lane),
//! claims and the Nostr rules; `records` and `lookup` are emptied into `kv`, and the
//! unreadable row is moved as it was and reported.
//!
//! And a schema-v5 database whose `kv` holds key layout 2 (what the build of 2a75019
//! wrote: `tests/data/kv_v2_entries.json`) is moved to the current key layout when it
//! opens, by two openers at once, in batches.
#![cfg(target_arch = "wasm32")]

use nostr_outbox::core::{EnqueueOutcome, ListQuery, Priority, Record, Stage, DEFAULT_LANE};
use nostr_outbox::store::codec::{self, StoredRow};
use nostr_outbox::store::conformance::{fixture_claim, nostr_event, nostr_plan, ALICE};
use nostr_outbox::store::idb::{IdbOptions, IdbStore, SCHEMA_VERSION};
use nostr_outbox::store::kv::keys;
use nostr_outbox::store::Store;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const ROWS: &str = include_str!("data/idb_v3_rows.json");
const KV_V2: &str = include_str!("data/kv_v2_entries.json");

#[wasm_bindgen(inline_js = r#"
export function createLegacy(name, rowsJson, version) {
  const rows = JSON.parse(rowsJson);
  const unreadable = { id: "zz-unreadable", v: 1, stage: "pending", createdMs: 5, eventId: "e", doc: "{not json" };
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, version);
    req.onupgradeneeded = () => {
      const db = req.result;
      const records = db.createObjectStore("records", { keyPath: "id" });
      records.createIndex("due", ["rank", "dueMs", "createdMs", "id"]);
      records.createIndex("stage", ["stage", "createdMs", "id"]);
      records.createIndex("slot", ["slot", "slotPart", "slotOrder", "eventId"]);
      records.createIndex("laneDue", ["lane", "rank", "dueMs", "createdMs", "id"]);
      const all = [...rows, unreadable];
      if (version >= 4) {
        const lookup = db.createObjectStore("lookup", { keyPath: "id" });
        lookup.createIndex("created", ["createdMs", "id"]);
        lookup.createIndex("event", "eventId");
        for (const { id, eventId, createdMs } of all) {
          lookup.put(eventId === id ? { id, createdMs } : { id, eventId, createdMs });
        }
      } else {
        records.createIndex("created", ["createdMs", "id"]);
        records.createIndex("event", "eventId");
      }
      const meta = db.createObjectStore("meta");
      meta.put({ version, library: "0.2.0" }, "schema");
      for (const row of all) records.put(row);
    };
    req.onsuccess = () => { req.result.close(); resolve(rows.length); };
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error("blocked"));
  });
}
// Writes `entries` ([key, value] pairs) into the `kv` store of database `name` as the
// store keeps them (`[value, version]`).
export function fillKv(name, entriesJson) {
  const entries = JSON.parse(entriesJson);
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name);
    req.onsuccess = () => {
      const db = req.result;
      const tx = db.transaction("kv", "readwrite");
      entries.forEach(([key, value], i) => tx.objectStore("kv").put([value, i + 1], key));
      tx.oncomplete = () => { db.close(); resolve(entries.length); };
      tx.onerror = () => reject(tx.error);
    };
    req.onerror = () => reject(req.error);
  });
}
export function dumpKeys(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name);
    req.onsuccess = () => {
      const db = req.result;
      const keys = db.transaction("kv").objectStore("kv").getAllKeys();
      keys.onsuccess = () => { db.close(); resolve(keys.result); };
      keys.onerror = () => reject(keys.error);
    };
    req.onerror = () => reject(req.error);
  });
}
// The database as it is on disk: its version and object stores, the schema row, the
// rows left in `records`/`lookup`, every `kv` key, each record row's JSON and the index
// keys it holds (`k`, schema 6), and how many those are in all.
export function dump(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name);
    req.onsuccess = () => {
      const db = req.result;
      const legacy = ["records", "lookup"].filter((s) => db.objectStoreNames.contains(s));
      const tx = db.transaction(["kv", "meta", ...legacy]);
      const counts = legacy.map((s) => tx.objectStore(s).count());
      const keys = tx.objectStore("kv").getAllKeys();
      const values = tx.objectStore("kv").getAll();
      const schema = tx.objectStore("meta").get("schema");
      tx.oncomplete = () => {
        db.close();
        const held = {};
        keys.result.forEach((k, i) => { if (k.startsWith("R/")) held[k] = values.result[i].k; });
        resolve(JSON.stringify({
          version: db.version,
          stores: [...db.objectStoreNames],
          schema: schema.result,
          legacyRows: counts.reduce((n, c) => n + c.result, 0),
          rows: keys.result.map((k, i) => [k, values.result[i].v]).filter(([k]) => k.startsWith("R/")),
          keys: keys.result,
          index: values.result.reduce((n, row) => n + (row.k ? row.k.length : 0), 0),
          held,
        }));
      };
    };
    req.onerror = () => reject(req.error);
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = createLegacy)]
    fn create_legacy(name: &str, rows_json: &str, version: u32) -> js_sys::Promise;
    #[wasm_bindgen(js_name = dump)]
    fn dump_js(name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = fillKv)]
    fn fill_kv(name: &str, entries_json: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = dumpKeys)]
    fn dump_keys(name: &str) -> js_sys::Promise;
}

/// The records the fixture's rows hold, in key order.
fn fixture_records() -> Vec<Record> {
    let rows: Vec<StoredRow> = serde_json::from_str(ROWS).expect("fixture");
    rows.iter()
        .map(|row| {
            let text = serde_json::to_string(row).expect("json");
            codec::read_row(&row.id, &text).expect("decode").0
        })
        .collect()
}

fn list_all(stage: Option<Stage>, lane: Option<&str>) -> ListQuery {
    ListQuery {
        stage,
        limit: 1000,
        lane: lane.map(str::to_string),
        ..Default::default()
    }
}

/// Database `name` as the JavaScript `dump` (above) reads it.
async fn read_dump(name: &str) -> serde_json::Value {
    let dump = JsFuture::from(dump_js(name)).await.expect("dump");
    serde_json::from_str(&dump.as_string().expect("json")).expect("parse")
}

/// The keys of `kv` in a [`read_dump`] that begin as an index key does (`P`, `L`, `T`, `E`,
/// `S`: schema 6 holds index keys in their rows, so none).
fn index_keys_as_rows(dump: &serde_json::Value) -> Vec<&str> {
    dump["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .filter_map(|k| k.as_str())
        .filter(|k| k.starts_with(['P', 'L', 'T', 'E', 'S']))
        .collect()
}

#[wasm_bindgen_test]
async fn v3_fixture_database_is_migrated_to_v5_in_place() {
    fixture_database_is_migrated_to_v5_in_place(3).await;
}

#[wasm_bindgen_test]
async fn v4_fixture_database_is_migrated_to_v5_in_place() {
    fixture_database_is_migrated_to_v5_in_place(4).await;
}

async fn fixture_database_is_migrated_to_v5_in_place(version: u32) {
    let name = format!("v{version}-fixture-{}", js_sys::Math::random());
    let n = JsFuture::from(create_legacy(&name, ROWS, version))
        .await
        .expect("create the legacy database");
    assert_eq!(n.as_f64(), Some(12.0));
    let store = IdbStore::open(IdbOptions::new(name.as_str()))
        .await
        .expect("open the legacy database");
    assert_eq!(SCHEMA_VERSION, 6);

    let want = fixture_records();
    for record in &want {
        let got = store.get(&record.id).await.expect("get");
        assert_eq!(got.as_ref(), Some(record), "{}", record.id);
    }
    // Listed in creation order, whole; by stage and by lane, the same records.
    let mut by_created = want.clone();
    by_created.sort_by(|a, b| a.list_key().cmp(&b.list_key()));
    let listed = store.list(&list_all(None, None)).await.expect("list");
    assert_eq!(listed, by_created);
    for stage in Stage::ALL {
        let listed = store
            .list(&list_all(Some(stage), None))
            .await
            .expect("list");
        let wanted: Vec<&Record> = by_created.iter().filter(|r| r.stage == stage).collect();
        assert_eq!(listed.iter().collect::<Vec<_>>(), wanted, "{stage:?}");
    }
    for lane in ["dm", "profile", DEFAULT_LANE] {
        let listed = store.list(&list_all(None, Some(lane))).await.expect("list");
        let wanted: Vec<&Record> = by_created.iter().filter(|r| r.lane == lane).collect();
        assert!(!wanted.is_empty());
        assert_eq!(listed.iter().collect::<Vec<_>>(), wanted, "{lane}");
    }
    // The unreadable row stays, reported; the others are counted by stage.
    let corrupt = store.corrupt_rows().await.expect("corrupt rows");
    assert_eq!(corrupt.len(), 1, "{corrupt:?}");
    assert_eq!(corrupt[0].id, "zz-unreadable");
    let counts = store.status().await.expect("status");
    assert_eq!(counts.corrupt, 1);
    assert_eq!(counts.total() - counts.corrupt, 12, "{counts:?}");

    // On disk: `records` and `lookup` emptied into `kv`, one row per record there (its
    // record as it was, in row format 2), the schema row at 5.
    let dump = read_dump(&name).await;
    assert_eq!(dump["version"], 6);
    assert_eq!(dump["schema"]["version"], 6);
    assert_eq!(dump["legacyRows"], 0, "every legacy row moved");
    let stored: Vec<serde_json::Value> = serde_json::from_str(ROWS).expect("fixture");
    let rows = dump["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 13);
    for (row, before) in rows.iter().zip(&stored) {
        let text = row[1].as_str().expect("json");
        assert_eq!(
            row[0].as_str(),
            Some(keys::row_key(before["id"].as_str().expect("id")).as_str())
        );
        if before["doc"] == "{not json" {
            continue;
        }
        let mut row: serde_json::Value = serde_json::from_str(text).expect("row");
        let format = row.as_object_mut().and_then(|o| o.remove("v"));
        assert_eq!(format, Some(2.into()), "{text}");
        let doc: serde_json::Value =
            serde_json::from_str(before["doc"].as_str().expect("doc")).expect("doc");
        assert_eq!(row, doc, "the record is moved as it was");
    }
    let unreadable: serde_json::Value =
        serde_json::from_str(rows[12][1].as_str().expect("json")).expect("row");
    assert_eq!(
        unreadable["doc"], "{not json",
        "the unreadable row is moved untouched"
    );
    assert!(
        dump["index"].as_u64().expect("index keys") > 12 * 3,
        "index keys written in the rows"
    );
    assert_eq!(
        index_keys_as_rows(&dump),
        Vec::<&str>::new(),
        "no index key is a row of its own"
    );

    // Claims find the migrated records in priority order, with their events.
    let now = 1_700_000_400_000;
    let claimed = store
        .claim(&fixture_claim("v3-test", "v3-lease", 256, 60_000), now)
        .await
        .expect("claim");
    assert!(claimed.len() >= 6, "{}", claimed.len());
    assert_eq!(claimed[0].priority, Priority::High);
    assert_eq!(claimed.last().map(|r| r.priority), Some(Priority::Low));
    for record in &claimed {
        let before = want.iter().find(|r| r.id == record.id).expect("known");
        assert_eq!(record.event, before.event);
        assert_eq!(
            store.get(&record.id).await.expect("get").as_ref(),
            Some(record)
        );
    }

    // The Nostr rules see the migrated rows: a newer profile by the same author
    // withdraws the older profiles that may still be sent, reported with their events.
    let newer = nostr_event(200, ALICE, 0, 1_800_000_000, "", &[]);
    let answer = store
        .enqueue(nostr_plan(newer), now + 1)
        .await
        .expect("enqueue a newer profile");
    assert_eq!(answer.outcome, EnqueueOutcome::Created);
    assert!(!answer.withdrawn.is_empty());
    for r in &answer.withdrawn {
        assert_eq!(r.stage, Stage::Superseded);
        let before = want.iter().find(|w| w.id == r.id).expect("known");
        assert_eq!(r.event, before.event);
        assert_eq!(store.get(&r.id).await.expect("get").as_ref(), Some(r));
    }
    store.close();
}

/// 450 pending records (more than two batches of a move), as the store makes them.
async fn records_450() -> Vec<Record> {
    use nostr_outbox::core::Policy;
    use nostr_outbox::store::conformance::{fixture_plan, RELAYS};
    use nostr_outbox::store::MemoryStore;
    let memory = MemoryStore::in_memory();
    let plans = (1..=450).map(|n| fixture_plan(n, &RELAYS, Policy::All));
    memory
        .enqueue_many(plans.collect(), 1_700_000_000_000)
        .await
        .expect("enqueue");
    let want = memory.snapshot();
    assert_eq!(want.len(), 450);
    want
}

/// A v4 database of 450 records (three batches of the move) opened by two stores at
/// once: both open, their moves take turns, every row is moved once, and every record
/// reads back as it was.
#[wasm_bindgen_test]
async fn a_large_v4_database_is_moved_in_batches_by_two_openers_at_once() {
    let want = records_450().await;
    let rows: Vec<StoredRow> = want
        .iter()
        .map(|r| codec::encode_v1(r).expect("encode"))
        .collect();
    let rows = serde_json::to_string(&rows).expect("rows");
    let name = format!("v4-large-{}", js_sys::Math::random());
    JsFuture::from(create_legacy(&name, &rows, 4))
        .await
        .expect("create the legacy database");

    let (a, b) = futures_util::future::join(
        IdbStore::open(IdbOptions::new(name.as_str())),
        IdbStore::open(IdbOptions::new(name.as_str())),
    )
    .await;
    let (a, b) = (a.expect("first opener"), b.expect("second opener"));
    let mut by_created = want.clone();
    by_created.sort_by(|x, y| x.list_key().cmp(&y.list_key()));
    for store in [&a, &b] {
        let listed = store.list(&list_all(None, None)).await.expect("list");
        assert_eq!(listed, by_created);
        let counts = store.status().await.expect("status");
        assert_eq!((counts.pending, counts.corrupt), (450, 1), "{counts:?}");
    }
    a.close();
    b.close();
    let dump = read_dump(&name).await;
    assert_eq!(dump["legacyRows"], 0, "every legacy row moved");
    assert_eq!(
        dump["rows"].as_array().map(Vec::len),
        Some(451),
        "one row each"
    );
}

/// A schema-v5 database made by this build, its `kv` filled with `entries` (key layout
/// 2, as the build of 2a75019 wrote them), closed.
async fn layout_2_database(entries: &str) -> String {
    let name = format!("kv-v2-{}", js_sys::Math::random());
    IdbStore::open(IdbOptions::new(name.as_str()))
        .await
        .expect("create")
        .close();
    JsFuture::from(fill_kv(&name, entries))
        .await
        .expect("fill kv");
    name
}

/// The keys of key layouts 1 and 2 left in `kv`.
async fn old_keys(name: &str) -> Vec<String> {
    let keys = JsFuture::from(dump_keys(name)).await.expect("keys");
    js_sys::Array::from(&keys)
        .iter()
        .filter_map(|k| k.as_string())
        .filter(|k| {
            keys::OLD_RANGES
                .iter()
                .any(|(a, b)| k.as_str() >= *a && k.as_str() < *b)
        })
        .collect()
}

#[wasm_bindgen_test]
async fn a_key_layout_2_database_is_moved_to_the_current_layout_at_open() {
    let entries: Vec<(String, String)> = serde_json::from_str(KV_V2).expect("fixture");
    let want: Vec<Record> = entries
        .iter()
        .filter_map(|(k, v)| Some(codec::read_row(&keys::old_row_id(k)?, v).expect("row").0))
        .collect();
    assert_eq!(want.len(), 11);
    let name = layout_2_database(KV_V2).await;
    assert!(old_keys(&name).await.len() > 11);
    let (a, b) = futures_util::future::join(
        IdbStore::open(IdbOptions::new(name.as_str())),
        IdbStore::open(IdbOptions::new(name.as_str())),
    )
    .await;
    let (a, b) = (a.expect("first opener"), b.expect("second opener"));
    assert_eq!(
        old_keys(&name).await,
        Vec::<String>::new(),
        "nothing of layout 2 left"
    );
    for record in &want {
        let got = a.get(&record.id).await.expect("get");
        assert_eq!(got.as_ref(), Some(record), "{}", record.id);
    }
    let counts = b.status().await.expect("status");
    assert_eq!((counts.total(), counts.corrupt), (11, 0), "{counts:?}");
    // The claim order holds across priorities and due times (as natively: tests/store/kv.rs).
    let t0 = 1_700_000_000_000u64;
    let id = |n: u32| format!("{n:064x}");
    let claimed = a
        .claim(&fixture_claim("o", "l", 10, 1_000), t0 + 70_000_000)
        .await
        .expect("claim");
    let got: Vec<String> = claimed.iter().map(|r| r.id.clone()).collect();
    let long = format!("long.{}", "x".repeat(120));
    assert_eq!(got, vec![id(8), id(9), id(2), id(4), long], "claim order");
    // The slot index moved: a newer version of the article supersedes it.
    let newer = nostr_plan(nostr_event(12, ALICE, 30_023, 2_000, "post/1 é", &[]));
    b.enqueue(newer, t0 + 80_000_000)
        .await
        .expect("newer article");
    let article = a.get(&id(8)).await.expect("get").expect("kept");
    assert_eq!(article.stage, Stage::Superseded);
    a.close();
    b.close();
}

#[wasm_bindgen_test]
async fn a_large_key_layout_2_database_is_moved_in_batches() {
    // 450 rows of layout 2 (rows only: their index keys change nothing in the move),
    // more than two batches, and one that does not decode.
    let want = records_450().await;
    let mut entries: Vec<(String, String)> = want
        .iter()
        .map(|r| (keys::old_row_key(&r.id), codec::write_row(r).expect("row")))
        .collect();
    entries.push((keys::old_row_key("broken"), "{not json".into()));
    let name = layout_2_database(&serde_json::to_string(&entries).expect("json")).await;
    let store = IdbStore::open(IdbOptions::new(name.as_str()))
        .await
        .expect("open");
    assert_eq!(old_keys(&name).await, Vec::<String>::new());
    let mut by_created = want.clone();
    by_created.sort_by(|x, y| x.list_key().cmp(&y.list_key()));
    let listed = store.list(&list_all(None, None)).await.expect("list");
    assert_eq!(listed, by_created);
    let counts = store.status().await.expect("status");
    assert_eq!((counts.pending, counts.corrupt), (450, 1), "{counts:?}");
    store.close();
}

#[wasm_bindgen(inline_js = r#"
// A schema-v5 database as the build before v6 left it: `kv` and `meta`, every entry
// `[value, version]` (`entries`: [key, value, version]) under its key (index keys as
// entries of their own), the schema row
// at 5 and the commit counter.
export function createV5(name, entriesJson) {
  const entries = JSON.parse(entriesJson);
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 5);
    req.onupgradeneeded = () => {
      const db = req.result;
      const kv = db.createObjectStore("kv");
      const meta = db.createObjectStore("meta");
      meta.put({ version: 5, library: "0.2.0" }, "schema");
      meta.put(Math.max(...entries.map((e) => e[2])), "commit");
      for (const [key, value, version] of entries) kv.put([value, version], key);
    };
    req.onsuccess = () => { req.result.close(); resolve(entries.length); };
    req.onerror = () => reject(req.error);
  });
}
// An upgrade to v6 that dies half-way: it creates the new store and its index, copies
// an entry, deletes the claim-order keys, then its transaction aborts (as a crash or a
// closed tab would end it).
export function crashedUpgrade(name) {
  return new Promise((resolve) => {
    const req = indexedDB.open(name, 6);
    req.onupgradeneeded = () => {
      const kv = req.transaction.objectStore("kv");
      const next = req.result.createObjectStore("kv-v6");
      next.createIndex("k", "k", { multiEntry: true });
      next.put({ v: "{}", n: 1, k: ["P/1/x"] }, "R/x");
      kv.delete(IDBKeyRange.bound("P/", "P0", false, true)).onsuccess = () => req.transaction.abort();
    };
    req.onsuccess = () => { req.result.close(); resolve("opened"); };
    req.onerror = () => resolve(req.error && req.error.name);
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = createV5)]
    fn create_v5(name: &str, entries_json: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = crashedUpgrade)]
    fn crashed_upgrade(name: &str) -> js_sys::Promise;
}

/// A schema-v5 database (what the build before v6 wrote: the same store over `kv`, a
/// record's index keys as entries of their own) opens and is moved to v6 in place, after
/// an upgrade that died half-way: every index key goes into its row, and every record,
/// list, count, claim and lease reads as it did.
#[wasm_bindgen_test]
async fn a_v5_database_is_moved_to_v6_in_place_after_a_crashed_upgrade() {
    use nostr_outbox::core::Policy;
    use nostr_outbox::store::conformance::{fixture_plan, RELAYS};
    use nostr_outbox::store::kv::{KvStore, MemoryKv};
    // What v5 wrote is what the store writes over any backend: made here on memory.
    let t0 = 1_700_000_000_000u64;
    let v5 = KvStore::new(MemoryKv::new());
    let mut plans: Vec<_> = (1..=30)
        .map(|n| {
            let p = fixture_plan(n, &RELAYS, Policy::All);
            match n % 3 {
                0 => p.with_priority(Priority::High),
                1 => p.with_priority(Priority::Low),
                _ => p,
            }
        })
        .collect();
    plans.push(nostr_plan(nostr_event(
        100,
        ALICE,
        0,
        1_700_000_000,
        "",
        &[],
    )));
    plans.push(nostr_plan(nostr_event(
        101,
        ALICE,
        30_023,
        1_700_000_000,
        "post/1",
        &[],
    )));
    v5.enqueue_many(plans, t0).await.expect("enqueue");
    let leased = v5
        .claim(&fixture_claim("v5", "v5-lease", 4, 600_000), t0 + 1)
        .await
        .expect("claim");
    assert_eq!(leased.len(), 4);
    v5.cancel(&leased[3].id, t0 + 2).await.expect("cancel");
    let mut entries: Vec<(String, String, u64)> = v5
        .backend()
        .entries()
        .into_iter()
        .map(|e| (e.key, e.value, e.version.parse().expect("a number")))
        .collect();
    // A row no build can read, filed as pending: counted apart, never as pending.
    let broken = r#"{"id":"zz-broken","v":2,"stage":"pending","createdMs":5,"event":7}"#;
    entries.push(("R/zz-broken".into(), broken.into(), 1_000));
    let stage_key = "T/pending/00000000000000000005/zz-broken";
    entries.push((stage_key.into(), String::new(), 1_000));
    let name = format!("v5-{}", js_sys::Math::random());
    JsFuture::from(create_v5(
        &name,
        &serde_json::to_string(&entries).expect("json"),
    ))
    .await
    .expect("create the v5 database");

    let crashed = JsFuture::from(crashed_upgrade(&name)).await.expect("crash");
    assert_eq!(crashed.as_string().as_deref(), Some("AbortError"));
    let dump = read_dump(&name).await;
    assert_eq!(dump["version"], 5, "the crashed upgrade left v5 as it was");
    assert_eq!(dump["keys"].as_array().map(Vec::len), Some(entries.len()));

    let store = IdbStore::open(IdbOptions::new(name.as_str()))
        .await
        .expect("open the v5 database");
    let all = ListQuery {
        limit: 1000,
        ..Default::default()
    };
    let want = v5.list(&all).await.expect("list");
    assert_eq!(want.len(), 32);
    assert_eq!(store.list(&all).await.expect("list"), want);
    for record in &want {
        let got = store.get(&record.id).await.expect("get");
        assert_eq!(got.as_ref(), Some(record), "{}", record.id);
    }
    let mut counts = v5.status().await.expect("status");
    counts.corrupt = 1;
    assert_eq!(store.status().await.expect("status"), counts);
    assert_eq!((counts.leased, counts.cancelled), (3, 1), "{counts:?}");
    assert_eq!(
        store.next_due(0).await.expect("due"),
        v5.next_due(0).await.expect("due")
    );
    // Claims come in the same order (priority, then due), the leased ones not among them
    // until their lease ends.
    let claim = fixture_claim("v6", "v6-lease", 5, 60_000);
    let got = store.claim(&claim, t0 + 3).await.expect("claim");
    let mut expected = v5.claim(&claim, t0 + 3).await.expect("claim");
    assert_eq!(got, std::mem::take(&mut expected));
    assert!(got.iter().all(|r| !leased.iter().any(|l| l.id == r.id)));
    // The slot index moved: a newer profile supersedes the old one.
    let newer = nostr_plan(nostr_event(102, ALICE, 0, 1_800_000_000, "", &[]));
    let answer = store.enqueue(newer, t0 + 4).await.expect("newer profile");
    assert_eq!(answer.withdrawn.len(), 1, "{answer:?}");
    assert_eq!(
        answer.withdrawn[0].event.meta.as_ref().map(|m| m.kind),
        Some(0)
    );
    store.close();

    // On disk: v6, no index key of its own, each row holding the index keys v5 filed it
    // under (those it has now for the records written since).
    let dump = read_dump(&name).await;
    assert_eq!(dump["version"], 6);
    assert_eq!(dump["stores"], serde_json::json!(["kv", "meta"]));
    assert_eq!(index_keys_as_rows(&dump), Vec::<&str>::new());
    let held = &dump["held"][keys::row_key("zz-broken")];
    assert_eq!(
        held,
        &serde_json::json!([stage_key]),
        "the corrupt row keeps its stage key"
    );
    // A record nothing wrote since: the keys v5 filed it under, now in its row.
    let untouched = want
        .iter()
        .find(|r| r.priority == Priority::Low && !got.iter().chain(&leased).any(|g| g.id == r.id))
        .expect("a low record");
    let mut filed: Vec<String> = entries
        .iter()
        .map(|(k, _, _)| k.clone())
        .filter(|k| k.ends_with(&format!("/{}", untouched.id)) && !k.starts_with("R/"))
        .collect();
    filed.sort();
    let mut held: Vec<String> =
        serde_json::from_value(dump["held"][keys::row_key(&untouched.id)].clone())
            .expect("held keys");
    held.sort();
    assert_eq!(filed.len(), 4, "{filed:?}");
    assert_eq!(held, filed);
}
