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
        low_concurrency: nostr_outbox::flush::LOW_WINDOW,
        retry: RetryConfig::default(),
        group_wait_ms: nostr_outbox::flush::GROUP_WAIT_MS,
        lanes: Vec::new(),
        relays: Vec::new(),
        lapsed_only: false,
        newer_kinds: nostr_outbox::flush::NEWER_CHECK_KINDS.to_vec(),
    }
}

#[test]
fn dead_flusher_item_is_redelivered_and_its_late_result_is_lost() {
    block_on(async {
        let store = MemoryStore::in_memory();
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
                    ..Default::default()
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
        let store = MemoryStore::in_memory();
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

/// A store with 40 records to one relay: 30 leased for ten minutes by a flusher that
/// died, 2 leased by `live` itself, 8 pending.
async fn crashed_store() -> (MemoryStore, Vec<String>, Vec<String>) {
    let store = MemoryStore::in_memory();
    for n in 1..=40u32 {
        store
            .enqueue(fixture_plan(n, &RELAYS[..1], Policy::All), u64::from(n))
            .await
            .unwrap();
    }
    let lease = |owner: &str, limit: u32| ClaimRequest {
        owner: owner.into(),
        lease_id: format!("{owner}-lease"),
        limit,
        lease_ms: 600_000,
        ..Default::default()
    };
    let dead = store.claim(&lease("dead-tab", 30), 100).await.unwrap();
    let own = store.claim(&lease("live", 2), 100).await.unwrap();
    let ids = |rs: Vec<nostr_outbox::core::Record>| rs.into_iter().map(|r| r.id).collect();
    (store, ids(dead), ids(own))
}

async fn run_once(store: &MemoryStore, t: &ScriptedTransport, take_over: bool) -> TickStats {
    let bounds = nostr_outbox::flush::RunBounds {
        max_ticks: 100,
        keep_going: &|| true,
        take_over,
        sleep: None,
        hurry: None,
        hold: None,
        nudge: None,
        prepare: 0,
    };
    let summary = nostr_outbox::flush::run(
        store,
        t,
        &config("live"),
        &|| 200,
        &mut || 7,
        &mut |_| {},
        &bounds,
    )
    .await
    .unwrap();
    summary.stats
}

#[test]
fn the_lock_holder_takes_over_dead_leases_at_once() {
    block_on(async {
        let t = ScriptedTransport::new();
        t.always(RELAYS[0], Outcome::Accepted, "");
        let (store, dead, own) = crashed_store().await;
        let s = run_once(&store, &t, true).await;
        // Five takeovers of a batch (8) and one that found none left, then the claims.
        assert_eq!(s.taken_over, 30, "{s:?}");
        assert_eq!(
            (s.claimed, s.satisfied, s.lost_claims),
            (38, 38, 0),
            "{s:?}"
        );
        for id in &dead {
            let r = store.get(id).await.unwrap().unwrap();
            assert_eq!(r.stage, Stage::Satisfied, "{id} delivered in this run");
            assert_eq!(r.takeovers, 1, "{id}: the takeover is on the record");
            assert_eq!((r.attempts, r.evidence[0].attempt), (1, 1), "{id}");
            assert_eq!(t.count(RELAYS[0], &r.event.id), 1);
        }
        // Its own leases (work in flight) are never taken.
        for id in &own {
            let r = store.get(id).await.unwrap().unwrap();
            assert_eq!(r.stage, Stage::Leased, "{id}");
            assert_eq!(r.takeovers, 0, "{id}");
            assert_eq!(r.lease.unwrap().owner, "live");
        }

        // Without the lock (no takeover) the same crash leaves the dead leases to
        // expire: only the pending records go out.
        let (store, dead, _) = crashed_store().await;
        let s = run_once(&store, &t, false).await;
        assert_eq!((s.taken_over, s.claimed, s.satisfied), (0, 8, 8), "{s:?}");
        for id in &dead {
            let r = store.get(id).await.unwrap().unwrap();
            assert_eq!(r.stage, Stage::Leased, "{id} waits for its lease");
        }
    });
}
