//! The flusher's decisions, without I/O: a [`Pipeline`] owns the attempts in flight, the
//! per-relay publish queues, the groups of completions gathering to be recorded and the
//! holds, and answers two questions: what starts at a given time ([`Pipeline::turn`],
//! which hands its [`Action`]s to a [`Driver`]) and what a finished action changes (one
//! method each: [`Pipeline::claimed`], [`Pipeline::published`], [`Pipeline::recorded`],
//! …). It reads no clock, draws no randomness and calls no store or transport:
//! [`super::run`] is the driver that performs the actions and reports their results, so
//! each rule here is tested without a store or a transport (`pipeline/tests.rs`).
//!
//! Where each rule lives:
//! - the hold ([`Pipeline::hold`], bounded by [`hold_bound`]): while a hurried `high`
//!   record is claimed, published or waits to be recorded, or one is being written, no
//!   bulk transaction starts, and until it is claimed no `low` publish starts;
//! - the hurry ([`Pipeline::hurried`], `Pipeline::claim_hurried`): records enqueued
//!   during the run that must not wait are claimed at once in a claim of their own;
//! - the low window (`Pipeline::start_publishes`, `Pipeline::claim_bulk`): at most
//!   `low_concurrency` publishes of `low` records in flight per relay, and smaller claims
//!   once the claims have reached `low` records;
//! - the publish queues ([`RelayQueue`]; `Pipeline::queue`, `Pipeline::start_publishes`):
//!   per relay, in priority order, at most `concurrency` in flight; no publish starts
//!   past half a lease, and a record none of whose publishes started is handed back
//!   (`Pipeline::close`);
//! - group commit (`Pipeline::record_bulk`): one bulk recording at a time, written at
//!   `batch_size` completions, when nothing publishes, or by its group's bound (the
//!   tail of a run too); `high` records are recorded apart, at once (`Pipeline::close`,
//!   [`Pipeline::turn`]).

use std::collections::VecDeque;
use std::rc::Rc;

use crate::core::{ClaimRequest, Completion, Priority, Record, TargetResult};
use crate::transport::PublishReport;

use super::{FlushConfig, Latency, Waits, LOW_BATCH_PER_PUBLISH, MAX_TICKS};

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

/// Which kind of claim an [`Action::Claim`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimKind {
    /// A claim of the due backlog, one batch; it also tells whether more is due.
    Bulk,
    /// A claim of the records enqueued during the run that must not wait
    /// ([`super::RunBounds::hurry`]), beside a bulk claim in flight.
    Hurried,
    /// A takeover of at most `limit` orphaned leases ([`crate::store::Store::take_over`]).
    TakeOver {
        /// The request's limit.
        limit: u32,
    },
}

/// A claim in flight, handed back to [`Pipeline::claimed`] with its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimTicket {
    /// Its kind.
    pub kind: ClaimKind,
    /// How many hurried records had been signalled when it started: a `high` record it
    /// takes after another was signalled may be that one.
    hurries_seen: u32,
}

/// A publish in flight, handed back to [`Pipeline::published`] with its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishTicket {
    /// The attempt's index among the attempts in flight.
    attempt: usize,
    /// The relay's publish queue.
    queue: usize,
    /// Whether the record is `low` (it counts in the queue's low window).
    low: bool,
}

/// A group of completions to record in one [`crate::store::Store::complete_attempts`].
#[derive(Debug)]
pub struct Recording {
    /// `true` for `high` records' completions, recorded apart, beside the bulk group.
    pub high: bool,
    /// The completions, their `jitter` left for the driver to draw.
    pub completions: Vec<Completion>,
    /// When each of their answers arrived.
    answered: Vec<u64>,
}

/// A claimed record none of whose publishes started before half its lease: to hand
/// back unattempted ([`crate::store::Store::release`]).
#[derive(Debug)]
pub struct Unattempted {
    /// The record as claimed.
    pub record: Rc<Record>,
    /// The lease it was claimed under.
    pub lease_id: Rc<str>,
}

