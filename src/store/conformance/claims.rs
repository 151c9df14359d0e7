//! Claims and leases: order and bound, readiness, exclusivity, expiry, lost claims,
//! take-over of orphaned leases, priorities and filters.

use super::*;

/// Claims take ready records by (due, created, id), at most `limit`, validated.
pub async fn claim_order_and_bound<S: Store>(s: &S) {
    const C: &str = "claim_order_and_bound";
    for (id, n, t) in [
        ("m", 1, 30),
        ("k", 2, 10),
        ("z", 3, 20),
        ("a", 4, 20),
        ("q", 5, 40),
    ] {
        ok(
            C,
            "enqueue",
            s.enqueue(fixture_plan(n, &RELAYS, Policy::All).with_id(id), t)
                .await,
        );
    }
    err_code(
        C,
        "limit 0",
        s.claim(&fixture_claim("o", "l", 0, 1_000), 100).await,
        "invalid_argument",
    );
    err_code(
        C,
        "limit 257",
        s.claim(&fixture_claim("o", "l", 257, 1_000), 100).await,
        "invalid_argument",
    );
    err_code(
        C,
        "lease 0",
        s.claim(&fixture_claim("o", "l", 1, 0), 100).await,
        "invalid_argument",
    );
    err_code(
        C,
        "empty owner",
        s.claim(&fixture_claim("", "l", 1, 10), 100).await,
        "invalid_argument",
    );
    err_code(
        C,
        "empty lease id",
        s.claim(&fixture_claim("o", "", 1, 10), 100).await,
        "invalid_argument",
    );
    let none = ok(
        C,
        "claim before due",
        s.claim(&fixture_claim("o", "l0", 10, 1_000), 5).await,
    );
    check!(C, none.is_empty(), "nothing is due at 5");
    let first = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l1", 3, 1_000), 35).await,
    );
    let ids: Vec<&str> = first.iter().map(|r| r.id.as_str()).collect();
    check_eq!(
        C,
        ids,
        ["k", "a", "z"],
        "due order, then id on equal creation"
    );
    for r in &first {
        check_eq!(C, r.stage, Stage::Leased, "claimed stage");
        let lease = r.lease.as_ref().expect("lease");
        check_eq!(
            C,
            (lease.id.as_str(), lease.owner.as_str()),
            ("l1", "o"),
            "lease holder"
        );
        check_eq!(
            C,
            (lease.acquired_ms, lease.expires_ms, lease.attempt),
            (35, 1_035, 1),
            "lease times"
        );
        check_eq!(
            C,
            r.due_ms,
            Some(1_035),
            "leased record is due at lease expiry"
        );
        check_eq!(C, r.revision, 2, "claim bumps the revision");
        check_eq!(
            C,
            &must_get(C, s, &r.id).await,
            r,
            "claim result is what is stored"
        );
    }
    let second = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l2", 10, 1_000), 35).await,
    );
    let ids: Vec<&str> = second.iter().map(|r| r.id.as_str()).collect();
    check_eq!(C, ids, ["m"], "only ready records; q is not due yet");
}

/// Terminal, not-yet-due and actively leased records are never claimed.
pub async fn claim_readiness_and_exclusivity<S: Store>(s: &S) {
    const C: &str = "claim_readiness_and_exclusivity";
    ok(
        C,
        "e",
        s.enqueue(
            fixture_plan(1, &RELAYS, Policy::All).with_id("cancelled"),
            0,
        )
        .await,
    );
    ok(
        C,
        "e",
        s.enqueue(fixture_plan(2, &RELAYS, Policy::All).with_id("leased"), 0)
            .await,
    );
    ok(C, "cancel", s.cancel("cancelled", 1).await);
    let a = ok(
        C,
        "claim A",
        s.claim(&fixture_claim("A", "la", 10, 100), 10).await,
    );
    check_eq!(C, a.len(), 1, "A gets the one ready record");
    check_eq!(C, a[0].id, "leased", "A's record");
    let b = ok(
        C,
        "claim B",
        s.claim(&fixture_claim("B", "lb", 10, 100), 50).await,
    );
    check!(C, b.is_empty(), "B cannot take an actively leased record");
    let lease_before = must_get(C, s, "leased").await;
    check_eq!(
        C,
        lease_before.lease.as_ref().map(|l| l.owner.clone()),
        Some("A".into()),
        "lease unchanged"
    );
    // Complete with a retryable outcome: not due until the retry time.
    let done = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(&a[0], "la", vec![answer(RELAYS[0], Outcome::Timeout)]),
            &fixture_retry(),
            60,
        )
        .await,
    );
    check_eq!(C, done.stage, Stage::Retryable, "retryable after a timeout");
    check_eq!(C, done.due_ms, Some(1_060), "due after the backoff");
    let early = ok(
        C,
        "claim early",
        s.claim(&fixture_claim("B", "lb", 10, 100), 1_059).await,
    );
    check!(C, early.is_empty(), "not due before its retry time");
    let due = ok(
        C,
        "claim due",
        s.claim(&fixture_claim("B", "lb", 10, 100), 1_060).await,
    );
    check_eq!(C, due.len(), 1, "due at its retry time");
}

