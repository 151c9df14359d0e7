//! Property tests of the Nostr layer on arbitrary input: event, relay-message and
//! relay-URL parsing never panic on any bytes; the canonical serialization is valid
//! JSON for the same values; normalization is idempotent. Native only.
//!
//! The default run is brief (a few seconds, part of `make test`). For a long run:
//! `PROPTEST_CASES=200000 cargo test --release --test nostr_proptest`.
#![cfg(not(target_arch = "wasm32"))]

use nostr_outbox::nostr::{
    classify_ok, normalize_targets, verify_event_json, Event, RelayMessage, RelayUrl,
    SignatureCheck,
};
use proptest::prelude::*;

use crate::sig_support;
use serde_json::{json, Value};
use sig_support::cases;

const VECTORS: &str = include_str!("../data/event_vectors.json");

/// JavaScript's JSON.stringify for a string, modelled char by char.
fn stringify(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn valid_jsons() -> &'static [String] {
    static CACHE: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    CACHE.get_or_init(load_valid_jsons)
}

fn load_valid_jsons() -> Vec<String> {
    let doc: Value = serde_json::from_str(VECTORS).unwrap();
    doc["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["valid_sig"] == json!(true))
        .map(|v| v["json"].as_str().unwrap().to_owned())
        .filter(|j| j.len() < 4096)
        .collect()
}

/// JSON-ish text: brackets, quotes, escapes, numbers, keywords and field names.
fn jsonish() -> impl Strategy<Value = String> {
    const TOKENS: &[&str] = &[
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        "\"",
        "\\",
        "\\u",
        "\\ud800",
        "\\n",
        "true",
        "null",
        "-",
        "0",
        "1",
        "1.5",
        "1e999",
        "18446744073709551616",
        "\"OK\"",
        "\"EVENT\"",
        "\"AUTH\"",
        "\"CLOSED\"",
        "\"id\"",
        "\"tags\"",
        "\"kind\"",
        "\"created_at\"",
        "\"sig\"",
        "\"4376c65d2f232afbe9b882a35baa4f6fe8667c4e684749af565f981833ed6a65\"",
        "\u{0}",
        "é",
        "😀",
        " ",
    ];
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(cases(1000))]

    #[test]
    fn parsers_never_panic_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = Event::parse_json(&text);
        let _ = verify_event_json(&text);
        let _ = RelayMessage::parse(&text, 256);
        let _ = RelayMessage::parse(&text, usize::MAX);
        let _ = RelayUrl::parse(&text);
        let _ = classify_ok(bytes.first().is_some_and(|b| b & 1 == 1), &text);
    }

    #[test]
    fn parsers_never_panic_on_jsonish(text in jsonish()) {
        let _ = Event::parse_json(&text);
        let _ = RelayMessage::parse(&text, 1 << 20);
        let _ = RelayUrl::parse(&text);
        let _ = Event::parse_json_compact(&text);
        if let Ok(v) = serde_json::from_str(&text) {
            let _ = Event::from_value(v);
        }
    }

    #[test]
    fn relay_frames_with_any_payload(ty in "[A-Z]{0,6}|OK|EVENT|AUTH|NOTICE|CLOSED|EOSE",
                                     a in any::<Option<String>>(), b in any::<Option<bool>>(),
                                     c in any::<Option<String>>()) {
        let mut arr = vec![json!(ty)];
        arr.extend(a.map(Value::from));
        arr.extend(b.map(Value::from));
        arr.extend(c.map(Value::from));
        let text = Value::Array(arr).to_string();
        let msg = RelayMessage::parse(&text, 1 << 20);
        let too_large = matches!(msg, RelayMessage::TooLarge { .. });
        prop_assert!(!too_large, "{:?}", msg);
    }

    #[test]
    fn relay_urls_never_panic_and_normalize_idempotently(
        scheme in "(?i:wss?|https?|)",
        sep in "://|:/|",
        host in "[a-zA-Z0-9.:_\\[\\]@%-]{0,20}",
        port in "(:[0-9]{0,6})?",
        tail in "[ -~]{0,20}",
    ) {
        let s = format!("{scheme}{sep}{host}{port}{tail}");
        if let Ok(u) = RelayUrl::parse(&s) {
            let again = RelayUrl::parse(u.as_str()).expect("a normalized URL parses");
            prop_assert_eq!(again.as_str(), u.as_str());
            prop_assert_eq!(normalize_targets(&[u.as_str(), &s]).unwrap().len(), 1);
        }
    }

    #[test]
    fn canonical_serialization_is_json_of_the_same_values(
        content in any::<String>(),
        tags in prop::collection::vec(prop::collection::vec(any::<String>(), 0..4), 0..4),
        created_at in 0u64..=9_007_199_254_740_991,
        kind in any::<u16>(),
    ) {
        let pk = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798";
        let e = Event::from_parts("0".repeat(64), pk.into(), created_at, kind, tags.clone(),
                                  content.clone(), "0".repeat(128)).unwrap();
        let canon: Value = serde_json::from_str(&e.canonical_json()).unwrap();
        prop_assert_eq!(canon, json!([0, pk, created_at, kind, tags, content]));
        // Byte for byte what JSON.stringify makes, per an independent char-wise model.
        let c = e.canonical_json();
        let model = format!("[0,\"{pk}\",{created_at},{kind},[{}],{}]",
            tags.iter().map(|t| format!("[{}]", t.iter().map(|s| stringify(s)).collect::<Vec<_>>().join(",")))
                .collect::<Vec<_>>().join(","),
            stringify(&content));
        prop_assert_eq!(&c, &model);
        // The compact raw text parses back to the same event.
        let back = Event::parse_json(e.raw()).unwrap();
        prop_assert_eq!(back.canonical_json(), c);
    }
}

