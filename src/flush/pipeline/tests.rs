//! Each rule of the pipeline, driven by hand: no store, no transport, no executor.

use super::*;
use crate::core::{claim, new_record, ClaimRequest, Outcome, Policy, Priority};
use crate::flush::{FlushConfig, GROUP_WAIT_MS};
use crate::store::conformance::{fixture_plan, RELAYS};

const LEASE_MS: u64 = 10_000;

/// Batch `batch`, `concurrency` publishes per relay (2 of them `low`), a 10 s lease.
fn config(batch: u32, concurrency: u32) -> FlushConfig {
    FlushConfig {
        batch_size: batch,
        lease_ms: LEASE_MS,
        concurrency,
        low_concurrency: 2,
        ..FlushConfig::new("tab-1")
    }
}

/// Record `n` of `priority` for `relays`, leased at `now`, with its targets.
fn leased(n: u32, relays: &[&str], priority: Priority, now: u64) -> (Record, Vec<String>) {
    let plan = fixture_plan(n, relays, Policy::All).with_priority(priority);
    let record = new_record(plan, String::new(), 0);
    let request = ClaimRequest {
        owner: "tab-1".into(),
        lease_id: "lease".into(),
        limit: 1,
        lease_ms: LEASE_MS,
        lanes: Vec::new(),
        relays: Vec::new(),
        prepare: 0,
        lapsed_only: false,
    };
    let record = claim(&record, &request, now).unwrap().into_record();
    let targets = record.attempt_targets();
    (record, targets)
}

/// Records `from..from + n` of `priority` to the first relay, leased at 0.
fn batch(from: u32, n: u32, priority: Priority) -> Vec<(Record, Vec<String>)> {
    (from..from + n)
        .map(|i| leased(i, &RELAYS[..1], priority, 0))
        .collect()
}

/// A driver by hand: lease ids while `keep_going`, the relays in `recovered`, and
/// the actions started, listed.
struct ByHand<'a> {
    keep_going: bool,
    recovered: &'a mut Vec<String>,
    started: Vec<Action>,
}

impl Driver for ByHand<'_> {
    fn lease_id(&mut self) -> Option<String> {
        self.keep_going.then(|| "lease".to_string())
    }

    fn recovered(&mut self) -> Vec<String> {
        std::mem::take(self.recovered)
    }

    fn start(&mut self, action: Action) {
        self.started.push(action);
    }
}

/// A driver's view of a pipeline: what each turn started, answered by hand.
struct Harness<'a> {
    p: Pipeline<'a>,
    /// The claims' answer: `None` stops claiming.
    keep_going: bool,
    writing: bool,
    recovered: Vec<String>,
}

impl<'a> Harness<'a> {
    fn new(config: &'a FlushConfig, has_timer: bool) -> Harness<'a> {
        Harness {
            p: Pipeline::new(config, 0, 100, false, has_timer),
            keep_going: true,
            writing: false,
            recovered: Vec::new(),
        }
    }

    fn turn(&mut self, now: u64) -> (Vec<Action>, Next) {
        let mut by_hand = ByHand {
            keep_going: self.keep_going,
            recovered: &mut self.recovered,
            started: Vec::new(),
        };
        let next = self.p.turn(now, self.writing, &mut by_hand);
        (by_hand.started, next)
    }

    /// Answers the claim `ticket` with `attempts` (`more` due) at `now`.
    fn claimed(
        &mut self,
        ticket: ClaimTicket,
        attempts: Vec<(Record, Vec<String>)>,
        more: bool,
        now: u64,
    ) {
        let batch = ClaimedBatch {
            lease_id: "lease".into(),
            taken: attempts.len(),
            last: attempts.last().map(|(r, _)| r.priority),
            more,
            attempts,
        };
        self.p.claimed(ticket, Some(batch), now);
    }

    /// Accepts the publish of `action` at `now`.
    fn accept(&mut self, action: Action, now: u64) {
        let Action::Publish { ticket, relay, .. } = action else {
            panic!("not a publish: {action:?}");
        };
        let report = PublishReport::new(Outcome::Accepted, "");
        self.p.published(ticket, relay, report, now);
    }
}

fn claims(actions: &[Action]) -> Vec<(ClaimKind, u32, ClaimTicket)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Claim {
                request, ticket, ..
            } => Some((ticket.kind, request.limit, *ticket)),
            _ => None,
        })
        .collect()
}

