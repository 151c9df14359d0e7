//! The store conformance suite: generic async checks that every [`Store`] must pass,
//! run natively against [`super::MemoryStore`] and in a browser against IndexedDB.
//! It uses no threads, sleeps or clock (every time is an explicit `now_ms`), so it
//! runs unchanged under wasm-bindgen-test. A failure panics naming its case.

use std::fmt::Debug;
use std::future::Future;

use crate::core::semantics::{self, EPHEMERAL_DEADLINE_MS};
use crate::core::{
    ClaimRequest, Completion, EnqueueOutcome, Enqueued, EventEnvelope, EventMeta, ListQuery,
    Lookups, Outcome, Plan, Policy, Priority, Record, RejectReason, RetryConfig, Satisfaction,
    Stage, StopReason, TargetResult,
};

use super::{Store, StoreError};

/// Relay URLs used by the suite's fixtures.
pub const RELAYS: [&str; 3] = ["wss://a.example", "wss://b.example", "wss://c.example"];

/// A fixture envelope: id = `n` as 64 hex digits.
pub fn fixture_event(n: u32) -> EventEnvelope {
    let id = format!("{n:064x}");
    EventEnvelope {
        raw: format!(r#"{{"id":"{id}","kind":1,"content":"{n}"}}"#),
        id,
        expiration: None,
        meta: None,
    }
}

/// The fixture authors of [`nostr_event`].
pub const ALICE: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
/// Another fixture author.
pub const BOB: &str = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0";

/// A fixture envelope with the header fields the queue's Nostr rules read: id = `n` as
/// 64 hex digits, by `pubkey`, of `kind`, at `created_at` (seconds), with `d` (kept for
/// addressable kinds) and, for kind 5, the ids and addresses it deletes.
pub fn nostr_event(
    n: u32,
    pubkey: &str,
    kind: u16,
    created_at: u64,
    d: &str,
    deletes: &[&str],
) -> EventEnvelope {
    let id = format!("{n:064x}");
    let (ids, addresses): (Vec<&str>, Vec<&str>) = deletes.iter().partition(|r| r.len() == 64);
    EventEnvelope {
        raw: format!(
            r#"{{"id":"{id}","pubkey":"{pubkey}","kind":{kind},"created_at":{created_at}}}"#
        ),
        id,
        expiration: None,
        meta: Some(EventMeta {
            pubkey: pubkey.into(),
            kind,
            created_at,
            d: if (30_000..40_000).contains(&kind) {
                d.into()
            } else {
                String::new()
            },
            deletes_ids: ids.iter().map(|s| s.to_string()).collect(),
            deletes_addresses: addresses.iter().map(|s| s.to_string()).collect(),
        }),
    }
}

/// A plan for `event` to the fixture relays, item id = event id, policy `all`.
pub fn nostr_plan(event: EventEnvelope) -> Plan {
    Plan::new(
        event,
        RELAYS.iter().map(|t| t.to_string()).collect(),
        Policy::All,
    )
}

/// A fixture plan for [`fixture_event`]`(n)` to `targets` under `policy`.
pub fn fixture_plan(n: u32, targets: &[&str], policy: Policy) -> Plan {
    Plan::new(
        fixture_event(n),
        targets.iter().map(|t| t.to_string()).collect(),
        policy,
    )
}

/// The retry schedule the suite uses: 1 s doubling to 60 s, no jitter, 30 s after
/// `rate-limited`.
pub fn fixture_retry() -> RetryConfig {
    RetryConfig {
        base_delay_ms: 1_000,
        max_delay_ms: 60_000,
        jitter_permille: 0,
        rate_limit_min_ms: 30_000,
    }
}

/// A claim request for `owner` with lease id `lease`.
pub fn fixture_claim(owner: &str, lease: &str, limit: u32, lease_ms: u64) -> ClaimRequest {
    ClaimRequest {
        owner: owner.into(),
        lease_id: lease.into(),
        limit,
        lease_ms,
        ..Default::default()
    }
}

fn ok<T, E: Debug>(case: &str, what: &str, r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("store conformance case `{case}`: {what} failed: {e:?}"),
    }
}

fn err_code<T: Debug>(case: &str, what: &str, r: Result<T, StoreError>, code: &str) {
    match r {
        Ok(v) => {
            panic!("store conformance case `{case}`: {what} should fail with `{code}`, got {v:?}")
        }
        Err(e) => assert_eq!(
            e.code(),
            code,
            "store conformance case `{case}`: {what} failed with the wrong error: {e:?}"
        ),
    }
}

macro_rules! check {
    ($case:expr, $cond:expr, $($msg:tt)+) => {
        assert!($cond, "store conformance case `{}`: {}", $case, format_args!($($msg)+))
    };
}

macro_rules! check_eq {
    ($case:expr, $a:expr, $b:expr, $($msg:tt)+) => {
        assert_eq!($a, $b, "store conformance case `{}`: {}", $case, format_args!($($msg)+))
    };
}

async fn must_get<S: Store>(case: &str, s: &S, id: &str) -> Record {
    match ok(case, "get", s.get(id).await) {
        Some(r) => r,
        None => panic!("store conformance case `{case}`: record `{id}` is missing"),
    }
}

fn answer(target: &str, outcome: Outcome) -> TargetResult {
    TargetResult {
        target: target.into(),
        outcome,
        message: String::new(),
    }
}

fn completion(r: &Record, lease: &str, results: Vec<TargetResult>) -> Completion {
    Completion {
        id: r.id.clone(),
        lease_id: lease.into(),
        revision: r.revision,
        results,
        jitter: 0,
    }
}

/// Claims exactly one record (`id`) and returns it.
async fn claim_one<S: Store>(case: &str, s: &S, lease: &str, now: u64, id: &str) -> Record {
    let got = ok(
        case,
        "claim",
        s.claim(&fixture_claim("owner", lease, 256, 10_000), now)
            .await,
    );
    match got.into_iter().find(|r| r.id == id) {
        Some(r) => r,
        None => panic!("store conformance case `{case}`: `{id}` was not claimed at {now}"),
    }
}

macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        /// The name of every case, in the order [`run_all`] runs them.
        pub const CASES: &[&str] = &[$(stringify!($case)),*];

        /// Runs the case named `name` on `store`; `false` when there is no such case.
        pub async fn run_case<S: Store>(name: &str, store: &S) -> bool {
            match name {
                $(stringify!($case) => $case(store).await,)*
                _ => return false,
            }
            true
        }
    };
}

/// Calls the macro `$m` with the name of every conformance case, in order: the one list
/// behind [`CASES`], [`run_case`] and [`run_all`], and behind a store's per-case tests
/// (`nostr_outbox::conformance_cases!(my_tests);` with `my_tests` a macro taking
/// `$($case:ident),*` and writing one `#[test]` per case).
#[macro_export]
macro_rules! conformance_cases {
    ($m:ident) => {
        $m!(
            enqueue_create_replay_conflict,
            enqueue_rejects_invalid_input,
            enqueue_many_all_or_nothing,
            enqueue_many_checked_writes_nothing_when_the_check_fails,
            enqueue_many_reports_progress,
            get_list_status,
            claim_order_and_bound,
            claim_readiness_and_exclusivity,
            lease_expiry_allows_reclaim,
            lost_claim_changes_nothing,
            attempt_records_evidence,
            policies,
            delivery_goes_on_after_the_verdict,
            exhaustion,
            unreachable_attempts_keep_the_budget,
            complete_many,
            expiration,
            retry_and_cancel,
            release_hands_back,
            relay_back_wakes_only_what_waits_for_it,
            purge_terminal_only,
            next_due,
            replaceable_versions_supersede,
            addressable_slots_and_ties,
            deletions_withdraw_what_they_name,
            batches_apply_the_rules_in_order,
            ephemeral_and_expired_events,
            related_finds_versions_and_accepting_relays,
            take_over_orphaned_leases,
            claim_priority_order,
            filtered_claims,
            lanes_list_and_status,
            import_brings_records_as_they_are,
        );
    };
}

crate::conformance_cases!(cases);

/// Runs every case, each on a fresh store from `factory`.
pub async fn run_all<S, F, Fut>(mut factory: F)
where
    S: Store,
    F: FnMut() -> Fut,
    Fut: Future<Output = S>,
{
    for name in CASES {
        run_case(name, &factory().await).await;
    }
}

/// Same plan replays without writing; another plan under the same id conflicts.
pub async fn enqueue_create_replay_conflict<S: Store>(s: &S) {
    const C: &str = "enqueue_create_replay_conflict";
    let plan = fixture_plan(1, &RELAYS, Policy::All);
    let first = ok(C, "enqueue", s.enqueue(plan.clone(), 100).await);
    check_eq!(C, first.outcome, EnqueueOutcome::Created, "first enqueue");
    check_eq!(
        C,
        first.record.id,
        fixture_event(1).id,
        "default id is the event id"
    );
    check_eq!(C, first.record.stage, Stage::Pending, "new stage");
    check_eq!(C, first.record.revision, 1, "new revision");
    check_eq!(
        C,
        first.record.due_ms,
        Some(100),
        "new record is due at creation"
    );
    check_eq!(
        C,
        first.record.event,
        fixture_event(1),
        "event kept exactly"
    );
    // Same plan, targets in another order and repeated: still the same plan.
    let again = fixture_plan(
        1,
        &[RELAYS[2], RELAYS[0], RELAYS[1], RELAYS[0]],
        Policy::All,
    );
    let replay = ok(C, "replay", s.enqueue(again, 999).await);
    check_eq!(C, replay.outcome, EnqueueOutcome::Replay, "second enqueue");
    check_eq!(
        C,
        replay.record,
        first.record,
        "replay returns the stored record"
    );
    check_eq!(
        C,
        must_get(C, s, &first.record.id).await,
        first.record,
        "nothing written"
    );
    let other = fixture_plan(1, &RELAYS, Policy::Any);
    err_code(
        C,
        "conflicting enqueue",
        s.enqueue(other, 1_000).await,
        "plan_conflict",
    );
    let other_event = fixture_plan(2, &RELAYS, Policy::All).with_id(first.record.id.clone());
    err_code(
        C,
        "other event, same id",
        s.enqueue(other_event, 1_000).await,
        "plan_conflict",
    );
    check_eq!(
        C,
        must_get(C, s, &first.record.id).await,
        first.record,
        "conflict wrote nothing"
    );
    let counts = ok(C, "status", s.status().await);
    check_eq!(C, counts.total(), 1, "one record");
}

/// Invalid plans fail with their typed code and write nothing.
pub async fn enqueue_rejects_invalid_input<S: Store>(s: &S) {
    const C: &str = "enqueue_rejects_invalid_input";
    let p = || fixture_plan(1, &RELAYS, Policy::All);
    err_code(
        C,
        "bad id",
        s.enqueue(p().with_id("a b"), 1).await,
        "invalid_item_id",
    );
    err_code(
        C,
        "empty id",
        s.enqueue(p().with_id(""), 1).await,
        "invalid_item_id",
    );
    err_code(
        C,
        "no targets",
        s.enqueue(fixture_plan(1, &[], Policy::All), 1).await,
        "invalid_targets",
    );
    err_code(
        C,
        "k too large",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::AtLeast { k: 4 }), 1)
            .await,
        "invalid_policy",
    );
    err_code(
        C,
        "required outside targets",
        s.enqueue(
            fixture_plan(
                1,
                &RELAYS[..1],
                Policy::Required {
                    relays: vec![RELAYS[1].into()],
                },
            ),
            1,
        )
        .await,
        "invalid_policy",
    );
    err_code(
        C,
        "zero attempts",
        s.enqueue(p().with_max_attempts(0), 1).await,
        "invalid_argument",
    );
    let mut bad_event = p();
    bad_event.event.id = "xyz".into();
    bad_event.id = "x".into();
    err_code(
        C,
        "bad event id",
        s.enqueue(bad_event, 1).await,
        "invalid_event",
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        0,
        "nothing written"
    );
}

/// A batch with any conflict or invalid plan writes nothing; a good batch writes all.
pub async fn enqueue_many_all_or_nothing<S: Store>(s: &S) {
    const C: &str = "enqueue_many_all_or_nothing";
    ok(
        C,
        "seed",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 10).await,
    );
    let conflict = vec![
        fixture_plan(2, &RELAYS, Policy::All),
        fixture_plan(1, &RELAYS, Policy::Any),
    ];
    err_code(
        C,
        "batch with stored conflict",
        s.enqueue_many(conflict, 20).await,
        "plan_conflict",
    );
    check!(
        C,
        ok(C, "get", s.get(&fixture_event(2).id).await).is_none(),
        "2 not written"
    );
    let inner = vec![
        fixture_plan(3, &RELAYS, Policy::All),
        fixture_plan(3, &RELAYS, Policy::Any),
    ];
    err_code(
        C,
        "batch conflicting with itself",
        s.enqueue_many(inner, 20).await,
        "plan_conflict",
    );
    let invalid = vec![
        fixture_plan(4, &RELAYS, Policy::All),
        fixture_plan(5, &RELAYS, Policy::All).with_id("bad id"),
    ];
    err_code(
        C,
        "batch with invalid plan",
        s.enqueue_many(invalid, 20).await,
        "invalid_item_id",
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        1,
        "failed batches wrote nothing"
    );
    let good = vec![
        fixture_plan(6, &RELAYS, Policy::All),
        fixture_plan(1, &RELAYS, Policy::All),
        fixture_plan(7, &RELAYS, Policy::Any),
        fixture_plan(6, &RELAYS, Policy::All),
    ];
    let out = ok(C, "good batch", s.enqueue_many(good, 30).await);
    let outcomes = |out: &[Enqueued]| out.iter().map(|e| e.outcome).collect::<Vec<_>>();
    let (new, replay) = (EnqueueOutcome::Created, EnqueueOutcome::Replay);
    check_eq!(
        C,
        outcomes(&out),
        vec![new, replay, new, replay],
        "answers in input order"
    );
    check_eq!(
        C,
        out[1].record.created_ms,
        10,
        "replay returns the stored record"
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        3,
        "batch written"
    );
    // Stored ids scattered through a batch, the last row among them (the IndexedDB
    // store learns which rows exist from the requests' errors, in order).
    let mixed = vec![
        fixture_plan(8, &RELAYS, Policy::All),
        fixture_plan(6, &RELAYS, Policy::All),
        fixture_plan(9, &RELAYS, Policy::All),
        fixture_plan(1, &RELAYS, Policy::All),
        fixture_plan(7, &RELAYS, Policy::Any),
    ];
    let out = ok(
        C,
        "batch ending on a stored id",
        s.enqueue_many(mixed, 35).await,
    );
    check_eq!(
        C,
        outcomes(&out),
        vec![new, replay, new, replay, replay],
        "replays found at their own places"
    );
    check_eq!(
        C,
        (
            out[1].record.created_ms,
            out[3].record.created_ms,
            out[4].record.created_ms
        ),
        (30, 10, 30),
        "each replay answers its own stored record"
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        5,
        "only the new rows written"
    );
    let empty = ok(C, "empty batch", s.enqueue_many(Vec::new(), 40).await);
    check!(C, empty.is_empty(), "empty batch answers nothing");
}

