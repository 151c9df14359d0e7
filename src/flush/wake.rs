//! When an auto-flushing runtime runs again: the wake-up policy, pure (the time is an
//! argument), used by the browser and edge runtime (`src/js/runtime.rs`), which only
//! arms the timer it answers.
//!
//! - After a run: at its `nextDueAt` (records due; [`super::FlushSummary::next_due_ms`]
//!   already coalesces the ones retried together), but not at once again when the run
//!   claimed nothing although something was due (rows that cannot be claimed must not
//!   spin the timer): then after the lock-retry delay. Skipped because another context
//!   holds the lock: after the lock-retry delay. Failed: after the error-retry delay.
//!   Skipped for another reason (offline) or closed: no timer (an event wakes it).
//! - Probes: while records wait and some relay could not be reached, a probe of those
//!   relays comes sooner than the records' backoff (up to `maxDelayMs`), so a relay
//!   back after a long outage is noticed within [`PROBE_MAX_MS`]: the first
//!   [`PROBE_FIRST_MS`] after the run, each probe that reaches none 1.5 times later.
//!   A probe already set keeps its time (records coming due one after the other must
//!   not put it off run after run).
//! - Inside a service worker's one-off Background Sync event ([`sync_wait`],
//!   [`sync_again`]): records due within [`SYNC_WAIT_MS`] of the event's start are
//!   flushed at their time inside it (a sync is the only wake-up a service worker gets
//!   with no page open), unless the run retried something (a failed attempt's retry is
//!   the browser's next sync); records still waiting after that ask the browser for
//!   another sync, unless this one was its last chance.

/// The first probe of unreachable relays comes this long after the run that failed to
/// reach them.
pub const PROBE_FIRST_MS: u64 = 1_000;
/// The longest delay between two probes of unreachable relays.
pub const PROBE_MAX_MS: u64 = 30_000;

/// How a run ended, as the wake-up policy needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The run ran: how many records it claimed, and when the next one is due.
    Ran {
        /// Records claimed.
        claimed: u32,
        /// The summary's next due time (unix ms), if any record waits.
        next_due_ms: Option<u64>,
    },
    /// Skipped: another context holds the lock.
    Locked,
    /// Skipped for a reason an event ends (offline), or the outbox closed.
    Idle,
    /// Failed (the store, the clock, a timer, the random source).
    Failed,
}

/// The runtime's delays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WakeDelays {
    /// While another context holds the lock, look again after this long.
    pub lock_retry_ms: u64,
    /// After a failed run, try again after this long.
    pub error_retry_ms: u64,
}

/// The probe schedule of unreachable relays (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probes {
    delay_ms: u64,
    at_ms: Option<u64>,
}

impl Default for Probes {
    fn default() -> Probes {
        Probes {
            delay_ms: PROBE_FIRST_MS,
            at_ms: None,
        }
    }
}

impl Probes {
    /// True when a probe is set and its time has come.
    pub fn due(&self, now_ms: u64) -> bool {
        self.at_ms.is_some_and(|at| at <= now_ms)
    }

    /// A probe ran: the next one waits [`PROBE_FIRST_MS`] when it reached a relay, else
    /// 1.5 times the last delay (at most [`PROBE_MAX_MS`]).
    pub fn probed(&mut self, reached: bool) {
        self.at_ms = None;
        self.delay_ms = if reached {
            PROBE_FIRST_MS
        } else {
            (self.delay_ms * 3 / 2).min(PROBE_MAX_MS)
        };
    }

    /// After a run: sets (or keeps) the next probe while `waiting` records and
    /// `unreachable` relays both exist, else clears it and starts the delays over.
    /// Answers the probe's time.
    pub fn after_run(&mut self, waiting: bool, unreachable: bool, now_ms: u64) -> Option<u64> {
        self.at_ms = if waiting && unreachable {
            let next = now_ms.saturating_add(self.delay_ms);
            Some(self.at_ms.map_or(next, |at| at.min(next)))
        } else {
            self.delay_ms = PROBE_FIRST_MS;
            None
        };
        self.at_ms
    }
}

