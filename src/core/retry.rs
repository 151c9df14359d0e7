//! The retry schedule: capped exponential backoff with jitter, and the minimum
//! deferral after a `rate-limited` answer. Pure arithmetic; the random input is an
//! argument.

use serde::{Deserialize, Serialize};

use super::error::CoreError;

/// How long to wait before the next attempt of a record.
///
/// `delay(n) = cap - cap * jitter_permille / 1000 * jitter / 2^32`, where
/// `cap = min(max_delay_ms, base_delay_ms * 2^(n-1))` and `n` is the attempt just made.
/// When any target answered `rate-limited`, the delay is at least `rate_limit_min_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryConfig {
    /// The delay after the first attempt, before jitter (>= 1 ms).
    pub base_delay_ms: u64,
    /// The largest delay (>= `base_delay_ms`).
    pub max_delay_ms: u64,
    /// How much of the delay jitter may remove, in thousandths (0..=1000).
    pub jitter_permille: u32,
    /// The least delay after any `rate-limited` answer.
    pub rate_limit_min_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            base_delay_ms: 1_000,
            max_delay_ms: 300_000,
            jitter_permille: 200,
            rate_limit_min_ms: 30_000,
        }
    }
}

/// The largest delay a configuration may ask for: 30 days.
pub const MAX_DELAY_MS: u64 = 30 * 24 * 3_600 * 1_000;

impl RetryConfig {
    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), CoreError> {
        if self.base_delay_ms == 0 {
            return Err(CoreError::config("baseDelayMs", "must be at least 1"));
        }
        if self.max_delay_ms < self.base_delay_ms {
            return Err(CoreError::config(
                "maxDelayMs",
                "must be at least baseDelayMs",
            ));
        }
        if self.max_delay_ms > MAX_DELAY_MS || self.rate_limit_min_ms > MAX_DELAY_MS {
            return Err(CoreError::config(
                "maxDelayMs",
                format!("delays are capped at {MAX_DELAY_MS} ms"),
            ));
        }
        if self.jitter_permille > 1000 {
            return Err(CoreError::config("jitterPermille", "must be 0..=1000"));
        }
        Ok(())
    }

    /// The delay after attempt `attempt` (1-based), given a uniform random `jitter`.
    pub fn delay_ms(&self, attempt: u32, jitter: u32, rate_limited: bool) -> u64 {
        let shift = attempt.saturating_sub(1).min(63);
        let exp = self.base_delay_ms.saturating_mul(1u64 << shift);
        let cap = exp.min(self.max_delay_ms);
        // `cap · permille · jitter / (1000 · 2^32)`, exactly, in u64 (no u128 code):
        // `cap · permille` < 2^42 (delays < 2^32 ms, permille ≤ 1000), and jitter is
        // split in halves so that each product stays under 2^59.
        let cp = cap.min(MAX_DELAY_MS) * u64::from(self.jitter_permille.min(1000));
        let (high, low) = (u64::from(jitter >> 16), u64::from(jitter & 0xffff));
        let cut = (cp * high + ((cp * low) >> 16)) / (1000 << 16);
        let delay = cap - cut;
        if rate_limited {
            delay.max(self.rate_limit_min_ms)
        } else {
            delay
        }
    }
}

/// The most [`coalesce_due`] moves a wake-up past the earliest due time.
pub const COALESCE_MAX_MS: u64 = 1_000;

