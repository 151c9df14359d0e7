//! Lanes and priorities: how an application keeps a note it just wrote from waiting
//! behind a bulk backlog.
//!
//! - A **lane** is a name the application gives a record at enqueue (`"default"` when
//!   none): `"dm"`, `"backfill"`, `"relay:wss://new.example/"`. Flushes, lists and counts
//!   can be restricted to some lanes; a lane has no order of its own.
//! - A **priority** orders claims: among due records, `high` before `normal` before
//!   `low`, then the due time, then creation order ([`super::Record::claim_key`]). Stores
//!   index that order, so a claim reads one range per priority and never scans a
//!   backlog of lower priority.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::error::CoreError;

/// The lane of a record enqueued without one.
pub const DEFAULT_LANE: &str = "default";
/// The longest lane name, in bytes.
pub const MAX_LANE_LEN: usize = 64;
/// The most lanes (or relays) one filter may name.
pub const MAX_FILTER: usize = 64;

/// The claim priority of a record. Claims take `high` first, then `normal` (the
/// default), then `low`; within one priority, the earliest due first.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Before every other record that is due: what the person is waiting for (a note
    /// just written, a direct message).
    High,
    /// The default.
    #[default]
    Normal,
    /// After every other record that is due: backfills, rebroadcasts, reactions.
    Low,
}

impl Priority {
    /// Every priority, in claim order (`high` first).
    pub const ALL: [Priority; 3] = [Priority::High, Priority::Normal, Priority::Low];

    /// The claim rank: 0 for `high`, 1 for `normal`, 2 for `low`. Stores index it first
    /// in the claim order.
    pub fn rank(self) -> u8 {
        self as u8
    }

    /// The priority of `rank` ([`Priority::rank`]), if any.
    pub fn from_rank(rank: u8) -> Option<Priority> {
        Priority::ALL.get(rank as usize).copied()
    }

    /// The stable lowercase name used in JSON and JavaScript.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }

    /// The priority named `name` ([`Priority::as_str`]), or `invalid_argument` naming
    /// `field` and the accepted names.
    pub fn parse(field: &'static str, name: &str) -> Result<Priority, CoreError> {
        Priority::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| CoreError::arg(field, "must be \"high\", \"normal\" or \"low\""))
    }

    /// True for the default (`normal`).
    pub fn is_default(&self) -> bool {
        *self == Priority::Normal
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Checks a lane name: 1..=64 bytes of ASCII letters, digits and `._:/-`. The error
/// names `field`.
pub fn validate_lane(field: &'static str, lane: &str) -> Result<(), CoreError> {
    if lane.is_empty() || lane.len() > MAX_LANE_LEN {
        return Err(CoreError::arg(
            field,
            format!("must be 1..={MAX_LANE_LEN} bytes"),
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '/' | '-');
    if !lane.chars().all(allowed) {
        return Err(CoreError::arg(
            field,
            "may hold only ASCII letters, digits and . _ : / -",
        ));
    }
    Ok(())
}

/// The default lane, as an owned string (serde's `default`).
pub fn default_lane() -> String {
    DEFAULT_LANE.to_string()
}

/// True for the default lane (serde's `skip_serializing_if`: stored documents leave
/// the default out, so records written before lanes existed read back unchanged).
pub fn is_default_lane(lane: &str) -> bool {
    lane == DEFAULT_LANE
}

/// [`is_default_lane`] for serde's `skip_serializing_if`, which passes `&String`.
#[allow(clippy::ptr_arg)]
pub fn is_default_lane_str(lane: &String) -> bool {
    is_default_lane(lane)
}

/// Checks a filter of lanes (at most [`MAX_FILTER`], each valid). Empty means every lane.
pub fn validate_lanes(field: &'static str, lanes: &[String]) -> Result<(), CoreError> {
    if lanes.len() > MAX_FILTER {
        return Err(CoreError::arg(
            field,
            format!("may name at most {MAX_FILTER} lanes"),
        ));
    }
    lanes.iter().try_for_each(|l| validate_lane(field, l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_order_by_rank_and_round_trip_their_names() {
        assert!(Priority::High < Priority::Normal && Priority::Normal < Priority::Low);
        for p in Priority::ALL {
            assert_eq!(Priority::from_rank(p.rank()), Some(p));
            assert_eq!(Priority::parse("priority", p.as_str()), Ok(p));
        }
        assert_eq!(Priority::from_rank(3), None);
        let e = Priority::parse("priority", "urgent").unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
        assert!(e.to_string().contains("priority"), "{e}");
    }

    #[test]
    fn unit_enums_read_their_names_as_the_derives_did() {
        use super::super::{Stage, StopReason};
        for p in Priority::ALL {
            let json = serde_json::to_string(&p).expect("write");
            assert_eq!(serde_json::from_str::<Priority>(&json).expect("read"), p);
            let map = format!("{{{json}:null}}");
            assert_eq!(serde_json::from_str::<Priority>(&map).expect("map form"), p);
        }
        for s in Stage::ALL {
            let json = serde_json::to_string(&s).expect("write");
            assert_eq!(serde_json::from_str::<Stage>(&json).expect("read"), s);
        }
        for r in StopReason::ALL {
            let json = serde_json::to_string(&r).expect("write");
            assert_eq!(json, format!("\"{}\"", r.as_str()));
            assert_eq!(serde_json::from_str::<StopReason>(&json).expect("read"), r);
        }
        let e = serde_json::from_str::<Priority>("\"urgent\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown variant `urgent`, expected one of `high`, `normal`, `low`"),
            "{e}"
        );
        assert!(serde_json::from_str::<Stage>("7").is_err());
        assert!(serde_json::from_str::<StopReason>("\"max_attempts\"").is_err());
    }

    #[test]
    fn lane_names_are_checked() {
        for ok in [
            "default",
            "dm",
            "backfill:wss://relay.example/",
            "a",
            &"x".repeat(64),
        ] {
            assert_eq!(validate_lane("lane", ok), Ok(()), "{ok}");
        }
        for bad in ["", "with space", "é", "tab\t", &"x".repeat(65)] {
            let e = validate_lane("lane", bad).unwrap_err();
            assert_eq!(e.code(), "invalid_argument", "{bad}");
        }
        let many: Vec<String> = (0..=MAX_FILTER).map(|i| format!("l{i}")).collect();
        assert!(validate_lanes("lanes", &many).is_err());
        assert!(validate_lanes("lanes", &many[..MAX_FILTER]).is_ok());
    }
}
