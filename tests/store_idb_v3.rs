//! A database written by the build before split rows (schema v3) opens and is migrated
//! in place to schema v4: a schema-v3 IndexedDB database is made here by hand, exactly
//! as that build laid it out (object stores, key path, its six indexes, the `meta`
//! schema row), filled with the rows that build wrote (`tests/data/idb_v3_rows.json`:
//! 12 records in 6 stages, lanes `dm` and `profile`, all three priorities, a
//! replaceable and two addressable events, encoded by the build of 0ad00e8) and one row
//! no build can read, then opened through [`IdbStore`].
//!
//! Every record reads back unchanged (event text included), through `get`, `list`
//! (all, by stage, by lane), claims and the Nostr rules; the rows on disk are split (a
//! state row without the event's text, an event row beside it), the moved indexes are
//! gone from `records`, and the unreadable row is left as it was and reported.
#![cfg(target_arch = "wasm32")]

use nostr_outbox::core::Policy;
use nostr_outbox::core::{
    ClaimRequest, EnqueueOutcome, ListQuery, Priority, Record, Stage, DEFAULT_LANE,
};
use nostr_outbox::store::codec::{self, StoredRow};
use nostr_outbox::store::conformance::{fixture_plan, nostr_event, nostr_plan, ALICE, RELAYS};
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
      const tx = db.transaction(["records", "events", "meta"]);
      const records = tx.objectStore("records");
      const events = tx.objectStore("events");
      const states = records.getAll();
      const eventRows = events.getAll();
      const schema = tx.objectStore("meta").get("schema");
      tx.oncomplete = () => {
        db.close();
        resolve(JSON.stringify({
          version: db.version,
          schema: schema.result,
          recordIndexes: [...records.indexNames].sort(),
          eventIndexes: [...events.indexNames].sort(),
          states: states.result,
          events: eventRows.result,
        }));
      };
    };
    req.onerror = () => reject(req.error);
  });
}
export function deleteEventRow(name, id) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name);
    req.onsuccess = () => {
      const db = req.result;
      const tx = db.transaction("events", "readwrite");
      tx.objectStore("events").delete(id);
      tx.oncomplete = () => { db.close(); resolve(); };
      tx.onerror = () => reject(tx.error);
    };
    req.onerror = () => reject(req.error);
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = deleteEventRow)]
    fn delete_event_row(name: &str, id: &str) -> js_sys::Promise;
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
async fn v3_fixture_database_is_split_into_state_and_event_rows_in_place() {
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
    assert!(want.iter().all(|r| !r.event.raw.is_empty()));
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

    // On disk: one event row per readable record holding its text, state rows without
    // it, the moved indexes on `events`, the schema row at 4.
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
        dump["eventIndexes"],
        serde_json::json!(["created", "event"])
    );
    let events = dump["events"].as_array().expect("events");
    assert_eq!(events.len(), 12);
    for (row, record) in events.iter().zip(&want) {
        assert_eq!(row["id"], record.id.as_str());
        assert_eq!(row["eventId"], record.event.id.as_str());
        assert_eq!(row["raw"], record.event.raw.as_str());
        assert_eq!(row["createdMs"].as_f64(), Some(record.created_ms as f64));
    }
    let states = dump["states"].as_array().expect("states");
    assert_eq!(states.len(), 13);
    for state in &states[..12] {
        let doc: serde_json::Value =
            serde_json::from_str(state["doc"].as_str().expect("doc")).expect("doc json");
        assert_eq!(doc["event"]["raw"], "", "{state}");
    }
    assert_eq!(
        states[12]["doc"], "{not json",
        "the unreadable row is untouched"
    );

    // Claims find the migrated records in priority order, with their events.
    let now = 1_700_000_400_000;
    let claimed = store
        .claim(
            &ClaimRequest {
                owner: "v3-test".into(),
                lease_id: "v3-lease".into(),
                limit: 256,
                lease_ms: 60_000,
                ..Default::default()
            },
            now,
        )
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

/// A state row whose event row is gone (other software deleted it) is a corrupt record:
/// `get` says so, claims and lists skip it (and are not stopped by it), `corrupt_rows`
/// names it, and nothing is deleted or rewritten.
#[wasm_bindgen_test]
async fn a_record_without_its_event_row_is_corrupt_and_skipped() {
    let name = format!("v4-broken-{}", js_sys::Math::random());
    let store = IdbStore::open(IdbOptions::new(name.as_str()))
        .await
        .expect("open");
    let now = 1_700_000_000_000;
    let plans = vec![
        fixture_plan(1, &[RELAYS[0]], Policy::All),
        fixture_plan(2, &[RELAYS[0]], Policy::All),
    ];
    let (broken, kept) = (plans[0].id.clone(), plans[1].id.clone());
    store.enqueue_many(plans, now).await.expect("enqueue");
    JsFuture::from(delete_event_row(&name, &broken))
        .await
        .expect("delete the event row");

    let err = store.get(&broken).await.expect_err("corrupt");
    assert_eq!(err.code(), "corrupt_record", "{err}");
    let listed = store.list(&list_all(None, None)).await.expect("list");
    assert_eq!(
        listed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [kept.as_str()]
    );
    let pending = store
        .list(&list_all(Some(Stage::Pending), None))
        .await
        .expect("list pending");
    assert_eq!(
        pending.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [kept.as_str()]
    );
    let claim = ClaimRequest {
        owner: "v4-test".into(),
        lease_id: "v4-lease".into(),
        limit: 10,
        lease_ms: 60_000,
        ..Default::default()
    };
    let claimed = store.claim(&claim, now + 1).await.expect("claim");
    assert_eq!(
        claimed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [kept.as_str()]
    );
    assert!(!claimed[0].event.raw.is_empty());
    let corrupt = store.corrupt_rows().await.expect("corrupt rows");
    assert_eq!(corrupt.len(), 1, "{corrupt:?}");
    assert_eq!(corrupt[0].id, broken);
    assert_eq!(corrupt[0].stage, Some(Stage::Pending), "never claimed");
    let counts = store.status().await.expect("status");
    assert_eq!(
        (counts.corrupt, counts.get(Stage::Pending)),
        (1, 0),
        "{counts:?}"
    );
    // A retry or cancel of it fails the same way and writes nothing.
    assert_eq!(
        store
            .cancel(&broken, now + 2)
            .await
            .expect_err("corrupt")
            .code(),
        "corrupt_record"
    );
    assert_eq!(store.corrupt_rows().await.expect("corrupt").len(), 1);
    store.close();
}