/// When to run again after a run that ended as `end` at `now_ms`, given whether some
/// relay is unreachable; updates `probes`. `None`: no timer.
pub fn next_wake(
    end: RunEnd,
    now_ms: u64,
    delays: WakeDelays,
    unreachable: bool,
    probes: &mut Probes,
) -> Option<u64> {
    let at = match end {
        RunEnd::Ran {
            claimed,
            next_due_ms,
        } => next_due_ms.map(|due| {
            if claimed == 0 && due <= now_ms {
                now_ms.saturating_add(delays.lock_retry_ms)
            } else {
                due
            }
        }),
        RunEnd::Locked => Some(now_ms.saturating_add(delays.lock_retry_ms)),
        RunEnd::Idle => None,
        RunEnd::Failed => Some(now_ms.saturating_add(delays.error_retry_ms)),
    };
    let waiting = matches!(
        end,
        RunEnd::Ran {
            next_due_ms: Some(_),
            ..
        }
    );
    let probe = probes.after_run(waiting, unreachable, now_ms);
    match (at, probe) {
        (Some(at), Some(probe)) => Some(at.min(probe)),
        (at, probe) => at.or(probe),
    }
}

/// How long a one-off `sync` event stays open for records due soon, from its start:
/// the flushes it runs at their due times take it no further. Chromium ends a sync
/// event after about 3 minutes; this stays well inside that.
pub const SYNC_WAIT_MS: u64 = 60_000;

/// How a flush inside a Background Sync event ended, as [`sync_wait`] and
/// [`sync_again`] need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncRun {
    /// The flush ran (it was not skipped).
    pub ran: bool,
    /// Records it left retrying.
    pub retrying: u32,
    /// The next due time of a record, if any waits.
    pub next_due_ms: Option<u64>,
}

/// Inside a one-off sync event (`one_off`: it has `lastChance`) that started at
/// `started_ms`, after a flush that ended as `run`: the due time to wait for and flush
/// at, when it falls within [`SYNC_WAIT_MS`] of the start and the flush retried
/// nothing.
pub fn sync_wait(one_off: bool, run: SyncRun, started_ms: u64) -> Option<u64> {
    run.next_due_ms.filter(|due| {
        one_off && run.ran && run.retrying == 0 && *due <= started_ms.saturating_add(SYNC_WAIT_MS)
    })
}

