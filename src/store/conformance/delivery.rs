//! Delivery: attempts and their evidence, policies, delivery after the verdict,
//! unreachable relays, completions, exhaustion, expiry, retry and cancel, release, relay
//! wake-ups, purge, the next due time.

use super::*;

/// An attempt appends one evidence entry per unsettled target; the next attempt only
/// targets what is still open; attempts are numbered in order.
pub async fn attempt_records_evidence<S: Store>(s: &S) {
    const C: &str = "attempt_records_evidence";
    let retry = fixture_retry();
    let id = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 0).await,
    )
    .record
    .id;
    let r1 = claim_one(C, s, "l1", 0, &id).await;
    check_eq!(
        C,
        r1.unsettled_targets(),
        RELAYS.to_vec(),
        "first attempt targets all"
    );
    let mut msg = answer(RELAYS[0], Outcome::Accepted);
    msg.message = "stored".into();
    let done = ok(
        C,
        "complete 1",
        s.complete_attempt(
            &completion(
                &r1,
                "l1",
                vec![msg, answer(RELAYS[1], Outcome::RateLimited)],
            ),
            &retry,
            5,
        )
        .await,
    );
    check_eq!(C, done.attempts, 1, "attempt 1 recorded");
    check_eq!(C, done.evidence.len(), 3, "one entry per target");
    let outcomes: Vec<(&str, u32, Outcome)> = done
        .evidence
        .iter()
        .map(|e| (e.target.as_str(), e.attempt, e.outcome))
        .collect();
    check_eq!(
        C,
        outcomes,
        vec![
            (RELAYS[0], 1, Outcome::Accepted),
            (RELAYS[1], 1, Outcome::RateLimited),
            (RELAYS[2], 1, Outcome::NotAttempted)
        ],
        "evidence"
    );
    check_eq!(C, done.evidence[0].message, "stored", "relay message kept");
    check_eq!(C, done.evidence[0].at_ms, 5, "evidence time");
    check_eq!(C, done.stage, Stage::Retryable, "still pending");
    check_eq!(C, done.satisfaction, Satisfaction::Pending, "satisfaction");
    check_eq!(C, done.lease, None, "lease released");
    check_eq!(C, done.last_attempt_ms, Some(5), "last attempt time");
    check!(C, done.last_error.is_some(), "failures summarized");
    check_eq!(
        C,
        done.retry_not_before_ms,
        Some(30_005),
        "rate-limited defers at least the minimum"
    );
    check_eq!(C, done.due_ms, Some(30_005), "due at the retry time");
    let r2 = claim_one(C, s, "l2", 30_005, &id).await;
    check_eq!(
        C,
        r2.lease.as_ref().map(|l| l.attempt),
        Some(2),
        "attempt 2"
    );
    check_eq!(
        C,
        r2.unsettled_targets(),
        RELAYS[1..].to_vec(),
        "accepted target not sent again"
    );
    err_code(
        C,
        "settled target reported",
        s.complete_attempt(
            &completion(&r2, "l2", vec![answer(RELAYS[0], Outcome::Accepted)]),
            &retry,
            30_006,
        )
        .await,
        "invalid_argument",
    );
    let dup = vec![
        answer(RELAYS[1], Outcome::Accepted),
        answer(RELAYS[1], Outcome::Accepted),
    ];
    err_code(
        C,
        "target reported twice",
        s.complete_attempt(&completion(&r2, "l2", dup), &retry, 30_006)
            .await,
        "invalid_argument",
    );
    let done2 = ok(
        C,
        "complete 2",
        s.complete_attempt(
            &completion(
                &r2,
                "l2",
                vec![
                    answer(RELAYS[1], Outcome::Duplicate),
                    answer(RELAYS[2], Outcome::Error),
                ],
            ),
            &retry,
            30_010,
        )
        .await,
    );
    check_eq!(
        C,
        &done2.evidence[..3],
        &done.evidence[..],
        "evidence is append-only"
    );
    check_eq!(C, done2.evidence.len(), 5, "two more entries");
    check!(
        C,
        done2.evidence[3..].iter().all(|e| e.attempt == 2),
        "attempt 2 entries"
    );
    check_eq!(C, done2.due_ms, Some(32_010), "second backoff doubles");
    let r3 = claim_one(C, s, "l3", 32_010, &id).await;
    check_eq!(
        C,
        r3.unsettled_targets(),
        vec![RELAYS[2].to_string()],
        "only the open target"
    );
    let done3 = ok(
        C,
        "complete 3",
        s.complete_attempt(
            &completion(&r3, "l3", vec![answer(RELAYS[2], Outcome::Accepted)]),
            &retry,
            32_020,
        )
        .await,
    );
    check_eq!(C, done3.stage, Stage::Satisfied, "all accepted");
    check_eq!(C, done3.due_ms, None, "terminal records are never due");
    check_eq!(C, done3.attempts, 3, "three attempts");
}

