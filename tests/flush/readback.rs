//! Read-back: after an answer that left it unclear whether a relay stored the event (a
//! timeout; a connection closed after the `EVENT` was written), the flusher asks that
//! relay for the event by id before sending it again, and records it as held when the
//! relay sends it back (`duplicate`, "read back:", `TickStats::read_back`).
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use nostr_outbox::core::{Outcome, Policy, Stage, READ_BACK, UNANSWERED};
use nostr_outbox::flush::{flush_until_idle, FlushSummary};
use nostr_outbox::store::conformance::{fixture_plan, RELAYS};
use nostr_outbox::store::{MemoryStore, Store};
use nostr_outbox::transport::ScriptedTransport;

use crate::support::{config, counter};

/// A whole flush at `now` (ms).
fn flush_at(store: &MemoryStore, t: &ScriptedTransport, now: u64) -> FlushSummary {
    block_on(flush_until_idle(
        store,
        t,
        &config(10, 4),
        &|| now,
        &mut counter(),
        &mut |_| {},
        100,
    ))
    .expect("flush")
}

/// One record to `RELAYS[0]` whose first publish answered `first` with `message`.
fn after_first(first: Outcome, message: &str) -> (MemoryStore, ScriptedTransport, String) {
    let store = MemoryStore::in_memory();
    let plan = fixture_plan(1, &RELAYS[..1], Policy::All);
    let id = plan.event.id.clone();
    block_on(store.enqueue(plan, 0)).expect("enqueue");
    let t = ScriptedTransport::new();
    t.push(RELAYS[0], first, message);
    let s = flush_at(&store, &t, 0);
    assert_eq!((s.stats.retrying, s.stats.read_back), (1, 0), "{s:?}");
    // The first send asks nothing: there was no answer yet.
    assert!(t.asked().is_empty());
    (store, t, id)
}

#[test]
fn a_relay_that_sends_the_event_back_after_a_timeout_is_not_sent_it_again() {
    let (store, t, id) = after_first(Outcome::Timeout, "no OK within 10000 ms");
    t.holding(RELAYS[0], &id, true);
    let s = flush_at(&store, &t, 60_000);
    assert_eq!((s.stats.satisfied, s.stats.read_back), (1, 1), "{s:?}");
    assert_eq!(t.asked(), vec![(RELAYS[0].to_string(), id.clone())]);
    assert_eq!(
        t.count(RELAYS[0], &id),
        1,
        "sent once, at the first attempt"
    );
    let record = block_on(store.get(&id)).unwrap().unwrap();
    assert_eq!(record.stage, Stage::Satisfied);
    let latest = record.latest_evidence(RELAYS[0]).unwrap();
    assert_eq!((latest.outcome, latest.attempt), (Outcome::Duplicate, 2));
    assert_eq!(latest.message, READ_BACK);
    assert!(READ_BACK.starts_with("read back:"));
}

#[test]
fn a_connection_closed_after_the_event_was_written_is_read_back_too() {
    let (store, t, id) = after_first(
        Outcome::Unreachable,
        &format!("connection closed (code 1006) {UNANSWERED}"),
    );
    t.holding(RELAYS[0], &id, true);
    let s = flush_at(&store, &t, 60_000);
    assert_eq!(s.stats.read_back, 1, "{s:?}");
    assert_eq!(t.count(RELAYS[0], &id), 1);
}

#[test]
fn a_relay_that_does_not_hold_it_or_cannot_tell_is_sent_it_again() {
    for holds in [Some(false), None] {
        let (store, t, id) = after_first(Outcome::Timeout, "no OK within 10000 ms");
        if let Some(h) = holds {
            t.holding(RELAYS[0], &id, h);
        }
        t.push(RELAYS[0], Outcome::Accepted, "");
        let s = flush_at(&store, &t, 60_000);
        assert_eq!((s.stats.satisfied, s.stats.read_back), (1, 0), "{holds:?}");
        assert_eq!(t.asked().len(), 1, "asked first");
        assert_eq!(t.count(RELAYS[0], &id), 2, "then sent again");
        let record = block_on(store.get(&id)).unwrap().unwrap();
        assert_eq!(
            record.latest_evidence(RELAYS[0]).unwrap().outcome,
            Outcome::Accepted
        );
    }
}

#[test]
fn clear_answers_are_not_read_back() {
    // A relay never reached (nothing written), or one that answered: nothing to ask.
    for (first, message) in [
        (Outcome::Unreachable, "cannot connect: refused"),
        (Outcome::Error, "error: try later"),
        (Outcome::RateLimited, "rate-limited: slow down"),
    ] {
        let (store, t, id) = after_first(first, message);
        t.holding(RELAYS[0], &id, true);
        t.push(RELAYS[0], Outcome::Accepted, "");
        let s = flush_at(&store, &t, 120_000);
        assert_eq!((s.stats.satisfied, s.stats.read_back), (1, 0), "{first:?}");
        assert!(t.asked().is_empty(), "{first:?}");
        assert_eq!(t.count(RELAYS[0], &id), 2);
    }
}
