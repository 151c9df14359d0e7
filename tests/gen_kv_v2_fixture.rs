//! One-off: writes tests/data/kv_v2_entries.json with the build of 2a75019 (key layout 2,
//! row format 2): 12 records in every stage a flusher leaves, with lanes, priorities, a
//! short and a long item id, a replaceable and an addressable event, a draft and a
//! scheduled record. Run with `cargo test --test gen_kv_v2_fixture -- --ignored`.
#![cfg(not(target_arch = "wasm32"))]
use futures::executor::block_on;
use nostr_outbox::core::{Completion, Outcome, Policy, Priority, RejectReason, TargetResult};
use nostr_outbox::store::conformance::{
    draft_event, fixture_claim, fixture_plan, fixture_retry, nostr_event, nostr_plan, ALICE,
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
        // 1..=6 regular notes: 1 high priority, 2 in lane "dm", 5 with a short id, 6 low.
        for n in 1..=6u32 {
            let mut p = fixture_plan(n, &relays, Policy::All);
            match n {
                1 => p = p.with_priority(Priority::High),
                2 => p = p.with_lane("dm"),
                5 => p = p.with_id("note-5"),
                6 => {
                    p = p
                        .with_priority(Priority::Low)
                        .with_id(format!("long.{}", "x".repeat(120)))
                }
                _ => {}
            }
            s.enqueue(p, t0 + n as u64).await.unwrap();
        }
        // 7 a profile (kind 0), 8 an article (kind 30023, d tag "post/1 é").
        s.enqueue(nostr_plan(nostr_event(7, ALICE, 0, 1_000, "", &[])), t0 + 7)
            .await
            .unwrap();
        s.enqueue(
            nostr_plan(nostr_event(8, ALICE, 30_023, 1_000, "post/1 é", &[])),
            t0 + 8,
        )
        .await
        .unwrap();
        // 9 a newer profile: supersedes 7.
        s.enqueue(nostr_plan(nostr_event(9, ALICE, 0, 2_000, "", &[])), t0 + 9)
            .await
            .unwrap();
        // 10 scheduled for t0 + 1 day; 11 a draft.
        s.enqueue(
            fixture_plan(10, &relays, Policy::All).with_not_before_ms(Some(t0 + 86_400_000)),
            t0 + 10,
        )
        .await
        .unwrap();
        s.enqueue(
            nostr_plan(draft_event(ALICE, 1, 1)).with_id("draft-11"),
            t0 + 11,
        )
        .await
        .unwrap();
        // Claim 4 (high first); complete: satisfied, retryable, exhausted; the 4th stays leased.
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
                answer(relays[0], Outcome::Rejected(RejectReason::Invalid)),
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
        s.cancel("note-5", t0 + 300).await.unwrap();
        let out: Vec<_> = s
            .backend()
            .dump()
            .into_iter()
            .map(|(k, v)| serde_json::json!([k, v]))
            .collect();
        std::fs::write(
            "tests/data/kv_v2_entries.json",
            serde_json::to_string_pretty(&out).unwrap(),
        )
        .unwrap();
    });
}