/// The relay and priority of each publish started.
fn published(actions: &[Action]) -> Vec<(String, Priority)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Publish { relay, record, .. } => Some((relay.clone(), record.priority)),
            _ => None,
        })
        .collect()
}

fn publishes(actions: Vec<Action>) -> Vec<Action> {
    actions
        .into_iter()
        .filter(|a| matches!(a, Action::Publish { .. }))
        .collect()
}

fn recordings(actions: &[Action]) -> Vec<(bool, usize)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Record(r) => Some((r.high, r.completions.len())),
            _ => None,
        })
        .collect()
}

/// The first turn's bulk claim, answered with `attempts`; the next turn's actions.
fn start<'a>(h: &mut Harness<'a>, attempts: Vec<(Record, Vec<String>)>, more: bool) -> Vec<Action> {
    let (first, _) = h.turn(0);
    let claim = claims(&first);
    assert_eq!(claim.len(), 1, "{first:?}");
    h.claimed(claim[0].2, attempts, more, 1);
    h.turn(1).0
}

#[test]
fn the_first_turn_claims_a_batch_and_a_stopped_caller_claims_nothing() {
    let cfg = config(16, 4);
    let mut h = Harness::new(&cfg, true);
    let (actions, _) = h.turn(0);
    assert_eq!(claims(&actions)[0].0, ClaimKind::Bulk);
    assert_eq!(claims(&actions)[0].1, 16);
    assert_eq!(h.p.ticks(), 1);
    let mut h = Harness::new(&cfg, true);
    h.keep_going = false;
    assert!(h.turn(0).0.is_empty());
    assert_eq!(h.p.ticks(), 0);
}

#[test]
fn a_takeover_comes_first_until_it_finds_fewer_than_its_limit() {
    let cfg = config(2, 4);
    let mut h = Harness {
        p: Pipeline::new(&cfg, 0, 100, true, true),
        keep_going: true,
        writing: false,
        recovered: Vec::new(),
    };
    let (actions, _) = h.turn(0);
    let c = claims(&actions);
    assert_eq!(c[0].0, ClaimKind::TakeOver { limit: 2 });
    h.claimed(c[0].2, batch(1, 2, Priority::Normal), true, 0);
    // A full takeover: another; the window (4) has room for both waiting publishes.
    let (actions, _) = h.turn(0);
    let c = claims(&actions);
    assert_eq!(c[0].0, ClaimKind::TakeOver { limit: 2 });
    h.claimed(c[0].2, Vec::new(), true, 0);
    let (actions, _) = h.turn(0);
    assert_eq!(claims(&actions)[0].0, ClaimKind::Bulk);
}

/// The publish queue: per relay, at most the window in flight; each relay its own.
#[test]
fn each_relay_has_its_own_window() {
    let cfg = config(16, 2);
    let mut h = Harness::new(&cfg, true);
    let two = (1..=5)
        .map(|i| leased(i, &RELAYS[..2], Priority::Normal, 0))
        .collect();
    let actions = start(&mut h, two, false);
    let sent = published(&actions);
    assert_eq!(sent.len(), 4, "two per relay: {sent:?}");
    assert_eq!(sent.iter().filter(|(r, _)| r == RELAYS[0]).count(), 2);
    // One answer frees one place in that relay's window only.
    let first = publishes(actions).remove(0);
    h.accept(first, 2);
    let sent = published(&h.turn(2).0);
    assert_eq!(sent, vec![(RELAYS[0].to_string(), Priority::Normal)]);
}

/// The publish queue is in priority order: a `high` attempt goes ahead of every
/// waiting publish of a lower priority, behind the ones in flight.
#[test]
fn a_higher_priority_goes_ahead_of_the_waiting_publishes() {
    let cfg = config(16, 1);
    let mut h = Harness::new(&cfg, true);
    let actions = start(&mut h, batch(1, 4, Priority::Normal), true);
    let in_flight = publishes(actions).remove(0);
    // The next bulk claim (4 waiting ≥ a window of 1 per relay: none yet), then a
    // hurried claim brings a `high` record.
    h.p.hurried(1, 2);
    let (actions, _) = h.turn(2);
    let c = claims(&actions);
    assert_eq!((c[0].0, c[0].1), (ClaimKind::Hurried, 1), "{actions:?}");
    h.claimed(
        c[0].2,
        vec![leased(9, &RELAYS[..1], Priority::High, 0)],
        false,
        3,
    );
    assert!(published(&h.turn(3).0).is_empty(), "the window is full");
    h.accept(in_flight, 4);
    let sent = published(&h.turn(4).0);
    assert_eq!(sent, vec![(RELAYS[0].to_string(), Priority::High)]);
}

