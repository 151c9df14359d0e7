//! The typed errors of the state machine. Every variant has a stable snake_case
//! [`CoreError::code`] that crosses to JavaScript unchanged. This module only names
//! failures; it decides nothing.

use thiserror::Error;

use super::record::Stage;

/// Why a state-machine operation refused its input. Nothing is changed when one of
/// these is returned.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CoreError {
    /// The item id is empty, too long, or has characters outside `[A-Za-z0-9._:-]`.
    #[error("invalid item id: {reason}")]
    InvalidItemId {
        /// What is wrong with it.
        reason: String,
    },
    /// The event envelope is malformed (bad id, empty raw text).
    #[error("invalid event: {reason}")]
    InvalidEvent {
        /// What is wrong with it.
        reason: String,
    },
    /// The target relay set is empty, too large, or holds an unusable entry.
    #[error("invalid targets: {reason}")]
    InvalidTargets {
        /// What is wrong with it.
        reason: String,
    },
    /// The satisfaction policy cannot be evaluated over the target set.
    #[error("invalid policy: {reason}")]
    InvalidPolicy {
        /// What is wrong with it.
        reason: String,
    },
    /// Any other argument out of range (limit, lease length, owner, lease id, report).
    #[error("invalid argument `{field}`: {reason}")]
    InvalidArgument {
        /// The argument's name.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A retry or flush configuration is inconsistent.
    #[error("invalid configuration `{field}`: {reason}")]
    InvalidConfig {
        /// The setting's name.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The item id already holds a different delivery plan.
    #[error("item `{id}` already exists with a different plan")]
    PlanConflict {
        /// The item id.
        id: String,
    },
    /// No record has this id.
    #[error("item `{id}` not found")]
    NotFound {
        /// The item id.
        id: String,
    },
    /// A lost claim: the caller's lease expired, was superseded by another claim, or
    /// never existed. The record was not changed.
    #[error("lease on item `{id}` is no longer held (expired or superseded)")]
    LeaseExpired {
        /// The item id.
        id: String,
    },
    /// The record changed since the caller read it (optimistic concurrency).
    #[error("item `{id}` is at revision {actual}, expected {expected}")]
    RevisionConflict {
        /// The item id.
        id: String,
        /// The revision the caller expected.
        expected: u64,
        /// The record's current revision.
        actual: u64,
    },
    /// The record cannot be claimed now (terminal, not yet due, or leased).
    #[error("item `{id}` is not ready to be claimed")]
    NotReady {
        /// The item id.
        id: String,
    },
    /// `retry` was asked of a record that is not exhausted, or whose deadline passed.
    #[error("item `{id}` cannot be retried: {reason}")]
    NotRetryable {
        /// The item id.
        id: String,
        /// Why not.
        reason: String,
    },
    /// The event's NIP-40 `expiration` has passed: relays would refuse it, so it is not
    /// enqueued.
    #[error("event `{id}` expired at {expiration} (NIP-40) and is not enqueued")]
    EventExpired {
        /// The event id.
        id: String,
        /// Its `expiration` tag, unix seconds.
        expiration: u64,
    },
    /// The record is already terminal (`satisfied`, `exhausted`, `cancelled` or
    /// `superseded`).
    #[error("item `{id}` is already {stage}")]
    AlreadyTerminal {
        /// The item id.
        id: String,
        /// Its terminal stage.
        stage: Stage,
    },
}

impl CoreError {
    /// The stable snake_case code used in JSON and JavaScript.
    pub fn code(&self) -> &'static str {
        match self {
            CoreError::InvalidItemId { .. } => "invalid_item_id",
            CoreError::InvalidEvent { .. } => "invalid_event",
            CoreError::InvalidTargets { .. } => "invalid_targets",
            CoreError::InvalidPolicy { .. } => "invalid_policy",
            CoreError::InvalidArgument { .. } => "invalid_argument",
            CoreError::InvalidConfig { .. } => "invalid_config",
            CoreError::PlanConflict { .. } => "plan_conflict",
            CoreError::NotFound { .. } => "not_found",
            CoreError::LeaseExpired { .. } => "lease_expired",
            CoreError::RevisionConflict { .. } => "revision_conflict",
            CoreError::NotReady { .. } => "not_ready",
            CoreError::NotRetryable { .. } => "not_retryable",
            CoreError::AlreadyTerminal { .. } => "already_terminal",
            CoreError::EventExpired { .. } => "event_expired",
        }
    }

    /// True for a lost claim: a late or stale writer whose result changed nothing.
    pub fn is_lost_claim(&self) -> bool {
        matches!(
            self,
            CoreError::LeaseExpired { .. } | CoreError::RevisionConflict { .. }
        )
    }

    pub(crate) fn arg(field: &'static str, reason: impl Into<String>) -> Self {
        CoreError::InvalidArgument {
            field,
            reason: reason.into(),
        }
    }

    pub(crate) fn config(field: &'static str, reason: impl Into<String>) -> Self {
        CoreError::InvalidConfig {
            field,
            reason: reason.into(),
        }
    }
}
