//! Routes: records whose relays a resolver decides when they are due
//! (`nostr_outbox::flush::sign`'s prepare step), over the memory store and the scripted
//! transport, with a native resolver that answers what the test scripts: a resolver that
//! fails leaves the record waiting (no attempt, nothing sent), then its answer's relays
//! (normalized, invalid ones left out) are where the record goes; a `dm` recipient not
//! ready ends it, sent nowhere; and any text a resolver answers, however hostile, gives
//! targets that are valid normalized relay URLs, at most 64, or none.
#![cfg(not(target_arch = "wasm32"))]

use std::cell::RefCell;
use std::collections::VecDeque;

use futures::executor::block_on;
use futures_util::future::LocalBoxFuture;
use proptest::prelude::*;

use nostr_outbox::core::{Outcome, Policy, Record, Stage, StopReason, NEEDS_RESOLVER, RESOLVER};
use nostr_outbox::flush::FlushConfig;
use nostr_outbox::nostr::RelayUrl;
use nostr_outbox::store::conformance::fixture_plan;
use nostr_outbox::store::{MemoryStore, Store};
use nostr_outbox::transport::{ScriptedTransport, Signer};

use crate::drafts::sign_at;
use crate::support::{config, counter};

/// Answers each `resolve` with the next scripted answer (the last one again when the
/// script runs out); records what it was asked.
struct ScriptedResolver {
    answers: RefCell<VecDeque<Result<String, String>>>,
    asked: RefCell<Vec<String>>,
}

impl ScriptedResolver {
    fn new(answers: Vec<Result<&str, &str>>) -> ScriptedResolver {
        ScriptedResolver {
            answers: RefCell::new(
                answers
                    .into_iter()
                    .map(|a| a.map(String::from).map_err(String::from))
                    .collect(),
            ),
            asked: RefCell::new(Vec::new()),
        }
    }
}

impl Signer for ScriptedResolver {
    fn can(&self) -> u8 {
        NEEDS_RESOLVER
    }

    fn sign(&self, _template: String) -> LocalBoxFuture<'static, Result<String, String>> {
        panic!("a resolver-only context never asks for a signature")
    }

    fn resolve(
        &self,
        route: &[String],
        _event: &str,
    ) -> LocalBoxFuture<'static, Result<String, String>> {
        self.asked.borrow_mut().push(route.join(","));
        let mut answers = self.answers.borrow_mut();
        let answer = if answers.len() > 1 {
            answers.pop_front()
        } else {
            answers.front().cloned()
        }
        .expect("a scripted answer");
        Box::pin(async move { answer })
    }
}

async fn routed(store: &MemoryStore, id: &str, route: &[&str], now: u64) -> Record {
    let mut plan = fixture_plan(1, &[], Policy::Any).with_id(id);
    plan.route = route.iter().map(|r| r.to_string()).collect();
    store.enqueue(plan, now).await.expect("enqueued").record
}

async fn publish_all(store: &MemoryStore, t: &ScriptedTransport, config: &FlushConfig, now: u64) {
    nostr_outbox::flush::flush_until_idle(
        store,
        t,
        config,
        &|| now,
        &mut counter(),
        &mut |_| {},
        100,
    )
    .await
    .expect("the flush runs");
}

