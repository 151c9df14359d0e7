//! The pipelined flush ([`run`] / [`flush_until_idle`]): the publish window spans
//! claimed batches, a slow relay holds one slot instead of the whole batch, attempts
//! finished while a recording runs are recorded together, and a storage failure stops
//! everything new and is returned without losing a record.

use std::cell::{Cell, RefCell};

use futures::executor::block_on;
use futures::future::LocalBoxFuture;
use nostr_outbox::core::{
    Change, ClaimRequest, Completion, Enqueued, EventEnvelope, Heartbeat, ListQuery, Lookups,
    Outcome, Plan, Policy, Priority, Record, RejectReason, RetryConfig, Signal, Stage, StageCounts,
    StopReason,
};
use nostr_outbox::flush::{
    flush_until_idle, run, FlushConfig, FlushEvent, FlushSummary, RunBounds, LOW_BATCH_PER_PUBLISH,
    LOW_WINDOW,
};
use nostr_outbox::store::conformance::{fixture_plan, RELAYS};
use nostr_outbox::store::{MemoryStore, Store, StoreError};
use nostr_outbox::transport::{PublishReport, Transport};

use crate::support::{config, counter, flush_all, Paced, Yield};

/// A memory store whose claims and recordings take a few executor turns (as
/// IndexedDB's do), which notes the size of every recorded group and how many
/// recordings overlap, and can fail its `fail_on`-th recording.
struct Slow {
    inner: MemoryStore,
    turns: u32,
    claims: Cell<u32>,
    groups: RefCell<Vec<usize>>,
    recording: Cell<u32>,
    overlapping: Cell<u32>,
    fail_on: Option<usize>,
    /// Every claim (`claim <limit>`) and recording (`record <group size>`), in the
    /// order they started.
    log: RefCell<Vec<String>>,
}

impl Slow {
    fn new(turns: u32, fail_on: Option<usize>) -> Slow {
        Slow {
            inner: MemoryStore::in_memory(),
            turns,
            claims: Cell::new(0),
            groups: RefCell::new(Vec::new()),
            recording: Cell::new(0),
            overlapping: Cell::new(0),
            fail_on,
            log: RefCell::new(Vec::new()),
        }
    }
}

impl Store for Slow {
    async fn enqueue(&self, plan: Plan, now_ms: u64) -> Result<Enqueued, StoreError> {
        self.inner.enqueue(plan, now_ms).await
    }
    async fn enqueue_many(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
    ) -> Result<Vec<Enqueued>, StoreError> {
        self.inner.enqueue_many(plans, now_ms).await
    }
    async fn get(&self, id: &str) -> Result<Option<Record>, StoreError> {
        self.inner.get(id).await
    }
    async fn related(&self, lookups: &Lookups) -> Result<Vec<Record>, StoreError> {
        self.inner.related(lookups).await
    }
    async fn claim(&self, request: &ClaimRequest, now_ms: u64) -> Result<Vec<Record>, StoreError> {
        self.claims.set(self.claims.get() + 1);
        self.log
            .borrow_mut()
            .push(format!("claim {}", request.limit));
        Yield(self.turns).await;
        self.inner.claim(request, now_ms).await
    }
    async fn take_over(
        &self,
        request: &ClaimRequest,
        now_ms: u64,
    ) -> Result<Vec<Record>, StoreError> {
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
        self.inner.complete_attempt(completion, retry, now_ms).await
    }
    async fn complete_attempts(
        &self,
        completions: &[Completion],
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Vec<Result<Record, StoreError>> {
        self.recording.set(self.recording.get() + 1);
        self.overlapping
            .set(self.overlapping.get().max(self.recording.get()));
        self.groups.borrow_mut().push(completions.len());
        self.log
            .borrow_mut()
            .push(format!("record {}", completions.len()));
        Yield(self.turns).await;
        self.recording.set(self.recording.get() - 1);
        if self.fail_on == Some(self.groups.borrow().len()) {
            return vec![Err(StoreError::Backend("disk went away".into()))];
        }
        self.inner
            .complete_attempts(completions, retry, now_ms)
            .await
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

async fn fill(store: &impl Store, n: u32, relays: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 1..=n {
        let plan = fixture_plan(i, &RELAYS[..relays], Policy::All);
        ids.push(store.enqueue(plan, 0).await.unwrap().record.id);
    }
    ids
}

/// `n` records of priority `low` for the first relay.
async fn fill_low(store: &impl Store, n: u32) {
    for i in 1..=n {
        let plan = fixture_plan(i, &RELAYS[..1], Policy::All).with_priority(Priority::Low);
        store.enqueue(plan, 0).await.unwrap();
    }
}

#[test]
fn a_slow_relay_holds_one_slot_not_the_whole_batch() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let ids = fill(&store, 6, 1).await;
        // The first record's relay answers after 200 turns, the others after one.
        let t = Paced::new(&ids[0], 200);
        let mut delivered = Vec::new();
        let summary = flush_until_idle(
            &store,
            &t,
            &config(2, 2),
            &|| 0,
            &mut counter(),
            &mut |e| {
                if let FlushEvent::Delivered { record } = e {
                    delivered.push(record.id.clone());
                }
            },
            100,
        )
        .await
        .unwrap();
        assert_eq!(
            (summary.stats.claimed, summary.stats.satisfied),
            (6, 6),
            "{summary:?}"
        );
        // A barrier per batch would have delivered the first batch (ids 0 and 1)
        // together, first; the window moved on past the slow answer instead.
        assert_eq!(delivered.len(), 6);
        assert_eq!(delivered.last(), Some(&ids[0]), "{delivered:?}");
        assert_eq!(store.status().await.unwrap().satisfied, 6);
    });
}