/// [`Store::enqueue_many_checked`]: a failed check writes nothing and wins over the
/// batch's own errors; a passed one enqueues as `enqueue_many`; the check runs once.
pub async fn enqueue_many_checked_writes_nothing_when_the_check_fails<S: Store>(s: &S) {
    const C: &str = "enqueue_many_checked_writes_nothing_when_the_check_fails";
    ok(
        C,
        "seed",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 10).await,
    );
    let batches = [
        ("new plans", vec![fixture_plan(2, &RELAYS, Policy::All)]),
        (
            "new plans and a replay",
            vec![
                fixture_plan(3, &RELAYS, Policy::All),
                fixture_plan(1, &RELAYS, Policy::All),
            ],
        ),
        (
            "a stored conflict",
            vec![
                fixture_plan(4, &RELAYS, Policy::All),
                fixture_plan(1, &RELAYS, Policy::Any),
            ],
        ),
        (
            "a conflict within the batch",
            vec![
                fixture_plan(5, &RELAYS, Policy::All),
                fixture_plan(5, &RELAYS, Policy::Any),
            ],
        ),
    ];
    for (what, plans) in batches {
        let mut calls = 0;
        let got = s
            .enqueue_many_checked(
                plans,
                20,
                &mut || {
                    calls += 1;
                    false
                },
                None,
            )
            .await;
        check!(C, matches!(got, Ok(None)), "{what}: refused, got {got:?}");
        check_eq!(C, calls, 1, "{what}: the check ran once");
        check_eq!(
            C,
            ok(C, "status", s.status().await).total(),
            1,
            "{what}: nothing written"
        );
    }
    for n in 2..=5 {
        check!(
            C,
            ok(C, "get", s.get(&fixture_event(n).id).await).is_none(),
            "{n} not written"
        );
    }
    let mut calls = 0;
    let got = s
        .enqueue_many_checked(
            vec![
                fixture_plan(2, &RELAYS, Policy::All),
                fixture_plan(1, &RELAYS, Policy::All),
            ],
            30,
            &mut || {
                calls += 1;
                true
            },
            None,
        )
        .await;
    let Some(got) = ok(C, "checked batch", got) else {
        panic!("store conformance case `{C}`: a passed check was refused");
    };
    let outcomes: Vec<EnqueueOutcome> = got.iter().map(|e| e.outcome).collect();
    check_eq!(
        C,
        outcomes,
        vec![EnqueueOutcome::Created, EnqueueOutcome::Replay],
        "a passed check enqueues"
    );
    check_eq!(C, calls, 1, "the check ran once");
    let mut calls = 0;
    let conflict = s
        .enqueue_many_checked(
            vec![fixture_plan(1, &RELAYS, Policy::Any)],
            40,
            &mut || {
                calls += 1;
                true
            },
            None,
        )
        .await;
    err_code(
        C,
        "passed check, stored conflict",
        conflict,
        "plan_conflict",
    );
    check_eq!(C, calls, 1, "the check ran once before the conflict");
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        2,
        "only the passed batch was written"
    );
}

/// [`Store::enqueue_many_checked`]'s `progress`: every report is `(done, 40)` of the 40
/// plans, `done` below 40 and increasing (a store may report nothing); the batch is then
/// stored whole.
pub async fn enqueue_many_reports_progress<S: Store>(s: &S) {
    const C: &str = "enqueue_many_reports_progress";
    let reports = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = reports.clone();
    let progress: super::Progress = std::rc::Rc::new(move |done, total| {
        seen.borrow_mut().push((done, total));
    });
    let plans: Vec<Plan> = (1..=40)
        .map(|n| fixture_plan(n, &RELAYS, Policy::All))
        .collect();
    let got = s
        .enqueue_many_checked(plans, 10, &mut || true, Some(progress))
        .await;
    check!(
        C,
        matches!(&got, Ok(Some(answers)) if answers.len() == 40),
        "40 answers, got {got:?}"
    );
    let reports = reports.borrow().clone();
    for (i, &(done, total)) in reports.iter().enumerate() {
        check_eq!(C, total, 40, "report #{i}: total");
        check!(C, done < total, "report #{i}: {done} done of {total}");
        if i > 0 {
            check!(
                C,
                done > reports[i - 1].0,
                "report #{i}: {reports:?} increasing"
            );
        }
    }
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        40,
        "the batch is stored whole"
    );
}

/// `get`, `list` (order, stage filter, cursor, limit) and `status`.
pub async fn get_list_status<S: Store>(s: &S) {
    const C: &str = "get_list_status";
    check!(
        C,
        ok(C, "get", s.get("missing").await).is_none(),
        "missing id"
    );
    // Created out of id order; ties on time broken by id.
    ok(
        C,
        "e",
        s.enqueue(fixture_plan(3, &RELAYS, Policy::All).with_id("c"), 20)
            .await,
    );
    ok(
        C,
        "e",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All).with_id("b"), 10)
            .await,
    );
    ok(
        C,
        "e",
        s.enqueue(fixture_plan(2, &RELAYS, Policy::All).with_id("a"), 10)
            .await,
    );
    ok(
        C,
        "e",
        s.enqueue(fixture_plan(4, &RELAYS, Policy::All).with_id("d"), 30)
            .await,
    );
    ok(C, "cancel", s.cancel("c", 40).await);
    let ids = |v: Vec<Record>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let q = |stage, limit, after: Option<&str>| ListQuery {
        stage,
        limit,
        after: after.map(str::to_string),
        ..Default::default()
    };
    check_eq!(
        C,
        ids(ok(C, "list", s.list(&q(None, 10, None)).await)),
        ["a", "b", "c", "d"],
        "list order"
    );
    check_eq!(
        C,
        ids(ok(C, "list", s.list(&q(None, 2, None)).await)),
        ["a", "b"],
        "limit"
    );
    check_eq!(
        C,
        ids(ok(C, "list", s.list(&q(None, 2, Some("b"))).await)),
        ["c", "d"],
        "cursor"
    );
    check_eq!(
        C,
        ids(ok(C, "list", s.list(&q(None, 2, Some("d"))).await)),
        Vec::<String>::new(),
        "end"
    );
    check_eq!(
        C,
        ids(ok(
            C,
            "list",
            s.list(&q(Some(Stage::Pending), 10, None)).await
        )),
        ["a", "b", "d"],
        "stage filter"
    );
    check_eq!(
        C,
        ids(ok(
            C,
            "list",
            s.list(&q(Some(Stage::Cancelled), 10, None)).await
        )),
        ["c"],
        "stage filter"
    );
    err_code(
        C,
        "limit 0",
        s.list(&q(None, 0, None)).await,
        "invalid_argument",
    );
    err_code(
        C,
        "limit too big",
        s.list(&q(None, 1_001, None)).await,
        "invalid_argument",
    );
    err_code(
        C,
        "unknown cursor",
        s.list(&q(None, 5, Some("zz"))).await,
        "not_found",
    );
    let counts = ok(C, "status", s.status().await);
    check_eq!(C, counts.pending, 3, "pending count");
    check_eq!(C, counts.cancelled, 1, "cancelled count");
    check_eq!(C, counts.total(), 4, "total");
    ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l", 1, 1_000), 50).await,
    );
    let counts = ok(C, "status", s.status().await);
    check_eq!(C, (counts.pending, counts.leased), (2, 1), "leased count");
}

/// Claims take ready records by (due, created, id), at most `limit`, validated.
pub async fn claim_order_and_bound<S: Store>(s: &S) {
    const C: &str = "claim_order_and_bound";
    for (id, n, t) in [
        ("m", 1, 30),
        ("k", 2, 10),
        ("z", 3, 20),
        ("a", 4, 20),
        ("q", 5, 40),
    ] {
        ok(
            C,
            "enqueue",
            s.enqueue(fixture_plan(n, &RELAYS, Policy::All).with_id(id), t)
                .await,
        );
    }
    err_code(
        C,
        "limit 0",
        s.claim(&fixture_claim("o", "l", 0, 1_000), 100).await,
        "invalid_argument",
    );
    err_code(
        C,
        "limit 257",
        s.claim(&fixture_claim("o", "l", 257, 1_000), 100).await,
        "invalid_argument",
    );
    err_code(
        C,
        "lease 0",
        s.claim(&fixture_claim("o", "l", 1, 0), 100).await,
        "invalid_argument",
    );
    err_code(
        C,
        "empty owner",
        s.claim(&fixture_claim("", "l", 1, 10), 100).await,
        "invalid_argument",
    );
    err_code(
        C,
        "empty lease id",
        s.claim(&fixture_claim("o", "", 1, 10), 100).await,
        "invalid_argument",
    );
    let none = ok(
        C,
        "claim before due",
        s.claim(&fixture_claim("o", "l0", 10, 1_000), 5).await,
    );
    check!(C, none.is_empty(), "nothing is due at 5");
    let first = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l1", 3, 1_000), 35).await,
    );
    let ids: Vec<&str> = first.iter().map(|r| r.id.as_str()).collect();
    check_eq!(
        C,
        ids,
        ["k", "a", "z"],
        "due order, then id on equal creation"
    );
    for r in &first {
        check_eq!(C, r.stage, Stage::Leased, "claimed stage");
        let lease = r.lease.as_ref().expect("lease");
        check_eq!(
            C,
            (lease.id.as_str(), lease.owner.as_str()),
            ("l1", "o"),
            "lease holder"
        );
        check_eq!(
            C,
            (lease.acquired_ms, lease.expires_ms, lease.attempt),
            (35, 1_035, 1),
            "lease times"
        );
        check_eq!(
            C,
            r.due_ms,
            Some(1_035),
            "leased record is due at lease expiry"
        );
        check_eq!(C, r.revision, 2, "claim bumps the revision");
        check_eq!(
            C,
            &must_get(C, s, &r.id).await,
            r,
            "claim result is what is stored"
        );
    }
    let second = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l2", 10, 1_000), 35).await,
    );
    let ids: Vec<&str> = second.iter().map(|r| r.id.as_str()).collect();
    check_eq!(C, ids, ["m"], "only ready records; q is not due yet");
}

/// Terminal, not-yet-due and actively leased records are never claimed.
pub async fn claim_readiness_and_exclusivity<S: Store>(s: &S) {
    const C: &str = "claim_readiness_and_exclusivity";
    ok(
        C,
        "e",
        s.enqueue(
            fixture_plan(1, &RELAYS, Policy::All).with_id("cancelled"),
            0,
        )
        .await,
    );
    ok(
        C,
        "e",
        s.enqueue(fixture_plan(2, &RELAYS, Policy::All).with_id("leased"), 0)
            .await,
    );
    ok(C, "cancel", s.cancel("cancelled", 1).await);
    let a = ok(
        C,
        "claim A",
        s.claim(&fixture_claim("A", "la", 10, 100), 10).await,
    );
    check_eq!(C, a.len(), 1, "A gets the one ready record");
    check_eq!(C, a[0].id, "leased", "A's record");
    let b = ok(
        C,
        "claim B",
        s.claim(&fixture_claim("B", "lb", 10, 100), 50).await,
    );
    check!(C, b.is_empty(), "B cannot take an actively leased record");
    let lease_before = must_get(C, s, "leased").await;
    check_eq!(
        C,
        lease_before.lease.as_ref().map(|l| l.owner.clone()),
        Some("A".into()),
        "lease unchanged"
    );
    // Complete with a retryable outcome: not due until the retry time.
    let done = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(&a[0], "la", vec![answer(RELAYS[0], Outcome::Timeout)]),
            &fixture_retry(),
            60,
        )
        .await,
    );
    check_eq!(C, done.stage, Stage::Retryable, "retryable after a timeout");
    check_eq!(C, done.due_ms, Some(1_060), "due after the backoff");
    let early = ok(
        C,
        "claim early",
        s.claim(&fixture_claim("B", "lb", 10, 100), 1_059).await,
    );
    check!(C, early.is_empty(), "not due before its retry time");
    let due = ok(
        C,
        "claim due",
        s.claim(&fixture_claim("B", "lb", 10, 100), 1_060).await,
    );
    check_eq!(C, due.len(), 1, "due at its retry time");
}

/// A lease that expires (flusher died) lets another claim take the record for the
/// same attempt number.
pub async fn lease_expiry_allows_reclaim<S: Store>(s: &S) {
    const C: &str = "lease_expiry_allows_reclaim";
    let e = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 0).await,
    );
    let id = e.record.id;
    let first = claim_one(C, s, "dead", 100, &id).await;
    check_eq!(
        C,
        first.lease.as_ref().map(|l| l.expires_ms),
        Some(10_100),
        "lease expiry"
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due().await),
        Some(10_100),
        "due at lease expiry"
    );
    let before = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o2", "l2", 5, 1_000), 10_099).await,
    );
    check!(C, before.is_empty(), "still leased just before expiry");
    let second = claim_one(C, s, "alive", 10_100, &id).await;
    let lease = second.lease.as_ref().expect("lease");
    check_eq!(C, lease.id, "alive", "new lease");
    check_eq!(
        C,
        lease.attempt,
        1,
        "same attempt number, nothing was recorded"
    );
    check_eq!(C, second.revision, first.revision + 1, "revision grows");
}

