//! The flusher: claim batches of due records, publish each to its unsettled targets
//! (a window of publishes in flight per relay), record the evidence and release with
//! the next due time, in grouped store calls; claiming, publishing and recording
//! overlap ([`run`]). It holds no state between runs and no business rule: the store
//! and [`crate::core`] decide every transition. The clock, the randomness and the
//! observer are arguments, so a run is deterministic under test. A run told it holds
//! the database's Web Lock ([`RunBounds::take_over`]) first takes over the live leases
//! of flushers that are gone ([`Store::take_over`]) and attempts those records too.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use futures_util::future::LocalBoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde::{Deserialize, Serialize};

use crate::core::machine::{MAX_CLAIM, MAX_LEASE_FIELD_LEN, MAX_LEASE_MS};
use crate::core::{
    ClaimRequest, Completion, CoreError, Priority, Record, RetryConfig, Satisfaction, Signal,
    Stage, TargetResult,
};
use crate::store::{Store, StoreError};
use crate::transport::{PublishReport, Transport};

/// The most publishes in flight to one relay.
pub const MAX_CONCURRENCY: u32 = 256;
/// The most ticks one [`flush_until_idle`] runs.
pub const MAX_TICKS: u32 = 10_000;
/// The default [`FlushConfig::low_concurrency`]: the most publishes of `low` records in
/// flight to one relay. A relay answers one connection's messages in order, so a
/// `high` or `normal` record published behind a `low` backlog waits for at most this
/// many of the backlog's publishes, whatever the window. Why 4 and not 16: the A/B
/// figures are in docs/BENCHMARKS.md ("The last change measured") and docs/API.md.
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
    /// they are ([`ClaimRequest::relays`]). Empty: every record, to all its targets.
    #[serde(default)]
    pub relays: Vec<String>,
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
    /// before a relay had room for them (not counted in `attempts`).
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
    };
    let summary = run(store, transport, config, clock, random, observer, &bounds).await?;
    Ok(summary.stats)
}

