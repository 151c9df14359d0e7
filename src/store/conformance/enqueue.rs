//! Enqueue: create, replay and conflict; invalid input; batches all or nothing; the
//! caller's check; progress.

use super::*;

/// Same plan replays without writing; another plan under the same id conflicts.
pub async fn enqueue_create_replay_conflict<S: Store>(s: &S) {
    const C: &str = "enqueue_create_replay_conflict";
    let plan = fixture_plan(1, &RELAYS, Policy::All);
    let first = ok(C, "enqueue", s.enqueue(plan.clone(), 100).await);
    check_eq!(C, first.outcome, EnqueueOutcome::Created, "first enqueue");
    check_eq!(
        C,
        first.record.id,
        fixture_event(1).id,
        "default id is the event id"
    );
    check_eq!(C, first.record.stage, Stage::Pending, "new stage");
    check_eq!(C, first.record.revision, 1, "new revision");
    check_eq!(
        C,
        first.record.due_ms,
        Some(100),
        "new record is due at creation"
    );
    check_eq!(
        C,
        first.record.event,
        fixture_event(1),
        "event kept exactly"
    );
    // Same plan, targets in another order and repeated: still the same plan.
    let again = fixture_plan(
        1,
        &[RELAYS[2], RELAYS[0], RELAYS[1], RELAYS[0]],
        Policy::All,
    );
    let replay = ok(C, "replay", s.enqueue(again, 999).await);
    check_eq!(C, replay.outcome, EnqueueOutcome::Replay, "second enqueue");
    check_eq!(
        C,
        replay.record,
        first.record,
        "replay returns the stored record"
    );
    check_eq!(
        C,
        must_get(C, s, &first.record.id).await,
        first.record,
        "nothing written"
    );
    let other = fixture_plan(1, &RELAYS, Policy::Any);
    err_code(
        C,
        "conflicting enqueue",
        s.enqueue(other, 1_000).await,
        "plan_conflict",
    );
    let other_event = fixture_plan(2, &RELAYS, Policy::All).with_id(first.record.id.clone());
    err_code(
        C,
        "other event, same id",
        s.enqueue(other_event, 1_000).await,
        "plan_conflict",
    );
    check_eq!(
        C,
        must_get(C, s, &first.record.id).await,
        first.record,
        "conflict wrote nothing"
    );
    let counts = ok(C, "status", s.status().await);
    check_eq!(C, counts.total(), 1, "one record");
}

/// Invalid plans fail with their typed code and write nothing.
pub async fn enqueue_rejects_invalid_input<S: Store>(s: &S) {
    const C: &str = "enqueue_rejects_invalid_input";
    let p = || fixture_plan(1, &RELAYS, Policy::All);
    err_code(
        C,
        "bad id",
        s.enqueue(p().with_id("a b"), 1).await,
        "invalid_item_id",
    );
    err_code(
        C,
        "empty id",
        s.enqueue(p().with_id(""), 1).await,
        "invalid_item_id",
    );
    err_code(
        C,
        "no targets",
        s.enqueue(fixture_plan(1, &[], Policy::All), 1).await,
        "invalid_targets",
    );
    err_code(
        C,
        "k too large",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::AtLeast { k: 4 }), 1)
            .await,
        "invalid_policy",
    );
    err_code(
        C,
        "required outside targets",
        s.enqueue(
            fixture_plan(
                1,
                &RELAYS[..1],
                Policy::Required {
                    relays: vec![RELAYS[1].into()],
                },
            ),
            1,
        )
        .await,
        "invalid_policy",
    );
    err_code(
        C,
        "zero attempts",
        s.enqueue(p().with_max_attempts(0), 1).await,
        "invalid_argument",
    );
    let mut bad_event = p();
    bad_event.event.id = "xyz".into();
    bad_event.id = "x".into();
    err_code(
        C,
        "bad event id",
        s.enqueue(bad_event, 1).await,
        "invalid_event",
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        0,
        "nothing written"
    );
}

