//! The Nostr rules: replaceable and addressable versions, deletions, batches in order,
//! ephemeral and expired events, related records.

use super::*;

/// Checks `r` ended `superseded` for `reason` by the event `by`, kept its evidence, and
/// is no longer claimable.
pub(super) fn check_superseded(case: &str, r: &Record, reason: StopReason, by: u32) {
    check_eq!(
        case,
        (r.stage, r.reason, r.superseded_by.clone()),
        (Stage::Superseded, Some(reason), Some(id_of(by))),
        "`{}` superseded by {by}",
        r.id
    );
    check!(
        case,
        r.lease.is_none() && r.due_ms.is_none(),
        "`{}` has no lease and is never due",
        r.id
    );
}

/// NIP-01 replaceable events: the newest version (higher `created_at`) supersedes the
/// older ones that may still be sent (pending, leased, retryable, exhausted), keeping
/// their evidence; an older version arriving late is stored already superseded; other
/// authors, kinds and satisfied versions are untouched; `retry` and `cancel` of a
/// superseded record are refused; a result under a superseded lease is a lost claim.
pub async fn replaceable_versions_supersede<S: Store>(s: &S) {
    const C: &str = "replaceable_versions_supersede";
    let profile = |n, at| nostr_plan(nostr_event(n, ALICE, 0, at, "", &[]));
    // v1 is attempted: relay A accepts, the others time out (retryable).
    ok(C, "enqueue v1", s.enqueue(profile(1, 100), 1_000).await);
    let leased = claim_one(C, s, "l1", 1_000, &id_of(1)).await;
    let done = ok(
        C,
        "complete v1",
        s.complete_attempt(
            &completion(
                &leased,
                "l1",
                vec![
                    answer(RELAYS[0], Outcome::Accepted),
                    answer(RELAYS[1], Outcome::Timeout),
                    answer(RELAYS[2], Outcome::Timeout),
                ],
            ),
            &fixture_retry(),
            1_001,
        )
        .await,
    );
    check_eq!(C, done.stage, Stage::Retryable, "v1 waits for B and C");
    // Someone else's profile and a note are not touched by Alice's versions.
    ok(
        C,
        "enqueue bob",
        s.enqueue(nostr_plan(nostr_event(50, BOB, 0, 50, "", &[])), 1_002)
            .await,
    );
    ok(
        C,
        "enqueue note",
        s.enqueue(nostr_plan(nostr_event(51, ALICE, 1, 50, "", &[])), 1_002)
            .await,
    );
    let v2 = ok(C, "enqueue v2", s.enqueue(profile(2, 200), 1_010).await);
    check_eq!(C, v2.outcome, EnqueueOutcome::Created, "v2 is created");
    check_eq!(
        C,
        v2.withdrawn
            .iter()
            .map(|r| r.id.clone())
            .collect::<Vec<_>>(),
        vec![id_of(1)],
        "v2 withdraws v1 only"
    );
    let v1 = must_get(C, s, &id_of(1)).await;
    check_superseded(C, &v1, StopReason::Superseded, 2);
    check_eq!(C, &v1, &v2.withdrawn[0], "the answer is what is stored");
    check_eq!(
        C,
        v1.evidence,
        done.evidence,
        "v1 keeps the evidence of its attempt"
    );
    // A claim takes v2, Bob's profile and the note; never v1.
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l2", 256, 10_000), 100_000)
            .await,
    );
    let mut ids: Vec<String> = claimed.iter().map(|r| r.id.clone()).collect();
    ids.sort();
    check_eq!(
        C,
        ids,
        vec![id_of(2), id_of(50), id_of(51)],
        "only the newest version is claimed"
    );
    // An older version enqueued late: stored, superseded at once, never claimable.
    let late = ok(C, "enqueue v0", s.enqueue(profile(3, 150), 100_001).await);
    check_eq!(
        C,
        late.outcome,
        EnqueueOutcome::Superseded,
        "an older version is superseded on arrival"
    );
    check_superseded(C, &late.record, StopReason::Superseded, 2);
    check_eq!(C, late.record.revision, 1, "born superseded: revision 1");
    check!(
        C,
        late.withdrawn.is_empty(),
        "the late version withdraws nothing"
    );
    let replay = ok(C, "replay v0", s.enqueue(profile(3, 150), 100_002).await);
    check_eq!(C, replay.outcome, EnqueueOutcome::Replay, "replay of v0");
    // v3 while v2 is leased: v2's lease becomes a lost claim.
    let v2_leased = claimed.iter().find(|r| r.id == id_of(2)).expect("v2");
    ok(C, "enqueue v3", s.enqueue(profile(4, 300), 100_003).await);
    check_superseded(
        C,
        &must_get(C, s, &id_of(2)).await,
        StopReason::Superseded,
        4,
    );
    err_code(
        C,
        "complete under a superseded lease",
        s.complete_attempt(
            &completion(v2_leased, "l2", vec![answer(RELAYS[0], Outcome::Accepted)]),
            &fixture_retry(),
            100_004,
        )
        .await,
        "lease_expired",
    );
    err_code(
        C,
        "retry superseded",
        s.retry(&id_of(1), 100_005).await,
        "not_retryable",
    );
    err_code(
        C,
        "cancel superseded",
        s.cancel(&id_of(1), 100_005).await,
        "already_terminal",
    );
    let counts = ok(C, "status", s.status().await);
    check_eq!(C, counts.superseded, 3, "v1, v2 and the late v0");
    check_eq!(C, counts.total(), 6, "every record is kept");
    let page = ok(
        C,
        "list superseded",
        s.list(&ListQuery {
            stage: Some(Stage::Superseded),
            limit: 10,
            after: None,
            ..Default::default()
        })
        .await,
    );
    check_eq!(C, page.len(), 3, "list by stage superseded");
    // An exhausted version is superseded too (so `retry` cannot send it again).
    let mut exhausted_plan = profile(5, 400);
    exhausted_plan.max_attempts = 1;
    ok(C, "enqueue v4", s.enqueue(exhausted_plan, 200_000).await);
    let v4 = claim_one(C, s, "l3", 200_000, &id_of(5)).await;
    let v4 = ok(
        C,
        "exhaust v4",
        s.complete_attempt(
            &completion(&v4, "l3", vec![answer(RELAYS[0], Outcome::Timeout)]),
            &fixture_retry(),
            200_001,
        )
        .await,
    );
    check_eq!(C, v4.stage, Stage::Exhausted, "v4 exhausted");
    ok(C, "enqueue v5", s.enqueue(profile(6, 500), 200_002).await);
    check_superseded(
        C,
        &must_get(C, s, &id_of(5)).await,
        StopReason::Superseded,
        6,
    );
    // A satisfied version stays satisfied, and still outranks older late versions.
    let v5 = claim_one(C, s, "l4", 200_003, &id_of(6)).await;
    let all = RELAYS
        .iter()
        .map(|r| answer(r, Outcome::Accepted))
        .collect();
    let v5 = ok(
        C,
        "deliver v5",
        s.complete_attempt(&completion(&v5, "l4", all), &fixture_retry(), 200_004)
            .await,
    );
    check_eq!(C, v5.stage, Stage::Satisfied, "v5 delivered");
    let late = ok(C, "enqueue late", s.enqueue(profile(7, 450), 200_005).await);
    check_eq!(
        C,
        late.outcome,
        EnqueueOutcome::Superseded,
        "older than a delivered version"
    );
    check_superseded(C, &late.record, StopReason::Superseded, 6);
    ok(C, "enqueue v6", s.enqueue(profile(8, 600), 200_006).await);
    check_eq!(
        C,
        must_get(C, s, &id_of(6)).await.stage,
        Stage::Satisfied,
        "a delivered version is never withdrawn"
    );
}