/// A lease that expires (flusher died) lets another claim take the record for the
/// same attempt number.
pub async fn lease_expiry_allows_reclaim<S: Store>(s: &S) {
    const C: &str = "lease_expiry_allows_reclaim";
    let e = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 0).await,
    );
    let id = e.record.id;
    let first = claim_one(C, s, "dead", 100, &id).await;
    check_eq!(
        C,
        first.lease.as_ref().map(|l| l.expires_ms),
        Some(10_100),
        "lease expiry"
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(0).await),
        Some(10_100),
        "due at lease expiry"
    );
    let before = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o2", "l2", 5, 1_000), 10_099).await,
    );
    check!(C, before.is_empty(), "still leased just before expiry");
    let second = claim_one(C, s, "alive", 10_100, &id).await;
    let lease = second.lease.as_ref().expect("lease");
    check_eq!(C, lease.id, "alive", "new lease");
    check_eq!(
        C,
        lease.attempt,
        1,
        "same attempt number, nothing was recorded"
    );
    check_eq!(C, second.revision, first.revision + 1, "revision grows");
}

/// Results under an expired, superseded or stale lease change nothing.
pub async fn lost_claim_changes_nothing<S: Store>(s: &S) {
    const C: &str = "lost_claim_changes_nothing";
    let retry = fixture_retry();
    let id = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 0).await,
    )
    .record
    .id;
    let dead = claim_one(C, s, "dead", 0, &id).await;
    let accepted: Vec<TargetResult> = RELAYS
        .iter()
        .map(|r| answer(r, Outcome::Accepted))
        .collect();
    // Expired, not re-claimed.
    let snapshot = must_get(C, s, &id).await;
    err_code(
        C,
        "late complete",
        s.complete_attempt(&completion(&dead, "dead", accepted.clone()), &retry, 10_000)
            .await,
        "lease_expired",
    );
    err_code(
        C,
        "late release",
        s.release(&id, "dead", dead.revision, 10_000).await,
        "lease_expired",
    );
    check_eq!(
        C,
        must_get(C, s, &id).await,
        snapshot,
        "expired lease changed nothing"
    );
    // Superseded by a new claim.
    let alive = claim_one(C, s, "alive", 10_000, &id).await;
    let snapshot = must_get(C, s, &id).await;
    err_code(
        C,
        "superseded complete",
        s.complete_attempt(&completion(&dead, "dead", accepted.clone()), &retry, 10_001)
            .await,
        "lease_expired",
    );
    // Right lease, stale revision.
    err_code(
        C,
        "stale revision",
        s.complete_attempt(
            &completion(&dead, "alive", accepted.clone()),
            &retry,
            10_001,
        )
        .await,
        "revision_conflict",
    );
    // Unknown targets are refused before anything is written.
    err_code(
        C,
        "unknown target",
        s.complete_attempt(
            &completion(
                &alive,
                "alive",
                vec![answer("wss://nope.example", Outcome::Accepted)],
            ),
            &retry,
            10_001,
        )
        .await,
        "invalid_argument",
    );
    check_eq!(
        C,
        must_get(C, s, &id).await,
        snapshot,
        "stale writers changed nothing"
    );
    err_code(
        C,
        "missing record",
        s.complete_attempt(
            &Completion {
                id: "nope".into(),
                ..completion(&alive, "alive", vec![])
            },
            &retry,
            10_001,
        )
        .await,
        "not_found",
    );
    let done = ok(
        C,
        "live complete",
        s.complete_attempt(&completion(&alive, "alive", accepted), &retry, 10_002)
            .await,
    );
    check_eq!(C, done.stage, Stage::Satisfied, "the live lease wins");
}