/// A batch with any conflict or invalid plan writes nothing; a good batch writes all.
pub async fn enqueue_many_all_or_nothing<S: Store>(s: &S) {
    const C: &str = "enqueue_many_all_or_nothing";
    ok(
        C,
        "seed",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 10).await,
    );
    let conflict = vec![
        fixture_plan(2, &RELAYS, Policy::All),
        fixture_plan(1, &RELAYS, Policy::Any),
    ];
    err_code(
        C,
        "batch with stored conflict",
        s.enqueue_many(conflict, 20).await,
        "plan_conflict",
    );
    check!(
        C,
        ok(C, "get", s.get(&fixture_event(2).id).await).is_none(),
        "2 not written"
    );
    let inner = vec![
        fixture_plan(3, &RELAYS, Policy::All),
        fixture_plan(3, &RELAYS, Policy::Any),
    ];
    err_code(
        C,
        "batch conflicting with itself",
        s.enqueue_many(inner, 20).await,
        "plan_conflict",
    );
    let invalid = vec![
        fixture_plan(4, &RELAYS, Policy::All),
        fixture_plan(5, &RELAYS, Policy::All).with_id("bad id"),
    ];
    err_code(
        C,
        "batch with invalid plan",
        s.enqueue_many(invalid, 20).await,
        "invalid_item_id",
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        1,
        "failed batches wrote nothing"
    );
    let good = vec![
        fixture_plan(6, &RELAYS, Policy::All),
        fixture_plan(1, &RELAYS, Policy::All),
        fixture_plan(7, &RELAYS, Policy::Any),
        fixture_plan(6, &RELAYS, Policy::All),
    ];
    let out = ok(C, "good batch", s.enqueue_many(good, 30).await);
    let outcomes = |out: &[Enqueued]| out.iter().map(|e| e.outcome).collect::<Vec<_>>();
    let (new, replay) = (EnqueueOutcome::Created, EnqueueOutcome::Replay);
    check_eq!(
        C,
        outcomes(&out),
        vec![new, replay, new, replay],
        "answers in input order"
    );
    check_eq!(
        C,
        out[1].record.created_ms,
        10,
        "replay returns the stored record"
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        3,
        "batch written"
    );
    // Stored ids scattered through a batch, the last row among them (the IndexedDB
    // store learns which rows exist from the requests' errors, in order).
    let mixed = vec![
        fixture_plan(8, &RELAYS, Policy::All),
        fixture_plan(6, &RELAYS, Policy::All),
        fixture_plan(9, &RELAYS, Policy::All),
        fixture_plan(1, &RELAYS, Policy::All),
        fixture_plan(7, &RELAYS, Policy::Any),
    ];
    let out = ok(
        C,
        "batch ending on a stored id",
        s.enqueue_many(mixed, 35).await,
    );
    check_eq!(
        C,
        outcomes(&out),
        vec![new, replay, new, replay, replay],
        "replays found at their own places"
    );
    check_eq!(
        C,
        (
            out[1].record.created_ms,
            out[3].record.created_ms,
            out[4].record.created_ms
        ),
        (30, 10, 30),
        "each replay answers its own stored record"
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        5,
        "only the new rows written"
    );
    let empty = ok(C, "empty batch", s.enqueue_many(Vec::new(), 40).await);
    check!(C, empty.is_empty(), "empty batch answers nothing");
}