#[test]
fn the_publish_window_spans_claimed_batches_and_never_exceeds_concurrency() {
    block_on(async {
        let store = MemoryStore::in_memory();
        fill(&store, 8, 1).await;
        let mut t = Paced::new("none", 0);
        t.turns = 10;
        // One record per claim, three publishes at once, each answered after more
        // turns than a claim takes: the window is filled from several claims.
        let summary = flush_all(&store, &t, &config(1, 3)).await.unwrap();
        assert_eq!(summary.stats.satisfied, 8, "{summary:?}");
        assert_eq!(
            t.peak.get(),
            3,
            "filled from several batches, within the bound"
        );
        assert!(summary.ticks >= 8, "{summary:?}");
    });
}

/// `low` records yield: at most `low_concurrency` (default `LOW_WINDOW`) of their
/// publishes are in flight to a relay, and once a claim reached them the next claims
/// take at most `LOW_BATCH_PER_PUBLISH` per publish of that window; `normal` records
/// fill the whole window, claimed a whole batch at a time.
#[test]
fn low_records_yield_the_window_and_the_batch() {
    block_on(async {
        for (priority, low_concurrency) in [
            (Priority::Normal, LOW_WINDOW),
            (Priority::Low, LOW_WINDOW),
            (Priority::Low, 10),
            (Priority::Low, 100),
        ] {
            let store = Slow::new(1, None);
            for i in 1..=400u32 {
                let plan = fixture_plan(i, &RELAYS[..1], Policy::All).with_priority(priority);
                store.enqueue(plan, 0).await.unwrap();
            }
            let mut t = Paced::new("none", 0);
            t.turns = 40;
            let config = FlushConfig {
                low_concurrency,
                ..config(256, 64)
            };
            let summary = flush_all(&store, &t, &config).await.unwrap();
            let case = format!("{priority:?}, low_concurrency {low_concurrency}");
            assert_eq!(summary.stats.satisfied, 400, "{case}: {summary:?}");
            let claims: Vec<String> = store
                .log
                .borrow()
                .iter()
                .filter(|l| l.starts_with("claim"))
                .cloned()
                .collect();
            assert_eq!(claims[0], "claim 256", "{case}: {claims:?}");
            if priority == Priority::Low {
                // The window is the smaller of `low_concurrency` and `concurrency` (64).
                let window = low_concurrency.min(64);
                assert_eq!(t.peak_per_relay.get(), window, "{case}");
                let later = format!("claim {}", (window * LOW_BATCH_PER_PUBLISH).min(256));
                assert!(
                    claims[1..].iter().all(|c| *c == later),
                    "{case}: {claims:?}"
                );
            } else {
                assert_eq!(t.peak_per_relay.get(), 64, "{case}");
                assert!(
                    claims[1..].iter().all(|c| c == "claim 256"),
                    "{case}: {claims:?}"
                );
            }
        }
    });
}

/// A `normal` record claimed into a `low` backlog goes ahead of it and is not held to
/// the backlog's window: all of it is in flight at once beside the backlog's `LOW_WINDOW`.
#[test]
fn normal_records_pass_a_low_backlog_in_the_window() {
    block_on(async {
        let store = MemoryStore::in_memory();
        fill_low(&store, 100).await;
        for i in 101..=140u32 {
            store
                .enqueue(fixture_plan(i, &RELAYS[..1], Policy::All), 0)
                .await
                .unwrap();
        }
        let mut t = Paced::new("none", 0);
        t.turns = 40;
        let summary = flush_all(&store, &t, &config(256, 64)).await.unwrap();
        assert_eq!(summary.stats.satisfied, 140, "{summary:?}");
        assert_eq!(t.peak_per_relay.get(), 40 + LOW_WINDOW);
    });
}

/// Many distinct relays (as when each note goes to its author's and mentions' relays):
/// each relay has its own window, every record is delivered to every one of its
/// relays exactly once.
#[test]
fn every_relay_has_its_own_window() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let relays: Vec<String> = (0..40).map(|r| format!("wss://r{r}.example")).collect();
        let mut ids = Vec::new();
        for i in 0..30u32 {
            // Eight relays per record, overlapping between records.
            let targets: Vec<&str> = (0..8)
                .map(|k| relays[((i * 3 + k * 5) % 40) as usize].as_str())
                .collect();
            let plan = fixture_plan(i + 1, &targets, Policy::All);
            ids.push(store.enqueue(plan, 0).await.unwrap().record.id);
        }
        let mut t = Paced::new("none", 0);
        t.turns = 3;
        let summary = flush_all(&store, &t, &config(4, 1)).await.unwrap();
        assert_eq!(
            (summary.stats.satisfied, summary.stats.publishes),
            (30, 240),
            "{summary:?}"
        );
        assert_eq!(t.peak_per_relay.get(), 1, "one publish at a time per relay");
        assert!(
            t.peak.get() > 8,
            "relays publish side by side: {}",
            t.peak.get()
        );
        for id in &ids {
            let r = store.get(id).await.unwrap().unwrap();
            assert_eq!(r.stage, Stage::Satisfied);
            assert_eq!(r.evidence.len(), 8, "each relay answered once: {id}");
        }
    });
}