/// The Web Lock holder takes over the live leases of other owners (flushers that are
/// gone), in claim order and up to its limit: the same attempt number (nothing was
/// recorded), `takeovers` counted, the dead lease lost. Its own live leases, expired
/// leases (the claim path's) and unleased records are left alone; a record past its
/// deadline is exhausted as `expired` instead, as on claim.
pub async fn take_over_orphaned_leases<S: Store>(s: &S) {
    const C: &str = "take_over_orphaned_leases";
    let mut ids = Vec::new();
    for n in 1..=5u32 {
        let e = ok(
            C,
            "enqueue",
            s.enqueue(fixture_plan(n, &RELAYS[..2], Policy::All), u64::from(n))
                .await,
        );
        ids.push(e.record.id);
    }
    // #1: leased by `old` until 110 (it will have expired); #2..#4: leased by `dead`
    // until 10 100; #5: leased by `me` (this flusher's own work in flight).
    let old = ok(
        C,
        "claim",
        s.claim(&fixture_claim("old", "l-old", 1, 100), 10).await,
    );
    check_eq!(C, old.len(), 1, "old claims one");
    check_eq!(C, old[0].id, ids[0], "old claims #1");
    let dead = ok(
        C,
        "claim",
        s.claim(&fixture_claim("dead", "l-dead", 3, 10_000), 100)
            .await,
    );
    let dead_ids: Vec<&str> = dead.iter().map(|r| r.id.as_str()).collect();
    check_eq!(
        C,
        dead_ids,
        vec![ids[1].as_str(), ids[2].as_str(), ids[3].as_str()],
        "dead claims #2..#4"
    );
    let mine = ok(
        C,
        "claim",
        s.claim(&fixture_claim("me", "l-mine", 1, 10_000), 200)
            .await,
    );
    check_eq!(C, mine.len(), 1, "me claims one");
    check_eq!(
        C,
        mine[0].id,
        ids[4],
        "me claims #5 (due before #1's lease expiry)"
    );

    err_code(
        C,
        "take_over with a zero limit",
        s.take_over(&fixture_claim("me", "t0", 0, 10_000), 300)
            .await,
        "invalid_argument",
    );
    // A batch of two: the oldest two of `dead`'s.
    let taken = ok(
        C,
        "take_over",
        s.take_over(&fixture_claim("me", "t1", 2, 10_000), 300)
            .await,
    );
    let taken_ids: Vec<&str> = taken.iter().map(|r| r.id.as_str()).collect();
    check_eq!(
        C,
        taken_ids,
        vec![ids[1].as_str(), ids[2].as_str()],
        "claim order, up to the limit"
    );
    for (r, before) in taken.iter().zip(&dead) {
        let lease = r.lease.as_ref().expect("lease");
        check_eq!(C, r.stage, Stage::Leased, "still leased");
        check_eq!(
            C,
            (lease.id.as_str(), lease.owner.as_str()),
            ("t1", "me"),
            "the new lease"
        );
        check_eq!(
            C,
            lease.attempt,
            1,
            "the dead flusher's attempt, made again"
        );
        check_eq!(C, lease.expires_ms, 10_300, "a fresh lease from now");
        check_eq!(C, r.due_ms, Some(10_300), "due at the new lease's expiry");
        check_eq!(C, r.attempts, 0, "nothing counted");
        check_eq!(C, r.takeovers, 1, "the takeover is counted");
        check_eq!(C, r.revision, before.revision + 1, "revision grows");
        check_eq!(C, &must_get(C, s, &r.id).await, r, "stored as answered");
    }
    let rest = ok(
        C,
        "take_over",
        s.take_over(&fixture_claim("me", "t2", 256, 10_000), 301)
            .await,
    );
    let rest_ids: Vec<&str> = rest.iter().map(|r| r.id.as_str()).collect();
    check_eq!(
        C,
        rest_ids,
        vec![ids[3].as_str()],
        "only the last orphan: not its own, not expired leases"
    );
    let none = ok(
        C,
        "take_over",
        s.take_over(&fixture_claim("me", "t3", 256, 10_000), 302)
            .await,
    );
    check!(C, none.is_empty(), "nothing left to take over: {none:?}");
    let own = must_get(C, s, &ids[4]).await;
    check_eq!(
        C,
        own.lease.as_ref().map(|l| l.id.as_str()),
        Some("l-mine"),
        "its own lease kept"
    );
    check_eq!(C, own.takeovers, 0, "its own lease not counted");
    // The expired lease is the claim path's, and is no takeover.
    let again = ok(
        C,
        "claim",
        s.claim(&fixture_claim("me", "l-again", 256, 10_000), 302)
            .await,
    );
    check_eq!(C, again.len(), 1, "only #1 is ready: {again:?}");
    let expired = &again[0];
    check_eq!(C, expired.id, ids[0], "#1 claimed after its lease expired");
    check_eq!(C, expired.takeovers, 0, "an expiry is not a takeover");

    // The dead flusher's late answer is a lost claim and changes nothing.
    let before = must_get(C, s, &ids[1]).await;
    err_code(
        C,
        "complete under the dead lease",
        s.complete_attempt(
            &completion(
                &dead[0],
                "l-dead",
                vec![answer(RELAYS[0], Outcome::Accepted)],
            ),
            &fixture_retry(),
            400,
        )
        .await,
        "lease_expired",
    );
    check_eq!(
        C,
        must_get(C, s, &ids[1]).await,
        before,
        "unchanged by the dead lease"
    );
    // The taker's answers are recorded as attempt 1; the count stays visible.
    let done = ok(
        C,
        "complete under the takeover",
        s.complete_attempt(
            &completion(
                &before,
                "t1",
                vec![
                    answer(RELAYS[0], Outcome::Accepted),
                    answer(RELAYS[1], Outcome::Accepted),
                ],
            ),
            &fixture_retry(),
            400,
        )
        .await,
    );
    check_eq!(C, done.stage, Stage::Satisfied, "delivered");
    check_eq!(C, done.attempts, 1, "attempt 1");
    check!(
        C,
        done.evidence.iter().all(|e| e.attempt == 1),
        "evidence of attempt 1"
    );
    check_eq!(C, done.takeovers, 1, "the takeover stays visible");

    // A live orphan past its deadline is exhausted as `expired`, as on claim.
    let plan = fixture_plan(6, &RELAYS[..1], Policy::All).with_deadline_ms(Some(1_000));
    let late = ok(C, "enqueue", s.enqueue(plan, 500).await).record.id;
    let leased = ok(
        C,
        "claim",
        s.claim(&fixture_claim("dead2", "l-dead2", 1, 10_000), 500)
            .await,
    );
    check_eq!(
        C,
        leased.first().map(|r| r.id.as_str()),
        Some(late.as_str()),
        "dead2 claims #6"
    );
    let ended = ok(
        C,
        "take_over",
        s.take_over(&fixture_claim("me", "t4", 256, 10_000), 1_000)
            .await,
    );
    check_eq!(C, ended.len(), 1, "only #6: {ended:?}");
    check_eq!(
        C,
        (ended[0].stage, ended[0].reason),
        (Stage::Exhausted, Some(StopReason::Expired)),
        "exhausted as expired"
    );
    check_eq!(
        C,
        must_get(C, s, &late).await,
        ended[0],
        "stored as answered"
    );
}

