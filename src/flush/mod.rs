//! The flusher: claim a batch of due records, publish each to its unsettled targets
//! concurrently, record the evidence and release with the next due time, in one
//! store call per record. It holds no state between ticks and no business rule: the
//! store and [`crate::core`] decide every transition. The clock, the randomness and
//! the observer are arguments, so a tick is deterministic under test.

use futures_util::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};

use crate::core::machine::{MAX_CLAIM, MAX_LEASE_FIELD_LEN, MAX_LEASE_MS};
use crate::core::{ClaimRequest, Completion, CoreError, Record, RetryConfig, Stage, TargetResult};
use crate::store::{Store, StoreError};
use crate::transport::{PublishReport, Transport};

/// The most publishes a tick runs at once.
pub const MAX_CONCURRENCY: u32 = 256;
/// The most ticks one [`flush_until_idle`] runs.
pub const MAX_TICKS: u32 = 10_000;

/// How a flusher claims and retries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlushConfig {
    /// Who holds the leases (1..=128 bytes, no control characters).
    pub owner: String,
    /// How many records one tick claims (1..=256).
    pub batch_size: u32,
    /// How long a lease lasts (1..=86 400 000 ms). Must exceed the transport's publish
    /// timeout, or every answer arrives after the lease expired and is lost.
    pub lease_ms: u64,
    /// How many publishes run at once (1..=256).
    pub concurrency: u32,
    /// The retry schedule.
    pub retry: RetryConfig,
}

impl FlushConfig {
    /// A configuration for `owner` with defaults: batch 32, lease 60 s, 8 concurrent
    /// publishes, the default retry schedule.
    pub fn new(owner: impl Into<String>) -> FlushConfig {
        FlushConfig {
            owner: owner.into(),
            batch_size: 32,
            lease_ms: 60_000,
            concurrency: 8,
            retry: RetryConfig::default(),
        }
    }

    /// Checks every setting; the error code is `invalid_config`.
    pub fn validate(&self) -> Result<(), CoreError> {
        if self.owner.is_empty()
            || self.owner.len() > MAX_LEASE_FIELD_LEN
            || self.owner.chars().any(char::is_control)
        {
            return Err(CoreError::config(
                "owner",
                "must be 1..=128 bytes without control characters",
            ));
        }
        if self.batch_size == 0 || self.batch_size > MAX_CLAIM {
            return Err(CoreError::config("batchSize", "must be 1..=256"));
        }
        if self.lease_ms == 0 || self.lease_ms > MAX_LEASE_MS {
            return Err(CoreError::config("leaseMs", "must be 1..=86400000"));
        }
        if self.concurrency == 0 || self.concurrency > MAX_CONCURRENCY {
            return Err(CoreError::config("concurrency", "must be 1..=256"));
        }
        self.retry.validate()
    }
}

/// What one tick (or a whole flush) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TickStats {
    /// Records claimed (including ones exhausted on claim because they expired).
    pub claimed: u32,
    /// Attempts made (records published to).
    pub attempts: u32,
    /// Single publishes to a relay.
    pub publishes: u32,
    /// Records that became satisfied.
    pub satisfied: u32,
    /// Records scheduled for another attempt.
    pub retrying: u32,
    /// Records that became exhausted (rejected, out of attempts, or expired).
    pub exhausted: u32,
    /// Results that arrived after their lease was lost; they changed nothing.
    pub lost_claims: u32,
}

impl TickStats {
    /// Adds another tick's counts to these.
    pub fn add(&mut self, other: &TickStats) {
        self.claimed += other.claimed;
        self.attempts += other.attempts;
        self.publishes += other.publishes;
        self.satisfied += other.satisfied;
        self.retrying += other.retrying;
        self.exhausted += other.exhausted;
        self.lost_claims += other.lost_claims;
    }
}

/// What the flusher reports about each record as it goes.
#[derive(Debug, Clone, Copy)]
pub enum FlushEvent<'a> {
    /// An attempt is about to publish to `targets`.
    AttemptStarted {
        /// The leased record.
        record: &'a Record,
        /// The attempt number.
        attempt: u32,
        /// The unsettled targets it publishes to.
        targets: &'a [String],
    },
    /// The record became satisfied.
    Delivered {
        /// The record as stored.
        record: &'a Record,
    },
    /// The record will be attempted again from `record.due_ms`.
    Retrying {
        /// The record as stored.
        record: &'a Record,
    },
    /// The record became exhausted (see `record.reason`).
    Exhausted {
        /// The record as stored.
        record: &'a Record,
    },
    /// The attempt's result arrived after the lease was lost and changed nothing.
    LostClaim {
        /// The item id.
        id: &'a str,
    },
}

/// What [`flush_until_idle`] did and when to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlushSummary {
    /// The counts over every tick.
    pub stats: TickStats,
    /// How many ticks ran.
    pub ticks: u32,
    /// When the next record is due (unix ms), if any.
    pub next_due_ms: Option<u64>,
}

fn lease_id(random: &mut dyn FnMut() -> u32) -> String {
    let mut id = String::with_capacity(32);
    for _ in 0..4 {
        id.push_str(&format!("{:08x}", random()));
    }
    id
}