pub(super) async fn run_policy<S: Store>(
    case: &str,
    s: &S,
    n: u32,
    policy: Policy,
    answers: &[Outcome],
    stop: bool,
) -> Record {
    let plan = fixture_plan(n, &RELAYS, policy).with_stop_when_satisfied(stop);
    let id = ok(case, "enqueue", s.enqueue(plan, 0).await).record.id;
    let r = claim_one(case, s, "l", 0, &id).await;
    let results = RELAYS
        .iter()
        .zip(answers)
        .map(|(t, o)| answer(t, *o))
        .collect();
    ok(
        case,
        "complete",
        s.complete_attempt(&completion(&r, "l", results), &fixture_retry(), 1)
            .await,
    )
}

/// `all`, `any`, `atLeast(k)` and `required` decide satisfied / pending / exhausted;
/// a record that asked to stop at the verdict ends there (the third column), any other
/// goes on delivering to its targets still open (the fourth: `delivering` while one
/// is, else the verdict's terminal stage).
pub async fn policies<S: Store>(s: &S) {
    const C: &str = "policies";
    use Outcome::{Accepted as A, Rejected as R, Timeout as T};
    let no = R(RejectReason::Blocked);
    let req = |i: &[usize]| Policy::Required {
        relays: i.iter().map(|i| RELAYS[*i].to_string()).collect(),
    };
    let cases: Vec<(Policy, [Outcome; 3], Stage, Satisfaction, Stage)> = vec![
        (
            Policy::All,
            [A, A, A],
            Stage::Satisfied,
            Satisfaction::Satisfied,
            Stage::Satisfied,
        ),
        (
            Policy::All,
            [A, A, T],
            Stage::Retryable,
            Satisfaction::Pending,
            Stage::Retryable,
        ),
        (
            Policy::All,
            [A, A, no],
            Stage::Exhausted,
            Satisfaction::Exhausted,
            Stage::Exhausted,
        ),
        (
            Policy::Any,
            [T, no, A],
            Stage::Satisfied,
            Satisfaction::Satisfied,
            Stage::Delivering,
        ),
        (
            Policy::Any,
            [T, no, T],
            Stage::Retryable,
            Satisfaction::Pending,
            Stage::Retryable,
        ),
        (
            Policy::Any,
            [no, no, no],
            Stage::Exhausted,
            Satisfaction::Exhausted,
            Stage::Exhausted,
        ),
        (
            Policy::AtLeast { k: 2 },
            [A, no, A],
            Stage::Satisfied,
            Satisfaction::Satisfied,
            Stage::Satisfied,
        ),
        (
            Policy::AtLeast { k: 2 },
            [A, no, T],
            Stage::Retryable,
            Satisfaction::Pending,
            Stage::Retryable,
        ),
        (
            Policy::AtLeast { k: 2 },
            [A, no, no],
            Stage::Exhausted,
            Satisfaction::Exhausted,
            Stage::Exhausted,
        ),
        (
            req(&[0]),
            [A, no, T],
            Stage::Satisfied,
            Satisfaction::Satisfied,
            Stage::Delivering,
        ),
        (
            req(&[0, 2]),
            [A, A, T],
            Stage::Retryable,
            Satisfaction::Pending,
            Stage::Retryable,
        ),
        (
            req(&[1]),
            [A, no, A],
            Stage::Exhausted,
            Satisfaction::Exhausted,
            Stage::Exhausted,
        ),
    ];
    for (n, (policy, answers, stop_stage, sat, go_on_stage)) in cases.into_iter().enumerate() {
        for (stop, stage, k) in [(true, stop_stage, 1), (false, go_on_stage, 101)] {
            let what = format!("{policy:?} with {answers:?}, stopWhenSatisfied {stop}");
            let r = run_policy(C, s, n as u32 + k, policy.clone(), &answers, stop).await;
            check_eq!(C, (r.stage, r.satisfaction), (stage, sat), "{what}");
            if stage == Stage::Exhausted {
                check_eq!(C, r.reason, Some(StopReason::Rejected), "{what}: reason");
            }
            if stage == Stage::Delivering {
                // Due again like a retryable record, for the open targets only.
                check_eq!(C, r.due_ms, Some(1 + 1_000), "{what}: due");
                check_eq!(C, r.reason, None, "{what}: reason");
                let open: Vec<String> = RELAYS
                    .iter()
                    .zip(&answers)
                    .filter(|(_, o)| **o == T)
                    .map(|(t, _)| t.to_string())
                    .collect();
                check_eq!(C, r.unsettled_targets(), open, "{what}: open targets");
            }
        }
    }
}