/// NIP-01 addressable events: one slot per `(pubkey, kind, d)`; on equal `created_at`
/// the lower id wins; a cancelled newer version does not outrank an older one.
pub async fn addressable_slots_and_ties<S: Store>(s: &S) {
    const C: &str = "addressable_slots_and_ties";
    let article = |n, at, d| nostr_plan(nostr_event(n, ALICE, 30_023, at, d, &[]));
    ok(C, "enqueue a", s.enqueue(article(20, 100, "a"), 0).await);
    ok(C, "enqueue b", s.enqueue(article(21, 100, "b"), 0).await);
    let newer_b = ok(C, "enqueue b2", s.enqueue(article(22, 101, "b"), 1).await);
    check_eq!(
        C,
        newer_b.withdrawn.len(),
        1,
        "another d tag is another slot"
    );
    check_eq!(
        C,
        must_get(C, s, &id_of(20)).await.stage,
        Stage::Pending,
        "slot `a` untouched"
    );
    // A tie on created_at: the lower id (n = 10 < 20) wins.
    let tie = ok(C, "enqueue tie", s.enqueue(article(10, 100, "a"), 2).await);
    check_eq!(C, tie.outcome, EnqueueOutcome::Created, "lower id wins");
    check_superseded(
        C,
        &must_get(C, s, &id_of(20)).await,
        StopReason::Superseded,
        10,
    );
    let loser = ok(C, "enqueue tie", s.enqueue(article(30, 100, "a"), 3).await);
    check_eq!(
        C,
        loser.outcome,
        EnqueueOutcome::Superseded,
        "higher id loses the tie"
    );
    // A cancelled version does not supersede what comes after it.
    ok(C, "cancel", s.cancel(&id_of(22), 4).await);
    let older = ok(C, "enqueue", s.enqueue(article(23, 101, "b"), 5).await);
    check_eq!(
        C,
        older.outcome,
        EnqueueOutcome::Created,
        "a cancelled version outranks nothing"
    );
}

