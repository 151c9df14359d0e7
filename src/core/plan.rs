//! The delivery plan: what the application asked for (item id, event, targets,
//! policy, attempt budget, deadline), its validation and normalization, and its
//! digest, the idempotency fingerprint. It never looks at stored state.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::envelope::EventEnvelope;
use super::error::CoreError;
use super::lane::{default_lane, is_default_lane, validate_lane, Priority, DEFAULT_LANE};
use super::policy::Policy;

/// The longest item id, in characters.
pub const MAX_ITEM_ID_LEN: usize = 128;
/// The most targets one record may have.
pub const MAX_TARGETS: usize = 64;
/// The longest target (relay URL), in bytes.
pub const MAX_TARGET_LEN: usize = 2_048;
/// The default attempt budget of a plan.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 10;
/// The largest attempt budget of a plan.
pub const MAX_ATTEMPTS_LIMIT: u32 = 1_000;

/// One delivery request: an event, where to send it, and when it counts as delivered.
///
/// Build it with [`Plan::new`] (item id = the event id) and the `with_*` methods;
/// [`Plan::normalize`] validates it and puts targets in canonical order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The item id: 1..=128 characters of `[A-Za-z0-9._:-]`. Defaults to the event id.
    pub id: String,
    /// The signed event, sent exactly as given.
    pub event: EventEnvelope,
    /// The target relay URLs, already normalized by the Nostr layer.
    pub targets: Vec<String>,
    /// When the record counts as delivered.
    pub policy: Policy,
    /// How many attempts before the record is exhausted (1..=1000).
    pub max_attempts: u32,
    /// An optional absolute deadline (unix ms) after which the record is exhausted as
    /// `expired`. The event's NIP-40 `expiration` also bounds it.
    pub deadline_ms: Option<u64>,
    /// The lane ([`super::lane`]): 1..=64 bytes of `[A-Za-z0-9._:/-]`, `"default"` when
    /// not given.
    #[serde(default = "default_lane")]
    pub lane: String,
    /// The claim priority (`normal` when not given).
    #[serde(default)]
    pub priority: Priority,
    /// Stop delivering at the policy's verdict: once the record is satisfied (or can no
    /// longer be), the targets still open are not tried again. `false` (the default):
    /// delivery goes on to every target that has not settled, until the deadline or
    /// the attempt budget ends it (stage `delivering`).
    #[serde(default)]
    pub stop_when_satisfied: bool,
    /// The size of its group ([`super::group`]) when it is a member of one: its item id
    /// is then `<group>:<index>` ([`super::group::group_plans`] sets both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_size: Option<u32>,
    /// Routing intents, resolved into relays when the record is due
    /// ([`crate::core::record_signing`], by the app's resolver): `outbox` (the
    /// author's NIP-65 write relays), `inbox` (the read relays of the pubkeys it tags),
    /// `dm` (NIP-17: the DM relays of the pubkeys it tags; one without a list makes the
    /// record `recipientNotReady`). Sorted, without repeats; with a route, `targets`
    /// may be empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route: Vec<String>,
    /// When to send it first (unix ms): not claimed before. `None`: at once. A schedule,
    /// not part of the delivery request: not in the digest (an enqueue of the same plan
    /// at another time is a replay; [`super::reschedule`] moves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before_ms: Option<u64>,
    /// The record an import brings in under this plan ([`super::import`]): when no
    /// record has the id, it is stored as it is instead of a new record. Not part of the
    /// digest (it must be this plan's record: [`super::import::plan_for`] checks it).
    #[serde(skip)]
    pub imported: Option<Box<super::Record>>,
}

impl Plan {
    /// A plan whose item id is the event id, with the default attempt budget and no
    /// deadline.
    pub fn new(event: EventEnvelope, targets: Vec<String>, policy: Policy) -> Plan {
        Plan {
            id: event.id.clone(),
            event,
            targets,
            policy,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            deadline_ms: None,
            lane: DEFAULT_LANE.to_string(),
            priority: Priority::Normal,
            stop_when_satisfied: false,
            group_size: None,
            route: Vec::new(),
            not_before_ms: None,
            imported: None,
        }
    }

    /// Sets when to send it first ([`Plan::not_before_ms`]).
    pub fn with_not_before_ms(mut self, not_before_ms: Option<u64>) -> Plan {
        self.not_before_ms = not_before_ms;
        self
    }

