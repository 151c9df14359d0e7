//! Drafts: unsigned templates signed by the app's signer when due
//! (`nostr_outbox::flush::sign`), over the memory store and the scripted transport,
//! with native signers that sign with a key, hang, fail, refuse or cheat.
#![cfg(not(target_arch = "wasm32"))]

use std::cell::{Cell, RefCell};

use futures::executor::block_on;
use futures_util::future::LocalBoxFuture;
use k256::schnorr::SigningKey;
use proptest::prelude::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use nostr_outbox::core::{Outcome, Plan, Policy, Record, RetryConfig, Stage, StopReason, SIGNER};
use nostr_outbox::flush::sign::{is_refusal, sign_drafts, SignConfig};
use nostr_outbox::flush::{FlushConfig, FlushEvent, TickStats};
use nostr_outbox::nostr::template::{leading_zero_bits, Template};
use nostr_outbox::nostr::Event;
use nostr_outbox::store::conformance::RELAYS;
use nostr_outbox::store::{MemoryStore, Store};
use nostr_outbox::transport::{ScriptedTransport, Signer};

use crate::support::{config, counter, flush_all};

/// What the test signer does when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Signs with its key.
    Sign,
    /// Never answers.
    Hang,
    /// Rejects as an unreachable bunker does.
    Fail,
    /// Rejects as a person who says no.
    Refuse,
    /// Signs with another key.
    OtherKey,
    /// Signs, with the content changed.
    Tamper,
    /// Answers with a signature that does not verify.
    BadSig,
    /// Answers with the signature alone (NDK's `sign`).
    SigOnly,
    /// Answers with a signature alone, by another key.
    SigOnlyOtherKey,
}

pub(crate) fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&Sha256::digest([b'd', n])[..]).expect("a valid secret key")
}

pub(crate) fn pubkey(key: &SigningKey) -> String {
    hex::encode(key.verifying_key().to_bytes())
}

/// Signs an unsigned event object with `key` (NIP-01 id, BIP-340 signature).
pub(crate) fn sign_with(key: &SigningKey, template: &Value) -> Value {
    let tags: Vec<Vec<String>> = serde_json::from_value(template["tags"].clone()).unwrap();
    let unsigned = Event::from_parts(
        "0".repeat(64),
        pubkey(key),
        template["created_at"].as_u64().unwrap(),
        template["kind"].as_u64().unwrap() as u16,
        tags.clone(),
        template["content"].as_str().unwrap().to_string(),
        "0".repeat(128),
    )
    .unwrap();
    let id = unsigned.compute_id();
    let digest: [u8; 32] = hex::decode(&id).unwrap().try_into().unwrap();
    let sig = key.sign_raw(&digest, &[7u8; 32]).unwrap().to_bytes();
    json!({
        "id": id,
        "pubkey": pubkey(key),
        "created_at": unsigned.created_at(),
        "kind": unsigned.kind(),
        "tags": tags,
        "content": unsigned.content(),
        "sig": hex::encode(sig),
    })
}

/// Where a [`TestSigner`]'s runtime mines proof of work ([`Signer::mine`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miner {
    /// Nowhere (the flush mines itself).
    Absent,
    /// Mines from this nonce on (so its nonce is not the one the flush finds from 0).
    From(u64),
    /// Answers this nonce, fitting or not.
    Gives(u64),
    /// Finds none in time.
    Unfinished,
}

/// A signer for tests: answers as its [`Mode`] says, and counts what it was asked.
pub struct TestSigner {
    pub mode: Cell<Mode>,
    pub miner: Cell<Miner>,
    pub asked: Cell<u32>,
    pub templates: RefCell<Vec<Value>>,
}

impl TestSigner {
    pub fn new(mode: Mode) -> TestSigner {
        TestSigner {
            mode: Cell::new(mode),
            miner: Cell::new(Miner::Absent),
            asked: Cell::new(0),
            templates: RefCell::new(Vec::new()),
        }
    }
}