/// The policy's verdict is what the application is told; delivery goes on to every
/// target that has not settled. Policy `all` over a (accepts), b (refuses for good) and
/// c (down): the record is `delivering` with satisfaction `exhausted`, b is never sent
/// the event again, c gets it when it is back (woken by `relay_back`), and the record
/// ends `exhausted` (rejected). Policy `any` with a budget of 2: satisfied at the
/// first attempt, `delivering` until the budget ends it as `satisfied` with b and c
/// still open. `status` counts `delivering` records.
pub async fn delivery_goes_on_after_the_verdict<S: Store>(s: &S) {
    const C: &str = "delivery_goes_on_after_the_verdict";
    let [a, b, c] = RELAYS;
    let id = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 0).await,
    )
    .record
    .id;
    let r = claim_one(C, s, "l1", 0, &id).await;
    check_eq!(C, r.attempt_targets(), RELAYS.to_vec(), "first attempt");
    let blocked = Outcome::Rejected(RejectReason::Blocked);
    let results = vec![
        answer(a, Outcome::Accepted),
        answer(b, blocked),
        answer(c, Outcome::Unreachable),
    ];
    let r = ok(
        C,
        "complete 1",
        s.complete_attempt(&completion(&r, "l1", results), &fixture_retry(), 1)
            .await,
    );
    check_eq!(
        C,
        (r.stage, r.satisfaction, r.reason, r.attempts),
        (Stage::Delivering, Satisfaction::Exhausted, None, 1),
        "a refusal for good leaves c in delivery"
    );
    check_eq!(C, ok(C, "status", s.status().await).delivering, 1, "status");
    // c is still down: the try reaches no relay and is not counted.
    let due = r.due_ms.unwrap_or(0);
    let r = claim_one(C, s, "l2", due, &id).await;
    check_eq!(
        C,
        r.attempt_targets(),
        vec![c.to_string()],
        "only c is tried"
    );
    let r = ok(
        C,
        "complete 2",
        s.complete_attempt(
            &completion(&r, "l2", vec![answer(c, Outcome::Unreachable)]),
            &fixture_retry(),
            due + 1,
        )
        .await,
    );
    check_eq!(
        C,
        (r.stage, r.attempts),
        (Stage::Delivering, 1),
        "an unreached try keeps waiting"
    );
    // c is back: the record is due at once and c gets the event.
    let now = due + 2;
    let woken = ok(C, "relay_back", s.relay_back(c, now).await);
    check_eq!(
        C,
        woken.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        vec![id.as_str()],
        "relay_back wakes a delivering record"
    );
    let r = claim_one(C, s, "l3", now, &id).await;
    check_eq!(C, r.attempt_targets(), vec![c.to_string()], "c again");
    let r = ok(
        C,
        "complete 3",
        s.complete_attempt(
            &completion(&r, "l3", vec![answer(c, Outcome::Accepted)]),
            &fixture_retry(),
            now + 1,
        )
        .await,
    );
    check_eq!(
        C,
        (r.stage, r.satisfaction, r.reason),
        (
            Stage::Exhausted,
            Satisfaction::Exhausted,
            Some(StopReason::Rejected)
        ),
        "every target settled"
    );
    check_eq!(
        C,
        r.evidence.iter().filter(|e| e.target == b).count(),
        1,
        "b, refused for good, was never sent the event again"
    );
    check_eq!(
        C,
        r.target_state(c),
        crate::core::TargetState::Accepted,
        "c got it"
    );
    check_eq!(C, ok(C, "status", s.status().await).delivering, 0, "status");

    // `any` with a budget of 2: satisfied at once, delivered on until the budget ends.
    let plan = fixture_plan(2, &RELAYS, Policy::Any).with_max_attempts(2);
    let id = ok(C, "enqueue any", s.enqueue(plan, 0).await).record.id;
    let r = claim_one(C, s, "m1", 0, &id).await;
    let results = vec![
        answer(a, Outcome::Accepted),
        answer(b, Outcome::Timeout),
        answer(c, Outcome::Error),
    ];
    let r = ok(
        C,
        "complete any 1",
        s.complete_attempt(&completion(&r, "m1", results), &fixture_retry(), 1)
            .await,
    );
    check_eq!(
        C,
        (r.stage, r.satisfaction),
        (Stage::Delivering, Satisfaction::Satisfied),
        "satisfied, b and c still open"
    );
    let due = r.due_ms.unwrap_or(0);
    let r = claim_one(C, s, "m2", due, &id).await;
    check_eq!(
        C,
        r.attempt_targets(),
        vec![b.to_string(), c.to_string()],
        "the accepted target is not sent again"
    );
    let results = vec![answer(b, Outcome::Timeout), answer(c, Outcome::Error)];
    let r = ok(
        C,
        "complete any 2",
        s.complete_attempt(&completion(&r, "m2", results), &fixture_retry(), due + 1)
            .await,
    );
    check_eq!(
        C,
        (r.stage, r.satisfaction, r.reason, r.attempts),
        (Stage::Satisfied, Satisfaction::Satisfied, None, 2),
        "the budget ends delivery, the record stays satisfied"
    );
    check_eq!(
        C,
        r.unsettled_targets(),
        vec![b.to_string(), c.to_string()],
        "the targets it never reached stay open in its evidence"
    );
}

