//! The flusher over the memory store and the scripted transport.

use std::cell::Cell;

use futures::executor::block_on;
use nostr_outbox::core::{Outcome, Policy, Priority, RejectReason, RetryConfig, Stage, StopReason};
use nostr_outbox::flush::{flush_until_idle, tick, FlushConfig, FlushEvent, TickStats};
use nostr_outbox::store::conformance::{fixture_plan, RELAYS};
use nostr_outbox::store::{MemoryStore, Store};
use nostr_outbox::transport::ScriptedTransport;

use crate::support::{config, counter, flush_all, Paced};

#[derive(Debug, PartialEq)]
enum Seen {
    Started(String, u32, usize),
    Delivered(String),
    Retrying(String, Option<u64>),
    Exhausted(String, Option<StopReason>),
    Settled(String, Stage),
    Lost(String),
    Released(String),
    Woken(String),
    Signed(String),
    Superseded(String),
}

fn record_into(log: &mut Vec<Seen>) -> impl FnMut(FlushEvent<'_>) + '_ {
    move |e| {
        log.push(match e {
            FlushEvent::AttemptStarted {
                record,
                attempt,
                targets,
            } => Seen::Started(record.id.clone(), attempt, targets.len()),
            FlushEvent::Delivered { record } => Seen::Delivered(record.id.clone()),
            FlushEvent::Retrying { record } => Seen::Retrying(record.id.clone(), record.due_ms),
            FlushEvent::Exhausted { record } => Seen::Exhausted(record.id.clone(), record.reason),
            FlushEvent::Settled { record } => Seen::Settled(record.id.clone(), record.stage),
            FlushEvent::LostClaim { id } => Seen::Lost(id.to_string()),
            FlushEvent::Released { record } => Seen::Released(record.id.clone()),
            FlushEvent::Woken { record } => Seen::Woken(record.id.clone()),
            FlushEvent::Signed { record } => Seen::Signed(record.id.clone()),
            FlushEvent::Superseded { record } => Seen::Superseded(record.id.clone()),
        })
    }
}

#[test]
fn tick_delivers_to_every_relay_once() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        for r in RELAYS {
            t.always(r, Outcome::Accepted, "");
        }
        let id = store
            .enqueue(fixture_plan(1, &RELAYS, Policy::All), 0)
            .await
            .unwrap()
            .record
            .id;
        let mut log = Vec::new();
        let stats = tick(
            &store,
            &t,
            &config(16, 4),
            &|| 5,
            &mut counter(),
            &mut record_into(&mut log),
        )
        .await
        .unwrap();
        assert_eq!(
            stats,
            TickStats {
                claimed: 1,
                attempts: 1,
                publishes: 3,
                satisfied: 1,
                ..TickStats::default()
            }
        );
        assert_eq!(
            log,
            vec![Seen::Started(id.clone(), 1, 3), Seen::Delivered(id.clone())]
        );
        for r in RELAYS {
            assert_eq!(t.count(r, &id), 1);
        }
        let rec = store.get(&id).await.unwrap().unwrap();
        assert_eq!(rec.stage, Stage::Satisfied);
        // Nothing left to do.
        let again = tick(
            &store,
            &t,
            &config(16, 4),
            &|| 100_000,
            &mut counter(),
            &mut |_| {},
        )
        .await
        .unwrap();
        assert_eq!(again, TickStats::default());
        assert_eq!(t.sent().len(), 3);
    });
}