impl Signer for TestSigner {
    fn sign(&self, template: String) -> LocalBoxFuture<'static, Result<String, String>> {
        let template: Value = serde_json::from_str(&template).expect("JSON");
        self.asked.set(self.asked.get() + 1);
        self.templates.borrow_mut().push(template.clone());
        let answer = match self.mode.get() {
            Mode::Sign => Ok(sign_with(&key(1), &template)),
            Mode::Hang => return Box::pin(futures_util::future::pending()),
            Mode::Fail => Err("bunker is not connected".to_string()),
            Mode::Refuse => Err("User rejected the request".to_string()),
            Mode::OtherKey => Ok(sign_with(&key(2), &template)),
            Mode::Tamper => {
                let mut t = template.clone();
                t["content"] = json!("changed");
                Ok(sign_with(&key(1), &t))
            }
            Mode::BadSig => {
                let mut signed = sign_with(&key(1), &template);
                signed["sig"] = json!("1".repeat(128));
                Ok(signed)
            }
            Mode::SigOnly => Ok(sign_with(&key(1), &template)["sig"].clone()),
            Mode::SigOnlyOtherKey => Ok(sign_with(&key(2), &template)["sig"].clone()),
        };
        Box::pin(async move { answer.map(|v| v.to_string()) })
    }

    fn mine(&self, template: String, _ms: u64) -> LocalBoxFuture<'static, Result<Option<u64>, ()>> {
        let found = match self.miner.get() {
            Miner::Absent => Err(()),
            Miner::From(start) => {
                let mut t = Template::parse(&template, None).expect("the template to mine");
                Ok(t.mine(start, u64::MAX).ok())
            }
            Miner::Gives(n) => Ok(Some(n)),
            Miner::Unfinished => Ok(None),
        };
        Box::pin(async move { found })
    }
}

/// A draft plan of `kind` by key 1, filed at `now_ms`.
pub fn draft_plan(id: &str, kind: u16, content: &str, now_ms: u64) -> Plan {
    draft_plan_with(
        id,
        json!({ "kind": kind, "pubkey": pubkey(&key(1)), "tags": [], "content": content }),
        None,
        now_ms,
    )
}

fn draft_plan_with(id: &str, template: Value, pow: Option<u8>, now_ms: u64) -> Plan {
    let template = Template::parse(&template.to_string(), pow).expect("a valid template");
    Plan::new(
        template.to_envelope(now_ms / 1_000),
        RELAYS.iter().map(|r| r.to_string()).collect(),
        Policy::All,
    )
    .with_id(id)
}

/// One signing pass at `now` (a timeout fires at once), its events logged (a record
/// made ready by its route alone is `ready`).
pub async fn sign_at(
    store: &MemoryStore,
    signer: &dyn Signer,
    config: &FlushConfig,
    now: u64,
    log: &mut Vec<String>,
) -> TickStats {
    sign_by(store, signer, config, &|| now, log).await
}

/// One signing pass (as [`sign_at`]) whose time is `clock`'s.
pub async fn sign_by(
    store: &MemoryStore,
    signer: &dyn Signer,
    config: &FlushConfig,
    clock: &dyn Fn() -> u64,
    log: &mut Vec<String>,
) -> TickStats {
    let sleep = |_ms: u64| -> LocalBoxFuture<'static, ()> { Box::pin(async {}) };
    sign_drafts(
        store,
        signer,
        config,
        SignConfig::default(),
        true,
        clock,
        &mut counter(),
        &sleep,
        &|| true,
        &mut |e| {
            log.push(match e {
                FlushEvent::Signed { record } => format!("signed {}", record.id),
                FlushEvent::Retrying { record } => format!("retrying {}", record.id),
                FlushEvent::Exhausted { record } => format!("exhausted {}", record.id),
                FlushEvent::LostClaim { id } => format!("lost {id}"),
                FlushEvent::Released { record } => format!("ready {}", record.id),
                _ => "other".into(),
            })
        },
    )
    .await
    .expect("the pass runs")
}