/// The low window: at most `low_concurrency` publishes of `low` records per relay,
/// while `normal` ones still fill the window.
#[test]
fn low_records_get_the_low_window_and_normal_ones_pass_them() {
    let cfg = config(32, 8);
    let mut h = Harness::new(&cfg, true);
    let actions = start(&mut h, batch(1, 6, Priority::Low), true);
    assert_eq!(published(&actions).len(), 2, "the low window");
    // The claims reached `low` records: the next takes at most 2 × 4 and starts only
    // while fewer than 2 publishes per relay wait (4 wait now).
    assert!(claims(&actions).is_empty(), "{actions:?}");
    let mut h2 = Harness::new(&cfg, true);
    let mut mixed = batch(1, 6, Priority::Low);
    mixed.insert(0, leased(7, &RELAYS[..1], Priority::Normal, 0));
    // A `normal` record beside them is not counted in the low window.
    let actions = start(&mut h2, mixed, true);
    let sent = published(&actions);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[0].1, Priority::Normal);
}

#[test]
fn after_a_claim_reaches_low_records_claims_are_smaller() {
    let cfg = config(32, 8);
    let mut h = Harness::new(&cfg, true);
    let actions = start(&mut h, batch(1, 2, Priority::Low), true);
    // A claim is decided before the turn's publishes start: 2 waited then.
    assert!(claims(&actions).is_empty());
    assert_eq!(published(&actions).len(), 2);
    // None waits now: the next claim starts, limited.
    let c = claims(&h.turn(2).0);
    assert_eq!(
        (c[0].0, c[0].1),
        (ClaimKind::Bulk, 2 * LOW_BATCH_PER_PUBLISH)
    );
}

/// The hurry: a signalled record is claimed at once in a claim of its own, beside the
/// bulk claim in flight and with a window's worth of publishes waiting.
#[test]
fn a_hurry_claims_at_once_beside_a_bulk_claim() {
    let cfg = config(16, 1);
    let mut h = Harness::new(&cfg, true);
    let (actions, _) = h.turn(0);
    assert_eq!(claims(&actions).len(), 1);
    h.p.hurried(3, 1);
    let (actions, _) = h.turn(1);
    let c = claims(&actions);
    assert_eq!(c.len(), 1, "{actions:?}");
    assert_eq!((c[0].0, c[0].1), (ClaimKind::Hurried, 3));
    // One hurried claim at a time; what is signalled meanwhile waits for it.
    h.p.hurried(1, 2);
    assert!(claims(&h.turn(2).0).is_empty());
}

/// The hold: while a hurried claim is in flight no bulk transaction and no `low`
/// publish starts; a hurried `high` record holds bulk transactions until its recording
/// starts; all of it for at most `hold_bound`.
#[test]
fn a_hurried_claim_holds_bulk_transactions_and_low_publishes() {
    let cfg = config(16, 4);
    let mut h = Harness::new(&cfg, true);
    let actions = start(&mut h, batch(1, 6, Priority::Low), true);
    let in_flight = publishes(actions);
    assert_eq!(in_flight.len(), 2);
    h.p.hurried(1, 2);
    let (actions, _) = h.turn(2);
    let hurried = claims(&actions)[0].2;
    assert_eq!(
        h.p.hold(2, false),
        Hold {
            bulk: true,
            low: true
        }
    );
    // A `low` answer frees a place in the low window: no `low` publish starts.
    for a in in_flight {
        h.accept(a, 3);
    }
    let (actions, _) = h.turn(3);
    assert!(published(&actions).is_empty(), "{actions:?}");
    assert!(recordings(&actions).is_empty(), "no group recording");
    assert!(claims(&actions).is_empty(), "no bulk claim");
    // The hurried claim returns a `high` record: `low` publishes go on, bulk
    // transactions stay held until the record's recording starts.
    h.claimed(
        hurried,
        vec![leased(9, &RELAYS[..1], Priority::High, 0)],
        false,
        4,
    );
    let (actions, _) = h.turn(4);
    let sent = published(&actions);
    assert_eq!(sent[0].1, Priority::High);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(
        h.p.hold(4, false),
        Hold {
            bulk: true,
            low: false
        }
    );
    assert!(recordings(&actions).is_empty());
    let high = publishes(actions).remove(0);
    h.accept(high, 5);
    let (actions, _) = h.turn(5);
    assert_eq!(recordings(&actions)[0], (true, 1), "recorded apart, first");
    assert_eq!(h.p.hold(5, false), Hold::default());
}

