//! The enqueue service (`nostr_outbox::outbox`) over the memory store with a fake host:
//! the time rule and the undo window, protected events, signatures checked in the
//! store's transaction, the hold while `high` records are written, the flusher woken
//! with the number of urgent records, and the events each answer tells. Every refusal
//! leaves the store as it was.
#![cfg(not(target_arch = "wasm32"))]

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::executor::block_on;
use k256::schnorr::SigningKey;
use sha2::{Digest, Sha256};

use nostr_outbox::core::{EnqueueOutcome, Plan, Policy, Priority, Stage};
use nostr_outbox::flush::FlushEvent;
use nostr_outbox::nostr::{Event, EventError, SignatureCheck};
use nostr_outbox::outbox::{enqueue, tell, told, EnqueueError, Host, Tell};
use nostr_outbox::store::conformance::RELAYS;
use nostr_outbox::store::{MemoryStore, Store};

/// 2026-12-04 00:00:00 UTC, in ms.
const NOW: u64 = 1_796_342_400_000;

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&Sha256::digest([b'e', n])[..]).expect("a valid secret key")
}

/// An event by key `n`, signed (or with its signature spoilt when `!good`).
fn event(n: u8, kind: u16, tags: Vec<Vec<String>>, created_at: u64, good: bool) -> Event {
    let sk = key(n);
    let pubkey = hex::encode(sk.verifying_key().to_bytes());
    let content = format!("enqueue service {n} {kind} {created_at}");
    let unsigned = Event::from_parts(
        "0".repeat(64),
        pubkey.clone(),
        created_at,
        kind,
        tags.clone(),
        content.clone(),
        "0".repeat(128),
    )
    .expect("unsigned event");
    let id = unsigned.compute_id();
    let digest = hex::decode(&id).expect("hex id");
    let mut sig = sk
        .sign_raw(&digest, &[7; 32])
        .expect("sign")
        .to_bytes()
        .to_vec();
    if !good {
        sig[63] ^= 1;
    }
    Event::from_parts(
        id,
        pubkey,
        created_at,
        kind,
        tags,
        content,
        hex::encode(sig),
    )
    .expect("event")
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

/// A host that counts what it is asked and answers as told.
#[derive(Default)]
struct FakeHost {
    /// Holds taken, and held now.
    holds: Cell<u32>,
    held: Rc<Cell<u32>>,
    /// Each `created(urgent)`.
    woken: RefCell<Vec<u32>>,
    /// Each `foreign_author` question.
    asked: RefCell<Vec<Vec<String>>>,
    /// The signer's key: authors other than it are foreign. `None`: cannot tell.
    signer: Option<String>,
}

struct Held(Rc<Cell<u32>>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

impl Host for FakeHost {
    type Hold = Held;

    fn hold(&self) -> Held {
        self.holds.set(self.holds.get() + 1);
        self.held.set(self.held.get() + 1);
        Held(Rc::clone(&self.held))
    }

    fn created(&self, urgent: u32) {
        self.woken.borrow_mut().push(urgent);
    }

    async fn foreign_author(&self, authors: &[&str]) -> Option<usize> {
        self.asked
            .borrow_mut()
            .push(authors.iter().map(|a| a.to_string()).collect());
        let signer = self.signer.as_deref()?;
        authors.iter().position(|a| !a.is_empty() && *a != signer)
    }
}

fn run(
    store: &MemoryStore,
    host: &FakeHost,
    hold_ms: Option<u64>,
    events: &[(&Event, Plan)],
    indexed: bool,
) -> Result<Vec<nostr_outbox::core::Enqueued>, EnqueueError> {
    let plans = events.iter().map(|(_, p)| p.clone()).collect();
    let checks: Vec<Option<SignatureCheck>> =
        events.iter().map(|(e, _)| Some(e.signature())).collect();
    block_on(enqueue(
        store, host, NOW, hold_ms, plans, &checks, indexed, None,
    ))
}

#[test]
fn a_good_batch_is_stored_and_wakes_the_flusher_with_its_urgent_count() {
    let store = MemoryStore::in_memory();
    let host = FakeHost::default();
    let (a, b, c) = (note(1), note(2), note(3));
    let answers = run(
        &store,
        &host,
        None,
        &[
            (&a, plan(&a)),
            (&b, plan(&b).with_priority(Priority::Low)),
            (&c, plan(&c).with_priority(Priority::High)),
        ],
        true,
    )
    .expect("stored");
    assert_eq!(answers.len(), 3);
    assert!(answers.iter().all(|a| a.outcome == EnqueueOutcome::Created));
    assert_eq!(store.len(), 3);
    // Two of three are not `low`: a running flush claims those at once.
    assert_eq!(*host.woken.borrow(), vec![2]);
    // A `high` record was written under a hold, released once stored.
    assert_eq!((host.holds.get(), host.held.get()), (1, 0));
    // Nothing protected: the signer is not asked.
    assert!(host.asked.borrow().is_empty());

    // The same batch again replays: nothing new, nobody woken, no hold without `high`.
    let again = run(&store, &host, None, &[(&a, plan(&a))], false).expect("replayed");
    assert_eq!(again[0].outcome, EnqueueOutcome::Replay);
    assert_eq!(*host.woken.borrow(), vec![2]);
    assert_eq!(host.holds.get(), 1);
}

#[test]
fn a_bad_signature_writes_nothing_and_names_its_item() {
    let store = MemoryStore::in_memory();
    let host = FakeHost::default();
    let (a, bad) = (note(1), event(2, 1, Vec::new(), NOW / 1_000, false));
    let e = run(
        &store,
        &host,
        None,
        &[(&a, plan(&a)), (&bad, plan(&bad))],
        true,
    )
    .expect_err("refused");
    assert!(
        matches!(
            e,
            EnqueueError::Signature {
                error: Some(EventError::BadSignature { .. }),
                index: Some(1)
            }
        ),
        "{e:?}"
    );
    assert_eq!(store.len(), 0);
    assert!(host.woken.borrow().is_empty());
    // Without indices (`enqueue`), the same error names no item.
    let e = run(&store, &host, None, &[(&bad, plan(&bad))], false).expect_err("refused");
    assert!(
        matches!(e, EnqueueError::Signature { index: None, .. }),
        "{e:?}"
    );
    assert_eq!(store.len(), 0);
}

#[test]
fn events_dated_ahead_wait_for_their_time_and_the_undo_window() {
    let store = MemoryStore::in_memory();
    let host = FakeHost::default();
    let ahead = event(1, 1, Vec::new(), NOW / 1_000 + 3_600, true);
    let now = note(2);
    let answers = run(
        &store,
        &host,
        Some(10_000),
        &[(&ahead, plan(&ahead)), (&now, plan(&now))],
        true,
    )
    .expect("stored");
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
    let answers = run(
        &store,
        &host,
        Some(10_000),
        &[(&third, plan(&third).with_not_before_ms(Some(0)))],
        false,
    )
    .expect("stored");
    assert!(answers[0].record.due_ms.unwrap_or(0) <= NOW);
}

#[test]
fn an_event_dated_past_its_deadline_is_refused_by_index_and_nothing_is_stored() {
    let store = MemoryStore::in_memory();
    let host = FakeHost::default();
    let a = note(1);
    let late = event(2, 1, Vec::new(), NOW / 1_000 + 3_600, true);
    let e = run(
        &store,
        &host,
        None,
        &[
            (&a, plan(&a)),
            (&late, plan(&late).with_deadline_ms(Some(NOW + 60_000))),
        ],
        true,
    )
    .expect_err("refused");
    assert!(
        matches!(e, EnqueueError::Core { index: Some(1), .. }),
        "{e:?}"
    );
    assert_eq!(store.len(), 0);
    assert!(host.woken.borrow().is_empty());
}

#[test]
fn a_protected_event_of_another_author_than_the_signer_is_refused() {
    let protected = |n: u8| event(n, 1, vec![vec!["-".into()]], NOW / 1_000, true);
    let (mine, theirs, plain) = (protected(1), protected(2), note(3));
    let signer = hex::encode(key(1).verifying_key().to_bytes());
    let store = MemoryStore::in_memory();
    let host = FakeHost {
        signer: Some(signer.clone()),
        ..FakeHost::default()
    };
    let e = run(
        &store,
        &host,
        None,
        &[
            (&plain, plan(&plain)),
            (&mine, plan(&mine)),
            (&theirs, plan(&theirs)),
        ],
        true,
    )
    .expect_err("refused");
    assert_eq!(e, EnqueueError::Protected { index: Some(2) });
    assert_eq!(store.len(), 0);
    // Asked once, with one author per plan ("" for the one that is not protected).
    let asked = host.asked.borrow().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0][0], "");
    assert_eq!(asked[0][1], signer);
    assert_eq!(asked[0][2], theirs.pubkey());
    // The signer's own protected event goes in.
    run(&store, &host, None, &[(&mine, plan(&mine))], false).expect("stored");
    assert_eq!(store.len(), 1);
    // A signer that cannot tell (offline) lets it in: the transport's rule still holds.
    let unsure = FakeHost::default();
    run(&store, &unsure, None, &[(&theirs, plan(&theirs))], false).expect("stored");
    assert_eq!(unsure.asked.borrow().len(), 1);
}

