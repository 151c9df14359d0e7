//! Unit tests of every pure transition and every error of the state machine.

use nostr_outbox::core::{
    self, cancel, claim, complete_attempt, decide_enqueue, release, retry, ClaimRequest, Claimed,
    Completion, CoreError, EnqueueDecision, Outcome, Plan, Policy, Record, RejectReason,
    RetryConfig, Satisfaction, Stage, StopReason, TargetResult,
};
use nostr_outbox::store::conformance::{fixture_event, fixture_plan, RELAYS};
use nostr_outbox::store::StoreError;

fn created(plan: Plan, now: u64) -> Record {
    match decide_enqueue(None, plan, now).unwrap() {
        EnqueueDecision::Create(r) => r,
        other => panic!("expected create, got {other:?}"),
    }
}

fn req(lease: &str) -> ClaimRequest {
    ClaimRequest {
        owner: "secret-owner".into(),
        lease_id: lease.into(),
        limit: 1,
        lease_ms: 1_000,
        ..Default::default()
    }
}

fn leased(r: &Record, lease: &str, now: u64) -> Record {
    match claim(r, &req(lease), now).unwrap() {
        Claimed::Leased(r) => r,
        other => panic!("expected lease, got {other:?}"),
    }
}

fn done(
    r: &Record,
    lease: &str,
    results: &[(&str, Outcome)],
    now: u64,
) -> Result<Record, CoreError> {
    let c = Completion {
        id: r.id.clone(),
        lease_id: lease.into(),
        revision: r.revision,
        results: results
            .iter()
            .map(|(t, o)| TargetResult {
                target: t.to_string(),
                outcome: *o,
                message: String::new(),
            })
            .collect(),
        jitter: 0,
    };
    complete_attempt(r, &c, now, &retry_cfg())
}

fn retry_cfg() -> RetryConfig {
    RetryConfig {
        base_delay_ms: 100,
        max_delay_ms: 1_000,
        jitter_permille: 0,
        rate_limit_min_ms: 5_000,
    }
}

#[test]
fn enqueue_create_replay_conflict() {
    let r = created(fixture_plan(1, &RELAYS, Policy::All), 7);
    assert_eq!(
        (r.stage, r.revision, r.due_ms, r.created_ms),
        (Stage::Pending, 1, Some(7), 7)
    );
    assert_eq!(r.satisfaction, Satisfaction::Pending);
    assert_eq!(r.id, fixture_event(1).id);
    match decide_enqueue(Some(&r), fixture_plan(1, &RELAYS, Policy::All), 99).unwrap() {
        EnqueueDecision::Replay(x) => assert_eq!(x, r),
        other => panic!("{other:?}"),
    }
    let e = decide_enqueue(Some(&r), fixture_plan(1, &RELAYS, Policy::Any), 99).unwrap_err();
    assert_eq!(e.code(), "plan_conflict");
    let e = decide_enqueue(
        None,
        fixture_plan(1, &RELAYS, Policy::All).with_id("-bad id-"),
        0,
    )
    .unwrap_err();
    assert_eq!(e.code(), "invalid_item_id");
}

#[test]
fn claim_leases_and_refuses_unready_records() {
    let r = created(fixture_plan(1, &RELAYS, Policy::All), 10);
    assert_eq!(claim(&r, &req("l"), 9).unwrap_err().code(), "not_ready");
    let l = leased(&r, "l", 10);
    assert_eq!(l.stage, Stage::Leased);
    assert_eq!(l.revision, 2);
    assert_eq!(l.due_ms, Some(1_010));
    assert_eq!(claim(&l, &req("m"), 1_009).unwrap_err().code(), "not_ready");
    let again = leased(&l, "m", 1_010);
    assert_eq!(again.lease.as_ref().unwrap().attempt, 1);
    let c = cancel(&r, 11).unwrap();
    assert_eq!(claim(&c, &req("l"), 100).unwrap_err().code(), "not_ready");
    for bad in [
        ClaimRequest {
            limit: 0,
            ..req("l")
        },
        ClaimRequest {
            limit: 257,
            ..req("l")
        },
        ClaimRequest {
            lease_ms: 0,
            ..req("l")
        },
        ClaimRequest {
            lease_ms: 86_400_001,
            ..req("l")
        },
        ClaimRequest {
            owner: "a\u{0}".into(),
            ..req("l")
        },
        ClaimRequest {
            owner: "x".repeat(129),
            ..req("l")
        },
        ClaimRequest {
            lease_id: String::new(),
            ..req("l")
        },
    ] {
        assert_eq!(
            claim(&r, &bad, 10).unwrap_err().code(),
            "invalid_argument",
            "{bad:?}"
        );
    }
}

