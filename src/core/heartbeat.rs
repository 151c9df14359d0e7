//! Owners' heartbeats: how a flusher on storage without Web Locks (Deno KV, SQLite, an
//! IndexedDB in a context without `navigator.locks`) tells a flusher that is gone from
//! one that is busy. A flusher keeps a row saying "alive until `until_ms`", renewed every
//! [`BEAT_EVERY_MS`] while it runs and removed when its run ends; a lease whose owner's
//! row has lapsed ([`Heartbeat::lapsed`]) is taken over by the next run
//! ([`crate::core::ClaimRequest::lapsed_only`]) instead of waiting for the lease to run
//! out (`leaseMs`, two minutes and more by default). An owner with no row (one that never
//! beat, or whose row was cleaned up) is never taken for gone: its leases only expire.
//!
//! The row is text, `<until_ms> <lease_ms>`: the lease length tells when no lease the
//! owner took can still be active, so the row can be forgotten ([`Heartbeat::stale`]).

/// How often a running flusher renews its heartbeat.
pub const BEAT_EVERY_MS: u64 = 2_000;

/// How long a heartbeat vouches for its owner: three renewals, so one slow write (or a
/// busy event loop) does not make a live flusher look gone.
pub const BEAT_LAPSE_MS: u64 = 3 * BEAT_EVERY_MS;

/// An owner's heartbeat as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heartbeat {
    /// The owner is alive until then (unix ms).
    pub until_ms: u64,
    /// The owner's lease length: none of its leases outlasts `until_ms + lease_ms`.
    pub lease_ms: u64,
}

impl Heartbeat {
    /// A beat at `now_ms` by an owner whose leases last `lease_ms`.
    pub fn at(now_ms: u64, lease_ms: u64) -> Heartbeat {
        Heartbeat {
            until_ms: now_ms.saturating_add(BEAT_LAPSE_MS),
            lease_ms,
        }
    }

    /// True when the owner is gone at `now_ms`: not renewed in time.
    pub fn lapsed(&self, now_ms: u64) -> bool {
        now_ms > self.until_ms
    }

    /// True when the row tells nothing any more: every lease its owner took has run out.
    pub fn stale(&self, now_ms: u64) -> bool {
        now_ms > self.until_ms.saturating_add(self.lease_ms)
    }

    /// The row's text.
    pub fn encode(&self) -> String {
        format!("{} {}", self.until_ms, self.lease_ms)
    }

    /// Reads a row; `None` for anything else (such a row is never taken for a lapse).
    pub fn decode(text: &str) -> Option<Heartbeat> {
        let (until, lease) = text.split_once(' ')?;
        let number = |s: &str| {
            (!s.is_empty() && s.len() <= 19 && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.bytes().fold(0u64, |n, b| n * 10 + u64::from(b - b'0')))
        };
        Some(Heartbeat {
            until_ms: number(until)?,
            lease_ms: number(lease)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_beat_vouches_for_three_renewals_and_is_forgotten_after_its_leases() {
        let b = Heartbeat::at(10_000, 120_000);
        assert!(!b.lapsed(10_000 + BEAT_LAPSE_MS));
        assert!(b.lapsed(10_001 + BEAT_LAPSE_MS));
        assert!(!b.stale(10_000 + BEAT_LAPSE_MS + 120_000));
        assert!(b.stale(10_001 + BEAT_LAPSE_MS + 120_000));
        assert_eq!(Heartbeat::decode(&b.encode()), Some(b));
    }

    #[test]
    fn rows_that_are_not_beats_are_never_read_as_lapsed() {
        for bad in [
            "",
            "1",
            "1 ",
            " 1",
            "a 1",
            "1 b",
            "1 2 3",
            "-1 2",
            "99999999999999999999 1",
        ] {
            assert_eq!(Heartbeat::decode(bad), None, "{bad:?}");
        }
    }
}