#[test]
fn attempts_finished_during_a_recording_are_recorded_together() {
    block_on(async {
        let store = Slow::new(5, None);
        let ids = fill(&store, 12, 2).await;
        let t = Paced::new("none", 0);
        let summary = flush_all(&store, &t, &config(4, 8)).await.unwrap();
        assert_eq!(summary.stats.satisfied, 12, "{summary:?}");
        let groups = store.groups.borrow().clone();
        assert_eq!(
            groups.iter().sum::<usize>(),
            12,
            "each attempt once: {groups:?}"
        );
        assert!(groups.len() < 12, "grouped: {groups:?}");
        assert_eq!(store.overlapping.get(), 1, "one recording at a time");
        for id in &ids {
            let r = store.get(id).await.unwrap().unwrap();
            assert_eq!(r.stage, Stage::Satisfied);
            assert_eq!(r.attempts, 1, "{id}");
        }
    });
}

/// Answers that arrive one executor turn apart: the `n`th publish answers after `n`
/// turns.
struct Trickling {
    sent: Cell<u32>,
}

impl Transport for Trickling {
    async fn publish(&self, _relay: &str, _event: &EventEnvelope) -> PublishReport {
        self.sent.set(self.sent.get() + 1);
        Yield(self.sent.get()).await;
        PublishReport::new(Outcome::Accepted, "")
    }
}

/// A storage that commits faster than answers arrive (bun:sqlite, a Durable Object): at
/// the tail of the run (nothing left to claim or to send) the answers still gather into
/// groups, instead of one recording each (a flush of 1 000 on bun:sqlite made 251
/// single-record commits).
#[test]
fn a_quick_storage_records_the_tail_of_a_run_in_groups() {
    block_on(async {
        let store = Slow::new(0, None);
        fill(&store, 48, 1).await;
        let t = Trickling { sent: Cell::new(0) };
        let summary = flush_all(&store, &t, &config(16, 48)).await.unwrap();
        assert_eq!(summary.stats.satisfied, 48, "{summary:?}");
        let groups = store.groups.borrow().clone();
        assert_eq!(
            groups.iter().sum::<usize>(),
            48,
            "each attempt once: {groups:?}"
        );
        assert!(groups.len() <= 4, "recorded in groups: {groups:?}");
    });
}

#[test]
fn a_storage_failure_stops_the_run_and_loses_nothing() {
    block_on(async {
        let store = Slow::new(3, Some(1));
        let ids = fill(&store, 10, 1).await;
        let t = Paced::new("none", 0);
        let err = flush_all(&store, &t, &config(2, 2)).await.unwrap_err();
        assert_eq!(err.code(), "storage", "{err}");
        // Nothing was recorded, and no claim started after the failure: at most the
        // claims running when it happened.
        assert_eq!(
            store.groups.borrow().len(),
            1,
            "no recording after the failure"
        );
        let claims_at_failure = store.claims.get();
        assert!(claims_at_failure < 5, "claims stopped: {claims_at_failure}");
        assert_eq!(store.inner.status().await.unwrap().satisfied, 0);
        // The leases expire; the next run delivers every record (at least once).
        let later = flush_until_idle(
            &store,
            &t,
            &config(2, 2),
            &|| 20_000,
            &mut counter(),
            &mut |_| {},
            100,
        )
        .await
        .unwrap();
        assert_eq!(later.stats.satisfied, 10, "{later:?}");
        for id in &ids {
            assert_eq!(
                store.get(id).await.unwrap().unwrap().stage,
                Stage::Satisfied
            );
        }
    });
}

#[test]
fn keep_going_stops_claiming_but_finishes_what_was_claimed() {
    block_on(async {
        let store = MemoryStore::in_memory();
        fill(&store, 6, 1).await;
        let t = Paced::new("none", 0);
        let claims = Cell::new(0u32);
        let keep_going = || {
            claims.set(claims.get() + 1);
            claims.get() <= 1
        };
        let bounds = RunBounds {
            max_ticks: 100,
            keep_going: &keep_going,
            take_over: false,
            sleep: None,
            hurry: None,
            hold: None,
            nudge: None,
            prepare: 0,
        };
        let summary = run(
            &store,
            &t,
            &config(2, 2),
            &|| 0,
            &mut counter(),
            &mut |_| {},
            &bounds,
        )
        .await
        .unwrap();
        assert_eq!(summary.ticks, 1, "{summary:?}");
        assert_eq!(
            (summary.stats.claimed, summary.stats.satisfied),
            (2, 2),
            "the claimed batch is published and recorded"
        );
        let status = store.status().await.unwrap();
        assert_eq!((status.satisfied, status.pending), (2, 4), "{status:?}");
        assert_eq!(summary.next_due_ms, Some(0), "the rest is due now");
    });
}

