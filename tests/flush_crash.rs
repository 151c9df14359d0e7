//! Crash-before-record: a claimed item whose flusher dies is re-delivered after the
//! lease expires, and the dead flusher's late result is a lost claim.

use std::cell::Cell;

use futures::executor::block_on;
use nostr_outbox::core::{
    ClaimRequest, Completion, Outcome, Policy, RetryConfig, Stage, TargetResult,
};
use nostr_outbox::flush::{tick, FlushConfig, FlushEvent, TickStats};
use nostr_outbox::store::conformance::{fixture_plan, RELAYS};
use nostr_outbox::store::{MemoryStore, Store};
use nostr_outbox::transport::{PublishReport, ScriptedTransport, Transport};

fn config(owner: &str) -> FlushConfig {
    FlushConfig {
        owner: owner.into(),
        batch_size: 8,
        lease_ms: 5_000,
        concurrency: 4,
        retry: RetryConfig::default(),
    }
}

#[test]
fn dead_flusher_item_is_redelivered_and_its_late_result_is_lost() {
    block_on(async {
        let store = MemoryStore::new();
        let t = ScriptedTransport::new();
        t.always(RELAYS[0], Outcome::Accepted, "");
        let id = store
            .enqueue(fixture_plan(1, &RELAYS[..1], Policy::All), 0)
            .await
            .unwrap()
            .record
            .id;
        // The dead flusher claims, publishes, and dies before recording.
        let dead = store
            .claim(
                &ClaimRequest {
                    owner: "dead-tab".into(),
                    lease_id: "dead-lease".into(),
                    limit: 8,
                    lease_ms: 5_000,
                },
                100,
            )
            .await
            .unwrap()
            .remove(0);
        let published = t.publish(RELAYS[0], &dead.event).await;
        assert_eq!(published.outcome, Outcome::Accepted);

        // While its lease is active, nobody else takes the record.
        let idle = tick(
            &store,
            &t,
            &config("live"),
            &|| 5_099,
            &mut || 7,
            &mut |_| {},
        )
        .await
        .unwrap();
        assert_eq!(idle, TickStats::default());

        // After expiry, the live flusher re-delivers it (at-least-once).
        let s = tick(
            &store,
            &t,
            &config("live"),
            &|| 5_100,
            &mut || 7,
            &mut |_| {},
        )
        .await
        .unwrap();
        assert_eq!((s.claimed, s.satisfied), (1, 1));
        assert_eq!(t.count(RELAYS[0], &id), 2);
        let after = store.get(&id).await.unwrap().unwrap();
        assert_eq!(after.stage, Stage::Satisfied);
        assert_eq!(after.evidence.len(), 1, "only the live attempt is recorded");
        assert_eq!(after.evidence[0].attempt, 1);

        // The dead flusher wakes up and reports: a lost claim, nothing changes.
        let late = Completion {
            id: id.clone(),
            lease_id: "dead-lease".into(),
            revision: dead.revision,
            results: vec![TargetResult {
                target: RELAYS[0].into(),
                outcome: published.outcome,
                message: published.message,
            }],
            jitter: 0,
        };
        let err = store
            .complete_attempt(&late, &RetryConfig::default(), 5_200)
            .await
            .unwrap_err();
        assert!(err.is_lost_claim());
        assert_eq!(err.code(), "lease_expired");
        assert_eq!(store.get(&id).await.unwrap().unwrap(), after);
    });
}

/// A transport whose relay answers only after the lease has expired (network jitter).
struct Slow<'a> {
    now: &'a Cell<u64>,
    delay: u64,
}

impl Transport for Slow<'_> {
    async fn publish(
        &self,
        _relay: &str,
        _event: &nostr_outbox::core::EventEnvelope,
    ) -> PublishReport {
        self.now.set(self.now.get() + self.delay);
        PublishReport::new(Outcome::Accepted, "")
    }
}

#[test]
fn answer_after_lease_expiry_is_a_lost_claim_and_is_redelivered() {
    block_on(async {
        let store = MemoryStore::new();
        let id = store
            .enqueue(fixture_plan(1, &RELAYS[..1], Policy::All), 0)
            .await
            .unwrap()
            .record
            .id;
        let now = Cell::new(0u64);
        let slow = Slow {
            now: &now,
            delay: 6_000,
        };
        let mut lost = Vec::new();
        let s = tick(
            &store,
            &slow,
            &config("jittery"),
            &|| now.get(),
            &mut || 1,
            &mut |e| {
                if let FlushEvent::LostClaim { id } = e {
                    lost.push(id.to_string());
                }
            },
        )
        .await
        .unwrap();
        assert_eq!((s.claimed, s.lost_claims, s.satisfied), (1, 1, 0));
        assert_eq!(lost, vec![id.clone()]);
        let rec = store.get(&id).await.unwrap().unwrap();
        assert_eq!(rec.stage, Stage::Leased, "nothing recorded");
        assert!(rec.evidence.is_empty());
        assert!(
            rec.is_ready(now.get()),
            "claimable again: its lease expired"
        );
        // A faster second attempt succeeds.
        let fast = Slow {
            now: &now,
            delay: 1,
        };
        let s2 = tick(
            &store,
            &fast,
            &config("next"),
            &|| now.get(),
            &mut || 2,
            &mut |_| {},
        )
        .await
        .unwrap();
        assert_eq!(s2.satisfied, 1);
    });
}
