//! Schedules: a record is not claimed before its `not_before_ms`; `reschedule` moves a
//! waiting record's next attempt; a cancel before the time means nothing is sent.

use super::*;

/// Scheduled records wait for their time; `reschedule` moves it earlier or later,
/// refusing a record in flight, a terminal one, an unknown one and a time past the
/// deadline (nothing changed); a cancel before the time is an undo; the schedule is not
/// part of the plan (the same plan at another time replays).
pub async fn scheduled_records_wait_for_their_time<S: Store>(s: &S) {
    const C: &str = "scheduled_records_wait_for_their_time";
    let plan = |n: u32, at: Option<u64>| {
        fixture_plan(n, &RELAYS, Policy::All)
            .with_id(format!("s{n}"))
            .with_not_before_ms(at)
    };
    let plans = vec![
        plan(1, Some(5_000)),
        plan(2, None),
        plan(3, Some(10_000)),
        plan(4, Some(20_000)),
        plan(5, Some(9_000)),
        plan(6, Some(500)),
        plan(8, Some(25_000)).with_deadline_ms(Some(30_000)),
    ];
    ok(C, "enqueue", s.enqueue_many(plans, 1_000).await);
    let s1 = must_get(C, s, "s1").await;
    check_eq!(
        C,
        (s1.stage, s1.due_ms),
        (Stage::Pending, Some(5_000)),
        "s1 waits"
    );
    check_eq!(
        C,
        must_get(C, s, "s6").await.due_ms,
        Some(1_000),
        "a time already past: due at once"
    );
    err_code(
        C,
        "a time at or past the deadline",
        s.enqueue(plan(7, Some(50_000)).with_deadline_ms(Some(40_000)), 1_000)
            .await,
        "invalid_argument",
    );
    check!(
        C,
        ok(C, "get", s.get("s7").await).is_none(),
        "nothing written"
    );

    // Before their time, only the unscheduled records are claimed.
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l1", 64, 60_000), 2_000).await,
    );
    check_eq!(C, ids_of(&claimed), ["s2", "s6"], "at 2 000");
    err_code(
        C,
        "reschedule in flight",
        s.reschedule("s2", 3_000, 2_100).await,
        "in_flight",
    );

    // Earlier, later, and into the past (now).
    let s3 = ok(C, "earlier", s.reschedule("s3", 3_000, 2_500).await);
    check_eq!(
        C,
        (s3.stage, s3.due_ms),
        (Stage::Pending, Some(3_000)),
        "s3 at 3 000"
    );
    let s1 = ok(C, "later", s.reschedule("s1", 15_000, 2_500).await);
    check_eq!(C, s1.due_ms, Some(15_000), "s1 at 15 000");
    let s4 = ok(C, "past", s.reschedule("s4", 100, 2_600).await);
    check_eq!(C, s4.due_ms, Some(2_600), "s4 due at once");
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l2", 64, 60_000), 3_000).await,
    );
    check_eq!(
        C,
        ids_of(&claimed),
        ["s4", "s3"],
        "at 3 000, earliest due first"
    );

    // Undo: cancelled before its time, s5 is never claimed.
    ok(C, "cancel", s.cancel("s5", 4_000).await);
    err_code(
        C,
        "reschedule cancelled",
        s.reschedule("s5", 5_000, 4_100).await,
        "already_terminal",
    );
    err_code(
        C,
        "reschedule unknown",
        s.reschedule("nope", 5_000, 4_100).await,
        "not_found",
    );
    let before = must_get(C, s, "s8").await;
    err_code(
        C,
        "reschedule at the deadline",
        s.reschedule("s8", 30_000, 4_200).await,
        "invalid_argument",
    );
    check_eq!(
        C,
        must_get(C, s, "s8").await,
        before,
        "a refused reschedule changes nothing"
    );
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l3", 64, 60_000), 14_999).await,
    );
    check!(
        C,
        claimed.is_empty(),
        "nothing due before 15 000: {:?}",
        ids_of(&claimed)
    );
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l4", 64, 60_000), 15_000).await,
    );
    check_eq!(C, ids_of(&claimed), ["s1"], "at 15 000; s5 never");

    // The same plan at another time is a replay: the schedule is not the plan.
    let again = ok(C, "again", s.enqueue(plan(3, Some(99_000)), 16_000).await);
    check_eq!(C, again.outcome, EnqueueOutcome::Replay, "a replay");
}
