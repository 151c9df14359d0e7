//! The pure outbox state machine: records, stages, leases, attempts, evidence,
//! policies and the retry schedule. It performs no I/O, reads no clock and draws no
//! randomness: callers pass `now_ms` and random inputs as arguments. Stores persist
//! what these functions return; they never decide a transition themselves.
//!
//! See `docs/CORE.md` for the record model, the transition table and the claim-order
//! contract that every store must keep.

pub mod envelope;
pub mod error;
pub mod group;
pub mod heartbeat;
pub mod import;
pub mod lane;
pub mod machine;
pub mod order;
pub mod outcome;
pub mod plan;
pub mod policy;
pub mod record;
pub mod retry;
pub mod semantics;
pub mod signal;

pub use envelope::{EventEnvelope, EventMeta};
pub use error::{CoreError, ErrorCode};
pub use group::{group_plans, GroupRef};
pub use heartbeat::Heartbeat;
pub use lane::{Priority, DEFAULT_LANE};
pub use machine::{
    cancel, check_lease, claim, complete_attempt, decide_enqueue, is_purgeable, new_record,
    orphans, record_signing, relay_back, release, reschedule, retry, supersede, take_over, Change,
    ClaimRequest, Claimed, Completion, EnqueueDecision, EnqueueOutcome, Enqueued, ListQuery, Route,
    Signed, Signing, StageCounts, TargetResult,
};
pub use outcome::{Outcome, RejectReason};
pub use plan::{Plan, FUTURE_TOLERANCE_MS};
pub use policy::{Policy, Satisfaction, TargetState};
pub use record::{
    claim_order, list_order, newer_message, Evidence, Lease, Record, RecordOrder, Stage,
    StopReason, NEEDS_RESOLVER, NEEDS_SIGNER, READ_BACK, RESOLVER, SIGNER, UNANSWERED,
};
pub use retry::{coalesce_due, RetryConfig, COALESCE_MAX_MS};
pub use semantics::{decide_enqueues, BatchDecision, Lookups};
pub use signal::Signal;