/// An attempt that reached no relay (all unreachable) is not counted: the record keeps
/// waiting with a growing backoff under the same attempt number, its evidence stays one
/// entry per target (whose `tries` grow), the first attempt that reaches a relay counts
/// again, and the budget still ends the record.
pub async fn unreachable_attempts_keep_the_budget<S: Store>(s: &S) {
    const C: &str = "unreachable_attempts_keep_the_budget";
    let plan = fixture_plan(1, &RELAYS[..2], Policy::All).with_max_attempts(2);
    let id = ok(C, "enqueue", s.enqueue(plan, 0).await).record.id;
    let mut now = 0;
    let mut last_delay = 0;
    for k in 1..=40u32 {
        let r = claim_one(C, s, &format!("u{k}"), now, &id).await;
        check_eq!(
            C,
            r.lease.as_ref().map(|l| l.attempt),
            Some(1),
            "same attempt number"
        );
        // One relay refuses the connection, the other is not even tried.
        let done = ok(
            C,
            "complete",
            s.complete_attempt(
                &completion(
                    &r,
                    &format!("u{k}"),
                    vec![answer(RELAYS[0], Outcome::Unreachable)],
                ),
                &fixture_retry(),
                now,
            )
            .await,
        );
        check_eq!(C, done.attempts, 0, "an unreached attempt is not counted");
        check_eq!(
            C,
            done.stage,
            Stage::Retryable,
            "still waiting for the relays"
        );
        check_eq!(
            C,
            done.evidence.len(),
            2,
            "one entry per target, however long the wait"
        );
        check!(
            C,
            done.evidence.iter().all(|e| e.tries == k && e.attempt == 1),
            "tries counted on the entries"
        );
        if k > 1 {
            check_eq!(C, done.evidence[0].first_at_ms, Some(0), "first try kept");
        }
        check_eq!(C, done.evidence[0].at_ms, now, "last try time");
        let delay = done.due_ms.unwrap_or(0) - now;
        check!(
            C,
            delay >= last_delay,
            "backoff does not shrink while unreachable"
        );
        last_delay = delay;
        now = done.due_ms.unwrap_or(now);
    }
    check!(C, last_delay > 0, "an unreached wait has a backoff");
    // The stored record is the returned one.
    let stored = must_get(C, s, &id).await;
    check_eq!(C, stored.evidence.len(), 2, "stored evidence bounded");
    // A reached attempt counts: number 1, appended after the unreached entries.
    let r = claim_one(C, s, "r1", now, &id).await;
    let done = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(
                &r,
                "r1",
                vec![
                    answer(RELAYS[0], Outcome::Error),
                    answer(RELAYS[1], Outcome::Unreachable),
                ],
            ),
            &fixture_retry(),
            now,
        )
        .await,
    );
    check_eq!(C, done.attempts, 1, "a reached attempt is counted");
    check_eq!(C, done.evidence.len(), 4, "reached attempt appended");
    check_eq!(
        C,
        done.stage,
        Stage::Retryable,
        "one reached attempt of two"
    );
    now = done.due_ms.unwrap_or(now);
    // An unreached attempt after it starts a new entry under number 2.
    let r = claim_one(C, s, "u-after", now, &id).await;
    let done = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(&r, "u-after", vec![answer(RELAYS[0], Outcome::Unreachable)]),
            &fixture_retry(),
            now,
        )
        .await,
    );
    check_eq!(C, done.attempts, 1, "still one counted attempt");
    check_eq!(C, done.evidence.len(), 6, "new attempt number, new entries");
    now = done.due_ms.unwrap_or(now);
    let r = claim_one(C, s, "r2", now, &id).await;
    let done = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(&r, "r2", vec![answer(RELAYS[0], Outcome::Error)]),
            &fixture_retry(),
            now,
        )
        .await,
    );
    check_eq!(
        C,
        done.stage,
        Stage::Exhausted,
        "two reached attempts spend the budget"
    );
    check_eq!(C, done.reason, Some(StopReason::MaxAttempts), "reason");
    check_eq!(C, done.attempts, 2, "attempts");
}