async fn get(store: &MemoryStore, id: &str) -> Record {
    store.get(id).await.unwrap().expect("stored")
}

fn signer_evidence(r: &Record) -> Vec<(Outcome, u32)> {
    r.evidence
        .iter()
        .filter(|e| e.target == SIGNER)
        .map(|e| (e.outcome, e.tries))
        .collect()
}

#[test]
fn a_draft_is_signed_when_due_then_published_once() {
    block_on(async {
        let store = MemoryStore::in_memory();
        let t = ScriptedTransport::new();
        t.default_answer(Outcome::Accepted, "");
        let config = config(8, 4);
        let created = store
            .enqueue(draft_plan("d1", 1, "written offline", 1_000_000), 1_000_000)
            .await
            .unwrap();
        assert_eq!(created.record.stage, Stage::Draft);
        assert!(created.record.is_draft());
        // A flush with no signer leaves it alone and sends nothing.
        let summary = flush_all(&store, &t, &config).await.unwrap();
        assert_eq!(summary.stats.claimed, 0);
        assert!(t.sent().is_empty());
        assert_eq!(get(&store, "d1").await.stage, Stage::Draft);

        let signer = TestSigner::new(Mode::Sign);
        let mut log = Vec::new();
        let signed = sign_at(&store, &signer, &config, 1_005_000, &mut log).await;
        assert_eq!(signed.signed, 1);
        assert_eq!(log, ["signed d1"]);
        let r = get(&store, "d1").await;
        assert_eq!(r.stage, Stage::Pending);
        assert_eq!(r.attempts, 0);
        assert_eq!(signer_evidence(&r), [(Outcome::Accepted, 1)]);
        let event = Event::parse_json(&r.event.raw).unwrap();
        event.verify().unwrap();
        assert_eq!(event.id(), r.event.id);
        assert_eq!(event.pubkey(), pubkey(&key(1)));
        assert_eq!(event.content(), "written offline");
        // No `created_at` in the template: the signing time.
        assert_eq!(event.created_at(), 1_005);
        assert_eq!(signer.templates.borrow()[0]["created_at"], json!(1_005));

        nostr_outbox::flush::flush_until_idle(
            &store,
            &t,
            &config,
            &|| 1_005_000,
            &mut counter(),
            &mut |_| {},
            100,
        )
        .await
        .unwrap();
        for relay in RELAYS {
            assert_eq!(t.count(relay, event.id()), 1, "{relay}");
        }
        assert_eq!(t.sent().len(), RELAYS.len());
        assert_eq!(get(&store, "d1").await.stage, Stage::Satisfied);
        // Nothing left to sign.
        let again = sign_at(&store, &signer, &config, 1_006_000, &mut log).await;
        assert_eq!(again.claimed, 0);
        assert_eq!(signer.asked.get(), 1);
    })
}

#[test]
fn a_context_without_a_signer_neither_claims_nor_wakes_for_drafts() {
    block_on(async {
        let store = with_draft(5_000).await;
        assert_eq!(store.next_due(0).await.unwrap(), None);
        assert_eq!(store.count_due(u64::MAX).await.unwrap(), 0);
        assert_eq!(store.next_due(1).await.unwrap(), Some(5_000));
        let mut request = nostr_outbox::core::ClaimRequest {
            owner: "sw".into(),
            lease_id: "l1".into(),
            limit: 10,
            lease_ms: 1_000,
            lanes: Vec::new(),
            relays: Vec::new(),
            prepare: 0,
            lapsed_only: false,
        };
        assert!(store.claim(&request, 10_000).await.unwrap().is_empty());
        request.prepare = 1;
        let claimed = store.claim(&request, 10_000).await.unwrap();
        assert_eq!(claimed.len(), 1);
        assert_eq!(claimed[0].stage, Stage::Leased);
        // Its lease keeps it from another signing context until it expires.
        request.lease_id = "l2".into();
        request.owner = "tab-2".into();
        assert!(store.claim(&request, 10_500).await.unwrap().is_empty());
        let status = store.status().await.unwrap();
        assert_eq!(status.leased, 1);
    })
}

