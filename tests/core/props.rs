//! Property tests: random operation sequences against the memory store, checked
//! against a simple model and the outbox invariants after every step.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::{BTreeMap, BTreeSet};

use futures::executor::block_on;
use nostr_outbox::core::{
    ClaimRequest, Completion, EnqueueOutcome, Outcome, Plan, Policy, Record, RejectReason,
    RetryConfig, Satisfaction, Stage, StopReason, TargetResult, SIGNER,
};
use nostr_outbox::store::conformance::{fixture_plan, RELAYS};
use nostr_outbox::store::{MemoryStore, Store};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Enqueue {
        item: u8,
        variant: u8,
    },
    EnqueueMany {
        items: Vec<(u8, u8)>,
    },
    Claim {
        owner: u8,
        limit: u32,
        lease_ms: u64,
    },
    /// The Web Lock holder `owner` takes over other owners' live leases.
    TakeOver {
        owner: u8,
        limit: u32,
        lease_ms: u64,
    },
    Complete {
        lease: usize,
        answers: Vec<u8>,
        jitter: u32,
    },
    Release {
        lease: usize,
    },
    Retry {
        item: u8,
    },
    Cancel {
        item: u8,
    },
    Advance {
        ms: u64,
    },
    Purge {
        age: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..5, 0u8..4).prop_map(|(item, variant)| Op::Enqueue { item, variant }),
        1 => prop::collection::vec((0u8..5, 0u8..4), 0..4).prop_map(|items| Op::EnqueueMany { items }),
        4 => (0u8..2, 1u32..4, prop_oneof![Just(500u64), Just(5_000u64)])
            .prop_map(|(owner, limit, lease_ms)| Op::Claim { owner, limit, lease_ms }),
        2 => (0u8..2, 1u32..4, prop_oneof![Just(500u64), Just(5_000u64)])
            .prop_map(|(owner, limit, lease_ms)| Op::TakeOver { owner, limit, lease_ms }),
        5 => (any::<usize>(), prop::collection::vec(0u8..10, 3), any::<u32>())
            .prop_map(|(lease, answers, jitter)| Op::Complete { lease, answers, jitter }),
        1 => any::<usize>().prop_map(|lease| Op::Release { lease }),
        1 => (0u8..5).prop_map(|item| Op::Retry { item }),
        1 => (0u8..5).prop_map(|item| Op::Cancel { item }),
        3 => prop_oneof![Just(0u64), 1u64..700, 700u64..20_000].prop_map(|ms| Op::Advance { ms }),
        1 => (0u64..30_000).prop_map(|age| Op::Purge { age }),
    ]
}

fn item_id(item: u8) -> String {
    format!("item-{item}")
}

/// Variant 0 and 1 of an item are the same plan (replay); 2 and 3 differ (conflict).
fn plan(item: u8, variant: u8) -> Plan {
    let policies = [
        Policy::All,
        Policy::Any,
        Policy::AtLeast { k: 2 },
        Policy::Required {
            relays: vec![RELAYS[1].to_string()],
        },
    ];
    let base = match variant {
        0 | 1 => policies[item as usize % 4].clone(),
        v => policies[(item as usize + v as usize) % 4].clone(),
    };
    let mut p = fixture_plan(u32::from(item) + 1, &RELAYS, base)
        .with_id(item_id(item))
        .with_max_attempts(u32::from(item % 3) + 2)
        .with_stop_when_satisfied(item == 3);
    if item == 4 {
        p = p.with_deadline_ms(Some(40_000));
    }
    if variant == 1 {
        // Same plan, targets in another order.
        p.targets.reverse();
    }
    p
}

fn outcome(code: u8) -> Option<Outcome> {
    Some(match code {
        0 => Outcome::Accepted,
        1 => Outcome::Duplicate,
        2 => Outcome::Rejected(RejectReason::Blocked),
        3 => Outcome::RateLimited,
        4 => Outcome::AuthRequired,
        5 => Outcome::Error,
        6 => Outcome::Timeout,
        7 => Outcome::Unreachable,
        8 => Outcome::NotAttempted,
        _ => return None,
    })
}

