//! Groups ([`crate::core::group`], [`crate::store::group`]): enqueued whole or not at
//! all, found from the group id, summed up, cancelled and retried per group.

use super::*;
use crate::core::group::{group_plans, GroupCounts, GroupState};
use crate::store::group;

/// A group's counts as `[delivered, failed, open, missing]`.
fn counts(c: GroupCounts) -> [u32; 4] {
    [c.delivered, c.failed, c.open, c.missing]
}

/// A group is enqueued whole or not at all, replays whole, and is found and summed up
/// from its id as its members are delivered, refused, cancelled, retried and purged.
pub async fn groups_enqueue_whole_status_cancel_retry<S: Store>(s: &S) {
    const C: &str = "groups_enqueue_whole_status_cancel_retry";
    let one = [RELAYS[0]];
    let plans = |first: u32| -> Vec<Plan> {
        (first..first + 3)
            .map(|n| fixture_plan(n, &one, Policy::All))
            .collect()
    };
    // A record of its own under a member's id: the group conflicts with it, and
    // nothing of the group is written.
    ok(
        C,
        "seed",
        s.enqueue(fixture_plan(9, &one, Policy::All).with_id("g:1"), 10)
            .await,
    );
    let g = ok(C, "plans", group_plans("g", plans(1)));
    err_code(
        C,
        "group over a record",
        s.enqueue_many(g, 20).await,
        "plan_conflict",
    );
    let mut bad = ok(C, "plans", group_plans("h", plans(1)));
    bad[2].targets.clear();
    err_code(
        C,
        "group with a bad member",
        s.enqueue_many(bad, 20).await,
        "invalid_targets",
    );
    for id in ["g:0", "g:2", "h:0", "h:1"] {
        check!(
            C,
            ok(C, "get", s.get(id).await).is_none(),
            "{id} not written"
        );
    }
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        1,
        "only the seed"
    );
    // `g:1` is no member of a group `g`: no such group.
    check!(
        C,
        ok(C, "group g", group::status(s, "g").await).is_none(),
        "no group g"
    );
    err_code(
        C,
        "bad group id",
        group::status(s, "bad id").await,
        "invalid_item_id",
    );

    // Enqueued whole; the same group again is a replay.
    for now in [30, 40] {
        let dm = ok(C, "plans", group_plans("dm", plans(1)));
        let out = ok(C, "enqueue group", s.enqueue_many(dm, now).await);
        let want = if now == 30 {
            EnqueueOutcome::Created
        } else {
            EnqueueOutcome::Replay
        };
        check!(
            C,
            out.iter().all(|e| e.outcome == want),
            "{want:?} at {now}"
        );
    }
    let st = ok(C, "group dm", group::status(s, "dm").await).expect("group dm");
    check_eq!(
        C,
        (st.size, st.state()),
        (3, GroupState::Sending),
        "3 members sending"
    );
    check_eq!(C, counts(st.counts), [0, 0, 3, 0], "all open");
    for (i, m) in st.members.iter().enumerate() {
        let m = m.as_ref().expect("member stored");
        check_eq!(C, m.id, format!("dm:{i}"), "member id");
        check_eq!(C, m.event.id, id_of(i as u32 + 1), "member {i}'s own event");
    }
    // The same members under another group id, or a group of other size: conflicts.
    let moved = ok(C, "plans", group_plans("dm", plans(1)[..2].to_vec()));
    err_code(
        C,
        "same ids, other size",
        s.enqueue_many(moved, 50).await,
        "plan_conflict",
    );

    // Member 0 delivered, member 1 refused for good; member 2 handed back, still open.
    let retry = fixture_retry();
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("owner", "l", 256, 10_000), 60).await,
    );
    let leased = |id: &str| match claimed.iter().find(|r| r.id == id) {
        Some(r) => r.clone(),
        None => panic!("store conformance case `{C}`: `{id}` was not claimed"),
    };
    for (id, outcome) in [
        ("dm:0", Outcome::Accepted),
        ("dm:1", Outcome::Rejected(RejectReason::Blocked)),
    ] {
        let done = completion(&leased(id), "l", vec![answer(RELAYS[0], outcome)]);
        ok(C, "complete", s.complete_attempt(&done, &retry, 70).await);
    }
    let r2 = leased("dm:2");
    ok(C, "release", s.release("dm:2", "l", r2.revision, 70).await);
    let st = ok(C, "group dm", group::status(s, "dm").await).expect("group dm");
    check_eq!(
        C,
        counts(st.counts),
        [1, 1, 1, 0],
        "1 delivered, 1 failed, 1 open"
    );
    check_eq!(C, st.state(), GroupState::Sending, "still sending");

    // Cancel and retry of members show in the group's status.
    let r2 = must_get(C, s, "dm:2").await;
    ok(C, "cancel", s.cancel(&r2.id, 80).await);
    let st = ok(C, "group dm", group::status(s, "dm").await).expect("group dm");
    check_eq!(C, counts(st.counts), [1, 2, 0, 0], "1 delivered, 2 failed");
    check_eq!(C, st.state(), GroupState::Partial, "partial");
    ok(C, "retry", s.retry("dm:1", 90).await);
    let st = ok(C, "group dm", group::status(s, "dm").await).expect("group dm");
    check_eq!(C, counts(st.counts), [1, 1, 1, 0], "dm:1 open again");
    check_eq!(C, st.state(), GroupState::Sending, "sending again");

    // A purged member is missing; the group is found from the others until all are gone.
    let r1 = must_get(C, s, "dm:1").await;
    ok(C, "cancel", s.cancel(&r1.id, 100).await);
    check_eq!(
        C,
        ok(C, "purge", s.purge(95).await),
        2,
        "dm:0 and dm:2 purged"
    );
    let st = ok(C, "group dm", group::status(s, "dm").await).expect("group dm");
    check_eq!(C, counts(st.counts), [0, 1, 0, 2], "2 missing, 1 failed");
    check!(
        C,
        st.members[0].is_none() && st.members[1].is_some(),
        "found from member 1"
    );
    check_eq!(
        C,
        st.state(),
        GroupState::Partial,
        "what the purged were is not known"
    );
    ok(C, "purge", s.purge(1_000).await);
    check!(
        C,
        ok(C, "group dm", group::status(s, "dm").await).is_none(),
        "all purged: gone"
    );
    check!(
        C,
        ok(C, "no such group", group::status(s, "nope").await).is_none(),
        "none"
    );
}
