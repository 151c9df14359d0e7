//! The enqueue service (`nostr_outbox::outbox`) over the memory store, with a test
//! runtime in place of the JavaScript one: the time rule and the undo window, protected
//! events, a running flush held back for `high` plans, signatures checked in the store's
//! transaction, the flusher woken, and the events each answer and each flusher report
//! tell. Every refusal leaves the store as it was.
#![cfg(not(target_arch = "wasm32"))]

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::executor::block_on;
use serde_json::json;

use nostr_outbox::core::{CoreError, EnqueueOutcome, Enqueued, Plan, Policy, Priority, Stage};
use nostr_outbox::flush::FlushEvent;
use nostr_outbox::nostr::{Event, EventError, SignatureCheck};
use nostr_outbox::outbox::{self, tell, told, Host, Tell};
use nostr_outbox::store::conformance::RELAYS;
use nostr_outbox::store::{MemoryStore, Store, StoreError};

use crate::drafts::{key, pubkey, sign_with};

/// 2026-12-04 00:00:00 UTC, in ms.
const NOW: u64 = 1_796_342_400_000;

/// An event by key `n` (the drafts tests' keys and signing), signed, or with its
/// signature spoilt when `!good`.
fn event(n: u8, kind: u16, tags: Vec<Vec<String>>, created_at: u64, good: bool) -> Event {
    let template = json!({
        "kind": kind,
        "tags": tags,
        "content": format!("enqueue service {n} {kind} {created_at}"),
        "created_at": created_at,
    });
    let mut signed = sign_with(&key(n), &template);
    if !good {
        // The signature's last byte with its low bit flipped.
        let mut sig = hex::decode(signed["sig"].as_str().expect("sig")).expect("hex");
        sig[63] ^= 1;
        signed["sig"] = json!(hex::encode(sig));
    }
    Event::from_value(signed).expect("event")
}

fn note(n: u8) -> Event {
    event(n, 1, Vec::new(), NOW / 1_000 - 60, true)
}

fn plan(e: &Event) -> Plan {
    Plan::new(
        e.to_envelope(),
        RELAYS.iter().map(|r| r.to_string()).collect(),
        Policy::All,
    )
}

/// Why the service wrote nothing (the test host's error), with the plan it names
/// (`None`: no index, `indexed: false`).
#[derive(Debug, PartialEq)]
enum Refused {
    /// The time rule refused the plan.
    Time(Option<usize>, CoreError),
    /// The plan is protected and its author is not the signer's key.
    Protected(Option<usize>),
    /// The plan's signature does not verify.
    Signature(Option<usize>, EventError),
    /// The store failed.
    Store(String),
}

impl From<CoreError> for Refused {
    fn from(e: CoreError) -> Refused {
        Refused::Time(None, e)
    }
}

impl From<EventError> for Refused {
    fn from(e: EventError) -> Refused {
        Refused::Signature(None, e)
    }
}

impl From<StoreError> for Refused {
    fn from(e: StoreError) -> Refused {
        Refused::Store(e.to_string())
    }
}

/// What the service asked of its runtime during a run.
#[derive(Debug, Default, PartialEq)]
struct Asked {
    /// The authors the signer was asked about, if it was.
    signer: Option<Vec<String>>,
    /// How many times a running flush was held back.
    holds: u32,
    /// The flusher's wake-ups, each with its count of urgent records.
    kicks: Vec<u32>,
}

/// A runtime for the service: a signer whose key is `signer` (`None`: it cannot tell),
/// and what it was asked.
struct TestHost {
    signer: Option<String>,
    asked: RefCell<Asked>,
    /// Holds not yet dropped.
    holding: Rc<Cell<u32>>,
}

/// A hold of [`TestHost`]: counted while alive.
struct TestHold(Rc<Cell<u32>>);

impl Drop for TestHold {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

impl Host for TestHost {
    type Error = Refused;
    type Hold = TestHold;

