//! A database written by the build before the serde codec opens and reads: a schema-v1
//! IndexedDB database is made here by hand, exactly as that build laid it out (object
//! stores, key path, indexes, the `meta` schema row), filled with the rows that build
//! stored (`tests/data/store_v1_rows.json`), then opened through [`IdbStore`], which
//! upgrades it to schema v2: every row gains its event's header fields (the fixture's
//! event is a kind-0 profile), so the queue's Nostr rules see the old records.
#![cfg(target_arch = "wasm32")]

mod v1_support;

use nostr_outbox::core::{ClaimRequest, EnqueueOutcome, ListQuery, Record, Stage, StopReason};
use nostr_outbox::nostr::Event;
use nostr_outbox::store::conformance::{nostr_event, nostr_plan};
use nostr_outbox::store::idb::{IdbOptions, IdbStore, SCHEMA_VERSION};
use nostr_outbox::store::Store;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen(inline_js = r#"
export function createV1(name, rowsJson) {
  const rows = JSON.parse(rowsJson).rows;
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => {
      const db = req.result;
      const records = db.createObjectStore("records", { keyPath: "id" });
      records.createIndex("due", ["dueMs", "createdMs", "id"]);
      records.createIndex("created", ["createdMs", "id"]);
      records.createIndex("stage", ["stage", "createdMs", "id"]);
      records.createIndex("event", "eventId");
      const meta = db.createObjectStore("meta");
      meta.put({ version: 1, library: "0.1.0" }, "schema");
      for (const row of rows) records.put(row);
    };
    req.onsuccess = () => { req.result.close(); resolve(); };
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error("blocked"));
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = createV1)]
    fn create_v1(name: &str, rows_json: &str) -> js_sys::Promise;
}

#[wasm_bindgen_test]
async fn v1_fixture_database_opens_and_reads() {
    let name = format!("v1-fixture-{}", js_sys::Math::random());
    JsFuture::from(create_v1(&name, v1_support::ROWS_JSON))
        .await
        .expect("create the schema-v1 database");
    let store = IdbStore::open(IdbOptions::new(name.as_str()))
        .await
        .expect("open the v1 database");

    // The upgrade added the event's header fields, read from the stored text.
    let mut want: Vec<Record> = v1_support::records()
        .into_iter()
        .map(|mut r| {
            let event = Event::parse_json(&r.event.raw).expect("fixture event");
            r.event.meta = event.to_envelope().meta;
            r
        })
        .collect();
    assert_eq!(SCHEMA_VERSION, 6);
    assert!(want.iter().all(|r| r.event.meta.is_some()));
    for record in &want {
        let got = store.get(&record.id).await.expect("get");
        assert_eq!(got.as_ref(), Some(record), "{}", record.id);
    }
    // Listed in creation order (createdMs, then id), nothing reported corrupt.
    want.sort_by(|a, b| a.list_key().cmp(&b.list_key()));
    let listed = store
        .list(&ListQuery {
            stage: None,
            limit: 1000,
            after: None,
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(listed, want);
    assert!(store.corrupt_rows().await.expect("corrupt rows").is_empty());
    let counts = store.status().await.expect("status");
    assert_eq!(counts.get(Stage::Exhausted), 3);
    assert_eq!(counts.total(), want.len() as u32);

    // The old rows are live records: the due ones can be claimed and written again.
    let now = 1_700_000_200_000; // every lease and retry time passed, no deadline yet
    let claimed = store
        .claim(
            &ClaimRequest {
                owner: "fixture-test".into(),
                lease_id: "lease-fixture".into(),
                limit: 256,
                lease_ms: 60_000,
                ..Default::default()
            },
            now,
        )
        .await
        .expect("claim");
    let mut ids: Vec<&str> = claimed.iter().map(|r| r.id.as_str()).collect();
    ids.sort();
    assert_eq!(
        ids,
        ["rec-leased", "rec-pending", "rec-rearmed", "rec-retryable"]
    );
    for r in &claimed {
        assert_eq!(store.get(&r.id).await.expect("get"), Some(r.clone()));
    }

    // A newer version of the profile, enqueued after the upgrade, withdraws every old
    // record that may still be sent: the upgrade put them in the `slot` index.
    let meta = want[0].event.meta.clone().expect("meta");
    let newer = nostr_event(7, &meta.pubkey, 0, meta.created_at + 1, "", &[]);
    let answer = store
        .enqueue(nostr_plan(newer.clone()), now + 1)
        .await
        .expect("enqueue a newer profile");
    assert_eq!(answer.outcome, EnqueueOutcome::Created);
    let mut withdrawn: Vec<&str> = answer.withdrawn.iter().map(|r| r.id.as_str()).collect();
    withdrawn.sort();
    let mut expected: Vec<&str> = want
        .iter()
        .filter(|r| r.stage.may_send())
        .map(|r| r.id.as_str())
        .collect();
    expected.sort();
    assert!(!expected.is_empty());
    assert_eq!(withdrawn, expected);
    for r in &answer.withdrawn {
        assert_eq!(r.stage, Stage::Superseded);
        assert_eq!(r.reason, Some(StopReason::Superseded));
        assert_eq!(r.superseded_by.as_deref(), Some(newer.id.as_str()));
        assert_eq!(store.get(&r.id).await.expect("get").as_ref(), Some(r));
    }
    store.close();
}