/// Results under an expired, superseded or stale lease change nothing.
pub async fn lost_claim_changes_nothing<S: Store>(s: &S) {
    const C: &str = "lost_claim_changes_nothing";
    let retry = fixture_retry();
    let id = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 0).await,
    )
    .record
    .id;
    let dead = claim_one(C, s, "dead", 0, &id).await;
    let accepted: Vec<TargetResult> = RELAYS
        .iter()
        .map(|r| answer(r, Outcome::Accepted))
        .collect();
    // Expired, not re-claimed.
    let snapshot = must_get(C, s, &id).await;
    err_code(
        C,
        "late complete",
        s.complete_attempt(&completion(&dead, "dead", accepted.clone()), &retry, 10_000)
            .await,
        "lease_expired",
    );
    err_code(
        C,
        "late release",
        s.release(&id, "dead", dead.revision, 10_000).await,
        "lease_expired",
    );
    check_eq!(
        C,
        must_get(C, s, &id).await,
        snapshot,
        "expired lease changed nothing"
    );
    // Superseded by a new claim.
    let alive = claim_one(C, s, "alive", 10_000, &id).await;
    let snapshot = must_get(C, s, &id).await;
    err_code(
        C,
        "superseded complete",
        s.complete_attempt(&completion(&dead, "dead", accepted.clone()), &retry, 10_001)
            .await,
        "lease_expired",
    );
    // Right lease, stale revision.
    err_code(
        C,
        "stale revision",
        s.complete_attempt(
            &completion(&dead, "alive", accepted.clone()),
            &retry,
            10_001,
        )
        .await,
        "revision_conflict",
    );
    // Unknown targets are refused before anything is written.
    err_code(
        C,
        "unknown target",
        s.complete_attempt(
            &completion(
                &alive,
                "alive",
                vec![answer("wss://nope.example", Outcome::Accepted)],
            ),
            &retry,
            10_001,
        )
        .await,
        "invalid_argument",
    );
    check_eq!(
        C,
        must_get(C, s, &id).await,
        snapshot,
        "stale writers changed nothing"
    );
    err_code(
        C,
        "missing record",
        s.complete_attempt(
            &Completion {
                id: "nope".into(),
                ..completion(&alive, "alive", vec![])
            },
            &retry,
            10_001,
        )
        .await,
        "not_found",
    );
    let done = ok(
        C,
        "live complete",
        s.complete_attempt(&completion(&alive, "alive", accepted), &retry, 10_002)
            .await,
    );
    check_eq!(C, done.stage, Stage::Satisfied, "the live lease wins");
}

/// An attempt appends one evidence entry per unsettled target; the next attempt only
/// targets what is still open; attempts are numbered in order.
pub async fn attempt_records_evidence<S: Store>(s: &S) {
    const C: &str = "attempt_records_evidence";
    let retry = fixture_retry();
    let id = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 0).await,
    )
    .record
    .id;
    let r1 = claim_one(C, s, "l1", 0, &id).await;
    check_eq!(
        C,
        r1.unsettled_targets(),
        RELAYS.to_vec(),
        "first attempt targets all"
    );
    let mut msg = answer(RELAYS[0], Outcome::Accepted);
    msg.message = "stored".into();
    let done = ok(
        C,
        "complete 1",
        s.complete_attempt(
            &completion(
                &r1,
                "l1",
                vec![msg, answer(RELAYS[1], Outcome::RateLimited)],
            ),
            &retry,
            5,
        )
        .await,
    );
    check_eq!(C, done.attempts, 1, "attempt 1 recorded");
    check_eq!(C, done.evidence.len(), 3, "one entry per target");
    let outcomes: Vec<(&str, u32, Outcome)> = done
        .evidence
        .iter()
        .map(|e| (e.target.as_str(), e.attempt, e.outcome))
        .collect();
    check_eq!(
        C,
        outcomes,
        vec![
            (RELAYS[0], 1, Outcome::Accepted),
            (RELAYS[1], 1, Outcome::RateLimited),
            (RELAYS[2], 1, Outcome::NotAttempted)
        ],
        "evidence"
    );
    check_eq!(C, done.evidence[0].message, "stored", "relay message kept");
    check_eq!(C, done.evidence[0].at_ms, 5, "evidence time");
    check_eq!(C, done.stage, Stage::Retryable, "still pending");
    check_eq!(C, done.satisfaction, Satisfaction::Pending, "satisfaction");
    check_eq!(C, done.lease, None, "lease released");
    check_eq!(C, done.last_attempt_ms, Some(5), "last attempt time");
    check!(C, done.last_error.is_some(), "failures summarized");
    check_eq!(
        C,
        done.retry_not_before_ms,
        Some(30_005),
        "rate-limited defers at least the minimum"
    );
    check_eq!(C, done.due_ms, Some(30_005), "due at the retry time");
    let r2 = claim_one(C, s, "l2", 30_005, &id).await;
    check_eq!(
        C,
        r2.lease.as_ref().map(|l| l.attempt),
        Some(2),
        "attempt 2"
    );
    check_eq!(
        C,
        r2.unsettled_targets(),
        RELAYS[1..].to_vec(),
        "accepted target not sent again"
    );
    err_code(
        C,
        "settled target reported",
        s.complete_attempt(
            &completion(&r2, "l2", vec![answer(RELAYS[0], Outcome::Accepted)]),
            &retry,
            30_006,
        )
        .await,
        "invalid_argument",
    );
    let dup = vec![
        answer(RELAYS[1], Outcome::Accepted),
        answer(RELAYS[1], Outcome::Accepted),
    ];
    err_code(
        C,
        "target reported twice",
        s.complete_attempt(&completion(&r2, "l2", dup), &retry, 30_006)
            .await,
        "invalid_argument",
    );
    let done2 = ok(
        C,
        "complete 2",
        s.complete_attempt(
            &completion(
                &r2,
                "l2",
                vec![
                    answer(RELAYS[1], Outcome::Duplicate),
                    answer(RELAYS[2], Outcome::Error),
                ],
            ),
            &retry,
            30_010,
        )
        .await,
    );
    check_eq!(
        C,
        &done2.evidence[..3],
        &done.evidence[..],
        "evidence is append-only"
    );
    check_eq!(C, done2.evidence.len(), 5, "two more entries");
    check!(
        C,
        done2.evidence[3..].iter().all(|e| e.attempt == 2),
        "attempt 2 entries"
    );
    check_eq!(C, done2.due_ms, Some(32_010), "second backoff doubles");
    let r3 = claim_one(C, s, "l3", 32_010, &id).await;
    check_eq!(
        C,
        r3.unsettled_targets(),
        vec![RELAYS[2].to_string()],
        "only the open target"
    );
    let done3 = ok(
        C,
        "complete 3",
        s.complete_attempt(
            &completion(&r3, "l3", vec![answer(RELAYS[2], Outcome::Accepted)]),
            &retry,
            32_020,
        )
        .await,
    );
    check_eq!(C, done3.stage, Stage::Satisfied, "all accepted");
    check_eq!(C, done3.due_ms, None, "terminal records are never due");
    check_eq!(C, done3.attempts, 3, "three attempts");
}

async fn run_policy<S: Store>(
    case: &str,
    s: &S,
    n: u32,
    policy: Policy,
    answers: &[Outcome],
    stop: bool,
) -> Record {
    let plan = fixture_plan(n, &RELAYS, policy).with_stop_when_satisfied(stop);
    let id = ok(case, "enqueue", s.enqueue(plan, 0).await).record.id;
    let r = claim_one(case, s, "l", 0, &id).await;
    let results = RELAYS
        .iter()
        .zip(answers)
        .map(|(t, o)| answer(t, *o))
        .collect();
    ok(
        case,
        "complete",
        s.complete_attempt(&completion(&r, "l", results), &fixture_retry(), 1)
            .await,
    )
}

/// `all`, `any`, `atLeast(k)` and `required` decide satisfied / pending / exhausted;
/// a record that asked to stop at the verdict ends there (the third column), any other
/// goes on delivering to its targets still open (the fourth: `delivering` while one
/// is, else the verdict's terminal stage).
pub async fn policies<S: Store>(s: &S) {
    const C: &str = "policies";
    use Outcome::{Accepted as A, Rejected as R, Timeout as T};
    let no = R(RejectReason::Blocked);
    let req = |i: &[usize]| Policy::Required {
        relays: i.iter().map(|i| RELAYS[*i].to_string()).collect(),
    };
    let cases: Vec<(Policy, [Outcome; 3], Stage, Satisfaction, Stage)> = vec![
        (
            Policy::All,
            [A, A, A],
            Stage::Satisfied,
            Satisfaction::Satisfied,
            Stage::Satisfied,
        ),
        (
            Policy::All,
            [A, A, T],
            Stage::Retryable,
            Satisfaction::Pending,
            Stage::Retryable,
        ),
        (
            Policy::All,
            [A, A, no],
            Stage::Exhausted,
            Satisfaction::Exhausted,
            Stage::Exhausted,
        ),
        (
            Policy::Any,
            [T, no, A],
            Stage::Satisfied,
            Satisfaction::Satisfied,
            Stage::Delivering,
        ),
        (
            Policy::Any,
            [T, no, T],
            Stage::Retryable,
            Satisfaction::Pending,
            Stage::Retryable,
        ),
        (
            Policy::Any,
            [no, no, no],
            Stage::Exhausted,
            Satisfaction::Exhausted,
            Stage::Exhausted,
        ),
        (
            Policy::AtLeast { k: 2 },
            [A, no, A],
            Stage::Satisfied,
            Satisfaction::Satisfied,
            Stage::Satisfied,
        ),
        (
            Policy::AtLeast { k: 2 },
            [A, no, T],
            Stage::Retryable,
            Satisfaction::Pending,
            Stage::Retryable,
        ),
        (
            Policy::AtLeast { k: 2 },
            [A, no, no],
            Stage::Exhausted,
            Satisfaction::Exhausted,
            Stage::Exhausted,
        ),
        (
            req(&[0]),
            [A, no, T],
            Stage::Satisfied,
            Satisfaction::Satisfied,
            Stage::Delivering,
        ),
        (
            req(&[0, 2]),
            [A, A, T],
            Stage::Retryable,
            Satisfaction::Pending,
            Stage::Retryable,
        ),
        (
            req(&[1]),
            [A, no, A],
            Stage::Exhausted,
            Satisfaction::Exhausted,
            Stage::Exhausted,
        ),
    ];
    for (n, (policy, answers, stop_stage, sat, go_on_stage)) in cases.into_iter().enumerate() {
        for (stop, stage, k) in [(true, stop_stage, 1), (false, go_on_stage, 101)] {
            let what = format!("{policy:?} with {answers:?}, stopWhenSatisfied {stop}");
            let r = run_policy(C, s, n as u32 + k, policy.clone(), &answers, stop).await;
            check_eq!(C, (r.stage, r.satisfaction), (stage, sat), "{what}");
            if stage == Stage::Exhausted {
                check_eq!(C, r.reason, Some(StopReason::Rejected), "{what}: reason");
            }
            if stage == Stage::Delivering {
                // Due again like a retryable record, for the open targets only.
                check_eq!(C, r.due_ms, Some(1 + 1_000), "{what}: due");
                check_eq!(C, r.reason, None, "{what}: reason");
                let open: Vec<String> = RELAYS
                    .iter()
                    .zip(&answers)
                    .filter(|(_, o)| **o == T)
                    .map(|(t, _)| t.to_string())
                    .collect();
                check_eq!(C, r.unsettled_targets(), open, "{what}: open targets");
            }
        }
    }
}

/// The policy's verdict is what the application is told; delivery goes on to every
/// target that has not settled. Policy `all` over a (accepts), b (refuses for good) and
/// c (down): the record is `delivering` with satisfaction `exhausted`, b is never sent
/// the event again, c gets it when it is back (woken by `relay_back`), and the record
/// ends `exhausted` (rejected). Policy `any` with a budget of 2: satisfied at the
/// first attempt, `delivering` until the budget ends it as `satisfied` with b and c
/// still open. `status` counts `delivering` records.
pub async fn delivery_goes_on_after_the_verdict<S: Store>(s: &S) {
    const C: &str = "delivery_goes_on_after_the_verdict";
    let [a, b, c] = RELAYS;
    let id = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 0).await,
    )
    .record
    .id;
    let r = claim_one(C, s, "l1", 0, &id).await;
    check_eq!(C, r.attempt_targets(), RELAYS.to_vec(), "first attempt");
    let blocked = Outcome::Rejected(RejectReason::Blocked);
    let results = vec![
        answer(a, Outcome::Accepted),
        answer(b, blocked),
        answer(c, Outcome::Unreachable),
    ];
    let r = ok(
        C,
        "complete 1",
        s.complete_attempt(&completion(&r, "l1", results), &fixture_retry(), 1)
            .await,
    );
    check_eq!(
        C,
        (r.stage, r.satisfaction, r.reason, r.attempts),
        (Stage::Delivering, Satisfaction::Exhausted, None, 1),
        "a refusal for good leaves c in delivery"
    );
    check_eq!(C, ok(C, "status", s.status().await).delivering, 1, "status");
    // c is still down: the try reaches no relay and is not counted.
    let due = r.due_ms.unwrap_or(0);
    let r = claim_one(C, s, "l2", due, &id).await;
    check_eq!(
        C,
        r.attempt_targets(),
        vec![c.to_string()],
        "only c is tried"
    );
    let r = ok(
        C,
        "complete 2",
        s.complete_attempt(
            &completion(&r, "l2", vec![answer(c, Outcome::Unreachable)]),
            &fixture_retry(),
            due + 1,
        )
        .await,
    );
    check_eq!(
        C,
        (r.stage, r.attempts),
        (Stage::Delivering, 1),
        "an unreached try keeps waiting"
    );
    // c is back: the record is due at once and c gets the event.
    let now = due + 2;
    let woken = ok(C, "relay_back", s.relay_back(c, now).await);
    check_eq!(
        C,
        woken.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        vec![id.as_str()],
        "relay_back wakes a delivering record"
    );
    let r = claim_one(C, s, "l3", now, &id).await;
    check_eq!(C, r.attempt_targets(), vec![c.to_string()], "c again");
    let r = ok(
        C,
        "complete 3",
        s.complete_attempt(
            &completion(&r, "l3", vec![answer(c, Outcome::Accepted)]),
            &fixture_retry(),
            now + 1,
        )
        .await,
    );
    check_eq!(
        C,
        (r.stage, r.satisfaction, r.reason),
        (
            Stage::Exhausted,
            Satisfaction::Exhausted,
            Some(StopReason::Rejected)
        ),
        "every target settled"
    );
    check_eq!(
        C,
        r.evidence.iter().filter(|e| e.target == b).count(),
        1,
        "b, refused for good, was never sent the event again"
    );
    check_eq!(
        C,
        r.target_state(c),
        crate::core::TargetState::Accepted,
        "c got it"
    );
    check_eq!(C, ok(C, "status", s.status().await).delivering, 0, "status");

    // `any` with a budget of 2: satisfied at once, delivered on until the budget ends.
    let plan = fixture_plan(2, &RELAYS, Policy::Any).with_max_attempts(2);
    let id = ok(C, "enqueue any", s.enqueue(plan, 0).await).record.id;
    let r = claim_one(C, s, "m1", 0, &id).await;
    let results = vec![
        answer(a, Outcome::Accepted),
        answer(b, Outcome::Timeout),
        answer(c, Outcome::Error),
    ];
    let r = ok(
        C,
        "complete any 1",
        s.complete_attempt(&completion(&r, "m1", results), &fixture_retry(), 1)
            .await,
    );
    check_eq!(
        C,
        (r.stage, r.satisfaction),
        (Stage::Delivering, Satisfaction::Satisfied),
        "satisfied, b and c still open"
    );
    let due = r.due_ms.unwrap_or(0);
    let r = claim_one(C, s, "m2", due, &id).await;
    check_eq!(
        C,
        r.attempt_targets(),
        vec![b.to_string(), c.to_string()],
        "the accepted target is not sent again"
    );
    let results = vec![answer(b, Outcome::Timeout), answer(c, Outcome::Error)];
    let r = ok(
        C,
        "complete any 2",
        s.complete_attempt(&completion(&r, "m2", results), &fixture_retry(), due + 1)
            .await,
    );
    check_eq!(
        C,
        (r.stage, r.satisfaction, r.reason, r.attempts),
        (Stage::Satisfied, Satisfaction::Satisfied, None, 2),
        "the budget ends delivery, the record stays satisfied"
    );
    check_eq!(
        C,
        r.unsettled_targets(),
        vec![b.to_string(), c.to_string()],
        "the targets it never reached stay open in its evidence"
    );
}

