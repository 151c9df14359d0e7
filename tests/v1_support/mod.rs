//! The format-1 fixture shared by `tests/store/v1_fixture.rs` (native) and
//! `tests/store_idb_v1.rs` (browser): the records and the rows that the build before
//! the serde codec (commit ddc338e, the hand-written writer) stored for them, exactly
//! as it gave them to IndexedDB (`tests/data/store_v1_rows.json`).
#![allow(dead_code)]

use nostr_outbox::core::{
    EventEnvelope, Evidence, Lease, Outcome, Policy, Record, RejectReason, Satisfaction, Stage,
    StopReason,
};
use nostr_outbox::store::codec::StoredRow;

const RAW: &str = r#"{"id":"dcd83807810cd46dcb9834b2e5d220d5e3c06934d9b9b3f319d61b30339a7eee","pubkey":"1600fc49d4a52bffc4b7c61875f32cc513bcc4b4fef875d73ea6d82378b50a54","created_at":1712345678,"kind":0,"tags":[["expiration","1775758394"],["x","\u0000\u001f ","\n\t","é","𝄞"],["r","wss://relay.damus.io/","write"]],"content":"hello world","sig":"e76e0d133a6a853f59ed9ff4e6554d097a40009a955cd51d519611130d022301f39d74a7bc2eb8db51c4bd8e6af1b74579e30899ccfa50eea75e6fbab2230531"}"#;
const ID: &str = "dcd83807810cd46dcb9834b2e5d220d5e3c06934d9b9b3f319d61b30339a7eee";

fn evidence(target: &str, attempt: u32, outcome: Outcome, message: &str, at_ms: u64) -> Evidence {
    Evidence {
        target: target.into(),
        attempt,
        outcome,
        message: message.into(),
        at_ms,
        tries: 1,
        first_at_ms: None,
    }
}

fn base(id: &str, targets: &[&str], policy: Policy) -> Record {
    Record {
        id: id.into(),
        event: EventEnvelope {
            id: ID.into(),
            raw: RAW.into(),
            expiration: Some(1_775_758_394),
            meta: None,
        },
        targets: targets.iter().map(|t| t.to_string()).collect(),
        policy,
        max_attempts: 8,
        deadline_ms: None,
        plan_digest: "3f1c".into(),
        revision: 1,
        stage: Stage::Pending,
        lease: None,
        attempts: 0,
        attempt_limit: 8,
        rearmed_after_attempt: 0,
        last_attempt_ms: None,
        evidence: Vec::new(),
        satisfaction: Satisfaction::Pending,
        retry_not_before_ms: None,
        due_ms: Some(1_700_000_000_000),
        created_ms: 1_700_000_000_000,
        updated_ms: 1_700_000_000_000,
        reason: None,
        superseded_by: None,
        last_error: None,
        takeovers: 0,
        lane: nostr_outbox::core::DEFAULT_LANE.into(),
        priority: nostr_outbox::core::Priority::Normal,
        stop_when_satisfied: false,
        group_size: None,
        route: Vec::new(),
        routed: None,
    }
}

