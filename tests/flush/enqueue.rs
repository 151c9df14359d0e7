//! The enqueue service's rules (`nostr_outbox::outbox`), performed in their order over
//! the memory store as the JavaScript layer performs them: the time rule and the undo
//! window, protected events, signatures checked in the store's transaction, and the
//! events each answer and each flusher report tell. Every refusal leaves the store as
//! it was.
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use serde_json::json;

use nostr_outbox::core::{CoreError, EnqueueOutcome, Enqueued, Plan, Policy, Priority, Stage};
use nostr_outbox::flush::FlushEvent;
use nostr_outbox::nostr::{Event, EventError, SignatureCheck};
use nostr_outbox::outbox::{tell, told, Tell};
use nostr_outbox::store::conformance::RELAYS;
use nostr_outbox::store::{MemoryStore, Store};

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

/// Why a run of the rules wrote nothing.
#[derive(Debug, PartialEq)]
enum Refused {
    /// The time rule refused plan `.0`.
    Time(usize, CoreError),
    /// Plan `.0` is protected and its author is not the signer's key.
    Protected(usize),
    /// Plan `.0`'s signature does not verify.
    Signature(usize, EventError),
}

/// What the runtime was asked during a run.
#[derive(Debug, Default, PartialEq)]
struct Asked {
    /// The authors the signer was asked about, if it was.
    signer: Option<Vec<String>>,
}

/// The service's rules in their order, as `src/js/outbox.rs` performs them, with a
/// signer whose key is `signer` (`None`: it cannot tell).
fn run(
    store: &MemoryStore,
    signer: Option<&str>,
    hold_ms: Option<u64>,
    events: &[(&Event, Plan)],
) -> (Result<Vec<Enqueued>, Refused>, Asked) {
    let mut asked = Asked::default();
    let plans: Vec<Plan> = events.iter().map(|(_, p)| p.clone()).collect();
    let checks: Vec<Option<SignatureCheck>> =
        events.iter().map(|(e, _)| Some(e.signature())).collect();
    let undo_until = hold_ms.map(|ms| NOW + ms);
    let mut held = Vec::new();
    for (i, plan) in plans.into_iter().enumerate() {
        match plan.hold_until_created_at(NOW, undo_until) {
            Ok(plan) => held.push(plan),
            Err(e) => return (Err(Refused::Time(i, e)), asked),
        }
    }
    let plans = held;
    let protected = |p: &Plan| {
        p.event
            .meta
            .as_ref()
            .filter(|m| m.protected)
            .map(|m| m.pubkey.clone())
    };
    if plans.iter().any(|p| protected(p).is_some()) {
        let authors: Vec<String> = plans
            .iter()
            .map(|p| protected(p).unwrap_or_default())
            .collect();
        asked.signer = Some(authors.clone());
        let foreign =
            signer.and_then(|key| authors.iter().position(|a| !a.is_empty() && *a != key));
        if let Some(i) = foreign {
            return (Err(Refused::Protected(i)), asked);
        }
    }
    let mut failed = None;
    let mut check = || {
        failed = SignatureCheck::first_bad_of(&checks);
        failed.is_none()
    };
    let answers = block_on(store.enqueue_many_checked(plans, NOW, &mut check, None))
        .expect("the memory store answers");
    let Some(answers) = answers else {
        let (i, e) = failed.expect("the check failed");
        return (Err(Refused::Signature(i, e)), asked);
    };
    (Ok(answers), asked)
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
    // Nothing protected: the signer is not asked.
    assert_eq!(asked, Asked::default());
    // The same event again replays.
    let (again, asked) = run(&store, None, None, &[(&a, plan(&a))]);
    assert_eq!(again.expect("replayed")[0].outcome, EnqueueOutcome::Replay);
    assert_eq!(asked, Asked::default());
}

#[test]
fn a_bad_signature_writes_nothing_and_names_its_item() {
    let store = MemoryStore::in_memory();
    let (a, bad) = (note(1), event(2, 1, Vec::new(), NOW / 1_000, false));
    let (result, asked) = run(&store, None, None, &[(&a, plan(&a)), (&bad, plan(&bad))]);
    assert!(
        matches!(
            result,
            Err(Refused::Signature(1, EventError::BadSignature { .. }))
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
    assert!(matches!(result, Err(Refused::Time(1, _))), "{result:?}");
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
    assert_eq!(result.map(|_| ()), Err(Refused::Protected(2)));
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
