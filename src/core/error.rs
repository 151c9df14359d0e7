//! The typed errors of the state machine, and [`ErrorCode`], every stable code of the
//! JavaScript API. Every variant has a stable snake_case [`CoreError::code`] that crosses
//! to JavaScript unchanged. This module only names failures; it decides nothing.

use thiserror::Error;

use super::record::Stage;

/// Declares [`ErrorCode`]: each variant once, with its code.
macro_rules! error_codes {
    ($($(#[$m:meta])* $variant:ident = $code:literal,)*) => {
        /// Every stable code of the JavaScript API (`OutboxError.code`): the one list.
        /// The JavaScript layer takes its codes from it; the errors of the layers below
        /// ([`CoreError::code`], `StoreError::code`, the nostr errors' and
        /// `WsConfigError::code`) write theirs as strings (so the .wasm stays as it was),
        /// each one of these. The TypeScript union `OutboxErrorCode` (`src/js/types.rs`) and the
        /// codes table of docs/API.md hold the same codes. `tests/core/api_lists.rs` checks all
        /// of it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ErrorCode {
            $($(#[$m])* $variant,)*
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The snake_case code as JavaScript sees it. Inlined, so that a code named
            /// at a call site costs its string, not a lookup in a table of every code.
            #[inline(always)]
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)*
                }
            }
        }
    };
}

error_codes! {
    /// Not a signed NIP-01 event.
    InvalidEvent = "invalid_event",
    /// A relay URL the outbox refuses.
    InvalidRelayUrl = "invalid_relay_url",
    /// An options object that is not one, has an unknown key or a value of the wrong type.
    InvalidOptions = "invalid_options",
    /// An argument of the wrong type or out of range.
    InvalidArgument = "invalid_argument",
    /// A malformed item id.
    InvalidItemId = "invalid_item_id",
    /// No relays, or too many.
    InvalidTargets = "invalid_targets",
    /// A policy that is unknown or does not fit the targets.
    InvalidPolicy = "invalid_policy",
    /// A setting out of range.
    InvalidConfig = "invalid_config",
    /// A line of an import that is not one of an export (its number in `details.line`).
    InvalidImport = "invalid_import",
    /// The id holds a different plan.
    PlanConflict = "plan_conflict",
    /// No record with this id.
    NotFound = "not_found",
    /// `retry` of a record that cannot be retried.
    NotRetryable = "not_retryable",
    /// `cancel` of a terminal record.
    AlreadyTerminal = "already_terminal",
    /// `reschedule` of a record that is being sent now (leased).
    InFlight = "in_flight",
    /// An event whose NIP-40 expiration has passed.
    EventExpired = "event_expired",
    /// A lost claim: the lease expired (the flusher's internals).
    LeaseExpired = "lease_expired",
    /// A lost claim: the record changed (the flusher's internals).
    RevisionConflict = "revision_conflict",
    /// A claim of a record that is not due (the flusher's internals).
    NotReady = "not_ready",
    /// The storage quota is full.
    QuotaExceeded = "quota_exceeded",
    /// A schema upgrade blocked by another open connection.
    StorageBlocked = "storage_blocked",
    /// A database written by a newer version of this library.
    StorageVersionTooNew = "storage_version_too_new",
    /// No storage of the kind asked for in this runtime or build.
    StorageUnavailable = "storage_unavailable",
    /// A stored record that cannot be read.
    CorruptRecord = "corrupt_record",
    /// Any other storage failure.
    Storage = "storage",
    /// The outbox was closed.
    Closed = "closed",
    /// `handleSync`: records still wait for a retry.
    SyncIncomplete = "sync_incomplete",
    /// No cryptographic random source.
    NoRandomSource = "no_random_source",
    /// The edge build's `init()` found no module to load (written by the package's
    /// JavaScript entry, `scripts/package.mjs`).
    InitFailed = "init_failed",
    /// The runtime lacks something the outbox needs.
    Unsupported = "unsupported",
}

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
    /// The record is being sent now (leased): its schedule cannot move until the
    /// attempt ends.
    #[error("item `{id}` is being sent now; reschedule it once this attempt has ended")]
    InFlight {
        /// The item id.
        id: String,
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
    /// The stable snake_case code used in JSON and JavaScript: one of [`ErrorCode`]'s,
    /// written here as a string (through `ErrorCode::as_str` this match compiled to more
    /// .wasm); `tests/core/api_lists.rs` checks that each is in the list.
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
            CoreError::InFlight { .. } => "in_flight",
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
