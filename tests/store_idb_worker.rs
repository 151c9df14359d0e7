//! The IndexedDB store inside a dedicated Worker (no `window`, no DOM): the shared
//! conformance suite and a two-connection claim race, as a worker and a tab would run.
#![cfg(target_arch = "wasm32")]

use futures_util::future::join;
use nostr_outbox::core::Policy;
use nostr_outbox::store::conformance::{self, fixture_claim, fixture_plan};
use nostr_outbox::store::idb::{IdbOptions, IdbStore};
use nostr_outbox::store::Store;
use std::collections::BTreeSet;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

fn random_name(prefix: &str) -> String {
    format!("{prefix}-{}", js_sys::Math::random())
}

async fn open(name: &str) -> IdbStore {
    IdbStore::open(IdbOptions::new(name))
        .await
        .expect("open IndexedDB store in a worker")
}

#[wasm_bindgen_test]
async fn conformance_suite_passes_in_a_dedicated_worker() {
    assert!(
        js_sys::Reflect::has(&js_sys::global(), &"WorkerGlobalScope".into()).unwrap_or(false),
        "this test must run in a worker"
    );
    conformance::run_all(|| async { open(&random_name("worker-conformance")).await }).await;
}

#[wasm_bindgen_test]
async fn two_connections_in_a_worker_claim_disjoint_sets() {
    let name = random_name("worker-race");
    let a = open(&name).await;
    let b = open(&name).await;
    let plans: Vec<_> = (0..120)
        .map(|n| fixture_plan(n, &["wss://a.example"], Policy::All))
        .collect();
    a.enqueue_many(plans, 1_000).await.expect("enqueue");
    let mut seen = BTreeSet::new();
    for round in 0..100 {
        let (ra, rb) = (
            fixture_claim("a", &format!("a{round}"), 9, 600_000),
            fixture_claim("b", &format!("b{round}"), 9, 600_000),
        );
        let (x, y) = join(a.claim(&ra, 2_000), b.claim(&rb, 2_000)).await;
        let (x, y) = (x.expect("claim a"), y.expect("claim b"));
        if x.is_empty() && y.is_empty() {
            break;
        }
        for r in x.into_iter().chain(y) {
            assert!(seen.insert(r.id.clone()), "{} leased twice", r.id);
        }
    }
    assert_eq!(seen.len(), 120);
}