/// NIP-09: a deletion withdraws its author's records that it names and that may still
/// be sent (`e` by id; `a` for versions no newer than the deletion), never a deletion,
/// another author's event, or a delivered one; it is itself sent.
pub async fn deletions_withdraw_what_they_name<S: Store>(s: &S) {
    const C: &str = "deletions_withdraw_what_they_name";
    let note = |n, who| nostr_plan(nostr_event(n, who, 1, 100, "", &[]));
    ok(C, "note", s.enqueue(note(1, ALICE), 0).await);
    ok(C, "bob's note", s.enqueue(note(2, BOB), 0).await);
    ok(C, "note 3", s.enqueue(note(3, ALICE), 0).await);
    // Under item ids of the app's: note 8 (named by the deletion by its event id), and
    // note 10 under the item id that is note 11's event id (named; note 10 is not).
    let custom = note(8, ALICE).with_id("custom-8");
    ok(C, "custom note", s.enqueue(custom, 0).await);
    let decoy = note(10, ALICE).with_id(id_of(11));
    ok(C, "decoy note", s.enqueue(decoy, 0).await);
    // Note 3 is delivered before the deletion arrives.
    let r = claim_one(C, s, "l", 1, &id_of(3)).await;
    let all = RELAYS
        .iter()
        .map(|t| answer(t, Outcome::Accepted))
        .collect();
    ok(
        C,
        "deliver 3",
        s.complete_attempt(&completion(&r, "l", all), &fixture_retry(), 2)
            .await,
    );
    ok(
        C,
        "article old",
        s.enqueue(nostr_plan(nostr_event(4, ALICE, 30_023, 100, "x", &[])), 3)
            .await,
    );
    let earlier_deletion = nostr_event(
        5,
        ALICE,
        5,
        150,
        "",
        &[
            &id_of(1),
            &id_of(2),
            &id_of(3),
            &id_of(8),
            &id_of(11),
            &format!("30023:{ALICE}:y"),
        ],
    );
    ok(
        C,
        "first deletion",
        s.enqueue(nostr_plan(earlier_deletion), 4).await,
    );
    check_superseded(C, &must_get(C, s, &id_of(1)).await, StopReason::Deleted, 5);
    check_superseded(C, &must_get(C, s, "custom-8").await, StopReason::Deleted, 5);
    check!(
        C,
        must_get(C, s, &id_of(11)).await.stage.may_send(),
        "a record is found by its event's id, not by an item id that looks like one"
    );
    check!(
        C,
        must_get(C, s, &id_of(2)).await.stage.may_send(),
        "another author's note is not deleted"
    );
    check_eq!(
        C,
        must_get(C, s, &id_of(3)).await.stage,
        Stage::Satisfied,
        "a delivered note stays delivered"
    );
    // `a` tags: versions up to the deletion's created_at only.
    let address = format!("30023:{ALICE}:x");
    let too_early = nostr_event(6, ALICE, 5, 50, "", &[&address]);
    let r = ok(
        C,
        "early deletion",
        s.enqueue(nostr_plan(too_early), 5).await,
    );
    check!(
        C,
        r.withdrawn.is_empty(),
        "a version newer than the deletion stays"
    );
    let deletion = nostr_event(7, ALICE, 5, 200, "", &[&address, &id_of(5), &id_of(6)]);
    let r = ok(C, "deletion", s.enqueue(nostr_plan(deletion), 6).await);
    check_eq!(
        C,
        r.withdrawn.iter().map(|w| w.id.clone()).collect::<Vec<_>>(),
        vec![id_of(4)],
        "the article only: deletions are not deleted"
    );
    check_superseded(C, &must_get(C, s, &id_of(4)).await, StopReason::Deleted, 7);
    // The deletions themselves are sent (Bob's note once its first lease is over).
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l2", 256, 10_000), 20_000)
            .await,
    );
    let mut ids: Vec<String> = claimed.iter().map(|r| r.id.clone()).collect();
    ids.sort();
    check_eq!(
        C,
        ids,
        vec![id_of(2), id_of(5), id_of(6), id_of(7), id_of(11)],
        "deletions, Bob's note and the decoy go out"
    );
}