    /// Holds an event dated ahead of `now_ms` until its `created_at`, less
    /// [`FUTURE_TOLERANCE_MS`]: relays refuse events from the future (a NIP-11
    /// `created_at_upper_limit` can be a few seconds), and a refusal is terminal. The
    /// time becomes the plan's [`Plan::not_before_ms`] (so `list`, `reschedule` and
    /// `cancel` see a scheduled record). Only when the plan has no time of its own: an
    /// explicit `not_before_ms` is the app asking for another time (`0`: at once). An
    /// imported record keeps its own schedule.
    ///
    /// With `undo_until_ms` (an outbox's undo window, `holdMs`, ending then), such a plan
    /// waits until the later of the two.
    ///
    /// Refused (`invalid_argument`, field `event`) when the `created_at` time is at or
    /// after a deadline still ahead: the record could never be sent.
    pub fn hold_until_created_at(
        mut self,
        now_ms: u64,
        undo_until_ms: Option<u64>,
    ) -> Result<Plan, CoreError> {
        if self.not_before_ms.is_some() || self.imported.is_some() {
            return Ok(self);
        }
        self.not_before_ms = undo_until_ms;
        let Some(meta) = &self.event.meta else {
            return Ok(self);
        };
        let at = meta
            .created_at
            .saturating_mul(1_000)
            .saturating_sub(FUTURE_TOLERANCE_MS);
        if at <= now_ms || undo_until_ms.is_some_and(|u| u >= at) {
            return Ok(self);
        }
        if let Some(deadline) = self.effective_deadline_ms().filter(|d| *d > now_ms) {
            if at >= deadline {
                return Err(CoreError::arg(
                    "event",
                    "its created_at is past the deadline: it would never be sent (give notBefore to send it earlier)",
                ));
            }
        }
        self.not_before_ms = Some(at);
        Ok(self)
    }

    /// Sets whether delivery stops at the policy's verdict
    /// ([`Plan::stop_when_satisfied`]).
    pub fn with_stop_when_satisfied(mut self, stop: bool) -> Plan {
        self.stop_when_satisfied = stop;
        self
    }

    /// Replaces the lane.
    pub fn with_lane(mut self, lane: impl Into<String>) -> Plan {
        self.lane = lane.into();
        self
    }

    /// Replaces the priority.
    pub fn with_priority(mut self, priority: Priority) -> Plan {
        self.priority = priority;
        self
    }

    /// Replaces the item id.
    pub fn with_id(mut self, id: impl Into<String>) -> Plan {
        self.id = id.into();
        self
    }

    /// Replaces the attempt budget.
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Plan {
        self.max_attempts = max_attempts;
        self
    }

    /// Sets an absolute deadline in unix milliseconds.
    pub fn with_deadline_ms(mut self, deadline_ms: Option<u64>) -> Plan {
        self.deadline_ms = deadline_ms;
        self
    }

    /// Validates every field and returns the canonical plan: targets sorted and
    /// de-duplicated, the policy normalized against them.
    pub fn normalize(mut self) -> Result<Plan, CoreError> {
        validate_item_id(&self.id)?;
        if let Some(size) = self.group_size {
            super::group::GroupRef::of(&self.id, size)?;
        }
        validate_lane("lane", &self.lane)?;
        validate_envelope(&self.event)?;
        super::order::sort_dedup(&mut self.route);
        if let Some(bad) = self.route.iter().find(|i| !INTENTS.contains(&i.as_str())) {
            return Err(CoreError::arg(
                "route",
                format!("`{bad}` is not an intent (outbox, inbox, dm)"),
            ));
        }
        let routed = !self.route.is_empty();
        self.targets = normalize_targets(self.targets, routed)?;
        // A route's relays are known when it is resolved: `atLeast` may ask for more
        // than the relays given (a record that ends with fewer can never be satisfied).
        self.policy = match self.policy {
            Policy::AtLeast { k } if routed && k > 0 => Policy::AtLeast { k },
            p => p.normalized(&self.targets)?,
        };
        if let Some(at) = self.not_before_ms {
            before_deadline("notBefore", at, self.effective_deadline_ms())?;
        }
        if self.max_attempts == 0 || self.max_attempts > MAX_ATTEMPTS_LIMIT {
            return Err(CoreError::arg(
                "maxAttempts",
                format!("must be 1..={MAX_ATTEMPTS_LIMIT}"),
            ));
        }
        Ok(self)
    }