/// Relays that answer every publish with `outcome`; the `slow` one takes `step_ms` of
/// the test's clock per answer, the others a turn. Notes every publish as
/// `relay id`.
struct Sluggish<'a> {
    now: &'a Cell<u64>,
    slow: &'a str,
    step_ms: u64,
    outcome: Outcome,
    sent: RefCell<Vec<String>>,
}

impl<'a> Sluggish<'a> {
    fn new(now: &'a Cell<u64>, slow: &'a str, outcome: Outcome) -> Sluggish<'a> {
        Sluggish {
            now,
            slow,
            step_ms: 3_000,
            outcome,
            sent: RefCell::new(Vec::new()),
        }
    }

    /// Publishes that repeated an earlier one (same relay and event).
    fn repeats(&self) -> Vec<String> {
        let sent = self.sent.borrow();
        let mut repeats: Vec<String> = sent
            .iter()
            .enumerate()
            .filter(|(i, s)| sent[..*i].contains(s))
            .map(|(_, s)| s.clone())
            .collect();
        repeats.dedup();
        repeats
    }
}

impl Transport for Sluggish<'_> {
    async fn publish(&self, relay: &str, event: &EventEnvelope) -> PublishReport {
        self.sent.borrow_mut().push(format!("{relay} {}", event.id));
        Yield(1).await;
        if relay == self.slow {
            self.now.set(self.now.get() + self.step_ms);
        }
        PublishReport::new(self.outcome, "blocked: no")
    }
}

/// Flushes until every record is in `stage` (at most 20 runs, 1 s apart on the test's
/// clock); the runs' lost claims and released records.
async fn flush_until(store: &MemoryStore, t: &Sluggish<'_>, stage: Stage, n: u32) -> (u32, u32) {
    let (mut lost, mut released) = (0, 0);
    for _ in 0..20 {
        let summary = flush_until_idle(
            store,
            t,
            &config(4, 1),
            &|| t.now.get(),
            &mut counter(),
            &mut |_| {},
            100,
        )
        .await
        .unwrap();
        lost += summary.stats.lost_claims;
        released += summary.stats.released;
        let status = store.status().await.unwrap();
        if status.get(stage) == n {
            break;
        }
        t.now.set(t.now.get() + 1_000);
    }
    (lost, released)
}

/// Publishes queue behind a slow relay's window and wait for their group to be
/// recorded, but never past their lease: an attempt is recorded while its lease
/// holds, and a record that would start publishing too late is handed back and
/// claimed again. So no answer is lost and no relay is sent an event it rejected.
#[test]
fn a_slow_relay_never_outlasts_a_lease() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let ids = fill(&store, 12, 1).await;
        let now = Cell::new(0u64);
        // One publish at a time, 3 s each, under a 10 s lease: the fourth record of a
        // batch of four would start 9 s after its claim.
        let rejected = Outcome::Rejected(RejectReason::Blocked);
        let t = Sluggish::new(&now, RELAYS[0], rejected);
        let (lost, released) = flush_until(&store, &t, Stage::Exhausted, 12).await;
        assert_eq!(lost, 0, "every answer recorded under its lease");
        assert_eq!(t.repeats(), Vec::<String>::new(), "sent once each");
        assert_eq!(t.sent.borrow().len(), 12);
        assert!(released > 0, "late records were handed back");
        for id in &ids {
            let r = store.get(id).await.unwrap().unwrap();
            assert_eq!(r.stage, Stage::Exhausted, "{id}");
            assert_eq!(r.reason, Some(StopReason::Rejected));
            assert_eq!(r.evidence.len(), 1, "{:?}", r.evidence);
        }
    });
}

/// A record whose slow relay's window stays full past half the lease is recorded with
/// what the other relays answered (the slow one `notAttempted`) and tried again for
/// the slow relay only: no answer lost, no relay sent an event it accepted.
#[test]
fn a_slow_relay_skips_its_late_publishes_and_the_rest_is_recorded() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let ids = fill(&store, 8, 2).await;
        let now = Cell::new(0u64);
        let t = Sluggish::new(&now, RELAYS[1], Outcome::Accepted);
        let (lost, _) = flush_until(&store, &t, Stage::Satisfied, 8).await;
        assert_eq!(lost, 0, "every answer recorded under its lease");
        assert_eq!(t.repeats(), Vec::<String>::new(), "sent once each");
        assert_eq!(t.sent.borrow().len(), 16);
        let mut skipped = 0;
        for id in &ids {
            let r = store.get(id).await.unwrap().unwrap();
            assert_eq!(r.stage, Stage::Satisfied, "{id}");
            let slow: Vec<Outcome> = r
                .evidence
                .iter()
                .filter(|e| e.target == RELAYS[1])
                .map(|e| e.outcome)
                .collect();
            assert_eq!(slow.last(), Some(&Outcome::Accepted), "{:?}", r.evidence);
            skipped += slow.iter().filter(|o| **o == Outcome::NotAttempted).count();
        }
        assert!(skipped > 0, "some late publishes were skipped");
    });
}

