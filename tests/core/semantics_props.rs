//! Property tests of the queue's Nostr rules: random interleavings of enqueues (one at a
//! time and in batches) of versions of replaceable and addressable events, notes,
//! deletions, claims, answers, retries and time, against the memory store (every
//! decision is `core::semantics`'), checked after every step:
//! - once a version is enqueued, no claim ever hands out an older version of its slot
//!   (exactly the newest is sent from then on);
//! - once a deletion is enqueued, no claim hands out a note it named that was queued;
//! - at most one record of a slot may still be sent, and it is the newest enqueued;
//! - a superseded record never changes again.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::{BTreeMap, BTreeSet};

use futures::executor::block_on;
use nostr_outbox::core::semantics::{is_newer, slot_of};
use nostr_outbox::core::{
    ClaimRequest, Completion, EnqueueOutcome, Outcome, Plan, Record, RetryConfig, Stage,
    TargetResult,
};
use nostr_outbox::store::conformance::{nostr_event, nostr_plan, ALICE, BOB, RELAYS};
use nostr_outbox::store::{MemoryStore, Store};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Item {
    /// A version of slot `slot` (0: Alice's profile, 1: Alice's article `d=x`, 2: Bob's
    /// contact list) at `created_at`, with id tiebreak `tie`.
    Version { slot: u8, created_at: u8, tie: u8 },
    /// Alice's note `n`.
    Note { n: u8 },
    /// Alice's deletion of notes `notes` and, with `article`, of her article address.
    Deletion {
        notes: Vec<u8>,
        article: bool,
        created_at: u8,
    },
}

#[derive(Debug, Clone)]
enum Op {
    Enqueue(Item),
    EnqueueMany(Vec<Item>),
    Claim { limit: u32 },
    Answer { accept: bool },
    Retry { pick: usize },
    Advance,
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        4 => (0u8..3, 0u8..6, 0u8..3)
            .prop_map(|(slot, created_at, tie)| Item::Version { slot, created_at, tie }),
        2 => (0u8..4).prop_map(|n| Item::Note { n }),
        1 => (prop::collection::vec(0u8..4, 0..3), any::<bool>(), 0u8..6)
            .prop_map(|(notes, article, created_at)| Item::Deletion { notes, article, created_at }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => item().prop_map(Op::Enqueue),
        1 => prop::collection::vec(item(), 1..5).prop_map(Op::EnqueueMany),
        3 => (1u32..5).prop_map(|limit| Op::Claim { limit }),
        3 => any::<bool>().prop_map(|accept| Op::Answer { accept }),
        1 => any::<usize>().prop_map(|pick| Op::Retry { pick }),
        1 => Just(Op::Advance),
    ]
}

/// The event number of an item: distinct per distinct event.
fn number(item: &Item) -> u32 {
    match item {
        Item::Version {
            slot,
            created_at,
            tie,
        } => 1_000 + u32::from(*slot) * 100 + u32::from(*created_at) * 10 + u32::from(*tie),
        Item::Note { n } => 100 + u32::from(*n),
        Item::Deletion {
            notes,
            article,
            created_at,
        } => {
            let mask: u32 = notes.iter().map(|n| 1u32 << n).fold(0, |a, b| a | b);
            10_000 + mask * 100 + u32::from(*article) * 10 + u32::from(*created_at)
        }
    }
}

fn plan(item: &Item) -> Plan {
    let n = number(item);
    let event = match item {
        Item::Version {
            slot, created_at, ..
        } => {
            let created_at = 1_000 + u64::from(*created_at);
            match slot {
                0 => nostr_event(n, ALICE, 0, created_at, "", &[]),
                1 => nostr_event(n, ALICE, 30_023, created_at, "x", &[]),
                _ => nostr_event(n, BOB, 3, created_at, "", &[]),
            }
        }
        Item::Note { .. } => nostr_event(n, ALICE, 1, 1_000, "", &[]),
        Item::Deletion {
            notes,
            article,
            created_at,
        } => {
            let mut refs: Vec<String> = notes
                .iter()
                .map(|m| format!("{:064x}", 100 + u32::from(*m)))
                .collect();
            if *article {
                refs.push(format!("30023:{ALICE}:x"));
            }
            let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
            nostr_event(n, ALICE, 5, 1_000 + u64::from(*created_at), "", &refs)
        }
    };
    let mut p = nostr_plan(event);
    p.targets = vec![RELAYS[0].to_string()];
    p
}

fn version(r: &Record) -> (u64, String) {
    let meta = r.event.meta.as_ref().expect("fixture events have meta");
    (meta.created_at, r.event.id.clone())
}

struct Model {
    /// The newest version enqueued per slot: (created_at, event id).
    newest: BTreeMap<String, (u64, String)>,
    /// Record ids a claim must never hand out again.
    banned: BTreeSet<String>,
    /// Superseded records as first seen.
    superseded: BTreeMap<String, Record>,
    /// Leases handed out and not answered yet.
    leased: Vec<Record>,
}