#[test]
fn each_answer_tells_its_events() {
    let store = MemoryStore::in_memory();
    let host = FakeHost::default();
    // Two versions of one replaceable slot (kind 0), the newer first.
    let newer = event(1, 0, Vec::new(), NOW / 1_000 - 10, true);
    let older = event(1, 0, Vec::new(), NOW / 1_000 - 20, true);
    let first = run(&store, &host, None, &[(&newer, plan(&newer))], false).expect("stored");
    let (own, withdrawn) = told(&first[0]);
    assert_eq!(own, Some("enqueued"));
    assert_eq!(withdrawn.count(), 0);
    // The older version is born superseded: told as `superseded`, and sent never.
    let second = run(&store, &host, None, &[(&older, plan(&older))], false).expect("stored");
    assert_eq!(second[0].outcome, EnqueueOutcome::Superseded);
    assert_eq!(told(&second[0]).0, Some("superseded"));
    // A newer one withdraws the queued version: `enqueued` for it, `superseded` for that.
    let newest = event(1, 0, Vec::new(), NOW / 1_000, true);
    let third = run(&store, &host, None, &[(&newest, plan(&newest))], false).expect("stored");
    let (own, withdrawn) = told(&third[0]);
    assert_eq!(own, Some("enqueued"));
    let withdrawn: Vec<_> = withdrawn.map(|(k, r)| (k, r.id.clone())).collect();
    assert_eq!(withdrawn, vec![("superseded", newer.id().to_string())]);
    let stored = block_on(store.get(newer.id()))
        .expect("read")
        .expect("kept");
    assert_eq!(stored.stage, Stage::Superseded);
    // A replay tells nothing.
    let replay = run(&store, &host, None, &[(&newest, plan(&newest))], false).expect("replayed");
    assert_eq!(told(&replay[0]).0, None);
}

#[test]
fn each_flusher_report_tells_one_event() {
    let store = MemoryStore::in_memory();
    let a = note(1);
    let answers = run(&store, &FakeHost::default(), None, &[(&a, plan(&a))], false).unwrap();
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