/// A claim request for `owner`/`lease` filtered by `lanes` and `relays`.
pub fn filtered_claim(lease: &str, limit: u32, lanes: &[&str], relays: &[&str]) -> ClaimRequest {
    ClaimRequest {
        lanes: lanes.iter().map(|l| l.to_string()).collect(),
        relays: relays.iter().map(|r| r.to_string()).collect(),
        ..fixture_claim("owner", lease, limit, 10_000)
    }
}

pub(super) fn ids_of(records: &[Record]) -> Vec<&str> {
    records.iter().map(|r| r.id.as_str()).collect()
}

/// Claims take `high` before `normal` before `low`, then the earliest due, then the
/// oldest: a backlog of any size in a lower priority never delays a higher one, and a
/// retried record keeps its priority. Lane and priority are stored and read back.
pub async fn claim_priority_order<S: Store>(s: &S) {
    const C: &str = "claim_priority_order";
    // A backlog of low-priority records, all due before anything else.
    for n in 1..=6u32 {
        ok(
            C,
            "enqueue low",
            s.enqueue(
                fixture_plan(n, &RELAYS[..1], Policy::All)
                    .with_id(format!("low{n}"))
                    .with_priority(Priority::Low),
                u64::from(n),
            )
            .await,
        );
    }
    for (id, n, t, p) in [
        ("norm2", 10, 30, Priority::Normal),
        ("norm1", 11, 20, Priority::Normal),
        ("high2", 12, 50, Priority::High),
        ("high1", 13, 40, Priority::High),
    ] {
        let e = ok(
            C,
            "enqueue",
            s.enqueue(
                fixture_plan(n, &RELAYS[..1], Policy::All)
                    .with_id(id)
                    .with_priority(p)
                    .with_lane("ui"),
                t,
            )
            .await,
        );
        check_eq!(
            C,
            (e.record.priority, e.record.lane.as_str()),
            (p, "ui"),
            "{id} stored"
        );
    }
    check_eq!(
        C,
        must_get(C, s, "low1").await.lane,
        crate::core::DEFAULT_LANE,
        "the default lane"
    );
    let mut order = Vec::new();
    for i in 0..4 {
        let got = ok(
            C,
            "claim",
            s.claim(&fixture_claim("o", &format!("p{i}"), 2, 10_000), 100)
                .await,
        );
        order.extend(got.iter().map(|r| r.id.clone()));
    }
    check_eq!(
        C,
        order,
        ["high1", "high2", "norm1", "norm2", "low1", "low2", "low3", "low4"],
        "priority, then due, across batches"
    );
    // high1 fails and comes back retryable; a low record is due earlier, yet high1
    // still goes first once it is due.
    let high1 = must_get(C, s, "high1").await;
    let lease = high1.lease.as_ref().expect("lease").id.clone();
    let back = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(&high1, &lease, vec![answer(RELAYS[0], Outcome::Error)]),
            &fixture_retry(),
            200,
        )
        .await,
    );
    check_eq!(
        C,
        back.priority,
        Priority::High,
        "retryable keeps its priority"
    );
    let at = back.due_ms.expect("due");
    let next = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "p9", 1, 10_000), at).await,
    );
    check_eq!(
        C,
        ids_of(&next),
        ["high1"],
        "retried high before the low backlog"
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(0).await),
        Some(5),
        "next due is low5's"
    );
}