    /// The last moment (unix ms) the record may still be attempted: the earlier of the
    /// plan's deadline and the event's NIP-40 expiration.
    pub fn effective_deadline_ms(&self) -> Option<u64> {
        effective_deadline(self.deadline_ms, &self.event)
    }

    /// The sha256 (lowercase hex) of the plan's canonical encoding. Two plans are the
    /// same delivery request exactly when their digests are equal. Call it on a
    /// normalized plan.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_be_bytes());
            h.update(bytes);
        };
        field(b"nostr-outbox/plan/v1");
        field(self.id.as_bytes());
        field(self.event.id.as_bytes());
        field(self.event.raw.as_bytes());
        field(&opt_u64(self.event.expiration));
        field(&(self.targets.len() as u64).to_be_bytes());
        for t in &self.targets {
            field(t.as_bytes());
        }
        field(self.policy.kind().as_bytes());
        match &self.policy {
            Policy::All | Policy::Any => {}
            Policy::AtLeast { k } => field(&k.to_be_bytes()),
            Policy::Required { relays } => {
                field(&(relays.len() as u64).to_be_bytes());
                for r in relays {
                    field(r.as_bytes());
                }
            }
        }
        field(&self.max_attempts.to_be_bytes());
        field(&opt_u64(self.deadline_ms));
        // Lane and priority join the digest only when not the defaults, so the digest
        // of every plan written before they existed is unchanged.
        if !is_default_lane(&self.lane) || !self.priority.is_default() {
            field(self.lane.as_bytes());
            field(&[self.priority.rank()]);
        }
        // Likewise stopping at the verdict, which joins only when asked for.
        if self.stop_when_satisfied {
            field(b"stopWhenSatisfied");
        }
        // And a group's member, its group's size (its place is in its id).
        if let Some(size) = self.group_size {
            field(b"groupSize");
            field(&size.to_be_bytes());
        }
        if !self.route.is_empty() {
            field(b"route");
            for intent in &self.route {
                field(intent.as_bytes());
            }
        }
        hex(&h.finalize())
    }
}

/// `invalid_argument` (`field`) when a first attempt at `at` (unix ms) would come at or
/// after `deadline`: the record would never be sent (`notBefore`, `reschedule`).
/// How far an event's `created_at` may be ahead of the clock and still be sent at once
/// ([`Plan::hold_until_created_at`]).
pub const FUTURE_TOLERANCE_MS: u64 = 5_000;

pub(crate) fn before_deadline(
    field: &'static str,
    at: u64,
    deadline: Option<u64>,
) -> Result<(), CoreError> {
    match deadline {
        Some(deadline) if at >= deadline => Err(CoreError::arg(
            field,
            format!("{at} is not before the deadline {deadline}: it would never be sent"),
        )),
        _ => Ok(()),
    }
}