/// When a flusher that ran from `started_ms` to `ended_ms` should run again, given the
/// earliest `due_ms` of a waiting record.
///
/// A run records each retry `delay` after its own answer, so the records of one run
/// (one shared jitter, see the flusher) fall due over a span as long as the run took.
/// Waking at the earliest of them would take one and leave the others for the next
/// wake-up, one alarm (a billed invocation on Cloudflare) per record. So the wake-up is
/// the earliest due time plus the run's length, at most [`COALESCE_MAX_MS`]: wake-ups
/// grow with the relays and the backoff steps, not with the records. A record already
/// due at the end of the run keeps its time (come back at once). A scheduled record may
/// be taken up to [`COALESCE_MAX_MS`] after its time, never before it.
pub fn coalesce_due(due_ms: u64, started_ms: u64, ended_ms: u64) -> u64 {
    if due_ms <= ended_ms {
        return due_ms;
    }
    let span = ended_ms.saturating_sub(started_ms).min(COALESCE_MAX_MS);
    due_ms.saturating_add(span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jitter_cut_is_the_exact_fraction_of_the_u128_formula() {
        // xorshift64: 200 000 delays, permilles and jitters, with the extremes.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let extremes = [
            (MAX_DELAY_MS, 1000, u32::MAX),
            (1, 1, 1),
            (MAX_DELAY_MS, 0, u32::MAX),
        ];
        let random = (0..200_000).map(|_| {
            let (a, b) = (next(), next());
            (a % MAX_DELAY_MS + 1, (b % 1001) as u32, (b >> 32) as u32)
        });
        for (cap, permille, jitter) in extremes.into_iter().chain(random) {
            let config = RetryConfig {
                base_delay_ms: cap,
                max_delay_ms: cap,
                jitter_permille: permille,
                rate_limit_min_ms: 0,
            };
            let cut =
                (u128::from(cap) * u128::from(permille) * u128::from(jitter)) / (1000u128 << 32);
            assert_eq!(
                config.delay_ms(1, jitter, false),
                cap - cut as u64,
                "{cap} {permille} {jitter}"
            );
        }
    }

    #[test]
    fn exponential_capped_and_jittered() {
        let c = RetryConfig {
            base_delay_ms: 100,
            max_delay_ms: 1_000,
            jitter_permille: 500,
            rate_limit_min_ms: 5_000,
        };
        assert_eq!(c.delay_ms(1, 0, false), 100);
        assert_eq!(c.delay_ms(2, 0, false), 200);
        assert_eq!(c.delay_ms(4, 0, false), 800);
        assert_eq!(c.delay_ms(5, 0, false), 1_000);
        assert_eq!(c.delay_ms(200, 0, false), 1_000);
        assert_eq!(c.delay_ms(1, u32::MAX, false), 51);
        assert!(c.delay_ms(3, u32::MAX / 2, false) >= 300);
        assert_eq!(c.delay_ms(1, 0, true), 5_000);
    }

    #[test]
    fn a_wake_up_waits_as_long_as_the_run_took_and_no_longer() {
        // Due already at the end of the run: at once.
        assert_eq!(coalesce_due(900, 0, 1_000), 900);
        assert_eq!(coalesce_due(1_000, 0, 1_000), 1_000);
        // A run of 40 ms: its retries fall due over 40 ms after the first one.
        assert_eq!(coalesce_due(2_000, 1_000, 1_040), 2_040);
        // An instant run: the due time itself.
        assert_eq!(coalesce_due(2_000, 1_000, 1_000), 2_000);
        // A long run: at most COALESCE_MAX_MS late.
        assert_eq!(coalesce_due(90_000, 0, 60_000), 90_000 + COALESCE_MAX_MS);
        // A clock that went back, the largest times: no panic, never earlier.
        assert_eq!(coalesce_due(5_000, 3_000, 2_000), 5_000);
        assert_eq!(coalesce_due(u64::MAX, 0, 10), u64::MAX);
    }

    #[test]
    fn validation() {
        assert!(RetryConfig::default().validate().is_ok());
        let c = RetryConfig {
            base_delay_ms: 0,
            ..RetryConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().code(), "invalid_config");
        let c = RetryConfig {
            max_delay_ms: 1,
            ..RetryConfig::default()
        };
        assert!(c.validate().is_err());
        let c = RetryConfig {
            jitter_permille: 1001,
            ..RetryConfig::default()
        };
        assert!(c.validate().is_err());
    }
}
