//! A database written by the build before the `lookup` store (schema v3) opens and is
//! migrated in place to schema v4: a schema-v3 IndexedDB database is made here by hand, exactly
//! as that build laid it out (object stores, key path, its six indexes, the `meta`
//! schema row), filled with the rows that build wrote (`tests/data/idb_v3_rows.json`:
//! 12 records in 6 stages, lanes `dm` and `profile`, all three priorities, a
//! replaceable and two addressable events, encoded by the build of 0ad00e8) and one row
//! no build can read, then opened through [`IdbStore`].
//!
//! Every record reads back unchanged, through `get`, `list` (all, by stage, by lane),
//! claims and the Nostr rules; every row has its `lookup` row, the moved
//! indexes are gone from `records`, and the unreadable row is left as it was and
//! reported.
#![cfg(target_arch = "wasm32")]

use nostr_outbox::core::{
    EnqueueOutcome, ListQuery, Policy, Priority, Record, Stage, DEFAULT_LANE,
};
use nostr_outbox::store::codec::{self, StoredRow};
use nostr_outbox::store::conformance::{
    fixture_claim, fixture_plan, nostr_event, nostr_plan, ALICE, RELAYS,
};
use nostr_outbox::store::idb::{IdbOptions, IdbStore, SCHEMA_VERSION};
use nostr_outbox::store::Store;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const ROWS: &str = include_str!("data/idb_v3_rows.json");

#[wasm_bindgen(inline_js = r#"
export function createV3(name, rowsJson) {
  const rows = JSON.parse(rowsJson);
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 3);
    req.onupgradeneeded = () => {
      const db = req.result;
      const records = db.createObjectStore("records", { keyPath: "id" });
      records.createIndex("due", ["rank", "dueMs", "createdMs", "id"]);
      records.createIndex("created", ["createdMs", "id"]);
      records.createIndex("stage", ["stage", "createdMs", "id"]);
      records.createIndex("event", "eventId");
      records.createIndex("slot", ["slot", "slotPart", "slotOrder", "eventId"]);
      records.createIndex("laneDue", ["lane", "rank", "dueMs", "createdMs", "id"]);
      const meta = db.createObjectStore("meta");
      meta.put({ version: 3, library: "0.2.0" }, "schema");
      for (const row of rows) records.put(row);
      records.put({ id: "zz-unreadable", v: 1, stage: "pending", createdMs: 5, eventId: "e", doc: "{not json" });
    };
    req.onsuccess = () => { req.result.close(); resolve(rows.length); };
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error("blocked"));
  });
}
export function dumpV4(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name);
    req.onsuccess = () => {
      const db = req.result;
      const tx = db.transaction(["records", "lookup", "meta"]);
      const records = tx.objectStore("records");
      const lookup = tx.objectStore("lookup");
      const rows = records.getAll();
      const keys = lookup.getAll();
      const schema = tx.objectStore("meta").get("schema");
      tx.oncomplete = () => {
        db.close();
        resolve(JSON.stringify({
          version: db.version,
          schema: schema.result,
          recordIndexes: [...records.indexNames].sort(),
          lookupIndexes: [...lookup.indexNames].sort(),
          rows: rows.result,
          keys: keys.result,
        }));
      };
    };
    req.onerror = () => reject(req.error);
  });
}
export function lookupIds(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name);
    req.onsuccess = () => {
      const db = req.result;
      const keys = db.transaction("lookup").objectStore("lookup").getAllKeys();
      keys.onsuccess = () => { db.close(); resolve(JSON.stringify(keys.result)); };
      keys.onerror = () => reject(keys.error);
    };
    req.onerror = () => reject(req.error);
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = lookupIds)]
    fn lookup_ids(name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = createV3)]
    fn create_v3(name: &str, rows_json: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = dumpV4)]
    fn dump_v4(name: &str) -> js_sys::Promise;
}