#[test]
fn claim_after_deadline_expires_the_record() {
    let r = created(
        fixture_plan(1, &RELAYS, Policy::All).with_deadline_ms(Some(100)),
        0,
    );
    match claim(&r, &req("l"), 100).unwrap() {
        Claimed::Expired(x) => {
            assert_eq!(
                (x.stage, x.reason, x.due_ms),
                (Stage::Exhausted, Some(StopReason::Expired), None)
            );
            assert_eq!(x.revision, 2);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        claim(&r, &req("l"), 99).unwrap(),
        Claimed::Leased(_)
    ));
}

#[test]
fn complete_attempt_errors_change_nothing() {
    let r = created(fixture_plan(1, &RELAYS, Policy::All), 0);
    let l = leased(&r, "l", 0);
    let ok = [(RELAYS[0], Outcome::Accepted)];
    assert_eq!(
        done(&r, "l", &ok, 1).unwrap_err().code(),
        "lease_expired",
        "not leased"
    );
    assert_eq!(
        done(&l, "other", &ok, 1).unwrap_err().code(),
        "lease_expired",
        "wrong lease"
    );
    assert_eq!(
        done(&l, "l", &ok, 1_000).unwrap_err().code(),
        "lease_expired",
        "expired"
    );
    let e = complete_attempt(
        &l,
        &Completion {
            id: l.id.clone(),
            lease_id: "l".into(),
            revision: 1,
            results: vec![],
            jitter: 0,
        },
        1,
        &retry_cfg(),
    )
    .unwrap_err();
    assert_eq!(e.code(), "revision_conflict");
    assert!(e.is_lost_claim());
    assert_eq!(
        done(&l, "l", &[("wss://x", Outcome::Accepted)], 1)
            .unwrap_err()
            .code(),
        "invalid_argument"
    );
    assert_eq!(
        done(
            &l,
            "l",
            &[(RELAYS[0], Outcome::Accepted), (RELAYS[0], Outcome::Error)],
            1
        )
        .unwrap_err()
        .code(),
        "invalid_argument"
    );
    let bad_cfg = RetryConfig {
        max_delay_ms: 1,
        ..retry_cfg()
    };
    let c = Completion {
        id: l.id.clone(),
        lease_id: "l".into(),
        revision: l.revision,
        results: vec![],
        jitter: 0,
    };
    assert_eq!(
        complete_attempt(&l, &c, 1, &bad_cfg).unwrap_err().code(),
        "invalid_config"
    );
    let other = Completion {
        id: "other".into(),
        ..c
    };
    assert_eq!(
        complete_attempt(&l, &other, 1, &retry_cfg())
            .unwrap_err()
            .code(),
        "invalid_argument"
    );
}