/// After the flushes of a sync event: true when the event should fail so that the
/// browser syncs again: records still wait, and it is a one-off sync that is not the
/// browser's last chance (`last_chance`: the event's `lastChance`, `None` for a
/// periodic sync or a message).
pub fn sync_again(last_chance: Option<bool>, run: SyncRun) -> bool {
    run.ran && run.next_due_ms.is_some() && last_chance == Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: WakeDelays = WakeDelays {
        lock_retry_ms: 1_000,
        error_retry_ms: 10_000,
    };

    fn ran(claimed: u32, next_due_ms: Option<u64>) -> RunEnd {
        RunEnd::Ran {
            claimed,
            next_due_ms,
        }
    }

    #[test]
    fn a_run_wakes_at_its_next_due_time_or_not_at_all() {
        let mut p = Probes::default();
        assert_eq!(
            next_wake(ran(3, Some(5_000)), 1_000, D, false, &mut p),
            Some(5_000)
        );
        assert_eq!(next_wake(ran(3, None), 1_000, D, false, &mut p), None);
        // Due already and claimed: at once (the due time).
        assert_eq!(
            next_wake(ran(2, Some(900)), 1_000, D, false, &mut p),
            Some(900)
        );
        // Due already but nothing claimed (unclaimable rows): no spinning.
        assert_eq!(
            next_wake(ran(0, Some(900)), 1_000, D, false, &mut p),
            Some(2_000)
        );
        assert_eq!(
            next_wake(ran(0, Some(1_500)), 1_000, D, false, &mut p),
            Some(1_500)
        );
    }

    #[test]
    fn skipped_and_failed_runs_look_again_after_their_delays() {
        let mut p = Probes::default();
        assert_eq!(
            next_wake(RunEnd::Locked, 1_000, D, true, &mut p),
            Some(2_000)
        );
        assert_eq!(
            next_wake(RunEnd::Failed, 1_000, D, true, &mut p),
            Some(11_000)
        );
        assert_eq!(next_wake(RunEnd::Idle, 1_000, D, true, &mut p), None);
        assert_eq!(p, Probes::default(), "no probe without waiting records");
    }

    #[test]
    fn unreachable_relays_are_probed_sooner_than_the_records_backoff() {
        let mut p = Probes::default();
        // Records wait 5 minutes; a relay is unreachable: probe after 1 s.
        let wake = next_wake(ran(10, Some(300_000)), 0, D, true, &mut p);
        assert_eq!(wake, Some(PROBE_FIRST_MS));
        assert!(!p.due(999) && p.due(1_000));
        // A later run keeps the probe already set (not put off).
        assert_eq!(
            next_wake(ran(1, Some(300_000)), 500, D, true, &mut p),
            Some(1_000)
        );
        // Probes that reach nobody back off by 1.5 up to PROBE_MAX_MS.
        let mut delays = Vec::new();
        let mut now = 1_000;
        for _ in 0..12 {
            p.probed(false);
            let at = next_wake(ran(0, Some(now + 300_000)), now, D, true, &mut p).unwrap();
            delays.push(at - now);
            now = at;
        }
        assert_eq!(&delays[..4], &[1_500, 2_250, 3_375, 5_062]);
        assert_eq!(*delays.last().unwrap(), PROBE_MAX_MS);
        // One that reaches a relay starts over; nothing waiting clears the probe.
        p.probed(true);
        assert_eq!(
            next_wake(ran(1, Some(now + 9_000)), now, D, true, &mut p),
            Some(now + 1_000)
        );
        assert_eq!(next_wake(ran(1, None), now, D, true, &mut p), None);
        assert!(!p.due(u64::MAX));
    }

    fn sync_run(ran: bool, retrying: u32, next_due_ms: Option<u64>) -> SyncRun {
        SyncRun {
            ran,
            retrying,
            next_due_ms,
        }
    }

    #[test]
    fn a_one_off_sync_waits_for_records_due_within_its_window() {
        let start = 1_000_000;
        let due = |ms| sync_run(true, 0, Some(start + ms));
        // Due within the window: waited for, to the edge.
        assert_eq!(sync_wait(true, due(5_000), start), Some(start + 5_000));
        assert_eq!(
            sync_wait(true, due(SYNC_WAIT_MS), start),
            Some(start + SYNC_WAIT_MS)
        );
        // Beyond it, nothing due, a periodic sync or a message: no wait.
        assert_eq!(sync_wait(true, due(SYNC_WAIT_MS + 1), start), None);
        assert_eq!(sync_wait(true, sync_run(true, 0, None), start), None);
        assert_eq!(sync_wait(false, due(5_000), start), None);
        // A run that retried something (the browser's next sync retries it) or did not
        // run: no wait.
        assert_eq!(
            sync_wait(true, sync_run(true, 1, Some(start + 5_000)), start),
            None
        );
        assert_eq!(
            sync_wait(true, sync_run(false, 0, Some(start + 5_000)), start),
            None
        );
    }

    #[test]
    fn a_sync_asks_for_another_while_records_wait_unless_last_chance() {
        let waiting = sync_run(true, 2, Some(5));
        assert!(sync_again(Some(false), waiting));
        assert!(!sync_again(Some(true), waiting));
        assert!(!sync_again(None, waiting));
        assert!(!sync_again(Some(false), sync_run(true, 0, None)));
        assert!(!sync_again(Some(false), sync_run(false, 0, Some(5))));
    }
}