fn retry_cfg() -> RetryConfig {
    RetryConfig {
        base_delay_ms: 300,
        max_delay_ms: 4_000,
        jitter_permille: 500,
        rate_limit_min_ms: 2_000,
    }
}

/// An independent evaluation of the policy over the evidence.
fn model_satisfaction(r: &Record) -> Satisfaction {
    #[derive(PartialEq)]
    enum S {
        Open,
        Yes,
        No,
    }
    let state = |t: &str| match r.evidence.iter().rev().find(|e| e.target == t) {
        Some(e) if matches!(e.outcome, Outcome::Accepted | Outcome::Duplicate) => S::Yes,
        Some(e)
            if matches!(e.outcome, Outcome::Rejected(_)) && e.attempt > r.rearmed_after_attempt =>
        {
            S::No
        }
        _ => S::Open,
    };
    let (need, pool): (usize, Vec<&String>) = match &r.policy {
        Policy::All => (r.targets.len(), r.targets.iter().collect()),
        Policy::Any => (1, r.targets.iter().collect()),
        Policy::AtLeast { k } => (*k as usize, r.targets.iter().collect()),
        Policy::Required { relays } => (relays.len(), relays.iter().collect()),
    };
    let yes = pool.iter().filter(|t| state(t) == S::Yes).count();
    let open = pool.iter().filter(|t| state(t) == S::Open).count();
    if yes >= need {
        Satisfaction::Satisfied
    } else if yes + open < need {
        Satisfaction::Exhausted
    } else {
        Satisfaction::Pending
    }
}

