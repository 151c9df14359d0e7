//! Groups in the pure core: `group_plans` and `decide_enqueues` decide a group whole or
//! not at all, whatever the store holds under the members' ids and whatever member is
//! invalid; each member created keeps its own plan's event and targets and its place.

use nostr_outbox::core::{
    decide_enqueues, group_plans, new_record, EnqueueOutcome, GroupRef, Plan, Policy, Record,
};
use nostr_outbox::store::conformance::{fixture_plan, RELAYS};
use proptest::prelude::*;

/// What the store holds under a member's id before the batch.
#[derive(Debug, Clone, Copy)]
enum Held {
    Nothing,
    /// The same member, enqueued earlier (a replay).
    Same,
    /// Another plan under the member's id (a conflict).
    Other,
}

fn held() -> impl Strategy<Value = Held> {
    prop_oneof![6 => Just(Held::Nothing), 1 => Just(Held::Same), 1 => Just(Held::Other)]
}

fn stored(plan: &Plan) -> Record {
    let plan = plan.clone().normalize().expect("valid");
    let digest = plan.digest();
    new_record(plan, digest, 1)
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(200))]

    #[test]
    fn a_group_is_decided_whole_or_not_at_all(
        holds in prop::collection::vec(held(), 1..10),
        invalid in proptest::option::weighted(0.2, 0usize..10),
    ) {
        let size = holds.len();
        let plans: Vec<Plan> = (0..size as u32)
            .map(|i| fixture_plan(i + 1, &RELAYS[..(i as usize % 3) + 1], Policy::All))
            .collect();
        let mut members = group_plans("dm", plans.clone()).expect("plans");
        let stored: Vec<(Option<Record>, Vec<Record>)> = holds
            .iter()
            .zip(&members)
            .map(|(h, m)| match h {
                Held::Nothing => (None, Vec::new()),
                Held::Same => (Some(stored(m)), Vec::new()),
                Held::Other => (Some(stored(&fixture_plan(99, &RELAYS[..1], Policy::Any).with_id(m.id.clone()))), Vec::new()),
            })
            .collect();
        let invalid = invalid.filter(|i| *i < size);
        if let Some(i) = invalid {
            members[i].targets.clear();
        }
        let fails = invalid.is_some() || holds.iter().any(|h| matches!(h, Held::Other));
        match decide_enqueues(members, stored, 10) {
            Err(e) => prop_assert!(fails, "refused: {e}"),
            Ok(decision) => {
                prop_assert!(!fails, "a conflict or a bad member passed");
                prop_assert_eq!(decision.answers.len(), size);
                let created = holds.iter().filter(|h| matches!(h, Held::Nothing)).count();
                prop_assert_eq!(decision.writes.len(), created, "only the new members are written");
                for (i, (answer, h)) in decision.answers.iter().zip(&holds).enumerate() {
                    let want = if matches!(h, Held::Same) { EnqueueOutcome::Replay } else { EnqueueOutcome::Created };
                    prop_assert_eq!(answer.outcome, want);
                    let r = &answer.record;
                    let place = r.group().expect("a member");
                    prop_assert_eq!((place.id, place.index as usize, place.size as usize), ("dm", i, size));
                    prop_assert_eq!(&r.event.id, &plans[i].event.id, "its own event");
                    let mut targets = plans[i].targets.clone();
                    targets.sort();
                    prop_assert_eq!(&r.targets, &targets, "its own relays, nothing else");
                }
                prop_assert!(
                    decision.answers.iter().all(|a| a.record.stage == nostr_outbox::core::Stage::Pending),
                    "every member open"
                );
            }
        }
    }

    /// A member's place is read back from exactly the id `group_plans` gives it, and from
    /// no other spelling (signs, leading zeros, spaces, other digits): one id per place.
    #[test]
    fn a_place_is_read_only_from_its_member_id(
        id in "[a-z:]{0,6}",
        index in 0u32..300,
        size in 0u32..300,
        tail in "[0-9+ -]{0,5}",
    ) {
        let member = format!("{id}:{index}");
        let fits = !id.is_empty() && (1..=256).contains(&size) && index < size;
        match GroupRef::of(&member, size) {
            Ok(g) => {
                prop_assert!(fits, "{member} of {size}");
                prop_assert_eq!((g.id, g.index, g.size), (id.as_str(), index, size));
            }
            Err(e) => {
                prop_assert!(!fits, "{member} of {size}: {e}");
                prop_assert_eq!(e.code(), "invalid_argument");
            }
        }
        // Any other text after the last `:` is read only if it spells the same number.
        let other = format!("{id}:{tail}");
        if let Ok(g) = GroupRef::of(&other, size) {
            prop_assert_eq!(format!("{}:{}", g.id, g.index), other);
        }
    }
}