/// `lanes` and `relays` filters: a claim takes only records of those lanes that still
/// wait for one of those relays, and leases the attempt for those relays only; the other
/// targets get no evidence, and the record is due again at once for them. Bad filters
/// are typed errors that change nothing. A lease held by a filtered claim keeps an
/// unfiltered one out, and the other way round; takeovers respect the filters.
pub async fn filtered_claims<S: Store>(s: &S) {
    const C: &str = "filtered_claims";
    let [a, b, c] = RELAYS;
    for (id, n, lane, targets) in [
        ("dm1", 1, "dm", vec![a, b]),
        ("bulk1", 2, "bulk", vec![a]),
        ("bulk2", 3, "bulk", vec![c]),
        ("plain", 4, crate::core::DEFAULT_LANE, vec![b, c]),
    ] {
        ok(
            C,
            "enqueue",
            s.enqueue(
                fixture_plan(n, &targets, Policy::All)
                    .with_id(id)
                    .with_lane(lane),
                u64::from(n),
            )
            .await,
        );
    }
    for (what, request) in [
        ("a bad lane", filtered_claim("x", 5, &["no spaces"], &[])),
        ("an empty relay", filtered_claim("x", 5, &[], &[""])),
    ] {
        err_code(C, what, s.claim(&request, 100).await, "invalid_argument");
    }
    let many: Vec<String> = (0..65).map(|i| format!("l{i}")).collect();
    let request = ClaimRequest {
        lanes: many,
        ..filtered_claim("x", 5, &[], &[])
    };
    err_code(
        C,
        "65 lanes",
        s.claim(&request, 100).await,
        "invalid_argument",
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).pending,
        4,
        "bad filters claimed nothing"
    );
    // Lanes.
    let got = ok(
        C,
        "claim bulk",
        s.claim(&filtered_claim("l1", 5, &["bulk"], &[]), 100).await,
    );
    check_eq!(C, ids_of(&got), ["bulk1", "bulk2"], "only the bulk lane");
    for r in &got {
        check_eq!(
            C,
            r.lease.as_ref().and_then(|l| l.relays.clone()),
            None,
            "unscoped"
        );
    }
    let none = ok(
        C,
        "claim bulk again",
        s.claim(&filtered_claim("l2", 5, &["bulk"], &[]), 100).await,
    );
    check!(
        C,
        none.is_empty(),
        "a lease is respected by the same filter"
    );
    // Relays: only records that wait for b; the attempt is for b only.
    let got = ok(
        C,
        "claim b",
        s.claim(&filtered_claim("l3", 5, &[], &[b]), 100).await,
    );
    check_eq!(C, ids_of(&got), ["dm1", "plain"], "records waiting for b");
    let dm1 = got[0].clone();
    check_eq!(
        C,
        dm1.lease.as_ref().and_then(|l| l.relays.clone()),
        Some(vec![b.to_string()]),
        "the attempt is scoped to b"
    );
    let none = ok(
        C,
        "unfiltered",
        s.claim(&fixture_claim("o", "l4", 5, 10_000), 100).await,
    );
    check!(
        C,
        none.is_empty(),
        "filtered leases keep an unfiltered claim out: {none:?}"
    );
    err_code(
        C,
        "an answer of a relay outside the scope",
        s.complete_attempt(
            &completion(&dm1, "l3", vec![answer(a, Outcome::Accepted)]),
            &fixture_retry(),
            110,
        )
        .await,
        "invalid_argument",
    );
    check_eq!(
        C,
        must_get(C, s, "dm1").await,
        dm1,
        "a refused completion changes nothing"
    );
    let done = ok(
        C,
        "complete b",
        s.complete_attempt(
            &completion(&dm1, "l3", vec![answer(b, Outcome::Accepted)]),
            &fixture_retry(),
            120,
        )
        .await,
    );
    check_eq!(C, done.stage, Stage::Retryable, "a still waits");
    check_eq!(
        C,
        done.due_ms,
        Some(120),
        "due at once for a, which was left out"
    );
    check!(
        C,
        done.evidence.iter().all(|e| e.target == b),
        "no evidence for a: {:?}",
        done.evidence
    );
    check_eq!(
        C,
        done.unsettled_targets(),
        [a.to_string()],
        "a is still open"
    );
    check!(
        C,
        !done.waits_for(b) && done.waits_for(a),
        "waits for a only"
    );
    // A failure inside the scope backs the record off as usual.
    let plain = must_get(C, s, "plain").await;
    let backed = ok(
        C,
        "complete plain",
        s.complete_attempt(
            &completion(&plain, "l3", vec![answer(b, Outcome::Error)]),
            &fixture_retry(),
            120,
        )
        .await,
    );
    check_eq!(
        C,
        backed.due_ms,
        Some(1_120),
        "backoff after a failure in scope"
    );
    check!(
        C,
        backed.evidence.iter().all(|e| e.target == b),
        "c untouched: {:?}",
        backed.evidence
    );
    // The unfiltered claim now takes dm1 (for a); a claim for b finds nothing waiting.
    let none = ok(
        C,
        "claim b again",
        s.claim(&filtered_claim("l5", 5, &[], &[b]), 130).await,
    );
    check!(C, none.is_empty(), "nothing due waits for b: {none:?}");
    let got = ok(
        C,
        "unfiltered",
        s.claim(&fixture_claim("o", "l6", 5, 10_000), 130).await,
    );
    check_eq!(C, ids_of(&got), ["dm1"], "dm1 is due for a");
    check_eq!(
        C,
        got[0].lease.as_ref().and_then(|l| l.relays.clone()),
        None,
        "unscoped"
    );
    // An unfiltered lease keeps a filtered claim out.
    let none = ok(
        C,
        "claim dm",
        s.claim(&filtered_claim("l7", 5, &["dm"], &[]), 130).await,
    );
    check!(C, none.is_empty(), "unfiltered lease respected: {none:?}");
    // Takeovers respect the filters: the bulk leases (owner `owner`) are orphans for
    // `heir`, but only those of the lanes it asks for.
    let heir = ClaimRequest {
        owner: "heir".into(),
        ..filtered_claim("l8", 5, &["dm"], &[])
    };
    let taken = ok(C, "take over dm", s.take_over(&heir, 140).await);
    check!(
        C,
        taken.iter().all(|r| r.lane == "dm"),
        "dm only: {:?}",
        ids_of(&taken)
    );
    let heir = ClaimRequest {
        owner: "heir".into(),
        ..filtered_claim("l9", 5, &["bulk"], &[c])
    };
    let taken = ok(C, "take over bulk for c", s.take_over(&heir, 140).await);
    check_eq!(C, ids_of(&taken), ["bulk2"], "bulk and waiting for c");
    check_eq!(
        C,
        taken[0].lease.as_ref().and_then(|l| l.relays.clone()),
        Some(vec![c.to_string()]),
        "scoped takeover"
    );
}