#[test]
fn a_resolver_that_fails_then_answers_decides_where_the_record_goes() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        t.default_answer(Outcome::Accepted, "");
        let config = config(8, 4);
        let r = routed(&store, "r1", &["outbox"], 1_000_000).await;
        assert_eq!((r.stage, r.targets.len()), (Stage::Draft, 0));
        let resolver = ScriptedResolver::new(vec![
            Err("no index relay answered"),
            Ok("\nwss://a.example\toutbox: write relay\nnot a url\twhat\nWSS://A.EXAMPLE/\toutbox: again\nwss://b.example\toutbox"),
        ]);
        let mut log = Vec::new();
        sign_at(&store, &resolver, &config, 1_000_000, &mut log).await;
        assert_eq!(log, ["retrying r1"]);
        let r = store.get("r1").await.unwrap().unwrap();
        assert_eq!(
            (r.stage, r.attempts, r.due_ms),
            (Stage::Draft, 0, Some(1_001_000))
        );
        // A publishing flush never takes it before its route is resolved.
        publish_all(&store, &t, &config, 1_000_500).await;
        assert!(t.sent().is_empty());
        // Before its backoff, it is not asked again.
        sign_at(&store, &resolver, &config, 1_000_500, &mut log).await;
        assert_eq!(resolver.asked.borrow().len(), 1);

        sign_at(&store, &resolver, &config, 1_001_000, &mut log).await;
        assert_eq!(log, ["retrying r1", "ready r1"]);
        let r = store.get("r1").await.unwrap().unwrap();
        assert_eq!(r.stage, Stage::Pending);
        assert_eq!(r.targets, ["wss://a.example", "wss://b.example"]);
        assert_eq!(
            r.routed.as_deref(),
            Some(&["wss://a.example".to_string(), "wss://b.example".to_string()][..])
        );
        let why: Vec<(Outcome, &str)> = r
            .evidence
            .iter()
            .filter(|e| e.target == RESOLVER)
            .map(|e| (e.outcome, e.message.as_str()))
            .collect();
        assert_eq!(
            why,
            [
                (Outcome::Unreachable, "no index relay answered"),
                (Outcome::Accepted, "wss://a.example outbox: write relay"),
                (Outcome::Accepted, "wss://a.example outbox: again"),
                (Outcome::Accepted, "wss://b.example outbox"),
            ]
        );
        publish_all(&store, &t, &config, 1_001_000).await;
        let id = r.event.id.clone();
        assert_eq!(
            (
                t.count("wss://a.example", &id),
                t.count("wss://b.example", &id)
            ),
            (1, 1)
        );
        assert_eq!(t.sent().len(), 2);
        assert_eq!(
            store.get("r1").await.unwrap().unwrap().stage,
            Stage::Satisfied
        );
        assert_eq!(*resolver.asked.borrow(), ["outbox", "outbox"]);
    })
}

#[test]
fn a_dm_recipient_not_ready_ends_the_record_and_it_is_sent_nowhere() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        t.default_answer(Outcome::Accepted, "");
        let config = config(8, 4);
        routed(&store, "dm", &["dm"], 1_000).await;
        let resolver = ScriptedResolver::new(vec![Ok(
            "ab12 has no DM relays (kind 10050)\nwss://a.example\tdm: a relay of someone else",
        )]);
        let mut log = Vec::new();
        sign_at(&store, &resolver, &config, 2_000, &mut log).await;
        assert_eq!(log, ["exhausted dm"]);
        let r = store.get("dm").await.unwrap().unwrap();
        assert_eq!(
            (r.stage, r.reason, r.targets.len()),
            (Stage::Exhausted, Some(StopReason::RecipientNotReady), 0)
        );
        assert_eq!(
            r.last_error.as_deref(),
            Some("ab12 has no DM relays (kind 10050)")
        );
        publish_all(&store, &t, &config, 3_000).await;
        assert!(t.sent().is_empty(), "never a fallback");
    })
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(200))]

    /// Whatever a resolver answers, the record's targets are valid normalized relay URLs
    /// (at most 64), and it ends ready, not ready, or with no relay: never a panic.
    #[test]
    fn any_resolver_answer_gives_valid_targets(
        lines in prop::collection::vec(
            prop_oneof![
                "[ -~\t]{0,40}",
                "(ws|wss|WSS|http)://[a-z0-9.]{1,12}(:[0-9]{1,5})?(/[a-z]{0,3})?\t[ -~]{0,20}",
                Just("wss://\u{e9}.example".to_string()),
            ],
            0..80,
        ),
        first in prop_oneof![Just(String::new()), "[a-f0-9]{1,8}"],
    ) {
        block_on(async {
            let store = MemoryStore::in_memory();
            let config = config(8, 4);
            routed(&store, "r", &["inbox"], 1_000).await;
            let text = std::iter::once(first.clone()).chain(lines.iter().cloned()).collect::<Vec<_>>().join("\n");
            let resolver = ScriptedResolver::new(vec![Ok(text.as_str())]);
            sign_at(&store, &resolver, &config, 2_000, &mut Vec::new()).await;
            let r = store.get("r").await.unwrap().unwrap();
            prop_assert!(r.targets.len() <= 64);
            for t in &r.targets {
                prop_assert_eq!(RelayUrl::parse(t).map(|u| u.as_str().to_string()).ok(), Some(t.clone()));
            }
            match (r.stage, r.reason) {
                (Stage::Pending, None) => prop_assert!(first.is_empty() && !r.targets.is_empty()),
                (Stage::Exhausted, Some(StopReason::RecipientNotReady)) => prop_assert!(!first.is_empty()),
                (Stage::Exhausted, Some(StopReason::NoRelays)) => prop_assert!(r.targets.is_empty()),
                other => prop_assert!(false, "unexpected {:?}", other),
            }
            Ok(())
        })?;
    }
}
