//! Property: for any mix of priorities, lanes, targets and due times, claims come out in
//! the documented order — among due records, `high` before `normal` before `low`, then
//! the earliest due, then the oldest, then the id — in batches of any size, and a
//! filtered claim takes exactly the due records its lanes and relays admit, in that
//! order. Checked on the memory store and on the key-value store (whose claim reads one
//! key range per priority) against a model: the records sorted by the key.
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use nostr_outbox::core::{ClaimRequest, Policy, Priority, Record};
use nostr_outbox::store::conformance::{fixture_claim, fixture_plan, RELAYS};
use nostr_outbox::store::kv::{KvStore, MemoryKv};
use nostr_outbox::store::{MemoryStore, Store};
use proptest::prelude::*;

const LANES: [&str; 3] = ["default", "dm", "bulk"];

/// One record: priority rank, lane, targets (a non-empty subset of the relays, as a
/// bit mask), and when it is enqueued (its due time).
type Spec = (u8, usize, u8, u64);

fn spec() -> impl Strategy<Value = Spec> {
    (0u8..3, 0usize..3, 1u8..8, 0u64..50)
}

/// A claim: batch size, and the lane and relay filters (bit masks; 0 = none).
fn filters() -> impl Strategy<Value = (u32, u8, u8)> {
    (1u32..6, 0u8..8, 0u8..8)
}

fn pick<'a>(mask: u8, all: &[&'a str]) -> Vec<&'a str> {
    all.iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, s)| *s)
        .collect()
}

async fn check<S: Store>(store: &S, specs: &[Spec], (limit, lanes, relays): (u32, u8, u8)) {
    let now = 100;
    for (n, (rank, lane, targets, at)) in specs.iter().enumerate() {
        let plan = fixture_plan(n as u32 + 1, &pick(*targets, &RELAYS), Policy::All)
            .with_priority(Priority::from_rank(*rank).expect("rank"))
            .with_lane(LANES[*lane]);
        store.enqueue(plan, *at).await.expect("enqueue");
    }
    let request = |i: usize| ClaimRequest {
        lanes: pick(lanes, &LANES).iter().map(|s| s.to_string()).collect(),
        relays: pick(relays, &RELAYS)
            .iter()
            .map(|s| s.to_string())
            .collect(),
        ..fixture_claim("o", &format!("l{i}"), limit, 10_000)
    };
    // The model: every record the filters admit, by (rank, due, created, id).
    let probe = request(0);
    let mut all: Vec<Record> = Vec::new();
    for n in 0..specs.len() {
        let id = format!("{:064x}", n + 1);
        all.push(store.get(&id).await.expect("get").expect("stored"));
    }
    let mut want: Vec<&Record> = all.iter().filter(|r| probe.admits(r)).collect();
    // Written out, not `Record::claim_key`, so the model does not share the stores' key.
    want.sort_by_key(|r| (r.priority.rank(), r.due_ms, r.created_ms, r.id.clone()));
    let want: Vec<&str> = want.iter().map(|r| r.id.as_str()).collect();
    let mut got: Vec<String> = Vec::new();
    for i in 0..=specs.len() {
        let batch = store.claim(&request(i), now).await.expect("claim");
        assert!(batch.len() <= limit as usize);
        for r in &batch {
            assert!(probe.admits(r) || r.lease.is_some(), "{}", r.id);
            if !probe.relays.is_empty() {
                let scope = r
                    .lease
                    .as_ref()
                    .and_then(|l| l.relays.clone())
                    .expect("scoped");
                assert!(scope.iter().all(|t| probe.relays.contains(t)), "{scope:?}");
            }
        }
        if batch.is_empty() {
            break;
        }
        got.extend(batch.into_iter().map(|r| r.id));
    }
    assert_eq!(got, want);
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(200))]

    #[test]
    fn claims_come_out_in_priority_then_due_order(
        specs in prop::collection::vec(spec(), 0..24),
        f in filters(),
    ) {
        block_on(check(&MemoryStore::in_memory(), &specs, f));
        block_on(check(&KvStore::new(MemoryKv::new()), &specs, f));
    }
}

/// Records enqueued at `at` to be sent from `not_before` (or at once), some rescheduled
/// to `moved` once enqueued; claims at rising times `step` apart: no record is claimed
/// before its time, and each is claimed at the first claim at or after it.
async fn schedules<S: Store>(store: &S, specs: &[(u64, Option<u64>, Option<u64>)], step: u64) {
    let mut due = Vec::new();
    for (n, (at, not_before, moved)) in specs.iter().enumerate() {
        let plan = fixture_plan(n as u32 + 1, &RELAYS, Policy::All).with_not_before_ms(*not_before);
        let id = store.enqueue(plan, *at).await.expect("enqueue").record.id;
        let mut time = not_before.map_or(*at, |t| t.max(*at));
        if let Some(moved) = moved {
            let r = store
                .reschedule(&id, *moved, *at)
                .await
                .expect("reschedule");
            time = (*moved).max(*at);
            assert_eq!(r.due_ms, Some(time));
        }
        due.push((id, time));
    }
    let last = specs.iter().map(|s| s.0).max().unwrap_or(0);
    let mut now = last;
    let mut claimed: Vec<(String, u64)> = Vec::new();
    while claimed.len() < due.len() && now < last + 2_000 {
        let batch = store
            .claim(&fixture_claim("o", &format!("l{now}"), 256, 100_000), now)
            .await
            .expect("claim");
        claimed.extend(batch.into_iter().map(|r| (r.id, now)));
        now += step;
    }
    assert_eq!(claimed.len(), due.len(), "every record claimed");
    for (id, when) in claimed {
        let time = due.iter().find(|d| d.0 == id).expect("known").1;
        assert!(when >= time, "{id} claimed at {when}, scheduled at {time}");
        assert!(
            when < time.max(last) + step,
            "{id} claimed at {when}, late for {time}"
        );
    }
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(100))]

    #[test]
    fn no_record_is_claimed_before_its_time(
        specs in prop::collection::vec(
            (0u64..100, prop::option::of(0u64..1_000), prop::option::of(0u64..1_000)),
            0..20,
        ),
        step in 1u64..50,
    ) {
        block_on(schedules(&MemoryStore::in_memory(), &specs, step));
        block_on(schedules(&KvStore::new(MemoryKv::new()), &specs, step));
    }
}