#[test]
fn an_unavailable_signer_backs_off_without_spending_attempts_and_asks_once_per_run() {
    block_on(async {
        let store = with_drafts(3).await;
        let config = config(8, 4);
        let signer = TestSigner::new(Mode::Fail);
        let mut log = Vec::new();
        let pass = sign_at(&store, &signer, &config, 2_000, &mut log).await;
        // The first draft asked; the others wait as long, not asked.
        assert_eq!(signer.asked.get(), 1);
        assert_eq!(pass.retrying, 3);
        assert_eq!(store.next_due(1).await.unwrap(), Some(2_000 + 1_000));
        for n in 0..3 {
            let r = get(&store, &format!("d{n}")).await;
            assert_eq!(r.stage, Stage::Draft);
            assert_eq!(r.attempts, 0);
            assert_eq!(signer_evidence(&r), [(Outcome::Unreachable, 1)]);
            assert_eq!(r.due_ms, Some(3_000));
        }
        // Before the backoff ends nothing is asked; after it, the delay doubles.
        sign_at(&store, &signer, &config, 2_500, &mut log).await;
        assert_eq!(signer.asked.get(), 1);
        sign_at(&store, &signer, &config, 3_000, &mut log).await;
        assert_eq!(signer.asked.get(), 2);
        let r = get(&store, "d0").await;
        assert_eq!(signer_evidence(&r), [(Outcome::Unreachable, 2)]);
        assert_eq!(r.due_ms, Some(3_000 + 2_000));
        // The signer comes back: all three signed in one pass.
        signer.mode.set(Mode::Sign);
        let pass = sign_at(&store, &signer, &config, 5_000, &mut log).await;
        assert_eq!(pass.signed, 3);
        // No draft waits; the signed records are due at once.
        assert_eq!(store.next_due(1).await.unwrap(), Some(5_000));
        assert_eq!(store.next_due(0).await.unwrap(), Some(5_000));
        for n in 0..3 {
            let r = get(&store, &format!("d{n}")).await;
            assert_eq!(r.stage, Stage::Pending);
            assert_eq!(r.attempt_limit, r.max_attempts);
        }
    })
}

/// A memory store holding `count` drafts, `d0`, `d1`, … (kind 1, each its id as its
/// content), filed at 1 000.
async fn with_drafts(count: u32) -> MemoryStore {
    let store = MemoryStore::in_memory();
    for n in 0..count {
        let id = format!("d{n}");
        store
            .enqueue(draft_plan(&id, 1, &id, 1_000), 1_000)
            .await
            .unwrap();
    }
    store
}

/// A memory store holding one draft, `d1` (kind 1, content `x`), filed at `at`.
async fn with_draft(at: u64) -> MemoryStore {
    let store = MemoryStore::in_memory();
    store
        .enqueue(draft_plan("d1", 1, "x", at), at)
        .await
        .unwrap();
    store
}

/// A store with draft `d1` filed at 1 000, and one signing pass at 1 000 by a signer in
/// `mode`: the store, the signer, the pass's events and the draft after it.
async fn one_draft_asked(mode: Mode) -> (MemoryStore, TestSigner, Vec<String>, Record) {
    let store = with_draft(1_000).await;
    let signer = TestSigner::new(mode);
    let mut log = Vec::new();
    sign_at(&store, &signer, &config(8, 4), 1_000, &mut log).await;
    let r = get(&store, "d1").await;
    (store, signer, log, r)
}

