//! Browser tier smoke test: proves that `wasm-pack test --headless` reaches a real
//! IndexedDB through `indexed_db_futures`. It is not the store; the store has its own
//! conformance run.
#![cfg(target_arch = "wasm32")]

use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::TransactionMode;
use serde::{Deserialize, Serialize};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Probe {
    id: String,
    body: String,
}

fn random_name() -> String {
    format!("smoke-{}", js_sys::Math::random())
}

#[wasm_bindgen_test]
async fn indexeddb_round_trip() {
    let name = random_name();
    let db = Database::open(name.as_str())
        .with_version(1u8)
        .with_on_upgrade_needed(|_, db| {
            db.create_object_store("probe")
                .with_key_path("id".into())
                .build()?;
            Ok(())
        })
        .await
        .expect("open database");

    let written = Probe {
        id: "a".into(),
        body: "héllo \"world\" 🎉".into(),
    };
    let tx = db
        .transaction("probe")
        .with_mode(TransactionMode::Readwrite)
        .build()
        .expect("transaction");
    tx.object_store("probe")
        .expect("store")
        .put(&written)
        .serde()
        .expect("serialise")
        .await
        .expect("put");
    tx.commit().await.expect("commit");

    let tx = db.transaction("probe").build().expect("read transaction");
    let read: Option<Probe> = tx
        .object_store("probe")
        .expect("store")
        .get("a")
        .serde()
        .expect("deserialise")
        .await
        .expect("get");
    drop(tx);
    assert_eq!(read, Some(written));
    db.close();
}