#[test]
fn retries_only_unsettled_relays_until_satisfied() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        t.always(RELAYS[0], Outcome::Accepted, "");
        t.script(
            RELAYS[1],
            [Outcome::Timeout, Outcome::Error, Outcome::Accepted],
        );
        t.always(
            RELAYS[2],
            Outcome::Rejected(RejectReason::Blocked),
            "blocked: no",
        );
        let id = store
            .enqueue(fixture_plan(1, &RELAYS, Policy::AtLeast { k: 2 }), 0)
            .await
            .unwrap()
            .record
            .id;
        let now = Cell::new(0u64);
        let clock = || now.get();
        let mut log = Vec::new();
        let s1 = tick(
            &store,
            &t,
            &config(16, 4),
            &clock,
            &mut counter(),
            &mut record_into(&mut log),
        )
        .await
        .unwrap();
        assert_eq!((s1.publishes, s1.retrying), (3, 1));
        now.set(1_000);
        let s2 = tick(
            &store,
            &t,
            &config(16, 4),
            &clock,
            &mut counter(),
            &mut record_into(&mut log),
        )
        .await
        .unwrap();
        assert_eq!((s2.publishes, s2.retrying), (1, 1), "only the open relay");
        now.set(3_000);
        let s3 = tick(
            &store,
            &t,
            &config(16, 4),
            &clock,
            &mut counter(),
            &mut record_into(&mut log),
        )
        .await
        .unwrap();
        assert_eq!((s3.publishes, s3.satisfied), (1, 1));
        assert_eq!(t.count(RELAYS[0], &id), 1, "accepted relay never resent");
        assert_eq!(t.count(RELAYS[2], &id), 1, "rejected relay never retried");
        assert_eq!(t.count(RELAYS[1], &id), 3);
        assert_eq!(
            log,
            vec![
                Seen::Started(id.clone(), 1, 3),
                Seen::Retrying(id.clone(), Some(1_000)),
                Seen::Started(id.clone(), 2, 1),
                Seen::Retrying(id.clone(), Some(3_000)),
                Seen::Started(id.clone(), 3, 1),
                Seen::Delivered(id.clone()),
            ]
        );
        let rec = store.get(&id).await.unwrap().unwrap();
        let attempts: Vec<u32> = rec.evidence.iter().map(|e| e.attempt).collect();
        assert_eq!(attempts, vec![1, 1, 1, 2, 3]);
        assert_eq!(rec.evidence[2].message, "blocked: no");
    });
}

#[test]
fn terminal_rejection_exhausts_and_rate_limit_defers() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        t.always(
            RELAYS[0],
            Outcome::Rejected(RejectReason::Invalid),
            "invalid: bad sig",
        );
        t.always(RELAYS[1], Outcome::RateLimited, "rate-limited: slow down");
        let a = store
            .enqueue(fixture_plan(1, &RELAYS[..1], Policy::All), 0)
            .await
            .unwrap()
            .record
            .id;
        let b = store
            .enqueue(fixture_plan(2, &RELAYS[1..2], Policy::All), 0)
            .await
            .unwrap()
            .record
            .id;
        let mut log = Vec::new();
        let s = tick(
            &store,
            &t,
            &config(16, 4),
            &|| 10,
            &mut counter(),
            &mut record_into(&mut log),
        )
        .await
        .unwrap();
        assert_eq!((s.claimed, s.exhausted, s.retrying), (2, 1, 1));
        assert!(log.contains(&Seen::Exhausted(a.clone(), Some(StopReason::Rejected))));
        assert!(log.contains(&Seen::Retrying(b.clone(), Some(30_010))));
    });
}

#[test]
fn expired_records_are_reported_not_published() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        let plan = fixture_plan(1, &RELAYS, Policy::All).with_deadline_ms(Some(50));
        let id = store.enqueue(plan, 0).await.unwrap().record.id;
        let mut log = Vec::new();
        let s = tick(
            &store,
            &t,
            &config(16, 4),
            &|| 60,
            &mut counter(),
            &mut record_into(&mut log),
        )
        .await
        .unwrap();
        assert_eq!((s.claimed, s.exhausted, s.publishes), (1, 1, 0));
        assert_eq!(log, vec![Seen::Exhausted(id, Some(StopReason::Expired))]);
        assert!(t.sent().is_empty());
    });
}

/// A run attempts what was due when it started. While every relay is down, records
/// come due again during a long run (short backoff, slow ticks); they wait for the
/// next run instead of being attempted again and again until the tick limit.
#[test]
fn a_run_does_not_chase_records_that_come_due_again_during_it() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        t.always(RELAYS[0], Outcome::Unreachable, "down");
        let mut cfg = config(16, 4);
        cfg.batch_size = 2;
        for n in 1..=6 {
            store
                .enqueue(fixture_plan(n, &RELAYS[..1], Policy::All), 0)
                .await
                .unwrap();
        }
        // Every clock reading is 0.6 s later: with the two or more readings of each
        // tick (claim, answers, commit), each tick takes longer than the 1 s backoff.
        let now = std::cell::Cell::new(0u64);
        let clock = || {
            now.set(now.get() + 600);
            now.get()
        };
        let summary = flush_until_idle(&store, &t, &cfg, &clock, &mut counter(), &mut |_| {}, 100)
            .await
            .unwrap();
        assert_eq!(summary.stats.claimed, 6, "each record once: {summary:?}");
        assert_eq!(t.sent().len(), 6);
        assert!(summary.ticks <= 4, "{summary:?}");
    });
}