#[test]
fn a_draft_leased_by_a_flusher_that_is_gone_is_taken_over_by_the_lock_holder() {
    block_on(async {
        let store = with_draft(1_000).await;
        // A tab claimed it for signing and was closed while its signer was asked.
        let dead = nostr_outbox::core::ClaimRequest {
            owner: "closed-tab".into(),
            lease_id: "l-dead".into(),
            limit: 8,
            lease_ms: 180_000,
            lanes: Vec::new(),
            relays: Vec::new(),
            prepare: 1,
            lapsed_only: false,
        };
        assert_eq!(store.claim(&dead, 1_000).await.unwrap().len(), 1);
        let signer = TestSigner::new(Mode::Sign);
        let mut log = Vec::new();
        let pass = sign_at(&store, &signer, &config(8, 4), 1_500, &mut log).await;
        assert_eq!((pass.signed, pass.claimed), (1, 1), "{log:?}");
        let r = get(&store, "d1").await;
        assert_eq!(r.stage, Stage::Pending);
        assert_eq!(r.takeovers, 1);
    })
}

/// A signer a person approves, each signature taking `ms` of `clock`.
struct SlowSigner<'a> {
    inner: TestSigner,
    clock: &'a Cell<u64>,
    ms: u64,
}

impl Signer for SlowSigner<'_> {
    fn sign(&self, template: String) -> LocalBoxFuture<'static, Result<String, String>> {
        self.clock.set(self.clock.get() + self.ms);
        self.inner.sign(template)
    }
}

#[test]
fn a_slow_signer_is_asked_only_while_the_lease_covers_it_and_the_rest_is_handed_back() {
    block_on(async {
        let store = with_drafts(5).await;
        let config = config(8, 4);
        // The lease covers two drafts' worst case (2 × 135 s by default); each
        // approval here takes 100 s.
        let clock = Cell::new(2_000);
        let signer = SlowSigner {
            inner: TestSigner::new(Mode::Sign),
            clock: &clock,
            ms: 100_000,
        };
        let mut log = Vec::new();
        let pass = sign_by(&store, &signer, &config, &|| clock.get(), &mut log).await;
        // Asked at 0 s and 100 s; at 200 s the lease (270 s) no longer covers another
        // 135 s: the three left go back unasked, due at once, and none is lost.
        assert_eq!(signer.inner.asked.get(), 2, "{log:?}");
        assert_eq!(
            (pass.claimed, pass.signed, pass.released, pass.lost_claims),
            (5, 2, 3, 0)
        );
        assert_eq!(
            log,
            ["signed d0", "signed d1", "ready d2", "ready d3", "ready d4"]
        );
        for n in 2..5 {
            let r = get(&store, &format!("d{n}")).await;
            assert_eq!(r.stage, Stage::Draft);
            assert!(r.lease.is_none());
            assert_eq!(r.due_ms, Some(202_000));
            assert_eq!((r.attempts, signer_evidence(&r)), (0, vec![]));
        }
        // The next pass signs them (each asked once in all).
        let mut log = Vec::new();
        let pass = sign_at(&store, &signer, &config, 202_000, &mut log).await;
        assert_eq!(pass.signed, 3);
        assert_eq!(signer.inner.asked.get(), 5);
    })
}

#[test]
fn a_signer_that_never_answers_times_out() {
    block_on(async {
        let (_, _, log, r) = one_draft_asked(Mode::Hang).await;
        assert_eq!(r.stage, Stage::Draft);
        assert_eq!(signer_evidence(&r), [(Outcome::Timeout, 1)]);
        assert!(r.evidence[0].message.contains("did not answer in time"));
        assert_eq!(log, ["retrying d1"]);
    })
}

#[test]
fn a_signature_alone_signs_the_draft_as_it_was_asked() {
    block_on(async {
        let (_, _, log, r) = one_draft_asked(Mode::SigOnly).await;
        assert_eq!(log, ["signed d1"]);
        let event = Event::parse_json(&r.event.raw).unwrap();
        event.verify().unwrap();
        assert_eq!(
            (event.pubkey(), event.content()),
            (pubkey(&key(1)).as_str(), "x")
        );
    })
}

