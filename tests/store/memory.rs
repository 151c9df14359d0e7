//! Runs the store conformance suite against the memory store (once: one test per case),
//! and checks that the suite catches broken stores.

use std::panic::{catch_unwind, AssertUnwindSafe};

use futures::executor::block_on;
use nostr_outbox::core::{
    Change, ClaimRequest, Completion, Enqueued, Heartbeat, ListQuery, Lookups, Plan, Record,
    RetryConfig, Stage, StageCounts,
};
use nostr_outbox::store::{conformance, MemoryStore, Store, StoreError};

macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                block_on(conformance::$case(&MemoryStore::in_memory()));
            }
        )*
    };
}

nostr_outbox::conformance_cases!(cases);

/// A memory store with one deliberate defect.
struct Broken {
    inner: MemoryStore,
    defect: Defect,
}

#[derive(Clone, Copy)]
enum Defect {
    /// `claim` hands records back in reverse order.
    ClaimOrder,
    /// `enqueue_many` writes the plans before a later one fails.
    NonAtomicBatch,
    /// `purge` also deletes non-terminal records.
    PurgeEverything,
    /// Enqueues ignore the Nostr rules (as if every event were a regular one).
    NoNostrRules,
    /// `take_over` also takes the caller's own live leases (its work in flight).
    TakeOverOwnLeases,
    /// `take_over` ignores heartbeats: a flusher without the lock takes a busy one's.
    IgnoresHeartbeats,
    /// Delivery stops at the policy's verdict: a record that would go on delivering to
    /// its open targets is ended instead.
    StopsAtVerdict,
}

impl Broken {
    fn plan(&self, mut plan: Plan) -> Plan {
        if let Defect::NoNostrRules = self.defect {
            if let Some(meta) = plan.event.meta.as_mut() {
                meta.kind = 1;
                meta.deletes_ids.clear();
                meta.deletes_addresses.clear();
            }
        }
        plan
    }
}

impl Store for Broken {
    async fn enqueue(&self, plan: Plan, now_ms: u64) -> Result<Enqueued, StoreError> {
        self.inner.enqueue(self.plan(plan), now_ms).await
    }
    async fn enqueue_many(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
    ) -> Result<Vec<Enqueued>, StoreError> {
        if let Defect::NonAtomicBatch = self.defect {
            let mut out = Vec::new();
            for p in plans {
                out.push(self.inner.enqueue(p, now_ms).await?);
            }
            return Ok(out);
        }
        let plans = plans.into_iter().map(|p| self.plan(p)).collect();
        self.inner.enqueue_many(plans, now_ms).await
    }
    async fn get(&self, id: &str) -> Result<Option<Record>, StoreError> {
        self.inner.get(id).await
    }
    async fn related(&self, lookups: &Lookups) -> Result<Vec<Record>, StoreError> {
        self.inner.related(lookups).await
    }
    async fn claim(&self, request: &ClaimRequest, now_ms: u64) -> Result<Vec<Record>, StoreError> {
        let mut out = self.inner.claim(request, now_ms).await?;
        if let Defect::ClaimOrder = self.defect {
            out.reverse();
        }
        Ok(out)
    }
    async fn take_over(
        &self,
        request: &ClaimRequest,
        now_ms: u64,
    ) -> Result<Vec<Record>, StoreError> {
        if let Defect::TakeOverOwnLeases = self.defect {
            // Does not tell owners apart: every live lease is taken, the caller's too.
            let mut blind = request.clone();
            blind.owner = "any-owner".into();
            return self.inner.take_over(&blind, now_ms).await;
        }
        if let Defect::IgnoresHeartbeats = self.defect {
            let mut blind = request.clone();
            blind.lapsed_only = false;
            return self.inner.take_over(&blind, now_ms).await;
        }
        self.inner.take_over(request, now_ms).await
    }
    async fn beat(
        &self,
        owner: &str,
        beat: Option<Heartbeat>,
        now_ms: u64,
    ) -> Result<u32, StoreError> {
        self.inner.beat(owner, beat, now_ms).await
    }
    async fn complete_attempt(
        &self,
        completion: &Completion,
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        let r = self
            .inner
            .complete_attempt(completion, retry, now_ms)
            .await?;
        if let (Defect::StopsAtVerdict, Stage::Delivering) = (self.defect, r.stage) {
            return self.inner.cancel(&r.id, now_ms).await;
        }
        Ok(r)
    }
    async fn record_signing(
        &self,
        signed: &nostr_outbox::core::Signed,
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        self.inner.record_signing(signed, retry, now_ms).await
    }
    async fn release(
        &self,
        id: &str,
        lease_id: &str,
        revision: u64,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        self.inner.release(id, lease_id, revision, now_ms).await
    }
    async fn change(&self, id: &str, change: Change, now_ms: u64) -> Result<Record, StoreError> {
        self.inner.change(id, change, now_ms).await
    }
    async fn relay_back(&self, relay: &str, now_ms: u64) -> Result<Vec<Record>, StoreError> {
        self.inner.relay_back(relay, now_ms).await
    }
    async fn purge(&self, before_ms: u64) -> Result<u32, StoreError> {
        if let Defect::PurgeEverything = self.defect {
            for r in self.inner.snapshot() {
                if !r.is_terminal() {
                    self.inner.cancel(&r.id, r.updated_ms).await?;
                }
            }
            return self.inner.purge(u64::MAX).await;
        }
        self.inner.purge(before_ms).await
    }
    async fn list(&self, query: &ListQuery) -> Result<Vec<Record>, StoreError> {
        self.inner.list(query).await
    }
    async fn status(&self) -> Result<StageCounts, StoreError> {
        self.inner.status().await
    }
    async fn next_due(&self, prepare: u8) -> Result<Option<u64>, StoreError> {
        self.inner.next_due(prepare).await
    }
    async fn count_due(&self, now_ms: u64) -> Result<u32, StoreError> {
        self.inner.count_due(now_ms).await
    }
}

fn suite_fails_on(defect: Defect) -> String {
    let result = catch_unwind(AssertUnwindSafe(|| {
        block_on(conformance::run_all(|| async move {
            Broken {
                inner: MemoryStore::in_memory(),
                defect,
            }
        }))
    }));
    match result {
        Ok(()) => panic!("the suite passed a broken store"),
        Err(e) => e
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "<non-string panic>".into()),
    }
}

#[test]
fn the_suite_catches_broken_stores() {
    let msg = suite_fails_on(Defect::ClaimOrder);
    assert!(msg.contains("claim_order_and_bound"), "{msg}");
    let msg = suite_fails_on(Defect::NonAtomicBatch);
    assert!(msg.contains("enqueue_many_all_or_nothing"), "{msg}");
    // The groups case (it purges too) runs first and catches it.
    let msg = suite_fails_on(Defect::PurgeEverything);
    assert!(
        msg.contains("groups_enqueue_whole_each_member_stored") && msg.contains("purged"),
        "{msg}"
    );
    let msg = suite_fails_on(Defect::NoNostrRules);
    assert!(msg.contains("replaceable_versions_supersede"), "{msg}");
    let msg = suite_fails_on(Defect::TakeOverOwnLeases);
    assert!(msg.contains("take_over_orphaned_leases"), "{msg}");
    let msg = suite_fails_on(Defect::IgnoresHeartbeats);
    assert!(
        msg.contains("takeover_by_heartbeat_takes_only_lapsed_owners"),
        "{msg}"
    );
    let msg = suite_fails_on(Defect::StopsAtVerdict);
    assert!(msg.contains("policies"), "{msg}");
}