#[test]
fn flush_until_idle_reports_next_due() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        t.script(RELAYS[0], [Outcome::Unreachable, Outcome::Accepted]);
        let mut cfg = config(16, 4);
        cfg.batch_size = 2;
        for n in 1..=5 {
            store
                .enqueue(fixture_plan(n, &RELAYS[..1], Policy::All), 0)
                .await
                .unwrap();
        }
        t.always(RELAYS[0], Outcome::Accepted, "");
        let summary = flush_all(&store, &t, &cfg).await.unwrap();
        // Record 1 fails once (due at 1000); the others are delivered.
        assert_eq!(summary.stats.claimed, 5);
        assert_eq!(summary.stats.satisfied, 4);
        assert_eq!(summary.stats.retrying, 1);
        assert_eq!(
            summary.ticks, 3,
            "three claiming ticks; nothing due at the start is left, so no idle tick"
        );
        assert_eq!(summary.next_due_ms, Some(1_000));
        let later = flush_until_idle(
            &store,
            &t,
            &cfg,
            &|| 1_000,
            &mut counter(),
            &mut |_| {},
            100,
        )
        .await
        .unwrap();
        assert_eq!(later.stats.satisfied, 1);
        assert_eq!(later.next_due_ms, None);
        assert_eq!(store.status().await.unwrap().satisfied, 5);
    });
}

#[test]
fn config_is_validated() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        let bad = [
            FlushConfig {
                owner: String::new(),
                ..config(16, 4)
            },
            FlushConfig {
                batch_size: 0,
                ..config(16, 4)
            },
            FlushConfig {
                batch_size: 257,
                ..config(16, 4)
            },
            FlushConfig {
                lease_ms: 0,
                ..config(16, 4)
            },
            FlushConfig {
                concurrency: 0,
                ..config(16, 4)
            },
            FlushConfig {
                retry: RetryConfig {
                    base_delay_ms: 0,
                    ..RetryConfig::default()
                },
                ..config(16, 4)
            },
        ];
        for cfg in bad {
            let err = tick(&store, &t, &cfg, &|| 0, &mut counter(), &mut |_| {})
                .await
                .unwrap_err();
            assert_eq!(err.code(), "invalid_config", "{cfg:?}");
        }
        assert!(FlushConfig::new("x").validate().is_ok());
    });
}

#[test]
fn publishes_run_concurrently_within_the_bound() {
    block_on(async {
        let store = MemoryStore::in_memory();
        for n in 1..=4 {
            store
                .enqueue(fixture_plan(n, &RELAYS, Policy::All), 0)
                .await
                .unwrap();
        }
        // Every publish answers after one turn of the executor.
        let gauge = Paced::new("none", 0);
        let s = tick(
            &store,
            &gauge,
            &config(16, 2),
            &|| 0,
            &mut counter(),
            &mut |_| {},
        )
        .await
        .unwrap();
        assert_eq!((s.publishes, s.satisfied), (12, 4));
        assert_eq!(
            gauge.peak_per_relay.get(),
            2,
            "concurrent, and never more than the bound to one relay"
        );
        assert_eq!(
            gauge.peak.get(),
            6,
            "each of the 3 relays has its own window"
        );
    });
}