/// An attempt that reached no relay (all unreachable) is not counted: the record keeps
/// waiting with a growing backoff under the same attempt number, its evidence stays one
/// entry per target (whose `tries` grow), the first attempt that reaches a relay counts
/// again, and the budget still ends the record.
pub async fn unreachable_attempts_keep_the_budget<S: Store>(s: &S) {
    const C: &str = "unreachable_attempts_keep_the_budget";
    let plan = fixture_plan(1, &RELAYS[..2], Policy::All).with_max_attempts(2);
    let id = ok(C, "enqueue", s.enqueue(plan, 0).await).record.id;
    let mut now = 0;
    let mut last_delay = 0;
    for k in 1..=40u32 {
        let r = claim_one(C, s, &format!("u{k}"), now, &id).await;
        check_eq!(
            C,
            r.lease.as_ref().map(|l| l.attempt),
            Some(1),
            "same attempt number"
        );
        // One relay refuses the connection, the other is not even tried.
        let done = ok(
            C,
            "complete",
            s.complete_attempt(
                &completion(
                    &r,
                    &format!("u{k}"),
                    vec![answer(RELAYS[0], Outcome::Unreachable)],
                ),
                &fixture_retry(),
                now,
            )
            .await,
        );
        check_eq!(C, done.attempts, 0, "an unreached attempt is not counted");
        check_eq!(
            C,
            done.stage,
            Stage::Retryable,
            "still waiting for the relays"
        );
        check_eq!(
            C,
            done.evidence.len(),
            2,
            "one entry per target, however long the wait"
        );
        check!(
            C,
            done.evidence.iter().all(|e| e.tries == k && e.attempt == 1),
            "tries counted on the entries"
        );
        if k > 1 {
            check_eq!(C, done.evidence[0].first_at_ms, Some(0), "first try kept");
        }
        check_eq!(C, done.evidence[0].at_ms, now, "last try time");
        let delay = done.due_ms.unwrap_or(0) - now;
        check!(
            C,
            delay >= last_delay,
            "backoff does not shrink while unreachable"
        );
        last_delay = delay;
        now = done.due_ms.unwrap_or(now);
    }
    check!(C, last_delay > 0, "an unreached wait has a backoff");
    // The stored record is the returned one.
    let stored = must_get(C, s, &id).await;
    check_eq!(C, stored.evidence.len(), 2, "stored evidence bounded");
    // A reached attempt counts: number 1, appended after the unreached entries.
    let r = claim_one(C, s, "r1", now, &id).await;
    let done = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(
                &r,
                "r1",
                vec![
                    answer(RELAYS[0], Outcome::Error),
                    answer(RELAYS[1], Outcome::Unreachable),
                ],
            ),
            &fixture_retry(),
            now,
        )
        .await,
    );
    check_eq!(C, done.attempts, 1, "a reached attempt is counted");
    check_eq!(C, done.evidence.len(), 4, "reached attempt appended");
    check_eq!(
        C,
        done.stage,
        Stage::Retryable,
        "one reached attempt of two"
    );
    now = done.due_ms.unwrap_or(now);
    // An unreached attempt after it starts a new entry under number 2.
    let r = claim_one(C, s, "u-after", now, &id).await;
    let done = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(&r, "u-after", vec![answer(RELAYS[0], Outcome::Unreachable)]),
            &fixture_retry(),
            now,
        )
        .await,
    );
    check_eq!(C, done.attempts, 1, "still one counted attempt");
    check_eq!(C, done.evidence.len(), 6, "new attempt number, new entries");
    now = done.due_ms.unwrap_or(now);
    let r = claim_one(C, s, "r2", now, &id).await;
    let done = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(&r, "r2", vec![answer(RELAYS[0], Outcome::Error)]),
            &fixture_retry(),
            now,
        )
        .await,
    );
    check_eq!(
        C,
        done.stage,
        Stage::Exhausted,
        "two reached attempts spend the budget"
    );
    check_eq!(C, done.reason, Some(StopReason::MaxAttempts), "reason");
    check_eq!(C, done.attempts, 2, "attempts");
}

/// A round's attempts recorded in one call: one answer per completion, in order; a
/// lost claim among them is its own error and changes only nothing of its record.
pub async fn complete_many<S: Store>(s: &S) {
    const C: &str = "complete_many";
    for n in 1..=3 {
        ok(
            C,
            "enqueue",
            s.enqueue(fixture_plan(n, &RELAYS[..1], Policy::All), 0)
                .await,
        );
    }
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("owner", "round", 10, 10_000), 0)
            .await,
    );
    check_eq!(C, claimed.len(), 3, "all claimed");
    let completions = vec![
        completion(
            &claimed[0],
            "round",
            vec![answer(RELAYS[0], Outcome::Accepted)],
        ),
        // A stale lease id: a lost claim.
        completion(
            &claimed[1],
            "someone-else",
            vec![answer(RELAYS[0], Outcome::Accepted)],
        ),
        completion(
            &claimed[2],
            "round",
            vec![answer(RELAYS[0], Outcome::Error)],
        ),
    ];
    let answers = s
        .complete_attempts(&completions, &fixture_retry(), 10)
        .await;
    check_eq!(C, answers.len(), 3, "one answer per completion");
    let stages: Vec<Option<Stage>> = answers
        .iter()
        .map(|a| a.as_ref().ok().map(|r| r.stage))
        .collect();
    check_eq!(
        C,
        stages,
        vec![Some(Stage::Satisfied), None, Some(Stage::Retryable)],
        "in order"
    );
    check!(
        C,
        answers[1]
            .as_ref()
            .is_err_and(|e| e.is_lost_claim() && e.is_item_error()),
        "the stale one is a lost claim"
    );
    check_eq!(
        C,
        must_get(C, s, &claimed[0].id).await.stage,
        Stage::Satisfied,
        "first recorded"
    );
    check_eq!(
        C,
        must_get(C, s, &claimed[1].id).await,
        claimed[1].clone(),
        "the lost claim changed nothing"
    );
    check_eq!(
        C,
        must_get(C, s, &claimed[2].id).await.attempts,
        1,
        "third recorded"
    );
    check!(
        C,
        s.complete_attempts(&[], &fixture_retry(), 11)
            .await
            .is_empty(),
        "nothing to record"
    );
}

/// The attempt budget ends a record as `exhausted` with reason `maxAttempts`.
pub async fn exhaustion<S: Store>(s: &S) {
    const C: &str = "exhaustion";
    let plan = fixture_plan(1, &RELAYS[..1], Policy::All).with_max_attempts(2);
    let id = ok(C, "enqueue", s.enqueue(plan, 0).await).record.id;
    let mut now = 0;
    for attempt in 1..=2u32 {
        let r = claim_one(C, s, &format!("l{attempt}"), now, &id).await;
        let done = ok(
            C,
            "complete",
            s.complete_attempt(
                &completion(
                    &r,
                    &format!("l{attempt}"),
                    vec![answer(RELAYS[0], Outcome::Timeout)],
                ),
                &fixture_retry(),
                now,
            )
            .await,
        );
        check_eq!(C, done.attempts, attempt, "attempt number");
        now = done.due_ms.unwrap_or(now);
        if attempt == 2 {
            check_eq!(C, done.stage, Stage::Exhausted, "budget spent");
            check_eq!(C, done.reason, Some(StopReason::MaxAttempts), "reason");
            check_eq!(C, done.due_ms, None, "not due");
        }
    }
    let later = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "x", 5, 10), 1_000_000).await,
    );
    check!(C, later.is_empty(), "exhausted records are never claimed");
}

/// A passed deadline (or NIP-40 expiration) exhausts the record as `expired`.
pub async fn expiration<S: Store>(s: &S) {
    const C: &str = "expiration";
    let plan = fixture_plan(1, &RELAYS[..1], Policy::All)
        .with_id("deadline")
        .with_deadline_ms(Some(500));
    ok(C, "enqueue", s.enqueue(plan, 0).await);
    let mut event = fixture_event(2);
    event.expiration = Some(1); // unix seconds: 1000 ms
    let nip40 = Plan::new(event, vec![RELAYS[0].into()], Policy::All).with_id("nip40");
    ok(C, "enqueue", s.enqueue(nip40, 0).await);
    // At 600 the deadline passed but not the NIP-40 expiration.
    let got = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l", 10, 100), 600).await,
    );
    check_eq!(C, got.len(), 2, "both returned");
    let expired = got
        .iter()
        .find(|r| r.id == "deadline")
        .expect("deadline record");
    check_eq!(
        C,
        (expired.stage, expired.reason),
        (Stage::Exhausted, Some(StopReason::Expired)),
        "expired on claim"
    );
    check_eq!(
        C,
        &must_get(C, s, "deadline").await,
        expired,
        "expiry is stored"
    );
    err_code(
        C,
        "retry after deadline",
        s.retry("deadline", 700).await,
        "not_retryable",
    );
    let leased = got.iter().find(|r| r.id == "nip40").expect("nip40 record");
    check_eq!(C, leased.stage, Stage::Leased, "not yet expired");
    // The next retry (600 + 1000) would fall after the NIP-40 expiration (1000).
    let done = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(leased, "l", vec![answer(RELAYS[0], Outcome::Timeout)]),
            &fixture_retry(),
            600,
        )
        .await,
    );
    check_eq!(
        C,
        (done.stage, done.reason),
        (Stage::Exhausted, Some(StopReason::Expired)),
        "retry past expiration"
    );
}

/// `retry` re-arms exhausted records only; `cancel` ends non-terminal ones only.
pub async fn retry_and_cancel<S: Store>(s: &S) {
    const C: &str = "retry_and_cancel";
    err_code(C, "retry missing", s.retry("nope", 0).await, "not_found");
    err_code(C, "cancel missing", s.cancel("nope", 0).await, "not_found");
    let plan = fixture_plan(1, &RELAYS[..2], Policy::All)
        .with_id("x")
        .with_max_attempts(1);
    ok(C, "enqueue", s.enqueue(plan, 0).await);
    err_code(C, "retry pending", s.retry("x", 1).await, "not_retryable");
    let r = claim_one(C, s, "l", 1, "x").await;
    let results = vec![
        answer(RELAYS[0], Outcome::Accepted),
        answer(RELAYS[1], Outcome::Rejected(RejectReason::Restricted)),
    ];
    let done = ok(
        C,
        "complete",
        s.complete_attempt(&completion(&r, "l", results), &fixture_retry(), 2)
            .await,
    );
    check_eq!(C, done.stage, Stage::Exhausted, "rejected");
    err_code(
        C,
        "cancel exhausted",
        s.cancel("x", 3).await,
        "already_terminal",
    );
    let re = ok(C, "retry", s.retry("x", 10).await);
    check_eq!(C, re.stage, Stage::Retryable, "re-armed");
    check_eq!(C, re.evidence, done.evidence, "evidence kept");
    check_eq!(C, re.due_ms, Some(10), "due at once");
    check_eq!(C, re.reason, None, "reason cleared");
    check_eq!(C, re.revision, done.revision + 1, "revision grows");
    check_eq!(
        C,
        re.unsettled_targets(),
        vec![RELAYS[1].to_string()],
        "rejected target re-opened, accepted not"
    );
    let r2 = claim_one(C, s, "l2", 10, "x").await;
    check_eq!(
        C,
        r2.lease.as_ref().map(|l| l.attempt),
        Some(2),
        "numbering continues"
    );
    let done2 = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(&r2, "l2", vec![answer(RELAYS[1], Outcome::Accepted)]),
            &fixture_retry(),
            11,
        )
        .await,
    );
    check_eq!(C, done2.stage, Stage::Satisfied, "satisfied after retry");
    err_code(
        C,
        "retry satisfied",
        s.retry("x", 12).await,
        "not_retryable",
    );
    // Cancel pending, and cancel while leased (the lease holder then loses its claim).
    ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(2, &RELAYS, Policy::All).with_id("y"), 20)
            .await,
    );
    let c = ok(C, "cancel", s.cancel("y", 21).await);
    check_eq!(
        C,
        (c.stage, c.reason, c.due_ms),
        (Stage::Cancelled, Some(StopReason::Cancelled), None),
        "cancelled"
    );
    err_code(
        C,
        "cancel twice",
        s.cancel("y", 22).await,
        "already_terminal",
    );
    err_code(
        C,
        "retry cancelled",
        s.retry("y", 22).await,
        "not_retryable",
    );
    ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(3, &RELAYS, Policy::All).with_id("z"), 30)
            .await,
    );
    let lz = claim_one(C, s, "lz", 30, "z").await;
    let cz = ok(C, "cancel leased", s.cancel("z", 31).await);
    check_eq!(C, cz.lease, None, "lease dropped");
    err_code(
        C,
        "complete after cancel",
        s.complete_attempt(&completion(&lz, "lz", vec![]), &fixture_retry(), 32)
            .await,
        "lease_expired",
    );
    check_eq!(C, must_get(C, s, "z").await, cz, "cancel stands");
}

