//! The store conformance suite: generic async checks that every [`Store`] must pass,
//! run natively against [`super::MemoryStore`] and in a browser against IndexedDB.
//! It uses no threads, sleeps or clock (every time is an explicit `now_ms`), so it
//! runs unchanged under wasm-bindgen-test. A failure panics naming its case. One file
//! per theme; the fixtures in `fixtures.rs`. Built for tests only: the crate's own unit
//! tests, and dependents' (the crate's integration tests among them) with the `testing`
//! feature.

use std::fmt::Debug;
use std::future::Future;

use crate::core::semantics::{self, EPHEMERAL_DEADLINE_MS};
use crate::core::{
    ClaimRequest, Completion, EnqueueOutcome, Enqueued, EventEnvelope, EventMeta, Heartbeat,
    ListQuery, Lookups, Outcome, Plan, Policy, Priority, Record, RejectReason, RetryConfig,
    Satisfaction, Stage, StopReason, TargetResult,
};

use super::{Store, StoreError};

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

pub(super) fn id_of(n: u32) -> String {
    format!("{n:064x}")
}

mod claims;
mod delivery;
mod drafts;
mod enqueue;
mod fixtures;
mod groups;
mod import;
mod nostr;
mod records;
mod routes;
mod schedule;

pub use claims::*;
pub use delivery::*;
pub use drafts::*;
pub use enqueue::*;
pub use fixtures::*;
pub use groups::*;
pub use import::*;
pub use nostr::*;
pub use records::*;
pub use routes::*;
pub use schedule::*;

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
            groups_enqueue_whole_each_member_stored,
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
            requests_to_vanish_withdraw_the_authors_queue,
            batches_apply_the_rules_in_order,
            ephemeral_and_expired_events,
            related_finds_versions_and_accepting_relays,
            take_over_orphaned_leases,
            takeover_by_heartbeat_takes_only_lapsed_owners,
            claim_priority_order,
            filtered_claims,
            lanes_list_and_status,
            import_brings_records_as_they_are,
            scheduled_records_wait_for_their_time,
            drafts_are_claimed_only_to_be_signed,
            routes_wait_for_a_resolver,
            prepared_claims_keep_priority_order,
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