    async fn foreign_author<'a>(&self, authors: impl Iterator<Item = &'a str>) -> Option<usize> {
        let authors: Vec<String> = authors.map(str::to_string).collect();
        self.asked.borrow_mut().signer = Some(authors.clone());
        let key = self.signer.as_deref()?;
        authors.iter().position(|a| !a.is_empty() && a != key)
    }

    fn protected_refused(&self) -> Refused {
        Refused::Protected(None)
    }

    fn at_item(e: Refused, index: usize) -> Refused {
        let at = Some(index);
        match e {
            Refused::Time(_, e) => Refused::Time(at, e),
            Refused::Protected(_) => Refused::Protected(at),
            Refused::Signature(_, e) => Refused::Signature(at, e),
            other => other,
        }
    }

    fn hold_flush(&self) -> TestHold {
        self.asked.borrow_mut().holds += 1;
        self.holding.set(self.holding.get() + 1);
        TestHold(self.holding.clone())
    }

    fn kick(&self, urgent: u32) {
        self.asked.borrow_mut().kicks.push(urgent);
    }
}

/// The service ([`outbox::enqueue`]) over `store` for `events`, as an `enqueueMany`
/// (`indexed`), with a signer whose key is `signer` (`None`: it cannot tell).
fn run(
    store: &MemoryStore,
    signer: Option<&str>,
    hold_ms: Option<u64>,
    events: &[(&Event, Plan)],
) -> (Result<Vec<Enqueued>, Refused>, Asked) {
    run_as(store, signer, hold_ms, events, true)
}

fn run_as(
    store: &MemoryStore,
    signer: Option<&str>,
    hold_ms: Option<u64>,
    events: &[(&Event, Plan)],
    indexed: bool,
) -> (Result<Vec<Enqueued>, Refused>, Asked) {
    let host = TestHost {
        signer: signer.map(str::to_string),
        asked: RefCell::default(),
        holding: Rc::default(),
    };
    let plans: Vec<Plan> = events.iter().map(|(_, p)| p.clone()).collect();
    let checks: Vec<Option<SignatureCheck>> =
        events.iter().map(|(e, _)| Some(e.signature())).collect();
    let request = outbox::Enqueue {
        now_ms: NOW,
        hold_ms,
        plans,
        signatures: &checks,
        indexed,
        progress: None,
    };
    let result = block_on(outbox::enqueue(store, &host, request));
    // A hold never outlives the enqueue.
    assert_eq!(host.holding.get(), 0);
    (result, host.asked.into_inner())
}

#[test]
fn a_good_batch_is_stored_and_asks_the_signer_nothing() {
    let store = MemoryStore::in_memory();
    let (a, b, c) = (note(1), note(2), note(3));
    let (answers, asked) = run(
        &store,
        None,
        None,
        &[
            (&a, plan(&a)),
            (&b, plan(&b).with_priority(Priority::Low)),
            (&c, plan(&c).with_priority(Priority::High)),
        ],
    );
    let answers = answers.expect("stored");
    assert!(answers.iter().all(|a| a.outcome == EnqueueOutcome::Created));
    assert_eq!(store.len(), 3);
    // Nothing protected: the signer is not asked. A `high` plan held a running flush
    // back while it was written; the flusher was woken, two records (not the `low` one)
    // not to wait behind a backlog.
    assert_eq!(
        asked,
        Asked {
            signer: None,
            holds: 1,
            kicks: vec![2],
        }
    );
    // The same event again replays: nothing created, nothing to wake the flusher for,
    // no `high` plan to hold a flush for.
    let (again, asked) = run(&store, None, None, &[(&a, plan(&a))]);
    assert_eq!(again.expect("replayed")[0].outcome, EnqueueOutcome::Replay);
    assert_eq!(asked, Asked::default());
}