/// What the driver starts, in this order (IndexedDB runs transactions in the order they
/// are created).
#[derive(Debug)]
pub enum Action {
    /// Claim (`Bulk`, `Hurried`) or take over (`TakeOver`) with `request`; a bulk claim
    /// that took something also asks whether a record due at `due_cutoff` is left
    /// ([`super::due_since`]). Report with [`Pipeline::claimed`].
    Claim {
        /// The claim.
        request: ClaimRequest,
        /// Handed back with the result.
        ticket: ClaimTicket,
        /// Claims go on while something due at this time is left.
        due_cutoff: u64,
    },
    /// Publish `record`'s event to `relay`. Report with [`Pipeline::published`].
    Publish {
        /// Handed back with the report.
        ticket: PublishTicket,
        /// The relay.
        relay: String,
        /// The record.
        record: Rc<Record>,
    },
    /// Record a group of completions. Report with [`Pipeline::recorded`].
    Record(Recording),
    /// Hand these records back unattempted. Report with [`Pipeline::handed_back`].
    HandBack(Vec<Unattempted>),
    /// Make the records waiting for these relays due ([`crate::store::Store::relay_back`]).
    /// Report with [`Pipeline::woken`].
    Wake(Vec<String>),
    /// Held with nothing else in flight: look again in 1 ms (report with
    /// [`Pipeline::looked_again`]). Only with a timer.
    LookAgain,
}

/// A claim's result, for [`Pipeline::claimed`].
#[derive(Debug)]
pub struct ClaimedBatch {
    /// The lease id it claimed under.
    pub lease_id: String,
    /// How many records it took (leased, or ended at the claim).
    pub taken: usize,
    /// The priority of the last record it took.
    pub last: Option<Priority>,
    /// A bulk claim: whether something due at its `due_cutoff` is left.
    pub more: bool,
    /// The leased records with their unsettled targets, in claim order.
    pub attempts: Vec<(Record, Vec<String>)>,
}

/// What the driver does after a turn's actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Next {
    /// Turn again at once: `high` completions gathered with nothing in flight.
    pub again: bool,
    /// Start the group commit's timer: turn again after this many ms (report with
    /// [`Pipeline::timer_fired`]); it does not keep the run going. Only with a timer
    /// ([`Pipeline::new`]).
    pub timer_ms: Option<u64>,
}

/// What a turn asks its driver, and where it sends the actions that start.
pub trait Driver {
    /// Asked before each claim: the new claim's lease id, or `None` when claims stop
    /// ([`super::RunBounds::keep_going`]).
    fn lease_id(&mut self) -> Option<String>;
    /// Asked when a wake-up may start: the relays that answered again since the last
    /// ask ([`crate::transport::Transport::take_recovered`]).
    fn recovered(&mut self) -> Vec<String>;
    /// Starts `action` (actions come in the order to start them).
    fn start(&mut self, action: Action);
}

/// What the hold keeps back during one turn ([`Pipeline::hold`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hold {
    /// No bulk transaction starts: claims, group recordings, hand-backs, wake-ups.
    pub bulk: bool,
    /// No publish of a `low` record starts.
    pub low: bool,
}

/// One relay's publish queue: its publishes in flight and the attempts waiting to
/// publish there.
#[derive(Debug)]
pub struct RelayQueue {
    relay: String,
    /// Publishes in flight (at most the window).
    in_flight: usize,
    /// Of those, publishes of `low` records (at most the low window).
    low_in_flight: usize,
    /// The attempts waiting to publish here, in priority order, oldest first within a
    /// priority.
    waiting: VecDeque<usize>,
}