/// Invariants of one record on its own.
fn check_record(r: &Record) -> Result<(), TestCaseError> {
    // Attempts consecutive, evidence grouped by attempt.
    let mut last = 0u32;
    for e in &r.evidence {
        prop_assert!(
            e.attempt == last || e.attempt == last + 1,
            "attempts out of order: {r:?}"
        );
        last = e.attempt;
    }
    // The last attempt number is uncounted when none of its tries reached a relay.
    let last_unreached = last > 0
        && r.evidence
            .iter()
            .filter(|e| e.attempt == last)
            .all(|e| matches!(e.outcome, Outcome::Unreachable | Outcome::NotAttempted));
    if r.attempts + 1 == last {
        prop_assert!(last_unreached, "uncounted attempt reached a relay: {r:?}");
    } else {
        prop_assert_eq!(r.attempts, last, "attempts counter");
    }
    // Repeated tries only for unreached entries; one entry per target and attempt.
    for (i, e) in r.evidence.iter().enumerate() {
        prop_assert!(e.tries >= 1);
        prop_assert_eq!(e.tries > 1, e.first_at_ms.is_some());
        if e.tries > 1 {
            prop_assert!(matches!(
                e.outcome,
                Outcome::Unreachable | Outcome::NotAttempted
            ));
        }
        let dup = r.evidence[..i]
            .iter()
            .any(|p| p.target == e.target && p.attempt == e.attempt);
        if dup {
            // Only a reached try after unreached tries of the same attempt number.
            prop_assert!(
                r.evidence[..i]
                    .iter()
                    .filter(|p| p.target == e.target && p.attempt == e.attempt)
                    .all(|p| matches!(p.outcome, Outcome::Unreachable | Outcome::NotAttempted)),
                "{r:?}"
            );
        }
    }
    // Satisfaction agrees with the policy.
    prop_assert_eq!(
        r.satisfaction,
        model_satisfaction(r),
        "satisfaction of {:?}",
        r.id
    );
    // A settled target is never attempted again.
    for t in &r.targets {
        let mut settled: Option<(bool, u32)> = None;
        for e in r.evidence.iter().filter(|e| &e.target == t) {
            if let Some((accepted, at)) = settled {
                prop_assert!(
                    !accepted,
                    "accepted target {t} attempted again in {:?}",
                    r.id
                );
                prop_assert!(
                    r.rearmed_after_attempt >= at,
                    "rejected target {t} retried without re-arm"
                );
            }
            if e.outcome.is_settled() {
                settled = Some((e.outcome.is_accepted(), e.attempt));
            }
        }
    }
    // Stage, lease, due time and reason agree.
    let relay_evidence = r.evidence.iter().filter(|e| e.target != SIGNER).count();
    match r.stage {
        Stage::Draft => {
            prop_assert!(
                r.is_draft() && r.lease.is_none() && r.due_ms.is_some(),
                "{r:?}"
            );
            prop_assert_eq!(r.satisfaction, Satisfaction::Pending);
            prop_assert_eq!(relay_evidence, 0);
            prop_assert_eq!(r.attempts, 0);
        }
        Stage::Pending | Stage::Retryable => {
            prop_assert!(r.lease.is_none() && r.due_ms.is_some(), "{r:?}");
            prop_assert!(!r.is_draft(), "{r:?}");
            prop_assert_eq!(r.satisfaction, Satisfaction::Pending);
            prop_assert_eq!(r.stage == Stage::Pending, relay_evidence == 0);
        }
        Stage::Delivering => {
            // The verdict is in, some target can still accept, and the record did not
            // ask to stop at the verdict.
            prop_assert!(r.lease.is_none() && r.due_ms.is_some(), "{r:?}");
            prop_assert_ne!(r.satisfaction, Satisfaction::Pending);
            prop_assert!(r.has_open_targets(), "delivering with nothing open: {r:?}");
            prop_assert!(!r.stop_when_satisfied, "{r:?}");
        }
        Stage::Leased => {
            let l = r.lease.as_ref().expect("leased without lease");
            prop_assert_eq!(r.due_ms, Some(l.expires_ms));
            prop_assert_eq!(l.attempt, r.attempts + 1);
        }
        Stage::Satisfied => {
            prop_assert!(r.lease.is_none() && r.due_ms.is_none());
            prop_assert_eq!(r.satisfaction, Satisfaction::Satisfied);
        }
        Stage::Exhausted => {
            prop_assert!(r.lease.is_none() && r.due_ms.is_none());
            prop_assert!(r.reason.is_some());
            prop_assert_eq!(
                r.reason == Some(StopReason::Rejected),
                r.satisfaction == Satisfaction::Exhausted
            );
        }
        Stage::Cancelled => {
            prop_assert!(r.lease.is_none() && r.due_ms.is_none());
            prop_assert_eq!(r.reason, Some(StopReason::Cancelled));
        }
        Stage::Superseded => {
            prop_assert!(r.lease.is_none() && r.due_ms.is_none());
            prop_assert!(r.reason.is_some_and(StopReason::supersedes));
            prop_assert!(r.superseded_by.is_some());
        }
    }
    Ok(())
}

/// A claim or takeover ended `prev` because its deadline passed: `exhausted` as
/// `expired` before a verdict; after one, the terminal stage the verdict gives.
fn expired_at_claim(prev: &Record, r: &Record) -> bool {
    match prev.satisfaction {
        Satisfaction::Pending => r.reason == Some(StopReason::Expired),
        Satisfaction::Satisfied => r.stage == Stage::Satisfied && r.reason.is_none(),
        Satisfaction::Exhausted => {
            r.stage == Stage::Exhausted && r.reason == Some(StopReason::Rejected)
        }
    }
}