fn opt_u64(v: Option<u64>) -> Vec<u8> {
    match v {
        None => vec![0],
        Some(v) => {
            let mut out = vec![1];
            out.extend_from_slice(&v.to_be_bytes());
            out
        }
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

pub(crate) fn effective_deadline(deadline_ms: Option<u64>, event: &EventEnvelope) -> Option<u64> {
    let expiry = event.expiration.map(|s| s.saturating_mul(1_000));
    match (deadline_ms, expiry) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Checks an item id: 1..=128 characters of `[A-Za-z0-9._:-]`.
pub fn validate_item_id(id: &str) -> Result<(), CoreError> {
    let invalid = |reason: &str| CoreError::InvalidItemId {
        reason: reason.to_string(),
    };
    if id.is_empty() {
        return Err(invalid("must not be empty"));
    }
    if id.len() > MAX_ITEM_ID_LEN {
        return Err(invalid("must be at most 128 characters"));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
    {
        return Err(invalid("may only contain A-Z a-z 0-9 . _ : -"));
    }
    Ok(())
}

/// Checks an envelope: a 64-character lowercase hex id and non-empty raw text; or a
/// draft's: an empty id, its template as the raw text and its header fields
/// ([`EventEnvelope::meta`]).
pub fn validate_envelope(event: &EventEnvelope) -> Result<(), CoreError> {
    let invalid = |reason: &str| CoreError::InvalidEvent {
        reason: reason.to_string(),
    };
    if event.id.is_empty() && event.meta.is_none() {
        return Err(invalid("a draft needs its header fields"));
    }
    if !event.id.is_empty() && event.id.len() != 64
        || !event
            .id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(invalid("id must be 64 lowercase hex characters"));
    }
    if event.raw.trim().is_empty() {
        return Err(invalid("raw event text must not be empty"));
    }
    Ok(())
}

/// The routing intents a plan may name ([`Plan::route`]).
pub const INTENTS: [&str; 3] = ["dm", "inbox", "outbox"];

/// Sorts and de-duplicates targets, checking each is non-empty, at most
/// [`MAX_TARGET_LEN`] bytes without control characters, and that there are
/// 0 (`may_be_empty`: the plan has a route) or 1..=[`MAX_TARGETS`] of them.
pub fn normalize_targets(
    mut targets: Vec<String>,
    may_be_empty: bool,
) -> Result<Vec<String>, CoreError> {
    let invalid = |reason: String| CoreError::InvalidTargets { reason };
    for t in &targets {
        if t.is_empty() {
            return Err(invalid("a target must not be empty".into()));
        }
        if t.len() > MAX_TARGET_LEN {
            return Err(invalid(format!(
                "a target must be at most {MAX_TARGET_LEN} bytes"
            )));
        }
        if t.chars().any(char::is_control) {
            return Err(invalid(
                "a target must not contain control characters".into(),
            ));
        }
    }
    super::order::sort_dedup(&mut targets);
    if targets.is_empty() && !may_be_empty {
        return Err(invalid(
            "at least one target (or a route) is required".into(),
        ));
    }
    if targets.len() > MAX_TARGETS {
        return Err(invalid(format!("at most {MAX_TARGETS} targets")));
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan for an event dated `created_at` (seconds), expiring at `expiration`.
    fn dated(created_at: u64, expiration: Option<u64>) -> Plan {
        let mut e = env();
        e.expiration = expiration;
        e.meta = Some(crate::core::EventMeta {
            pubkey: "a1".repeat(32),
            kind: 1,
            created_at,
            d: String::new(),
            deletes_ids: Vec::new(),
            deletes_addresses: Vec::new(),
            protected: false,
            vanish_relays: Vec::new(),
        });
        Plan::new(e, vec!["wss://r.example".into()], Policy::All)
    }

    #[test]
    fn an_event_from_the_future_waits_for_its_created_at() {
        let now = 1_000_000_000_000; // ms
                                     // Now, a moment ago, within the tolerance: at once.
        for created in [0, 999_999_000, 1_000_000_000, 1_000_000_005] {
            let p = dated(created, None)
                .hold_until_created_at(now, None)
                .unwrap();
            assert_eq!(p.not_before_ms, None, "created_at {created}");
        }
        // Ahead: at created_at less the tolerance.
        let p = dated(1_000_000_060, None)
            .hold_until_created_at(now, None)
            .unwrap();
        assert_eq!(
            p.not_before_ms,
            Some(1_000_000_060_000 - FUTURE_TOLERANCE_MS)
        );
        assert!(p.clone().normalize().is_ok());
        // The largest times do not overflow.
        let p = dated(u64::MAX, None)
            .hold_until_created_at(now, None)
            .unwrap();
        assert_eq!(p.not_before_ms, Some(u64::MAX - FUTURE_TOLERANCE_MS));
        // The app's own time wins over both, even an earlier one (0: at once).
        for own in [0, now + 1] {
            let p = dated(1_000_000_060, None)
                .with_not_before_ms(Some(own))
                .hold_until_created_at(now, Some(now + 60_000))
                .unwrap();
            assert_eq!(p.not_before_ms, Some(own));
        }
        // No header fields (an envelope built by hand): nothing to read.
        let mut p = dated(1_000_000_060, None);
        p.event.meta = None;
        assert_eq!(
            p.clone()
                .hold_until_created_at(now, None)
                .unwrap()
                .not_before_ms,
            None
        );
        // An undo window: the later of its end and the created_at time.
        let undo = Some(now + 30_000);
        assert_eq!(
            p.hold_until_created_at(now, undo).unwrap().not_before_ms,
            undo
        );
        let p = dated(1_000_000_000, None).hold_until_created_at(now, undo);
        assert_eq!(p.unwrap().not_before_ms, undo, "dated now: the window");
        let p = dated(1_000_000_060, None).hold_until_created_at(now, undo);
        assert_eq!(
            p.unwrap().not_before_ms,
            Some(1_000_000_055_000),
            "dated after the window"
        );
        let p = dated(1_000_000_020, None).hold_until_created_at(now, Some(now + 90_000));
        assert_eq!(
            p.unwrap().not_before_ms,
            Some(now + 90_000),
            "a window past it"
        );
        // Past a deadline still ahead: refused, it would never be sent.
        let e = dated(1_000_000_060, None)
            .with_deadline_ms(Some(now + 30_000))
            .hold_until_created_at(now, None)
            .unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
        assert!(format!("{e}").contains("past the deadline"), "{e}");
        let e = dated(1_000_000_060, Some(1_000_000_050))
            .hold_until_created_at(now, None)
            .unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
        // A deadline already past is the expiry check's (event_expired), not this one's.
        let p = dated(1_000_000_060, Some(999_999_000))
            .hold_until_created_at(now, None)
            .unwrap();
        assert!(p.not_before_ms.is_some());
    }

    fn env() -> EventEnvelope {
        EventEnvelope {
            id: "ab".repeat(32),
            raw: "{}".into(),
            expiration: None,
            meta: None,
        }
    }

    #[test]
    fn item_ids() {
        assert!(validate_item_id("a.b_c:d-E9").is_ok());
        for bad in ["", "a b", "é", "a/b", &"x".repeat(129)] {
            assert_eq!(validate_item_id(bad).unwrap_err().code(), "invalid_item_id");
        }
        assert!(validate_item_id(&"x".repeat(128)).is_ok());
    }

    #[test]
    fn envelopes() {
        let mut e = env();
        assert!(validate_envelope(&e).is_ok());
        e.id = "AB".repeat(32);
        assert_eq!(validate_envelope(&e).unwrap_err().code(), "invalid_event");
        let mut e = env();
        e.raw = " ".into();
        assert!(validate_envelope(&e).is_err());
    }

    #[test]
    fn targets_sorted_deduped_bounded() {
        let t = normalize_targets(vec!["b".into(), "a".into(), "b".into()], false).unwrap();
        assert_eq!(t, vec!["a", "b"]);
        assert_eq!(
            normalize_targets(vec![], false).unwrap_err().code(),
            "invalid_targets"
        );
        assert!(normalize_targets(vec!["".into()], false).is_err());
        assert!(normalize_targets(vec!["a\n".into()], false).is_err());
        let many: Vec<String> = (0..65).map(|i| format!("wss://r{i}")).collect();
        assert!(normalize_targets(many, false).is_err());
    }

    #[test]
    fn digest_is_canonical_and_sensitive() {
        let a = Plan::new(env(), vec!["b".into(), "a".into()], Policy::All)
            .normalize()
            .unwrap();
        let b = Plan::new(env(), vec!["a".into(), "b".into(), "a".into()], Policy::All)
            .normalize()
            .unwrap();
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a.digest().len(), 64);
        let c = a.clone().with_max_attempts(3);
        assert_ne!(a.digest(), c.digest());
        let d = a.clone().with_deadline_ms(Some(5));
        assert_ne!(a.digest(), d.digest());
        let e = Plan::new(env(), vec!["a".into(), "b".into()], Policy::Any);
        assert_ne!(a.digest(), e.digest());
    }

    #[test]
    fn deadline_is_earliest_of_deadline_and_expiration() {
        let mut e = env();
        e.expiration = Some(10);
        let p = Plan::new(e, vec!["a".into()], Policy::All);
        assert_eq!(p.effective_deadline_ms(), Some(10_000));
        assert_eq!(
            p.clone()
                .with_deadline_ms(Some(500))
                .effective_deadline_ms(),
            Some(500)
        );
        assert_eq!(
            p.with_deadline_ms(Some(50_000)).effective_deadline_ms(),
            Some(10_000)
        );
    }

    #[test]
    fn max_attempts_bounds() {
        let p = Plan::new(env(), vec!["a".into()], Policy::All);
        assert!(p.clone().with_max_attempts(0).normalize().is_err());
        assert!(p.clone().with_max_attempts(1001).normalize().is_err());
        assert!(p.with_max_attempts(1).normalize().is_ok());
    }
}