/// One relay that is down (`unreachable`) until `up` is set, then accepts; like the
/// WebSocket transport, it reports the relay as recovered after its first answer.
struct Flapping {
    up: Cell<bool>,
    failed: Cell<bool>,
    recovered: RefCell<Vec<String>>,
}

impl Transport for Flapping {
    async fn publish(&self, relay: &str, _event: &EventEnvelope) -> PublishReport {
        Yield(1).await;
        if !self.up.get() {
            self.failed.set(true);
            return PublishReport::new(Outcome::Unreachable, "connection refused");
        }
        if self.failed.replace(false) {
            self.recovered.borrow_mut().push(relay.to_string());
        }
        PublishReport::new(Outcome::Accepted, "")
    }

    fn take_recovered(&self) -> Vec<String> {
        std::mem::take(&mut *self.recovered.borrow_mut())
    }
}

/// Records that found their relay unreachable wait out their backoff; when the relay
/// answers again, the run that saw it makes them due and delivers them at once.
#[test]
fn a_relay_that_answers_again_wakes_the_records_waiting_for_it() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let waiting = fill(&store, 4, 1).await;
        let t = Flapping {
            up: Cell::new(false),
            failed: Cell::new(false),
            recovered: RefCell::new(Vec::new()),
        };
        // Every record a run reports woken, as the observer saw it.
        let woken: RefCell<Vec<(String, Option<u64>)>> = RefCell::new(Vec::new());
        let run_at = |now: u64| {
            let t = &t;
            let store = &store;
            let woken = &woken;
            async move {
                // A clock that moves 1 ms per reading.
                let clock = Cell::new(now);
                flush_until_idle(
                    store,
                    t,
                    &config(2, 2),
                    &|| clock.replace(clock.get() + 1),
                    &mut counter(),
                    &mut |e| {
                        if let FlushEvent::Woken { record } = e {
                            woken.borrow_mut().push((record.id.clone(), record.due_ms));
                        }
                    },
                    100,
                )
                .await
                .unwrap()
            }
        };
        let down = run_at(0).await;
        assert_eq!(down.stats.retrying, 4, "{down:?}");
        assert!(
            woken.borrow().is_empty(),
            "nothing woken while the relay is down"
        );
        for id in &waiting {
            let r = store.get(id).await.unwrap().unwrap();
            assert!(r.due_ms >= Some(1_000), "backing off: {:?}", r.due_ms);
        }
        // The relay is back; a new note is the first to reach it, 10 ms later.
        t.up.set(true);
        let plan = fixture_plan(9, &RELAYS[..1], Policy::All);
        store.enqueue(plan, 10).await.unwrap();
        let back = run_at(10).await;
        assert_eq!(back.stats.woken, 4, "{back:?}");
        // The observer heard of each woken record, due at once (an app's `change`).
        let mut heard = woken.borrow().clone();
        heard.sort();
        let mut expected: Vec<String> = waiting.clone();
        expected.sort();
        assert_eq!(
            heard.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>(),
            expected
        );
        assert!(
            heard
                .iter()
                .all(|(_, due)| due.is_some_and(|d| (10..1_000).contains(&d))),
            "due at the wake-up, not after the backoff: {heard:?}"
        );
        assert_eq!(back.stats.satisfied, 5, "{back:?}");
        assert_eq!(store.status().await.unwrap().satisfied, 5);
        for id in &waiting {
            let r = store.get(id).await.unwrap().unwrap();
            assert_eq!(r.attempts, 1, "the unreached try was not counted: {id}");
        }
        assert!(t.take_recovered().is_empty(), "the run took the recovery");
    });
}

/// Group commit: with a bound of 0 an answer is recorded as soon as no recording is
/// in flight (the first group is the first answer alone, and what gathers during a
/// recording goes next); with a bound longer than the run (and no timer) a group
/// waits for `batch_size` answers. Either way every answer's wait is counted once.
#[test]
fn group_commit_writes_at_the_bound_or_at_batch_size() {
    block_on(async {
        for (wait, first) in [(0, 1), (60_000, 8)] {
            let store = Slow::new(5, None);
            fill(&store, 24, 2).await;
            let t = Paced::new("none", 0);
            let mut cfg = config(8, 8);
            cfg.group_wait_ms = wait;
            // 1 ms per reading of the clock.
            let now = Cell::new(0u64);
            let clock = || {
                now.set(now.get() + 1);
                now.get()
            };
            let bounds = RunBounds {
                max_ticks: 100,
                keep_going: &|| true,
                take_over: false,
                sleep: None,
                hurry: None,
                hold: None,
                nudge: None,
                prepare: 0,
            };
            let summary = run(
                &store,
                &t,
                &cfg,
                &clock,
                &mut counter(),
                &mut |_| {},
                &bounds,
            )
            .await
            .unwrap();
            let groups = store.groups.borrow().clone();
            assert_eq!(summary.stats.satisfied, 24, "wait {wait}: {summary:?}");
            assert_eq!(groups.iter().sum::<usize>(), 24, "wait {wait}: {groups:?}");
            assert_eq!(groups[0], first, "wait {wait}: {groups:?}");
            assert_eq!(store.overlapping.get(), 1, "one recording at a time");
            let waits = summary.ok_to_commit;
            assert_eq!(
                waits.count, 48,
                "one wait per answer (2 relays each): {waits:?}"
            );
            assert!(waits.median_ms <= waits.p99_ms && waits.p99_ms <= waits.max_ms);
        }
    });
}