#[test]
fn a_single_enqueue_is_refused_without_an_index() {
    let store = MemoryStore::in_memory();
    let bad = event(2, 1, Vec::new(), NOW / 1_000, false);
    let (result, asked) = run_as(&store, None, None, &[(&bad, plan(&bad))], false);
    assert!(
        matches!(
            &result,
            Err(Refused::Signature(None, EventError::BadSignature { .. }))
        ),
        "{result:?}"
    );
    assert_eq!(store.len(), 0);
    assert_eq!(asked, Asked::default());
    let late = event(3, 1, Vec::new(), NOW / 1_000 + 3_600, true);
    let (result, _) = run_as(
        &store,
        None,
        None,
        &[(&late, plan(&late).with_deadline_ms(Some(NOW + 60_000)))],
        false,
    );
    assert!(matches!(&result, Err(Refused::Time(None, _))), "{result:?}");
    assert_eq!(store.len(), 0);
}

#[test]
fn a_bad_signature_writes_nothing_and_names_its_item() {
    let store = MemoryStore::in_memory();
    let (a, bad) = (note(1), event(2, 1, Vec::new(), NOW / 1_000, false));
    let (result, asked) = run(&store, None, None, &[(&a, plan(&a)), (&bad, plan(&bad))]);
    assert!(
        matches!(
            result,
            Err(Refused::Signature(Some(1), EventError::BadSignature { .. }))
        ),
        "{result:?}"
    );
    assert_eq!(store.len(), 0);
    assert_eq!(asked, Asked::default());
}

#[test]
fn events_dated_ahead_wait_for_their_time_and_the_undo_window() {
    let store = MemoryStore::in_memory();
    let ahead = event(1, 1, Vec::new(), NOW / 1_000 + 3_600, true);
    let now = note(2);
    let (answers, _) = run(
        &store,
        None,
        Some(10_000),
        &[(&ahead, plan(&ahead)), (&now, plan(&now))],
    );
    let answers = answers.expect("stored");
    let at = |i: usize| answers[i].record.due_ms.unwrap_or(0);
    // Dated an hour ahead: held until its time, less the tolerance relays allow.
    assert!(
        at(0) > NOW + 3_590_000 && at(0) <= NOW + 3_600_000,
        "{}",
        at(0)
    );
    // Dated now: held for the undo window.
    assert_eq!(at(1), NOW + 10_000);
    // An explicit time is the app's: `notBefore: 0` sends at once.
    let third = note(3);
    let (answers, _) = run(
        &store,
        None,
        Some(10_000),
        &[(&third, plan(&third).with_not_before_ms(Some(0)))],
    );
    assert!(answers.expect("stored")[0].record.due_ms.unwrap_or(0) <= NOW);
}

#[test]
fn an_event_dated_past_its_deadline_is_refused_by_index_and_nothing_is_stored() {
    let store = MemoryStore::in_memory();
    let a = note(1);
    let late = event(2, 1, Vec::new(), NOW / 1_000 + 3_600, true);
    let (result, asked) = run(
        &store,
        None,
        None,
        &[
            (&a, plan(&a)),
            (&late, plan(&late).with_deadline_ms(Some(NOW + 60_000))),
        ],
    );
    assert!(
        matches!(result, Err(Refused::Time(Some(1), _))),
        "{result:?}"
    );
    assert_eq!(store.len(), 0);
    assert_eq!(asked, Asked::default());
}