/// The records the fixture's rows hold, in key order.
fn fixture_records() -> Vec<Record> {
    let rows: Vec<StoredRow> = serde_json::from_str(ROWS).expect("fixture");
    rows.iter()
        .map(|row| codec::decode(row).expect("decode"))
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

#[wasm_bindgen_test]
async fn v3_fixture_database_is_migrated_to_v4_in_place() {
    let name = format!("v3-fixture-{}", js_sys::Math::random());
    let n = JsFuture::from(create_v3(&name, ROWS))
        .await
        .expect("create the schema-v3 database");
    assert_eq!(n.as_f64(), Some(12.0));
    let store = IdbStore::open(IdbOptions::new(name.as_str()))
        .await
        .expect("open the v3 database");
    assert_eq!(SCHEMA_VERSION, 4);

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

    // On disk: the rows as they were, one lookup row per readable record, the moved
    // indexes on `lookup`, the schema row at 4.
    let dump = JsFuture::from(dump_v4(&name)).await.expect("dump");
    let dump: serde_json::Value =
        serde_json::from_str(&dump.as_string().expect("json")).expect("parse");
    assert_eq!(dump["version"], 4);
    assert_eq!(dump["schema"]["version"], 4);
    assert_eq!(
        dump["recordIndexes"],
        serde_json::json!(["due", "laneDue", "slot", "stage"])
    );
    assert_eq!(
        dump["lookupIndexes"],
        serde_json::json!(["created", "event"])
    );
    let stored: Vec<serde_json::Value> = serde_json::from_str(ROWS).expect("fixture");
    let rows = dump["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 13);
    for (row, before) in rows.iter().zip(&stored) {
        assert_eq!(row["doc"], before["doc"], "the row is not rewritten");
    }
    assert_eq!(
        rows[12]["doc"], "{not json",
        "the unreadable row is untouched"
    );
    // The unreadable row has its keys too (its fields are well formed; its document
    // is not): list order still meets it, and still skips it, as before.
    let keys = dump["keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 13);
    assert_eq!(
        keys[12],
        serde_json::json!({ "id": "zz-unreadable", "eventId": "e", "createdMs": 5 })
    );
    // (Every fixture record is stored under its event id, which the lookup row then
    // leaves out; the unreadable row's differs, so it is kept.)
    for (key, record) in keys.iter().zip(&want) {
        assert_eq!(record.id, record.event.id);
        assert_eq!(
            key,
            &serde_json::json!({ "id": record.id, "createdMs": record.created_ms })
        );
    }

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

/// A record's `lookup` row is written by its enqueue (once: a replay writes none) and
/// deleted with it by `purge`, so list order and lookups by event id never meet a
/// record that is gone.
#[wasm_bindgen_test]
async fn lookup_rows_come_and_go_with_their_records() {
    let name = format!("v4-lookup-{}", js_sys::Math::random());
    let store = IdbStore::open(IdbOptions::new(name.as_str()))
        .await
        .expect("open");
    let now = 1_700_000_000_000;
    let plans: Vec<_> = (1..=3)
        .map(|n| fixture_plan(n, &[RELAYS[0]], Policy::All))
        .collect();
    let ids: Vec<String> = plans.iter().map(|p| p.id.clone()).collect();
    store
        .enqueue_many(plans.clone(), now)
        .await
        .expect("enqueue");
    let replay = store
        .enqueue(plans[0].clone(), now + 1)
        .await
        .expect("replay");
    assert_eq!(replay.outcome, EnqueueOutcome::Replay);
    let keys = |s: js_sys::Promise| async {
        let v = JsFuture::from(s).await.expect("lookup ids");
        serde_json::from_str::<Vec<String>>(&v.as_string().expect("json")).expect("ids")
    };
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(keys(lookup_ids(&name)).await, sorted);

    store.cancel(&ids[1], now + 2).await.expect("cancel");
    assert_eq!(store.purge(now + 10).await.expect("purge"), 1);
    let left: Vec<String> = sorted.into_iter().filter(|id| id != &ids[1]).collect();
    assert_eq!(keys(lookup_ids(&name)).await, left);
    let listed = store.list(&list_all(None, None)).await.expect("list");
    assert_eq!(
        listed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [ids[0].as_str(), ids[2].as_str()]
    );
    store.close();
}