/// The waits' percentiles: exact below 100 ms, a bucket's upper end above it (never
/// past the longest wait), nearest rank.
#[test]
fn waits_percentiles() {
    use nostr_outbox::flush::Waits;
    let mut w = Waits::default();
    assert_eq!(w.latency().count, 0);
    for ms in 1..=100 {
        w.add(ms);
    }
    let l = w.latency();
    assert_eq!(
        (l.count, l.median_ms, l.p99_ms, l.max_ms),
        (100, 50, 99, 100)
    );
    let mut w = Waits::default();
    for _ in 0..98 {
        w.add(5);
    }
    w.add(123);
    w.add(4_321);
    let l = w.latency();
    assert_eq!((l.median_ms, l.p99_ms, l.max_ms), (5, 129, 4_321), "{l:?}");
    let mut w = Waits::default();
    w.add(70_000);
    assert_eq!(w.latency().p99_ms, 70_000, "capped at the longest");
}

/// A run's bounds (no timer, no hold) that ask `take` for hurried records and look at
/// `nudge`.
fn hurried_bounds<'a>(take: &'a dyn Fn() -> u32, nudge: Option<&'a Signal>) -> RunBounds<'a> {
    RunBounds {
        max_ticks: 100,
        keep_going: &|| true,
        take_over: false,
        sleep: None,
        hurry: Some(take),
        hold: None,
        nudge,
        prepare: 0,
    }
}

/// A run over `store` through `t` with the clock at 0, counting random numbers and
/// observing nothing.
async fn run_at_zero(
    store: &Slow,
    t: &impl Transport,
    cfg: &FlushConfig,
    bounds: &RunBounds<'_>,
) -> Result<FlushSummary, StoreError> {
    run(store, t, cfg, &|| 0, &mut counter(), &mut |_| {}, bounds).await
}

/// Accepts every event after a few turns, logs every publish, and on its `at`-th
/// publish enqueues a `high` record into `store` and counts it for the run's `hurry`.
struct Interrupting<'a> {
    store: &'a Slow,
    at: usize,
    sent: RefCell<Vec<String>>,
    hurry: Cell<u32>,
    high: RefCell<Option<String>>,
    /// Executor turns the `high` record's publish takes (the others take 3).
    high_turns: u32,
}

impl Interrupting<'_> {
    fn new(store: &Slow, at: usize, high_turns: u32) -> Interrupting<'_> {
        Interrupting {
            store,
            at,
            sent: RefCell::new(Vec::new()),
            hurry: Cell::new(0),
            high: RefCell::new(None),
            high_turns,
        }
    }

    /// A run over its store through it (clock at 0), with its `hurry` counted.
    async fn run(&self, cfg: &FlushConfig) -> FlushSummary {
        let take = || self.hurry.replace(0);
        let bounds = hurried_bounds(&take, None);
        run_at_zero(self.store, self, cfg, &bounds).await.unwrap()
    }
}

impl Transport for Interrupting<'_> {
    async fn publish(&self, _relay: &str, event: &EventEnvelope) -> PublishReport {
        let n = {
            let mut sent = self.sent.borrow_mut();
            sent.push(event.id.clone());
            sent.len()
        };
        if n == self.at {
            let plan = fixture_plan(999, &RELAYS[..1], Policy::All)
                .with_priority(nostr_outbox::core::Priority::High);
            let id = self.store.enqueue(plan, 0).await.unwrap().record.id;
            *self.high.borrow_mut() = Some(id);
            self.hurry.set(self.hurry.get() + 1);
        }
        let high = self.high.borrow().as_ref() == Some(&event.id);
        Yield(if high { self.high_turns } else { 3 }).await;
        PublishReport::new(Outcome::Accepted, "")
    }
}

/// A `high` record enqueued while a backlog flushes (signalled through
/// `RunBounds::hurry`) is claimed at once, although a window's worth of publishes is
/// waiting, and its publish goes ahead of the waiting ones: at most the publishes in
/// flight go before it. It is recorded in a group of its own.
#[test]
fn a_hurried_high_record_jumps_the_waiting_backlog() {
    block_on(async {
        let store = Slow::new(2, None);
        fill(&store.inner, 200, 1).await;
        let t = Interrupting::new(&store, 20, 3);
        let summary = t.run(&config(32, 4)).await;
        assert_eq!(summary.stats.satisfied, 201, "{summary:?}");
        let high = t.high.borrow().clone().expect("enqueued");
        let sent = t.sent.borrow();
        let at = sent.iter().position(|id| *id == high).expect("published");
        // Published 20 was the trigger; at most the window (4) was in flight then.
        assert!(
            at < 20 + 4 + 1,
            "the high record went out as publish #{}",
            at + 1
        );
        assert!(
            store.groups.borrow().contains(&1),
            "recorded apart: {:?}",
            store.groups.borrow()
        );
    });
}

