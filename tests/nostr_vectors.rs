//! Cross-implementation vectors: events signed and checked by nostr-tools
//! (`scripts/vectors/generate.mjs` → `tests/data/event_vectors.json`). Our parser, id
//! and BIP-340 check must agree with nostr-tools on every one. Runs natively and in the
//! browser (wasm).

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use nostr_outbox::nostr::{verify_event_json, Event, EventError, SignatureCheck};
use serde_json::Value;

const VECTORS: &str = include_str!("data/event_vectors.json");

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
        let value = nostr_outbox::json::parse(&v.json).expect("json");
        let from_value = Event::from_value(value).expect("from_value");
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

/// `SignatureCheck::first_bad` (which parses a pubkey once for events by the same
/// author in a row) answers what checking each event alone answers, in every order:
/// a forged signature after a good one by the same key is still found, and so is an
/// event whose pubkey differs only after good ones.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn first_bad_signature_agrees_with_one_by_one() {
    let (events, alone) = events_and_verdicts();
    assert!(alone.iter().filter(|a| a.is_some()).count() >= 40);
    let first = |list: &[usize]| {
        list.iter()
            .position(|&i| alone[i].is_some())
            .map(|p| (p, alone[list[p]].clone().unwrap_or_default()))
    };
    let check = |list: &[usize]| {
        let batch: Vec<SignatureCheck> = list.iter().map(|&i| events[i].signature()).collect();
        let got = SignatureCheck::first_bad(&batch).map(|(i, e)| (i, e.to_string()));
        assert_eq!(got, first(list), "order {list:?}");
    };
    let good: Vec<usize> = (0..events.len()).filter(|&i| alone[i].is_none()).collect();
    let bad: Vec<usize> = (0..events.len()).filter(|&i| alone[i].is_some()).collect();
    // Every bad event after every run of good ones (same and other authors).
    for &b in &bad {
        check(&[good[0], good[1], b]);
        check(&[b, good[0]]);
        let same_author: Vec<usize> = good
            .iter()
            .copied()
            .filter(|&g| events[g].pubkey() == events[b].pubkey())
            .take(3)
            .chain([b])
            .collect();
        check(&same_author);
    }
    // All good: none; all of them in a few orders.
    check(&good);
    let all: Vec<usize> = (0..events.len()).collect();
    check(&all);
    let reversed: Vec<usize> = all.iter().rev().copied().collect();
    check(&reversed);
    assert_eq!(SignatureCheck::first_bad(&[]).map(|(i, _)| i), None);
    // One check alone agrees too.
    for (i, e) in events.iter().enumerate() {
        let got = e.signature().verify().err().map(|e| e.to_string());
        assert_eq!(got, alone[i], "event {i}");
    }
}

/// Runs of `BATCH_MIN` or more signatures are checked with BIP-340 batch verification
/// (`BATCH_SIZE` at a time); the answer is still what checking one by one says: every
/// bad vector is found at its place at the start, middle and end of a long run of good
/// ones, and past a full batch that passes.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn first_bad_signature_in_long_runs_agrees_with_one_by_one() {
    use nostr_outbox::nostr::event::{BATCH_MIN, BATCH_SIZE};
    let (events, alone) = events_and_verdicts();
    let good: Vec<SignatureCheck> = (0..events.len())
        .filter(|&i| alone[i].is_none())
        .map(|i| events[i].signature())
        .collect();
    let bad: Vec<usize> = (0..events.len()).filter(|&i| alone[i].is_some()).collect();
    assert!(good.len() >= 2 * BATCH_MIN);
    let run: Vec<SignatureCheck> = good.iter().take(24).cloned().collect();
    assert_eq!(SignatureCheck::first_bad(&run).map(|(i, _)| i), None);
    for &b in &bad {
        for at in [0, 1, 12, run.len()] {
            let mut list = run.clone();
            list.insert(at, events[b].signature());
            let got = SignatureCheck::first_bad(&list).map(|(i, e)| (i, e.to_string()));
            assert_eq!(
                got,
                Some((at, alone[b].clone().unwrap_or_default())),
                "bad #{b} at {at}"
            );
        }
    }
    // A full batch of good ones (passing as one), then a bad one in the next batch.
    let full: Vec<SignatureCheck> = good.iter().cycle().take(BATCH_SIZE + 3).cloned().collect();
    assert_eq!(SignatureCheck::first_bad(&full).map(|(i, _)| i), None);
    for &b in bad.iter().take(3) {
        let mut list = full.clone();
        list.insert(BATCH_SIZE + 1, events[b].signature());
        let got = SignatureCheck::first_bad(&list).map(|(i, e)| (i, e.to_string()));
        assert_eq!(
            got,
            Some((BATCH_SIZE + 1, alone[b].clone().unwrap_or_default()))
        );
    }
}
