//! Property test of the flusher end to end: random relay behaviour, flushed until
//! every record is terminal, checked against the publish log.
#![cfg(not(target_arch = "wasm32"))]

use std::cell::Cell;

use futures::executor::block_on;
use nostr_outbox::core::{Outcome, Policy, RejectReason, RetryConfig, Stage};
use nostr_outbox::flush::{flush_until_idle, FlushConfig, TickStats};
use nostr_outbox::store::conformance::{fixture_plan, RELAYS};
use nostr_outbox::store::{MemoryStore, Store};
use nostr_outbox::transport::ScriptedTransport;
use proptest::prelude::*;

fn outcome(code: u8) -> Outcome {
    match code {
        0 => Outcome::Accepted,
        1 => Outcome::Duplicate,
        2 => Outcome::Rejected(RejectReason::Restricted),
        3 => Outcome::RateLimited,
        4 => Outcome::AuthRequired,
        5 => Outcome::Error,
        6 => Outcome::Timeout,
        _ => Outcome::Unreachable,
    }
}

fn policy(code: u8) -> Policy {
    match code % 4 {
        0 => Policy::All,
        1 => Policy::Any,
        2 => Policy::AtLeast { k: 2 },
        _ => Policy::Required {
            relays: vec![RELAYS[0].to_string()],
        },
    }
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(128))]

    #[test]
    fn flushing_random_relays_ends_terminal_without_resending_settled_targets(
        scripts in prop::collection::vec(prop::collection::vec(0u8..8, 0..12), 3),
        policies in prop::collection::vec(any::<u8>(), 1..6),
        batch in 1u32..4,
        concurrency in 1u32..5,
    ) {
        block_on(async {
            let store = MemoryStore::in_memory();
            let t = ScriptedTransport::new();
            for (relay, script) in RELAYS.iter().zip(&scripts) {
                t.script(relay, script.iter().map(|c| outcome(*c)));
                t.always(relay, Outcome::Timeout, "");
            }
            let mut ids = Vec::new();
            for (n, p) in policies.iter().enumerate() {
                let plan = fixture_plan(n as u32 + 1, &RELAYS, policy(*p)).with_max_attempts(4);
                ids.push(store.enqueue(plan, 0).await.unwrap().record.id);
            }
            let cfg = FlushConfig {
                owner: "prop".into(),
                batch_size: batch,
                lease_ms: 1_000,
                concurrency,
                low_concurrency: nostr_outbox::flush::LOW_WINDOW,
                retry: RetryConfig {
                    base_delay_ms: 10,
                    max_delay_ms: 100,
                    jitter_permille: 300,
                    rate_limit_min_ms: 50,
                },
                group_wait_ms: nostr_outbox::flush::GROUP_WAIT_MS,
                lanes: Vec::new(),
                relays: Vec::new(),
                lapsed_only: false,
                newer_kinds: nostr_outbox::flush::NEWER_CHECK_KINDS.to_vec(),
            };
            let now = Cell::new(0u64);
            let mut seed = 1u32;
            let mut random = || {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                seed
            };
            let mut total = TickStats::default();
            for _ in 0..100 {
                let s = flush_until_idle(&store, &t, &cfg, &|| now.get(), &mut random, &mut |_| {}, 1_000)
                    .await
                    .unwrap();
                total.add(&s.stats);
                match s.next_due_ms {
                    Some(d) => now.set(d.max(now.get())),
                    None => break,
                }
            }
            prop_assert_eq!(total.lost_claims, 0);
            prop_assert_eq!((total.satisfied + total.exhausted) as usize, ids.len());
            for id in &ids {
                let r = store.get(id).await.unwrap().unwrap();
                prop_assert!(r.is_terminal(), "{r:?}");
                prop_assert!(matches!(r.stage, Stage::Satisfied | Stage::Exhausted));
                for relay in RELAYS {
                    let entries: Vec<_> = r.evidence.iter().filter(|e| e.target == relay).collect();
                    // An unreached try repeated under one attempt number shares its entry.
                    let tries: usize = entries.iter().map(|e| e.tries as usize).sum();
                    prop_assert_eq!(t.count(relay, id), tries, "publishes = evidence tries");
                    let settled = entries.iter().position(|e| e.outcome.is_settled());
                    if let Some(i) = settled {
                        prop_assert_eq!(i, entries.len() - 1, "settled target sent again");
                    }
                }
            }
            Ok(())
        })?;
    }
}

/// `n` records for one relay that refuses every connection, flushed as an alarm would:
/// each run at the previous run's `nextDueAt`, the clock moving `step` ms at each look.
/// Returns the runs in the first `window_ms`.
fn runs_while_down(n: u32, cfg: &FlushConfig, step: u64, seed: u32, window_ms: u64) -> u32 {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        t.always(RELAYS[0], Outcome::Unreachable, "connection refused");
        for i in 1..=n {
            store
                .enqueue(fixture_plan(i, &RELAYS[..1], Policy::All), 0)
                .await
                .unwrap();
        }
        let now = Cell::new(0u64);
        let clock = || {
            now.set(now.get() + step);
            now.get()
        };
        let mut x = seed | 1;
        let mut random = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let (mut runs, mut at) = (0, 0u64);
        while at < window_ms {
            now.set(at);
            let s = flush_until_idle(&store, &t, cfg, &clock, &mut random, &mut |_| {}, 100)
                .await
                .unwrap();
            runs += 1;
            at = s.next_due_ms.expect("records wait").max(now.get() + 1);
        }
        runs
    })
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(48))]

    /// Wake-ups grow with the backoff steps, not with the records: however many records
    /// wait for a dead relay, they take at most one run more in 10 s than a single record
    /// does, while a run is shorter than the shortest retry delay (jitter up to half the
    /// delay, delays from 500 ms; records that come due during a run are the next run's).
    #[test]
    fn wake_ups_do_not_grow_with_the_records(
        n in 2u32..48,
        jitter_permille in 0u32..=500,
        base_delay_ms in 500u64..2_000,
        step in 0u64..4,
        seed in any::<u32>(),
    ) {
        let mut cfg = FlushConfig::new("alarm");
        cfg.retry = RetryConfig {
            base_delay_ms,
            max_delay_ms: 300_000,
            jitter_permille,
            rate_limit_min_ms: 30_000,
        };
        let one = runs_while_down(1, &cfg, step, seed, 10_000);
        let many = runs_while_down(n, &cfg, step, seed, 10_000);
        prop_assert!(many <= one + 1, "{n} records: {many} runs, one record: {one}");
    }
}