/// `release` hands a lease back without an attempt.
pub async fn release_hands_back<S: Store>(s: &S) {
    const C: &str = "release_hands_back";
    let id = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All), 0).await,
    )
    .record
    .id;
    let r = claim_one(C, s, "l", 5, &id).await;
    err_code(
        C,
        "wrong lease",
        s.release(&id, "other", r.revision, 6).await,
        "lease_expired",
    );
    let back = ok(C, "release", s.release(&id, "l", r.revision, 6).await);
    check_eq!(
        C,
        (back.stage, back.lease.clone(), back.due_ms),
        (Stage::Pending, None, Some(6)),
        "released"
    );
    check_eq!(C, back.attempts, 0, "no attempt counted");
    let again = claim_one(C, s, "l2", 6, &id).await;
    check_eq!(
        C,
        again.lease.as_ref().map(|l| l.attempt),
        Some(1),
        "still attempt 1"
    );
}

/// `relay_back` makes due at once the retryable records whose latest try of that relay
/// found it unreachable, and leaves every other record exactly as it was.
pub async fn relay_back_wakes_only_what_waits_for_it<S: Store>(s: &S) {
    const C: &str = "relay_back_wakes_only_what_waits_for_it";
    let (a, b) = (RELAYS[0], RELAYS[1]);
    // Each record: its targets and the answers of its first attempt (at 10).
    let cases: [(&[&str], Vec<TargetResult>); 5] = [
        // Waits for `a` (unreachable), `b` not even tried: woken.
        (&[a, b], vec![answer(a, Outcome::Unreachable)]),
        // `a` timed out: it was reached, not woken.
        (&[a], vec![answer(a, Outcome::Timeout)]),
        // `b` asked to slow down: its pause stays.
        (
            &[a, b],
            vec![
                answer(a, Outcome::Unreachable),
                answer(b, Outcome::RateLimited),
            ],
        ),
        // Waits for `b` only.
        (&[b], vec![answer(b, Outcome::Unreachable)]),
        // `a` accepted, `b` unreachable: `a` is settled.
        (
            &[a, b],
            vec![
                answer(a, Outcome::Accepted),
                answer(b, Outcome::Unreachable),
            ],
        ),
    ];
    let mut ids = Vec::new();
    for (n, (targets, results)) in cases.into_iter().enumerate() {
        let plan = fixture_plan(n as u32 + 1, targets, Policy::All);
        let id = ok(C, "enqueue", s.enqueue(plan, 0).await).record.id;
        let r = claim_one(C, s, &format!("l{n}"), 5, &id).await;
        let done = ok(
            C,
            "complete",
            s.complete_attempt(
                &completion(&r, &format!("l{n}"), results),
                &fixture_retry(),
                10,
            )
            .await,
        );
        check_eq!(C, done.stage, Stage::Retryable, "record {n} waits");
        check!(C, done.due_ms > Some(11), "record {n} is due later");
        ids.push(id);
    }
    // Never attempted: pending, not woken.
    let pending = ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(9, &[a], Policy::All), 0).await,
    )
    .record;
    let before: Vec<Record> = {
        let mut v = Vec::new();
        for id in &ids {
            v.push(must_get(C, s, id).await);
        }
        v
    };
    check_eq!(
        C,
        ok(
            C,
            "unknown relay",
            s.relay_back("wss://other.example", 11).await
        ),
        Vec::<Record>::new(),
        "a relay no record waits for"
    );
    let woken = ok(C, "relay_back", s.relay_back(a, 11).await);
    check_eq!(C, woken.len(), 1, "one woken");
    for (i, id) in ids.iter().enumerate() {
        let now = must_get(C, s, id).await;
        if i == 0 {
            let mut expected = before[0].clone();
            expected.revision += 1;
            expected.due_ms = Some(11);
            expected.retry_not_before_ms = Some(11);
            expected.updated_ms = 11;
            check_eq!(
                C,
                now,
                expected,
                "woken: due at once, evidence and attempts kept"
            );
            check_eq!(C, &woken[0], &now, "answered as stored");
        } else {
            check_eq!(C, &now, &before[i], "record {i} unchanged");
        }
    }
    check_eq!(
        C,
        must_get(C, s, &pending.id).await,
        pending,
        "pending unchanged"
    );
    check_eq!(
        C,
        ok(C, "relay_back again", s.relay_back(a, 11).await).len(),
        0,
        "already due"
    );
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "w", 256, 10_000), 11).await,
    );
    let mut got: Vec<&str> = claimed.iter().map(|r| r.id.as_str()).collect();
    got.sort_unstable();
    let mut want = vec![ids[0].as_str(), pending.id.as_str()];
    want.sort_unstable();
    check_eq!(C, got, want, "the woken record is claimable");
}

/// `purge` deletes terminal records older than the cutoff and nothing else.
pub async fn purge_terminal_only<S: Store>(s: &S) {
    const C: &str = "purge_terminal_only";
    for (id, n) in [("old", 1), ("new", 2), ("live", 3)] {
        ok(
            C,
            "enqueue",
            s.enqueue(fixture_plan(n, &RELAYS, Policy::All).with_id(id), 0)
                .await,
        );
    }
    ok(C, "cancel", s.cancel("old", 10).await);
    ok(C, "cancel", s.cancel("new", 30).await);
    check_eq!(
        C,
        ok(C, "purge", s.purge(10).await),
        0,
        "cutoff is exclusive"
    );
    check_eq!(
        C,
        ok(C, "purge", s.purge(20).await),
        1,
        "one old terminal record"
    );
    check!(C, ok(C, "get", s.get("old").await).is_none(), "old purged");
    check!(C, ok(C, "get", s.get("new").await).is_some(), "new kept");
    check_eq!(
        C,
        ok(C, "purge", s.purge(1_000).await),
        1,
        "new purged later"
    );
    check!(
        C,
        ok(C, "get", s.get("live").await).is_some(),
        "non-terminal never purged"
    );
}

/// `next_due` is the smallest due time of a non-terminal record.
pub async fn next_due<S: Store>(s: &S) {
    const C: &str = "next_due";
    check_eq!(
        C,
        ok(C, "next_due", s.next_due().await),
        None,
        "empty store"
    );
    ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(1, &RELAYS, Policy::All).with_id("a"), 50)
            .await,
    );
    ok(
        C,
        "enqueue",
        s.enqueue(fixture_plan(2, &RELAYS, Policy::All).with_id("b"), 70)
            .await,
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due().await),
        Some(50),
        "earliest pending"
    );
    let due_at = async |now| ok(C, "count_due", s.count_due(now).await);
    check_eq!(
        C,
        (due_at(49).await, due_at(50).await, due_at(70).await),
        (0, 1, 2),
        "count_due"
    );
    let r = claim_one(C, s, "l", 60, "a").await;
    check_eq!(
        C,
        (due_at(70).await, due_at(10_060).await),
        (1, 2),
        "a leased record counts when its lease expires"
    );
    // `a` is leased until 10_060; `b` (due at 70) was not ready at 60.
    check_eq!(
        C,
        ok(C, "next_due", s.next_due().await),
        Some(70),
        "b is next"
    );
    ok(C, "cancel", s.cancel("b", 61).await);
    check_eq!(
        C,
        ok(C, "next_due", s.next_due().await),
        r.due_ms,
        "the lease expiry"
    );
    ok(C, "cancel", s.cancel("a", 62).await);
    check_eq!(
        C,
        ok(C, "next_due", s.next_due().await),
        None,
        "only terminal records"
    );
    check_eq!(
        C,
        due_at(u64::MAX).await,
        0,
        "terminal records are never due"
    );
}

fn id_of(n: u32) -> String {
    format!("{n:064x}")
}

/// Checks `r` ended `superseded` for `reason` by the event `by`, kept its evidence, and
/// is no longer claimable.
fn check_superseded(case: &str, r: &Record, reason: StopReason, by: u32) {
    check_eq!(
        case,
        (r.stage, r.reason, r.superseded_by.clone()),
        (Stage::Superseded, Some(reason), Some(id_of(by))),
        "`{}` superseded by {by}",
        r.id
    );
    check!(
        case,
        r.lease.is_none() && r.due_ms.is_none(),
        "`{}` has no lease and is never due",
        r.id
    );
}

/// NIP-01 replaceable events: the newest version (higher `created_at`) supersedes the
/// older ones that may still be sent (pending, leased, retryable, exhausted), keeping
/// their evidence; an older version arriving late is stored already superseded; other
/// authors, kinds and satisfied versions are untouched; `retry` and `cancel` of a
/// superseded record are refused; a result under a superseded lease is a lost claim.
pub async fn replaceable_versions_supersede<S: Store>(s: &S) {
    const C: &str = "replaceable_versions_supersede";
    let profile = |n, at| nostr_plan(nostr_event(n, ALICE, 0, at, "", &[]));
    // v1 is attempted: relay A accepts, the others time out (retryable).
    ok(C, "enqueue v1", s.enqueue(profile(1, 100), 1_000).await);
    let leased = claim_one(C, s, "l1", 1_000, &id_of(1)).await;
    let done = ok(
        C,
        "complete v1",
        s.complete_attempt(
            &completion(
                &leased,
                "l1",
                vec![
                    answer(RELAYS[0], Outcome::Accepted),
                    answer(RELAYS[1], Outcome::Timeout),
                    answer(RELAYS[2], Outcome::Timeout),
                ],
            ),
            &fixture_retry(),
            1_001,
        )
        .await,
    );
    check_eq!(C, done.stage, Stage::Retryable, "v1 waits for B and C");
    // Someone else's profile and a note are not touched by Alice's versions.
    ok(
        C,
        "enqueue bob",
        s.enqueue(nostr_plan(nostr_event(50, BOB, 0, 50, "", &[])), 1_002)
            .await,
    );
    ok(
        C,
        "enqueue note",
        s.enqueue(nostr_plan(nostr_event(51, ALICE, 1, 50, "", &[])), 1_002)
            .await,
    );
    let v2 = ok(C, "enqueue v2", s.enqueue(profile(2, 200), 1_010).await);
    check_eq!(C, v2.outcome, EnqueueOutcome::Created, "v2 is created");
    check_eq!(
        C,
        v2.withdrawn
            .iter()
            .map(|r| r.id.clone())
            .collect::<Vec<_>>(),
        vec![id_of(1)],
        "v2 withdraws v1 only"
    );
    let v1 = must_get(C, s, &id_of(1)).await;
    check_superseded(C, &v1, StopReason::Superseded, 2);
    check_eq!(C, &v1, &v2.withdrawn[0], "the answer is what is stored");
    check_eq!(
        C,
        v1.evidence,
        done.evidence,
        "v1 keeps the evidence of its attempt"
    );
    // A claim takes v2, Bob's profile and the note; never v1.
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l2", 256, 10_000), 100_000)
            .await,
    );
    let mut ids: Vec<String> = claimed.iter().map(|r| r.id.clone()).collect();
    ids.sort();
    check_eq!(
        C,
        ids,
        vec![id_of(2), id_of(50), id_of(51)],
        "only the newest version is claimed"
    );
    // An older version enqueued late: stored, superseded at once, never claimable.
    let late = ok(C, "enqueue v0", s.enqueue(profile(3, 150), 100_001).await);
    check_eq!(
        C,
        late.outcome,
        EnqueueOutcome::Superseded,
        "an older version is superseded on arrival"
    );
    check_superseded(C, &late.record, StopReason::Superseded, 2);
    check_eq!(C, late.record.revision, 1, "born superseded: revision 1");
    check!(
        C,
        late.withdrawn.is_empty(),
        "the late version withdraws nothing"
    );
    let replay = ok(C, "replay v0", s.enqueue(profile(3, 150), 100_002).await);
    check_eq!(C, replay.outcome, EnqueueOutcome::Replay, "replay of v0");
    // v3 while v2 is leased: v2's lease becomes a lost claim.
    let v2_leased = claimed.iter().find(|r| r.id == id_of(2)).expect("v2");
    ok(C, "enqueue v3", s.enqueue(profile(4, 300), 100_003).await);
    check_superseded(
        C,
        &must_get(C, s, &id_of(2)).await,
        StopReason::Superseded,
        4,
    );
    err_code(
        C,
        "complete under a superseded lease",
        s.complete_attempt(
            &completion(v2_leased, "l2", vec![answer(RELAYS[0], Outcome::Accepted)]),
            &fixture_retry(),
            100_004,
        )
        .await,
        "lease_expired",
    );
    err_code(
        C,
        "retry superseded",
        s.retry(&id_of(1), 100_005).await,
        "not_retryable",
    );
    err_code(
        C,
        "cancel superseded",
        s.cancel(&id_of(1), 100_005).await,
        "already_terminal",
    );
    let counts = ok(C, "status", s.status().await);
    check_eq!(C, counts.superseded, 3, "v1, v2 and the late v0");
    check_eq!(C, counts.total(), 6, "every record is kept");
    let page = ok(
        C,
        "list superseded",
        s.list(&ListQuery {
            stage: Some(Stage::Superseded),
            limit: 10,
            after: None,
            ..Default::default()
        })
        .await,
    );
    check_eq!(C, page.len(), 3, "list by stage superseded");
    // An exhausted version is superseded too (so `retry` cannot send it again).
    let mut exhausted_plan = profile(5, 400);
    exhausted_plan.max_attempts = 1;
    ok(C, "enqueue v4", s.enqueue(exhausted_plan, 200_000).await);
    let v4 = claim_one(C, s, "l3", 200_000, &id_of(5)).await;
    let v4 = ok(
        C,
        "exhaust v4",
        s.complete_attempt(
            &completion(&v4, "l3", vec![answer(RELAYS[0], Outcome::Timeout)]),
            &fixture_retry(),
            200_001,
        )
        .await,
    );
    check_eq!(C, v4.stage, Stage::Exhausted, "v4 exhausted");
    ok(C, "enqueue v5", s.enqueue(profile(6, 500), 200_002).await);
    check_superseded(
        C,
        &must_get(C, s, &id_of(5)).await,
        StopReason::Superseded,
        6,
    );
    // A satisfied version stays satisfied, and still outranks older late versions.
    let v5 = claim_one(C, s, "l4", 200_003, &id_of(6)).await;
    let all = RELAYS
        .iter()
        .map(|r| answer(r, Outcome::Accepted))
        .collect();
    let v5 = ok(
        C,
        "deliver v5",
        s.complete_attempt(&completion(&v5, "l4", all), &fixture_retry(), 200_004)
            .await,
    );
    check_eq!(C, v5.stage, Stage::Satisfied, "v5 delivered");
    let late = ok(C, "enqueue late", s.enqueue(profile(7, 450), 200_005).await);
    check_eq!(
        C,
        late.outcome,
        EnqueueOutcome::Superseded,
        "older than a delivered version"
    );
    check_superseded(C, &late.record, StopReason::Superseded, 6);
    ok(C, "enqueue v6", s.enqueue(profile(8, 600), 200_006).await);
    check_eq!(
        C,
        must_get(C, s, &id_of(6)).await.stage,
        Stage::Satisfied,
        "a delivered version is never withdrawn"
    );
}

