//! Event shape checks: every field's type and format, the typed errors (code, reason,
//! field), unknown and duplicate fields, the canonical serialization, `from_parts`,
//! and the NIP-40 expiration. Runs natively and in the browser (wasm).

use nostr_outbox::nostr::{Event, EventError, MAX_CREATED_AT};
use serde_json::{json, Value};

const ID: &str = "0000000000000000000000000000000000000000000000000000000000000001";
const PK: &str = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798";
const SIG: &str = "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001";

fn base() -> Value {
    json!({
        "id": ID,
        "pubkey": PK,
        "created_at": 1_700_000_000u64,
        "kind": 1,
        "tags": [["e", "abc"], ["expiration", "1800000000"]],
        "content": "hi",
        "sig": SIG,
    })
}

fn with(field: &str, v: Value) -> String {
    let mut b = base();
    b[field] = v;
    b.to_string()
}

fn without(field: &str) -> String {
    let mut b = base();
    b.as_object_mut().unwrap().remove(field);
    b.to_string()
}

fn err(text: &str) -> EventError {
    let e = Event::parse_json(text).expect_err(text);
    assert_eq!(e.code(), "invalid_event");
    // Not JSON exactly when serde_json, the oracle, says so.
    assert_eq!(
        e.reason() == "not_json",
        serde_json::from_str::<Value>(text).is_err(),
        "{text}"
    );
    // The compact path (the JavaScript layer's) refuses it the same way.
    assert_eq!(
        Event::parse_json_compact(text).expect_err(text),
        e,
        "{text}"
    );
    // So does the value path, when serde_json reads the text (a value keeps one copy
    // of a repeated field, so a repeat is all it cannot see).
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        if e.reason() != "duplicate_field" {
            assert_eq!(
                Event::from_value(v).expect_err(text).reason(),
                e.reason(),
                "{text}"
            );
        }
    }
    e
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_well_formed_event_parses() {
    let text = base().to_string();
    let e = Event::parse_json(&text).unwrap();
    assert_eq!(e.id(), ID);
    assert_eq!(e.pubkey(), PK);
    assert_eq!(e.created_at(), 1_700_000_000);
    assert_eq!(e.kind(), 1);
    assert_eq!(e.tags().len(), 2);
    assert_eq!(e.content(), "hi");
    assert_eq!(e.sig(), SIG);
    assert_eq!(e.raw(), text);
    assert_eq!(e.expiration(), Some(1_800_000_000));
    assert!(e.is_expired(1_800_000_000));
    assert!(!e.is_expired(1_799_999_999));
    assert_eq!(e.tag_value("e"), Some("abc"));
    assert_eq!(e.tag_value("p"), None);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn not_json_or_not_an_object() {
    for text in ["", "{", "nope", "{\"id\":1,}", "[1,2", "\u{feff}{}", "{} x"] {
        let e = err(text);
        assert_eq!(e.reason(), "not_json", "{text:?}");
        assert_eq!(e.field(), None);
    }
    for (text, found) in [
        ("[]", "an array"),
        ("[1,{\"a\":[]}]", "an array"),
        ("null", "null"),
        ("true", "a boolean"),
        ("1.5", "a number"),
        ("-3", "a number"),
        ("\"s\"", "a string"),
    ] {
        assert_eq!(err(text), EventError::NotObject { found }, "{text}");
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn every_field_is_required() {
    for field in [
        "id",
        "pubkey",
        "created_at",
        "kind",
        "tags",
        "content",
        "sig",
    ] {
        let e = err(&without(field));
        assert_eq!(e.reason(), "missing_field");
        assert_eq!(e.field(), Some(field));
        assert!(e.to_string().contains(field), "{e}");
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn wrong_types_name_the_field() {
    let cases: Vec<(&str, Value)> = vec![
        ("id", json!(1)),
        ("id", Value::Null),
        ("pubkey", json!([PK])),
        ("created_at", json!("1700000000")),
        ("created_at", Value::Null),
        ("kind", json!("1")),
        ("kind", json!(true)),
        ("tags", json!({})),
        ("tags", json!("e")),
        ("content", json!(5)),
        ("content", Value::Null),
        ("sig", json!({"s": SIG})),
    ];
    for (field, v) in cases {
        let e = err(&with(field, v.clone()));
        assert_eq!(e.reason(), "wrong_type", "{field} = {v}");
        assert_eq!(e.field(), Some(field));
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn tags_must_be_arrays_of_strings() {
    let e = err(&with("tags", json!([["e", "x"], "p"])));
    assert_eq!(
        e.to_string(),
        "invalid event: `tags`[1] must be an array, got a string"
    );
    let e = err(&with("tags", json!([["e", "x"], ["p", 1]])));
    assert_eq!(
        e.to_string(),
        "invalid event: `tags`[1][1] must be a string, got a number"
    );
    let e = err(&with("tags", json!([[null]])));
    assert_eq!(e.reason(), "wrong_type");
    let e = err(&with("tags", json!([[["nested"]]])));
    assert_eq!(e.field(), Some("tags"));
    // Empty tags, empty tag arrays and empty strings are fine.
    for ok in [json!([]), json!([[]]), json!([[""]]), json!([["", ""], []])] {
        Event::parse_json(&with("tags", ok.clone())).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn hex_fields_are_exact_lowercase_hex() {
    let upper = ID.replace('0', "A").replace('1', "B");
    let bad_ids = [
        String::new(),
        ID[..63].to_owned(),
        format!("{ID}0"),
        ID.to_uppercase().replace('0', "A"),
        upper,
        format!("{}g", &ID[..63]),
        format!("{}é", &ID[..62]),
        format!(" {}", &ID[..63]),
    ];
    for field in ["id", "pubkey"] {
        for bad in &bad_ids {
            let e = err(&with(field, json!(bad)));
            assert_eq!(e.reason(), "bad_value", "{field} = {bad:?}");
            assert_eq!(e.field(), Some(field));
            assert!(e.to_string().contains("64 lowercase hex"), "{e}");
        }
    }
    for bad in [&SIG[..127], &SIG[..64], ID, &SIG.replace('1', "F")] {
        let e = err(&with("sig", json!(bad)));
        assert_eq!(e.reason(), "bad_value");
        assert_eq!(e.field(), Some("sig"));
        assert!(e.to_string().contains("128 lowercase hex"), "{e}");
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn created_at_is_a_non_negative_safe_integer() {
    let base = base().to_string();
    let set = |n: &str| base.replace("1700000000", n);
    for ok in ["0", "1", "9007199254740991"] {
        let e = Event::parse_json(&set(ok)).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert_eq!(e.created_at().to_string(), ok);
    }
    assert_eq!(MAX_CREATED_AT, 9_007_199_254_740_991);
    for bad in [
        "-1",
        "-0",
        "1.5",
        "1700000000.0",
        "1.7e9",
        "1e3",
        "9007199254740992",
        "18446744073709551615",
        "18446744073709551616",
        "100000000000000000000000000",
    ] {
        let e = err(&set(bad));
        assert_eq!(e.reason(), "bad_value", "{bad}");
        assert_eq!(e.field(), Some("created_at"));
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn kind_is_in_range() {
    for ok in [0u64, 1, 22242, 65535] {
        let e = Event::parse_json(&with("kind", json!(ok))).unwrap();
        assert_eq!(u64::from(e.kind()), ok);
    }
    for bad in [
        json!(65536),
        json!(-1),
        json!(1.0),
        json!(1.5),
        json!(u64::MAX),
    ] {
        let e = err(&with("kind", bad.clone()));
        assert_eq!(e.reason(), "bad_value", "{bad}");
        assert_eq!(e.field(), Some("kind"));
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn unknown_fields_are_tolerated_and_kept_in_raw() {
    let text = with("relays", json!(["wss://x"]));
    let e = Event::parse_json(&text).unwrap();
    assert_eq!(e.raw(), text);
    let plain = Event::parse_json(&base().to_string()).unwrap();
    assert_eq!(e.compute_id(), plain.compute_id());
    // The compact and value paths drop them from raw.
    let c = Event::parse_json_compact(&text).unwrap();
    assert!(!c.raw().contains("relays"));
    let compact = Event::parse_json_compact(&base().to_string()).unwrap();
    assert_eq!(c.raw(), compact.raw());
    let v = Event::from_value(serde_json::from_str(&text).unwrap()).unwrap();
    assert!(!v.raw().contains("relays"));
    assert_eq!(v.raw(), compact.raw());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn duplicate_fields_are_refused() {
    let text = base().to_string();
    let dup = text.replacen(
        "\"content\":\"hi\"",
        "\"content\":\"hi\",\"content\":\"bye\"",
        1,
    );
    assert_ne!(dup, text);
    let e = Event::parse_json(&dup).unwrap_err();
    assert_eq!(e, EventError::Duplicate { field: "content" });
    assert_eq!(e.reason(), "duplicate_field");
    // The compact path sees the repeat too.
    assert_eq!(Event::parse_json_compact(&dup).unwrap_err(), e);
    // The field whose repeat comes first is the one named.
    let two = dup.replacen('{', "{\"kind\":1,\"kind\":1,", 1);
    assert_ne!(two, dup);
    assert_eq!(
        Event::parse_json(&two).unwrap_err(),
        EventError::Duplicate { field: "kind" }
    );
    // Unknown fields may repeat.
    let dup_unknown = text.replacen('{', "{\"x\":1,\"x\":2,", 1);
    Event::parse_json(&dup_unknown).unwrap();
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn escaped_json_text_gives_the_same_event() {
    let text = base().to_string();
    let escaped = text
        .replace("\"hi\"", "\"\\u0068\\u0069\"")
        .replace("\"e\"", "\"\\u0065\"");
    let a = Event::parse_json(&text).unwrap();
    let b = Event::parse_json(&escaped).unwrap();
    assert_eq!(a.canonical_json(), b.canonical_json());
    assert_eq!(b.raw(), escaped);
    // Lone surrogates cannot be held in a Rust string: refused as not JSON.
    let lone = text.replace("\"hi\"", "\"\\ud800\"");
    assert_eq!(Event::parse_json(&lone).unwrap_err().reason(), "not_json");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn canonical_serialization_escapes_like_json_stringify() {
    let content = "q\" b\\ n\n r\r t\t b\u{8} f\u{c} nul\u{0} us\u{1f} del\u{7f} ls\u{2028} é 😀 /";
    let e = Event::from_parts(
        ID.into(),
        PK.into(),
        7,
        3,
        vec![vec!["t".into(), "\u{1}x".into()], vec![]],
        content.into(),
        SIG.into(),
    )
    .unwrap();
    let expected = format!(
        "[0,\"{PK}\",7,3,[[\"t\",\"\\u0001x\"],[]],\"q\\\" b\\\\ n\\n r\\r t\\t b\\b f\\f nul\\u0000 us\\u001f del\u{7f} ls\u{2028} é 😀 /\"]"
    );
    assert_eq!(e.canonical_json(), expected);
    // sha256 of the same array's JSON.stringify in Node (nostr-tools' serializeEvent).
    assert_eq!(
        e.compute_id(),
        "a88ee13e9804a29e505e0b8f67e2bbf8c38c4f7a20812e4364354b797124b81d"
    );
    // The compact raw text is valid JSON for the same event.
    let back = Event::parse_json(e.raw()).unwrap();
    assert_eq!(back.canonical_json(), expected);
    assert_eq!(back.raw(), e.raw());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn from_parts_checks_formats() {
    let mk = |id: &str, pk: &str, at: u64, sig: &str| {
        Event::from_parts(
            id.into(),
            pk.into(),
            at,
            1,
            vec![],
            String::new(),
            sig.into(),
        )
    };
    assert!(mk(ID, PK, 0, SIG).is_ok());
    assert_eq!(mk("x", PK, 0, SIG).unwrap_err().field(), Some("id"));
    assert_eq!(
        mk(ID, &PK.to_uppercase(), 0, SIG).unwrap_err().field(),
        Some("pubkey")
    );
    assert_eq!(mk(ID, PK, 0, ID).unwrap_err().field(), Some("sig"));
    assert_eq!(
        mk(ID, PK, MAX_CREATED_AT + 1, SIG).unwrap_err().field(),
        Some("created_at")
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn bad_ids_and_signatures_are_typed() {
    let e = Event::parse_json(&base().to_string()).unwrap();
    let err = e.verify().unwrap_err();
    assert_eq!(err.reason(), "id_mismatch");
    assert_eq!(err.field(), Some("id"));
    let sig_err = e.verify_signature().unwrap_err();
    assert_eq!(sig_err.reason(), "bad_signature");
    assert_eq!(sig_err.field(), Some("sig"));
    assert_eq!(sig_err.code(), "invalid_event");
    // An off-curve pubkey: x = 5 is not on secp256k1.
    let off = with(
        "pubkey",
        json!("0000000000000000000000000000000000000000000000000000000000000005"),
    );
    let e = Event::parse_json(&off).unwrap();
    let msg = e.verify_signature().unwrap_err().to_string();
    assert!(msg.contains("pubkey"), "{msg}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn expiration_tag() {
    let exp = |tags: Value| Event::parse_json(&with("tags", tags)).unwrap().expiration();
    assert_eq!(exp(json!([])), None);
    assert_eq!(exp(json!([["expiration", "0"]])), Some(0));
    assert_eq!(exp(json!([["expiration", "123", "extra"]])), Some(123));
    assert_eq!(exp(json!([["expiration"]])), None);
    assert_eq!(exp(json!([["expiration", ""]])), None);
    assert_eq!(exp(json!([["expiration", "-5"]])), None);
    assert_eq!(exp(json!([["expiration", "1.5"]])), None);
    assert_eq!(exp(json!([["expiration", " 12"]])), None);
    assert_eq!(exp(json!([["expiration", "99999999999999999999"]])), None);
    assert_eq!(exp(json!([["Expiration", "5"]])), None);
    // The first expiration tag wins.
    assert_eq!(
        exp(json!([
            ["e", "x"],
            ["expiration", "7"],
            ["expiration", "9"]
        ])),
        Some(7)
    );
    let e = Event::parse_json(&with("tags", json!([]))).unwrap();
    assert!(!e.is_expired(u64::MAX));
    assert_eq!(e.to_envelope().expiration, None);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn hostile_input_gets_a_typed_error_never_a_panic() {
    let text = base().to_string();
    // Nesting 10,000 deep, in a known field and in an unknown one.
    let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    for (field, reason) in [("tags", "not_json"), ("x", "not_json")] {
        let e = err(&with(field, Value::Null).replace("null", &deep));
        assert_eq!(e.reason(), reason, "{field}");
    }
    let e = err(&"[".repeat(10_000));
    assert_eq!(e.reason(), "not_json");
    // A number beyond f64, where an integer is expected and where anything goes.
    for field in ["created_at", "kind", "x"] {
        let e = err(&with(field, Value::Null).replace("null", "1e400"));
        assert_eq!(e.reason(), "not_json", "{field}");
    }
    // Lone surrogates, in content and in an unknown field's name.
    for lone in ["\"\\udc00\"", "\"a\\ud800b\""] {
        let e = err(&text.replace("\"hi\"", lone));
        assert_eq!(e.reason(), "not_json", "{lone}");
    }
    let e = err(&text.replacen('{', "{\"\\ud800\":1,", 1));
    assert_eq!(e.reason(), "not_json");
    // A field given twice, once with a value of another type.
    let e = err(&text.replacen('{', "{\"sig\":1,", 1));
    assert_eq!(e, EventError::Duplicate { field: "sig" });
    // 1 MB strings: content parses (and fails only the id check), a tag value, a key.
    let big = "a".repeat(1 << 20);
    let e = Event::parse_json(&with("content", json!(big))).expect("a long content is an event");
    assert_eq!(e.content().len(), 1 << 20);
    assert_eq!(e.verify_id().unwrap_err().reason(), "id_mismatch");
    let e = err(&with("id", json!(big)));
    assert_eq!(e.reason(), "bad_value");
    let e = err(&with("tags", json!([["e", big, 1]])));
    assert_eq!(e.reason(), "wrong_type");
    let mut keyed = base();
    keyed[big.as_str()] = json!(1);
    Event::parse_json(&keyed.to_string()).expect("an unknown long key is tolerated");
}

/// The header fields the queue's Nostr rules read: `d` for addressable kinds only (the
/// first one, `""` when absent), a deletion's `e` ids (64 lowercase hex only) and `a`
/// addresses, each once, in tag order; a request to vanish's relays; nothing of the kind
/// for other kinds.
#[test]
fn envelopes_carry_the_fields_the_rules_read() {
    let pk = "a1".repeat(32);
    let id = |c: &str| c.repeat(64);
    let event = |kind: u16, tags: Vec<Vec<&str>>| {
        Event::from_parts(
            id("0"),
            pk.clone(),
            1_700_000_000,
            kind,
            tags.into_iter()
                .map(|t| t.into_iter().map(String::from).collect())
                .collect(),
            String::new(),
            id("00"),
        )
        .expect("shape")
        .to_envelope()
        .meta
        .expect("meta")
    };
    let article = event(30_023, vec![vec!["d", "first"], vec!["d", "second"]]);
    assert_eq!((article.kind, article.d.as_str()), (30_023, "first"));
    assert_eq!(article.pubkey, pk);
    assert_eq!(article.created_at, 1_700_000_000);
    assert_eq!(event(30_000, vec![]).d, "");
    assert_eq!(event(0, vec![vec!["d", "x"]]).d, "", "not addressable");
    let a = format!("30023:{pk}:first");
    let deletion = event(
        5,
        vec![
            vec!["e", &id("1")],
            vec!["e", &id("A")],
            vec!["e", "short"],
            vec!["e", &id("1")],
            vec!["a", &a],
            vec!["e"],
            vec!["e", &id("2"), "wss://relay"],
        ],
    );
    assert_eq!(deletion.deletes_ids, vec![id("1"), id("2")]);
    assert_eq!(deletion.deletes_addresses, vec![a.clone()]);
    let note = event(1, vec![vec!["e", &id("1")], vec!["a", &a]]);
    assert!(note.deletes_ids.is_empty() && note.deletes_addresses.is_empty());
    // NIP-62: a request to vanish's `relay` tags, as written (each once); the rule
    // compares them with targets (`core::semantics`).
    let vanish = event(
        62,
        vec![
            vec!["relay", "WSS://Relay.Example:443/"],
            vec!["relay", "ALL_RELAYS"],
            vec!["relay", "not a url"],
            vec!["relay", "https://relay.example"],
            vec!["relay", "wss://relay.example"],
            vec!["relay"],
        ],
    );
    assert_eq!(
        vanish.vanish_relays,
        vec![
            "WSS://Relay.Example:443/",
            "ALL_RELAYS",
            "not a url",
            "https://relay.example",
            "wss://relay.example"
        ]
    );
    assert!(event(1, vec![vec!["relay", "ALL_RELAYS"]])
        .vanish_relays
        .is_empty());
}
