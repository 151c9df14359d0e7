//! What one relay answered to one publish of one event: the typed outcome that
//! evidence records. Shared by the Nostr layer (which classifies relay `OK` messages)
//! and the state machine (which decides retries from it).

use serde::{Deserialize, Serialize};

/// Why a relay refused an event with `OK false` and a terminal prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RejectReason {
    /// `blocked:` — the relay will not take events from this author or of this kind.
    Blocked,
    /// `invalid:` — the relay judged the event malformed.
    Invalid,
    /// `restricted:` — the relay only accepts writes from allowed users.
    Restricted,
    /// `pow:` — the event lacks the proof of work the relay requires.
    Pow,
    /// `mute:` — the relay silently drops this event.
    Mute,
    /// `OK false` with no known prefix.
    Other,
    /// Not sent: the relay holds a newer version of this replaceable or addressable
    /// event, found by the outbox's check before sending ([`super::StopReason::RemoteNewer`]).
    /// Never made from a relay's words.
    Newer,
    /// Not sent: the relay's NIP-11 information document states a limit the signed
    /// event can never meet (message too long, too many tags, content too long, too
    /// little proof of work, `created_at` too old); the evidence message says which.
    /// Never made from a relay's words.
    Limit,
}

impl RejectReason {
    /// Every reason, in declaration order.
    pub const ALL: [RejectReason; 8] = [
        RejectReason::Blocked,
        RejectReason::Invalid,
        RejectReason::Restricted,
        RejectReason::Pow,
        RejectReason::Mute,
        RejectReason::Other,
        RejectReason::Newer,
        RejectReason::Limit,
    ];

    /// The stable string used in JSON and JavaScript.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::Blocked => "blocked",
            RejectReason::Invalid => "invalid",
            RejectReason::Restricted => "restricted",
            RejectReason::Pow => "pow",
            RejectReason::Mute => "mute",
            RejectReason::Other => "other",
            RejectReason::Newer => "newer",
            RejectReason::Limit => "limit",
        }
    }
}

/// The typed result of publishing one event to one relay once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "reason")]
pub enum Outcome {
    /// `OK true`: the relay stored the event.
    Accepted,
    /// `OK true` with `duplicate:`: the relay already had it. Counts as accepted.
    Duplicate,
    /// `OK false` with a terminal prefix: retrying will not help.
    Rejected(RejectReason),
    /// `OK false` with `rate-limited:`: retry later, slower.
    RateLimited,
    /// `OK false` with `auth-required:`: retry once authenticated (NIP-42).
    AuthRequired,
    /// `OK false` with `error:`: a relay-side failure; retry later.
    Error,
    /// No `OK` arrived within the publish timeout.
    Timeout,
    /// The relay could not be reached, or the connection closed before its `OK`.
    Unreachable,
    /// The target was not attempted in this attempt (e.g. the attempt was cut short).
    NotAttempted,
}

impl Outcome {
    /// Every kind of outcome, in declaration order (`rejected` with the reason
    /// `other`).
    pub const KINDS: [Outcome; 9] = [
        Outcome::Accepted,
        Outcome::Duplicate,
        Outcome::Rejected(RejectReason::Other),
        Outcome::RateLimited,
        Outcome::AuthRequired,
        Outcome::Error,
        Outcome::Timeout,
        Outcome::Unreachable,
        Outcome::NotAttempted,
    ];

    /// True when the relay has the event (`Accepted` or `Duplicate`).
    pub fn is_accepted(self) -> bool {
        matches!(self, Outcome::Accepted | Outcome::Duplicate)
    }

    /// True when the relay refused the event for good.
    pub fn is_terminal_rejection(self) -> bool {
        matches!(self, Outcome::Rejected(_))
    }

    /// True when the target is settled: accepted, or rejected for good. A settled
    /// target is never sent the event again by the same record.
    pub fn is_settled(self) -> bool {
        self.is_accepted() || self.is_terminal_rejection()
    }

    /// True when a later attempt may succeed.
    pub fn is_retryable(self) -> bool {
        !self.is_settled()
    }

    /// The stable string used in JSON and JavaScript (`"rejected"` for every reason).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Duplicate => "duplicate",
            Outcome::Rejected(_) => "rejected",
            Outcome::RateLimited => "rateLimited",
            Outcome::AuthRequired => "authRequired",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::Unreachable => "unreachable",
            Outcome::NotAttempted => "notAttempted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_and_retryable_partition_outcomes() {
        for o in Outcome::KINDS {
            assert_ne!(o.is_settled(), o.is_retryable(), "{o:?}");
        }
        assert!(Outcome::Duplicate.is_accepted());
        assert!(!Outcome::RateLimited.is_settled());
    }

    #[test]
    fn outcomes_read_back_as_written() {
        for o in RejectReason::ALL.map(Outcome::Rejected).into_iter().chain([
            Outcome::Accepted,
            Outcome::NotAttempted,
            Outcome::RateLimited,
        ]) {
            let text = serde_json::to_string(&o).expect("json");
            assert_eq!(serde_json::from_str::<Outcome>(&text).expect("reads"), o);
        }
    }
}