/// From the moment a `high` record is signalled (`RunBounds::hurry`) until its claim
/// returns, no `low` publish starts: each would be one more message ahead of the
/// record's own on the relay's connection. The `low` publishes answered meanwhile are
/// replaced only after the record's publish has started.
#[test]
fn no_low_publish_starts_between_a_hurried_record_and_its_publish() {
    block_on(async {
        // Claims take 12 turns, `low` publishes 3: without the hold, the backlog's
        // window (4) would refill about three times over during the record's claim.
        let store = Slow::new(12, None);
        fill_low(&store.inner, 200).await;
        let t = Interrupting::new(&store, 40, 3);
        let summary = t.run(&config(32, 256)).await;
        assert_eq!(summary.stats.satisfied, 201, "{summary:?}");
        let high = t.high.borrow().clone().expect("enqueued");
        let at = t.sent.borrow().iter().position(|id| *id == high);
        let at = at.expect("published");
        // Publish 40 (index 39) signalled the record: the next publish to start is its.
        assert_eq!(at, 40, "{} low publishes started before it", at - 40);
    });
}

/// A hurried record that no claim takes (the run stopped claiming: the outbox closing,
/// the device offline) does not hold the `low` publishes back: everything the run
/// claimed is published and recorded, and nothing is left leased.
#[test]
fn low_publishes_go_on_when_a_hurried_record_is_not_claimed() {
    block_on(async {
        let store = Slow::new(2, None);
        fill_low(&store.inner, 200).await;
        let t = Interrupting::new(&store, 10, 3);
        let take = || t.hurry.replace(0);
        // The run stops claiming once the record is enqueued.
        let keep_going = || t.high.borrow().is_none();
        let bounds = RunBounds {
            keep_going: &keep_going,
            ..hurried_bounds(&take, None)
        };
        let summary = run_at_zero(&store, &t, &config(32, 256), &bounds).await;
        let summary = summary.unwrap();
        assert!(t.high.borrow().is_some(), "enqueued during the run");
        assert!(summary.stats.attempts >= 10, "{summary:?}");
        assert_eq!(
            summary.stats.satisfied, summary.stats.attempts,
            "{summary:?}"
        );
        let status = store.inner.status().await.unwrap();
        assert_eq!(status.leased, 0, "{status:?}");
    });
}

/// `low` publishes that take 200 executor turns; a `high` record's 2. Logs each
/// publish's start and answer.
struct Lagging {
    log: RefCell<Vec<String>>,
    high: RefCell<Option<String>>,
}

impl Transport for Lagging {
    async fn publish(&self, _relay: &str, event: &EventEnvelope) -> PublishReport {
        let high = self.high.borrow().as_ref() == Some(&event.id);
        let kind = if high { "high" } else { "low" };
        self.log.borrow_mut().push(format!("{kind} sent"));
        Yield(if high { 2 } else { 200 }).await;
        self.log.borrow_mut().push(format!("{kind} answered"));
        PublishReport::new(Outcome::Accepted, "")
    }
}

/// A `high` record enqueued while every publish in flight is slow: the caller's nudge
/// (`RunBounds::nudge`) makes the run claim and publish it at once, not when the next
/// of those publishes answers.
#[test]
fn a_nudge_makes_the_run_take_a_hurried_record_at_once() {
    block_on(async {
        let store = Slow::new(2, None);
        fill_low(&store.inner, 40).await;
        let t = Lagging {
            log: RefCell::new(Vec::new()),
            high: RefCell::new(None),
        };
        let hurry = Cell::new(0u32);
        let nudge = Signal::default();
        let take = || hurry.replace(0);
        let bounds = hurried_bounds(&take, Some(&nudge));
        let cfg = config(32, 256);
        let flush = run_at_zero(&store, &t, &cfg, &bounds);
        let enqueue = async {
            // Once the backlog's window is in flight.
            while !t.log.borrow().iter().any(|l| l == "low sent") {
                Yield(1).await;
            }
            Yield(10).await;
            let plan = fixture_plan(999, &RELAYS[..1], Policy::All).with_priority(Priority::High);
            let id = store.inner.enqueue(plan, 0).await.unwrap().record.id;
            *t.high.borrow_mut() = Some(id);
            hurry.set(1);
            nudge.fire();
        };
        let (summary, ()) = futures::future::join(flush, enqueue).await;
        assert_eq!(summary.unwrap().stats.satisfied, 41);
        let log = t.log.borrow();
        let high = log
            .iter()
            .position(|l| l == "high sent")
            .expect("published");
        let answered = log
            .iter()
            .position(|l| l == "low answered")
            .expect("answered");
        assert!(
            high < answered,
            "the high record waited for the backlog's answers: {:?}",
            &log[..answered.max(high) + 1]
        );
    });
}

