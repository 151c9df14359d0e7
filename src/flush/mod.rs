//! The flusher: claim batches of due records, publish each to its unsettled targets
//! (a window of publishes in flight per relay), record the evidence and release with
//! the next due time, in grouped store calls; claiming, publishing and recording
//! overlap ([`run`]). It holds no state between runs and no business rule: the store
//! and [`crate::core`] decide every transition. The clock, the randomness and the
//! observer are arguments, so a run is deterministic under test. A run told it holds
//! the database's Web Lock ([`RunBounds::take_over`]) first takes over the live leases
//! of flushers that are gone ([`Store::take_over`]) and attempts those records too.
//!
//! Two parts: the [`pipeline`] decides what starts when (the publish queues, the
//! attempts in flight, group commit, the hurry, the hold and the low window) without
//! I/O, a clock or randomness; [`run`] is its driver, which performs those actions with
//! the store, the transport and the timer, reports their results back and tells the
//! observer.

use std::future::poll_fn;
use std::task::Poll;

use futures_util::future::LocalBoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde::{Deserialize, Serialize};

use crate::core::machine::{MAX_CLAIM, MAX_LEASE_FIELD_LEN, MAX_LEASE_MS};
use crate::core::{
    coalesce_due, newer_message, Completion, CoreError, Outcome, Record, RejectReason, RetryConfig,
    Satisfaction, Signal, Stage, READ_BACK,
};
use crate::store::{Store, StoreError};
use crate::transport::{PublishReport, Transport};

pub mod pipeline;
pub mod sign;
pub mod wake;

pub use pipeline::hold_bound;
use pipeline::{
    Action, ClaimKind, ClaimTicket, ClaimedBatch, Driver, Pipeline, PublishTicket, Recording,
    Unattempted,
};

/// The most publishes in flight to one relay.
pub const MAX_CONCURRENCY: u32 = 256;
/// The most ticks one [`flush_until_idle`] runs.
pub const MAX_TICKS: u32 = 10_000;
/// The default [`FlushConfig::low_concurrency`]: the most publishes of `low` records in
/// flight to one relay. A relay answers one connection's messages in order, so a
/// `high` or `normal` record published behind a `low` backlog waits for at most this
/// many of the backlog's publishes, whatever the window. Why 4 and not 16: the figures
/// are in docs/BENCHMARKS.md ("Lanes and priority") and docs/API.md (`lowConcurrency`).
pub const LOW_WINDOW: u32 = 4;
/// The most `low` records one claim takes once the claims have reached them, per
/// publish of the low window (16 at the default window of 4, or
/// [`FlushConfig::batch_size`], if smaller): a claim is one transaction that an
/// `enqueue` of a more urgent record may have to wait for.
pub const LOW_BATCH_PER_PUBLISH: u32 = 4;

/// How a flusher claims and retries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlushConfig {
    /// Who holds the leases (1..=128 bytes, no control characters).
    pub owner: String,
    /// How many records one tick claims (1..=256).
    pub batch_size: u32,
    /// How long a lease lasts (1..=86 400 000 ms). A claimed record starts publishing
    /// in the first half of its lease or is handed back unattempted ([`run`]), so the
    /// lease should be at least twice the transport's longest publish (connect and
    /// publish timeouts); an answer that comes after the lease expired is lost.
    pub lease_ms: u64,
    /// How many publishes are in flight to one relay at once (1..=256).
    pub concurrency: u32,
    /// How many of those may be publishes of `low` records (1..=256; the smaller of
    /// this and `concurrency` counts). Default [`LOW_WINDOW`].
    #[serde(default = "default_low_concurrency")]
    pub low_concurrency: u32,
    /// The retry schedule.
    pub retry: RetryConfig,
    /// Group commit's bound (0..=60 000 ms): while no recording is in flight, answers
    /// wait at most this long for a group of `batch_size` to form (see [`run`]).
    #[serde(default = "default_group_wait_ms")]
    pub group_wait_ms: u64,
    /// Only records in these lanes (at most 64); empty: every lane.
    #[serde(default)]
    pub lanes: Vec<String>,
    /// Only records that still wait for one of these relays (normalized URLs, at most
    /// 64), published to those relays only; the records' other targets are left as
    /// they are ([`crate::core::ClaimRequest::relays`]). Empty: every record, to all its targets.
    #[serde(default)]
    pub relays: Vec<String>,
    /// Takeovers ([`RunBounds::take_over`]) take only the leases of owners whose
    /// heartbeat lapsed ([`crate::core::ClaimRequest::lapsed_only`]): for a flusher that
    /// is not the only live one it can know of (no Web Lock) and beats itself
    /// ([`Store::beat`]) while it runs.
    #[serde(default)]
    pub lapsed_only: bool,
    /// Kinds whose events are checked before each send to each relay: when the relay
    /// holds a newer version of the (replaceable or addressable) event, published from
    /// elsewhere, the event is not sent and the record ends superseded by it
    /// ([`crate::core::StopReason::RemoteNewer`], [`Transport::newer`]). Default
    /// [`NEWER_CHECK_KINDS`]; empty: no check.
    #[serde(default = "default_newer_kinds")]
    pub newer_kinds: Vec<u16>,
}

