//! Groups are enqueued whole or not at all, on the key-value store (the edge build's)
//! and the memory store, whatever else the batch meets: members that conflict with
//! stored records, a member that is invalid, the same group again.

use futures::executor::block_on;
use nostr_outbox::core::{group_plans, Plan, Policy};
use nostr_outbox::store::conformance::{fixture_plan, RELAYS};
use nostr_outbox::store::kv::{KvStore, MemoryKv};
use nostr_outbox::store::{MemoryStore, Store};
use proptest::prelude::*;

fn plans(size: usize, first: u32) -> Vec<Plan> {
    (0..size as u32)
        .map(|i| fixture_plan(first + i, &RELAYS[..2], Policy::All))
        .collect()
}

/// Enqueues the group `g` of `size` members over `seeds` (member indexes stored
/// beforehand under the member id with another plan) with member `invalid` (if any)
/// without targets, and checks the outcome is all or nothing.
fn whole_or_nothing<S: Store>(s: &S, size: usize, seeds: &[usize], invalid: Option<usize>) {
    block_on(async {
        for &i in seeds {
            let seed =
                fixture_plan(900 + i as u32, &RELAYS[..1], Policy::Any).with_id(format!("g:{i}"));
            s.enqueue(seed, 1).await.expect("seed");
        }
        let before = s.status().await.expect("status").total();
        let mut members = group_plans("g", plans(size, 1)).expect("plans");
        if let Some(i) = invalid {
            members[i].targets.clear();
        }
        let fails = !seeds.is_empty() || invalid.is_some();
        let result = s.enqueue_many(members, 10).await;
        assert_eq!(result.is_err(), fails, "{result:?}");
        let after = s.status().await.expect("status").total();
        if fails {
            assert_eq!(after, before, "nothing written");
            for i in 0..size {
                let r = s.get(&format!("g:{i}")).await.expect("get");
                assert!(
                    r.is_none_or(|r| r.group().is_none()),
                    "member {i} not written"
                );
            }
        } else {
            assert_eq!(after, before + size as u32, "every member written");
            for i in 0..size {
                let r = s
                    .get(&format!("g:{i}"))
                    .await
                    .expect("get")
                    .expect("member");
                let place = r.group().expect("a member");
                assert_eq!(
                    (place.id, place.index as usize, place.size as usize),
                    ("g", i, size)
                );
                assert_eq!(
                    r.stage,
                    nostr_outbox::core::Stage::Pending,
                    "member {i} open"
                );
            }
            // The same group again is a replay, and writes nothing.
            let again = group_plans("g", plans(size, 1)).expect("plans");
            s.enqueue_many(again, 20).await.expect("replay");
            assert_eq!(s.status().await.expect("status").total(), after);
        }
    })
}

fn case() -> impl Strategy<Value = (usize, Vec<usize>, Option<usize>)> {
    (1usize..8).prop_flat_map(|size| {
        (
            Just(size),
            proptest::sample::subsequence((0..size).collect::<Vec<_>>(), 0..=size.min(2)),
            proptest::option::weighted(0.3, 0..size),
        )
    })
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(100))]

    #[test]
    fn a_group_is_enqueued_whole_or_not_at_all((size, seeds, invalid) in case()) {
        whole_or_nothing(&MemoryStore::in_memory(), size, &seeds, invalid);
        whole_or_nothing(&KvStore::new(MemoryKv::new()), size, &seeds, invalid);
    }
}