#[test]
fn a_refusal_is_terminal_until_retry() {
    block_on(async {
        let (store, signer, mut log, r) = one_draft_asked(Mode::Refuse).await;
        assert_eq!(r.stage, Stage::Exhausted);
        assert_eq!(r.reason, Some(StopReason::SignerRefused));
        assert_eq!(log, ["exhausted d1"]);
        assert!(r.evidence[0].outcome.is_terminal_rejection());
        // `retry` makes it a draft again, signed when the person agrees.
        let r = store.retry("d1", 2_000).await.unwrap();
        assert_eq!(r.stage, Stage::Draft);
        signer.mode.set(Mode::Sign);
        sign_at(&store, &signer, &config(8, 4), 2_000, &mut log).await;
        assert_eq!(get(&store, "d1").await.stage, Stage::Pending);
    })
}

#[test]
fn an_answer_that_is_not_the_draft_signed_is_terminal_and_never_published() {
    for mode in [
        Mode::OtherKey,
        Mode::Tamper,
        Mode::BadSig,
        Mode::SigOnlyOtherKey,
    ] {
        block_on(async {
            let (store, _, _, r) = one_draft_asked(mode).await;
            let t = ScriptedTransport::new();
            assert_eq!(r.stage, Stage::Exhausted, "{mode:?}");
            assert_eq!(r.reason, Some(StopReason::SignatureInvalid), "{mode:?}");
            assert!(r.is_draft(), "{mode:?}");
            flush_all(&store, &t, &config(8, 4)).await.unwrap();
            assert!(t.sent().is_empty(), "{mode:?}");
        })
    }
}

#[test]
fn drafts_take_part_in_supersession_of_replaceable_events() {
    block_on(async {
        let store = MemoryStore::in_memory();
        // A kind-0 draft filed at t=1000 s, then a newer one at t=2000 s: the older is
        // withdrawn, named by the newer draft's record id.
        store
            .enqueue(
                draft_plan("old", 0, "{\"name\":\"a\"}", 1_000_000),
                1_000_000,
            )
            .await
            .unwrap();
        let newer = store
            .enqueue(
                draft_plan("new", 0, "{\"name\":\"b\"}", 2_000_000),
                2_000_000,
            )
            .await
            .unwrap();
        assert_eq!(newer.withdrawn.len(), 1);
        let old = get(&store, "old").await;
        assert_eq!(old.stage, Stage::Superseded);
        assert_eq!(old.superseded_by.as_deref(), Some("new"));
        // An older draft (a template dated earlier) is born superseded.
        let stale = draft_plan_with(
            "stale",
            json!({ "kind": 0, "pubkey": pubkey(&key(1)), "tags": [], "content": "{}", "created_at": 1_500 }),
            None,
            3_000_000,
        );
        let born = store.enqueue(stale, 3_000_000).await.unwrap();
        assert_eq!(born.record.stage, Stage::Superseded);
        // The newer draft signed: its event has the signing time.
        let signer = TestSigner::new(Mode::Sign);
        let mut log = Vec::new();
        sign_at(&store, &signer, &config(8, 4), 3_000_000, &mut log).await;
        let r = get(&store, "new").await;
        assert_eq!(r.stage, Stage::Pending);
        assert_eq!(Event::parse_json(&r.event.raw).unwrap().created_at(), 3_000);
    })
}

/// The nonce of the signed event of record `id`, after checking its work and tags.
async fn mined_nonce(store: &MemoryStore, id: &str, difficulty: u32) -> u64 {
    let r = get(store, id).await;
    assert_eq!(r.stage, Stage::Pending, "{r:?}");
    let event = Event::parse_json(&r.event.raw).unwrap();
    let bytes: [u8; 32] = hex::decode(event.id()).unwrap().try_into().unwrap();
    assert!(leading_zero_bits(&bytes) >= difficulty);
    let nonce = event
        .tags()
        .iter()
        .find(|t| t[0] == "nonce")
        .expect("a nonce tag");
    assert_eq!(nonce[2], difficulty.to_string());
    assert_eq!(event.tags()[0], ["t", "x"]);
    nonce[1].parse().expect("a decimal nonce")
}