/// An attempt in flight: a leased record being published to its targets.
#[derive(Debug)]
struct Attempt {
    record: Rc<Record>,
    lease_id: Rc<str>,
    /// Half the lease: no publish starts from then on, and once its relays have
    /// answered the attempt is recorded without waiting for a group.
    half_lease_ms: u64,
    /// Publishes started.
    started: usize,
    /// Publishes not answered (or skipped) yet.
    unanswered: usize,
    /// The answers so far, in target order.
    results: Vec<TargetResult>,
    /// When each answer arrived.
    answered: Vec<u64>,
    /// A `high` record of a hurried claim: until its recording starts, it holds bulk
    /// transactions back ([`Pipeline::hold`]).
    holds: bool,
}

/// Completions gathering for one recording, and when they must be recorded by.
#[derive(Debug)]
pub struct Gathering {
    completions: Vec<Completion>,
    /// When each of their answers arrived.
    answered: Vec<u64>,
    /// The earliest of: the group commit's bound after the first of them, half the
    /// lease of any of them; `0` once a recording completed (write what gathered).
    record_by: u64,
    /// Of them, completions of hurried `high` records that hold bulk transactions back
    /// until their recording starts.
    holds: usize,
}

impl Gathering {
    fn new() -> Gathering {
        Gathering {
            completions: Vec::new(),
            answered: Vec::new(),
            record_by: u64::MAX,
            holds: 0,
        }
    }

    /// Adds a completion ready `now`; the first one starts the group's wait.
    fn push(&mut self, completion: Completion, half_lease_ms: u64, now: u64, wait: u64) {
        if self.completions.is_empty() {
            self.record_by = self.record_by.min(now.saturating_add(wait));
        }
        self.record_by = self.record_by.min(half_lease_ms);
        self.completions.push(completion);
    }
}

/// The completion of one attempt with its results (in target order), `jitter` 0 (the
/// driver draws it).
fn completion(record: &Record, lease_id: &str, results: Vec<TargetResult>) -> Completion {
    Completion {
        id: record.id.clone(),
        lease_id: lease_id.to_string(),
        revision: record.revision,
        results,
        jitter: 0,
    }
}

/// A flush run's state and rules (see the module's documentation).
pub struct Pipeline<'a> {
    config: &'a FlushConfig,
    max_ticks: u32,
    /// A timer is at hand ([`Next::timer_ms`], [`Action::LookAgain`]).
    has_timer: bool,
    window: usize,
    low_window: usize,
    low_batch: u32,
    /// Claims made.
    ticks: u32,
    /// Actions started and not reported yet (except the timer).
    in_flight: usize,
    /// A failure was reported: nothing new starts.
    stopped: bool,

    // Claims.
    claiming: bool,
    /// Claims go on while something due at this time is left: the start, or the last
    /// wake-up or hurry.
    due_cutoff: u64,
    more: bool,
    /// Orphaned leases are taken over first, until a takeover finds fewer than a batch.
    taking_over: bool,
    /// The last bulk claim reached `low` records: claims take at most `low_batch` and
    /// start while fewer than `low_window` publishes per relay wait.
    low_claims: bool,
    /// Relays that answered again: the next bulk claim is filtered by them.
    wake_filter: Vec<String>,
    waking: bool,

    // The hurry.
    /// Hurried records signalled and not yet claimed for.
    hurried: u32,
    /// Hurried records signalled so far: a claim during which this grew may hold one.
    hurries_seen: u32,
    hurried_claim_in_flight: bool,

    // The hold.
    /// Attempts and gathered completions of hurried `high` records that hold bulk
    /// transactions back.
    holding: usize,
    /// Since when something holds.
    hold_since: u64,

    // Publishing.
    attempts: Vec<Option<Attempt>>,
    free: Vec<usize>,
    queues: Vec<RelayQueue>,
    /// Publishes waiting in every queue.
    queued: usize,
    publishes_in_flight: usize,
    /// Publishes skipped past half a lease (counted in `publishes` when claimed).
    skipped: u32,

    // Recording.
    bulk: Gathering,
    high: Gathering,
    recording_bulk: bool,
    recording_high: bool,
    timer_set: bool,
    unattempted: Vec<Unattempted>,
    handing_back: bool,
    waits: Waits,
}

