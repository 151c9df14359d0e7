//! Cross-implementation vectors: events signed and checked by nostr-tools
//! (`scripts/vectors/generate.mjs` → `tests/data/event_vectors.json`). Our parser, id
//! and BIP-340 check must agree with nostr-tools on every one. Runs natively and in the
//! browser (wasm).

use nostr_outbox::nostr::{verify_event_json, Event, EventError, SignatureCheck};
use serde_json::Value;

/// A test with an async body, for checks that take long in an unoptimised browser
/// build: there it is a `wasm_bindgen_test` and `check_each` gives the page's event
/// loop a turn between cases (a page busy for most of a minute stops
/// answering wasm-bindgen-test-runner's WebDriver polls, and the run then fails with a
/// driver error instead of a verdict: seen in CI as "missing field `chunk`"); natively
/// it is a plain `#[test]` run to completion.
macro_rules! yielding_test {
    ($(#[$m:meta])* fn $name:ident() $body:block) => {
        $(#[$m])*
        #[cfg(not(target_arch = "wasm32"))]
        #[test]
        fn $name() {
            futures::executor::block_on(async $body)
        }

        $(#[$m])*
        #[cfg(target_arch = "wasm32")]
        #[wasm_bindgen_test::wasm_bindgen_test]
        async fn $name() $body
    };
}

const VECTORS: &str = include_str!("../data/event_vectors.json");

struct Vector {
    json: String,
    valid_id: bool,
    valid_sig: bool,
    computed_id: String,
    note: String,
}

fn vectors() -> Vec<Vector> {
    let doc: Value = serde_json::from_str(VECTORS).expect("vectors file is JSON");
    doc["vectors"]
        .as_array()
        .expect("vectors array")
        .iter()
        .map(|v| Vector {
            json: v["json"].as_str().expect("json").to_owned(),
            valid_id: v["valid_id"].as_bool().expect("valid_id"),
            valid_sig: v["valid_sig"].as_bool().expect("valid_sig"),
            computed_id: v["computed_id"].as_str().expect("computed_id").to_owned(),
            note: v["note"].as_str().expect("note").to_owned(),
        })
        .collect()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn there_are_enough_vectors() {
    let vs = vectors();
    assert!(vs.iter().filter(|v| v.valid_sig).count() >= 100);
    assert!(vs.iter().filter(|v| !v.valid_id).count() >= 40);
    assert!(vs.iter().filter(|v| v.valid_id && !v.valid_sig).count() >= 40);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn parser_id_and_signature_agree_with_nostr_tools() {
    let mut checked = 0;
    for v in vectors() {
        let event =
            Event::parse_json(&v.json).unwrap_or_else(|e| panic!("{}: parse failed: {e}", v.note));
        assert_eq!(event.raw(), v.json, "{}: raw text kept verbatim", v.note);
        assert_eq!(event.compute_id(), v.computed_id, "{}: computed id", v.note);
        assert_eq!(
            event.verify_id().is_ok(),
            v.valid_id,
            "{}: id check",
            v.note
        );
        assert_eq!(
            event.verify().is_ok(),
            v.valid_sig,
            "{}: full verify",
            v.note
        );
        assert_eq!(verify_event_json(&v.json), v.valid_sig, "{}", v.note);
        if v.valid_id {
            // The signature check alone agrees too (valid id, sig good or bad).
            assert_eq!(
                event.verify_signature().is_ok(),
                v.valid_sig,
                "{}: sig",
                v.note
            );
        } else {
            let err = event.verify().unwrap_err();
            assert_eq!(err.reason(), "id_mismatch", "{}", v.note);
            assert_eq!(err.field(), Some("id"));
            assert_eq!(err.code(), "invalid_event");
            assert_eq!(
                err,
                EventError::IdMismatch {
                    computed: v.computed_id.clone()
                }
            );
        }
        checked += 1;
    }
    assert!(checked >= 300, "checked {checked}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn value_path_agrees_with_text_path() {
    for v in vectors() {
        let from_value = Event::parse_json_compact(&v.json).expect("parse_json_compact");
        let value = serde_json::from_str(&v.json).expect("json");
        assert_eq!(Event::from_value(value).expect("from_value"), from_value);
        let from_text = Event::parse_json(&v.json).expect("parse_json");
        assert_eq!(from_value.id(), from_text.id());
        assert_eq!(from_value.compute_id(), v.computed_id, "{}", v.note);
        assert_eq!(from_value.verify().is_ok(), v.valid_sig, "{}", v.note);
        // The compact raw text made from the value parses back to the same event.
        let reparsed = Event::parse_json(from_value.raw()).expect("compact raw parses");
        assert_eq!(reparsed.canonical_json(), from_text.canonical_json());
        assert_eq!(reparsed.sig(), from_text.sig());
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn envelope_keeps_id_raw_and_expiration() {
    for v in vectors().into_iter().filter(|v| v.valid_sig) {
        let event = Event::parse_json(&v.json).expect("parse");
        let env = event.to_envelope();
        assert_eq!(env.id, event.id());
        assert_eq!(env.raw, v.json);
        assert_eq!(env.expiration, event.expiration());
        let tag = event
            .tags()
            .iter()
            .find(|t| t.first().map(String::as_str) == Some("expiration"));
        if let Some(t) = tag {
            assert_eq!(env.expiration, t.get(1).and_then(|s| s.parse().ok()));
        } else {
            assert_eq!(env.expiration, None);
        }
    }
}

/// Every vector that parses, and what checking its signature alone answers (the
/// error's text for a bad one).
fn events_and_verdicts() -> (Vec<Event>, Vec<Option<String>>) {
    let events: Vec<Event> = vectors()
        .iter()
        .filter_map(|v| Event::parse_json(&v.json).ok())
        .collect();
    let alone = events
        .iter()
        .map(|e| e.verify_signature().err().map(|e| e.to_string()))
        .collect();
    (events, alone)
}

/// One `SignatureCheck::first_bad` call: the list, what checking each signature alone
/// answers for it (the first bad one's index and error text), and a label.
type Case = (Vec<SignatureCheck>, Option<(usize, String)>, String);

/// Checks each case, giving the event loop a turn after each (see `yielding_test!`).
async fn check_each(cases: Vec<Case>) {
    for (list, want, label) in cases {
        let got = SignatureCheck::first_bad(&list).map(|(i, e)| (i, e.to_string()));
        assert_eq!(got, want, "{label}");
        event_loop_turn().await;
    }
}

/// The orders `first_bad_signature_agrees_with_one_by_one` checks (indexes into
/// `events`), each with what checking one by one answers for it.
fn order_cases(events: &[Event], alone: &[Option<String>]) -> Vec<Case> {
    let first = |list: &[usize]| {
        list.iter()
            .position(|&i| alone[i].is_some())
            .map(|p| (p, alone[list[p]].clone().unwrap_or_default()))
    };
    let good: Vec<usize> = (0..events.len()).filter(|&i| alone[i].is_none()).collect();
    let bad: Vec<usize> = (0..events.len()).filter(|&i| alone[i].is_some()).collect();
    let mut orders: Vec<Vec<usize>> = Vec::new();
    // Every bad event after every run of good ones (same and other authors).
    for &b in &bad {
        orders.push(vec![good[0], good[1], b]);
        orders.push(vec![b, good[0]]);
        let same_author: Vec<usize> = good
            .iter()
            .copied()
            .filter(|&g| events[g].pubkey() == events[b].pubkey())
            .take(3)
            .chain([b])
            .collect();
        orders.push(same_author);
    }
    // All good: none; all of them in a few orders.
    orders.push(good);
    let all: Vec<usize> = (0..events.len()).collect();
    orders.push(all.iter().rev().copied().collect());
    orders.push(all);
    orders
        .into_iter()
        .map(|list| {
            let checks = list.iter().map(|&i| events[i].signature()).collect();
            (checks, first(&list), format!("order {list:?}"))
        })
        .collect()
}

yielding_test! {
    /// `SignatureCheck::first_bad` (which parses a pubkey once for events by the same
    /// author in a row) answers what checking each event alone answers, in every order:
    /// a forged signature after a good one by the same key is still found, and so is an
    /// event whose pubkey differs only after good ones.
    fn first_bad_signature_agrees_with_one_by_one() {
        let (events, alone) = events_and_verdicts();
        assert!(alone.iter().filter(|a| a.is_some()).count() >= 40);
        check_each(order_cases(&events, &alone)).await;
        assert_eq!(SignatureCheck::first_bad(&[]).map(|(i, _)| i), None);
        // One check alone agrees too.
        for (i, e) in events.iter().enumerate() {
            let got = e.signature().verify().err().map(|e| e.to_string());
            assert_eq!(got, alone[i], "event {i}");
        }
    }
}

/// The cases of `first_bad_signature_in_long_runs_agrees_with_one_by_one`: every bad
/// vector at the start, middle and end of a long run of good ones, and past a full
/// batch that passes.
fn long_run_cases() -> Vec<Case> {
    use nostr_outbox::nostr::event::{BATCH_MIN, BATCH_SIZE};
    let (events, alone) = events_and_verdicts();
    let good: Vec<SignatureCheck> = (0..events.len())
        .filter(|&i| alone[i].is_none())
        .map(|i| events[i].signature())
        .collect();
    let bad: Vec<usize> = (0..events.len()).filter(|&i| alone[i].is_some()).collect();
    assert!(good.len() >= 2 * BATCH_MIN);
    let run: Vec<SignatureCheck> = good.iter().take(24).cloned().collect();
    let mut cases = vec![(run.clone(), None, "24 good".to_owned())];
    for &b in &bad {
        for at in [0, 1, 12, run.len()] {
            let mut list = run.clone();
            list.insert(at, events[b].signature());
            let want = Some((at, alone[b].clone().unwrap_or_default()));
            cases.push((list, want, format!("bad #{b} at {at}")));
        }
    }
    // A full batch of good ones (passing as one), then a bad one in the next batch.
    let full: Vec<SignatureCheck> = good.iter().cycle().take(BATCH_SIZE + 3).cloned().collect();
    cases.push((full.clone(), None, format!("{} good", full.len())));
    for &b in bad.iter().take(3) {
        let mut list = full.clone();
        list.insert(BATCH_SIZE + 1, events[b].signature());
        let want = Some((BATCH_SIZE + 1, alone[b].clone().unwrap_or_default()));
        cases.push((list, want, format!("bad #{b} after a full batch")));
    }
    cases
}

yielding_test! {
    /// Runs of `BATCH_MIN` or more signatures are checked with BIP-340 batch
    /// verification (`BATCH_SIZE` at a time); the answer is still what checking one by
    /// one says.
    fn first_bad_signature_in_long_runs_agrees_with_one_by_one() {
        check_each(long_run_cases()).await;
    }
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen(inline_js = "
export function eventLoopTurn() { return new Promise((r) => setTimeout(r, 0)); }
")]
extern "C" {
    #[wasm_bindgen(js_name = eventLoopTurn)]
    fn event_loop_turn_promise() -> js_sys::Promise;
}

#[cfg(target_arch = "wasm32")]
async fn event_loop_turn() {
    // The promise only ever resolves.
    let _ = wasm_bindgen_futures::JsFuture::from(event_loop_turn_promise()).await;
}

#[cfg(not(target_arch = "wasm32"))]
async fn event_loop_turn() {}