/// NIP-01 addressable events: one slot per `(pubkey, kind, d)`; on equal `created_at`
/// the lower id wins; a cancelled newer version does not outrank an older one.
pub async fn addressable_slots_and_ties<S: Store>(s: &S) {
    const C: &str = "addressable_slots_and_ties";
    let article = |n, at, d| nostr_plan(nostr_event(n, ALICE, 30_023, at, d, &[]));
    ok(C, "enqueue a", s.enqueue(article(20, 100, "a"), 0).await);
    ok(C, "enqueue b", s.enqueue(article(21, 100, "b"), 0).await);
    let newer_b = ok(C, "enqueue b2", s.enqueue(article(22, 101, "b"), 1).await);
    check_eq!(
        C,
        newer_b.withdrawn.len(),
        1,
        "another d tag is another slot"
    );
    check_eq!(
        C,
        must_get(C, s, &id_of(20)).await.stage,
        Stage::Pending,
        "slot `a` untouched"
    );
    // A tie on created_at: the lower id (n = 10 < 20) wins.
    let tie = ok(C, "enqueue tie", s.enqueue(article(10, 100, "a"), 2).await);
    check_eq!(C, tie.outcome, EnqueueOutcome::Created, "lower id wins");
    check_superseded(
        C,
        &must_get(C, s, &id_of(20)).await,
        StopReason::Superseded,
        10,
    );
    let loser = ok(C, "enqueue tie", s.enqueue(article(30, 100, "a"), 3).await);
    check_eq!(
        C,
        loser.outcome,
        EnqueueOutcome::Superseded,
        "higher id loses the tie"
    );
    // A cancelled version does not supersede what comes after it.
    ok(C, "cancel", s.cancel(&id_of(22), 4).await);
    let older = ok(C, "enqueue", s.enqueue(article(23, 101, "b"), 5).await);
    check_eq!(
        C,
        older.outcome,
        EnqueueOutcome::Created,
        "a cancelled version outranks nothing"
    );
}

/// NIP-09: a deletion withdraws its author's records that it names and that may still
/// be sent (`e` by id; `a` for versions no newer than the deletion), never a deletion,
/// another author's event, or a delivered one; it is itself sent.
pub async fn deletions_withdraw_what_they_name<S: Store>(s: &S) {
    const C: &str = "deletions_withdraw_what_they_name";
    let note = |n, who| nostr_plan(nostr_event(n, who, 1, 100, "", &[]));
    ok(C, "note", s.enqueue(note(1, ALICE), 0).await);
    ok(C, "bob's note", s.enqueue(note(2, BOB), 0).await);
    ok(C, "note 3", s.enqueue(note(3, ALICE), 0).await);
    // Under item ids of the app's: note 8 (named by the deletion by its event id), and
    // note 10 under the item id that is note 11's event id (named; note 10 is not).
    let custom = note(8, ALICE).with_id("custom-8");
    ok(C, "custom note", s.enqueue(custom, 0).await);
    let decoy = note(10, ALICE).with_id(id_of(11));
    ok(C, "decoy note", s.enqueue(decoy, 0).await);
    // Note 3 is delivered before the deletion arrives.
    let r = claim_one(C, s, "l", 1, &id_of(3)).await;
    let all = RELAYS
        .iter()
        .map(|t| answer(t, Outcome::Accepted))
        .collect();
    ok(
        C,
        "deliver 3",
        s.complete_attempt(&completion(&r, "l", all), &fixture_retry(), 2)
            .await,
    );
    ok(
        C,
        "article old",
        s.enqueue(nostr_plan(nostr_event(4, ALICE, 30_023, 100, "x", &[])), 3)
            .await,
    );
    let earlier_deletion = nostr_event(
        5,
        ALICE,
        5,
        150,
        "",
        &[
            &id_of(1),
            &id_of(2),
            &id_of(3),
            &id_of(8),
            &id_of(11),
            &format!("30023:{ALICE}:y"),
        ],
    );
    ok(
        C,
        "first deletion",
        s.enqueue(nostr_plan(earlier_deletion), 4).await,
    );
    check_superseded(C, &must_get(C, s, &id_of(1)).await, StopReason::Deleted, 5);
    check_superseded(C, &must_get(C, s, "custom-8").await, StopReason::Deleted, 5);
    check!(
        C,
        must_get(C, s, &id_of(11)).await.stage.may_send(),
        "a record is found by its event's id, not by an item id that looks like one"
    );
    check!(
        C,
        must_get(C, s, &id_of(2)).await.stage.may_send(),
        "another author's note is not deleted"
    );
    check_eq!(
        C,
        must_get(C, s, &id_of(3)).await.stage,
        Stage::Satisfied,
        "a delivered note stays delivered"
    );
    // `a` tags: versions up to the deletion's created_at only.
    let address = format!("30023:{ALICE}:x");
    let too_early = nostr_event(6, ALICE, 5, 50, "", &[&address]);
    let r = ok(
        C,
        "early deletion",
        s.enqueue(nostr_plan(too_early), 5).await,
    );
    check!(
        C,
        r.withdrawn.is_empty(),
        "a version newer than the deletion stays"
    );
    let deletion = nostr_event(7, ALICE, 5, 200, "", &[&address, &id_of(5), &id_of(6)]);
    let r = ok(C, "deletion", s.enqueue(nostr_plan(deletion), 6).await);
    check_eq!(
        C,
        r.withdrawn.iter().map(|w| w.id.clone()).collect::<Vec<_>>(),
        vec![id_of(4)],
        "the article only: deletions are not deleted"
    );
    check_superseded(C, &must_get(C, s, &id_of(4)).await, StopReason::Deleted, 7);
    // The deletions themselves are sent (Bob's note once its first lease is over).
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l2", 256, 10_000), 20_000)
            .await,
    );
    let mut ids: Vec<String> = claimed.iter().map(|r| r.id.clone()).collect();
    ids.sort();
    check_eq!(
        C,
        ids,
        vec![id_of(2), id_of(5), id_of(6), id_of(7), id_of(11)],
        "deletions, Bob's note and the decoy go out"
    );
}

/// `enqueue_many` applies the rules in order inside the batch, all or nothing.
pub async fn batches_apply_the_rules_in_order<S: Store>(s: &S) {
    const C: &str = "batches_apply_the_rules_in_order";
    let contacts = |n, at| nostr_plan(nostr_event(n, ALICE, 3, at, "", &[]));
    ok(C, "stored v1", s.enqueue(contacts(1, 10), 0).await);
    let answers = ok(
        C,
        "batch",
        s.enqueue_many(
            vec![
                contacts(2, 20),
                contacts(3, 15),
                nostr_plan(nostr_event(4, ALICE, 1, 30, "", &[])),
                contacts(5, 30),
                nostr_plan(nostr_event(6, ALICE, 5, 40, "", &[&id_of(4)])),
            ],
            1,
        )
        .await,
    );
    let outcomes: Vec<EnqueueOutcome> = answers.iter().map(|a| a.outcome).collect();
    check_eq!(
        C,
        outcomes,
        vec![
            EnqueueOutcome::Created,
            EnqueueOutcome::Superseded,
            EnqueueOutcome::Created,
            EnqueueOutcome::Created,
            EnqueueOutcome::Created,
        ],
        "in order"
    );
    check_eq!(
        C,
        answers[0]
            .withdrawn
            .iter()
            .map(|r| r.id.clone())
            .collect::<Vec<_>>(),
        vec![id_of(1)],
        "v2 withdraws the stored v1"
    );
    check_eq!(
        C,
        answers[3]
            .withdrawn
            .iter()
            .map(|r| r.id.clone())
            .collect::<Vec<_>>(),
        vec![id_of(2)],
        "v5 withdraws v2 of the same batch"
    );
    check_eq!(
        C,
        answers[4]
            .withdrawn
            .iter()
            .map(|r| r.id.clone())
            .collect::<Vec<_>>(),
        vec![id_of(4)],
        "the deletion withdraws the note of the same batch"
    );
    for (n, by, reason) in [
        (1, 2, StopReason::Superseded),
        (2, 5, StopReason::Superseded),
        (3, 2, StopReason::Superseded),
        (4, 6, StopReason::Deleted),
    ] {
        check_superseded(C, &must_get(C, s, &id_of(n)).await, reason, by);
    }
    check_eq!(
        C,
        must_get(C, s, &id_of(5)).await.stage,
        Stage::Pending,
        "the newest waits"
    );
    // A batch that fails writes nothing, withdrawals included.
    let mut bad = contacts(8, 99);
    bad.targets.clear();
    err_code(
        C,
        "failing batch",
        s.enqueue_many(vec![contacts(7, 90), bad], 2).await,
        "invalid_targets",
    );
    check_eq!(
        C,
        must_get(C, s, &id_of(5)).await.stage,
        Stage::Pending,
        "nothing withdrawn by a failed batch"
    );
    check!(
        C,
        ok(C, "get", s.get(&id_of(7)).await).is_none(),
        "nothing created by a failed batch"
    );
}

/// Ephemeral kinds get a short deadline; an event whose NIP-40 expiration has passed
/// is refused with `event_expired` and writes nothing.
pub async fn ephemeral_and_expired_events<S: Store>(s: &S) {
    const C: &str = "ephemeral_and_expired_events";
    let ephemeral = nostr_plan(nostr_event(1, ALICE, 20_001, 5, "", &[]));
    let r = ok(C, "ephemeral", s.enqueue(ephemeral, 1_000).await);
    check_eq!(
        C,
        r.record.effective_deadline_ms(),
        Some(1_000 + EPHEMERAL_DEADLINE_MS),
        "default ephemeral deadline"
    );
    let own = nostr_plan(nostr_event(2, ALICE, 20_001, 5, "", &[])).with_deadline_ms(Some(99_000));
    let r = ok(C, "ephemeral with a deadline", s.enqueue(own, 1_000).await);
    check_eq!(
        C,
        r.record.deadline_ms,
        Some(99_000),
        "the plan's deadline wins"
    );
    let got = ok(
        C,
        "claim late",
        s.claim(
            &fixture_claim("o", "l", 10, 100),
            1_000 + EPHEMERAL_DEADLINE_MS,
        )
        .await,
    );
    let late = got.iter().find(|r| r.id == id_of(1)).expect("returned");
    check_eq!(
        C,
        (late.stage, late.reason),
        (Stage::Exhausted, Some(StopReason::Expired)),
        "not sent after its deadline"
    );
    // NIP-40: already expired (expiration 5 s, now 5 s) → refused, nothing stored.
    let mut event = fixture_event(3);
    event.expiration = Some(5);
    let expired = Plan::new(event, vec![RELAYS[0].into()], Policy::All);
    err_code(
        C,
        "expired",
        s.enqueue(expired.clone(), 5_000).await,
        "event_expired",
    );
    err_code(
        C,
        "expired in a batch",
        s.enqueue_many(
            vec![fixture_plan(4, &RELAYS, Policy::All), expired.clone()],
            5_000,
        )
        .await,
        "event_expired",
    );
    check!(
        C,
        ok(C, "get", s.get(&fixture_event(4).id).await).is_none(),
        "a batch with an expired event writes nothing"
    );
    let r = ok(C, "not yet expired", s.enqueue(expired, 4_999).await);
    check_eq!(
        C,
        r.record.effective_deadline_ms(),
        Some(5_000),
        "deadline = expiration"
    );
}

/// `related` finds records by event id and every stored version of an address, and
/// their accepted relays are where a deletion should go.
pub async fn related_finds_versions_and_accepting_relays<S: Store>(s: &S) {
    const C: &str = "related_finds_versions_and_accepting_relays";
    ok(
        C,
        "note",
        s.enqueue(nostr_plan(nostr_event(1, ALICE, 1, 10, "", &[])), 0)
            .await,
    );
    ok(
        C,
        "v1",
        s.enqueue(nostr_plan(nostr_event(2, ALICE, 30_000, 10, "f", &[])), 0)
            .await,
    );
    let claimed = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "l", 10, 10_000), 1).await,
    );
    for (n, relay) in [(1, RELAYS[0]), (2, RELAYS[1])] {
        let r = claimed.iter().find(|r| r.id == id_of(n)).expect("claimed");
        ok(
            C,
            "complete",
            s.complete_attempt(
                &completion(r, "l", vec![answer(relay, Outcome::Accepted)]),
                &fixture_retry(),
                2,
            )
            .await,
        );
    }
    ok(
        C,
        "v2",
        s.enqueue(nostr_plan(nostr_event(3, ALICE, 30_000, 20, "f", &[])), 3)
            .await,
    );
    let lookups = Lookups {
        slots: vec![format!("30000:{ALICE}:f")],
        event_ids: vec![id_of(1)],
    };
    let mut found: Vec<String> = ok(C, "related", s.related(&lookups).await)
        .into_iter()
        .filter(|r| lookups.matches(r))
        .map(|r| r.id)
        .collect();
    found.sort();
    found.dedup();
    check_eq!(
        C,
        found,
        vec![id_of(1), id_of(2), id_of(3)],
        "the note and both versions"
    );
    let records = ok(C, "related", s.related(&lookups).await);
    check_eq!(
        C,
        semantics::accepted_relays(records.iter()),
        vec![RELAYS[0].to_string(), RELAYS[1].to_string()],
        "where the deletion should go"
    );
}