proptest! {
    #![proptest_config(cases(300))]

    #[test]
    fn mutated_vectors_never_panic_or_forge(idx in any::<prop::sample::Index>(),
                                            at in any::<prop::sample::Index>(),
                                            byte in any::<u8>()) {
        let jsons = valid_jsons();
        let original = &jsons[idx.index(jsons.len())];
        let mut bytes = original.clone().into_bytes();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(e) = Event::parse_json(&text) {
            if e.verify().is_ok() {
                // Only changes that keep the signed values can verify.
                let orig = Event::parse_json(original).unwrap();
                prop_assert_eq!(e.canonical_json(), orig.canonical_json());
                prop_assert_eq!(e.id(), orig.id());
            }
        }
    }
}

proptest! {
    #![proptest_config(cases(120))]

    /// `SignatureCheck::first_bad` over runs long enough for BIP-340 batch verification
    /// answers what one-by-one checks answer, with or without one hex digit changed in
    /// one item's id, pubkey or sig.
    #[test]
    fn batch_signature_check_agrees_with_one_by_one(
        picks in prop::collection::vec(any::<prop::sample::Index>(), 4..48),
        corrupt in prop::option::of((any::<prop::sample::Index>(), 0usize..3,
                                     any::<prop::sample::Index>(), 0u8..16)),
    ) {
        let jsons = valid_jsons();
        let mut events: Vec<Event> = picks
            .iter()
            .map(|p| Event::parse_json(&jsons[p.index(jsons.len())]).unwrap())
            .collect();
        if let Some((item, field, digit, value)) = corrupt {
            let item = item.index(events.len());
            let e = &events[item];
            let old = match field { 0 => e.id(), 1 => e.pubkey(), _ => e.sig() }.to_string();
            let mut new = old.clone().into_bytes();
            let at = digit.index(new.len());
            new[at] = b"0123456789abcdef"[usize::from(value)];
            let new = String::from_utf8(new).unwrap();
            let text = e.raw().replace(&format!("\"{old}\""), &format!("\"{new}\""));
            events[item] = Event::parse_json(&text).unwrap();
        }
        let checks: Vec<SignatureCheck> = events.iter().map(Event::signature).collect();
        let one_by_one = events
            .iter()
            .enumerate()
            .find_map(|(i, e)| e.verify_signature().err().map(|err| (i, err.to_string())));
        let batch = SignatureCheck::first_bad(&checks).map(|(i, err)| (i, err.to_string()));
        prop_assert_eq!(batch, one_by_one);
    }
}