#[test]
fn the_hold_is_bounded() {
    let cfg = config(16, 4);
    let bound = hold_bound(&cfg);
    assert_eq!(bound, 200);
    let mut h = Harness::new(&cfg, true);
    let held = Hold {
        bulk: true,
        low: true,
    };
    assert_eq!(h.p.hold(10, false), Hold::default());
    assert_eq!(h.p.hold(11, true), held);
    assert_eq!(h.p.hold(10 + bound - 1, true), held);
    assert_eq!(h.p.hold(10 + bound, true), Hold::default());
    // It starts again once nothing held.
    assert_eq!(h.p.hold(500, false), Hold::default());
    assert_eq!(h.p.hold(501, true), held);
    // A quarter of a short lease.
    let short = FlushConfig {
        lease_ms: 400,
        ..cfg.clone()
    };
    assert_eq!(hold_bound(&short), 100);
}

/// Without a timer, nothing in flight means nothing would ever look again: no hold.
#[test]
fn without_a_timer_an_idle_run_is_never_held() {
    let cfg = config(16, 4);
    let mut h = Harness::new(&cfg, false);
    assert_eq!(h.p.hold(0, true), Hold::default());
    let mut h = Harness::new(&cfg, true);
    h.writing = true;
    let (actions, _) = h.turn(0);
    assert!(matches!(actions[..], [Action::LookAgain]), "{actions:?}");
    h.p.looked_again();
    h.writing = false;
    assert_eq!(claims(&h.turn(1).0).len(), 1);
}

/// Group commit: with publishes in flight, a group waits for `batch_size` completions
/// or its bound (the timer); then one recording at a time.
#[test]
fn group_commit_writes_at_batch_size_or_at_its_bound() {
    let cfg = config(2, 8);
    let mut h = Harness::new(&cfg, true);
    // More is due: a claim stays in flight, so this is not the tail.
    let actions = start(&mut h, batch(1, 5, Priority::Normal), true);
    assert_eq!(claims(&actions).len(), 1);
    let mut sent = publishes(actions);
    assert_eq!(sent.len(), 5);
    h.accept(sent.remove(0), 10);
    let (actions, next) = h.turn(10);
    assert!(recordings(&actions).is_empty());
    assert_eq!(next.timer_ms, Some(GROUP_WAIT_MS));
    h.accept(sent.remove(0), 20);
    let (actions, next) = h.turn(20);
    assert_eq!(recordings(&actions), vec![(false, 2)], "batch size");
    assert_eq!(next.timer_ms, None);
    let Some(Action::Record(recording)) = actions.into_iter().next() else {
        panic!("a recording");
    };
    h.accept(sent.remove(0), 30);
    let (actions, next) = h.turn(30);
    assert!(recordings(&actions).is_empty(), "one at a time");
    assert_eq!(next.timer_ms, None, "no timer while recording");
    h.p.timer_fired();
    h.p.recorded(recording, 45, true);
    assert_eq!(h.p.latency().count, 2, "the answers' waits");
    // What gathered during the recording is written at once, a group of one.
    let (actions, _) = h.turn(45);
    assert_eq!(recordings(&actions), vec![(false, 1)]);
    // Otherwise at the group's bound: its first answer's arrival + the group wait.
    h.accept(sent.remove(0), 50);
    let (actions, next) = h.turn(50);
    assert!(recordings(&actions).is_empty());
    assert_eq!(next.timer_ms, None, "recording");
}

/// At the tail (nothing waits to publish, nothing left to claim) answers still gather
/// while publishes are in flight: written when the last one answers, at `batch_size`, or
/// by the group's bound, never one transaction per answer (with a storage that commits
/// faster than answers arrive, the tail of a full window was 256 commits of one record).
#[test]
fn the_tail_gathers_its_answers_until_nothing_publishes() {
    let cfg = config(8, 8);
    let mut h = Harness::new(&cfg, true);
    let actions = start(&mut h, batch(1, 3, Priority::Normal), false);
    let mut sent = publishes(actions);
    assert_eq!(sent.len(), 3);
    h.accept(sent.remove(0), 5);
    let (actions, next) = h.turn(5);
    assert!(recordings(&actions).is_empty(), "two publishes in flight");
    assert_eq!(
        next.timer_ms,
        Some(GROUP_WAIT_MS),
        "bounded by the group's wait"
    );
    h.accept(sent.remove(0), 6);
    assert!(recordings(&h.turn(6).0).is_empty(), "one publish in flight");
    h.accept(sent.remove(0), 7);
    assert_eq!(
        recordings(&h.turn(7).0),
        vec![(false, 3)],
        "nothing publishes: one group"
    );
    // A slow last answer: the group is written at its bound.
    let mut h = Harness::new(&cfg, true);
    let actions = start(&mut h, batch(1, 2, Priority::Normal), false);
    let mut sent = publishes(actions);
    h.accept(sent.remove(0), 5);
    assert!(recordings(&h.turn(5).0).is_empty());
    h.p.timer_fired();
    assert_eq!(recordings(&h.turn(5 + GROUP_WAIT_MS).0), vec![(false, 1)]);
}