impl<'a> Pipeline<'a> {
    /// A run of `config` started at `started_ms`, of at most `max_ticks` claims (at most
    /// [`MAX_TICKS`]), that first takes over orphaned leases when `take_over`, with a
    /// timer or not (`has_timer`: without one, a turn comes only when something
    /// finishes).
    pub fn new(
        config: &'a FlushConfig,
        started_ms: u64,
        max_ticks: u32,
        take_over: bool,
        has_timer: bool,
    ) -> Pipeline<'a> {
        let low_window = config.concurrency.min(config.low_concurrency);
        Pipeline {
            config,
            max_ticks: max_ticks.min(MAX_TICKS),
            has_timer,
            window: config.concurrency as usize,
            low_window: low_window as usize,
            low_batch: low_window.saturating_mul(LOW_BATCH_PER_PUBLISH),
            ticks: 0,
            in_flight: 0,
            stopped: false,
            claiming: false,
            due_cutoff: started_ms,
            more: true,
            taking_over: take_over,
            low_claims: false,
            wake_filter: Vec::new(),
            waking: false,
            hurried: 0,
            hurries_seen: 0,
            hurried_claim_in_flight: false,
            holding: 0,
            hold_since: 0,
            attempts: Vec::new(),
            free: Vec::new(),
            queues: Vec::new(),
            queued: 0,
            publishes_in_flight: 0,
            skipped: 0,
            bulk: Gathering::new(),
            high: Gathering::new(),
            recording_bulk: false,
            recording_high: false,
            timer_set: false,
            unattempted: Vec::new(),
            handing_back: false,
            waits: Waits::default(),
        }
    }

    /// A failure was reported: nothing new starts; what is in flight finishes.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Claims made.
    pub fn ticks(&self) -> u32 {
        self.ticks
    }

    /// Publishes skipped because their record was past half its lease.
    pub fn skipped(&self) -> u32 {
        self.skipped
    }

    /// How long answers waited, from their arrival to the end of their recording.
    pub fn latency(&self) -> Latency {
        self.waits.latency()
    }

    /// What starts now (sent to `out` in the order to start it), while a `high` record
    /// is being `writing` ([`super::RunBounds::hold`]) or not, and what then.
    pub fn turn(&mut self, now: u64, writing: bool, out: &mut dyn Driver) -> Next {
        if self.stopped {
            return Next::default();
        }
        // `high` answers are recorded at once, apart, in a transaction created before
        // any other of this turn.
        if !self.recording_high && !self.high.completions.is_empty() {
            self.start_recording(true, out);
        }
        self.claim_hurried(now, out);
        let hold = self.hold(now, writing);
        self.claim_bulk(hold, out);
        let closed = self.start_publishes(now, hold, out);
        // A relay that could not be reached answered again: what waits for it comes
        // due now, and this run claims it.
        if !self.waking && !hold.bulk {
            let relays = out.recovered();
            if !relays.is_empty() {
                self.waking = true;
                self.start(out, Action::Wake(relays));
            }
        }
        for attempt in closed {
            self.close(attempt, now);
        }
        if !self.handing_back && !hold.bulk && !self.unattempted.is_empty() {
            self.handing_back = true;
            let records = std::mem::take(&mut self.unattempted);
            self.start(out, Action::HandBack(records));
        }
        let timer_ms = self.record_bulk(now, hold, out);
        // `high` answers closed late in this turn are recorded at the top of the next.
        let again = self.in_flight == 0 && !self.high.completions.is_empty();
        // Held with nothing else in flight: look again shortly.
        if !again && hold.bulk && self.in_flight == 0 && self.has_timer {
            self.start(out, Action::LookAgain);
        }
        Next { again, timer_ms }
    }

    fn start(&mut self, out: &mut dyn Driver, action: Action) {
        self.in_flight += 1;
        out.start(action);
    }

    fn claim_request(&self, lease_id: String) -> ClaimRequest {
        ClaimRequest {
            owner: self.config.owner.clone(),
            lease_id,
            limit: self.config.batch_size,
            lease_ms: self.config.lease_ms,
            lanes: self.config.lanes.clone(),
            relays: self.config.relays.clone(),
            prepare: 0,
            lapsed_only: self.config.lapsed_only,
        }
    }

    fn start_claim(&mut self, request: ClaimRequest, kind: ClaimKind, out: &mut dyn Driver) {
        self.ticks += 1;
        let ticket = ClaimTicket {
            kind,
            hurries_seen: self.hurries_seen,
        };
        let due_cutoff = self.due_cutoff;
        self.start(
            out,
            Action::Claim {
                request,
                ticket,
                due_cutoff,
            },
        );
    }

    /// The hurry: records signalled as hurried ([`Pipeline::hurried`]) are claimed at
    /// once, beside a bulk claim in flight, in a claim of their own for at most that
    /// many records (claims come in priority order, so it takes them or anything of
    /// higher priority); the hold starts with it.
    fn claim_hurried(&mut self, now: u64, out: &mut dyn Driver) {
        if self.hurried == 0 || self.hurried_claim_in_flight || self.ticks >= self.max_ticks {
            return;
        }
        let Some(lease_id) = out.lease_id() else {
            return;
        };
        let mut request = self.claim_request(lease_id);
        request.limit = request.limit.min(self.hurried);
        self.hurried = 0;
        self.hurried_claim_in_flight = true;
        self.hold_since = now;
        self.start_claim(request, ClaimKind::Hurried, out);
    }

    /// The hold: while a hurried claim is in flight, a hurried `high` record is
    /// published or waits to be recorded, or a `high` record is being written
    /// (`writing`), no bulk transaction starts, and while the hurried record is claimed
    /// or written, no `low` publish starts (it would queue on the relay's connection
    /// ahead of the record's own). At most [`hold_bound`] from when it began; never
    /// without a timer when nothing is in flight (which would end the run).
    pub fn hold(&mut self, now: u64, writing: bool) -> Hold {
        let hurried = self.hurried_claim_in_flight || self.holding > 0;
        if !hurried && !writing {
            self.hold_since = now;
        }
        let bulk = (hurried || writing)
            && now < self.hold_since.saturating_add(hold_bound(self.config))
            && (self.has_timer || self.in_flight > 0);
        Hold {
            bulk,
            low: bulk && (self.hurried_claim_in_flight || writing),
        }
    }

    /// The next bulk claim (or takeover) starts while fewer than a window's worth of
    /// publishes per relay wait to start; the low window's once the claims reached
    /// `low` records, which then take at most `low_batch`. After a wake-up it is
    /// filtered by the relays that answered again.
    fn claim_bulk(&mut self, hold: Hold, out: &mut dyn Driver) {
        let window = if self.low_claims {
            self.low_window
        } else {
            self.window
        };
        if self.claiming
            || hold.bulk
            || !self.more
            || self.ticks >= self.max_ticks
            || self.queued >= window * self.queues.len().max(1)
        {
            return;
        }
        let Some(lease_id) = out.lease_id() else {
            return;
        };
        let mut request = self.claim_request(lease_id);
        if self.low_claims {
            request.limit = request.limit.min(self.low_batch);
        }
        if !self.wake_filter.is_empty() && !self.taking_over {
            request.relays = std::mem::take(&mut self.wake_filter);
        }
        self.claiming = true;
        let kind = if self.taking_over {
            ClaimKind::TakeOver {
                limit: request.limit,
            }
        } else {
            ClaimKind::Bulk
        };
        self.start_claim(request, kind, out);
    }

    /// Each relay's first waiting publishes, while its window has room; one whose
    /// record is past half its lease is skipped instead. `low` records only while
    /// fewer than the low window of theirs are in flight and the hold lets them (the
    /// queue is in priority order: once its front is `low`, so is the rest). The
    /// attempts that had nothing left to wait for are returned.
    fn start_publishes(&mut self, now: u64, hold: Hold, out: &mut dyn Driver) -> Vec<Attempt> {
        let mut closed = Vec::new();
        for (q, queue) in self.queues.iter_mut().enumerate() {
            while queue.in_flight < self.window {
                let Some(&index) = queue.waiting.front() else {
                    break;
                };
                let low = self.attempts[index]
                    .as_ref()
                    .is_some_and(|a| a.record.priority == Priority::Low);
                if low && (hold.low || queue.low_in_flight >= self.low_window) {
                    break;
                }
                queue.waiting.pop_front();
                self.queued -= 1;
                let Some(attempt) = self.attempts[index].as_mut() else {
                    continue;
                };
                if now >= attempt.half_lease_ms {
                    self.skipped += 1;
                    attempt.unanswered -= 1;
                    if attempt.unanswered == 0 {
                        self.free.push(index);
                        closed.extend(self.attempts[index].take());
                    }
                    continue;
                }
                attempt.started += 1;
                queue.in_flight += 1;
                queue.low_in_flight += usize::from(low);
                self.publishes_in_flight += 1;
                self.in_flight += 1;
                out.start(Action::Publish {
                    ticket: PublishTicket {
                        attempt: index,
                        queue: q,
                        low,
                    },
                    relay: queue.relay.clone(),
                    record: Rc::clone(&attempt.record),
                });
            }
        }
        closed
    }

    /// Group commit: one bulk recording in flight; the answers that arrive meanwhile
    /// gather and are written as soon as it completes. With none in flight, a group is
    /// written once it has `batch_size` completions (fewer transactions, each a disk
    /// flush with strict durability), once its first answer has waited
    /// `group_wait_ms` (the timer) or half a lease ([`Gathering::record_by`]), or when
    /// nothing is publishing or nothing is left to claim: no answer waits longer than
    /// that bound or one commit before its transaction starts. Returns the timer to
    /// start, if any.
    fn record_bulk(&mut self, now: u64, hold: Hold, out: &mut dyn Driver) -> Option<u64> {
        if self.recording_bulk || self.bulk.completions.is_empty() {
            return None;
        }
        // No shortcut at the tail of a run (nothing queued, nothing left to claim): its
        // answers gather like the others until the last publish in flight answers. Recorded
        // at once, each answer of a full window's tail was a transaction of its own
        // wherever a commit is quicker than the gap between two answers (bun:sqlite: 251
        // commits of one record in a flush of 1 000).
        if !hold.bulk
            && (self.bulk.completions.len() >= self.config.batch_size as usize
                || self.publishes_in_flight == 0
                || now >= self.bulk.record_by)
        {
            self.start_recording(false, out);
        } else if !self.timer_set && self.has_timer {
            self.timer_set = true;
            return Some(self.bulk.record_by.saturating_sub(now));
        }
        None
    }

    fn start_recording(&mut self, high: bool, out: &mut dyn Driver) {
        let gathering = if high { &mut self.high } else { &mut self.bulk };
        let completions = std::mem::take(&mut gathering.completions);
        let answered = std::mem::take(&mut gathering.answered);
        gathering.record_by = u64::MAX;
        self.holding -= std::mem::take(&mut gathering.holds);
        if high {
            self.recording_high = true;
        } else {
            self.recording_bulk = true;
        }
        self.start(
            out,
            Action::Record(Recording {
                high,
                completions,
                answered,
            }),
        );
    }

    /// `n` records that must not wait were enqueued (asked after each action
    /// finishes, before it is reported, so a claim that took one knows): claimed at
    /// the next turn, and claims go on while something due `now` is left.
    pub fn hurried(&mut self, n: u32, now: u64) {
        self.hurried = self.hurried.saturating_add(n);
        self.hurries_seen = self.hurries_seen.wrapping_add(n);
        self.more = true;
        self.due_cutoff = self.due_cutoff.max(now);
    }

    /// A claim returned at `now` (`None`: it failed, and the pipeline stops). Its
    /// attempts are queued to their relays.
    pub fn claimed(&mut self, ticket: ClaimTicket, claimed: Option<ClaimedBatch>, now: u64) {
        self.in_flight -= 1;
        match ticket.kind {
            ClaimKind::Hurried => self.hurried_claim_in_flight = false,
            _ => self.claiming = false,
        }
        let Some(claimed) = claimed else {
            self.stopped = true;
            return;
        };
        match ticket.kind {
            // A takeover leaves `more` as it was: the claims follow.
            ClaimKind::TakeOver { limit } => self.taking_over = claimed.taken >= limit as usize,
            ClaimKind::Bulk => {
                self.more = claimed.more;
                if let Some(last) = claimed.last {
                    self.low_claims = last == Priority::Low;
                }
            }
            // A hurried claim leaves `more` as it was: the bulk claims follow.
            ClaimKind::Hurried => {}
        }
        // A hurried record may be in any claim that ran after it was signalled.
        let hurried_in =
            matches!(ticket.kind, ClaimKind::Hurried) || ticket.hurries_seen != self.hurries_seen;
        let lease_id: Rc<str> = Rc::from(claimed.lease_id);
        for (record, targets) in claimed.attempts {
            let half_lease_ms = record
                .lease
                .as_ref()
                .map_or(0, |l| l.expires_ms.saturating_sub(self.config.lease_ms / 2));
            if targets.is_empty() {
                let done = completion(&record, &lease_id, Vec::new());
                self.bulk
                    .push(done, half_lease_ms, now, self.config.group_wait_ms);
                continue;
            }
            let holds = hurried_in && record.priority == Priority::High;
            self.holding += usize::from(holds);
            let attempt = Attempt {
                record: Rc::new(record),
                lease_id: Rc::clone(&lease_id),
                half_lease_ms,
                started: 0,
                unanswered: targets.len(),
                results: Vec::new(),
                answered: Vec::new(),
                holds,
            };
            self.queue(attempt, targets);
        }
    }

    /// Puts an attempt in flight and queues it to each of its targets, ahead of every
    /// waiting publish of a lower priority.
    fn queue(&mut self, attempt: Attempt, targets: Vec<String>) {
        let priority = attempt.record.priority;
        let index = match self.free.pop() {
            Some(i) => {
                self.attempts[i] = Some(attempt);
                i
            }
            None => {
                self.attempts.push(Some(attempt));
                self.attempts.len() - 1
            }
        };
        for relay in targets {
            let q = match self.queues.iter().position(|q| q.relay == relay) {
                Some(q) => q,
                None => {
                    self.queues.push(RelayQueue {
                        relay,
                        in_flight: 0,
                        low_in_flight: 0,
                        waiting: VecDeque::new(),
                    });
                    self.queues.len() - 1
                }
            };
            let attempts = &self.attempts;
            let waiting = &mut self.queues[q].waiting;
            let lower = |i: &usize| {
                attempts[*i]
                    .as_ref()
                    .is_some_and(|a| a.record.priority > priority)
            };
            let at = waiting.iter().position(lower).unwrap_or(waiting.len());
            waiting.insert(at, index);
            self.queued += 1;
        }
    }

    /// A publish answered at `now`.
    pub fn published(
        &mut self,
        ticket: PublishTicket,
        relay: String,
        report: PublishReport,
        now: u64,
    ) {
        self.in_flight -= 1;
        self.publishes_in_flight -= 1;
        let queue = &mut self.queues[ticket.queue];
        queue.in_flight -= 1;
        queue.low_in_flight -= usize::from(ticket.low);
        let Some(attempt) = self.attempts[ticket.attempt].as_mut() else {
            return;
        };
        // In target order (a completion's order), whatever the order of the answers.
        let at = attempt.results.partition_point(|r| r.target < relay);
        let result = TargetResult {
            target: relay,
            outcome: report.outcome,
            message: report.message,
        };
        attempt.results.insert(at, result);
        attempt.answered.push(now);
        attempt.unanswered -= 1;
        if attempt.unanswered == 0 {
            self.free.push(ticket.attempt);
            if let Some(attempt) = self.attempts[ticket.attempt].take() {
                self.close(attempt, now);
            }
        }
    }

    /// Where an attempt goes once every relay of it has answered or been skipped: to
    /// the completions gathering to be recorded (a `high` record's apart, recorded at
    /// once: its small transaction follows the bulk one in flight, not a bulk group),
    /// or, when no publish started, to the records to hand back. One that held bulk
    /// transactions back stops at once when handed back; otherwise its completion
    /// holds until its recording starts.
    fn close(&mut self, attempt: Attempt, now: u64) {
        if attempt.started == 0 {
            self.holding -= usize::from(attempt.holds);
            self.unattempted.push(Unattempted {
                record: attempt.record,
                lease_id: attempt.lease_id,
            });
            return;
        }
        let gathering = match attempt.record.priority {
            Priority::High => &mut self.high,
            _ => &mut self.bulk,
        };
        gathering.answered.extend_from_slice(&attempt.answered);
        gathering.holds += usize::from(attempt.holds);
        let done = completion(&attempt.record, &attempt.lease_id, attempt.results);
        gathering.push(done, attempt.half_lease_ms, now, self.config.group_wait_ms);
    }

    /// A recording finished at `now` (`stored`: `false` when the storage failed, and
    /// the pipeline stops). What gathered during a bulk one is written next, at once.
    pub fn recorded(&mut self, recording: Recording, now: u64, stored: bool) {
        self.in_flight -= 1;
        for &t in &recording.answered {
            self.waits.add(now.saturating_sub(t));
        }
        if recording.high {
            self.recording_high = false;
        } else {
            self.recording_bulk = false;
            if !self.bulk.completions.is_empty() {
                self.bulk.record_by = 0;
            }
        }
        self.stopped |= !stored;
    }

    /// A hand-back finished (`stored`: `false` when the storage failed, and the
    /// pipeline stops).
    pub fn handed_back(&mut self, stored: bool) {
        self.in_flight -= 1;
        self.handing_back = false;
        self.stopped |= !stored;
    }

    /// A wake-up started at `at` for `relays` finished, having made `woken` records
    /// due (`None`: it failed, and the pipeline stops). The next bulk claim takes what
    /// waits for those relays and attempts those relays only (within the run's own
    /// relay filter, if any).
    pub fn woken(&mut self, at: u64, relays: Vec<String>, woken: Option<usize>) {
        self.in_flight -= 1;
        self.waking = false;
        let Some(n) = woken else {
            self.stopped = true;
            return;
        };
        let filter = &self.config.relays;
        let mut relays = relays;
        if !filter.is_empty() {
            relays.retain(|r| filter.contains(r));
        }
        self.wake_filter = relays;
        if n > 0 {
            self.more = true;
            self.due_cutoff = self.due_cutoff.max(at);
        }
    }

    /// The group commit's timer fired.
    pub fn timer_fired(&mut self) {
        self.timer_set = false;
    }

    /// A held run's look again ([`Action::LookAgain`]) is over.
    pub fn looked_again(&mut self) {
        self.in_flight -= 1;
    }
}

#[cfg(test)]
mod tests;