/// While a hurried `high` record is in flight (claimed in a claim of its own, not yet
/// recorded), the run starts no bulk claim or recording: in IndexedDB each would be a
/// transaction the record's own claim and recording queue behind.
#[test]
fn a_hurried_high_record_holds_back_bulk_transactions_until_recorded() {
    block_on(async {
        let store = Slow::new(2, None);
        fill(&store.inner, 200, 1).await;
        // The high publish takes long enough for bulk answers to fill groups meanwhile.
        let t = Interrupting::new(&store, 40, 60);
        let summary = t.run(&config(8, 4)).await;
        assert_eq!(summary.stats.satisfied, 201, "{summary:?}");
        let log = store.log.borrow();
        let claim = log.iter().position(|l| l == "claim 1");
        let claim = claim.unwrap_or_else(|| panic!("a hurried claim of one: {log:?}"));
        let recorded = log[claim..].iter().position(|l| l == "record 1");
        let recorded = recorded.unwrap_or_else(|| panic!("recorded apart: {log:?}"));
        assert_eq!(
            recorded,
            1,
            "nothing started between the hurried claim and its recording: {:?}",
            &log[claim..]
        );
    });
}

/// Accepts every event after a few turns; from its `on`-th publish on it says a `high`
/// record is being enqueued (`RunBounds::hold`) for the run's next `span` looks,
/// noting when it starts and ends in the store's log.
struct Holding<'a> {
    store: &'a Slow,
    on: usize,
    span: u32,
    sent: Cell<usize>,
    writing: Cell<bool>,
    asked: Cell<u32>,
}

impl Holding<'_> {
    fn new(store: &Slow, on: usize, span: u32) -> Holding<'_> {
        Holding {
            store,
            on,
            span,
            sent: Cell::new(0),
            writing: Cell::new(false),
            asked: Cell::new(0),
        }
    }

    fn hold(&self) -> bool {
        if self.writing.get() {
            self.asked.set(self.asked.get() + 1);
            if self.asked.get() > self.span {
                self.writing.set(false);
                self.store.log.borrow_mut().push("hold off".into());
            }
        }
        self.writing.get()
    }
}

impl Transport for Holding<'_> {
    async fn publish(&self, _relay: &str, _event: &EventEnvelope) -> PublishReport {
        let n = self.sent.get() + 1;
        self.sent.set(n);
        if n == self.on {
            self.writing.set(true);
            self.store.log.borrow_mut().push("hold on".into());
        }
        Yield(3).await;
        PublishReport::new(Outcome::Accepted, "")
    }
}

async fn run_holding(t: &Holding<'_>) -> FlushSummary {
    // One ms per look at the clock, so a hold that never ends reaches its bound.
    let ticks = Cell::new(0u64);
    let clock = || {
        ticks.set(ticks.get() + 1);
        ticks.get()
    };
    let sleep = |_ms: u64| -> LocalBoxFuture<'static, ()> { Box::pin(Yield(1)) };
    let hold = || t.hold();
    let bounds = RunBounds {
        max_ticks: 100,
        keep_going: &|| true,
        take_over: false,
        sleep: Some(&sleep),
        hurry: None,
        hold: Some(&hold),
        nudge: None,
        prepare: 0,
    };
    let cfg = config(8, 4);
    run(
        t.store,
        t,
        &cfg,
        &clock,
        &mut counter(),
        &mut |_| {},
        &bounds,
    )
    .await
    .unwrap()
}

/// While the caller says a `high` record is being written (`RunBounds::hold`), the run
/// starts no claim and no group recording (its publishes go on, and it looks again
/// when nothing else runs); everything is recorded once the hold ends.
#[test]
fn no_bulk_transaction_starts_while_a_high_record_is_written() {
    block_on(async {
        let store = Slow::new(2, None);
        fill(&store.inner, 120, 1).await;
        let t = Holding::new(&store, 30, 40);
        let summary = run_holding(&t).await;
        assert_eq!(summary.stats.satisfied, 120, "{summary:?}");
        let log = store.log.borrow();
        let on = log.iter().position(|l| l == "hold on").expect("held");
        let off = log.iter().position(|l| l == "hold off").expect("released");
        assert_eq!(off, on + 1, "nothing started while held: {log:?}");
        assert!(log[off..].iter().any(|l| l.starts_with("claim")), "{log:?}");
    });
}

/// A hold that never ends lasts at most its bound (200 ms here): the run still
/// claims, records and finishes everything.
#[test]
fn a_hold_that_never_ends_is_bounded() {
    block_on(async {
        let store = Slow::new(2, None);
        fill(&store.inner, 400, 1).await;
        let t = Holding::new(&store, 10, u32::MAX);
        let summary = run_holding(&t).await;
        assert_eq!(summary.stats.satisfied, 400, "{summary:?}");
        let log = store.log.borrow();
        let on = log.iter().position(|l| l == "hold on").expect("held");
        assert!(log[on..].iter().any(|l| l.starts_with("record")), "{log:?}");
    });
}