/// A round's attempts recorded in one call: one answer per completion, in order; a
/// lost claim among them is its own error and changes only nothing of its record.
pub async fn complete_many<S: Store>(s: &S) {
    const C: &str = "complete_many";
    for n in 1..=3 {
        ok(
            C,
            "enqueue",
            s.enqueue(fixture_plan(n, &RELAYS[..1], Policy::All), 0)
                .await,
        );
    }
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("owner", "round", 10, 10_000), 0)
            .await,
    );
    check_eq!(C, claimed.len(), 3, "all claimed");
    let completions = vec![
        completion(
            &claimed[0],
            "round",
            vec![answer(RELAYS[0], Outcome::Accepted)],
        ),
        // A stale lease id: a lost claim.
        completion(
            &claimed[1],
            "someone-else",
            vec![answer(RELAYS[0], Outcome::Accepted)],
        ),
        completion(
            &claimed[2],
            "round",
            vec![answer(RELAYS[0], Outcome::Error)],
        ),
    ];
    let answers = s
        .complete_attempts(&completions, &fixture_retry(), 10)
        .await;
    check_eq!(C, answers.len(), 3, "one answer per completion");
    let stages: Vec<Option<Stage>> = answers
        .iter()
        .map(|a| a.as_ref().ok().map(|r| r.stage))
        .collect();
    check_eq!(
        C,
        stages,
        vec![Some(Stage::Satisfied), None, Some(Stage::Retryable)],
        "in order"
    );
    check!(
        C,
        answers[1]
            .as_ref()
            .is_err_and(|e| e.is_lost_claim() && e.is_item_error()),
        "the stale one is a lost claim"
    );
    check_eq!(
        C,
        must_get(C, s, &claimed[0].id).await.stage,
        Stage::Satisfied,
        "first recorded"
    );
    check_eq!(
        C,
        must_get(C, s, &claimed[1].id).await,
        claimed[1].clone(),
        "the lost claim changed nothing"
    );
    check_eq!(
        C,
        must_get(C, s, &claimed[2].id).await.attempts,
        1,
        "third recorded"
    );
    check!(
        C,
        s.complete_attempts(&[], &fixture_retry(), 11)
            .await
            .is_empty(),
        "nothing to record"
    );
}

/// The attempt budget ends a record as `exhausted` with reason `maxAttempts`.
pub async fn exhaustion<S: Store>(s: &S) {
    const C: &str = "exhaustion";
    let plan = fixture_plan(1, &RELAYS[..1], Policy::All).with_max_attempts(2);
    let id = ok(C, "enqueue", s.enqueue(plan, 0).await).record.id;
    let mut now = 0;
    for attempt in 1..=2u32 {
        let r = claim_one(C, s, &format!("l{attempt}"), now, &id).await;
        let done = ok(
            C,
            "complete",
            s.complete_attempt(
                &completion(
                    &r,
                    &format!("l{attempt}"),
                    vec![answer(RELAYS[0], Outcome::Timeout)],
                ),
                &fixture_retry(),
                now,
            )
            .await,
        );
        check_eq!(C, done.attempts, attempt, "attempt number");
        now = done.due_ms.unwrap_or(now);
        if attempt == 2 {
            check_eq!(C, done.stage, Stage::Exhausted, "budget spent");
            check_eq!(C, done.reason, Some(StopReason::MaxAttempts), "reason");
            check_eq!(C, done.due_ms, None, "not due");
        }
    }
    let later = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "x", 5, 10), 1_000_000).await,
    );
    check!(C, later.is_empty(), "exhausted records are never claimed");
}

