//! Routes: a record with routing intents waits (stage `draft`) for a context that
//! resolves them: a publishing claim, a context that only signs, `count_due` and their
//! `next_due` never take or wait for it; a claim that resolves does, and the resolution
//! is recorded under the lease ([`Store::record_signing`]): the relays chosen become
//! targets, each with its `resolver` evidence; a resolver that fails leaves it waiting
//! for a backoff; a `dm` recipient without DM relays ends it (`recipientNotReady`) and
//! `retry` resolves it again; a draft with a route needs both helpers.

use super::*;
use crate::core::{Route, Signed, Signing, StopReason, NEEDS_RESOLVER, NEEDS_SIGNER, RESOLVER};

fn route_plan(id: &str, targets: &[&str], route: &[&str]) -> Plan {
    let mut plan = fixture_plan(1, targets, Policy::All).with_id(id);
    plan.route = route.iter().map(|r| r.to_string()).collect();
    plan
}

fn claim_for(prepare: u8, lease: &str) -> ClaimRequest {
    ClaimRequest {
        prepare,
        ..fixture_claim("resolver-tab", lease, 64, 60_000)
    }
}

fn answer(
    id: &str,
    lease: &str,
    revision: u64,
    signing: Signing,
    routes: Option<Vec<Route>>,
) -> Signed {
    Signed {
        id: id.into(),
        lease_id: lease.into(),
        revision,
        signing,
        routes,
        jitter: 0,
    }
}

fn route(relay: &str, reason: &str) -> Route {
    Route {
        relay: relay.into(),
        reason: reason.into(),
    }
}

/// See the module comment.
pub async fn routes_wait_for_a_resolver<S: Store>(s: &S) {
    const C: &str = "routes_wait_for_a_resolver";
    let mut draft =
        Plan::new(super::draft_event(ALICE, 1, 1), Vec::new(), Policy::All).with_id("both");
    draft.route = vec!["outbox".into()];
    let plans = vec![
        route_plan("dm1", &[], &["dm"]),
        route_plan("dm2", &[], &["dm"]),
        route_plan("mix", &[RELAYS[0]], &["outbox", "inbox"]),
        draft,
    ];
    let created = ok(C, "enqueue", s.enqueue_many(plans, 1_000).await);
    check_eq!(
        C,
        created[0].record.stage,
        Stage::Draft,
        "a route waits as a draft"
    );
    check_eq!(C, created[0].record.targets.len(), 0, "no target yet");
    check_eq!(
        C,
        ok(C, "count_due", s.count_due(2_000).await),
        0,
        "nothing to publish"
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(0).await),
        None,
        "a publisher waits for none"
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(NEEDS_SIGNER).await),
        None,
        "the draft needs a resolver too"
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(NEEDS_RESOLVER).await),
        Some(1_000),
        "the routes"
    );

    // Who takes what: a publisher nothing, a signer only what needs a signer only.
    let none = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l0", 64, 60_000), 2_000).await,
    );
    check_eq!(C, ids_of(&none), Vec::<String>::new(), "a publishing claim");
    let none = ok(
        C,
        "claim",
        s.claim(&claim_for(NEEDS_SIGNER, "l1"), 2_000).await,
    );
    check_eq!(
        C,
        ids_of(&none),
        Vec::<String>::new(),
        "a signer cannot resolve"
    );
    let claimed = ok(
        C,
        "claim",
        s.claim(&claim_for(NEEDS_RESOLVER, "l2"), 2_000).await,
    );
    let mut got = ids_of(&claimed);
    got.sort();
    check_eq!(
        C,
        got,
        ["dm1", "dm2", "mix"],
        "a resolver takes the signed ones"
    );
    let rev = |id: &str| {
        claimed
            .iter()
            .find(|r| r.id == id)
            .map_or(0, |r| r.revision)
    };

    // Resolved: the relays chosen become targets, each with its evidence; then published.
    let mix = ok(
        C,
        "resolved",
        s.record_signing(
            &answer(
                "mix",
                "l2",
                rev("mix"),
                Signing::NotNeeded,
                Some(vec![
                    route(RELAYS[1], "outbox: write relay"),
                    route(RELAYS[0], "inbox: read relay"),
                ]),
            ),
            &fixture_retry(),
            2_100,
        )
        .await,
    );
    check_eq!(
        C,
        (mix.stage, mix.due_ms),
        (Stage::Pending, Some(2_100)),
        "mix is ready"
    );
    check_eq!(
        C,
        mix.targets,
        vec![RELAYS[0].to_string(), RELAYS[1].to_string()],
        "targets"
    );
    check_eq!(
        C,
        mix.routed,
        Some(vec![RELAYS[1].to_string()]),
        "what the route added"
    );
    let why: Vec<&str> = mix
        .evidence
        .iter()
        .filter(|e| e.target == RESOLVER && e.attempt == 0)
        .map(|e| e.message.as_str())
        .collect();
    check_eq!(C, why.len(), 2, "one evidence entry per relay chosen");
    check!(
        C,
        why[0].starts_with(RELAYS[1]) && why[0].ends_with("write relay"),
        "why: {why:?}"
    );
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l3", 64, 60_000), 2_200).await,
    );
    check_eq!(C, ids_of(&claimed), ["mix"], "mix is published now");

    // The resolver failed: dm2 waits for its backoff (1 s), no attempt counted.
    let down = Signing::Unavailable {
        outcome: Outcome::Unreachable,
        message: "no index relay answered".into(),
    };
    let dm2 = ok(
        C,
        "unavailable",
        s.record_signing(
            &answer("dm2", "l2", rev("dm2"), down, None),
            &fixture_retry(),
            2_300,
        )
        .await,
    );
    check_eq!(
        C,
        (dm2.stage, dm2.due_ms, dm2.attempts),
        (Stage::Draft, Some(3_300), 0),
        "dm2 waits"
    );
    check_eq!(
        C,
        dm2.evidence.last().map(|e| (e.target.as_str(), e.outcome)),
        Some((RESOLVER, Outcome::Unreachable)),
        "the resolver's failure"
    );

    // A recipient without DM relays: terminal, never another relay; `retry` resolves again.
    let not_ready = Signing::Failed {
        reason: StopReason::RecipientNotReady,
        message: "ab has no DM relays (kind 10050)".into(),
    };
    let dm1 = ok(
        C,
        "not ready",
        s.record_signing(
            &answer("dm1", "l2", rev("dm1"), not_ready, None),
            &fixture_retry(),
            2_400,
        )
        .await,
    );
    check_eq!(
        C,
        (dm1.stage, dm1.reason, dm1.targets.len()),
        (Stage::Exhausted, Some(StopReason::RecipientNotReady), 0),
        "dm1 ends"
    );
    let dm1 = ok(C, "retry", s.retry("dm1", 2_500).await);
    check_eq!(
        C,
        (dm1.stage, dm1.routed.is_none()),
        (Stage::Draft, true),
        "to resolve again"
    );

    // A route that resolves to nothing, with no relay of its own: `noRelays`.
    let claimed = ok(
        C,
        "claim",
        s.claim(&claim_for(NEEDS_RESOLVER, "l4"), 2_600).await,
    );
    check_eq!(C, ids_of(&claimed), ["dm1"], "dm1 again (dm2 waits)");
    let dm1 = ok(
        C,
        "nothing",
        s.record_signing(
            &answer(
                "dm1",
                "l4",
                claimed[0].revision,
                Signing::NotNeeded,
                Some(Vec::new()),
            ),
            &fixture_retry(),
            2_700,
        )
        .await,
    );
    check_eq!(
        C,
        (dm1.stage, dm1.reason),
        (Stage::Exhausted, Some(StopReason::NoRelays)),
        "no relay"
    );
    let dm1 = ok(C, "retry", s.retry("dm1", 2_750).await);
    check_eq!(
        C,
        (dm1.stage, dm1.routed.clone(), dm1.targets.len()),
        (Stage::Draft, None, 0),
        "resolved again, never published to no relay"
    );

    // A draft with a route needs both helpers; resolved and signed in one answer.
    let claimed = ok(
        C,
        "claim",
        s.claim(&claim_for(NEEDS_SIGNER | NEEDS_RESOLVER, "l5"), 2_800)
            .await,
    );
    // (The order between records of different needs is the store's.)
    let mut got = ids_of(&claimed);
    got.sort();
    check_eq!(
        C,
        got,
        ["both", "dm1"],
        "dm1 to resolve again, and the draft with a route"
    );
    let claimed: Vec<Record> = claimed.into_iter().filter(|r| r.id == "both").collect();
    let before = must_get(C, s, "both").await;
    err_code(
        C,
        "a draft left unsigned",
        s.record_signing(
            &answer(
                "both",
                "l5",
                claimed[0].revision,
                Signing::NotNeeded,
                Some(Vec::new()),
            ),
            &fixture_retry(),
            2_850,
        )
        .await,
        "invalid_argument",
    );
    check_eq!(C, must_get(C, s, "both").await, before, "nothing changed");
    let event = nostr_event(9, ALICE, 1, 2, "", &[]);
    let both = ok(
        C,
        "signed and resolved",
        s.record_signing(
            &answer(
                "both",
                "l5",
                claimed[0].revision,
                Signing::Signed(event.clone()),
                Some(vec![route(RELAYS[2], "outbox: write relay")]),
            ),
            &fixture_retry(),
            2_900,
        )
        .await,
    );
    check_eq!(
        C,
        (both.stage, both.targets.clone(), both.event.id.clone()),
        (
            Stage::Pending,
            vec![RELAYS[2].to_string()],
            event.id.clone()
        ),
        "ready"
    );
}