/// The records behind the fixture rows: every stage, policy, outcome and reject
/// reason, a lease, folded tries, optional fields present and absent, and text that
/// JSON must escape.
pub fn records() -> Vec<Record> {
    const A: &str = "wss://a.example/";
    const B: &str = "wss://b.example/";
    const C: &str = "wss://c.example/";
    let pending = base("rec-pending", &[A, B], Policy::All);

    let mut leased = base("rec-leased", &[A, B, C], Policy::AtLeast { k: 2 });
    leased.stage = Stage::Leased;
    leased.revision = 2;
    leased.lease = Some(Lease {
        id: "lease-0a1b2c3d".into(),
        owner: "tab-7f00".into(),
        acquired_ms: 1_700_000_001_000,
        expires_ms: 1_700_000_121_000,
        attempt: 1,
        relays: None,
    });
    leased.due_ms = Some(1_700_000_121_000);
    leased.deadline_ms = Some(1_700_086_400_000);

    let mut retryable = base("rec-retryable", &[A, B, C], Policy::Any);
    retryable.stage = Stage::Retryable;
    retryable.revision = 5;
    retryable.attempts = 2;
    retryable.last_attempt_ms = Some(1_700_000_060_000);
    retryable.retry_not_before_ms = Some(1_700_000_090_000);
    retryable.due_ms = Some(1_700_000_090_000);
    retryable.evidence = vec![
        evidence(
            A,
            1,
            Outcome::Timeout,
            "publish timed out",
            1_700_000_030_000,
        ),
        evidence(
            B,
            1,
            Outcome::RateLimited,
            "rate-limited: slow down",
            1_700_000_030_500,
        ),
        Evidence {
            tries: 3,
            first_at_ms: Some(1_700_000_020_000),
            ..evidence(
                C,
                2,
                Outcome::Unreachable,
                "connection refused",
                1_700_000_060_000,
            )
        },
        evidence(
            A,
            2,
            Outcome::AuthRequired,
            "auth-required: \"quoted\" \\ back",
            1_700_000_060_000,
        ),
        evidence(
            B,
            2,
            Outcome::Error,
            "error: line\nbreak \u{1}",
            1_700_000_060_000,
        ),
    ];
    retryable.last_error = Some("relay said: \u{1d11e} é".into());

    let mut satisfied = base(
        "rec-satisfied",
        &[A, B],
        Policy::Required {
            relays: vec![A.into()],
        },
    );
    satisfied.stage = Stage::Satisfied;
    satisfied.satisfaction = Satisfaction::Satisfied;
    satisfied.revision = 3;
    satisfied.attempts = 1;
    satisfied.last_attempt_ms = Some(1_700_000_005_000);
    satisfied.due_ms = None;
    satisfied.evidence = vec![
        evidence(A, 1, Outcome::Accepted, "", 1_700_000_005_000),
        evidence(
            B,
            1,
            Outcome::Duplicate,
            "duplicate: already have it",
            1_700_000_005_100,
        ),
    ];

    let mut exhausted = base("rec-exhausted", &[A, B, C], Policy::All);
    exhausted.stage = Stage::Exhausted;
    exhausted.satisfaction = Satisfaction::Exhausted;
    exhausted.reason = Some(StopReason::Rejected);
    exhausted.revision = 4;
    exhausted.attempts = 1;
    exhausted.due_ms = None;
    // Every reason format 1 knew (`newer` came later).
    exhausted.evidence = RejectReason::ALL[..6]
        .iter()
        .copied()
        .enumerate()
        .map(|(i, r)| {
            evidence(
                [A, B, C][i % 3],
                1,
                Outcome::Rejected(r),
                "blocked: no",
                1_700_000_006_000 + i as u64,
            )
        })
        .collect();

    let mut expired = base("rec-expired", &[A], Policy::All);
    expired.stage = Stage::Exhausted;
    expired.satisfaction = Satisfaction::Pending;
    expired.reason = Some(StopReason::Expired);
    expired.deadline_ms = Some(1_700_000_500_000);
    expired.due_ms = None;
    expired.event.expiration = None;
    expired.evidence = vec![evidence(A, 1, Outcome::NotAttempted, "", 1_700_000_500_000)];

    let mut max = base("rec-max-attempts", &[A], Policy::All);
    max.stage = Stage::Exhausted;
    max.reason = Some(StopReason::MaxAttempts);
    max.attempts = 8;
    max.due_ms = None;

    let mut rearmed = base("rec-rearmed", &[A], Policy::All);
    rearmed.attempts = 8;
    rearmed.attempt_limit = 16;
    rearmed.rearmed_after_attempt = 8;
    rearmed.revision = 12;

    let mut cancelled = base("rec-cancelled", &[A, B], Policy::Any);
    cancelled.stage = Stage::Cancelled;
    cancelled.reason = Some(StopReason::Cancelled);
    cancelled.due_ms = None;
    cancelled.updated_ms = 9_007_199_254_740_991; // 2^53 − 1: the largest exact JS number

    vec![
        pending, leased, retryable, satisfied, exhausted, expired, max, rearmed, cancelled,
    ]
}

/// The fixture's JSON text.
pub const ROWS_JSON: &str = include_str!("../data/store_v1_rows.json");

/// The fixture rows.
pub fn rows() -> Vec<StoredRow> {
    let doc: serde_json::Value = serde_json::from_str(ROWS_JSON).expect("fixture is JSON");
    serde_json::from_value(doc["rows"].clone()).expect("fixture rows")
}