/// NIP-62: a request to vanish withdraws its author's records that may still be sent,
/// dated no later than it, whose every target it names (`ALL_RELAYS`: every relay),
/// in its own batch too; never another author's, a newer one, one with a target it
/// does not name, a delivered one, or a request to vanish; it is itself sent.
pub async fn requests_to_vanish_withdraw_the_authors_queue<S: Store>(s: &S) {
    const C: &str = "requests_to_vanish_withdraw_the_authors_queue";
    let note = |n, who, at| nostr_plan(nostr_event(n, who, 1, at, "", &[]));
    let vanish = |n, at, relays: &[&str]| {
        let mut e = nostr_event(n, ALICE, semantics::VANISH_KIND, at, "", &[]);
        if let Some(m) = e.meta.as_mut() {
            m.vanish_relays = relays.iter().map(|r| r.to_string()).collect();
        }
        nostr_plan(e)
    };
    ok(C, "note 1", s.enqueue(note(1, ALICE, 100), 0).await);
    ok(C, "bob's note", s.enqueue(note(2, BOB, 100), 0).await);
    ok(C, "a newer note", s.enqueue(note(3, ALICE, 300), 0).await);
    let to_a = Plan::new(
        nostr_event(4, ALICE, 1, 100, "", &[]),
        vec![RELAYS[0].to_string()],
        Policy::All,
    );
    ok(C, "note 4, to relay a only", s.enqueue(to_a, 0).await);
    ok(C, "note 5", s.enqueue(note(5, ALICE, 100), 0).await);
    // Note 5 is delivered before any request to vanish.
    let r = claim_one(C, s, "l", 1, &id_of(5)).await;
    let all = RELAYS
        .iter()
        .map(|t| answer(t, Outcome::Accepted))
        .collect();
    ok(
        C,
        "deliver 5",
        s.complete_attempt(&completion(&r, "l", all), &fixture_retry(), 2)
            .await,
    );
    // From relay a: note 4 only (note 1 also goes to b and c, which keep it).
    let r = ok(
        C,
        "vanish from a",
        s.enqueue(vanish(6, 200, &[RELAYS[0]]), 3).await,
    );
    check_eq!(
        C,
        r.withdrawn.iter().map(|w| w.id.clone()).collect::<Vec<_>>(),
        vec![id_of(4)],
        "only the record whose every relay is named"
    );
    check_superseded(C, &must_get(C, s, &id_of(4)).await, StopReason::Vanished, 6);
    // From every relay, in a batch after a note of the same batch.
    let answers = ok(
        C,
        "batch",
        s.enqueue_many(
            vec![
                note(7, ALICE, 150),
                vanish(8, 250, &[semantics::ALL_RELAYS]),
            ],
            4,
        )
        .await,
    );
    let mut withdrawn: Vec<String> = answers[1].withdrawn.iter().map(|w| w.id.clone()).collect();
    withdrawn.sort();
    check_eq!(
        C,
        withdrawn,
        vec![id_of(1), id_of(7)],
        "the author's older records, its own batch's too; not the request to vanish 6"
    );
    check_superseded(C, &must_get(C, s, &id_of(1)).await, StopReason::Vanished, 8);
    check_superseded(C, &must_get(C, s, &id_of(7)).await, StopReason::Vanished, 8);
    for (n, why) in [
        (2, "another author's note"),
        (3, "a note dated after the request"),
        (6, "a request to vanish"),
        (8, "the request itself"),
    ] {
        check!(
            C,
            must_get(C, s, &id_of(n)).await.stage.may_send(),
            "{why} stays queued"
        );
    }
    check_eq!(
        C,
        must_get(C, s, &id_of(5)).await.stage,
        Stage::Satisfied,
        "a delivered note stays delivered"
    );
}