#[test]
fn complete_attempt_transitions() {
    let r = created(
        fixture_plan(1, &RELAYS, Policy::All).with_max_attempts(2),
        0,
    );
    let l = leased(&r, "l", 0);
    let x = done(
        &l,
        "l",
        &[
            (RELAYS[0], Outcome::Accepted),
            (RELAYS[1], Outcome::AuthRequired),
        ],
        10,
    )
    .unwrap();
    assert_eq!(
        (x.stage, x.attempts, x.due_ms, x.revision),
        (Stage::Retryable, 1, Some(110), 3)
    );
    assert_eq!(x.evidence.len(), 3);
    assert_eq!(x.evidence[2].outcome, Outcome::NotAttempted);
    assert!(x.last_error.as_deref().unwrap().contains("authRequired"));
    assert_eq!(x.lease, None);
    let l2 = leased(&x, "l2", 110);
    assert_eq!(l2.unsettled_targets(), RELAYS[1..].to_vec());
    let y = done(
        &l2,
        "l2",
        &[
            (RELAYS[1], Outcome::Timeout),
            (RELAYS[2], Outcome::Accepted),
        ],
        120,
    )
    .unwrap();
    assert_eq!(
        (y.stage, y.reason),
        (Stage::Exhausted, Some(StopReason::MaxAttempts))
    );
    assert_eq!(
        y.satisfaction,
        Satisfaction::Pending,
        "the policy itself is still reachable"
    );
    let z = retry(&y, 200).unwrap();
    assert_eq!(
        (z.stage, z.attempt_limit, z.due_ms),
        (Stage::Retryable, 4, Some(200))
    );
    let l3 = leased(&z, "l3", 200);
    assert_eq!(l3.lease.as_ref().unwrap().attempt, 3);
    let w = done(&l3, "l3", &[(RELAYS[1], Outcome::Duplicate)], 210).unwrap();
    assert_eq!(
        (w.stage, w.satisfaction, w.reason, w.due_ms),
        (Stage::Satisfied, Satisfaction::Satisfied, None, None)
    );
    assert_eq!(w.last_error, None);
}

#[test]
fn backoff_grows_and_is_capped() {
    let mut r = created(
        fixture_plan(1, &RELAYS[..1], Policy::All).with_max_attempts(10),
        0,
    );
    let mut now = 0;
    let mut delays = Vec::new();
    for i in 0..6 {
        let l = leased(&r, &format!("l{i}"), now);
        r = done(&l, &format!("l{i}"), &[(RELAYS[0], Outcome::Error)], now).unwrap();
        delays.push(r.due_ms.unwrap() - now);
        now = r.due_ms.unwrap();
    }
    assert_eq!(delays, vec![100, 200, 400, 800, 1_000, 1_000]);
}

#[test]
fn long_messages_are_truncated_on_char_boundaries() {
    let r = created(fixture_plan(1, &RELAYS[..1], Policy::All), 0);
    let l = leased(&r, "l", 0);
    let c = Completion {
        id: l.id.clone(),
        lease_id: "l".into(),
        revision: l.revision,
        results: vec![TargetResult {
            target: RELAYS[0].into(),
            outcome: Outcome::Error,
            message: "é".repeat(1_000),
        }],
        jitter: 0,
    };
    let x = complete_attempt(&l, &c, 1, &retry_cfg()).unwrap();
    assert!(x.evidence[0].message.len() <= core::machine::MAX_MESSAGE_LEN);
    assert!(x.last_error.unwrap().len() <= core::machine::MAX_ERROR_LEN);
}

