//! The suite's fixtures: relay URLs, events, plans, retry and claim settings; also
//! used by the core and flush tests.

use super::*;

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
            protected: false,
            vanish_relays: Vec::new(),
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