/// A store holding draft `pow` asking for `difficulty`.
async fn pow_draft(difficulty: u8) -> MemoryStore {
    let store = MemoryStore::in_memory();
    let plan = draft_plan_with(
        "pow",
        json!({ "kind": 1, "pubkey": pubkey(&key(1)), "tags": [["t", "x"]], "content": "work" }),
        Some(difficulty),
        1_000,
    );
    store.enqueue(plan, 1_000).await.unwrap();
    store
}

#[test]
fn proof_of_work_is_mined_before_signing() {
    block_on(async {
        let store = pow_draft(10).await;
        let signer = TestSigner::new(Mode::Sign);
        sign_at(&store, &signer, &config(8, 4), 1_000, &mut Vec::new()).await;
        // Mined here, from nonce 0: the first nonce that fits.
        let nonce = mined_nonce(&store, "pow", 10).await;
        let mut first = Template::parse(&signer.templates.borrow()[0].to_string(), None).unwrap();
        assert_eq!(first.mine(0, u64::MAX), Ok(nonce));
    })
}

#[test]
fn proof_of_work_found_off_the_thread_is_used_once_checked() {
    block_on(async {
        // The runtime's miner (a worker) finds a nonce: that one is signed.
        let store = pow_draft(10).await;
        let signer = TestSigner::new(Mode::Sign);
        signer.miner.set(Miner::From(1_000_000));
        sign_at(&store, &signer, &config(8, 4), 1_000, &mut Vec::new()).await;
        assert!(mined_nonce(&store, "pow", 10).await >= 1_000_000);

        // A nonce that does not fit is not trusted: the flush mines itself.
        let store = pow_draft(10).await;
        let signer = TestSigner::new(Mode::Sign);
        signer.miner.set(Miner::Gives(7));
        sign_at(&store, &signer, &config(8, 4), 1_000, &mut Vec::new()).await;
        assert_ne!(mined_nonce(&store, "pow", 10).await, 7);

        // None found in the time allowed: ended, the signer never asked.
        let store = pow_draft(10).await;
        let signer = TestSigner::new(Mode::Sign);
        signer.miner.set(Miner::Unfinished);
        sign_at(&store, &signer, &config(8, 4), 1_000, &mut Vec::new()).await;
        let r = get(&store, "pow").await;
        assert_eq!(
            (r.stage, r.reason),
            (Stage::Exhausted, Some(StopReason::PowUnfinished))
        );
        assert_eq!(signer.asked.get(), 0);
    })
}

#[test]
fn refusals_are_told_from_outages() {
    for refused in [
        "User rejected",
        "permission denied",
        "Request refused by user",
        "declined",
    ] {
        assert!(is_refusal(refused), "{refused}");
    }
    for outage in [
        "bunker is not connected",
        "Prompt was closed",
        "timeout",
        "fetch failed",
    ] {
        assert!(!is_refusal(outage), "{outage}");
    }
}

#[test]
fn templates_are_read_with_the_event_checks() {
    let ok = json!({ "kind": 1, "pubkey": pubkey(&key(1)), "tags": [], "content": "x" });
    let parse = |v: &Value, pow| Template::parse(&v.to_string(), pow);
    assert!(parse(&ok, None).is_ok());
    for (field, value) in [
        ("pubkey", json!("ABC")),
        ("kind", json!(70_000)),
        ("tags", json!([["t", 1]])),
        ("content", json!(5)),
        ("created_at", json!(-1)),
        ("id", json!("0".repeat(64))),
        ("sig", json!("0".repeat(128))),
    ] {
        let mut bad = ok.clone();
        bad[field] = value;
        assert!(parse(&bad, None).is_err(), "{field}");
    }
    let mut no_pubkey = ok.clone();
    no_pubkey.as_object_mut().unwrap().remove("pubkey");
    assert!(parse(&no_pubkey, None).is_err());
    assert!(parse(&ok, Some(33)).is_err());
    assert!(parse(&json!([1]), None).is_err());
    // Dated or not, and a difficulty kept as NIP-13 keeps it.
    let t = parse(&ok, Some(12)).unwrap();
    assert_eq!((t.created_at(), t.pow()), (None, Some(12)));
    let stored = Template::from_stored(t.to_stored()).unwrap();
    assert_eq!(stored, t);
    // A nonce tag of the template's own asks for its difficulty (NIP-13).
    for (target, want) in [
        ("8", Some(8)),
        ("08", Some(8)),
        ("32", Some(32)),
        ("33", None),
        ("0", None),
        ("x", None),
        ("", None),
        ("300", None),
    ] {
        let mut t = ok.clone();
        t["tags"] = json!([["nonce", "0", target]]);
        assert_eq!(parse(&t, None).unwrap().pow(), want, "{target:?}");
    }
    let mut dated = ok.clone();
    dated["created_at"] = json!(1_700_000_000);
    assert_eq!(
        parse(&dated, None).unwrap().created_at(),
        Some(1_700_000_000)
    );
}

