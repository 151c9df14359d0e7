//! A newer version on a relay: before each send of an event of `FlushConfig::newer_kinds`
//! to a relay, the flusher asks that relay for its newest version of the slot
//! (`Transport::newer`); a valid newer one (id and signature checked, same author, kind
//! and `d`) stops the send, and the record ends superseded by it
//! (`StopReason::RemoteNewer`, evidence `rejected` / `newer`, `FlushEvent::Superseded`).
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use serde_json::{json, Value};

use nostr_outbox::core::{Outcome, Plan, Policy, Record, RejectReason, Stage, StopReason};
use nostr_outbox::flush::{flush_until_idle, FlushConfig, FlushEvent, NEWER_CHECK_KINDS};
use nostr_outbox::nostr::{req_newest, Event};
use nostr_outbox::store::conformance::RELAYS;
use nostr_outbox::store::{MemoryStore, Store};
use nostr_outbox::transport::ScriptedTransport;

use crate::drafts::{key, sign_with};
use crate::support::{config, counter};

/// A signed event of Alice's (key 1) of `kind` at `created_at`, with `content`.
fn version(kind: u16, created_at: u64, content: &str, n: u8) -> Value {
    let tags: Vec<Vec<String>> = if kind >= 30_000 {
        vec![vec!["d".into(), "list".into()]]
    } else {
        Vec::new()
    };
    sign_with(
        &key(n),
        &json!({ "kind": kind, "created_at": created_at, "tags": tags, "content": content }),
    )
}

/// Enqueues `ours` for `RELAYS[0]` and `RELAYS[1]` (policy all), `RELAYS[0]` storing
/// `theirs` (JSON text) and both accepting what they are sent, then flushes with
/// `kinds` checked. The record, what the flusher reported, and what `RELAYS[0]` got.
fn flush_against(
    ours: &Value,
    theirs: Option<&str>,
    kinds: &[u16],
) -> (Record, Vec<String>, usize) {
    let store = MemoryStore::in_memory();
    let event = Event::parse_json(&ours.to_string()).expect("a valid event");
    let targets = RELAYS[..2].iter().map(|r| r.to_string()).collect();
    let plan = Plan::new(event.to_envelope(), targets, Policy::All);
    block_on(store.enqueue(plan, 0)).expect("enqueue");
    let t = ScriptedTransport::new();
    if let Some(theirs) = theirs {
        t.storing(RELAYS[0], theirs);
    }
    t.always(RELAYS[0], Outcome::Accepted, "");
    t.always(RELAYS[1], Outcome::Accepted, "");
    let mut cfg: FlushConfig = config(10, 4);
    cfg.newer_kinds = kinds.to_vec();
    let mut seen = Vec::new();
    block_on(flush_until_idle(
        &store,
        &t,
        &cfg,
        &|| 1_000,
        &mut counter(),
        &mut |e| {
            if let FlushEvent::Superseded { record } = e {
                seen.push(record.id.clone());
            }
        },
        100,
    ))
    .expect("flush");
    let record = block_on(store.get(event.id())).unwrap().unwrap();
    let sent = t.count(RELAYS[0], event.id());
    (record, seen, sent)
}

#[test]
fn a_relay_holding_a_newer_contact_list_is_not_sent_the_stale_one() {
    let ours = version(3, 100, "follows: alice", 1);
    let theirs = version(3, 200, "follows: alice, bob", 1);
    let id = theirs["id"].as_str().unwrap().to_string();
    let (record, seen, sent) = flush_against(&ours, Some(&theirs.to_string()), &NEWER_CHECK_KINDS);
    assert_eq!(
        sent, 0,
        "the relay holding the newer list never got the stale one"
    );
    assert_eq!(record.stage, Stage::Superseded);
    assert_eq!(record.reason, Some(StopReason::RemoteNewer));
    assert_eq!(record.superseded_by.as_deref(), Some(id.as_str()));
    let e = record
        .latest_evidence(RELAYS[0])
        .expect("evidence of the check");
    assert_eq!(e.outcome, Outcome::Rejected(RejectReason::Newer));
    assert!(
        e.message.starts_with(&format!("{id} (created_at 200)")),
        "{}",
        e.message
    );
    assert_eq!(
        seen,
        std::slice::from_ref(&record.id),
        "told once, as superseded"
    );
}

#[test]
fn only_a_valid_newer_version_of_the_same_slot_stops_a_send() {
    let ours = version(3, 100, "mine", 1);
    let mut forged = version(3, 200, "theirs", 1);
    forged["content"] = json!("changed after signing");
    let mut tie = [version(3, 100, "tie a", 1), version(3, 100, "tie b", 1)];
    tie.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let ours_tied = &tie[1];
    // (ours, what the relay sends back, whether it stops the send)
    let cases: Vec<(&Value, String, bool)> = vec![
        (&ours, version(3, 50, "older", 1).to_string(), false),
        (&ours, ours.to_string(), false),
        (
            &ours,
            version(3, 200, "another author", 2).to_string(),
            false,
        ),
        (&ours, version(0, 200, "another kind", 1).to_string(), false),
        (&ours, forged.to_string(), false),
        (&ours, "not an event".to_string(), false),
        (ours_tied, tie[0].to_string(), true),
        (&tie[0], tie[1].to_string(), false),
        (&ours, version(3, 200, "newer", 1).to_string(), true),
    ];
    for (i, (ours, theirs, stops)) in cases.iter().enumerate() {
        let (record, seen, sent) = flush_against(ours, Some(theirs), &NEWER_CHECK_KINDS);
        if *stops {
            assert_eq!(
                (record.stage, sent, seen.len()),
                (Stage::Superseded, 0, 1),
                "case {i}"
            );
        } else {
            assert_eq!(
                (record.stage, sent, seen.len()),
                (Stage::Satisfied, 1, 0),
                "case {i}"
            );
        }
    }
}