#[test]
fn release_retry_cancel_errors() {
    let r = created(fixture_plan(1, &RELAYS, Policy::All), 0);
    let l = leased(&r, "l", 0);
    assert_eq!(
        release(&l, "x", l.revision, 1).unwrap_err().code(),
        "lease_expired"
    );
    assert_eq!(
        release(&l, "l", 1, 1).unwrap_err().code(),
        "revision_conflict"
    );
    let back = release(&l, "l", l.revision, 1).unwrap();
    assert_eq!(
        (back.stage, back.due_ms, back.lease.clone()),
        (Stage::Pending, Some(1), None)
    );
    assert_eq!(retry(&r, 1).unwrap_err().code(), "not_retryable");
    let c = cancel(&l, 2).unwrap();
    assert_eq!(
        (c.stage, c.reason),
        (Stage::Cancelled, Some(StopReason::Cancelled))
    );
    assert_eq!(cancel(&c, 3).unwrap_err().code(), "already_terminal");
    assert_eq!(retry(&c, 3).unwrap_err().code(), "not_retryable");
    // Exhausted by rejection: delivery to the other relay goes on (`delivering`),
    // unless the record asked to stop at the verdict; retry re-opens the rejected
    // target of the exhausted record.
    let l = leased(&r, "l", 0);
    let refused = [(RELAYS[0], Outcome::Rejected(RejectReason::Pow))];
    let going_on = done(&l, "l", &refused, 1).unwrap();
    assert_eq!(
        (going_on.stage, going_on.satisfaction, going_on.reason),
        (Stage::Delivering, Satisfaction::Exhausted, None)
    );
    assert_eq!(going_on.unsettled_targets(), RELAYS[1..].to_vec());
    assert_eq!(retry(&going_on, 5).unwrap_err().code(), "not_retryable");
    let stop = created(
        fixture_plan(1, &RELAYS, Policy::All).with_stop_when_satisfied(true),
        0,
    );
    let l = leased(&stop, "l", 0);
    let x = done(&l, "l", &refused, 1).unwrap();
    assert_eq!(
        (x.stage, x.reason),
        (Stage::Exhausted, Some(StopReason::Rejected))
    );
    let y = retry(&x, 5).unwrap();
    assert_eq!(y.unsettled_targets(), RELAYS.to_vec());
    assert_eq!(y.rearmed_after_attempt, 1);
    assert!(core::is_purgeable(&x, 2));
    assert!(!core::is_purgeable(&x, 1));
    assert!(!core::is_purgeable(&y, 100));
}

#[test]
fn serde_shapes_for_javascript() {
    let r = created(fixture_plan(1, &RELAYS[..1], Policy::AtLeast { k: 1 }), 0);
    let l = leased(&r, "l", 0);
    let v = serde_json::to_value(&l).unwrap();
    assert_eq!(v["stage"], "leased");
    assert_eq!(v["planDigest"].as_str().unwrap().len(), 64);
    assert_eq!(v["dueMs"], 1_000);
    assert_eq!(v["lease"]["expiresMs"], 1_000);
    assert_eq!(v["policy"], serde_json::json!({"kind": "atLeast", "k": 1}));
    let back: Record = serde_json::from_value(v).unwrap();
    assert_eq!(back, l);
    for s in Stage::ALL {
        assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
    }
    assert_eq!(
        serde_json::to_value(StopReason::MaxAttempts).unwrap(),
        "maxAttempts"
    );
}

#[test]
fn lease_owner_is_redacted_in_debug() {
    let l = leased(&created(fixture_plan(1, &RELAYS, Policy::All), 0), "l", 0);
    let dbg = format!("{l:?}");
    assert!(!dbg.contains("secret-owner"), "{dbg}");
    assert!(dbg.contains("<redacted>"));
}