impl Model {
    /// Notes what an enqueue answered (a record born superseded, or withdrawn ones).
    fn saw_enqueue(&mut self, before: &BTreeMap<String, Record>, record: &Record) {
        if let Some(slot) = slot_of(record) {
            let (c, id) = version(record);
            let newer = match self.newest.get(&slot) {
                Some((nc, nid)) => is_newer((c, &id), (*nc, nid)),
                None => true,
            };
            if newer {
                self.newest.insert(slot, (c, id));
            }
        }
        if let Some(meta) = record.event.meta.as_ref() {
            if meta.kind == 5 {
                // Every queued note it names, of its author, is banned from now on.
                for r in before.values() {
                    let named = meta.deletes_ids.contains(&r.event.id)
                        || slot_of(r).is_some_and(|s| {
                            meta.deletes_addresses.contains(&s) && version(r).0 <= meta.created_at
                        });
                    if named && r.stage.may_send() {
                        self.banned.insert(r.id.clone());
                    }
                }
            }
        }
    }
}

fn snapshot(store: &MemoryStore) -> BTreeMap<String, Record> {
    store
        .snapshot()
        .into_iter()
        .map(|r| (r.id.clone(), r))
        .collect()
}

fn check_invariants(model: &Model, store: &MemoryStore) -> Result<(), TestCaseError> {
    let records = snapshot(store);
    let mut live: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
    for r in records.values() {
        if let (Some(slot), true) = (slot_of(r), r.stage.may_send()) {
            live.entry(slot).or_default().push(r);
        }
        if let Some(first) = model.superseded.get(&r.id) {
            prop_assert_eq!(r, first, "a superseded record changed");
        }
    }
    for (slot, rs) in live {
        prop_assert!(rs.len() <= 1, "two versions of {slot} may be sent: {rs:?}");
        let newest = model.newest.get(&slot).expect("enqueued");
        prop_assert_eq!(&version(rs[0]), newest, "the live version is the newest");
    }
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    block_on(async {
        let store = MemoryStore::in_memory();
        let retry = RetryConfig::default();
        let mut now = 1_000_000u64;
        let mut model = Model {
            newest: BTreeMap::new(),
            banned: BTreeSet::new(),
            superseded: BTreeMap::new(),
            leased: Vec::new(),
        };
        let mut lease_n = 0u32;
        for op in ops {
            now += 10;
            let before = snapshot(&store);
            match op {
                Op::Enqueue(item) => {
                    if let Ok(answer) = store.enqueue(plan(&item), now).await {
                        if answer.outcome != EnqueueOutcome::Replay {
                            model.saw_enqueue(&before, &answer.record);
                        }
                    }
                }
                Op::EnqueueMany(items) => {
                    let plans = items.iter().map(plan).collect();
                    if let Ok(answers) = store.enqueue_many(plans, now).await {
                        let mut seen = before.clone();
                        for answer in answers {
                            if answer.outcome != EnqueueOutcome::Replay {
                                model.saw_enqueue(&seen, &answer.record);
                            }
                            for w in answer.withdrawn.iter().chain([&answer.record]) {
                                seen.insert(w.id.clone(), w.clone());
                            }
                        }
                    }
                }
                Op::Claim { limit } => {
                    lease_n += 1;
                    let request = ClaimRequest {
                        owner: "props".into(),
                        lease_id: format!("l{lease_n}"),
                        limit,
                        lease_ms: 60_000,
                        ..Default::default()
                    };
                    let claimed = store.claim(&request, now).await.expect("claim");
                    for r in claimed.into_iter().filter(|r| r.stage == Stage::Leased) {
                        prop_assert!(!model.banned.contains(&r.id), "a deleted note is sent");
                        if let Some(slot) = slot_of(&r) {
                            prop_assert_eq!(
                                Some(&version(&r)),
                                model.newest.get(&slot),
                                "only the newest version is sent"
                            );
                        }
                        model.leased.push(r);
                    }
                }
                Op::Answer { accept } => {
                    let outcome = if accept {
                        Outcome::Accepted
                    } else {
                        Outcome::Timeout
                    };
                    for r in std::mem::take(&mut model.leased) {
                        let lease = r.lease.as_ref().expect("leased").id.clone();
                        let completion = Completion {
                            id: r.id.clone(),
                            lease_id: lease,
                            revision: r.revision,
                            results: vec![TargetResult {
                                target: RELAYS[0].into(),
                                outcome,
                                message: String::new(),
                            }],
                            jitter: 0,
                        };
                        // A withdrawn record's answer is a lost claim: nothing changes.
                        let _ = store.complete_attempt(&completion, &retry, now).await;
                    }
                }
                Op::Retry { pick } => {
                    if !before.is_empty() {
                        let id = before.keys().nth(pick % before.len()).expect("id").clone();
                        let _ = store.retry(&id, now).await;
                    }
                }
                Op::Advance => now += 3_600_000,
            }
            for r in store.snapshot() {
                if r.stage == Stage::Superseded {
                    model.superseded.entry(r.id.clone()).or_insert(r);
                }
            }
            check_invariants(&model, &store)?;
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(512))]

    #[test]
    fn only_the_newest_version_and_nothing_deleted_is_sent(
        ops in prop::collection::vec(op(), 1..60)
    ) {
        run(ops)?;
    }
}