#[test]
fn addressable_versions_are_matched_by_d_tag_and_kinds_not_listed_are_sent() {
    let ours = version(30_000, 100, "list v1", 1);
    let theirs = version(30_000, 200, "list v2", 1).to_string();
    let (record, _, sent) = flush_against(&ours, Some(&theirs), &[30_000]);
    assert_eq!((record.reason, sent), (Some(StopReason::RemoteNewer), 0));
    // Another `d` tag is another slot.
    let mut other = version(30_000, 200, "other list", 1);
    other["tags"] = json!([["d", "other"]]);
    let other = sign_with(&key(1), &other).to_string();
    let (record, _, sent) = flush_against(&ours, Some(&other), &[30_000]);
    assert_eq!((record.stage, sent), (Stage::Satisfied, 1));
    // Not a kind to check (the default list), or no kinds at all: sent, never asked.
    for kinds in [&NEWER_CHECK_KINDS[..], &[]] {
        let (record, _, sent) = flush_against(&ours, Some(&theirs), kinds);
        assert_eq!((record.stage, sent), (Stage::Satisfied, 1), "{kinds:?}");
    }
    let ours = version(3, 100, "contacts", 1);
    let theirs = version(3, 200, "contacts v2", 1).to_string();
    let (record, _, sent) = flush_against(&ours, Some(&theirs), &[]);
    assert_eq!(
        (record.stage, sent),
        (Stage::Satisfied, 1),
        "the check turned off"
    );
}

#[test]
fn the_question_names_the_slot() {
    let meta = |kind: u16, d: &str| {
        let mut m = Event::parse_json(&version(kind, 1, "", 1).to_string())
            .unwrap()
            .to_envelope()
            .meta
            .unwrap();
        m.pubkey = "ab".repeat(32);
        m.d = d.into();
        m
    };
    let pk = "ab".repeat(32);
    assert_eq!(
        req_newest("outbox", &meta(3, "")),
        format!(r#"["REQ","outbox",{{"authors":["{pk}"],"kinds":[3],"limit":1}}]"#)
    );
    assert_eq!(
        req_newest("outbox", &meta(30_000, "a \"quoted\"\nd")),
        format!(
            r##"["REQ","outbox",{{"authors":["{pk}"],"kinds":[30000],"#d":["a \"quoted\"\nd"],"limit":1}}]"##
        )
    );
}

proptest::proptest! {
    #![proptest_config(crate::proptest_config::cases(64))]

    /// A relay cannot make up a newer version: any change to one field of a valid newer
    /// version (its id and signature no longer match), or text that is no event at all,
    /// is no newer version; the check never panics.
    #[test]
    fn a_changed_or_made_up_version_is_never_newer(
        field in 0usize..7,
        text in ".{0,40}",
        number in proptest::prelude::any::<u64>(),
        hex_byte in 0u8..16,
    ) {
        let ours = version(3, 100, "mine", 1);
        let envelope = Event::parse_json(&ours.to_string()).unwrap().to_envelope();
        let newer = version(3, 200, "newer", 1);
        proptest::prop_assert!(nostr_outbox::nostr::newer_version(&envelope, &newer.to_string()).is_some());
        let mut changed = newer.clone();
        let flip = |s: &str| {
            let mut s = s.to_string();
            let c = format!("{hex_byte:x}");
            if s[..1] == c { s.replace_range(..1, if c == "0" { "1" } else { "0" }) } else { s.replace_range(..1, &c) }
            s
        };
        match field {
            0 => changed["id"] = json!(flip(newer["id"].as_str().unwrap())),
            1 => changed["pubkey"] = json!(flip(newer["pubkey"].as_str().unwrap())),
            2 => changed["created_at"] = json!(200 + 1 + number % 1_000_000),
            3 => changed["kind"] = json!(3 + 1 + number % 60_000),
            4 => changed["tags"] = json!([["p", text.clone()]]),
            5 => changed["content"] = json!(format!("{text}!")),
            _ => changed["sig"] = json!(flip(newer["sig"].as_str().unwrap())),
        }
        proptest::prop_assert_ne!(&changed, &newer);
        proptest::prop_assert!(nostr_outbox::nostr::newer_version(&envelope, &changed.to_string()).is_none());
        proptest::prop_assert!(nostr_outbox::nostr::newer_version(&envelope, &text).is_none());
    }
}