/// A passed deadline (or NIP-40 expiration) exhausts the record as `expired`.
pub async fn expiration<S: Store>(s: &S) {
    const C: &str = "expiration";
    let plan = fixture_plan(1, &RELAYS[..1], Policy::All)
        .with_id("deadline")
        .with_deadline_ms(Some(500));
    ok(C, "enqueue", s.enqueue(plan, 0).await);
    let mut event = fixture_event(2);
    event.expiration = Some(1); // unix seconds: 1000 ms
    let nip40 = Plan::new(event, vec![RELAYS[0].into()], Policy::All).with_id("nip40");
    ok(C, "enqueue", s.enqueue(nip40, 0).await);
    // At 600 the deadline passed but not the NIP-40 expiration.
    let got = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l", 10, 100), 600).await,
    );
    check_eq!(C, got.len(), 2, "both returned");
    let expired = got
        .iter()
        .find(|r| r.id == "deadline")
        .expect("deadline record");
    check_eq!(
        C,
        (expired.stage, expired.reason),
        (Stage::Exhausted, Some(StopReason::Expired)),
        "expired on claim"
    );
    check_eq!(
        C,
        &must_get(C, s, "deadline").await,
        expired,
        "expiry is stored"
    );
    err_code(
        C,
        "retry after deadline",
        s.retry("deadline", 700).await,
        "not_retryable",
    );
    let leased = got.iter().find(|r| r.id == "nip40").expect("nip40 record");
    check_eq!(C, leased.stage, Stage::Leased, "not yet expired");
    // The next retry (600 + 1000) would fall after the NIP-40 expiration (1000).
    let done = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(leased, "l", vec![answer(RELAYS[0], Outcome::Timeout)]),
            &fixture_retry(),
            600,
        )
        .await,
    );
    check_eq!(
        C,
        (done.stage, done.reason),
        (Stage::Exhausted, Some(StopReason::Expired)),
        "retry past expiration"
    );
}

/// `retry` re-arms exhausted records only; `cancel` ends non-terminal ones only.
pub async fn retry_and_cancel<S: Store>(s: &S) {
    const C: &str = "retry_and_cancel";
    err_code(C, "retry missing", s.retry("nope", 0).await, "not_found");
    err_code(C, "cancel missing", s.cancel("nope", 0).await, "not_found");
    let plan = fixture_plan(1, &RELAYS[..2], Policy::All)
        .with_id("x")
        .with_max_attempts(1);
    ok(C, "enqueue", s.enqueue(plan, 0).await);
    err_code(C, "retry pending", s.retry("x", 1).await, "not_retryable");
    let r = claim_one(C, s, "l", 1, "x").await;
    let results = vec![
        answer(RELAYS[0], Outcome::Accepted),
        answer(RELAYS[1], Outcome::Rejected(RejectReason::Restricted)),
    ];
    let done = ok(
        C,
        "complete",
        s.complete_attempt(&completion(&r, "l", results), &fixture_retry(), 2)
            .await,
    );
    check_eq!(C, done.stage, Stage::Exhausted, "rejected");
    err_code(
        C,
        "cancel exhausted",
        s.cancel("x", 3).await,
        "already_terminal",
    );
    let re = ok(C, "retry", s.retry("x", 10).await);
    check_eq!(C, re.stage, Stage::Retryable, "re-armed");
    check_eq!(C, re.evidence, done.evidence, "evidence kept");
    check_eq!(C, re.due_ms, Some(10), "due at once");
    check_eq!(C, re.reason, None, "reason cleared");
    check_eq!(C, re.revision, done.revision + 1, "revision grows");
    check_eq!(
        C,
        re.unsettled_targets(),
        vec![RELAYS[1].to_string()],
        "rejected target re-opened, accepted not"
    );
    let r2 = claim_one(C, s, "l2", 10, "x").await;
    check_eq!(
        C,
        r2.lease.as_ref().map(|l| l.attempt),
        Some(2),
        "numbering continues"
    );
    let done2 = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(&r2, "l2", vec![answer(RELAYS[1], Outcome::Accepted)]),
            &fixture_retry(),
            11,
        )
        .await,
    );
    check_eq!(C, done2.stage, Stage::Satisfied, "satisfied after retry");
    err_code(
        C,
        "retry satisfied",
        s.retry("x", 12).await,
        "not_retryable",
    );
    // Cancel pending, and cancel while leased (the lease holder then loses its claim).
    ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(2, &RELAYS, Policy::All).with_id("y"), 20)
            .await,
    );
    let c = ok(C, "cancel", s.cancel("y", 21).await);
    check_eq!(
        C,
        (c.stage, c.reason, c.due_ms),
        (Stage::Cancelled, Some(StopReason::Cancelled), None),
        "cancelled"
    );
    err_code(
        C,
        "cancel twice",
        s.cancel("y", 22).await,
        "already_terminal",
    );
    err_code(
        C,
        "retry cancelled",
        s.retry("y", 22).await,
        "not_retryable",
    );
    ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(3, &RELAYS, Policy::All).with_id("z"), 30)
            .await,
    );
    let lz = claim_one(C, s, "lz", 30, "z").await;
    let cz = ok(C, "cancel leased", s.cancel("z", 31).await);
    check_eq!(C, cz.lease, None, "lease dropped");
    err_code(
        C,
        "complete after cancel",
        s.complete_attempt(&completion(&lz, "lz", vec![]), &fixture_retry(), 32)
            .await,
        "lease_expired",
    );
    check_eq!(C, must_get(C, s, "z").await, cz, "cancel stands");
}

