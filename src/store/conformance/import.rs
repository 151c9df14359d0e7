//! Import: records brought in as they are.

use super::*;

/// The plans of `records` as an import brings them in ([`crate::core::import::plan_for`]).
pub(super) fn imports(case: &str, records: &[Record], now: u64) -> Vec<Plan> {
    records
        .iter()
        .map(|r| {
            ok(
                case,
                "plan_for",
                crate::core::import::plan_for(r.clone(), now),
            )
        })
        .collect()
}

/// An import (records of another outbox, enqueued with their state): new records are
/// stored as they were there (a leased one unleased, its attempt count kept), the same
/// records again replay and change nothing, another plan under an id conflicts and
/// writes nothing, and the queue's Nostr rules hold across the two outboxes.
pub async fn import_brings_records_as_they_are<S: Store>(s: &S) {
    const C: &str = "import_brings_records_as_they_are";
    let other = crate::store::MemoryStore::in_memory();
    let profile = |n, who, at| nostr_plan(nostr_event(n, who, 0, at, "", &[]));
    // There: a note leased by a flusher, a delivered note, Alice's profile v2 (waiting),
    // Bob's old profile, a cancelled note.
    ok(
        C,
        "enqueue there",
        other
            .enqueue_many(
                vec![
                    fixture_plan(1, &RELAYS, Policy::All),
                    fixture_plan(2, &RELAYS, Policy::Any).with_stop_when_satisfied(true),
                    profile(3, ALICE, 200),
                    profile(4, BOB, 50),
                    fixture_plan(5, &RELAYS, Policy::All),
                ],
                1_000,
            )
            .await,
    );
    ok(C, "cancel there", other.cancel(&id_of(5), 1_001).await);
    let claimed = ok(
        C,
        "claim there",
        other
            .claim(&fixture_claim("there", "t1", 2, 60_000), 1_002)
            .await,
    );
    check_eq!(C, claimed.len(), 2, "notes 1 and 2 are leased there");
    let two = claimed.iter().find(|r| r.id == id_of(2)).cloned();
    let Some(two) = two else {
        panic!("store conformance case `{C}`: note 2 was not claimed")
    };
    ok(
        C,
        "deliver 2 there",
        other
            .complete_attempt(
                &completion(&two, "t1", vec![answer(RELAYS[0], Outcome::Accepted)]),
                &fixture_retry(),
                1_003,
            )
            .await,
    );
    let exported = ok(
        C,
        "list there",
        other
            .list(&ListQuery {
                limit: 100,
                ..ListQuery::default()
            })
            .await,
    );
    check_eq!(C, exported.len(), 5, "five records there");
    // Here: Alice's profile v1 and Bob's newer profile wait.
    ok(
        C,
        "enqueue here",
        s.enqueue_many(vec![profile(6, ALICE, 100), profile(7, BOB, 300)], 2_000)
            .await,
    );
    let answers = ok(
        C,
        "import",
        s.enqueue_many(imports(C, &exported, 3_000), 3_000).await,
    );
    let outcome = |n: u32| {
        answers
            .iter()
            .find(|a| a.record.id == id_of(n))
            .map(|a| a.outcome)
    };
    for n in [1, 2, 3, 5] {
        check_eq!(
            C,
            outcome(n),
            Some(EnqueueOutcome::Created),
            "record {n} is created"
        );
    }
    check_eq!(
        C,
        outcome(4),
        Some(EnqueueOutcome::Superseded),
        "Bob's old profile arrives superseded by the newer one here"
    );
    let alice = answers
        .iter()
        .find(|a| a.record.id == id_of(3))
        .map(|a| a.withdrawn.iter().map(|r| r.id.clone()).collect::<Vec<_>>());
    check_eq!(
        C,
        alice,
        Some(vec![id_of(6)]),
        "Alice's v2 withdraws v1 here"
    );
    check_superseded(
        C,
        &must_get(C, s, &id_of(6)).await,
        StopReason::Superseded,
        3,
    );
    // The leased note arrives unleased and claimable at once, for its first attempt.
    let one = must_get(C, s, &id_of(1)).await;
    check_eq!(
        C,
        (one.stage, one.lease.is_none(), one.attempts, one.due_ms),
        (Stage::Pending, true, 0, Some(3_000)),
        "the leased note arrives unleased"
    );
    // The others arrive as they were there.
    for n in [2, 5] {
        let there = exported.iter().find(|r| r.id == id_of(n));
        check_eq!(
            C,
            Some(&must_get(C, s, &id_of(n)).await),
            there,
            "record {n} arrives as it was"
        );
    }
    let before = ok(
        C,
        "list here",
        s.list(&ListQuery {
            limit: 100,
            ..ListQuery::default()
        })
        .await,
    );
    // The same records again: replays, nothing written.
    let again = ok(
        C,
        "import again",
        s.enqueue_many(imports(C, &exported, 4_000), 4_000).await,
    );
    check!(
        C,
        again.iter().all(|a| a.outcome == EnqueueOutcome::Replay),
        "a second import replays: {again:?}"
    );
    // Another plan under an id here: a conflict, nothing written.
    let changed = other_plan(C, &exported[0]).await;
    let conflict = s
        .enqueue_many(imports(C, &[exported[1].clone(), changed], 5_000), 5_000)
        .await;
    err_code(C, "import of another plan", conflict, "plan_conflict");
    let after = ok(
        C,
        "list here",
        s.list(&ListQuery {
            limit: 100,
            ..ListQuery::default()
        })
        .await,
    );
    check_eq!(
        C,
        after,
        before,
        "replays and a refused import change nothing"
    );
    let claimed = ok(
        C,
        "claim here",
        s.claim(&fixture_claim("here", "h1", 10, 60_000), 6_000)
            .await,
    );
    let one = claimed
        .iter()
        .find(|r| r.id == id_of(1))
        .and_then(|r| r.lease.as_ref())
        .map(|l| l.attempt);
    check_eq!(
        C,
        one,
        Some(1),
        "the imported note is claimed here for attempt 1"
    );
    check!(
        C,
        !claimed
            .iter()
            .any(|r| [id_of(2), id_of(4), id_of(5), id_of(6)].contains(&r.id)),
        "settled, superseded and cancelled records are not claimed"
    );
}

/// A record with `r`'s id and event but another plan (two targets), as another outbox
/// would hold it.
pub(super) async fn other_plan(case: &str, r: &Record) -> Record {
    let store = crate::store::MemoryStore::in_memory();
    let plan = Plan::new(
        r.event.clone(),
        RELAYS[..2].iter().map(|t| t.to_string()).collect(),
        Policy::All,
    )
    .with_id(r.id.clone());
    ok(
        case,
        "enqueue another plan",
        store.enqueue(plan, 1_000).await,
    )
    .record
}