/// The default [`FlushConfig::newer_kinds`]: profiles (0), contact lists (3) and relay
/// lists (10002), whose stale copy would overwrite what another device published.
pub const NEWER_CHECK_KINDS: [u16; 3] = [0, 3, 10_002];

fn default_newer_kinds() -> Vec<u16> {
    NEWER_CHECK_KINDS.to_vec()
}

/// The default [`FlushConfig::group_wait_ms`].
pub const GROUP_WAIT_MS: u64 = 50;

fn default_group_wait_ms() -> u64 {
    GROUP_WAIT_MS
}

fn default_low_concurrency() -> u32 {
    LOW_WINDOW
}

impl FlushConfig {
    /// A configuration for `owner` with defaults: batch 32, lease 60 s, 8 publishes in
    /// flight per relay, the default retry schedule.
    pub fn new(owner: impl Into<String>) -> FlushConfig {
        FlushConfig {
            owner: owner.into(),
            batch_size: 32,
            lease_ms: 60_000,
            concurrency: 8,
            low_concurrency: LOW_WINDOW,
            retry: RetryConfig::default(),
            group_wait_ms: GROUP_WAIT_MS,
            lanes: Vec::new(),
            relays: Vec::new(),
            lapsed_only: false,
            newer_kinds: default_newer_kinds(),
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
        if self.low_concurrency == 0 || self.low_concurrency > MAX_CONCURRENCY {
            return Err(CoreError::config("lowConcurrency", "must be 1..=256"));
        }
        if self.group_wait_ms > 60_000 {
            return Err(CoreError::config("groupWaitMs", "must be 0..=60000"));
        }
        crate::core::lane::validate_lanes("lanes", &self.lanes)?;
        if self.relays.len() > crate::core::lane::MAX_FILTER {
            return Err(CoreError::arg("relays", "may name at most 64 relays"));
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
    /// Records that became satisfied (some may still be delivering).
    pub satisfied: u32,
    /// Records scheduled for another attempt, their verdict not in yet.
    pub retrying: u32,
    /// Records that became exhausted (rejected, out of attempts, or expired; a rejected
    /// one may still be delivering).
    pub exhausted: u32,
    /// Records whose delivery ended after their verdict was counted (in `satisfied` or
    /// `exhausted`) by an earlier attempt.
    #[serde(default)]
    pub settled: u32,
    /// Results that arrived after their lease was lost; they changed nothing.
    pub lost_claims: u32,
    /// Claimed records handed back without an attempt: half their lease had passed
    /// before a relay had room for them (not counted in `attempts`), or, while drafts
    /// were signed, their lease no longer covered a signer's time.
    #[serde(default)]
    pub released: u32,
    /// Waiting records made due at once because a relay they could not reach answered
    /// again ([`Store::relay_back`]).
    #[serde(default)]
    pub woken: u32,
    /// Records whose live lease this run took over from a flusher that was gone
    /// ([`Store::take_over`], when [`RunBounds::take_over`] is set); they are counted in
    /// `claimed` too and attempted in this run.
    #[serde(default)]
    pub taken_over: u32,
    /// Drafts signed and stored signed ([`sign::sign_drafts`]).
    #[serde(default)]
    pub signed: u32,
    /// Publishes not made because the relay, asked by id after an answer that left it
    /// unclear (a timeout, a connection closed after the `EVENT` was written), sent the
    /// event back: recorded as `duplicate` with a [`crate::core::READ_BACK`] message
    /// ([`Transport::holds`]). Counted in `publishes` too.
    #[serde(default)]
    pub read_back: u32,
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
        self.settled += other.settled;
        self.lost_claims += other.lost_claims;
        self.released += other.released;
        self.woken += other.woken;
        self.taken_over += other.taken_over;
        self.signed += other.signed;
        self.read_back += other.read_back;
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
    /// The record became satisfied (the policy is met). Delivery to its targets still
    /// open goes on (stage `delivering`) unless it asked to stop at the verdict.
    Delivered {
        /// The record as stored.
        record: &'a Record,
    },
    /// Delivery ended for a record whose verdict was reported before (`Delivered`, or
    /// `Exhausted` as `rejected`): its stage is now `satisfied` or `exhausted`.
    Settled {
        /// The record as stored.
        record: &'a Record,
    },
    /// The record will be attempted again from `record.due_ms`.
    Retrying {
        /// The record as stored.
        record: &'a Record,
    },
    /// The record ended superseded: a target relay holds a newer version of its
    /// replaceable or addressable event, published from elsewhere
    /// ([`crate::core::StopReason::RemoteNewer`]; `superseded_by` is its id).
    Superseded {
        /// The record as stored.
        record: &'a Record,
    },
    /// The record became exhausted: its policy can no longer be met (`satisfaction`
    /// `exhausted`; delivery to the targets still open may go on, stage
    /// `delivering`), or the budget or deadline ended it first (see `record.reason`).
    Exhausted {
        /// The record as stored.
        record: &'a Record,
    },
    /// The record was handed back without an attempt (its lease ran short before a
    /// relay had room for it) and is due again at once.
    Released {
        /// The record as stored.
        record: &'a Record,
    },
    /// The record was waiting for a relay that could not be reached, which answered
    /// again: it is due at once ([`Store::relay_back`]); this run claims it.
    Woken {
        /// The record as stored.
        record: &'a Record,
    },
    /// A draft was signed, checked and stored signed: it is `pending` now.
    Signed {
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
    /// When to run again (unix ms), if any record waits: the earliest due time, or a
    /// little later so that the records this run retried come due by then together
    /// ([`coalesce_due`]).
    pub next_due_ms: Option<u64>,
    /// How long answers waited, from their arrival to the commit that recorded them.
    pub ok_to_commit: Latency,
}

/// A distribution of waits in milliseconds (by the run's clock), from [`Waits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Latency {
    /// How many waits were counted.
    pub count: u32,
    /// The median.
    pub median_ms: u64,
    /// The 99th percentile (nearest rank).
    pub p99_ms: u64,
    /// The longest.
    pub max_ms: u64,
}

/// Waits counted in buckets, exact to 1 ms below 100 ms, to 10 ms below 1 s, to 100 ms
/// below 60 s; a percentile is its bucket's upper end. A histogram instead of sorting
/// the samples: `sort_unstable` of `u64` cost the browser `.wasm` 3 467 bytes of code
/// (twiggy), more than the room left under its size budget.
#[derive(Debug, Default)]
pub struct Waits {
    counts: Vec<u32>,
    total: u32,
    max_ms: u64,
}

impl Waits {
    fn bucket(ms: u64) -> usize {
        let b = match ms {
            0..=99 => ms,
            100..=999 => 100 + (ms - 100) / 10,
            1_000..=59_999 => 190 + (ms - 1_000) / 100,
            _ => 780,
        };
        b as usize
    }

    fn upper(bucket: usize) -> u64 {
        let b = bucket as u64;
        match b {
            0..=99 => b,
            100..=189 => 100 + (b - 100) * 10 + 9,
            190..=779 => 1_000 + (b - 190) * 100 + 99,
            _ => u64::MAX,
        }
    }

    /// Counts one wait.
    pub fn add(&mut self, ms: u64) {
        let b = Waits::bucket(ms);
        if self.counts.len() <= b {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] = self.counts[b].saturating_add(1);
        self.total = self.total.saturating_add(1);
        self.max_ms = self.max_ms.max(ms);
    }

    /// The wait at percentile `q` (1..=100, nearest rank), at most the longest.
    fn percentile(&self, q: u32) -> u64 {
        let rank = (u64::from(self.total) * u64::from(q)).div_ceil(100).max(1);
        let mut seen = 0u64;
        for (b, &n) in self.counts.iter().enumerate() {
            seen += u64::from(n);
            if seen >= rank {
                return Waits::upper(b).min(self.max_ms);
            }
        }
        self.max_ms
    }

    /// The distribution.
    pub fn latency(&self) -> Latency {
        if self.total == 0 {
            return Latency::default();
        }
        Latency {
            count: self.total,
            median_ms: self.percentile(50),
            p99_ms: self.percentile(99),
            max_ms: self.max_ms,
        }
    }
}

fn lease_id(random: &mut dyn FnMut() -> u32) -> String {
    let mut id = String::with_capacity(32);
    for _ in 0..4 {
        id.push_str(&format!("{:08x}", random()));
    }
    id
}

/// One flush round: one claim of up to `batch_size` ready records under a fresh
/// lease id (drawn from `random`), each published to its unsettled targets and
/// recorded as [`run`] does (it is a [`run`] limited to one claim); the counts of
/// that round.
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
    let bounds = RunBounds {
        max_ticks: 1,
        keep_going: &|| true,
        take_over: false,
        sleep: None,
        hurry: None,
        hold: None,
        nudge: None,
        prepare: 0,
    };
    let summary = run(store, transport, config, clock, random, observer, &bounds).await?;
    Ok(summary.stats)
}

/// Counts a claimed batch, reports each attempt about to start (or each record the
/// claim exhausted) and lists the leased records with their unsettled targets.
fn begin_attempts(
    claimed: Vec<Record>,
    stats: &mut TickStats,
    observer: &mut dyn FnMut(FlushEvent<'_>),
) -> Vec<(Record, Vec<String>)> {
    stats.claimed += claimed.len() as u32;
    let mut work = Vec::new();
    for record in claimed {
        if record.stage == Stage::Leased {
            let targets = record.attempt_targets();
            let attempt = record
                .lease
                .as_ref()
                .map_or(record.attempts + 1, |l| l.attempt);
            observer(FlushEvent::AttemptStarted {
                record: &record,
                attempt,
                targets: &targets,
            });
            stats.attempts += 1;
            stats.publishes += targets.len() as u32;
            work.push((record, targets));
        } else {
            report_end(&record, stats, observer);
        }
    }
    work
}

/// Counts and reports a record whose delivery ended without a new verdict (its deadline
/// passed at the claim, or its budget or deadline ran out after an attempt): `Exhausted`
/// when it never had a verdict, `Settled` when its verdict was reported before.
fn report_end(record: &Record, stats: &mut TickStats, observer: &mut dyn FnMut(FlushEvent<'_>)) {
    if record.satisfaction == Satisfaction::Pending {
        stats.exhausted += 1;
        observer(FlushEvent::Exhausted { record });
    } else {
        stats.settled += 1;
        observer(FlushEvent::Settled { record });
    }
}

/// Counts and reports what the store made of a group of completions; a storage
/// failure (not an item's lost lease) is returned.
fn finish_attempts(
    completions: &[Completion],
    recorded: Vec<Result<Record, StoreError>>,
    stats: &mut TickStats,
    observer: &mut dyn FnMut(FlushEvent<'_>),
) -> Result<(), StoreError> {
    for (completion, result) in completions.iter().zip(recorded) {
        match result {
            // A relay held a newer version (`StopReason::RemoteNewer`).
            Ok(next) if next.stage == Stage::Superseded => {
                observer(FlushEvent::Superseded { record: &next });
            }
            // A verdict is reported once, when it is new; the end of delivery after it
            // is reported apart (`Settled`).
            Ok(next) if next.verdict_is_new() => {
                if next.satisfaction == Satisfaction::Satisfied {
                    stats.satisfied += 1;
                    observer(FlushEvent::Delivered { record: &next });
                } else {
                    stats.exhausted += 1;
                    observer(FlushEvent::Exhausted { record: &next });
                }
            }
            Ok(next) if next.is_terminal() => report_end(&next, stats, observer),
            Ok(next) => {
                stats.retrying += 1;
                observer(FlushEvent::Retrying { record: &next });
            }
            Err(e) if e.is_item_error() => {
                stats.lost_claims += 1;
                observer(FlushEvent::LostClaim { id: &completion.id });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// True while some record was already due at `started_ms`. A flush run attempts what
/// was due when it started and stops there: records that became due again during the
/// run (a short backoff while every relay is down) wait for the next run instead of
/// keeping this one going until its tick limit.
pub async fn due_since<S: Store>(store: &S, started_ms: u64) -> Result<bool, StoreError> {
    Ok(store.next_due(0).await?.is_some_and(|d| d <= started_ms))
}

/// Runs a whole flush with [`run`], without an outside stop: until a claim finds
/// nothing or nothing that was due at the start of the run is left ([`due_since`]),
/// or `max_ticks` (at most [`MAX_TICKS`]) claims have run; then reports the totals
/// and the next due time.
pub async fn flush_until_idle<S: Store, T: Transport>(
    store: &S,
    transport: &T,
    config: &FlushConfig,
    clock: &dyn Fn() -> u64,
    random: &mut dyn FnMut() -> u32,
    observer: &mut dyn FnMut(FlushEvent<'_>),
    max_ticks: u32,
) -> Result<FlushSummary, StoreError> {
    let bounds = RunBounds {
        max_ticks,
        keep_going: &|| true,
        take_over: false,
        sleep: None,
        hurry: None,
        hold: None,
        nudge: None,
        prepare: 0,
    };
    run(store, transport, config, clock, random, observer, &bounds).await
}

/// When a [`run`] stops claiming.
pub struct RunBounds<'a> {
    /// The most claims (ticks) the run makes; at most [`MAX_TICKS`].
    pub max_ticks: u32,
    /// Asked before each claim: `false` stops claiming (the outbox closed, the device
    /// went offline). What was already claimed is still published and recorded.
    pub keep_going: &'a dyn Fn() -> bool,
    /// The caller holds the database's Web Lock, so it is the only live flusher: the
    /// run's first claims take over the live leases of other owners (flushers that are
    /// gone: a closed tab, a killed browser, a terminated worker) with
    /// [`Store::take_over`] until none is left, and attempts those records in this run
    /// instead of leaving them until their leases expire. `false` (no lock: the expiry
    /// path only) for a caller that cannot tell a dead flusher from a live one.
    pub take_over: bool,
    /// A timer (`sleep(ms)` resolves after `ms`), so answers waiting for a group are
    /// recorded once [`FlushConfig::group_wait_ms`] has passed even when nothing else
    /// happens; without one the run looks at the clock when something else happens.
    pub sleep: Option<&'a dyn Fn(u64) -> LocalBoxFuture<'static, ()>>,
    /// Asked on every turn: how many records that must not wait behind a backlog (not
    /// `low`) were enqueued since the last ask. When some were, a claim of its own is
    /// made at once, beside a bulk claim in flight and even with a window's worth of
    /// publishes waiting, for at most that many records (claims come in priority
    /// order, so it takes them, or anything of higher priority); their publishes go
    /// ahead of the lower-priority ones waiting for the same relay; until that claim
    /// returns no `low` publish starts (each would be one more message ahead of the
    /// record's own on the relay's connection; measured in docs/BENCHMARKS.md); until the
    /// `high` ones among them (in that claim or any claim that ran meanwhile) are
    /// being recorded, no bulk transaction starts ([`hold_bound`]). `None`: claims only
    /// as the window empties.
    pub hurry: Option<&'a dyn Fn() -> u32>,
    /// Asked on every turn: `true` while a `high` record is being enqueued. Until it
    /// is written (and then, once hurried, until it is recorded) the run starts no
    /// bulk transaction (claims, group recordings, hand-backs, wake-ups), for at most
    /// [`hold_bound`]: in IndexedDB the record's own claim would queue behind each.
    /// Nor does any `low` publish start (see `hurry`). `None`: never.
    pub hold: Option<&'a dyn Fn() -> bool>,
    /// Fired by the caller when `hurry` or `hold` may have changed: the run looks again
    /// at once (and resets it) instead of at its next step, which behind a held
    /// backlog may be milliseconds away. `None`: at the next step.
    pub nudge: Option<&'a Signal>,
    /// What this context prepares ([`crate::core::ClaimRequest::prepare`];
    /// [`sign::sign_drafts`] runs before it): the run's [`FlushSummary::next_due_ms`]
    /// counts the due times of those records too. 0: none.
    pub prepare: u8,
}

/// A whole flush as a pipeline: claims, publishes and recordings overlap instead of
/// taking turns. Up to `concurrency` publishes are in flight to each relay at any time,
/// across claimed batches (a slow answer holds one place in its relay's window, not the
/// whole batch, and a slow relay does not hold back the others' windows); the next
/// batch is claimed while the current one publishes (while fewer than `concurrency`
/// publishes per relay, on average, wait to start); attempts whose relays have all
/// answered are recorded in groups of about `batch_size` (sooner when nothing else is
/// publishing or nothing is left to claim), one [`Store::complete_attempts`] call (one
/// transaction in IndexedDB) per group and one recording at a time, beside which the
/// answers of `high` records are recorded at once in small groups of their own (one
/// such recording at a time, created before anything else of its turn). While a hurried
/// `high` record is being enqueued ([`RunBounds::hold`]), claimed or published, no bulk
/// transaction starts, and until a hurried record is claimed no `low` publish starts,
/// for at most [`hold_bound`]. Each attempt is recorded under its own lease, exactly as
/// [`tick`] records it; observers see the same events.
///
/// Nothing waits past half a lease, so an attempt is recorded while its lease holds
/// (given a lease at least twice the transport's longest publish): a publish that
/// has not started by then is skipped (its target is recorded as `notAttempted`), a
/// record none of whose publishes started is handed back unattempted
/// ([`Store::release`], [`FlushEvent::Released`]) and claimed again, and an attempt
/// past half its lease is recorded without waiting for a group.
///
/// When the transport reports a relay that answered again after a failed connection
/// ([`Transport::take_recovered`]), the records waiting for it are made due
/// ([`Store::relay_back`], counted in `woken`) and this run claims them.
///
/// Stops claiming when a claim finds nothing, when nothing that was due at the start
/// is left ([`due_since`]), after `bounds.max_ticks` claims, or when
/// `bounds.keep_going` says so; finishes what it claimed, then reports the totals and
/// the next due time. A storage failure stops everything new (no claim, publish or
/// recording starts), lets what is running finish, and is returned; the leases of
/// the attempts not recorded expire and those records are published again later
/// (at-least-once delivery).
///
/// The decisions are the [`Pipeline`]'s ([`pipeline`]); this is its driver: it asks it
/// what starts, performs each [`Action`] with the store, the transport and the timer,
/// and reports each result back.
pub async fn run<S: Store, T: Transport>(
    store: &S,
    transport: &T,
    config: &FlushConfig,
    clock: &dyn Fn() -> u64,
    random: &mut dyn FnMut() -> u32,
    observer: &mut dyn FnMut(FlushEvent<'_>),
    bounds: &RunBounds<'_>,
) -> Result<FlushSummary, StoreError> {
    config.validate()?;
    let take_over = bounds.take_over;
    let started_ms = clock();
    // One retry jitter for the whole run: records retried together (a dead relay's
    // backlog) fall due together instead of one by one.
    let jitter = random();
    let mut pipeline = Pipeline::new(
        config,
        started_ms,
        bounds.max_ticks,
        take_over,
        bounds.sleep.is_some(),
    );
    let mut report = Report {
        stats: TickStats::default(),
        failure: None,
        observer,
    };
    let mut running: FuturesUnordered<LocalBoxFuture<'_, Done>> = FuturesUnordered::new();
    let mut timer: Option<LocalBoxFuture<'static, ()>> = None;
    loop {
        if !pipeline.stopped() {
            let now = clock();
            let writing = bounds.hold.is_some_and(|h| h());
            let mut starter = Starter {
                store,
                transport,
                config,
                bounds,
                random: &mut *random,
                jitter,
                running: &mut running,
                now,
            };
            let next = pipeline.turn(now, writing, &mut starter);
            if let Some(ms) = next.timer_ms {
                timer = bounds.sleep.map(|sleep| sleep(ms));
            }
            if next.again {
                continue;
            }
        }
        // The timer and the nudge only wake the loop; the run ends when nothing else
        // is running.
        let done = poll_fn(|cx| {
            if let Poll::Ready(done) = running.poll_next_unpin(cx) {
                return Poll::Ready(done);
            }
            if timer
                .as_mut()
                .is_some_and(|t| t.as_mut().poll(cx).is_ready())
            {
                timer = None;
                return Poll::Ready(Some(Done::TimerFired));
            }
            if let Some(nudge) = bounds.nudge.filter(|n| n.poll_fired(cx)) {
                nudge.reset();
                return Poll::Ready(Some(Done::Nudged));
            }
            Poll::Pending
        })
        .await;
        let Some(done) = done else {
            break;
        };
        // Asked before the result is reported, so a claim that took a record enqueued
        // meanwhile knows it was hurried.
        if let Some(n) = bounds.hurry.map(|h| h()).filter(|n| *n > 0) {
            pipeline.hurried(n, clock());
        }
        report.done(done, &mut pipeline, clock);
    }
    if let Some(e) = report.failure {
        return Err(e);
    }
    let mut stats = report.stats;
    stats.publishes = stats.publishes.saturating_sub(pipeline.skipped());
    Ok(FlushSummary {
        stats,
        ticks: pipeline.ticks(),
        next_due_ms: store
            .next_due(bounds.prepare)
            .await?
            .map(|due| coalesce_due(due, started_ms, clock())),
        ok_to_commit: pipeline.latency(),
    })
}

/// What a [`run`]'s driver waits for: an [`Action`] that finished, with its result.
enum Done {
    /// A claim returned: its ticket, its lease id, the records and whether more is due.
    Claimed(ClaimTicket, String, Result<(Vec<Record>, bool), StoreError>),
    /// A publish answered (or a read-back found the event: `true`).
    Published(PublishTicket, String, PublishReport, bool),
    /// A group of completions was recorded.
    Recorded(Recording, Vec<Result<Record, StoreError>>),
    /// Records were handed back unattempted.
    HandedBack(Vec<Unattempted>, Vec<Result<Record, StoreError>>),
    /// The records waiting for relays that answered again were made due (at that time;
    /// those relays).
    Woken(u64, Vec<String>, Result<Vec<Record>, StoreError>),
    /// The group commit's timer fired.
    TimerFired,
    /// A held run's look again is over.
    LookedAgain,
    /// The caller's nudge fired ([`RunBounds::nudge`]).
    Nudged,
}

/// A [`run`]'s turn: answers the pipeline's questions and starts its actions at `now`.
struct Starter<'r, 'a, S, T> {
    store: &'a S,
    transport: &'a T,
    config: &'a FlushConfig,
    bounds: &'r RunBounds<'r>,
    random: &'r mut dyn FnMut() -> u32,
    /// The run's retry jitter.
    jitter: u32,
    running: &'r mut FuturesUnordered<LocalBoxFuture<'a, Done>>,
    now: u64,
}

impl<S: Store, T: Transport> Driver for Starter<'_, '_, S, T> {
    fn lease_id(&mut self) -> Option<String> {
        (self.bounds.keep_going)().then(|| lease_id(self.random))
    }

    fn recovered(&mut self) -> Vec<String> {
        self.transport.take_recovered()
    }

    fn start(&mut self, action: Action) {
        let (store, now) = (self.store, self.now);
        self.running.push(match action {
            Action::Claim {
                request,
                ticket,
                due_cutoff,
            } => Box::pin(async move {
                let claimed = async {
                    if let ClaimKind::TakeOver { .. } = ticket.kind {
                        return Ok((store.take_over(&request, now).await?, true));
                    }
                    let records = store.claim(&request, now).await?;
                    let more = matches!(ticket.kind, ClaimKind::Bulk)
                        && !records.is_empty()
                        && due_since(store, due_cutoff).await?;
                    Ok((records, more))
                }
                .await;
                Done::Claimed(ticket, request.lease_id, claimed)
            }),
            Action::Publish {
                ticket,
                relay,
                record,
            } => {
                let transport = self.transport;
                let kinds = &self.config.newer_kinds;
                Box::pin(async move {
                    // Read-back: after an answer that left it unclear whether the relay
                    // stored the event, ask it by id first; sent again only when it
                    // does not say it holds it.
                    if record.unclear_at(&relay)
                        && transport.holds(&relay, &record.event.id).await == Some(true)
                    {
                        let report = PublishReport::new(Outcome::Duplicate, READ_BACK);
                        return Done::Published(ticket, relay, report, true);
                    }
                    // A stale version is never sent over a newer one the relay holds.
                    if record
                        .event
                        .meta
                        .as_ref()
                        .is_some_and(|m| kinds.contains(&m.kind))
                    {
                        if let Some((id, at)) = transport.newer(&relay, &record.event).await {
                            let outcome = Outcome::Rejected(RejectReason::Newer);
                            let report = PublishReport::new(outcome, newer_message(&id, at));
                            return Done::Published(ticket, relay, report, false);
                        }
                    }
                    let report = transport.publish(&relay, &record.event).await;
                    Done::Published(ticket, relay, report, false)
                })
            }
            Action::Record(mut recording) => {
                for completion in &mut recording.completions {
                    completion.jitter = self.jitter;
                }
                let retry = &self.config.retry;
                Box::pin(async move {
                    let recorded = store
                        .complete_attempts(&recording.completions, retry, now)
                        .await;
                    Done::Recorded(recording, recorded)
                })
            }
            Action::HandBack(records) => Box::pin(async move {
                let mut released = Vec::with_capacity(records.len());
                for unattempted in &records {
                    let r = &unattempted.record;
                    let lease_id = &unattempted.lease_id;
                    let result = store.release(&r.id, lease_id, r.revision, now).await;
                    let stop = matches!(&result, Err(e) if !e.is_item_error());
                    released.push(result);
                    if stop {
                        break;
                    }
                }
                Done::HandedBack(records, released)
            }),
            Action::Wake(relays) => Box::pin(async move {
                let mut woken = Vec::new();
                for relay in &relays {
                    match store.relay_back(relay, now).await {
                        Ok(records) => woken.extend(records),
                        Err(e) => return Done::Woken(now, relays, Err(e)),
                    }
                }
                Done::Woken(now, relays, Ok(woken))
            }),
            Action::LookAgain => {
                let sleep = self.bounds.sleep.map(|sleep| sleep(1));
                Box::pin(async move {
                    if let Some(sleep) = sleep {
                        sleep.await;
                    }
                    Done::LookedAgain
                })
            }
        });
    }
}

/// What a [`run`] tells its caller: the counts, the observer's events and the first
/// storage failure.
struct Report<'o> {
    stats: TickStats,
    failure: Option<StoreError>,
    observer: &'o mut dyn FnMut(FlushEvent<'_>),
}

impl Report<'_> {
    /// Counts and reports what finished, and tells `pipeline` (at `clock`'s time).
    fn done(&mut self, done: Done, pipeline: &mut Pipeline<'_>, clock: &dyn Fn() -> u64) {
        let (stats, observer) = (&mut self.stats, &mut *self.observer);
        match done {
            Done::Claimed(ticket, _, Err(e)) => {
                pipeline.claimed(ticket, None, 0);
                self.failure.get_or_insert(e);
            }
            Done::Claimed(ticket, lease_id, Ok((records, more))) => {
                if let ClaimKind::TakeOver { .. } = ticket.kind {
                    // Orphans past their deadline come back exhausted: taken, but not
                    // over (counted as `exhausted` only).
                    let leased = records.iter().filter(|r| r.stage == Stage::Leased);
                    let n = u32::try_from(leased.count()).unwrap_or(u32::MAX);
                    stats.taken_over = stats.taken_over.saturating_add(n);
                }
                let taken = records.len();
                let last = records.last().map(|r| r.priority);
                let attempts = begin_attempts(records, stats, observer);
                let claimed = ClaimedBatch {
                    lease_id,
                    taken,
                    last,
                    more,
                    attempts,
                };
                pipeline.claimed(ticket, Some(claimed), clock());
            }
            Done::Published(ticket, relay, report, read_back) => {
                if read_back {
                    stats.read_back = stats.read_back.saturating_add(1);
                }
                pipeline.published(ticket, relay, report, clock());
            }
            Done::Recorded(recording, recorded) => {
                let now = clock();
                let result = finish_attempts(&recording.completions, recorded, stats, observer);
                pipeline.recorded(recording, now, result.is_ok());
                if let Err(e) = result {
                    self.failure.get_or_insert(e);
                }
            }
            Done::HandedBack(records, released) => {
                let mut stored = true;
                for (unattempted, result) in records.iter().zip(released) {
                    match result {
                        Ok(next) => {
                            stats.released += 1;
                            stats.attempts = stats.attempts.saturating_sub(1);
                            observer(FlushEvent::Released { record: &next });
                        }
                        Err(e) if e.is_item_error() => {
                            stats.lost_claims += 1;
                            let id = &unattempted.record.id;
                            observer(FlushEvent::LostClaim { id });
                        }
                        Err(e) => {
                            stored = false;
                            self.failure.get_or_insert(e);
                        }
                    }
                }
                pipeline.handed_back(stored);
            }
            Done::Woken(at, relays, Err(e)) => {
                pipeline.woken(at, relays, None);
                self.failure.get_or_insert(e);
            }
            Done::Woken(at, relays, Ok(woken)) => {
                let n = u32::try_from(woken.len()).unwrap_or(u32::MAX);
                stats.woken = stats.woken.saturating_add(n);
                for record in &woken {
                    observer(FlushEvent::Woken { record });
                }
                pipeline.woken(at, relays, Some(woken.len()));
            }
            Done::TimerFired => pipeline.timer_fired(),
            Done::LookedAgain => pipeline.looked_again(),
            Done::Nudged => {}
        }
    }
}