#[test]
fn error_codes_are_stable_and_distinct() {
    use nostr_outbox::core::Stage::Satisfied;
    let s = String::new;
    let errors = [
        CoreError::InvalidItemId { reason: s() },
        CoreError::InvalidEvent { reason: s() },
        CoreError::InvalidTargets { reason: s() },
        CoreError::InvalidPolicy { reason: s() },
        CoreError::InvalidArgument {
            field: "f",
            reason: s(),
        },
        CoreError::InvalidConfig {
            field: "f",
            reason: s(),
        },
        CoreError::PlanConflict { id: s() },
        CoreError::NotFound { id: s() },
        CoreError::LeaseExpired { id: s() },
        CoreError::RevisionConflict {
            id: s(),
            expected: 1,
            actual: 2,
        },
        CoreError::NotReady { id: s() },
        CoreError::NotRetryable {
            id: s(),
            reason: s(),
        },
        CoreError::AlreadyTerminal {
            id: s(),
            stage: Satisfied,
        },
    ];
    let mut codes: Vec<&str> = errors.iter().map(|e| e.code()).collect();
    codes.extend(
        [
            StoreError::QuotaExceeded(s()),
            StoreError::Blocked(s()),
            StoreError::VersionTooNew {
                found: 2,
                supported: 1,
            },
            StoreError::Corrupt {
                id: s(),
                message: s(),
            },
            StoreError::Backend(s()),
        ]
        .iter()
        .map(|e| e.code()),
    );
    let mut sorted = codes.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), codes.len(), "{codes:?}");
    assert!(codes
        .iter()
        .all(|c| c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
    assert_eq!(
        StoreError::from(CoreError::NotFound { id: s() }).code(),
        "not_found"
    );
}

fn foreign(lease: &str) -> ClaimRequest {
    ClaimRequest {
        owner: "other-owner".into(),
        ..req(lease)
    }
}

#[test]
fn take_over_leases_an_orphan_for_the_same_attempt() {
    let r = created(fixture_plan(1, &RELAYS, Policy::All), 0);
    // The dead flusher's attempt 1, then the same record retried once: attempt 2.
    let first = leased(&r, "l1", 10);
    let retried = done(&first, "l1", &[(RELAYS[0], Outcome::Accepted)], 20).unwrap();
    let due = retried.due_ms.unwrap();
    let dead = leased(&retried, "l2", due);
    assert_eq!(dead.lease.as_ref().unwrap().attempt, 2);
    let Claimed::Leased(taken) = core::take_over(&dead, &foreign("t1"), due + 1).unwrap() else {
        panic!("expected a lease");
    };
    let lease = taken.lease.as_ref().unwrap();
    assert_eq!(lease.owner, "other-owner");
    assert_eq!(lease.id, "t1");
    assert_eq!(lease.attempt, 2, "the dead flusher's attempt, made again");
    assert_eq!(lease.acquired_ms, due + 1);
    assert_eq!(lease.expires_ms, due + 1 + 1_000);
    assert_eq!(taken.due_ms, Some(due + 1_001));
    assert_eq!(taken.stage, Stage::Leased);
    assert_eq!(taken.attempts, 1, "nothing counted");
    assert_eq!(taken.attempt_limit, dead.attempt_limit, "budget unchanged");
    assert_eq!(taken.evidence, dead.evidence);
    assert_eq!(taken.takeovers, 1);
    assert_eq!(taken.revision, dead.revision + 1);
    // The same accounting as the expiry path: a claim after the dead lease expired.
    let expiry = claim(&dead, &foreign("t1"), due + 1_000)
        .unwrap()
        .into_record();
    assert_eq!(expiry.lease.as_ref().unwrap().attempt, lease.attempt);
    assert_eq!(expiry.attempts, taken.attempts);
    assert_eq!(expiry.takeovers, 0, "an expiry is no takeover");
    // The dead lease is lost; the taker's is the record's.
    let lost = done(&taken, "l2", &[(RELAYS[1], Outcome::Accepted)], due + 2).unwrap_err();
    assert_eq!(lost.code(), "lease_expired");
    let ok = done(
        &taken,
        "t1",
        &[
            (RELAYS[1], Outcome::Accepted),
            (RELAYS[2], Outcome::Accepted),
        ],
        due + 2,
    )
    .unwrap();
    assert_eq!(ok.stage, Stage::Satisfied);
    assert_eq!(ok.attempts, 2);
    assert_eq!(ok.takeovers, 1, "still visible once delivered");
}

#[test]
fn take_over_refuses_what_is_no_orphan() {
    let r = created(fixture_plan(1, &RELAYS, Policy::All), 0);
    let not_ready = |res: Result<Claimed, CoreError>| {
        assert!(
            matches!(res, Err(CoreError::NotReady { .. })),
            "expected not_ready, got {res:?}"
        );
    };
    // Not leased.
    not_ready(core::take_over(&r, &foreign("t"), 5));
    let mine = leased(&r, "l1", 10);
    // The taker's own lease (its work in flight).
    not_ready(core::take_over(&mine, &req("t"), 11));
    // An expired lease is the claim path's.
    not_ready(core::take_over(&mine, &foreign("t"), 1_010));
    // Terminal.
    let cancelled = cancel(&mine, 20).unwrap();
    not_ready(core::take_over(&cancelled, &foreign("t"), 21));
    // A bad request is a typed error.
    let mut bad = foreign("t");
    bad.lease_ms = 0;
    assert_eq!(
        core::take_over(&mine, &bad, 11).unwrap_err().code(),
        "invalid_argument"
    );
    // A second takeover of the taken record by a third owner counts twice.
    let Claimed::Leased(once) = core::take_over(&mine, &foreign("t1"), 11).unwrap() else {
        panic!("expected a lease");
    };
    let third = ClaimRequest {
        owner: "third".into(),
        ..foreign("t2")
    };
    let Claimed::Leased(twice) = core::take_over(&once, &third, 12).unwrap() else {
        panic!("expected a lease");
    };
    assert_eq!(twice.takeovers, 2);
    assert_eq!(twice.lease.as_ref().unwrap().attempt, 1);
}

#[test]
fn take_over_after_the_deadline_expires_the_record() {
    let plan = fixture_plan(1, &RELAYS, Policy::All).with_deadline_ms(Some(500));
    let r = created(plan, 0);
    let dead = leased(&r, "l1", 10);
    let Claimed::Expired(ended) = core::take_over(&dead, &foreign("t"), 500).unwrap() else {
        panic!("expected expiry");
    };
    assert_eq!(ended.stage, Stage::Exhausted);
    assert_eq!(ended.reason, Some(StopReason::Expired));
    assert!(ended.lease.is_none());
    assert_eq!(ended.due_ms, None);
}

mod import {
    use super::*;
    use nostr_outbox::core::import::plan_for;
    use nostr_outbox::core::{decide_enqueues, EnqueueOutcome};
    use nostr_outbox::store::conformance::{nostr_event, nostr_plan, ALICE};

    fn profile(n: u32, at: u64) -> Plan {
        nostr_plan(nostr_event(n, ALICE, 0, at, "", &[]))
    }

    fn refused(r: Record, why: &str) {
        match plan_for(r, 9_000) {
            Err(CoreError::InvalidArgument { field, reason }) => {
                assert_eq!(field, "record");
                assert!(reason.contains(why), "{reason} should say {why}");
            }
            other => panic!("expected a refusal ({why}), got {other:?}"),
        }
    }

    #[test]
    fn a_record_is_its_plans_import() {
        let r = created(fixture_plan(1, &RELAYS, Policy::All), 1_000);
        let plan = plan_for(r.clone(), 9_000).unwrap();
        assert_eq!(plan.imported.as_deref(), Some(&r));
        assert_eq!(plan.clone().normalize().unwrap().digest(), r.plan_digest);
        // A leased record arrives unleased, due at once, its attempt count kept.
        let l = leased(&r, "l", 2_000);
        let arrived = *plan_for(l.clone(), 9_000).unwrap().imported.unwrap();
        assert_eq!(
            (
                arrived.stage,
                arrived.lease,
                arrived.attempts,
                arrived.due_ms
            ),
            (Stage::Pending, None, 0, Some(9_000))
        );
        assert_eq!(arrived.revision, l.revision + 1);
    }

    #[test]
    fn a_record_that_does_not_hold_together_is_refused() {
        let r = created(fixture_plan(1, &RELAYS, Policy::All), 1_000);
        let mut x = r.clone();
        x.targets.pop();
        refused(x, "digest");
        let mut x = r.clone();
        x.max_attempts = 99;
        refused(x, "digest");
        let mut x = r.clone();
        x.stage = Stage::Leased;
        refused(x, "stage `leased`");
        let mut x = r.clone();
        x.due_ms = None;
        refused(x, "stage `pending`");
        let mut x = r.clone();
        x.satisfaction = Satisfaction::Satisfied;
        refused(x, "satisfaction");
        let mut x = r.clone();
        x.stage = Stage::Cancelled;
        x.due_ms = None;
        refused(x, "stage `cancelled`");
        let l = leased(&r, "l", 2_000);
        let mut x = done(&l, "l", &[(RELAYS[0], Outcome::Accepted)], 2_001).unwrap();
        x.evidence[0].target = "wss://elsewhere.example".into();
        refused(x.clone(), "evidence #0");
        x.evidence[0].target = RELAYS[0].into();
        x.evidence[0].attempt = 7;
        refused(x.clone(), "evidence #0");
        // A relay that accepted is never sent the event again.
        x.evidence[0].attempt = 1;
        let again = x.evidence[0].clone();
        x.evidence.push(super::core::Evidence {
            attempt: 2,
            ..again
        });
        refused(x, "evidence #3");
        let mut x = r;
        x.revision = 0;
        refused(x, "revision");
    }

    #[test]
    fn every_way_of_being_superseded_is_imported() {
        let r = created(fixture_plan(1, &RELAYS, Policy::All), 1_000);
        let by = "e".repeat(64);
        let mut ended: Vec<Record> = [
            StopReason::Superseded,
            StopReason::Deleted,
            StopReason::Vanished,
        ]
        .into_iter()
        .map(|reason| core::machine::supersede(&r, &by, reason, 2_000).unwrap())
        .collect();
        // A relay held a newer version: the attempt that found it ends the record.
        let l = leased(&r, "l", 2_000);
        let c = Completion {
            id: r.id.clone(),
            lease_id: "l".into(),
            revision: l.revision,
            results: vec![
                TargetResult {
                    target: RELAYS[0].into(),
                    outcome: Outcome::Rejected(RejectReason::Newer),
                    message: core::newer_message(&by, 7),
                },
                TargetResult {
                    target: RELAYS[1].into(),
                    outcome: Outcome::Accepted,
                    message: String::new(),
                },
            ],
            jitter: 0,
        };
        let newer = complete_attempt(&l, &c, 2_001, &retry_cfg()).unwrap();
        assert_eq!(
            (newer.stage, newer.reason, newer.superseded_by.as_deref()),
            (
                Stage::Superseded,
                Some(StopReason::RemoteNewer),
                Some(by.as_str())
            )
        );
        assert!(newer.lease.is_none() && newer.due_ms.is_none());
        assert_eq!(newer.evidence.len(), 3, "every target's answer kept");
        ended.push(newer);
        for r in ended {
            let plan = plan_for(r.clone(), 9_000)
                .unwrap_or_else(|e| panic!("{:?} is refused: {e}", r.reason));
            assert_eq!(plan.imported.as_deref(), Some(&r));
        }
    }

    #[test]
    fn history_neither_withdraws_nor_is_withdrawn() {
        // Held here: v2 of Alice's profile (pending) and v1 of a second slot.
        let v2 = created(profile(2, 200), 1_000);
        // Imported: v1 delivered there (older than v2 here), v3 cancelled there.
        let v1 = created(profile(1, 100), 1_000);
        let l = leased(&v1, "l", 1_001);
        let v1 = done(
            &l,
            "l",
            &[
                (RELAYS[0], Outcome::Accepted),
                (RELAYS[1], Outcome::Accepted),
                (RELAYS[2], Outcome::Accepted),
            ],
            1_002,
        )
        .unwrap();
        assert_eq!(v1.stage, Stage::Satisfied);
        let v3 = cancel(&created(profile(3, 300), 1_000), 1_003).unwrap();
        let plans = vec![
            plan_for(v1.clone(), 5_000).unwrap(),
            plan_for(v3.clone(), 5_000).unwrap(),
        ];
        let decided = decide_enqueues(
            plans,
            vec![(None, vec![v2.clone()]), (None, vec![v2.clone()])],
            5_000,
        )
        .unwrap();
        let outcomes: Vec<_> = decided.answers.iter().map(|a| a.outcome).collect();
        assert_eq!(outcomes, [EnqueueOutcome::Created, EnqueueOutcome::Created]);
        assert_eq!(
            decided.answers[0].record, v1,
            "a delivered older version stays delivered"
        );
        assert_eq!(decided.answers[1].record, v3);
        assert!(
            decided.answers.iter().all(|a| a.withdrawn.is_empty()),
            "a cancelled newer version withdraws nothing"
        );
    }
}
