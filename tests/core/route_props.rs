//! Routes in the pure core: a record's targets come only from its own relays and its
//! route's resolution (never from elsewhere, never before it is resolved); what the
//! resolution added is `routed`, each relay chosen has its `resolver` evidence; a
//! resolver that fails or finds a recipient not ready changes no target; and a claim
//! takes a record exactly when the context can prepare everything it needs.

use nostr_outbox::core::{
    claim, new_record, record_signing, ClaimRequest, Outcome, Plan, Policy, Record, RetryConfig,
    Route, Signed, Signing, Stage, StopReason, NEEDS_RESOLVER, NEEDS_SIGNER, RESOLVER,
};
use nostr_outbox::store::conformance::{
    draft_event, fixture_claim, fixture_plan, nostr_event, ALICE,
};
use proptest::prelude::*;

const POOL: [&str; 6] = [
    "wss://a.example",
    "wss://b.example",
    "wss://c.example",
    "wss://d.example",
    "wss://e.example",
    "wss://f.example",
];

#[derive(Debug, Clone)]
enum Answer {
    Relays(Vec<usize>),
    Down,
    NotReady,
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        6 => prop::collection::vec(0..POOL.len(), 0..8).prop_map(Answer::Relays),
        1 => Just(Answer::Down),
        1 => Just(Answer::NotReady),
    ]
}

fn intents() -> impl Strategy<Value = Vec<String>> {
    prop::sample::subsequence(vec!["dm", "inbox", "outbox"], 1..=3)
        .prop_map(|v| v.into_iter().map(String::from).collect())
}

fn record(plan: Plan) -> Record {
    let plan = plan.normalize().expect("a valid plan");
    let digest = plan.digest();
    new_record(plan, digest, 1_000)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(300))]

    #[test]
    fn targets_come_only_from_the_own_relays_and_the_resolution(
        own in prop::collection::vec(0..POOL.len(), 0..3),
        route in intents(),
        answer in answer(),
        draft in any::<bool>(),
    ) {
        let own: Vec<&str> = own.iter().map(|&i| POOL[i]).collect();
        let mut plan = if draft {
            Plan::new(draft_event(ALICE, 1, 1), own.iter().map(|s| s.to_string()).collect(), Policy::Any)
        } else {
            fixture_plan(1, &own, Policy::Any)
        }
        .with_id("r");
        plan.route = route;
        let r = record(plan);
        prop_assert_eq!(r.stage, Stage::Draft, "a route waits");
        prop_assert_eq!(&r.targets, &sorted(own.iter().map(|s| s.to_string()).collect()));
        // Only a context that can prepare all it needs takes it.
        for prepare in 0..4u8 {
            let request = ClaimRequest { prepare, ..fixture_claim("o", "l", 8, 60_000) };
            let needs = NEEDS_RESOLVER | if draft { NEEDS_SIGNER } else { 0 };
            prop_assert_eq!(request.admits(&r), prepare != 0 && needs & !prepare == 0, "prepare {}", prepare);
        }
        let request = ClaimRequest { prepare: 3, ..fixture_claim("o", "l", 8, 60_000) };
        let leased = claim(&r, &request, 2_000).expect("claimed").into_record();
        let (signing, routes) = match &answer {
            Answer::Relays(relays) => (
                if draft {
                    Signing::Signed(nostr_event(7, ALICE, 1, 2, "", &[]))
                } else {
                    Signing::NotNeeded
                },
                Some(relays.iter().map(|&i| Route { relay: POOL[i].into(), reason: format!("why {i}") }).collect::<Vec<_>>()),
            ),
            Answer::Down => (Signing::Unavailable { outcome: Outcome::Unreachable, message: "down".into() }, None),
            Answer::NotReady => (Signing::Failed { reason: StopReason::RecipientNotReady, message: "no 10050".into() }, None),
        };
        let signed = Signed { id: "r".into(), lease_id: "l".into(), revision: leased.revision, signing, routes: routes.clone(), jitter: 7 };
        let next = record_signing(&leased, &signed, 2_100, &RetryConfig::default()).expect("recorded");
        let chosen: Vec<&Route> = routes.iter().flatten().collect();
        let resolver: Vec<&str> = next
            .evidence
            .iter()
            .filter(|e| e.target == RESOLVER && e.outcome == Outcome::Accepted)
            .map(|e| e.message.as_str())
            .collect();
        match answer {
            Answer::Relays(_) => {
                let all = sorted(own.iter().map(|s| s.to_string()).chain(chosen.iter().map(|c| c.relay.clone())).collect());
                prop_assert_eq!(&next.targets, &all, "own relays and the resolution, nothing else");
                let added: Vec<String> = sorted(chosen.iter().map(|c| c.relay.clone()).filter(|c| !own.contains(&c.as_str())).collect());
                prop_assert_eq!(next.routed.clone().map(sorted), Some(added));
                prop_assert_eq!(resolver.len(), chosen.len(), "one entry per relay chosen");
                for (m, c) in resolver.iter().zip(&chosen) {
                    prop_assert_eq!(m.to_string(), format!("{} {}", c.relay, c.reason));
                }
                if all.is_empty() {
                    prop_assert_eq!((next.stage, next.reason), (Stage::Exhausted, Some(StopReason::NoRelays)));
                } else {
                    prop_assert_eq!((next.stage, next.due_ms), (Stage::Pending, Some(2_100)));
                    prop_assert!(next.evidence.iter().all(|e| e.attempt == 0));
                }
            }
            Answer::Down | Answer::NotReady => {
                prop_assert_eq!(&next.targets, &r.targets, "no target from a failed resolution");
                prop_assert_eq!(&next.routed, &None);
                prop_assert!(resolver.is_empty());
                prop_assert_eq!(next.event.id.clone(), r.event.id.clone(), "the signer is not asked");
                let last = next.evidence.last().expect("the resolver's failure");
                prop_assert_eq!(last.target.as_str(), RESOLVER);
                prop_assert_eq!(next.stage, if matches!(answer, Answer::Down) { Stage::Draft } else { Stage::Exhausted });
            }
        }
    }
}