fn claim_request(config: &FlushConfig, random: &mut dyn FnMut() -> u32) -> ClaimRequest {
    ClaimRequest {
        owner: config.owner.clone(),
        lease_id: lease_id(random),
        limit: config.batch_size,
        lease_ms: config.lease_ms,
        lanes: config.lanes.clone(),
        relays: config.relays.clone(),
    }
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

/// The completion of one attempt: its results in target order.
fn completion(
    record: &Record,
    lease_id: &str,
    results: Vec<TargetResult>,
    random: &mut dyn FnMut() -> u32,
) -> Completion {
    // Through the crate's one index sort (a closure here would be a copy of std's sort).
    let order = crate::core::semantics::sorted_positions(
        &results
            .iter()
            .map(|r| r.target.as_str())
            .collect::<Vec<_>>(),
    );
    let mut slots: Vec<Option<TargetResult>> = results.into_iter().map(Some).collect();
    let results: Vec<TargetResult> = order.into_iter().filter_map(|i| slots[i].take()).collect();
    Completion {
        id: record.id.clone(),
        lease_id: lease_id.to_string(),
        revision: record.revision,
        results,
        jitter: random(),
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
    Ok(store.next_due().await?.is_some_and(|d| d <= started_ms))
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
}

/// What a [`run`] is waiting for.
enum Step {
    /// A claim returned (with its lease id), and whether more was due at the start;
    /// `Some(limit)` for a takeover ([`Store::take_over`]) of at most `limit` records;
    /// `true` for a hurried claim (see [`RunBounds::hurry`]), and the run's count of
    /// hurried records when the claim started.
    Claimed(
        String,
        Option<u32>,
        (bool, u32),
        Result<(Vec<Record>, bool), StoreError>,
    ),
    /// One publish answered: the attempt's slot, the relay's lane, the relay, the
    /// report, and whether the record is `low`.
    Published(usize, usize, String, PublishReport, bool),
    /// A group of completions was recorded (with the arrival times of its answers).
    /// `true` for a recording of `high` records only (written beside the group).
    Recorded(
        bool,
        Vec<Completion>,
        Vec<u64>,
        Vec<Result<Record, StoreError>>,
    ),
    /// A group of unattempted records was handed back.
    Released(Vec<Slot>, Vec<Result<Record, StoreError>>),
    /// The records waiting for relays that answered again were made due (at that
    /// time; those relays).
    Woken(u64, Vec<String>, Result<Vec<Record>, StoreError>),
    /// The group commit's timer fired.
    Timer,
    /// A held run's look again ([`RunBounds::hold`]), or a nudge ([`RunBounds::nudge`]).
    Poll,
}

/// One relay's publishes in a [`run`].
struct Lane {
    relay: String,
    /// Publishes in flight (at most the window).
    inflight: usize,
    /// Of those, publishes of `low` records (at most [`FlushConfig::low_concurrency`]).
    low_inflight: usize,
    /// Slots of the attempts waiting to publish here, oldest first.
    queue: VecDeque<usize>,
}

/// An attempt in flight in a [`run`].
struct Slot {
    record: Rc<Record>,
    lease_id: Rc<str>,
    /// Half the lease: no publish starts from then on, and once its relays have
    /// answered the attempt is recorded without waiting for a group.
    hurry_at: u64,
    /// Publishes started.
    started: usize,
    /// Publishes not answered (or skipped) yet.
    waiting: usize,
    results: Vec<TargetResult>,
    /// When each answer arrived (the run's clock).
    answered: Vec<u64>,
    /// A `high` record of a hurried claim: until it is recorded, the run starts no
    /// bulk transaction (see [`hold_bound`]).
    holds: bool,
}

/// How long a hurried `high` record may hold back the run's bulk transactions (claims,
/// group recordings, hand-backs, wake-ups) at most: 200 ms, or a quarter of the lease
/// when that is shorter (so no bulk answer waits past half its lease).
///
/// Why: IndexedDB runs transactions over the same object store one after another, in
/// the order they were created, so a note's claim and recording queue behind every
/// bulk transaction created before them (each up to a batch of full rows, tens of ms
/// on a small machine). Holding new bulk transactions while the note is in flight
/// leaves it behind only those already started.
pub fn hold_bound(config: &FlushConfig) -> u64 {
    (config.lease_ms / 4).min(200)
}

/// The completions ready to record, and when they must be recorded by.
struct Ready {
    completions: Vec<Completion>,
    /// The arrival times of their answers.
    answers: Vec<u64>,
    /// The earliest of: the group commit's bound after the first of them, half the
    /// lease of any of them; `0` once a recording completed (write what gathered).
    by: u64,
    /// Of them, the completions of hurried `high` records that hold bulk transactions
    /// back ([`hold_bound`]) until their recording starts.
    holds: usize,
}

impl Ready {
    fn new() -> Ready {
        Ready {
            completions: Vec::new(),
            answers: Vec::new(),
            by: u64::MAX,
            holds: 0,
        }
    }

    /// Adds a completion ready `now`; the first one starts the group's wait.
    fn push(&mut self, completion: Completion, hurry_at: u64, now: u64, wait: u64) {
        if self.completions.is_empty() {
            self.by = self.by.min(now.saturating_add(wait));
        }
        self.by = self.by.min(hurry_at);
        self.completions.push(completion);
    }
}

/// Where a slot goes once every relay of it has answered or been skipped: to the
/// completions `ready` to record, or, when no publish started, to the records to
/// hand back unattempted. A slot that held bulk transactions back ([`hold_bound`],
/// counted in `holding`) stops at once when handed back; otherwise its completion
/// keeps holding until its recording starts ([`Ready::holds`]).
fn settle(
    slot: Slot,
    [ready, urgent]: [&mut Ready; 2],
    (now, wait): (u64, u64),
    releases: &mut Vec<Slot>,
    holding: &mut usize,
    random: &mut dyn FnMut() -> u32,
) {
    if slot.started == 0 {
        *holding -= usize::from(slot.holds);
        releases.push(slot);
        return;
    }
    // A `high` record is recorded apart, at once: beside the group in flight (its
    // small transaction follows that one), not behind a bulk group.
    let ready = match slot.record.priority {
        Priority::High => urgent,
        _ => ready,
    };
    ready.answers.extend_from_slice(&slot.answered);
    ready.holds += usize::from(slot.holds);
    let done = completion(&slot.record, &slot.lease_id, slot.results, random);
    ready.push(done, slot.hurry_at, now, wait);
}

/// A whole flush as a pipeline: claims, publishes and recordings overlap instead of
/// taking turns. Up to `concurrency` publishes are in flight to each relay at any
/// time, across claimed batches (a slow answer holds one slot, not the whole batch,
/// and a slow relay does not hold back the others' windows); the next batch is
/// claimed while the current one publishes (while fewer than `concurrency` publishes
/// per relay, on average, wait to start); attempts whose relays have all answered are
/// recorded in groups of about `batch_size` (sooner when nothing else is publishing
/// or nothing is left to claim), one [`Store::complete_attempts`] call (one
/// transaction in IndexedDB) per group and one recording at a time, beside which the
/// answers of `high` records are recorded at once in small groups of their own (one
/// such recording at a time, created before anything else of its turn). While a hurried
/// `high` record is being enqueued ([`RunBounds::hold`]), claimed or published, no bulk
/// transaction starts, and until a hurried record is claimed no `low` publish starts,
/// for at most [`hold_bound`]. Each attempt is recorded under its own lease, exactly as [`tick`] records it; observers see the
/// same events.
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
    let started_ms = clock();
    let max_ticks = bounds.max_ticks.min(MAX_TICKS);
    let window = config.concurrency as usize;
    let low_window = config.concurrency.min(config.low_concurrency);
    let low_batch = low_window.saturating_mul(LOW_BATCH_PER_PUBLISH);
    let low_window = low_window as usize;
    // Whether the last bulk claim reached `low` records: the claims after it take
    // at most `low_batch`, while fewer than `low_window` per relay wait.
    let mut low_claims = false;
    let mut summary = FlushSummary::default();
    let mut slots: Vec<Option<Slot>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    // One lane per relay this run has published to: its publishes in flight and the
    // slots waiting for it, oldest first. `waiting` counts every lane's queue.
    let mut lanes: Vec<Lane> = Vec::new();
    let mut waiting = 0usize;
    let mut ready = Ready::new();
    let wait = config.group_wait_ms;
    let mut waits = Waits::default();
    let mut timer: Option<LocalBoxFuture<'static, ()>> = None;
    let mut releases: Vec<Slot> = Vec::new();
    let mut settled: Vec<usize> = Vec::new();
    let mut running: FuturesUnordered<LocalBoxFuture<'_, Step>> = FuturesUnordered::new();
    let (mut claiming, mut recording, mut releasing) = (false, false, false);
    // A hurried claim in flight (beside a bulk one), the slots that hold bulk
    // transactions back, and since when they do (see `hold_bound`).
    let mut hurry_claiming = false;
    let mut holding = 0usize;
    let mut hold_since = 0u64;
    // Hurried records signalled so far: a claim during which this grew may hold one.
    let mut hurry_seen = 0u32;
    // `high` records' answers, recorded apart (see `settle`).
    let mut urgent = Ready::new();
    let mut recording_urgent = false;
    // One recording of what `gathered` holds (one copy of its state machine for both
    // kinds of group).
    let record = |gathered: &mut Ready, urgently: bool, now: u64| -> LocalBoxFuture<'_, Step> {
        let group = std::mem::take(&mut gathered.completions);
        let answers = std::mem::take(&mut gathered.answers);
        gathered.by = u64::MAX;
        Box::pin(async move {
            let recorded = store.complete_attempts(&group, &config.retry, now).await;
            Step::Recorded(urgently, group, answers, recorded)
        })
    };
    let mut publishing = 0usize;
    let mut waking = false;
    // Relays that answered again: the next claim is filtered by them.
    let mut wake: Vec<String> = Vec::new();
    // Claims go on while something was due at this time: the start, or when records
    // were last woken.
    let mut due_cutoff = started_ms;
    let mut more = true;
    // Orphaned leases are taken over first, until a takeover finds fewer than a batch.
    let mut taking_over = bounds.take_over;
    let mut failure: Option<StoreError> = None;

    // One claim (one copy of its state machine for the bulk, hurried and takeover
    // claims): a takeover, or a claim and, unless hurried, whether more was due since
    // `cutoff` (a hurried claim leaves that to the bulk claims).
    let claim = |request: ClaimRequest,
                 take_over: Option<u32>,
                 hurry: (bool, u32),
                 (now, cutoff): (u64, u64)|
     -> LocalBoxFuture<'_, Step> {
        Box::pin(async move {
            let claimed = async {
                if take_over.is_some() {
                    return Ok((store.take_over(&request, now).await?, true));
                }
                let records = store.claim(&request, now).await?;
                let more = !hurry.0 && !records.is_empty() && due_since(store, cutoff).await?;
                Ok((records, more))
            }
            .await;
            Step::Claimed(request.lease_id, take_over, hurry, claimed)
        })
    };
    // Records enqueued during the run that must not wait (see `RunBounds::hurry`).
    let mut hurried = 0u32;
    loop {
        let mut held = false;
        if failure.is_none() {
            let now = clock();
            // `high` answers are recorded at once, apart, in a transaction created
            // before any other of this turn.
            if !recording_urgent && !urgent.completions.is_empty() {
                recording_urgent = true;
                running.push(record(&mut urgent, true, now));
                holding -= std::mem::take(&mut urgent.holds);
            }
            // Hurried records are claimed at once, beside a bulk claim in flight, in a
            // claim of their own (claims come in priority order, so it takes them or
            // anything of higher priority).
            if hurried > 0 && !hurry_claiming && summary.ticks < max_ticks && (bounds.keep_going)()
            {
                let mut request = claim_request(config, random);
                request.limit = request.limit.min(hurried);
                hurried = 0;
                hurry_claiming = true;
                hold_since = now;
                summary.ticks += 1;
                running.push(claim(request, None, (true, hurry_seen), (now, due_cutoff)));
            }
            // While a hurried `high` record is written or in flight, no bulk
            // transaction starts (bounded; without a timer, never when nothing else is
            // running, which would end the run).
            let writing = bounds.hold.is_some_and(|h| h());
            if !hurry_claiming && holding == 0 && !writing {
                hold_since = now;
            }
            held = (hurry_claiming || holding > 0 || writing)
                && now < hold_since.saturating_add(hold_bound(config))
                && (bounds.sleep.is_some() || !running.is_empty());
            // While a hurried record is written or claimed, no `low` publish starts: it
            // would queue on the relay's connection ahead of the record's own (bounded
            // as `held`; a hurry no claim takes, when the run stopped claiming, holds
            // nothing).
            let low_held = held && (hurry_claiming || writing);
            // The next batch is claimed while fewer than a window's worth of
            // publishes per relay wait to start.
            let claim_window = if low_claims { low_window } else { window };
            if !claiming
                && !held
                && more
                && summary.ticks < max_ticks
                && waiting < claim_window * lanes.len().max(1)
                && (bounds.keep_going)()
            {
                let mut request = claim_request(config, random);
                if low_claims {
                    request.limit = request.limit.min(low_batch);
                }
                if !wake.is_empty() && !taking_over {
                    request.relays = std::mem::take(&mut wake);
                }
                claiming = true;
                summary.ticks += 1;
                let take_over = taking_over.then_some(request.limit);
                running.push(claim(
                    request,
                    take_over,
                    (false, hurry_seen),
                    (now, due_cutoff),
                ));
            }
            // Each relay's oldest waiting publishes, while its window has room; one
            // whose record is past half its lease is skipped instead. `low` records
            // only while fewer than `low_window` of theirs are in flight (the queue is
            // in priority order: once its front is `low`, so is the rest).
            for (lane_index, lane) in lanes.iter_mut().enumerate() {
                while lane.inflight < window {
                    let Some(&slot) = lane.queue.front() else {
                        break;
                    };
                    let low = slots[slot]
                        .as_ref()
                        .is_some_and(|s| s.record.priority == Priority::Low);
                    if low && (low_held || lane.low_inflight >= low_window) {
                        break;
                    }
                    lane.queue.pop_front();
                    waiting -= 1;
                    let Some(s) = slots[slot].as_mut() else {
                        continue;
                    };
                    if now >= s.hurry_at {
                        s.waiting -= 1;
                        summary.stats.publishes = summary.stats.publishes.saturating_sub(1);
                        if s.waiting == 0 {
                            settled.push(slot);
                        }
                        continue;
                    }
                    s.started += 1;
                    let record = Rc::clone(&s.record);
                    lane.inflight += 1;
                    lane.low_inflight += usize::from(low);
                    publishing += 1;
                    let target = lane.relay.clone();
                    running.push(Box::pin(async move {
                        let report = transport.publish(&target, &record.event).await;
                        Step::Published(slot, lane_index, target, report, low)
                    }));
                }
            }
            // A relay that could not be reached answered again: what waits for it
            // comes due now, and this run claims it.
            if !waking && !held {
                let back = transport.take_recovered();
                if !back.is_empty() {
                    waking = true;
                    running.push(Box::pin(async move {
                        let mut woken = Vec::new();
                        for relay in &back {
                            match store.relay_back(relay, now).await {
                                Ok(records) => woken.extend(records),
                                Err(e) => return Step::Woken(now, back, Err(e)),
                            }
                        }
                        Step::Woken(now, back, Ok(woken))
                    }));
                }
            }
            for index in settled.drain(..) {
                if let Some(slot) = slots[index].take() {
                    free.push(index);
                    settle(
                        slot,
                        [&mut ready, &mut urgent],
                        (now, wait),
                        &mut releases,
                        &mut holding,
                        random,
                    );
                }
            }
            if !releasing && !held && !releases.is_empty() {
                let group = std::mem::take(&mut releases);
                releasing = true;
                running.push(Box::pin(async move {
                    let mut released = Vec::with_capacity(group.len());
                    for slot in &group {
                        let r = &slot.record;
                        let result = store.release(&r.id, &slot.lease_id, r.revision, now).await;
                        let stop = matches!(&result, Err(e) if !e.is_item_error());
                        released.push(result);
                        if stop {
                            break;
                        }
                    }
                    Step::Released(group, released)
                }));
            }
            // Group commit: one recording in flight; the answers that arrive
            // meanwhile gather and are written as soon as it completes. With none in
            // flight, a group is written once it has `batch_size` answers (fewer
            // transactions, each a disk flush with strict durability) or once its
            // first answer has waited `group_wait_ms` (the timer below), half a
            // lease, or at the tail (nothing publishing): no answer waits longer
            // than that bound or one commit before its transaction starts.
            let tail = waiting == 0
                && !claiming
                && !hurry_claiming
                && (!more || summary.ticks >= max_ticks);
            let pending = !ready.completions.is_empty();
            if !recording
                && !held
                && pending
                && (ready.completions.len() >= config.batch_size as usize
                    || publishing == 0
                    || tail
                    || now >= ready.by)
            {
                recording = true;
                running.push(record(&mut ready, false, now));
            } else if !recording && pending && timer.is_none() {
                if let Some(sleep) = bounds.sleep {
                    timer = Some(sleep(ready.by.saturating_sub(now)));
                }
            }
        }
        // `high` answers settled late in this turn are recorded at the top of the next.
        if failure.is_none() && running.is_empty() && !urgent.completions.is_empty() {
            continue;
        }
        // Held with nothing else running: look again shortly.
        if let Some(sleep) = bounds.sleep.filter(|_| held && running.is_empty()) {
            running.push(Box::pin(async move {
                sleep(1).await;
                Step::Poll
            }));
        }
        // The timer and the nudge only wake the loop; the run ends when nothing else
        // is running.
        let step = poll_fn(|cx| {
            if let Poll::Ready(step) = running.poll_next_unpin(cx) {
                return Poll::Ready(step);
            }
            if timer
                .as_mut()
                .is_some_and(|t| t.as_mut().poll(cx).is_ready())
            {
                return Poll::Ready(Some(Step::Timer));
            }
            if let Some(nudge) = bounds.nudge.filter(|n| n.poll_fired(cx)) {
                nudge.reset();
                return Poll::Ready(Some(Step::Poll));
            }
            Poll::Pending
        })
        .await;
        let Some(step) = step else {
            break;
        };
        // Asked before the step is handled, so a claim that took a record enqueued
        // meanwhile knows it was hurried.
        if let Some(n) = bounds.hurry.map(|h| h()).filter(|n| *n > 0) {
            hurried = hurried.saturating_add(n);
            hurry_seen = hurry_seen.wrapping_add(n);
            more = true;
            due_cutoff = due_cutoff.max(clock());
        }
        // A claim returned: its kind may claim again.
        match &step {
            Step::Claimed(_, _, (true, _), _) => hurry_claiming = false,
            Step::Claimed(..) => claiming = false,
            _ => {}
        }
        match step {
            Step::Claimed(_, _, _, Err(e)) => {
                failure.get_or_insert(e);
            }
            Step::Claimed(lease_id, take_over, (hurry, seen), Ok((records, due))) => {
                // A hurried record may be in any claim that ran after it was signalled.
                let hurried_in = hurry || seen != hurry_seen;
                match take_over {
                    // A takeover leaves `more` as it was: the claims follow.
                    Some(limit) => {
                        // Orphans past their deadline come back exhausted: taken, but
                        // not over (counted as `exhausted` only).
                        let leased = records.iter().filter(|r| r.stage == Stage::Leased);
                        let n = u32::try_from(leased.count()).unwrap_or(u32::MAX);
                        let stats = &mut summary.stats;
                        stats.taken_over = stats.taken_over.saturating_add(n);
                        taking_over = records.len() >= limit as usize;
                    }
                    // A hurried claim leaves `more` as it was: the bulk claims follow.
                    None if !hurry => {
                        more = due;
                        if let Some(last) = records.last() {
                            low_claims = last.priority == Priority::Low;
                        }
                    }
                    None => {}
                }
                let lease_id: Rc<str> = Rc::from(lease_id);
                for (record, targets) in begin_attempts(records, &mut summary.stats, observer) {
                    let hurry_at = record
                        .lease
                        .as_ref()
                        .map_or(0, |l| l.expires_ms.saturating_sub(config.lease_ms / 2));
                    let record = Rc::new(record);
                    if targets.is_empty() {
                        let done = completion(&record, &lease_id, Vec::new(), random);
                        ready.push(done, hurry_at, clock(), wait);
                        continue;
                    }
                    let priority = record.priority;
                    let holds = hurried_in && priority == Priority::High;
                    holding += usize::from(holds);
                    let slot = Slot {
                        record,
                        lease_id: Rc::clone(&lease_id),
                        hurry_at,
                        started: 0,
                        waiting: targets.len(),
                        results: Vec::with_capacity(targets.len()),
                        answered: Vec::with_capacity(targets.len()),
                        holds,
                    };
                    let index = match free.pop() {
                        Some(i) => {
                            slots[i] = Some(slot);
                            i
                        }
                        None => {
                            slots.push(Some(slot));
                            slots.len() - 1
                        }
                    };
                    for target in targets {
                        let lane = match lanes.iter().position(|l| l.relay == target) {
                            Some(i) => i,
                            None => {
                                lanes.push(Lane {
                                    relay: target,
                                    inflight: 0,
                                    low_inflight: 0,
                                    queue: VecDeque::new(),
                                });
                                lanes.len() - 1
                            }
                        };
                        // Ahead of every waiting publish of a lower priority.
                        let queue = &mut lanes[lane].queue;
                        let lower = |i: &usize| {
                            slots[*i]
                                .as_ref()
                                .is_some_and(|s| s.record.priority > priority)
                        };
                        let at = queue.iter().position(lower).unwrap_or(queue.len());
                        queue.insert(at, index);
                        waiting += 1;
                    }
                }
            }
            Step::Published(index, lane, target, report, low) => {
                publishing -= 1;
                lanes[lane].inflight -= 1;
                lanes[lane].low_inflight -= usize::from(low);
                let Some(slot) = slots[index].as_mut() else {
                    continue;
                };
                let now = clock();
                slot.results.push(TargetResult {
                    target,
                    outcome: report.outcome,
                    message: report.message,
                });
                slot.answered.push(now);
                slot.waiting -= 1;
                if slot.waiting == 0 {
                    if let Some(slot) = slots[index].take() {
                        free.push(index);
                        settle(
                            slot,
                            [&mut ready, &mut urgent],
                            (now, wait),
                            &mut releases,
                            &mut holding,
                            random,
                        );
                    }
                }
            }
            Step::Timer => timer = None,
            Step::Poll => {}
            Step::Recorded(urgently, group, answers, recorded) => {
                let done = clock();
                for &t in &answers {
                    waits.add(done.saturating_sub(t));
                }
                if urgently {
                    recording_urgent = false;
                } else {
                    recording = false;
                    // What gathered during this commit goes next, at once.
                    if !ready.completions.is_empty() {
                        ready.by = 0;
                    }
                }
                if let Err(e) = finish_attempts(&group, recorded, &mut summary.stats, observer) {
                    failure.get_or_insert(e);
                }
            }
            Step::Woken(_, _, Err(e)) => {
                waking = false;
                failure.get_or_insert(e);
            }
            Step::Woken(at, back, Ok(woken)) => {
                waking = false;
                // The next claim takes what waits for those relays, and attempts
                // those relays only (within the run's own relay filter, if any).
                wake = back
                    .into_iter()
                    .filter(|r| config.relays.is_empty() || config.relays.contains(r))
                    .collect();
                let n = u32::try_from(woken.len()).unwrap_or(u32::MAX);
                summary.stats.woken = summary.stats.woken.saturating_add(n);
                for record in &woken {
                    observer(FlushEvent::Woken { record });
                }
                if n > 0 {
                    more = true;
                    due_cutoff = due_cutoff.max(at);
                }
            }
            Step::Released(group, released) => {
                releasing = false;
                let stats = &mut summary.stats;
                for (slot, result) in group.iter().zip(released) {
                    match result {
                        Ok(next) => {
                            stats.released += 1;
                            stats.attempts = stats.attempts.saturating_sub(1);
                            observer(FlushEvent::Released { record: &next });
                        }
                        Err(e) if e.is_item_error() => {
                            stats.lost_claims += 1;
                            observer(FlushEvent::LostClaim {
                                id: &slot.record.id,
                            });
                        }
                        Err(e) => {
                            failure.get_or_insert(e);
                        }
                    }
                }
            }
        }
    }
    if let Some(e) = failure {
        return Err(e);
    }
    summary.next_due_ms = store.next_due().await?;
    summary.ok_to_commit = waits.latency();
    Ok(summary)
}
