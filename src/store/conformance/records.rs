//! Reading: `get`, `list` and `status`, by stage and by lane.

use super::*;

/// `get`, `list` (order, stage filter, cursor, limit) and `status`.
pub async fn get_list_status<S: Store>(s: &S) {
    const C: &str = "get_list_status";
    check!(
        C,
        ok(C, "get", s.get("missing").await).is_none(),
        "missing id"
    );
    // Created out of id order; ties on time broken by id.
    ok(
        C,
        "e",
        s.enqueue(fixture_plan(3, &RELAYS, Policy::All).with_id("c"), 20)
            .await,
    );
    ok(
        C,
        "e",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All).with_id("b"), 10)
            .await,
    );
    ok(
        C,
        "e",
        s.enqueue(fixture_plan(2, &RELAYS, Policy::All).with_id("a"), 10)
            .await,
    );
    ok(
        C,
        "e",
        s.enqueue(fixture_plan(4, &RELAYS, Policy::All).with_id("d"), 30)
            .await,
    );
    ok(C, "cancel", s.cancel("c", 40).await);
    let ids = |v: Vec<Record>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let q = |stage, limit, after: Option<&str>| ListQuery {
        stage,
        limit,
        after: after.map(str::to_string),
        ..Default::default()
    };
    check_eq!(
        C,
        ids(ok(C, "list", s.list(&q(None, 10, None)).await)),
        ["a", "b", "c", "d"],
        "list order"
    );
    check_eq!(
        C,
        ids(ok(C, "list", s.list(&q(None, 2, None)).await)),
        ["a", "b"],
        "limit"
    );
    check_eq!(
        C,
        ids(ok(C, "list", s.list(&q(None, 2, Some("b"))).await)),
        ["c", "d"],
        "cursor"
    );
    check_eq!(
        C,
        ids(ok(C, "list", s.list(&q(None, 2, Some("d"))).await)),
        Vec::<String>::new(),
        "end"
    );
    check_eq!(
        C,
        ids(ok(
            C,
            "list",
            s.list(&q(Some(Stage::Pending), 10, None)).await
        )),
        ["a", "b", "d"],
        "stage filter"
    );
    check_eq!(
        C,
        ids(ok(
            C,
            "list",
            s.list(&q(Some(Stage::Cancelled), 10, None)).await
        )),
        ["c"],
        "stage filter"
    );
    err_code(
        C,
        "limit 0",
        s.list(&q(None, 0, None)).await,
        "invalid_argument",
    );
    err_code(
        C,
        "limit too big",
        s.list(&q(None, 1_001, None)).await,
        "invalid_argument",
    );
    err_code(
        C,
        "unknown cursor",
        s.list(&q(None, 5, Some("zz"))).await,
        "not_found",
    );
    let counts = ok(C, "status", s.status().await);
    check_eq!(C, counts.pending, 3, "pending count");
    check_eq!(C, counts.cancelled, 1, "cancelled count");
    check_eq!(C, counts.total(), 4, "total");
    ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l", 1, 1_000), 50).await,
    );
    let counts = ok(C, "status", s.status().await);
    check_eq!(C, (counts.pending, counts.leased), (2, 1), "leased count");
}

/// `list` and `lane_status` by lane: pages in list order with a cursor, by stage too;
/// counts per stage of one lane. A bad lane name is a typed error.
pub async fn lanes_list_and_status<S: Store>(s: &S) {
    const C: &str = "lanes_list_and_status";
    for n in 1..=7u32 {
        let lane = if n % 2 == 0 { "even" } else { "odd" };
        ok(
            C,
            "enqueue",
            s.enqueue(
                fixture_plan(n, &RELAYS[..1], Policy::All)
                    .with_id(format!("r{n}"))
                    .with_lane(lane),
                u64::from(10 - n),
            )
            .await,
        );
    }
    // r1 (odd) is cancelled.
    ok(C, "cancel", s.cancel("r1", 20).await);
    let q = |lane: &str, stage: Option<Stage>, limit: u32, after: Option<&str>| ListQuery {
        stage,
        limit,
        after: after.map(str::to_string),
        lane: Some(lane.to_string()),
    };
    let page = ok(C, "list odd", s.list(&q("odd", None, 2, None)).await);
    check_eq!(C, ids_of(&page), ["r7", "r5"], "odd lane, list order");
    let page = ok(
        C,
        "list odd 2",
        s.list(&q("odd", None, 5, Some("r5"))).await,
    );
    check_eq!(C, ids_of(&page), ["r3", "r1"], "after the cursor");
    let page = ok(
        C,
        "list odd pending",
        s.list(&q("odd", Some(Stage::Pending), 5, None)).await,
    );
    check_eq!(C, ids_of(&page), ["r7", "r5", "r3"], "odd and pending");
    let page = ok(
        C,
        "list even cancelled",
        s.list(&q("even", Some(Stage::Cancelled), 5, None)).await,
    );
    check!(C, page.is_empty(), "no even record is cancelled");
    let page = ok(C, "list unknown", s.list(&q("none", None, 5, None)).await);
    check!(C, page.is_empty(), "an unknown lane is empty");
    let odd = ok(
        C,
        "lane_status odd",
        crate::store::lane_status(s, "odd").await,
    );
    check_eq!(
        C,
        (odd.pending, odd.cancelled, odd.total()),
        (3, 1, 4),
        "odd counts"
    );
    let even = ok(
        C,
        "lane_status even",
        crate::store::lane_status(s, "even").await,
    );
    check_eq!(C, (even.pending, even.total()), (3, 3), "even counts");
    let none = ok(
        C,
        "lane_status default",
        crate::store::lane_status(s, crate::core::DEFAULT_LANE).await,
    );
    check_eq!(C, none.total(), 0, "nothing in the default lane");
    err_code(
        C,
        "lane_status bad",
        crate::store::lane_status(s, "a b").await,
        "invalid_argument",
    );
    err_code(
        C,
        "list bad lane",
        s.list(&q("", None, 5, None)).await,
        "invalid_argument",
    );
    err_code(
        C,
        "enqueue bad lane",
        s.enqueue(
            fixture_plan(50, &RELAYS[..1], Policy::All).with_lane("é"),
            30,
        )
        .await,
        "invalid_argument",
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        7,
        "a bad enqueue wrote nothing"
    );
    // Lane and priority belong to the plan: the same plan in another lane conflicts.
    err_code(
        C,
        "another lane",
        s.enqueue(
            fixture_plan(2, &RELAYS[..1], Policy::All)
                .with_id("r2")
                .with_lane("odd"),
            30,
        )
        .await,
        "plan_conflict",
    );
    let replay = ok(
        C,
        "same lane",
        s.enqueue(
            fixture_plan(2, &RELAYS[..1], Policy::All)
                .with_id("r2")
                .with_lane("even"),
            30,
        )
        .await,
    );
    check_eq!(
        C,
        replay.outcome,
        EnqueueOutcome::Replay,
        "the same plan replays"
    );
}