/// Nothing starts past half a lease: a late publish is skipped (and not counted), a
/// record none of whose publishes started is handed back.
#[test]
fn past_half_a_lease_publishes_are_skipped_and_unattempted_records_handed_back() {
    let cfg = config(8, 1);
    let mut h = Harness::new(&cfg, true);
    let two = (1..=2)
        .map(|i| leased(i, &RELAYS[..1], Priority::Normal, 0))
        .collect();
    let actions = start(&mut h, two, false);
    let first = publishes(actions).remove(0);
    let half = LEASE_MS / 2;
    h.accept(first, half);
    let (actions, _) = h.turn(half);
    assert!(published(&actions).is_empty());
    assert_eq!(h.p.skipped(), 1);
    let handed: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            Action::HandBack(records) => Some(records.len()),
            _ => None,
        })
        .collect();
    assert_eq!(handed, vec![1], "{actions:?}");
    // The attempted one is past half its lease: recorded at once.
    assert_eq!(recordings(&actions), vec![(false, 1)]);
}

/// A relay that answered again: a wake-up (not while held), then the next claim is
/// filtered by that relay.
#[test]
fn a_wake_up_filters_the_next_claim() {
    let cfg = config(8, 4);
    let mut h = Harness::new(&cfg, true);
    h.recovered = vec![RELAYS[1].to_string()];
    h.writing = true;
    let (actions, _) = h.turn(0);
    assert!(
        matches!(actions[..], [Action::LookAgain]),
        "held: {actions:?}"
    );
    assert_eq!(h.recovered.len(), 1, "asked only when a wake-up may start");
    h.p.looked_again();
    h.writing = false;
    let (actions, _) = h.turn(1);
    let c = claims(&actions);
    assert!(matches!(actions.last(), Some(Action::Wake(r)) if r == &[RELAYS[1]]));
    h.claimed(c[0].2, Vec::new(), false, 2);
    h.p.woken(1, vec![RELAYS[1].to_string()], Some(3));
    let (actions, _) = h.turn(3);
    let filtered = actions.iter().find_map(|a| match a {
        Action::Claim { request, .. } => Some(request.relays.clone()),
        _ => None,
    });
    assert_eq!(filtered, Some(vec![RELAYS[1].to_string()]));
}

/// A failure stops everything new; what is in flight is still reported.
#[test]
fn a_failure_stops_everything_new() {
    let cfg = config(8, 4);
    let mut h = Harness::new(&cfg, true);
    let actions = start(&mut h, batch(1, 6, Priority::Normal), true);
    let sent = publishes(actions);
    assert_eq!(sent.len(), 4);
    let claim = claims(&h.turn(2).0)[0].2;
    h.p.claimed(claim, None, 2);
    assert!(h.p.stopped());
    for a in sent {
        h.accept(a, 3);
    }
    let (actions, next) = h.turn(3);
    assert!(actions.is_empty(), "{actions:?}");
    assert_eq!(next, Next::default());
}

/// A completion lists its results in target order, whatever order the relays answered
/// in.
#[test]
fn a_completion_lists_results_in_target_order() {
    let cfg = config(1, 4);
    let mut h = Harness::new(&cfg, true);
    let actions = start(&mut h, vec![leased(1, &RELAYS, Priority::Normal, 0)], false);
    let mut sent = publishes(actions);
    assert_eq!(sent.len(), 3);
    while let Some(publish) = sent.pop() {
        h.accept(publish, 2);
    }
    let (actions, _) = h.turn(2);
    let Some(Action::Record(recording)) = actions.into_iter().next() else {
        panic!("a recording");
    };
    let targets: Vec<&str> = recording.completions[0]
        .results
        .iter()
        .map(|r| r.target.as_str())
        .collect();
    assert_eq!(targets, RELAYS);
}
