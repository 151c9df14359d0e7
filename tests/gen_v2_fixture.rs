//! One-off: writes tests/data/kv_v1_entries.json with the build of a6161fd.
#![cfg(not(target_arch = "wasm32"))]
use futures::executor::block_on;
use nostr_outbox::core::{Completion, Outcome, Policy, TargetResult};
use nostr_outbox::store::conformance::{
    fixture_claim, fixture_plan, fixture_retry, nostr_event, nostr_plan, ALICE,
};
use nostr_outbox::store::kv::{KvStore, MemoryKv};
use nostr_outbox::store::Store;

#[test]
#[ignore]
fn generate() {
    block_on(async {
        let s = KvStore::new(MemoryKv::new());
        let t0 = 1_700_000_000_000u64;
        let relays = ["wss://a.example/", "wss://b.example/"];
        // 1..=6 regular notes at increasing times; 7,8 versions of a profile (kind 0).
        for n in 1..=6u32 {
            s.enqueue(fixture_plan(n, &relays, Policy::All), t0 + n as u64)
                .await
                .unwrap();
        }
        s.enqueue(nostr_plan(nostr_event(7, ALICE, 0, 1_000, "", &[])), t0 + 7)
            .await
            .unwrap();
        s.enqueue(
            nostr_plan(nostr_event(8, ALICE, 30_023, 1_000, "post", &[])),
            t0 + 8,
        )
        .await
        .unwrap();
        // Claim 1..=4 (oldest first); complete 1 satisfied, 2 retryable, 3 exhausted (rejected); 4 stays leased.
        let claimed = s
            .claim(&fixture_claim("tab-1", "lease-1", 4, 60_000), t0 + 100)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 4);
        let answer = |t: &str, o: Outcome| TargetResult {
            target: t.into(),
            outcome: o,
            message: String::new(),
        };
        for (r, results) in claimed.iter().zip([
            vec![
                answer(relays[0], Outcome::Accepted),
                answer(relays[1], Outcome::Duplicate),
            ],
            vec![
                answer(relays[0], Outcome::Accepted),
                answer(relays[1], Outcome::Unreachable),
            ],
            vec![
                answer(
                    relays[0],
                    Outcome::Rejected(nostr_outbox::core::RejectReason::Invalid),
                ),
                answer(relays[1], Outcome::Accepted),
            ],
        ]) {
            let c = Completion {
                id: r.id.clone(),
                lease_id: "lease-1".into(),
                revision: r.revision,
                results,
                jitter: 0,
            };
            s.complete_attempt(&c, &fixture_retry(), t0 + 200)
                .await
                .unwrap();
        }
        s.cancel(&claimed_id(5), t0 + 300).await.unwrap();
        let mut out = Vec::new();
        for (k, v) in s.backend().dump() {
            out.push(serde_json::json!([k, v]));
        }
        std::fs::write(
            "tests/data/kv_v1_entries.json",
            serde_json::to_string_pretty(&out).unwrap(),
        )
        .unwrap();
    });
}

fn claimed_id(n: u32) -> String {
    format!("{n:064x}")
}