/// One flush round: claims up to `batch_size` ready records under a fresh lease id
/// (drawn from `random`), publishes each to its unsettled targets (at most
/// `concurrency` publishes at once), then records every attempt and releases each
/// lease with its next stage in one store call ([`Store::complete_attempts`]: one
/// transaction in IndexedDB). `clock` is read at claim and once when recording.
///
/// Store failures end the tick with the error; leases not completed simply expire and
/// the records are claimed again later (at-least-once delivery).
pub async fn tick<S: Store, T: Transport>(
    store: &S,
    transport: &T,
    config: &FlushConfig,
    clock: &dyn Fn() -> u64,
    random: &mut dyn FnMut() -> u32,
    observer: &mut dyn FnMut(FlushEvent<'_>),
) -> Result<TickStats, StoreError> {
    config.validate()?;
    let request = ClaimRequest {
        owner: config.owner.clone(),
        lease_id: lease_id(random),
        limit: config.batch_size,
        lease_ms: config.lease_ms,
    };
    let claimed = store.claim(&request, clock()).await?;
    let mut stats = TickStats {
        claimed: claimed.len() as u32,
        ..TickStats::default()
    };

    let mut work: Vec<(&Record, Vec<String>)> = Vec::new();
    for record in &claimed {
        if record.stage == Stage::Leased {
            let targets = record.unsettled_targets();
            let attempt = record
                .lease
                .as_ref()
                .map_or(record.attempts + 1, |l| l.attempt);
            observer(FlushEvent::AttemptStarted {
                record,
                attempt,
                targets: &targets,
            });
            work.push((record, targets));
        } else {
            stats.exhausted += 1;
            observer(FlushEvent::Exhausted { record });
        }
    }
    stats.attempts = work.len() as u32;

    let jobs: Vec<(usize, &str)> = work
        .iter()
        .enumerate()
        .flat_map(|(i, (_, targets))| targets.iter().map(move |t| (i, t.as_str())))
        .collect();
    stats.publishes = jobs.len() as u32;
    let work_ref = &work;
    let mut answers: Vec<(usize, &str, PublishReport)> = stream::iter(jobs)
        .map(|(i, target)| async move {
            let report = transport.publish(target, &work_ref[i].0.event).await;
            (i, target, report)
        })
        .buffer_unordered(config.concurrency as usize)
        .collect()
        .await;
    crate::sort::sort_by(&mut answers, |a, b| (a.0, a.1).cmp(&(b.0, b.1)));

    let completions: Vec<Completion> = work
        .iter()
        .enumerate()
        .map(|(i, (record, _))| Completion {
            id: record.id.clone(),
            lease_id: request.lease_id.clone(),
            revision: record.revision,
            results: answers
                .iter()
                .filter(|(j, _, _)| *j == i)
                .map(|(_, target, report)| TargetResult {
                    target: (*target).to_string(),
                    outcome: report.outcome,
                    message: report.message.clone(),
                })
                .collect(),
            jitter: random(),
        })
        .collect();
    // The whole round in one store call (one transaction in IndexedDB).
    let recorded = if completions.is_empty() {
        Vec::new()
    } else {
        store
            .complete_attempts(&completions, &config.retry, clock())
            .await
    };
    for (completion, result) in completions.iter().zip(recorded) {
        match result {
            Ok(next) => match next.stage {
                Stage::Satisfied => {
                    stats.satisfied += 1;
                    observer(FlushEvent::Delivered { record: &next });
                }
                Stage::Exhausted => {
                    stats.exhausted += 1;
                    observer(FlushEvent::Exhausted { record: &next });
                }
                _ => {
                    stats.retrying += 1;
                    observer(FlushEvent::Retrying { record: &next });
                }
            },
            Err(e) if e.is_item_error() => {
                stats.lost_claims += 1;
                observer(FlushEvent::LostClaim { id: &completion.id });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(stats)
}

/// True while some record was already due at `started_ms`. A flush run attempts what
/// was due when it started and stops there: records that became due again during the
/// run (a short backoff while every relay is down) wait for the next run instead of
/// keeping this one going until its tick limit.
pub async fn due_since<S: Store>(store: &S, started_ms: u64) -> Result<bool, StoreError> {
    Ok(store.next_due().await?.is_some_and(|d| d <= started_ms))
}

/// Runs [`tick`] until a tick claims nothing or nothing that was due at the start of
/// the run is left ([`due_since`]), or `max_ticks` (at most [`MAX_TICKS`]) have run;
/// then reports the totals and the next due time.
pub async fn flush_until_idle<S: Store, T: Transport>(
    store: &S,
    transport: &T,
    config: &FlushConfig,
    clock: &dyn Fn() -> u64,
    random: &mut dyn FnMut() -> u32,
    observer: &mut dyn FnMut(FlushEvent<'_>),
    max_ticks: u32,
) -> Result<FlushSummary, StoreError> {
    let mut summary = FlushSummary::default();
    let started_ms = clock();
    while summary.ticks < max_ticks.min(MAX_TICKS) {
        let stats = tick(store, transport, config, clock, random, observer).await?;
        summary.ticks += 1;
        summary.stats.add(&stats);
        if stats.claimed == 0 || !due_since(store, started_ms).await? {
            break;
        }
    }
    summary.next_due_ms = store.next_due().await?;
    Ok(summary)
}
