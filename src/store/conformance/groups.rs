//! Groups ([`crate::core::group`]): enqueued whole or not at all, each member found
//! under its member id with its place, and delivered, refused, cancelled, retried and
//! purged as a record of its own. (The group's status, `cancelGroup` and `retryGroup`
//! are the package's JavaScript over `get`, `cancel` and `retry`: `js/groups.js`,
//! tested in `tests/ts/smoke.mjs` and the e2e tier.)

use super::*;
use crate::core::group::group_plans;

/// What is stored under the member ids `dm:0`, `dm:1`, `dm:2`: each member's stage and
/// satisfaction, `None` where nothing is; a record there must be that member.
async fn members<S: Store>(s: &S, c: &str) -> Vec<Option<(Stage, Satisfaction)>> {
    let mut out = Vec::new();
    for i in 0..3u32 {
        let id = format!("dm:{i}");
        let r = ok(c, "get", s.get(&id).await);
        if let Some(r) = &r {
            let place = r.group().map(|g| (g.id.to_owned(), g.index, g.size));
            check_eq!(c, place, Some(("dm".to_owned(), i, 3)), "{id}'s place");
        }
        out.push(r.map(|r| (r.stage, r.satisfaction)));
    }
    out
}

/// A group is enqueued whole or not at all, replays whole, and each member is found
/// from the group id as it is delivered, refused, cancelled, retried and purged.
pub async fn groups_enqueue_whole_each_member_stored<S: Store>(s: &S) {
    const C: &str = "groups_enqueue_whole_each_member_stored";
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
    // `g:1` is no member of a group `g`.
    let seed = must_get(C, s, "g:1").await;
    check!(C, seed.group().is_none(), "g:1 has no place in a group");

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
    let pending = Some((Stage::Pending, Satisfaction::Pending));
    check_eq!(
        C,
        members(s, C).await,
        vec![pending; 3],
        "3 members sending"
    );
    for i in 0..3u32 {
        let m = must_get(C, s, &format!("dm:{i}")).await;
        check_eq!(C, m.event.id, id_of(i + 1), "member {i}'s own event");
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
    let delivered = Some((Stage::Satisfied, Satisfaction::Satisfied));
    let refused = Some((Stage::Exhausted, Satisfaction::Exhausted));
    check_eq!(
        C,
        members(s, C).await,
        vec![delivered, refused, pending],
        "1 delivered, 1 failed, 1 open"
    );

    // Cancel and retry of members show in the group's status.
    let r2 = must_get(C, s, "dm:2").await;
    ok(C, "cancel", s.cancel(&r2.id, 80).await);
    let cancelled = Some((Stage::Cancelled, Satisfaction::Pending));
    check_eq!(
        C,
        members(s, C).await,
        vec![delivered, refused, cancelled],
        "1 delivered, 2 failed"
    );
    ok(C, "retry", s.retry("dm:1", 90).await);
    check_eq!(
        C,
        members(s, C).await[1],
        Some((Stage::Retryable, Satisfaction::Pending)),
        "dm:1 open again"
    );

    // A purged member is missing; the group is found from the others until all are gone.
    let r1 = must_get(C, s, "dm:1").await;
    ok(C, "cancel", s.cancel(&r1.id, 100).await);
    check_eq!(
        C,
        ok(C, "purge", s.purge(95).await),
        2,
        "dm:0 and dm:2 purged"
    );
    check_eq!(
        C,
        members(s, C).await,
        vec![None, Some((Stage::Cancelled, Satisfaction::Pending)), None],
        "2 missing, 1 failed: the group is found from member 1"
    );
    ok(C, "purge", s.purge(1_000).await);
    check_eq!(C, members(s, C).await, vec![None; 3], "all purged: gone");
}