#[test]
fn a_protected_event_of_another_author_than_the_signer_is_refused() {
    let protected = |n: u8| event(n, 1, vec![vec!["-".into()]], NOW / 1_000, true);
    let (mine, theirs, plain) = (protected(1), protected(2), note(3));
    let signer = pubkey(&key(1));
    let store = MemoryStore::in_memory();
    let (result, asked) = run(
        &store,
        Some(&signer),
        None,
        &[
            (&plain, plan(&plain)),
            (&mine, plan(&mine)),
            (&theirs, plan(&theirs)),
        ],
    );
    assert_eq!(result.map(|_| ()), Err(Refused::Protected(Some(2))));
    assert_eq!(store.len(), 0);
    // Asked once, with one author per plan ("" for the one that is not protected).
    let authors = asked.signer.expect("asked");
    assert_eq!(
        authors,
        ["".to_string(), signer.clone(), theirs.pubkey().to_string()]
    );
    // The signer's own protected event goes in.
    run(&store, Some(&signer), None, &[(&mine, plan(&mine))])
        .0
        .expect("stored");
    assert_eq!(store.len(), 1);
    // A signer that cannot tell (offline) lets it in: the transport's rule still holds.
    let (result, asked) = run(&store, None, None, &[(&theirs, plan(&theirs))]);
    result.expect("stored");
    assert!(asked.signer.is_some());
}

#[test]
fn each_answer_tells_its_events() {
    let store = MemoryStore::in_memory();
    // Two versions of one replaceable slot (kind 0), the newer first.
    let newer = event(1, 0, Vec::new(), NOW / 1_000 - 10, true);
    let older = event(1, 0, Vec::new(), NOW / 1_000 - 20, true);
    let first = run(&store, None, None, &[(&newer, plan(&newer))])
        .0
        .expect("stored");
    let (own, withdrawn) = told(&first[0]);
    assert_eq!(own, Some("enqueued"));
    assert_eq!(withdrawn.count(), 0);
    // The older version is born superseded: told as `superseded`, and sent never.
    let second = run(&store, None, None, &[(&older, plan(&older))])
        .0
        .expect("stored");
    assert_eq!(second[0].outcome, EnqueueOutcome::Superseded);
    assert_eq!(told(&second[0]).0, Some("superseded"));
    // A newer one withdraws the queued version: `enqueued` for it, `superseded` for that.
    let newest = event(1, 0, Vec::new(), NOW / 1_000, true);
    let third = run(&store, None, None, &[(&newest, plan(&newest))])
        .0
        .expect("stored");
    let (own, withdrawn) = told(&third[0]);
    assert_eq!(own, Some("enqueued"));
    let withdrawn: Vec<_> = withdrawn.map(|(k, r)| (k, r.id.clone())).collect();
    assert_eq!(withdrawn, vec![("superseded", newer.id().to_string())]);
    let stored = block_on(store.get(newer.id()))
        .expect("read")
        .expect("kept");
    assert_eq!(stored.stage, Stage::Superseded);
    // A replay tells nothing.
    let replay = run(&store, None, None, &[(&newest, plan(&newest))])
        .0
        .expect("replayed");
    assert_eq!(told(&replay[0]).0, None);
}

#[test]
fn each_flusher_report_tells_one_event() {
    let store = MemoryStore::in_memory();
    let a = note(1);
    let answers = run(&store, None, None, &[(&a, plan(&a))]).0.unwrap();
    let r = &answers[0].record;
    let record = |name, ends_attempt| Tell::Record {
        name,
        record: r,
        ends_attempt,
    };
    let targets = vec![RELAYS[0].to_string()];
    let cases = [
        (
            FlushEvent::AttemptStarted {
                record: r,
                attempt: 1,
                targets: &targets,
            },
            record("attempt", false),
        ),
        (
            FlushEvent::Delivered { record: r },
            record("delivered", true),
        ),
        (FlushEvent::Retrying { record: r }, record("retrying", true)),
        (
            FlushEvent::Exhausted { record: r },
            record("exhausted", true),
        ),
        (FlushEvent::Settled { record: r }, record("settled", true)),
        (FlushEvent::Signed { record: r }, record("signed", false)),
        (FlushEvent::Released { record: r }, Tell::Change(r)),
        (FlushEvent::Woken { record: r }, Tell::Change(r)),
        (FlushEvent::LostClaim { id: &r.id }, Tell::Nothing),
    ];
    for (report, expected) in cases {
        assert_eq!(tell(&report), expected, "{report:?}");
    }
}