/// Claims come in priority order: a `high` record enqueued after a backlog of `low`
/// ones is attempted first, in the first batch.
#[test]
fn a_high_priority_record_goes_before_a_low_backlog() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        t.always(RELAYS[0], Outcome::Accepted, "");
        for n in 1..=20u32 {
            let plan = fixture_plan(n, &RELAYS[..1], Policy::All).with_priority(Priority::Low);
            store.enqueue(plan, u64::from(n)).await.unwrap();
        }
        let plan = fixture_plan(99, &RELAYS[..1], Policy::All).with_priority(Priority::High);
        let high = store.enqueue(plan, 50).await.unwrap().record.id;
        let mut log = Vec::new();
        flush_until_idle(
            &store,
            &t,
            &config(4, 1),
            &|| 100,
            &mut counter(),
            &mut record_into(&mut log),
            100,
        )
        .await
        .unwrap();
        let sent = t.sent();
        assert_eq!(sent.len(), 21);
        assert_eq!(
            sent[0].1, high,
            "the high record is published first: {sent:?}"
        );
        assert!(
            matches!(&log[0], Seen::Started(id, 1, 1) if *id == high),
            "{log:?}"
        );
    });
}

/// A flush filtered by relay publishes only to those relays and claims only what waits
/// for them; the other targets get no evidence, and an unfiltered flush then sends
/// them. A flush filtered by lane takes only that lane. Bad filters are typed errors.
#[test]
fn filtered_flushes_touch_only_their_lanes_and_relays() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        for r in RELAYS {
            t.always(r, Outcome::Accepted, "");
        }
        let [a, b, c] = RELAYS;
        let two = store
            .enqueue(fixture_plan(1, &[a, b], Policy::All).with_lane("dm"), 0)
            .await
            .unwrap()
            .record
            .id;
        let only_c = store
            .enqueue(fixture_plan(2, &[c], Policy::All).with_lane("bulk"), 0)
            .await
            .unwrap()
            .record
            .id;
        let mut cfg = config(16, 4);
        cfg.relays = vec![a.to_string()];
        let summary = flush_all(&store, &t, &cfg).await.unwrap();
        assert_eq!((summary.stats.claimed, summary.stats.publishes), (1, 1));
        assert_eq!(t.sent().len(), 1);
        assert_eq!((t.count(a, &two), t.count(b, &two)), (1, 0));
        let r = store.get(&two).await.unwrap().unwrap();
        assert!(r.evidence.iter().all(|e| e.target == a), "{:?}", r.evidence);
        assert_eq!(r.unsettled_targets(), [b.to_string()]);
        // By lane: only `bulk`.
        let mut cfg = config(16, 4);
        cfg.lanes = vec!["bulk".into()];
        flush_all(&store, &t, &cfg).await.unwrap();
        assert_eq!(t.count(c, &only_c), 1);
        assert_eq!(t.count(b, &two), 0, "the dm record is not in the bulk lane");
        // Unfiltered: b, the target the first flush left out.
        flush_all(&store, &t, &config(16, 4)).await.unwrap();
        assert_eq!((t.count(a, &two), t.count(b, &two)), (1, 1));
        let r = store.get(&two).await.unwrap().unwrap();
        assert_eq!(r.stage, Stage::Satisfied);
        // Bad filters.
        let mut cfg = config(16, 4);
        cfg.lanes = vec!["not a lane".into()];
        let err = flush_all(&store, &t, &cfg).await.unwrap_err();
        assert_eq!(err.code(), "invalid_argument");
    });
}