fn snapshot(store: &MemoryStore) -> BTreeMap<String, Record> {
    store
        .snapshot()
        .into_iter()
        .map(|r| (r.id.clone(), r))
        .collect()
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    block_on(async {
        let store = MemoryStore::in_memory();
        let mut now = 1_000u64;
        // id -> the digest and event it was created with (minus purged ids).
        let mut model: BTreeMap<String, Record> = BTreeMap::new();
        // (id, lease id, revision) of every claim ever handed out.
        let mut leases: Vec<(String, String, u64)> = Vec::new();
        let mut next_lease = 0u32;
        for op in ops {
            let before = snapshot(&store);
            let mut retried: Option<String> = None;
            let mut created: BTreeSet<String> = BTreeSet::new();
            let mut purged_allowed = false;
            let mut ok = true;
            match &op {
                Op::Enqueue { item, variant } => {
                    match store.enqueue(plan(*item, *variant), now).await {
                        Ok(e) => {
                            let id = item_id(*item);
                            match e.outcome {
                                EnqueueOutcome::Created => {
                                    prop_assert!(!model.contains_key(&id), "created twice: {id}");
                                    created.insert(id);
                                }
                                EnqueueOutcome::Replay => {
                                    prop_assert_eq!(Some(&e.record), before.get(&id), "replay");
                                }
                                EnqueueOutcome::Superseded => {
                                    prop_assert!(false, "fixture events have no slot: {id}");
                                }
                            }
                        }
                        Err(e) => {
                            prop_assert_eq!(e.code(), "plan_conflict");
                            ok = false;
                        }
                    }
                }
                Op::EnqueueMany { items } => {
                    let plans = items.iter().map(|(i, v)| plan(*i, *v)).collect();
                    match store.enqueue_many(plans, now).await {
                        Ok(out) => {
                            prop_assert_eq!(out.len(), items.len());
                            for e in out {
                                if e.outcome == EnqueueOutcome::Created {
                                    prop_assert!(
                                        created.insert(e.record.id.clone()),
                                        "created twice in a batch"
                                    );
                                    prop_assert!(!model.contains_key(&e.record.id));
                                }
                            }
                        }
                        Err(e) => {
                            prop_assert_eq!(e.code(), "plan_conflict");
                            ok = false;
                        }
                    }
                }
                Op::Claim {
                    owner,
                    limit,
                    lease_ms,
                } => {
                    next_lease += 1;
                    let lease_id = format!("lease-{next_lease}");
                    let req = ClaimRequest {
                        owner: format!("owner-{owner}"),
                        lease_id: lease_id.clone(),
                        limit: *limit,
                        lease_ms: *lease_ms,
                        ..Default::default()
                    };
                    let got = store.claim(&req, now).await.expect("claim");
                    prop_assert!(got.len() <= *limit as usize);
                    let ids: BTreeSet<&String> = got.iter().map(|r| &r.id).collect();
                    prop_assert_eq!(ids.len(), got.len(), "claimed twice in one batch");
                    for r in &got {
                        let prev = &before[&r.id];
                        prop_assert!(prev.is_ready(now), "claimed an unready record");
                        prop_assert!(!prev.has_active_lease(now), "two active leases");
                        if r.stage == Stage::Leased {
                            leases.push((r.id.clone(), lease_id.clone(), r.revision));
                        } else {
                            prop_assert!(expired_at_claim(prev, r), "{prev:?} -> {r:?}");
                        }
                    }
                    // Claim order: nothing ready was skipped for a later one.
                    let mut ready: Vec<&Record> =
                        before.values().filter(|r| r.is_ready(now)).collect();
                    ready.sort_by_key(|r| r.claim_key());
                    let expected: Vec<&String> =
                        ready.iter().take(*limit as usize).map(|r| &r.id).collect();
                    let actual: Vec<&String> = got.iter().map(|r| &r.id).collect();
                    prop_assert_eq!(actual, expected, "claim order");
                }
                Op::TakeOver {
                    owner,
                    limit,
                    lease_ms,
                } => {
                    next_lease += 1;
                    let lease_id = format!("lease-{next_lease}");
                    let owner = format!("owner-{owner}");
                    let req = ClaimRequest {
                        owner: owner.clone(),
                        lease_id: lease_id.clone(),
                        limit: *limit,
                        lease_ms: *lease_ms,
                        ..Default::default()
                    };
                    let got = store.take_over(&req, now).await.expect("take_over");
                    // Exactly the live leases of other owners, in claim order, up to
                    // the limit: never the taker's own, never an expired one.
                    let mut orphans: Vec<&Record> = before
                        .values()
                        .filter(|r| {
                            r.stage == Stage::Leased
                                && r.lease
                                    .as_ref()
                                    .is_some_and(|l| l.is_active(now) && l.owner != owner)
                        })
                        .collect();
                    orphans.sort_by_key(|r| r.claim_key());
                    let expected: Vec<&String> = orphans
                        .iter()
                        .take(*limit as usize)
                        .map(|r| &r.id)
                        .collect();
                    let actual: Vec<&String> = got.iter().map(|r| &r.id).collect();
                    prop_assert_eq!(actual, expected, "takeover set and order");
                    for r in &got {
                        let prev = &before[&r.id];
                        let dead = prev.lease.as_ref().expect("an orphan has a lease");
                        prop_assert_eq!(r.attempts, prev.attempts, "nothing counted");
                        if r.stage == Stage::Leased {
                            let lease = r.lease.as_ref().expect("lease");
                            prop_assert_eq!(&lease.owner, &owner);
                            prop_assert_eq!(&lease.id, &lease_id);
                            prop_assert_eq!(lease.attempt, dead.attempt, "the same attempt");
                            prop_assert_eq!(r.takeovers, prev.takeovers + 1, "counted");
                            leases.push((r.id.clone(), lease_id.clone(), r.revision));
                        } else {
                            prop_assert!(expired_at_claim(prev, r), "{prev:?} -> {r:?}");
                        }
                    }
                }
                Op::Complete {
                    lease,
                    answers,
                    jitter,
                } => {
                    if leases.is_empty() {
                        continue;
                    }
                    let (id, lease_id, revision) = leases[lease % leases.len()].clone();
                    let Some(current) = before.get(&id) else {
                        continue;
                    };
                    let results = current
                        .unsettled_targets()
                        .into_iter()
                        .zip(answers)
                        .filter_map(|(t, a)| {
                            outcome(*a).map(|o| TargetResult {
                                target: t,
                                outcome: o,
                                message: String::new(),
                            })
                        })
                        .collect();
                    let c = Completion {
                        id: id.clone(),
                        lease_id,
                        revision,
                        results,
                        jitter: *jitter,
                    };
                    match store.complete_attempt(&c, &retry_cfg(), now).await {
                        Ok(r) => {
                            let unreached = !current.unsettled_targets().is_empty()
                                && r.evidence
                                    .iter()
                                    .filter(|e| e.attempt == current.attempts + 1 && e.at_ms == now)
                                    .all(|e| {
                                        matches!(
                                            e.outcome,
                                            Outcome::Unreachable | Outcome::NotAttempted
                                        )
                                    });
                            if unreached {
                                prop_assert_eq!(
                                    r.attempts,
                                    current.attempts,
                                    "unreached attempts are not counted"
                                );
                                prop_assert!(
                                    r.evidence.len()
                                        <= current.evidence.len()
                                            + current.unsettled_targets().len()
                                );
                            } else {
                                prop_assert_eq!(
                                    r.attempts,
                                    current.attempts + 1,
                                    "attempt numbering"
                                );
                            }
                            // No target that can still accept is dropped while budget
                            // and time remain: delivery ends with open targets only when
                            // the record asked to stop at its verdict, its attempt budget
                            // is spent, or its deadline ends it.
                            if r.is_terminal() && r.has_open_targets() {
                                prop_assert!(
                                    r.stop_when_satisfied
                                        || r.attempts >= r.attempt_limit
                                        || r.effective_deadline_ms().is_some(),
                                    "open targets dropped: {r:?}"
                                );
                            }
                            // Delivery stops at the verdict exactly when asked to.
                            if r.satisfaction != Satisfaction::Pending && r.stop_when_satisfied {
                                prop_assert!(r.is_terminal(), "{r:?}");
                            }
                            if matches!(r.stage, Stage::Retryable | Stage::Delivering) {
                                prop_assert!(r.due_ms.unwrap() > now);
                                let rate_limited = !unreached
                                    && r.evidence.iter().any(|e| {
                                        e.attempt == r.attempts && e.outcome == Outcome::RateLimited
                                    });
                                if rate_limited {
                                    prop_assert!(
                                        r.due_ms.unwrap() >= now + 2_000,
                                        "rate limit ignored"
                                    );
                                }
                            }
                        }
                        Err(e) => {
                            prop_assert!(e.is_lost_claim(), "unexpected {e:?}");
                            ok = false;
                        }
                    }
                }
                Op::Release { lease } => {
                    if leases.is_empty() {
                        continue;
                    }
                    let (id, lease_id, revision) = leases[lease % leases.len()].clone();
                    if !before.contains_key(&id) {
                        continue;
                    }
                    if let Err(e) = store.release(&id, &lease_id, revision, now).await {
                        prop_assert!(e.is_lost_claim(), "unexpected {e:?}");
                        ok = false;
                    }
                }
                Op::Retry { item } => match store.retry(&item_id(*item), now).await {
                    Ok(r) => {
                        prop_assert_eq!(before[&r.id].stage, Stage::Exhausted);
                        retried = Some(r.id);
                    }
                    Err(e) => {
                        prop_assert!(matches!(e.code(), "not_retryable" | "not_found"), "{e:?}");
                        ok = false;
                    }
                },
                Op::Cancel { item } => match store.cancel(&item_id(*item), now).await {
                    Ok(r) => prop_assert!(!before[&r.id].is_terminal()),
                    Err(e) => {
                        prop_assert!(
                            matches!(e.code(), "already_terminal" | "not_found"),
                            "{e:?}"
                        );
                        ok = false;
                    }
                },
                Op::Advance { ms } => {
                    now += ms;
                    continue;
                }
                Op::Purge { age } => {
                    let cutoff = now.saturating_sub(*age);
                    let n = store.purge(cutoff).await.expect("purge");
                    let expected = before
                        .values()
                        .filter(|r| r.is_terminal() && r.updated_ms < cutoff)
                        .count();
                    prop_assert_eq!(n as usize, expected);
                    purged_allowed = true;
                }
            }
            let after = snapshot(&store);
            if !ok {
                prop_assert_eq!(&after, &before, "a failed operation changed the store");
            }
            // Nothing lost, nothing duplicated.
            for id in &created {
                model.insert(id.clone(), after[id].clone());
            }
            for (id, r) in &before {
                match after.get(id) {
                    Some(_) => {}
                    None => {
                        prop_assert!(purged_allowed && r.is_terminal(), "record {id} lost");
                        model.remove(id);
                    }
                }
            }
            let ids: BTreeSet<&String> = after.keys().collect();
            let expected: BTreeSet<&String> = model.keys().collect();
            prop_assert_eq!(ids, expected, "record set");
            let counts = store.status().await.expect("status");
            prop_assert_eq!(counts.total() as usize, model.len());
            for (id, r) in &after {
                let first = &model[id];
                prop_assert_eq!(&r.event, &first.event, "event kept exactly");
                prop_assert_eq!(&r.plan_digest, &first.plan_digest, "plan kept");
                check_record(r)?;
                // Every state the machine reaches is one an import takes back: as it is,
                // or unleased when leased (`core::import`).
                match nostr_outbox::core::import::plan_for(r.clone(), now) {
                    Ok(plan) => {
                        let arrived = plan.imported.as_deref().cloned();
                        if r.lease.is_some() {
                            prop_assert_eq!(arrived.as_ref().map(|a| a.due_ms), Some(Some(now)));
                            prop_assert!(arrived
                                .as_ref()
                                .is_some_and(|a| a.stage != Stage::Leased));
                        } else {
                            prop_assert_eq!(arrived.as_ref(), Some(r), "imported as it is");
                        }
                    }
                    Err(e) => prop_assert!(
                        false,
                        "record {id} ({:?}) is refused by import: {e}",
                        r.stage
                    ),
                }
                let Some(prev) = before.get(id) else { continue };
                if r != prev {
                    prop_assert!(r.revision > prev.revision, "revision must grow on {id}");
                    // Append-only, but for an unreached entry repeated in place.
                    prop_assert!(r.evidence.len() >= prev.evidence.len());
                    for (a, b) in prev.evidence.iter().zip(&r.evidence) {
                        let repeated = a.tries < b.tries
                            && a.target == b.target
                            && a.attempt == b.attempt
                            && b.first_at_ms == Some(a.first_at_ms.unwrap_or(a.at_ms))
                            && matches!(b.outcome, Outcome::Unreachable | Outcome::NotAttempted);
                        prop_assert!(a == b || repeated, "evidence is append-only on {id}");
                    }
                    prop_assert!(
                        !prev.is_terminal() || retried.as_deref() == Some(id.as_str()),
                        "terminal record {id} changed without retry"
                    );
                } else {
                    prop_assert_eq!(r.revision, prev.revision);
                }
            }
            let next_due = store.next_due(0).await.expect("next_due");
            prop_assert_eq!(next_due, after.values().filter_map(|r| r.due_ms).min());
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(256))]

    #[test]
    fn random_operation_sequences_keep_the_invariants(ops in prop::collection::vec(op(), 1..80)) {
        run(ops)?;
    }
}

/// Records in every stage, reached through the machine, as JSON objects.
fn reachable_records() -> Vec<serde_json::Value> {
    block_on(async {
        let store = MemoryStore::in_memory();
        let retry = retry_cfg();
        for item in 0..6u8 {
            store
                .enqueue(plan(item, item % 4), 1_000)
                .await
                .expect("enqueue");
        }
        store.cancel(&item_id(5), 1_001).await.expect("cancel");
        let claim = |lease: &str, limit| ClaimRequest {
            owner: "o".into(),
            lease_id: lease.into(),
            limit,
            lease_ms: 10_000,
            ..Default::default()
        };
        let leased = store.claim(&claim("l1", 4), 2_000).await.expect("claim");
        // 0 and 1 answered (accepted / timeout / refused), 2 and 3 stay leased.
        for (r, outcome) in leased
            .iter()
            .take(2)
            .zip([Outcome::Accepted, Outcome::Timeout])
        {
            let c = Completion {
                id: r.id.clone(),
                lease_id: "l1".into(),
                revision: r.revision,
                results: r
                    .targets
                    .iter()
                    .enumerate()
                    .map(|(i, t)| TargetResult {
                        target: t.clone(),
                        outcome: if i == 1 {
                            Outcome::Rejected(RejectReason::Blocked)
                        } else {
                            outcome
                        },
                        message: "m".into(),
                    })
                    .collect(),
                jitter: 0,
            };
            store
                .complete_attempt(&c, &retry, 2_001)
                .await
                .expect("complete");
        }
        store
            .snapshot()
            .iter()
            .map(|r| serde_json::to_value(r).expect("record json"))
            .collect()
    })
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![Just(0u64), Just(1), Just(u64::MAX), Just(1 << 53)].prop_map(|n| json!(n)),
        "[a-z:/.]{0,12}".prop_map(Value::String),
        prop::sample::select(
            Stage::ALL
                .iter()
                .map(|s| s.as_str())
                .chain(["wss://a.example", "rejected"])
                .collect::<Vec<_>>()
        )
        .prop_map(|s| json!(s)),
        Just(json!([])),
        Just(json!({})),
    ]
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(2_000))]

    /// Hostile imports: a reachable record with some of its fields (or its evidence's)
    /// replaced by arbitrary JSON is either refused by `core::import::plan_for` or taken
    /// as a record that keeps every invariant of the machine; nothing panics.
    #[test]
    fn an_import_admits_only_records_that_hold_together(
        pick in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<bool>(), json_value()), 1..4),
    ) {
        let records = reachable_records();
        let mut value = pick.get(&records).clone();
        for (field, in_evidence, new) in edits {
            let target = match value.get_mut("evidence").and_then(|e| e.as_array_mut()) {
                Some(evidence) if in_evidence && !evidence.is_empty() => {
                    let n = evidence.len();
                    &mut evidence[field.index(n)]
                }
                _ => &mut value,
            };
            let Some(object) = target.as_object_mut() else { continue };
            let keys: Vec<String> = object.keys().cloned().collect();
            let key = field.get(&keys).clone();
            object.insert(key, new);
        }
        let Ok(record) = serde_json::from_value::<Record>(value) else { return Ok(()) };
        if let Ok(plan) = nostr_outbox::core::import::plan_for(record, 5_000) {
            let imported = plan.imported.expect("an import's plan carries its record");
            check_record(&imported)?;
        }
    }
}