/// The Web Lock holder takes over the live leases of other owners (flushers that are
/// gone), in claim order and up to its limit: the same attempt number (nothing was
/// recorded), `takeovers` counted, the dead lease lost. Its own live leases, expired
/// leases (the claim path's) and unleased records are left alone; a record past its
/// deadline is exhausted as `expired` instead, as on claim.
pub async fn take_over_orphaned_leases<S: Store>(s: &S) {
    const C: &str = "take_over_orphaned_leases";
    let mut ids = Vec::new();
    for n in 1..=5u32 {
        let e = ok(
            C,
            "enqueue",
            s.enqueue(fixture_plan(n, &RELAYS[..2], Policy::All), u64::from(n))
                .await,
        );
        ids.push(e.record.id);
    }
    // #1: leased by `old` until 110 (it will have expired); #2..#4: leased by `dead`
    // until 10 100; #5: leased by `me` (this flusher's own work in flight).
    let old = ok(
        C,
        "claim",
        s.claim(&fixture_claim("old", "l-old", 1, 100), 10).await,
    );
    check_eq!(C, old.len(), 1, "old claims one");
    check_eq!(C, old[0].id, ids[0], "old claims #1");
    let dead = ok(
        C,
        "claim",
        s.claim(&fixture_claim("dead", "l-dead", 3, 10_000), 100)
            .await,
    );
    let dead_ids: Vec<&str> = dead.iter().map(|r| r.id.as_str()).collect();
    check_eq!(
        C,
        dead_ids,
        vec![ids[1].as_str(), ids[2].as_str(), ids[3].as_str()],
        "dead claims #2..#4"
    );
    let mine = ok(
        C,
        "claim",
        s.claim(&fixture_claim("me", "l-mine", 1, 10_000), 200)
            .await,
    );
    check_eq!(C, mine.len(), 1, "me claims one");
    check_eq!(
        C,
        mine[0].id,
        ids[4],
        "me claims #5 (due before #1's lease expiry)"
    );

    err_code(
        C,
        "take_over with a zero limit",
        s.take_over(&fixture_claim("me", "t0", 0, 10_000), 300)
            .await,
        "invalid_argument",
    );
    // A batch of two: the oldest two of `dead`'s.
    let taken = ok(
        C,
        "take_over",
        s.take_over(&fixture_claim("me", "t1", 2, 10_000), 300)
            .await,
    );
    let taken_ids: Vec<&str> = taken.iter().map(|r| r.id.as_str()).collect();
    check_eq!(
        C,
        taken_ids,
        vec![ids[1].as_str(), ids[2].as_str()],
        "claim order, up to the limit"
    );
    for (r, before) in taken.iter().zip(&dead) {
        let lease = r.lease.as_ref().expect("lease");
        check_eq!(C, r.stage, Stage::Leased, "still leased");
        check_eq!(
            C,
            (lease.id.as_str(), lease.owner.as_str()),
            ("t1", "me"),
            "the new lease"
        );
        check_eq!(
            C,
            lease.attempt,
            1,
            "the dead flusher's attempt, made again"
        );
        check_eq!(C, lease.expires_ms, 10_300, "a fresh lease from now");
        check_eq!(C, r.due_ms, Some(10_300), "due at the new lease's expiry");
        check_eq!(C, r.attempts, 0, "nothing counted");
        check_eq!(C, r.takeovers, 1, "the takeover is counted");
        check_eq!(C, r.revision, before.revision + 1, "revision grows");
        check_eq!(C, &must_get(C, s, &r.id).await, r, "stored as answered");
    }
    let rest = ok(
        C,
        "take_over",
        s.take_over(&fixture_claim("me", "t2", 256, 10_000), 301)
            .await,
    );
    let rest_ids: Vec<&str> = rest.iter().map(|r| r.id.as_str()).collect();
    check_eq!(
        C,
        rest_ids,
        vec![ids[3].as_str()],
        "only the last orphan: not its own, not expired leases"
    );
    let none = ok(
        C,
        "take_over",
        s.take_over(&fixture_claim("me", "t3", 256, 10_000), 302)
            .await,
    );
    check!(C, none.is_empty(), "nothing left to take over: {none:?}");
    let own = must_get(C, s, &ids[4]).await;
    check_eq!(
        C,
        own.lease.as_ref().map(|l| l.id.as_str()),
        Some("l-mine"),
        "its own lease kept"
    );
    check_eq!(C, own.takeovers, 0, "its own lease not counted");
    // The expired lease is the claim path's, and is no takeover.
    let again = ok(
        C,
        "claim",
        s.claim(&fixture_claim("me", "l-again", 256, 10_000), 302)
            .await,
    );
    check_eq!(C, again.len(), 1, "only #1 is ready: {again:?}");
    let expired = &again[0];
    check_eq!(C, expired.id, ids[0], "#1 claimed after its lease expired");
    check_eq!(C, expired.takeovers, 0, "an expiry is not a takeover");

    // The dead flusher's late answer is a lost claim and changes nothing.
    let before = must_get(C, s, &ids[1]).await;
    err_code(
        C,
        "complete under the dead lease",
        s.complete_attempt(
            &completion(
                &dead[0],
                "l-dead",
                vec![answer(RELAYS[0], Outcome::Accepted)],
            ),
            &fixture_retry(),
            400,
        )
        .await,
        "lease_expired",
    );
    check_eq!(
        C,
        must_get(C, s, &ids[1]).await,
        before,
        "unchanged by the dead lease"
    );
    // The taker's answers are recorded as attempt 1; the count stays visible.
    let done = ok(
        C,
        "complete under the takeover",
        s.complete_attempt(
            &completion(
                &before,
                "t1",
                vec![
                    answer(RELAYS[0], Outcome::Accepted),
                    answer(RELAYS[1], Outcome::Accepted),
                ],
            ),
            &fixture_retry(),
            400,
        )
        .await,
    );
    check_eq!(C, done.stage, Stage::Satisfied, "delivered");
    check_eq!(C, done.attempts, 1, "attempt 1");
    check!(
        C,
        done.evidence.iter().all(|e| e.attempt == 1),
        "evidence of attempt 1"
    );
    check_eq!(C, done.takeovers, 1, "the takeover stays visible");

    // A live orphan past its deadline is exhausted as `expired`, as on claim.
    let plan = fixture_plan(6, &RELAYS[..1], Policy::All).with_deadline_ms(Some(1_000));
    let late = ok(C, "enqueue", s.enqueue(plan, 500).await).record.id;
    let leased = ok(
        C,
        "claim",
        s.claim(&fixture_claim("dead2", "l-dead2", 1, 10_000), 500)
            .await,
    );
    check_eq!(
        C,
        leased.first().map(|r| r.id.as_str()),
        Some(late.as_str()),
        "dead2 claims #6"
    );
    let ended = ok(
        C,
        "take_over",
        s.take_over(&fixture_claim("me", "t4", 256, 10_000), 1_000)
            .await,
    );
    check_eq!(C, ended.len(), 1, "only #6: {ended:?}");
    check_eq!(
        C,
        (ended[0].stage, ended[0].reason),
        (Stage::Exhausted, Some(StopReason::Expired)),
        "exhausted as expired"
    );
    check_eq!(
        C,
        must_get(C, s, &late).await,
        ended[0],
        "stored as answered"
    );
}

/// A claim request for `owner`/`lease` filtered by `lanes` and `relays`.
pub fn filtered_claim(lease: &str, limit: u32, lanes: &[&str], relays: &[&str]) -> ClaimRequest {
    ClaimRequest {
        lanes: lanes.iter().map(|l| l.to_string()).collect(),
        relays: relays.iter().map(|r| r.to_string()).collect(),
        ..fixture_claim("owner", lease, limit, 10_000)
    }
}

fn ids_of(records: &[Record]) -> Vec<&str> {
    records.iter().map(|r| r.id.as_str()).collect()
}

/// Claims take `high` before `normal` before `low`, then the earliest due, then the
/// oldest: a backlog of any size in a lower priority never delays a higher one, and a
/// retried record keeps its priority. Lane and priority are stored and read back.
pub async fn claim_priority_order<S: Store>(s: &S) {
    const C: &str = "claim_priority_order";
    // A backlog of low-priority records, all due before anything else.
    for n in 1..=6u32 {
        ok(
            C,
            "enqueue low",
            s.enqueue(
                fixture_plan(n, &RELAYS[..1], Policy::All)
                    .with_id(format!("low{n}"))
                    .with_priority(Priority::Low),
                u64::from(n),
            )
            .await,
        );
    }
    for (id, n, t, p) in [
        ("norm2", 10, 30, Priority::Normal),
        ("norm1", 11, 20, Priority::Normal),
        ("high2", 12, 50, Priority::High),
        ("high1", 13, 40, Priority::High),
    ] {
        let e = ok(
            C,
            "enqueue",
            s.enqueue(
                fixture_plan(n, &RELAYS[..1], Policy::All)
                    .with_id(id)
                    .with_priority(p)
                    .with_lane("ui"),
                t,
            )
            .await,
        );
        check_eq!(
            C,
            (e.record.priority, e.record.lane.as_str()),
            (p, "ui"),
            "{id} stored"
        );
    }
    check_eq!(
        C,
        must_get(C, s, "low1").await.lane,
        crate::core::DEFAULT_LANE,
        "the default lane"
    );
    let mut order = Vec::new();
    for i in 0..4 {
        let got = ok(
            C,
            "claim",
            s.claim(&fixture_claim("o", &format!("p{i}"), 2, 10_000), 100)
                .await,
        );
        order.extend(got.iter().map(|r| r.id.clone()));
    }
    check_eq!(
        C,
        order,
        ["high1", "high2", "norm1", "norm2", "low1", "low2", "low3", "low4"],
        "priority, then due, across batches"
    );
    // high1 fails and comes back retryable; a low record is due earlier, yet high1
    // still goes first once it is due.
    let high1 = must_get(C, s, "high1").await;
    let lease = high1.lease.as_ref().expect("lease").id.clone();
    let back = ok(
        C,
        "complete",
        s.complete_attempt(
            &completion(&high1, &lease, vec![answer(RELAYS[0], Outcome::Error)]),
            &fixture_retry(),
            200,
        )
        .await,
    );
    check_eq!(
        C,
        back.priority,
        Priority::High,
        "retryable keeps its priority"
    );
    let at = back.due_ms.expect("due");
    let next = ok(
        C,
        "claim",
        s.claim(&fixture_claim("o", "p9", 1, 10_000), at).await,
    );
    check_eq!(
        C,
        ids_of(&next),
        ["high1"],
        "retried high before the low backlog"
    );
    check_eq!(
        C,
        ok(C, "next_due", s.next_due().await),
        Some(5),
        "next due is low5's"
    );
}