/// The case through the flusher: policy `all`, a accepts, b refuses for good,
/// c is down. The verdict (`exhausted`) is reported once, at the first attempt; c
/// keeps being tried (b never again) and gets the event once it is back; the end of
/// delivery is reported as `Settled`.
#[test]
fn delivery_goes_on_after_the_verdict_and_is_reported_once() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        t.always(RELAYS[0], Outcome::Accepted, "");
        t.always(
            RELAYS[1],
            Outcome::Rejected(RejectReason::Blocked),
            "blocked: no",
        );
        t.script(
            RELAYS[2],
            [
                Outcome::Unreachable,
                Outcome::Unreachable,
                Outcome::Accepted,
            ],
        );
        let id = store
            .enqueue(fixture_plan(1, &RELAYS, Policy::All), 0)
            .await
            .unwrap()
            .record
            .id;
        let mut log = Vec::new();
        let mut now = 0u64;
        for _ in 0..3 {
            tick(
                &store,
                &t,
                &config(16, 4),
                &|| now,
                &mut counter(),
                &mut record_into(&mut log),
            )
            .await
            .unwrap();
            now = store.get(&id).await.unwrap().unwrap().due_ms.unwrap_or(now);
        }
        let rec = store.get(&id).await.unwrap().unwrap();
        assert_eq!(
            (rec.stage, rec.reason),
            (Stage::Exhausted, Some(StopReason::Rejected))
        );
        assert_eq!(
            (t.count(RELAYS[0], &id), t.count(RELAYS[1], &id)),
            (1, 1),
            "settled targets are sent once"
        );
        assert_eq!(t.count(RELAYS[2], &id), 3, "c is tried until it accepts");
        assert_eq!(
            log,
            vec![
                Seen::Started(id.clone(), 1, 3),
                Seen::Exhausted(id.clone(), None),
                Seen::Started(id.clone(), 2, 1),
                Seen::Retrying(id.clone(), log_due(&log, 3)),
                Seen::Started(id.clone(), 2, 1),
                Seen::Settled(id.clone(), Stage::Exhausted),
            ]
        );
        // Asked to stop at the verdict: today's behaviour, c is not tried again.
        let t = ScriptedTransport::new();
        t.always(RELAYS[0], Outcome::Accepted, "");
        t.always(RELAYS[1], Outcome::Rejected(RejectReason::Blocked), "");
        t.always(RELAYS[2], Outcome::Unreachable, "");
        let plan = fixture_plan(2, &RELAYS, Policy::All).with_stop_when_satisfied(true);
        let id = store.enqueue(plan, 0).await.unwrap().record.id;
        let mut log = Vec::new();
        tick(
            &store,
            &t,
            &config(16, 4),
            &|| 0,
            &mut counter(),
            &mut record_into(&mut log),
        )
        .await
        .unwrap();
        assert_eq!(
            log.last(),
            Some(&Seen::Exhausted(id.clone(), Some(StopReason::Rejected)))
        );
        let rec = store.get(&id).await.unwrap().unwrap();
        assert_eq!(rec.stage, Stage::Exhausted);
    });
}

/// The due time a `Retrying` entry at `index` of `log` carries.
fn log_due(log: &[Seen], index: usize) -> Option<u64> {
    match log.get(index) {
        Some(Seen::Retrying(_, due)) => *due,
        _ => None,
    }
}

/// The README's Durable Object pattern with its relay down (issue: 50 records woke the
/// object 140 times in 10 s): every flush is an alarm run at the previous run's
/// `nextDueAt`, the clock moves 1 ms at each look (a run takes time), the retry
/// schedule is the default one (1 s doubling, 20 % jitter, a random draw per call).
/// Records retried together wake together: 4 runs in 10 s (the issue asks at most 10),
/// and every record
/// keeps its own backoff (tried at 0, ~1, ~3 and ~7 s: four tries, none counted as a
/// failed attempt).
#[test]
fn records_waiting_for_a_dead_relay_wake_the_flusher_together() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        t.always(RELAYS[0], Outcome::Unreachable, "connection refused");
        for n in 1..=50 {
            store
                .enqueue(fixture_plan(n, &RELAYS[..1], Policy::All), 0)
                .await
                .unwrap();
        }
        let cfg = FlushConfig::new("durable-object");
        let now = Cell::new(0u64);
        let clock = || {
            now.set(now.get() + 1);
            now.get()
        };
        let mut seed = 0x9e37_79b9_u32;
        let mut random = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        let mut runs = 0;
        let mut at = 0u64;
        while at < 10_000 {
            now.set(at);
            let summary = flush_until_idle(&store, &t, &cfg, &clock, &mut random, &mut |_| {}, 100)
                .await
                .unwrap();
            runs += 1;
            let next = summary.next_due_ms.expect("every record still waits");
            at = next.max(now.get() + 1);
        }
        // One run per backoff step (0, ~1, ~3, ~7 s); 91 before runs shared a jitter
        // and wake-ups were coalesced, 14 with the shared jitter alone.
        assert_eq!(runs, 4, "{runs} alarm runs in 10 s");
        for n in 1..=50 {
            let id = fixture_plan(n, &RELAYS[..1], Policy::All).id;
            let r = store.get(&id).await.unwrap().unwrap();
            assert_eq!(r.attempts, 0, "waiting for a relay is not a failed attempt");
            assert_eq!(r.evidence.len(), 1);
            assert_eq!(r.evidence[0].tries, 4, "record {n}: {:?}", r.evidence);
        }
    });
}