/// `enqueue_many` applies the rules in order inside the batch, all or nothing.
pub async fn batches_apply_the_rules_in_order<S: Store>(s: &S) {
    const C: &str = "batches_apply_the_rules_in_order";
    let contacts = |n, at| nostr_plan(nostr_event(n, ALICE, 3, at, "", &[]));
    ok(C, "stored v1", s.enqueue(contacts(1, 10), 0).await);
    let answers = ok(
        C,
        "batch",
        s.enqueue_many(
            vec![
                contacts(2, 20),
                contacts(3, 15),
                nostr_plan(nostr_event(4, ALICE, 1, 30, "", &[])),
                contacts(5, 30),
                nostr_plan(nostr_event(6, ALICE, 5, 40, "", &[&id_of(4)])),
            ],
            1,
        )
        .await,
    );
    let outcomes: Vec<EnqueueOutcome> = answers.iter().map(|a| a.outcome).collect();
    check_eq!(
        C,
        outcomes,
        vec![
            EnqueueOutcome::Created,
            EnqueueOutcome::Superseded,
            EnqueueOutcome::Created,
            EnqueueOutcome::Created,
            EnqueueOutcome::Created,
        ],
        "in order"
    );
    check_eq!(
        C,
        answers[0]
            .withdrawn
            .iter()
            .map(|r| r.id.clone())
            .collect::<Vec<_>>(),
        vec![id_of(1)],
        "v2 withdraws the stored v1"
    );
    check_eq!(
        C,
        answers[3]
            .withdrawn
            .iter()
            .map(|r| r.id.clone())
            .collect::<Vec<_>>(),
        vec![id_of(2)],
        "v5 withdraws v2 of the same batch"
    );
    check_eq!(
        C,
        answers[4]
            .withdrawn
            .iter()
            .map(|r| r.id.clone())
            .collect::<Vec<_>>(),
        vec![id_of(4)],
        "the deletion withdraws the note of the same batch"
    );
    for (n, by, reason) in [
        (1, 2, StopReason::Superseded),
        (2, 5, StopReason::Superseded),
        (3, 2, StopReason::Superseded),
        (4, 6, StopReason::Deleted),
    ] {
        check_superseded(C, &must_get(C, s, &id_of(n)).await, reason, by);
    }
    check_eq!(
        C,
        must_get(C, s, &id_of(5)).await.stage,
        Stage::Pending,
        "the newest waits"
    );
    // A batch that fails writes nothing, withdrawals included.
    let mut bad = contacts(8, 99);
    bad.targets.clear();
    err_code(
        C,
        "failing batch",
        s.enqueue_many(vec![contacts(7, 90), bad], 2).await,
        "invalid_targets",
    );
    check_eq!(
        C,
        must_get(C, s, &id_of(5)).await.stage,
        Stage::Pending,
        "nothing withdrawn by a failed batch"
    );
    check!(
        C,
        ok(C, "get", s.get(&id_of(7)).await).is_none(),
        "nothing created by a failed batch"
    );
}