/// [`Store::enqueue_many_checked`]: a failed check writes nothing and wins over the
/// batch's own errors; a passed one enqueues as `enqueue_many`; the check runs once.
pub async fn enqueue_many_checked_writes_nothing_when_the_check_fails<S: Store>(s: &S) {
    const C: &str = "enqueue_many_checked_writes_nothing_when_the_check_fails";
    ok(
        C,
        "seed",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 10).await,
    );
    let batches = [
        ("new plans", vec![fixture_plan(2, &RELAYS, Policy::All)]),
        (
            "new plans and a replay",
            vec![
                fixture_plan(3, &RELAYS, Policy::All),
                fixture_plan(1, &RELAYS, Policy::All),
            ],
        ),
        (
            "a stored conflict",
            vec![
                fixture_plan(4, &RELAYS, Policy::All),
                fixture_plan(1, &RELAYS, Policy::Any),
            ],
        ),
        (
            "a conflict within the batch",
            vec![
                fixture_plan(5, &RELAYS, Policy::All),
                fixture_plan(5, &RELAYS, Policy::Any),
            ],
        ),
    ];
    for (what, plans) in batches {
        let mut calls = 0;
        let got = s
            .enqueue_many_checked(
                plans,
                20,
                &mut || {
                    calls += 1;
                    false
                },
                None,
            )
            .await;
        check!(C, matches!(got, Ok(None)), "{what}: refused, got {got:?}");
        check_eq!(C, calls, 1, "{what}: the check ran once");
        check_eq!(
            C,
            ok(C, "status", s.status().await).total(),
            1,
            "{what}: nothing written"
        );
    }
    for n in 2..=5 {
        check!(
            C,
            ok(C, "get", s.get(&fixture_event(n).id).await).is_none(),
            "{n} not written"
        );
    }
    let mut calls = 0;
    let got = s
        .enqueue_many_checked(
            vec![
                fixture_plan(2, &RELAYS, Policy::All),
                fixture_plan(1, &RELAYS, Policy::All),
            ],
            30,
            &mut || {
                calls += 1;
                true
            },
            None,
        )
        .await;
    let Some(got) = ok(C, "checked batch", got) else {
        panic!("store conformance case `{C}`: a passed check was refused");
    };
    let outcomes: Vec<EnqueueOutcome> = got.iter().map(|e| e.outcome).collect();
    check_eq!(
        C,
        outcomes,
        vec![EnqueueOutcome::Created, EnqueueOutcome::Replay],
        "a passed check enqueues"
    );
    check_eq!(C, calls, 1, "the check ran once");
    let mut calls = 0;
    let conflict = s
        .enqueue_many_checked(
            vec![fixture_plan(1, &RELAYS, Policy::Any)],
            40,
            &mut || {
                calls += 1;
                true
            },
            None,
        )
        .await;
    err_code(
        C,
        "passed check, stored conflict",
        conflict,
        "plan_conflict",
    );
    check_eq!(C, calls, 1, "the check ran once before the conflict");
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        2,
        "only the passed batch was written"
    );
}

/// [`Store::enqueue_many_checked`]'s `progress`: every report is `(done, 40)` of the 40
/// plans, `done` below 40 and increasing (a store may report nothing); the batch is then
/// stored whole.
pub async fn enqueue_many_reports_progress<S: Store>(s: &S) {
    const C: &str = "enqueue_many_reports_progress";
    let reports = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = reports.clone();
    let progress: crate::store::Progress = std::rc::Rc::new(move |done, total| {
        seen.borrow_mut().push((done, total));
    });
    let plans: Vec<Plan> = (1..=40)
        .map(|n| fixture_plan(n, &RELAYS, Policy::All))
        .collect();
    let got = s
        .enqueue_many_checked(plans, 10, &mut || true, Some(progress))
        .await;
    check!(
        C,
        matches!(&got, Ok(Some(answers)) if answers.len() == 40),
        "40 answers, got {got:?}"
    );
    let reports = reports.borrow().clone();
    for (i, &(done, total)) in reports.iter().enumerate() {
        check_eq!(C, total, 40, "report #{i}: total");
        check!(C, done < total, "report #{i}: {done} done of {total}");
        if i > 0 {
            check!(
                C,
                done > reports[i - 1].0,
                "report #{i}: {reports:?} increasing"
            );
        }
    }
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        40,
        "the batch is stored whole"
    );
}