/// `release` hands a lease back without an attempt.
pub async fn release_hands_back<S: Store>(s: &S) {
    const C: &str = "release_hands_back";
    let id = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 0).await,
    )
    .record
    .id;
    let r = claim_one(C, s, "l", 5, &id).await;
    err_code(
        C,
        "wrong lease",
        s.release(&id, "other", r.revision, 6).await,
        "lease_expired",
    );
    let back = ok(C, "release", s.release(&id, "l", r.revision, 6).await);
    check_eq!(
        C,
        (back.stage, back.lease.clone(), back.due_ms),
        (Stage::Pending, None, Some(6)),
        "released"
    );
    check_eq!(C, back.attempts, 0, "no attempt counted");
    let again = claim_one(C, s, "l2", 6, &id).await;
    check_eq!(
        C,
        again.lease.as_ref().map(|l| l.attempt),
        Some(1),
        "still attempt 1"
    );
}

/// `relay_back` makes due at once the retryable records whose latest try of that relay
/// found it unreachable, and leaves every other record exactly as it was.
pub async fn relay_back_wakes_only_what_waits_for_it<S: Store>(s: &S) {
    const C: &str = "relay_back_wakes_only_what_waits_for_it";
    let (a, b) = (RELAYS[0], RELAYS[1]);
    // Each record: its targets and the answers of its first attempt (at 10).
    let cases: [(&[&str], Vec<TargetResult>); 5] = [
        // Waits for `a` (unreachable), `b` not even tried: woken.
        (&[a, b], vec![answer(a, Outcome::Unreachable)]),
        // `a` timed out: it was reached, not woken.
        (&[a], vec![answer(a, Outcome::Timeout)]),
        // `b` asked to slow down: its pause stays.
        (
            &[a, b],
            vec![
                answer(a, Outcome::Unreachable),
                answer(b, Outcome::RateLimited),
            ],
        ),
        // Waits for `b` only.
        (&[b], vec![answer(b, Outcome::Unreachable)]),
        // `a` accepted, `b` unreachable: `a` is settled.
        (
            &[a, b],
            vec![
                answer(a, Outcome::Accepted),
                answer(b, Outcome::Unreachable),
            ],
        ),
    ];
    let mut ids = Vec::new();
    for (n, (targets, results)) in cases.into_iter().enumerate() {
        let plan = fixture_plan(n as u32 + 1, targets, Policy::All);
        let id = ok(C, "enqueue", s.enqueue(plan, 0).await).record.id;
        let r = claim_one(C, s, &format!("l{n}"), 5, &id).await;
        let done = ok(
            C,
            "complete",
            s.complete_attempt(
                &completion(&r, &format!("l{n}"), results),
                &fixture_retry(),
                10,
            )
            .await,
        );
        check_eq!(C, done.stage, Stage::Retryable, "record {n} waits");
        check!(C, done.due_ms > Some(11), "record {n} is due later");
        ids.push(id);
    }
    // Never attempted: pending, not woken.
    let pending = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(9, &[a], Policy::All), 0).await,
    )
    .record;
    let before: Vec<Record> = {
        let mut v = Vec::new();
        for id in &ids {
            v.push(must_get(C, s, id).await);
        }
        v
    };
    check_eq!(
        C,
        ok(
            C,
            "unknown relay",
            s.relay_back("wss://other.example", 11).await
        ),
        Vec::<Record>::new(),
        "a relay no record waits for"
    );
    let woken = ok(C, "relay_back", s.relay_back(a, 11).await);
    check_eq!(C, woken.len(), 1, "one woken");
    for (i, id) in ids.iter().enumerate() {
        let now = must_get(C, s, id).await;
        if i == 0 {
            let mut expected = before[0].clone();
            expected.revision += 1;
            expected.due_ms = Some(11);
            expected.retry_not_before_ms = Some(11);
            expected.updated_ms = 11;
            check_eq!(
                C,
                now,
                expected,
                "woken: due at once, evidence and attempts kept"
            );
            check_eq!(C, &woken[0], &now, "answered as stored");
        } else {
            check_eq!(C, &now, &before[i], "record {i} unchanged");
        }
    }
    check_eq!(
        C,
        must_get(C, s, &pending.id).await,
        pending,
        "pending unchanged"
    );
    check_eq!(
        C,
        ok(C, "relay_back again", s.relay_back(a, 11).await).len(),
        0,
        "already due"
    );
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "w", 256, 10_000), 11).await,
    );
    let mut got: Vec<&str> = claimed.iter().map(|r| r.id.as_str()).collect();
    got.sort_unstable();
    let mut want = vec![ids[0].as_str(), pending.id.as_str()];
    want.sort_unstable();
    check_eq!(C, got, want, "the woken record is claimable");
}