/// What the signer does at each signing pass, and whether a flush runs after it.
fn step() -> impl Strategy<Value = (Mode, bool, u64)> {
    (
        prop::sample::select(vec![
            Mode::Sign,
            Mode::Hang,
            Mode::Fail,
            Mode::Refuse,
            Mode::OtherKey,
            Mode::Tamper,
            Mode::BadSig,
            Mode::SigOnly,
            Mode::SigOnlyOtherKey,
        ]),
        any::<bool>(),
        0u64..20_000,
    )
}

proptest! {
    #![proptest_config(crate::proptest_config::cases(48))]

    /// Whatever the signer does, run after run: no draft is published unsigned or
    /// with a signature that does not verify, and each is published as one event
    /// only, by its author, with its content.
    #[test]
    fn a_draft_is_published_signed_once_as_one_event(
        steps in prop::collection::vec(step(), 1..12),
        drafts in 1usize..4,
    ) {
        block_on(async {
            let store = MemoryStore::in_memory();
            let t = ScriptedTransport::new();
            t.default_answer(Outcome::Accepted, "");
            let config = FlushConfig { retry: RetryConfig { jitter_permille: 0, ..config(8, 4).retry }, ..config(8, 4) };
            for n in 0..drafts {
                let id = format!("d{n}");
                store.enqueue(draft_plan(&id, 1, &id, 1_000), 1_000).await.unwrap();
            }
            let signer = TestSigner::new(Mode::Sign);
            let mut now = 1_000;
            let mut log = Vec::new();
            for (mode, flush, wait) in steps {
                signer.mode.set(mode);
                now += wait;
                sign_at(&store, &signer, &config, now, &mut log).await;
                if flush {
                    nostr_outbox::flush::flush_until_idle(
                        &store, &t, &config, &|| now, &mut counter(), &mut |_| {}, 100,
                    ).await.unwrap();
                }
            }
            for n in 0..drafts {
                let id = format!("d{n}");
                let r = get(&store, &id).await;
                let sent: Vec<String> = t.sent().into_iter().map(|(_, e)| e).collect();
                if r.is_draft() {
                    prop_assert!(r.stage != Stage::Pending && r.attempts == 0, "{r:?}");
                    continue;
                }
                let event = Event::parse_json(&r.event.raw).unwrap();
                prop_assert!(event.verify().is_ok());
                prop_assert_eq!(event.pubkey(), pubkey(&key(1)));
                prop_assert_eq!(event.content(), id.as_str());
                // Every publish of this record was of this one event.
                for relay in RELAYS {
                    prop_assert!(t.count(relay, event.id()) <= 1);
                }
                prop_assert!(sent.iter().all(|e| !e.is_empty()));
            }
            // Every event published is a stored, signed one.
            let mut stored = Vec::new();
            for n in 0..drafts {
                stored.push(get(&store, &format!("d{n}")).await.event.id);
            }
            for (_, id) in t.sent() {
                prop_assert!(stored.contains(&id), "published {id}, which no record holds");
            }
            Ok(())
        })?;
    }
}
