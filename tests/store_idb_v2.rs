//! A database written by the build before lanes and priorities (schema v2) opens and is
//! migrated in place to schema v3: a schema-v2 IndexedDB database is made here by hand,
//! exactly as that build laid it out, filled with the rows that build wrote for 8
//! records in 6 stages (the `r/` values of `tests/data/kv_v1_entries.json`, written by
//! the build of a6161fd: the same `StoredRow`s it gave IndexedDB), then opened through
//! [`IdbStore`]. Every record reads back unchanged, in the `default` lane at `normal`
//! priority, and claims (plain, by lane, and behind a new `high` record) find them.
#![cfg(target_arch = "wasm32")]

use nostr_outbox::core::{ClaimRequest, ListQuery, Plan, Policy, Priority, Record, DEFAULT_LANE};
use nostr_outbox::store::codec::{self, StoredRow};
use nostr_outbox::store::conformance::fixture_event;
use nostr_outbox::store::idb::{IdbOptions, IdbStore, SCHEMA_VERSION};
use nostr_outbox::store::Store;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const ENTRIES: &str = include_str!("data/kv_v1_entries.json");

#[wasm_bindgen(inline_js = r#"
export function dumpRows(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name);
    req.onsuccess = () => {
      const db = req.result;
      // Schema v6: the rows under `R/` in `kv` (`{v, n, k}`), the claim order (`P/`)
      // among their index keys `k`.
      const tx = db.transaction("kv");
      const keys = tx.objectStore("kv").getAllKeys();
      const all = tx.objectStore("kv").getAll();
      tx.oncomplete = () => {
        db.close();
        const stored = keys.result.map((k, i) => [k, all.result[i]]).filter(([k]) => k.startsWith("R/"));
        const rows = stored.map(([, row]) => JSON.parse(row.v));
        const due = stored.flatMap(([, row]) => row.k).filter((k) => k.startsWith("P/")).sort();
        resolve(JSON.stringify({ rows: rows.map(r => [r.id.slice(-2), r.v, r.priority ?? null, r.lane ?? null]), due }));
      };
    };
    req.onerror = () => reject(req.error);
  });
}
export function createV2(name, entriesJson) {
  const rows = JSON.parse(entriesJson).filter(([k]) => k.startsWith("r/")).map(([, v]) => JSON.parse(v));
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 2);
    req.onupgradeneeded = () => {
      const db = req.result;
      const records = db.createObjectStore("records", { keyPath: "id" });
      records.createIndex("due", ["dueMs", "createdMs", "id"]);
      records.createIndex("created", ["createdMs", "id"]);
      records.createIndex("stage", ["stage", "createdMs", "id"]);
      records.createIndex("event", "eventId");
      records.createIndex("slot", ["slot", "slotPart", "slotOrder", "eventId"]);
      const meta = db.createObjectStore("meta");
      meta.put({ version: 2, library: "0.1.0" }, "schema");
      for (const row of rows) records.put(row);
    };
    req.onsuccess = () => { req.result.close(); resolve(rows.length); };
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error("blocked"));
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = dumpRows)]
    fn dump_rows(name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = createV2)]
    fn create_v2(name: &str, entries_json: &str) -> js_sys::Promise;
}

/// The records the fixture's rows hold, in key order.
fn fixture_records() -> Vec<Record> {
    let entries: Vec<(String, String)> = serde_json::from_str(ENTRIES).expect("fixture");
    entries
        .iter()
        .filter(|(k, _)| k.starts_with("r/"))
        .map(|(_, v)| {
            let row: StoredRow = serde_json::from_str(v).expect("row");
            assert_eq!(row.rank, None, "a schema-v2 row has no rank");
            codec::read_row(&row.id, v).expect("decode").0
        })
        .collect()
}

fn claim(lease: &str, lanes: &[&str]) -> ClaimRequest {
    ClaimRequest {
        owner: "v2-test".into(),
        lease_id: lease.into(),
        limit: 256,
        lease_ms: 60_000,
        lanes: lanes.iter().map(|l| l.to_string()).collect(),
        ..Default::default()
    }
}

#[wasm_bindgen_test]
async fn v2_fixture_database_is_migrated_to_v3_in_place() {
    let name = format!("v2-fixture-{}", js_sys::Math::random());
    let n = JsFuture::from(create_v2(&name, ENTRIES))
        .await
        .expect("create the schema-v2 database");
    assert_eq!(n.as_f64(), Some(8.0));
    let store = IdbStore::open(IdbOptions::new(name.as_str()))
        .await
        .expect("open the v2 database");
    assert_eq!(SCHEMA_VERSION, 6);
    let want = fixture_records();
    for record in &want {
        assert_eq!(record.lane, DEFAULT_LANE);
        assert_eq!(record.priority, Priority::Normal);
        let got = store.get(&record.id).await.expect("get");
        assert_eq!(got.as_ref(), Some(record), "{}", record.id);
    }
    let listed = store
        .list(&ListQuery {
            limit: 100,
            lane: Some(DEFAULT_LANE.into()),
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(listed.len(), 8, "every record is in the default lane");
    assert!(store.corrupt_rows().await.expect("corrupt").is_empty());
    let lane = nostr_outbox::store::lane_status(&store, DEFAULT_LANE)
        .await
        .expect("lane status");
    assert_eq!(lane, store.status().await.expect("status"));
    assert_eq!(lane.total(), 8);

    // Every row is rewritten in row format 2, with the default priority and lane (not
    // written: absent means `normal` and the default lane), and every non-terminal one
    // is in `due`.
    let dump = JsFuture::from(dump_rows(&name)).await.expect("dump");
    let dump: serde_json::Value =
        serde_json::from_str(&dump.as_string().expect("json")).expect("parse");
    for row in dump["rows"].as_array().expect("rows") {
        assert_eq!(
            (&row[1], &row[2], &row[3]),
            (
                &serde_json::json!(2),
                &serde_json::Value::Null,
                &serde_json::Value::Null
            ),
            "{row}"
        );
    }
    assert_eq!(dump["due"].as_array().expect("due").len(), 5, "{dump}");
    // The next due is #6's (t0 + 6); the leased #4 is due at its lease's end.
    let t0 = 1_700_000_000_000u64;
    assert_eq!(store.next_due(0).await.expect("next_due"), Some(t0 + 6));
    // A high-priority record enqueued after the upgrade is claimed first, before the
    // old records that were due long before it.
    let now = t0 + 70_000_000;
    let plan = Plan::new(
        fixture_event(99),
        vec!["wss://a.example/".into()],
        Policy::All,
    )
    .with_priority(Priority::High)
    .with_lane("dm");
    store.enqueue(plan, now).await.expect("enqueue high");
    let first = store
        .claim(
            &{
                let mut c = claim("l1", &[]);
                c.limit = 1;
                c
            },
            now,
        )
        .await
        .expect("claim");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].priority, Priority::High);
    // By lane: the migrated rows are in the `laneDue` index under `default`.
    let old = store
        .claim(&claim("l2", &[DEFAULT_LANE]), now)
        .await
        .expect("claim default");
    let mut ids: Vec<&str> = old.iter().map(|r| r.id.as_str()).collect();
    ids.sort();
    let mut due: Vec<&str> = want
        .iter()
        .filter(|r| !r.is_terminal())
        .map(|r| r.id.as_str())
        .collect();
    due.sort();
    assert_eq!(
        ids, due,
        "every non-terminal old record is claimable by lane"
    );
    assert!(old.iter().all(|r| r.lane == DEFAULT_LANE));
}