/// `purge` deletes terminal records older than the cutoff and nothing else.
pub async fn purge_terminal_only<S: Store>(s: &S) {
    const C: &str = "purge_terminal_only";
    for (id, n) in [("old", 1), ("new", 2), ("live", 3)] {
        ok(
            C,
            "enqueue",
            s.enqueue(fixture_plan(n, &RELAYS, Policy::All).with_id(id), 0)
                .await,
        );
    }
    ok(C, "cancel", s.cancel("old", 10).await);
    ok(C, "cancel", s.cancel("new", 30).await);
    check_eq!(
        C,
        ok(C, "purge", s.purge(10).await),
        0,
        "cutoff is exclusive"
    );
    check_eq!(
        C,
        ok(C, "purge", s.purge(20).await),
        1,
        "one old terminal record"
    );
    check!(C, ok(C, "get", s.get("old").await).is_none(), "old purged");
    check!(C, ok(C, "get", s.get("new").await).is_some(), "new kept");
    check_eq!(
        C,
        ok(C, "purge", s.purge(1_000).await),
        1,
        "new purged later"
    );
    check!(
        C,
        ok(C, "get", s.get("live").await).is_some(),
        "non-terminal never purged"
    );
}

/// `next_due` is the smallest due time of a non-terminal record.
pub async fn next_due<S: Store>(s: &S) {
    const C: &str = "next_due";
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(0).await),
        None,
        "empty store"
    );
    ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All).with_id("a"), 50)
            .await,
    );
    ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(2, &RELAYS, Policy::All).with_id("b"), 70)
            .await,
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(0).await),
        Some(50),
        "earliest pending"
    );
    let due_at = async |now| ok(C, "count_due", s.count_due(now).await);
    check_eq!(
        C,
        (due_at(49).await, due_at(50).await, due_at(70).await),
        (0, 1, 2),
        "count_due"
    );
    let r = claim_one(C, s, "l", 60, "a").await;
    check_eq!(
        C,
        (due_at(70).await, due_at(10_060).await),
        (1, 2),
        "a leased record counts when its lease expires"
    );
    // `a` is leased until 10_060; `b` (due at 70) was not ready at 60.
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(0).await),
        Some(70),
        "b is next"
    );
    ok(C, "cancel", s.cancel("b", 61).await);
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(0).await),
        r.due_ms,
        "the lease expiry"
    );
    ok(C, "cancel", s.cancel("a", 62).await);
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(0).await),
        None,
        "only terminal records"
    );
    check_eq!(
        C,
        due_at(u64::MAX).await,
        0,
        "terminal records are never due"
    );
}
