//! Relay URLs (parse, normalize, de-duplicate), relay messages (parse, classify `OK`),
//! client message builders, and NIP-42 AUTH. Runs natively and in the browser (wasm).

use k256::schnorr::SigningKey;
use nostr_outbox::core::{Outcome, RejectReason};
use nostr_outbox::nostr::{
    auth_message, auth_template, check_auth_event, classify_ok, close_message, event_message,
    is_auth_required, normalize_targets, req_by_ids, AuthError, Event, RelayMessage, RelayUrl,
    RelayUrlError, AUTH_KIND, DEFAULT_MAX_MESSAGE_LEN, MAX_RELAY_URL_LEN,
};
use serde_json::{json, Value};

const ID: &str = "4376c65d2f232afbe9b882a35baa4f6fe8667c4e684749af565f981833ed6a65";

fn norm(s: &str) -> String {
    RelayUrl::parse(s)
        .unwrap_or_else(|e| panic!("{s:?}: {e}"))
        .as_str()
        .to_owned()
}

fn bad(s: &str) -> RelayUrlError {
    let e = RelayUrl::parse(s).expect_err(s);
    assert_eq!(e.code(), "invalid_relay_url");
    e
}

/// A list of `tests/data/relay_urls.json`, the corpus the package's exported
/// `normalizeRelayUrl` is checked against in Chromium (tests/e2e/publish.test.mjs): input and
/// normalized URL (`normalized`) or error message (`refused`).
fn corpus(list: &str) -> Vec<(String, String)> {
    let corpus: Value = serde_json::from_str(include_str!("../data/relay_urls.json")).unwrap();
    let pairs = corpus[list].as_array().expect(list);
    assert!(!pairs.is_empty(), "{list}");
    pairs
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_owned(),
                p[1].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn relay_urls_normalize() {
    for (input, want) in corpus("normalized") {
        assert_eq!(norm(&input), want, "{input:?}");
    }
    let u = RelayUrl::parse("WSS://[::1]:8443/x?y").unwrap();
    assert!(u.is_secure());
    assert_eq!(u.host(), "[::1]");
    assert_eq!(u.port(), 8443);
    assert_eq!(u.path_and_query(), "/x?y");
    assert_eq!(u.to_string(), "wss://[::1]:8443/x?y");
    let u = RelayUrl::parse("ws://a.b").unwrap();
    assert!(!u.is_secure());
    assert_eq!((u.host(), u.port(), u.path_and_query()), ("a.b", 80, ""));
    assert_eq!(RelayUrl::parse("wss://a.b").unwrap().port(), 443);
    // serde: a string, parsed on the way in.
    let json = serde_json::to_string(&RelayUrl::parse("WSS://A.B/").unwrap()).unwrap();
    assert_eq!(json, "\"wss://a.b\"");
    let back: RelayUrl = serde_json::from_str("\"wss://A.b:443\"").unwrap();
    assert_eq!(back.as_str(), "wss://a.b");
    assert!(serde_json::from_str::<RelayUrl>("\"https://a.b\"").is_err());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn relay_urls_refused_with_reasons() {
    for (input, message) in corpus("refused") {
        assert_eq!(bad(&input).to_string(), message, "{input:?}");
    }
    assert_eq!(bad(""), RelayUrlError::Empty);
    assert_eq!(bad("   "), RelayUrlError::Empty);
    let long = format!("wss://a.b/{}", "x".repeat(MAX_RELAY_URL_LEN));
    assert!(matches!(bad(&long), RelayUrlError::TooLong { .. }));
    for s in [
        "https://a.b",
        "http://a.b",
        "relay.damus.io",
        "wss:/a.b",
        "ftp://a",
        "://a.b",
    ] {
        assert!(matches!(bad(s), RelayUrlError::Scheme { .. }), "{s}");
    }
    assert_eq!(
        bad("https://a.b").to_string(),
        "invalid relay URL: scheme must be ws:// or wss://, got `https`"
    );
    assert_eq!(
        bad("relay.damus.io").to_string(),
        "invalid relay URL: scheme must be ws:// or wss://, got none"
    );
    for s in ["wss://user@a.b", "wss://u:p@a.b/", "wss://@a.b"] {
        assert_eq!(bad(s), RelayUrlError::Userinfo, "{s}");
    }
    for s in ["wss://a.b#x", "wss://a.b/#", "wss://a.b/p?q#f"] {
        assert_eq!(bad(s), RelayUrlError::Fragment, "{s}");
    }
    for s in ["wss://", "wss:///path", "wss://?q", "wss://:443"] {
        assert_eq!(bad(s), RelayUrlError::MissingHost, "{s}");
    }
    for s in [
        "wss://a b.c",
        "wss://a..b",
        "wss://.a.b",
        "wss://bücher.example",
        "wss://a%20b",
        "wss://[::1",
        "wss://[::g]",
        "wss://[::1]x",
        "wss://::1",
        "wss://[fe80::1%25eth0]",
        "wss://999.1.1.1",
        "wss://1.2.3",
        "wss://2001:db8::1",
    ] {
        assert!(
            matches!(bad(s), RelayUrlError::Host { .. }),
            "{s}: {:?}",
            bad(s)
        );
    }
    let label = format!("wss://{}.com", "a".repeat(64));
    assert!(matches!(bad(&label), RelayUrlError::Host { .. }));
    for s in [
        "wss://a.b:",
        "wss://a.b:0",
        "wss://a.b:65536",
        "wss://a.b:-1",
        "wss://a.b:+80",
        "wss://a.b:8x",
        "wss://a.b:000443",
        "wss://relay.example:80:90",
    ] {
        assert!(matches!(bad(s), RelayUrlError::Port { .. }), "{s}");
    }
    for (s, ch) in [
        ("wss://a.b/x y", ' '),
        ("wss://a.b/x\ty", '\t'),
        ("wss://a.b/é", 'é'),
        ("wss://a.b/a\\b", '\\'),
        ("wss://a.b/?q=\u{7f}", '\u{7f}'),
    ] {
        assert_eq!(bad(s), RelayUrlError::Character { ch }, "{s}");
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn targets_are_deduplicated_in_first_seen_order() {
    let got = normalize_targets(&[
        "wss://b.example/",
        "wss://a.example",
        "WSS://B.example:443",
        "wss://a.example/",
        "ws://a.example",
    ])
    .unwrap();
    let got: Vec<&str> = got.iter().map(RelayUrl::as_str).collect();
    assert_eq!(
        got,
        ["wss://b.example", "wss://a.example", "ws://a.example"]
    );
    let owned = vec![String::from("wss://x.y")];
    assert_eq!(normalize_targets(&owned).unwrap().len(), 1);
    assert!(normalize_targets::<&str>(&[]).unwrap().is_empty());
    let err = normalize_targets(&["wss://ok.example", "http://nope"]).unwrap_err();
    assert_eq!(err.index, 1);
    assert_eq!(err.code(), "invalid_relay_url");
    assert!(
        err.to_string()
            .starts_with("target relay #1: invalid relay URL"),
        "{err}"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn relay_messages_parse() {
    let p = |s: &str| RelayMessage::parse(s, DEFAULT_MAX_MESSAGE_LEN);
    assert_eq!(
        p(&format!(r#"["OK","{ID}",true,"duplicate: have it"]"#)),
        RelayMessage::Ok {
            event_id: ID.into(),
            accepted: true,
            message: "duplicate: have it".into()
        }
    );
    assert_eq!(
        p(&format!(r#"["OK","{ID}",false]"#)),
        RelayMessage::Ok {
            event_id: ID.into(),
            accepted: false,
            message: String::new()
        }
    );
    assert_eq!(
        p(r#"["NOTICE","slow down"]"#),
        RelayMessage::Notice {
            message: "slow down".into()
        }
    );
    assert_eq!(
        p(r#"["CLOSED","sub1","auth-required: log in"]"#),
        RelayMessage::Closed {
            subscription_id: "sub1".into(),
            message: "auth-required: log in".into()
        }
    );
    assert_eq!(
        p(r#"["AUTH","challenge-xyz"]"#),
        RelayMessage::Auth {
            challenge: "challenge-xyz".into()
        }
    );
    assert_eq!(
        p(r#" [ "EOSE" , "s" ] "#),
        RelayMessage::Eose {
            subscription_id: "s".into()
        }
    );
    assert_eq!(
        p(r#"["EVENT","s",{"id":"x","kind":1}]"#),
        RelayMessage::Event {
            subscription_id: "s".into(),
            event: json!({"id":"x","kind":1})
        }
    );
    assert_eq!(
        p(r#"["COUNT","s",{"count":3}]"#),
        RelayMessage::Unknown {
            message_type: "COUNT".into()
        }
    );
    // Floats are valid JSON: a message carrying one is not malformed.
    assert_eq!(
        p(r#"["COUNT","s",{"count":1.5e3,"ratio":-0.25}]"#),
        RelayMessage::Unknown {
            message_type: "COUNT".into()
        }
    );
    assert_eq!(
        p(r#"["EVENT","s",{"id":"x","score":1E-7}]"#),
        RelayMessage::Event {
            subscription_id: "s".into(),
            // Numbers keep their text.
            event: serde_json::from_str(r#"{"id":"x","score":1E-7}"#).unwrap()
        }
    );
    assert_eq!(
        p(r#"["ok","x"]"#),
        RelayMessage::Unknown {
            message_type: "ok".into()
        }
    );
    assert_eq!(
        p(r#"["NOTICE","a",1,2]"#),
        RelayMessage::Notice {
            message: "a".into()
        }
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn malformed_and_oversized_frames() {
    let malformed = [
        "",
        "nope",
        "{}",
        "\"OK\"",
        "[]",
        "[1]",
        "[null,\"x\"]",
        "[\"OK\"]",
        "[\"OK\",\"abc\",true,\"\"]",
        &format!("[\"OK\",\"{}\",true,\"\"]", ID.to_uppercase()),
        &format!("[\"OK\",\"{ID}\",\"true\",\"\"]"),
        &format!("[\"OK\",\"{ID}\"]"),
        &format!("[\"OK\",\"{ID}\",true,5]"),
        "[\"NOTICE\"]",
        "[\"NOTICE\",{}]",
        "[\"CLOSED\"]",
        "[\"AUTH\"]",
        "[\"AUTH\",42]",
        "[\"EOSE\",null]",
        "[\"EVENT\",\"s\"]",
        "[\"EVENT\",\"s\",[]]",
        "[\"EVENT\",1,{}]",
        "[\"OK\",",
        &"[".repeat(10_000),
    ];
    for m in malformed {
        let got = RelayMessage::parse(m, DEFAULT_MAX_MESSAGE_LEN);
        assert!(
            matches!(got, RelayMessage::Malformed { .. }),
            "{m:.40}: {got:?}"
        );
    }
    assert_eq!(
        RelayMessage::parse(r#"["NOTICE","0123456789"]"#, 10),
        RelayMessage::TooLarge { len: 23, max: 10 }
    );
    assert!(matches!(
        RelayMessage::parse(r#"["NOTICE","x"]"#, 14),
        RelayMessage::Notice { .. }
    ));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn ok_classification() {
    use Outcome::*;
    let cases = [
        (true, "", Accepted),
        (true, "stored", Accepted),
        (true, "duplicate: already have this event", Duplicate),
        (true, "Duplicate:x", Duplicate),
        (true, "blocked: odd but accepted", Accepted),
        (false, "duplicate: already have it", Duplicate),
        (
            false,
            "blocked: you are banned",
            Rejected(RejectReason::Blocked),
        ),
        (false, "invalid: bad sig", Rejected(RejectReason::Invalid)),
        (
            false,
            "restricted: members only",
            Rejected(RejectReason::Restricted),
        ),
        (
            false,
            "pow: difficulty 25 < 30",
            Rejected(RejectReason::Pow),
        ),
        (false, "mute: no one listens", Rejected(RejectReason::Mute)),
        (false, "rate-limited: slow down", RateLimited),
        (false, "  RATE-LIMITED:x", RateLimited),
        (
            false,
            "auth-required: we only accept events from registered users",
            AuthRequired,
        ),
        (false, "error: could not connect to the database", Error),
        (false, "", Rejected(RejectReason::Other)),
        (false, "no prefix here", Rejected(RejectReason::Other)),
        (false, "unknown-prefix: x", Rejected(RejectReason::Other)),
        (false, "blocked", Rejected(RejectReason::Other)),
        (false, "rate limited: x", Rejected(RejectReason::Other)),
    ];
    for (accepted, message, want) in cases {
        assert_eq!(
            classify_ok(accepted, message),
            want,
            "{accepted} {message:?}"
        );
    }
    assert!(is_auth_required("auth-required: please"));
    assert!(!is_auth_required("restricted: no"));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn client_messages_embed_raw_text_verbatim() {
    let raw = "{ \"id\" : \"x\",\n \"content\":\"\\u00e9\" }";
    let m = event_message(raw);
    assert_eq!(m, format!("[\"EVENT\",{raw}]"));
    let v: Value = serde_json::from_str(&m).unwrap();
    assert_eq!(v[1]["content"], "é");
    assert_eq!(auth_message(raw), format!("[\"AUTH\",{raw}]"));
    assert_eq!(
        req_by_ids("sub\"1", &[ID]),
        format!("[\"REQ\",\"sub\\\"1\",{{\"ids\":[\"{ID}\"]}}]")
    );
    let v: Value = serde_json::from_str(&req_by_ids::<&str>("s", &[])).unwrap();
    assert_eq!(v, json!(["REQ", "s", {"ids": []}]));
    assert_eq!(close_message("s\n"), "[\"CLOSE\",\"s\\n\"]");
}

// --- NIP-42 -------------------------------------------------------------------

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Plays the app's signer: fills pubkey, id and sig into an unsigned template.
fn sign(template: &Value, seed: u8) -> Event {
    let sk = SigningKey::from_bytes(&[seed; 32]).unwrap();
    let pubkey = hex(&sk.verifying_key().to_bytes());
    let tags: Vec<Vec<String>> = serde_json::from_value(template["tags"].clone()).unwrap();
    let unsigned = Event::from_parts(
        "0".repeat(64),
        pubkey.clone(),
        template["created_at"].as_u64().unwrap(),
        template["kind"].as_u64().unwrap() as u16,
        tags.clone(),
        template["content"].as_str().unwrap().to_owned(),
        "0".repeat(128),
    )
    .unwrap();
    let id = unsigned.compute_id();
    let id_bytes: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&id[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let sig = sk.sign_raw(&id_bytes, &[7; 32]).unwrap();
    Event::from_parts(
        id,
        pubkey,
        unsigned.created_at(),
        unsigned.kind(),
        tags,
        unsigned.content().to_owned(),
        hex(&sig.to_bytes()),
    )
    .unwrap()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn auth_template_and_check() {
    let relay = RelayUrl::parse("WSS://Relay.Example.com/").unwrap();
    let challenge = "c-\"123\"";
    let t = auth_template(&relay, challenge, 1_700_000_000);
    assert_eq!(
        t,
        json!({
            "kind": 22242,
            "created_at": 1_700_000_000u64,
            "tags": [["relay", "wss://relay.example.com"], ["challenge", challenge]],
            "content": "",
        })
    );
    assert!(t.get("pubkey").is_none() && t.get("id").is_none() && t.get("sig").is_none());

    let signed = sign(&t, 1);
    assert_eq!(signed.kind(), AUTH_KIND);
    signed.verify().unwrap();
    check_auth_event(&signed, &relay, challenge).unwrap();
    // The signer's output also arrives as text or a JS object.
    let from_text = Event::parse_json(signed.raw()).unwrap();
    check_auth_event(&from_text, &relay, challenge).unwrap();
    let from_value = Event::from_value(serde_json::from_str(signed.raw()).unwrap()).unwrap();
    check_auth_event(&from_value, &relay, challenge).unwrap();
    assert_eq!(
        auth_message(signed.raw()),
        format!("[\"AUTH\",{}]", signed.raw())
    );
    // The relay tag is compared after normalization.
    let mut loose = t.clone();
    loose["tags"][0][1] = json!("wss://RELAY.example.com:443/");
    check_auth_event(&sign(&loose, 2), &relay, challenge).unwrap();

    let mut wrong_kind = t.clone();
    wrong_kind["kind"] = json!(1);
    let e = check_auth_event(&sign(&wrong_kind, 1), &relay, challenge).unwrap_err();
    assert_eq!(e, AuthError::Kind { kind: 1 });
    assert_eq!(e.code(), "invalid_auth_event");

    let other = RelayUrl::parse("wss://other.example").unwrap();
    let e = check_auth_event(&signed, &other, challenge).unwrap_err();
    assert!(matches!(e, AuthError::Relay { .. }), "{e}");

    let e = check_auth_event(&signed, &relay, "other").unwrap_err();
    assert_eq!(e, AuthError::Challenge);

    let mut no_tags = t.clone();
    no_tags["tags"] = json!([]);
    let e = check_auth_event(&sign(&no_tags, 1), &relay, challenge).unwrap_err();
    assert!(matches!(e, AuthError::Relay { .. }));

    // A tampered signature is caught.
    let mut v: Value = serde_json::from_str(signed.raw()).unwrap();
    let sig = v["sig"].as_str().unwrap().to_owned();
    let flipped = format!(
        "{}{}",
        if sig.starts_with('0') { "1" } else { "0" },
        &sig[1..]
    );
    v["sig"] = json!(flipped);
    let tampered = Event::from_value(v.clone()).unwrap();
    let e = check_auth_event(&tampered, &relay, challenge).unwrap_err();
    assert!(matches!(e, AuthError::Event(_)), "{e}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn auth_challenge_round_trip() {
    let msg = RelayMessage::parse(r#"["AUTH","abc\u0000def"]"#, 1024);
    let RelayMessage::Auth { challenge } = msg else {
        panic!("{msg:?}")
    };
    assert_eq!(challenge, "abc\0def");
    let relay = RelayUrl::parse("ws://127.0.0.1:7777").unwrap();
    let signed = sign(&auth_template(&relay, &challenge, 5), 3);
    check_auth_event(&signed, &relay, &challenge).unwrap();
    assert!(signed.raw().contains("\\u0000"));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn hostile_frames_are_malformed_or_too_large_never_a_panic() {
    let malformed = |text: &str| {
        let m = RelayMessage::parse(text, DEFAULT_MAX_MESSAGE_LEN);
        assert!(matches!(m, RelayMessage::Malformed { .. }), "{m:?}");
    };
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    malformed(&deep);
    malformed(&format!(r#"["EVENT","s",{{"x":{deep}}}]"#));
    malformed(&format!(r#"["OK","{ID}",true,{deep}]"#));
    malformed(&format!(r#"["OK","{ID}",1e400,"m"]"#));
    malformed(r#"["NOTICE","\ud800"]"#);
    malformed(&format!(r#"["OK","{ID}",true,"\udfff x"]"#));
    // A frame just over the limit is not parsed; one of 1 MB under the limit is.
    let long = "a".repeat(DEFAULT_MAX_MESSAGE_LEN);
    let frame = format!(r#"["NOTICE","{long}"]"#);
    assert!(matches!(
        RelayMessage::parse(&frame, DEFAULT_MAX_MESSAGE_LEN),
        RelayMessage::TooLarge { .. }
    ));
    let frame = format!(r#"["NOTICE","{}"]"#, &long[..DEFAULT_MAX_MESSAGE_LEN - 20]);
    assert!(matches!(
        RelayMessage::parse(&frame, DEFAULT_MAX_MESSAGE_LEN),
        RelayMessage::Notice { message } if message.len() == DEFAULT_MAX_MESSAGE_LEN - 20
    ));
}