/// Without a Web Lock, a flusher takes over only the leases of owners whose heartbeat
/// has lapsed (a killed process): not those of an owner that renews its heartbeat (a
/// busy one), nor of one that never beat (its leases only expire), nor its own. The
/// lock holder (no `lapsed_only`) still takes every other owner's. A removed heartbeat
/// is no lapse.
pub async fn takeover_by_heartbeat_takes_only_lapsed_owners<S: Store>(s: &S) {
    const C: &str = "takeover_by_heartbeat_takes_only_lapsed_owners";
    use crate::core::heartbeat::BEAT_LAPSE_MS;
    let mut ids = Vec::new();
    for n in 1..=4u32 {
        let e = ok(
            C,
            "enqueue",
            s.enqueue(fixture_plan(n, &RELAYS[..1], Policy::All), u64::from(n))
                .await,
        );
        ids.push(e.record.id);
    }
    // #1 by `busy`, #2 by `killed`, #3 by `silent` (never beats), #4 by `me`.
    for owner in ["busy", "killed", "silent", "me"] {
        let got = ok(
            C,
            "claim",
            s.claim(&fixture_claim(owner, &format!("l-{owner}"), 1, 60_000), 100)
                .await,
        );
        check_eq!(C, got.len(), 1, "{owner} claims one");
    }
    for owner in ["busy", "killed", "me"] {
        ok(
            C,
            "beat",
            s.beat(owner, Some(Heartbeat::at(100, 60_000)), 100).await,
        );
    }
    // `busy` renews; `killed` does not; `me` ends its run (its row removed).
    let later = 100 + BEAT_LAPSE_MS + 1;
    ok(
        C,
        "renew",
        s.beat("busy", Some(Heartbeat::at(later - 1, 60_000)), later - 1)
            .await,
    );
    // `busy` and `killed` are still on record when `me` ends its run.
    let others = ok(C, "end", s.beat("me", None, later - 1).await);
    check_eq!(C, others, 2, "other owners' heartbeats kept");
    let heir = ClaimRequest {
        lapsed_only: true,
        ..fixture_claim("heir", "t-heir", 256, 60_000)
    };
    // Before the lapse, nothing is taken.
    let none = ok(C, "take over early", s.take_over(&heir, later - 1).await);
    check!(C, none.is_empty(), "no lapse yet: {:?}", ids_of(&none));
    let taken = ok(C, "take over", s.take_over(&heir, later).await);
    check_eq!(C, ids_of(&taken), [ids[1].as_str()], "only killed's lease");
    check_eq!(C, taken[0].attempts, 0, "the attempt number is kept");
    // The lock holder takes every other owner's live lease.
    let lock_holder = fixture_claim("holder", "t-holder", 256, 60_000);
    let taken = ok(
        C,
        "take over (lock)",
        s.take_over(&lock_holder, later).await,
    );
    let mut got = ids_of(&taken);
    got.sort();
    check_eq!(
        C,
        got,
        [
            ids[0].as_str(),
            ids[1].as_str(),
            ids[2].as_str(),
            ids[3].as_str()
        ],
        "every other owner's"
    );
    // Once every lease `killed` could hold has run out, its heartbeat is forgotten.
    let stale = 100 + BEAT_LAPSE_MS + 60_001;
    let others = ok(C, "end late", s.beat("heir", None, stale).await);
    check_eq!(C, others, 1, "only busy's (renewed) is kept");
}
