//! Native benchmark of event verification: parse + id + BIP-340 signature check over
//! the valid cross-implementation vectors (`tests/data/event_vectors.json`), printing
//! events per second; then the same number of events signed by one key (checked with
//! that key's table, as an outbox checks its user's events) and by a new key each (no
//! table: every check lifts its key). Run:
//! `cargo run --release --example bench_verify [rounds]`.

use std::time::Instant;

use k256::schnorr::SigningKey;
use nostr_outbox::nostr::{verify_event_json, Event, SignatureCheck};
use serde_json::Value;

const VECTORS: &str = include_str!("../tests/data/event_vectors.json");

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let doc: Value = serde_json::from_str(VECTORS).expect("vectors file is JSON");
    let events: Vec<String> = doc["vectors"]
        .as_array()
        .expect("vectors array")
        .iter()
        .filter(|v| v["valid_sig"] == Value::Bool(true))
        .filter_map(|v| v["json"].as_str().map(str::to_owned))
        .collect();
    let bytes: usize = events.iter().map(String::len).sum();
    println!(
        "{} valid events ({} KiB of JSON), {rounds} rounds",
        events.len(),
        bytes / 1024
    );

    // Warm up and check.
    assert!(events.iter().all(|e| verify_event_json(e)));

    let parsed: Vec<Event> = events
        .iter()
        .filter_map(|e| Event::parse_json(e).ok())
        .collect();
    // The same events grouped by author, as an outbox's mostly are: the batch check
    // parses each author's key once per run of events.
    let mut by_author = parsed.clone();
    by_author.sort_by(|a, b| a.pubkey().cmp(b.pubkey()));
    let checks: Vec<SignatureCheck> = by_author.iter().map(Event::signature).collect();
    let one_author: Vec<Event> = (0..events.len()).map(|n| signed(0, n)).collect();
    let new_keys: Vec<Event> = (0..events.len()).map(|n| signed(n + 1, n)).collect();
    let phases: [(&str, &dyn Fn() -> bool); 8] = [
        ("parse only", &|| {
            events.iter().all(|e| Event::parse_json(e).is_ok())
        }),
        ("id only (parsed)", &|| {
            parsed.iter().all(|e| e.verify_id().is_ok())
        }),
        ("signature only (parsed)", &|| {
            parsed.iter().all(|e| e.verify_signature().is_ok())
        }),
        ("signature, by author", &|| {
            by_author.iter().all(|e| e.verify_signature().is_ok())
        }),
        ("signature, by author, batch", &|| {
            SignatureCheck::first_bad(&checks).is_none()
        }),
        ("parse + id + signature", &|| {
            events.iter().all(|e| verify_event_json(e))
        }),
        ("signature, 1 author", &|| {
            one_author.iter().all(|e| e.verify_signature().is_ok())
        }),
        // More keys than are kept lifted, in turn: no check finds its key.
        ("signature, a new key each", &|| {
            new_keys.iter().all(|e| e.verify_signature().is_ok())
        }),
    ];
    for (name, run) in phases {
        let start = Instant::now();
        for _ in 0..rounds {
            assert!(run());
        }
        let secs = start.elapsed().as_secs_f64();
        let n = (events.len() * rounds) as f64;
        println!(
            "{name:<28} {:>10.0} events/s  ({:.1} µs/event)",
            n / secs,
            secs / n * 1e6
        );
    }
}

/// An event numbered `n` signed by the key numbered `key`.
fn signed(key: usize, n: usize) -> Event {
    let mut secret = [0x5au8; 32];
    secret[..8].copy_from_slice(&(key as u64 + 1).to_be_bytes());
    let key = SigningKey::from_bytes(&secret).expect("a valid secret key");
    let pubkey: String = key
        .verifying_key()
        .to_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let draft = |id: String, sig: String| {
        Event::from_parts(
            id,
            pubkey.clone(),
            1_700_000_000 + n as u64,
            1,
            vec![],
            format!("note {n}"),
            sig,
        )
        .expect("well-formed fields")
    };
    let id = draft("0".repeat(64), "0".repeat(128)).compute_id();
    let mut id_bytes = [0u8; 32];
    for (i, byte) in id_bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&id[2 * i..2 * i + 2], 16).expect("hex id");
    }
    let sig = key.sign_raw(&id_bytes, &[7; 32]).expect("signs");
    let sig: String = sig.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
    draft(id, sig)
}