/// Records that need the same helpers are claimed high priority first, then by due
/// time, whatever the helpers: three drafts with a route, enqueued low, then normal,
/// then high, are claimed high, normal, low by a context that signs and resolves, and
/// `next_due` of that context sees each.
pub async fn prepared_claims_keep_priority_order<S: Store>(s: &S) {
    const C: &str = "prepared_claims_keep_priority_order";
    let both = |id: &str, priority: Priority| {
        let mut plan = Plan::new(super::draft_event(ALICE, 1, 1), Vec::new(), Policy::All)
            .with_id(id)
            .with_priority(priority);
        plan.route = vec!["outbox".into()];
        plan
    };
    let prepare = NEEDS_SIGNER | NEEDS_RESOLVER;
    ok(
        C,
        "enqueue low",
        s.enqueue_many(vec![both("low", Priority::Low)], 1_000)
            .await,
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(prepare).await),
        Some(1_000),
        "low"
    );
    ok(
        C,
        "enqueue normal",
        s.enqueue_many(vec![both("normal", Priority::Normal)], 2_000)
            .await,
    );
    ok(
        C,
        "enqueue high",
        s.enqueue_many(vec![both("high", Priority::High)], 3_000)
            .await,
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(0).await),
        None,
        "nothing to publish"
    );
    let claimed = ok(C, "claim", s.claim(&claim_for(prepare, "l1"), 4_000).await);
    check_eq!(C, ids_of(&claimed), ["high", "normal", "low"], "high first");
    check_eq!(
        C,
        ok(C, "next_due", s.next_due(prepare).await),
        Some(64_000),
        "the leases"
    );
}