/// Ephemeral kinds get a short deadline; an event whose NIP-40 expiration has passed
/// is refused with `event_expired` and writes nothing.
pub async fn ephemeral_and_expired_events<S: Store>(s: &S) {
    const C: &str = "ephemeral_and_expired_events";
    let ephemeral = nostr_plan(nostr_event(1, ALICE, 20_001, 5, "", &[]));
    let r = ok(C, "ephemeral", s.enqueue(ephemeral, 1_000).await);
    check_eq!(
        C,
        r.record.effective_deadline_ms(),
        Some(1_000 + EPHEMERAL_DEADLINE_MS),
        "default ephemeral deadline"
    );
    let own = nostr_plan(nostr_event(2, ALICE, 20_001, 5, "", &[])).with_deadline_ms(Some(99_000));
    let r = ok(C, "ephemeral with a deadline", s.enqueue(own, 1_000).await);
    check_eq!(
        C,
        r.record.deadline_ms,
        Some(99_000),
        "the plan's deadline wins"
    );
    let got = ok(
        C,
        "claim late",
        s.claim(
            &fixture_claim("o", "l", 10, 100),
            1_000 + EPHEMERAL_DEADLINE_MS,
        )
        .await,
    );
    let late = got.iter().find(|r| r.id == id_of(1)).expect("returned");
    check_eq!(
        C,
        (late.stage, late.reason),
        (Stage::Exhausted, Some(StopReason::Expired)),
        "not sent after its deadline"
    );
    // NIP-40: already expired (expiration 5 s, now 5 s) → refused, nothing stored.
    let mut event = fixture_event(3);
    event.expiration = Some(5);
    let expired = Plan::new(event, vec![RELAYS[0].into()], Policy::All);
    err_code(
        C,
        "expired",
        s.enqueue(expired.clone(), 5_000).await,
        "event_expired",
    );
    err_code(
        C,
        "expired in a batch",
        s.enqueue_many(
            vec![fixture_plan(4, &RELAYS, Policy::All), expired.clone()],
            5_000,
        )
        .await,
        "event_expired",
    );
    check!(
        C,
        ok(C, "get", s.get(&fixture_event(4).id).await).is_none(),
        "a batch with an expired event writes nothing"
    );
    let r = ok(C, "not yet expired", s.enqueue(expired, 4_999).await);
    check_eq!(
        C,
        r.record.effective_deadline_ms(),
        Some(5_000),
        "deadline = expiration"
    );
}

/// `related` finds records by event id and every stored version of an address, and
/// their accepted relays are where a deletion should go.
pub async fn related_finds_versions_and_accepting_relays<S: Store>(s: &S) {
    const C: &str = "related_finds_versions_and_accepting_relays";
    ok(
        C,
        "note",
        s.enqueue(nostr_plan(nostr_event(1, ALICE, 1, 10, "", &[])), 0)
            .await,
    );
    ok(
        C,
        "v1",
        s.enqueue(nostr_plan(nostr_event(2, ALICE, 30_000, 10, "f", &[])), 0)
            .await,
    );
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l", 10, 10_000), 1).await,
    );
    for (n, relay) in [(1, RELAYS[0]), (2, RELAYS[1])] {
        let r = claimed.iter().find(|r| r.id == id_of(n)).expect("claimed");
        ok(
            C,
            "complete",
            s.complete_attempt(
                &completion(r, "l", vec![answer(relay, Outcome::Accepted)]),
                &fixture_retry(),
                2,
            )
            .await,
        );
    }
    ok(
        C,
        "v2",
        s.enqueue(nostr_plan(nostr_event(3, ALICE, 30_000, 20, "f", &[])), 3)
            .await,
    );
    let lookups = Lookups {
        slots: vec![format!("30000:{ALICE}:f")],
        event_ids: vec![id_of(1)],
        live: false,
    };
    let mut found: Vec<String> = ok(C, "related", s.related(&lookups).await)
        .into_iter()
        .filter(|r| lookups.matches(r))
        .map(|r| r.id)
        .collect();
    found.sort();
    found.dedup();
    check_eq!(
        C,
        found,
        vec![id_of(1), id_of(2), id_of(3)],
        "the note and both versions"
    );
    let records = ok(C, "related", s.related(&lookups).await);
    check_eq!(
        C,
        semantics::accepted_relays(records.iter()),
        vec![RELAYS[0].to_string(), RELAYS[1].to_string()],
        "where the deletion should go"
    );
}