/// `lanes` and `relays` filters: a claim takes only records of those lanes that still
/// wait for one of those relays, and leases the attempt for those relays only; the other
/// targets get no evidence, and the record is due again at once for them. Bad filters
/// are typed errors that change nothing. A lease held by a filtered claim keeps an
/// unfiltered one out, and the other way round; takeovers respect the filters.
pub async fn filtered_claims<S: Store>(s: &S) {
    const C: &str = "filtered_claims";
    let [a, b, c] = RELAYS;
    for (id, n, lane, targets) in [
        ("dm1", 1, "dm", vec![a, b]),
        ("bulk1", 2, "bulk", vec![a]),
        ("bulk2", 3, "bulk", vec![c]),
        ("plain", 4, crate::core::DEFAULT_LANE, vec![b, c]),
    ] {
        ok(
            C,
            "enqueue",
            s.enqueue(
                fixture_plan(n, &targets, Policy::All)
                    .with_id(id)
                    .with_lane(lane),
                u64::from(n),
            )
            .await,
        );
    }
    for (what, request) in [
        ("a bad lane", filtered_claim("x", 5, &["no spaces"], &[])),
        ("an empty relay", filtered_claim("x", 5, &[], &[""])),
    ] {
        err_code(C, what, s.claim(&request, 100).await, "invalid_argument");
    }
    let many: Vec<String> = (0..65).map(|i| format!("l{i}")).collect();
    let request = ClaimRequest {
        lanes: many,
        ..filtered_claim("x", 5, &[], &[])
    };
    err_code(
        C,
        "65 lanes",
        s.claim(&request, 100).await,
        "invalid_argument",
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).pending,
        4,
        "bad filters claimed nothing"
    );
    // Lanes.
    let got = ok(
        C,
        "claim bulk",
        s.claim(&filtered_claim("l1", 5, &["bulk"], &[]), 100).await,
    );
    check_eq!(C, ids_of(&got), ["bulk1", "bulk2"], "only the bulk lane");
    for r in &got {
        check_eq!(
            C,
            r.lease.as_ref().and_then(|l| l.relays.clone()),
            None,
            "unscoped"
        );
    }
    let none = ok(
        C,
        "claim bulk again",
        s.claim(&filtered_claim("l2", 5, &["bulk"], &[]), 100).await,
    );
    check!(
        C,
        none.is_empty(),
        "a lease is respected by the same filter"
    );
    // Relays: only records that wait for b; the attempt is for b only.
    let got = ok(
        C,
        "claim b",
        s.claim(&filtered_claim("l3", 5, &[], &[b]), 100).await,
    );
    check_eq!(C, ids_of(&got), ["dm1", "plain"], "records waiting for b");
    let dm1 = got[0].clone();
    check_eq!(
        C,
        dm1.lease.as_ref().and_then(|l| l.relays.clone()),
        Some(vec![b.to_string()]),
        "the attempt is scoped to b"
    );
    let none = ok(
        C,
        "unfiltered",
        s.claim(&fixture_claim("o", "l4", 5, 10_000), 100).await,
    );
    check!(
        C,
        none.is_empty(),
        "filtered leases keep an unfiltered claim out: {none:?}"
    );
    err_code(
        C,
        "an answer of a relay outside the scope",
        s.complete_attempt(
            &completion(&dm1, "l3", vec![answer(a, Outcome::Accepted)]),
            &fixture_retry(),
            110,
        )
        .await,
        "invalid_argument",
    );
    check_eq!(
        C,
        must_get(C, s, "dm1").await,
        dm1,
        "a refused completion changes nothing"
    );
    let done = ok(
        C,
        "complete b",
        s.complete_attempt(
            &completion(&dm1, "l3", vec![answer(b, Outcome::Accepted)]),
            &fixture_retry(),
            120,
        )
        .await,
    );
    check_eq!(C, done.stage, Stage::Retryable, "a still waits");
    check_eq!(
        C,
        done.due_ms,
        Some(120),
        "due at once for a, which was left out"
    );
    check!(
        C,
        done.evidence.iter().all(|e| e.target == b),
        "no evidence for a: {:?}",
        done.evidence
    );
    check_eq!(
        C,
        done.unsettled_targets(),
        [a.to_string()],
        "a is still open"
    );
    check!(
        C,
        !done.waits_for(b) && done.waits_for(a),
        "waits for a only"
    );
    // A failure inside the scope backs the record off as usual.
    let plain = must_get(C, s, "plain").await;
    let backed = ok(
        C,
        "complete plain",
        s.complete_attempt(
            &completion(&plain, "l3", vec![answer(b, Outcome::Error)]),
            &fixture_retry(),
            120,
        )
        .await,
    );
    check_eq!(
        C,
        backed.due_ms,
        Some(1_120),
        "backoff after a failure in scope"
    );
    check!(
        C,
        backed.evidence.iter().all(|e| e.target == b),
        "c untouched: {:?}",
        backed.evidence
    );
    // The unfiltered claim now takes dm1 (for a); a claim for b finds nothing waiting.
    let none = ok(
        C,
        "claim b again",
        s.claim(&filtered_claim("l5", 5, &[], &[b]), 130).await,
    );
    check!(C, none.is_empty(), "nothing due waits for b: {none:?}");
    let got = ok(
        C,
        "unfiltered",
        s.claim(&fixture_claim("o", "l6", 5, 10_000), 130).await,
    );
    check_eq!(C, ids_of(&got), ["dm1"], "dm1 is due for a");
    check_eq!(
        C,
        got[0].lease.as_ref().and_then(|l| l.relays.clone()),
        None,
        "unscoped"
    );
    // An unfiltered lease keeps a filtered claim out.
    let none = ok(
        C,
        "claim dm",
        s.claim(&filtered_claim("l7", 5, &["dm"], &[]), 130).await,
    );
    check!(C, none.is_empty(), "unfiltered lease respected: {none:?}");
    // Takeovers respect the filters: the bulk leases (owner `owner`) are orphans for
    // `heir`, but only those of the lanes it asks for.
    let heir = ClaimRequest {
        owner: "heir".into(),
        ..filtered_claim("l8", 5, &["dm"], &[])
    };
    let taken = ok(C, "take over dm", s.take_over(&heir, 140).await);
    check!(
        C,
        taken.iter().all(|r| r.lane == "dm"),
        "dm only: {:?}",
        ids_of(&taken)
    );
    let heir = ClaimRequest {
        owner: "heir".into(),
        ..filtered_claim("l9", 5, &["bulk"], &[c])
    };
    let taken = ok(C, "take over bulk for c", s.take_over(&heir, 140).await);
    check_eq!(C, ids_of(&taken), ["bulk2"], "bulk and waiting for c");
    check_eq!(
        C,
        taken[0].lease.as_ref().and_then(|l| l.relays.clone()),
        Some(vec![c.to_string()]),
        "scoped takeover"
    );
}

/// `list` and `lane_status` by lane: pages in list order with a cursor, by stage too;
/// counts per stage of one lane. A bad lane name is a typed error.
pub async fn lanes_list_and_status<S: Store>(s: &S) {
    const C: &str = "lanes_list_and_status";
    for n in 1..=7u32 {
        let lane = if n % 2 == 0 { "even" } else { "odd" };
        ok(
            C,
            "enqueue",
            s.enqueue(
                fixture_plan(n, &RELAYS[..1], Policy::All)
                    .with_id(format!("r{n}"))
                    .with_lane(lane),
                u64::from(10 - n),
            )
            .await,
        );
    }
    // r1 (odd) is cancelled.
    ok(C, "cancel", s.cancel("r1", 20).await);
    let q = |lane: &str, stage: Option<Stage>, limit: u32, after: Option<&str>| ListQuery {
        stage,
        limit,
        after: after.map(str::to_string),
        lane: Some(lane.to_string()),
    };
    let page = ok(C, "list odd", s.list(&q("odd", None, 2, None)).await);
    check_eq!(C, ids_of(&page), ["r7", "r5"], "odd lane, list order");
    let page = ok(
        C,
        "list odd 2",
        s.list(&q("odd", None, 5, Some("r5"))).await,
    );
    check_eq!(C, ids_of(&page), ["r3", "r1"], "after the cursor");
    let page = ok(
        C,
        "list odd pending",
        s.list(&q("odd", Some(Stage::Pending), 5, None)).await,
    );
    check_eq!(C, ids_of(&page), ["r7", "r5", "r3"], "odd and pending");
    let page = ok(
        C,
        "list even cancelled",
        s.list(&q("even", Some(Stage::Cancelled), 5, None)).await,
    );
    check!(C, page.is_empty(), "no even record is cancelled");
    let page = ok(C, "list unknown", s.list(&q("none", None, 5, None)).await);
    check!(C, page.is_empty(), "an unknown lane is empty");
    let odd = ok(C, "lane_status odd", super::lane_status(s, "odd").await);
    check_eq!(
        C,
        (odd.pending, odd.cancelled, odd.total()),
        (3, 1, 4),
        "odd counts"
    );
    let even = ok(C, "lane_status even", super::lane_status(s, "even").await);
    check_eq!(C, (even.pending, even.total()), (3, 3), "even counts");
    let none = ok(
        C,
        "lane_status default",
        super::lane_status(s, crate::core::DEFAULT_LANE).await,
    );
    check_eq!(C, none.total(), 0, "nothing in the default lane");
    err_code(
        C,
        "lane_status bad",
        super::lane_status(s, "a b").await,
        "invalid_argument",
    );
    err_code(
        C,
        "list bad lane",
        s.list(&q("", None, 5, None)).await,
        "invalid_argument",
    );
    err_code(
        C,
        "enqueue bad lane",
        s.enqueue(
            fixture_plan(50, &RELAYS[..1], Policy::All).with_lane("é"),
            30,
        )
        .await,
        "invalid_argument",
    );
    check_eq!(
        C,
        ok(C, "status", s.status().await).total(),
        7,
        "a bad enqueue wrote nothing"
    );
    // Lane and priority belong to the plan: the same plan in another lane conflicts.
    err_code(
        C,
        "another lane",
        s.enqueue(
            fixture_plan(2, &RELAYS[..1], Policy::All)
                .with_id("r2")
                .with_lane("odd"),
            30,
        )
        .await,
        "plan_conflict",
    );
    let replay = ok(
        C,
        "same lane",
        s.enqueue(
            fixture_plan(2, &RELAYS[..1], Policy::All)
                .with_id("r2")
                .with_lane("even"),
            30,
        )
        .await,
    );
    check_eq!(
        C,
        replay.outcome,
        EnqueueOutcome::Replay,
        "the same plan replays"
    );
}

/// The plans of `records` as an import brings them in ([`crate::core::import::plan_for`]).
fn imports(case: &str, records: &[Record], now: u64) -> Vec<Plan> {
    records
        .iter()
        .map(|r| {
            ok(
                case,
                "plan_for",
                crate::core::import::plan_for(r.clone(), now),
            )
        })
        .collect()
}

/// An import (records of another outbox, enqueued with their state): new records are
/// stored as they were there (a leased one unleased, its attempt count kept), the same
/// records again replay and change nothing, another plan under an id conflicts and
/// writes nothing, and the queue's Nostr rules hold across the two outboxes.
pub async fn import_brings_records_as_they_are<S: Store>(s: &S) {
    const C: &str = "import_brings_records_as_they_are";
    let other = super::MemoryStore::in_memory();
    let profile = |n, who, at| nostr_plan(nostr_event(n, who, 0, at, "", &[]));
    // There: a note leased by a flusher, a delivered note, Alice's profile v2 (waiting),
    // Bob's old profile, a cancelled note.
    ok(
        C,
        "enqueue there",
        other
            .enqueue_many(
                vec![
                    fixture_plan(1, &RELAYS, Policy::All),
                    fixture_plan(2, &RELAYS, Policy::Any).with_stop_when_satisfied(true),
                    profile(3, ALICE, 200),
                    profile(4, BOB, 50),
                    fixture_plan(5, &RELAYS, Policy::All),
                ],
                1_000,
            )
            .await,
    );
    ok(C, "cancel there", other.cancel(&id_of(5), 1_001).await);
    let claimed = ok(
        C,
        "claim there",
        other
            .claim(&fixture_claim("there", "t1", 2, 60_000), 1_002)
            .await,
    );
    check_eq!(C, claimed.len(), 2, "notes 1 and 2 are leased there");
    let two = claimed.iter().find(|r| r.id == id_of(2)).cloned();
    let Some(two) = two else {
        panic!("store conformance case `{C}`: note 2 was not claimed")
    };
    ok(
        C,
        "deliver 2 there",
        other
            .complete_attempt(
                &completion(&two, "t1", vec![answer(RELAYS[0], Outcome::Accepted)]),
                &fixture_retry(),
                1_003,
            )
            .await,
    );
    let exported = ok(
        C,
        "list there",
        other
            .list(&ListQuery {
                limit: 100,
                ..ListQuery::default()
            })
            .await,
    );
    check_eq!(C, exported.len(), 5, "five records there");
    // Here: Alice's profile v1 and Bob's newer profile wait.
    ok(
        C,
        "enqueue here",
        s.enqueue_many(vec![profile(6, ALICE, 100), profile(7, BOB, 300)], 2_000)
            .await,
    );
    let answers = ok(
        C,
        "import",
        s.enqueue_many(imports(C, &exported, 3_000), 3_000).await,
    );
    let outcome = |n: u32| {
        answers
            .iter()
            .find(|a| a.record.id == id_of(n))
            .map(|a| a.outcome)
    };
    for n in [1, 2, 3, 5] {
        check_eq!(
            C,
            outcome(n),
            Some(EnqueueOutcome::Created),
            "record {n} is created"
        );
    }
    check_eq!(
        C,
        outcome(4),
        Some(EnqueueOutcome::Superseded),
        "Bob's old profile arrives superseded by the newer one here"
    );
    let alice = answers
        .iter()
        .find(|a| a.record.id == id_of(3))
        .map(|a| a.withdrawn.iter().map(|r| r.id.clone()).collect::<Vec<_>>());
    check_eq!(
        C,
        alice,
        Some(vec![id_of(6)]),
        "Alice's v2 withdraws v1 here"
    );
    check_superseded(
        C,
        &must_get(C, s, &id_of(6)).await,
        StopReason::Superseded,
        3,
    );
    // The leased note arrives unleased and claimable at once, for its first attempt.
    let one = must_get(C, s, &id_of(1)).await;
    check_eq!(
        C,
        (one.stage, one.lease.is_none(), one.attempts, one.due_ms),
        (Stage::Pending, true, 0, Some(3_000)),
        "the leased note arrives unleased"
    );
    // The others arrive as they were there.
    for n in [2, 5] {
        let there = exported.iter().find(|r| r.id == id_of(n));
        check_eq!(
            C,
            Some(&must_get(C, s, &id_of(n)).await),
            there,
            "record {n} arrives as it was"
        );
    }
    let before = ok(
        C,
        "list here",
        s.list(&ListQuery {
            limit: 100,
            ..ListQuery::default()
        })
        .await,
    );
    // The same records again: replays, nothing written.
    let again = ok(
        C,
        "import again",
        s.enqueue_many(imports(C, &exported, 4_000), 4_000).await,
    );
    check!(
        C,
        again.iter().all(|a| a.outcome == EnqueueOutcome::Replay),
        "a second import replays: {again:?}"
    );
    // Another plan under an id here: a conflict, nothing written.
    let changed = other_plan(C, &exported[0]).await;
    let conflict = s
        .enqueue_many(imports(C, &[exported[1].clone(), changed], 5_000), 5_000)
        .await;
    err_code(C, "import of another plan", conflict, "plan_conflict");
    let after = ok(
        C,
        "list here",
        s.list(&ListQuery {
            limit: 100,
            ..ListQuery::default()
        })
        .await,
    );
    check_eq!(
        C,
        after,
        before,
        "replays and a refused import change nothing"
    );
    let claimed = ok(
        C,
        "claim here",
        s.claim(&fixture_claim("here", "h1", 10, 60_000), 6_000)
            .await,
    );
    let one = claimed
        .iter()
        .find(|r| r.id == id_of(1))
        .and_then(|r| r.lease.as_ref())
        .map(|l| l.attempt);
    check_eq!(
        C,
        one,
        Some(1),
        "the imported note is claimed here for attempt 1"
    );
    check!(
        C,
        !claimed
            .iter()
            .any(|r| [id_of(2), id_of(4), id_of(5), id_of(6)].contains(&r.id)),
        "settled, superseded and cancelled records are not claimed"
    );
}

/// A record with `r`'s id and event but another plan (two targets), as another outbox
/// would hold it.
async fn other_plan(case: &str, r: &Record) -> Record {
    let store = super::MemoryStore::in_memory();
    let plan = Plan::new(
        r.event.clone(),
        RELAYS[..2].iter().map(|t| t.to_string()).collect(),
        Policy::All,
    )
    .with_id(r.id.clone());
    ok(
        case,
        "enqueue another plan",
        store.enqueue(plan, 1_000).await,
    )
    .record
}
