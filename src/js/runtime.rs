//! The flusher runtime: runs [`crate::flush::run`] (claims, publishes and recordings
//! overlapped) until nothing is due, then sleeps until the earliest retry time, and
//! wakes on the triggers a browser offers.
//!
//! - One run at a time per outbox; concurrent `flush()` calls share a run (a call made
//!   while a run is in progress waits for the next one, so its records are seen).
//! - One flusher per database across tabs and workers: a run first takes the Web Lock
//!   `nostr-outbox:<name>` with `ifAvailable`; when another context holds it the run is
//!   skipped at once (`skipped: "locked"`), as when the request for it is refused (a
//!   document that is not fully active). Without `navigator.locks` it runs anyway and
//!   the store's leases keep records exclusive. A memory store is private to its
//!   outbox, so it takes no lock.
//! - Crash recovery: a run holding the lock is the only live flusher (every flush path
//!   holds it while it flushes: `flush()`, auto-flush, and the service worker's
//!   `handleSync`, which runs through this runtime), and every run finishes what it
//!   claimed before it lets the lock go. So a lease held by another owner (another
//!   outbox: a closed tab, a killed browser, a terminated worker) is an orphan, and the
//!   run takes it over first ([`crate::flush::RunBounds::take_over`]). Its own leases
//!   are never taken. A storage adapter that says it is `exclusive` (a Durable
//!   Object's: one live instance at a time) makes every run the only live flusher too,
//!   so a new incarnation takes over what a killed one leased. Otherwise (storage
//!   shared without Web Locks: Deno KV, SQLite, a context without `navigator.locks`)
//!   a run keeps a heartbeat for its owner ([`crate::core::heartbeat`]: written, renewed
//!   every 2 s, removed at its end) and takes over the leases of owners whose heartbeat
//!   lapsed (a killed process) within seconds, instead of after `leaseMs`; an owner
//!   that never beat keeps its leases until they expire.
//! - A run is skipped while the runtime reports itself offline (`navigator.onLine`).
//! - Auto-flush (`start_auto`): runs at start, on `online`, when the page becomes
//!   visible (`visibilitychange`, only where a `document` exists), after each enqueue,
//!   and on a timer at the next due time; `offline` cancels the timer. Every listener
//!   and timer closure is owned here and removed on `stop_auto` or drop.
//!
//! The clock is `Date.now()` and randomness `crypto.getRandomValues`, read only here
//! and in the API layer. A run needs them and `setTimeout`, with no stand-in: it checks
//! all three before it claims anything, and when one fails during the run it claims
//! nothing more, stops holding, records what it has under way (the retry jitter of
//! those attempts is the middle of its range) and fails with `unsupported` or
//! `no_random_source`; a lease id is only ever made of fresh random words. No delivery
//! rule lives here: claims, retries and outcomes are the store's and [`crate::core`]'s.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{spawn_local, JsFuture};
use web_sys::EventTarget;

use super::sys;
use super::view::FlushView;
#[cfg(feature = "adapter")]
use crate::core::heartbeat::{Heartbeat, BEAT_EVERY_MS, BEAT_LAPSE_MS};
use crate::core::Signal;
use crate::flush::sign::{self, SignConfig};
use crate::flush::wake::{self, Probes, RunEnd, WakeDelays};
use crate::flush::{self, FlushConfig, FlushEvent, FlushSummary};
use crate::platform::{self, timer_failures, Sleep, Timer};
use crate::store::{Store, StoreError};
use crate::transport::websocket::JsSigner;
use crate::transport::Transport;
use futures_util::future::LocalBoxFuture;
#[cfg(feature = "adapter")]
use futures_util::future::{select, Either};
#[cfg(feature = "adapter")]
use std::pin::pin;

/// A timer fires this much after the due time, so the claim sees the record as due.
const TIMER_SLACK_MS: u64 = 5;

/// How the runtime runs.
#[derive(Debug, Clone)]
pub(crate) struct RuntimeConfig {
    /// The Web Lock name (`nostr-outbox:<database name>`); `None` for a store no other
    /// context can see (memory).
    pub lock_name: Option<String>,
    /// Batch size, concurrency, lease, owner and retry schedule of each tick.
    pub flush: FlushConfig,
    /// The most ticks one run makes.
    pub max_ticks: u32,
    /// While another context holds the lock, auto-flush checks again after this long.
    pub lock_retry_ms: u64,
    /// After a failed auto-flush run, the next one is tried after this long.
    pub error_retry_ms: u64,
    /// No other live context reaches the storage (a Durable Object's): every run is
    /// the only live flusher, as one holding the Web Lock is.
    pub exclusive: bool,
    /// Other live contexts may reach the storage (a storage adapter that is not
    /// `exclusive`; IndexedDB where there are no Web Locks, in a build with adapters):
    /// a run that does not hold the Web Lock keeps a heartbeat
    /// ([`crate::core::heartbeat`]).
    #[cfg(feature = "adapter")]
    pub shared: bool,
    /// The app's signer and resolver, which prepare drafts and routes
    /// ([`crate::flush::sign`]); `None`: those are left for a context that has them.
    pub signer: Option<JsSigner>,
    /// How drafts are signed and routes resolved.
    pub sign: SignConfig,
}

/// Why a run failed.
#[derive(Debug, Clone)]
pub(crate) enum RunError {
    /// The outbox was closed.
    Closed,
    /// The store failed.
    Store(StoreError),
    /// The clock could not be read (`unsupported`).
    Clock,
    /// A timer could not be set (`unsupported`).
    Timer,
    /// The random source failed (`no_random_source`).
    Random(getrandom::Error),
}

type RunResult = Result<FlushView, RunError>;

/// A run's result, shared by every caller waiting for it.
#[derive(Default)]
struct Pending {
    result: RefCell<Option<RunResult>>,
    wakers: RefCell<Vec<Waker>>,
}

impl Pending {
    fn complete(&self, result: RunResult) {
        *self.result.borrow_mut() = Some(result);
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        for w in wakers {
            w.wake();
        }
    }
}

struct Wait(Rc<Pending>);

impl Future for Wait {
    type Output = RunResult;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RunResult> {
        if let Some(r) = self.0.result.borrow().as_ref() {
            return Poll::Ready(r.clone());
        }
        self.0.wakers.borrow_mut().push(cx.waker().clone());
        Poll::Pending
    }
}

/// An event listener owned by the runtime; removed on drop.
struct Listener {
    target: EventTarget,
    kind: &'static str,
    closure: Closure<dyn FnMut(web_sys::Event)>,
}

impl Listener {
    fn new(
        target: EventTarget,
        kind: &'static str,
        f: impl FnMut(web_sys::Event) + 'static,
    ) -> Option<Listener> {
        let closure = Closure::<dyn FnMut(web_sys::Event)>::new(f);
        target
            .add_event_listener_with_callback(kind, closure.as_ref().unchecked_ref())
            .ok()?;
        Some(Listener {
            target,
            kind,
            closure,
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self
            .target
            .remove_event_listener_with_callback(self.kind, self.closure.as_ref().unchecked_ref());
    }
}

/// Holds the Web Lock until released (or dropped).
struct LockGuard(Option<js_sys::Function>);

impl LockGuard {
    /// Releases the lock and waits until it is free again, so a following run of this
    /// context does not find its own lock still held.
    async fn release(mut self) {
        if let Some(release) = self.0.take() {
            if let Ok(p) = release.call0(&JsValue::UNDEFINED) {
                if let Ok(p) = p.dyn_into::<js_sys::Promise>() {
                    let _ = JsFuture::from(p).await;
                }
            }
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(release) = self.0.take() {
            let _ = release.call0(&JsValue::UNDEFINED);
        }
    }
}

struct Auto {
    _listeners: Vec<Listener>,
    timer: Option<Timer>,
}

/// What a run may claim: lanes and relays (empty: all), as in [`FlushConfig`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    /// Only records in these lanes.
    pub lanes: Vec<String>,
    /// Only records waiting for these relays, published to those relays only.
    pub relays: Vec<String>,
}

#[derive(Default)]
struct State {
    running: Option<Rc<Pending>>,
    /// Runs asked for while one runs, in order; callers asking for the same filter
    /// share one.
    queued: Vec<(Filter, Rc<Pending>)>,
    auto: Option<Auto>,
}

/// What the runtime reports besides flush events: why a run failed.
pub(crate) type ErrorSink = Box<dyn Fn(RunError)>;
/// Where the runtime sends the flusher's per-record events.
pub(crate) type EventSink = Box<dyn Fn(FlushEvent<'_>)>;

struct Shared<S, T> {
    store: Rc<S>,
    transport: Rc<T>,
    config: RuntimeConfig,
    on_event: EventSink,
    on_error: ErrorSink,
    closed: Cell<bool>,
    state: RefCell<State>,
    /// When the next auto-flush run probes the unreachable relays first
    /// ([`wake::Probes`]).
    probes: Cell<Probes>,
    /// Records enqueued during a run that it should claim at once (see
    /// [`Runtime::kick_after_enqueue`]).
    hurry: Cell<u32>,
    /// `high` records being written (see [`Runtime::hold`]).
    writing: Rc<Cell<u32>>,
    /// Fired with `hurry`: a run in progress looks at it at once
    /// ([`flush::RunBounds::nudge`]).
    nudge: Signal,
}

/// Holds a running flush's bulk transactions back until dropped ([`Runtime::hold`]).
pub(crate) struct Hold(Rc<Cell<u32>>);

impl Drop for Hold {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

/// The flusher runtime of one outbox.
pub(crate) struct Runtime<S: Store + 'static, T: Transport + 'static> {
    shared: Rc<Shared<S, T>>,
}

impl<S: Store + 'static, T: Transport + 'static> Runtime<S, T> {
    /// A runtime over `store` and `transport`; nothing runs until `flush` or
    /// `start_auto`.
    pub(crate) fn new(
        store: Rc<S>,
        transport: Rc<T>,
        config: RuntimeConfig,
        on_event: EventSink,
        on_error: ErrorSink,
    ) -> Runtime<S, T> {
        Runtime {
            shared: Rc::new(Shared {
                store,
                transport,
                config,
                on_event,
                on_error,
                closed: Cell::new(false),
                state: RefCell::new(State::default()),
                probes: Cell::new(Probes::default()),
                hurry: Cell::new(0),
                writing: Rc::default(),
                nudge: Signal::default(),
            }),
        }
    }

    /// Runs the flusher now (or joins the next run) and reports what it did.
    pub(crate) async fn flush(&self) -> RunResult {
        self.flush_filtered(Filter::default()).await
    }

    /// Runs the flusher now over what `filter` admits (or joins the next run with
    /// the same filter) and reports what it did.
    pub(crate) async fn flush_filtered(&self, filter: Filter) -> RunResult {
        if self.shared.closed.get() {
            return Err(RunError::Closed);
        }
        Wait(Shared::start_with(&self.shared, filter)).await
    }

    /// While the guard lives (a `high` record is being written), a running flush starts
    /// no bulk transaction ([`flush::RunBounds::hold`]), so the record's claim does not
    /// queue behind one created meanwhile.
    pub(crate) fn hold(&self) -> Hold {
        let writing = &self.shared.writing;
        writing.set(writing.get().saturating_add(1));
        Hold(Rc::clone(writing))
    }

    /// After an enqueue of `urgent` records that must not wait behind a backlog (not
    /// `low`): a run in progress claims them at once ([`flush::RunBounds::hurry`]);
    /// then as [`Runtime::kick`].
    pub(crate) fn kick_after_enqueue(&self, urgent: u32) {
        if urgent > 0 && self.shared.state.borrow().running.is_some() {
            let n = self.shared.hurry.get().saturating_add(urgent);
            self.shared.hurry.set(n);
            self.shared.nudge.fire();
        }
        self.kick();
    }

    /// Starts a run if auto-flush is on (e.g. after an enqueue).
    pub(crate) fn kick(&self) {
        if self.is_auto() {
            Shared::start(&self.shared);
        }
    }

    /// True while auto-flush is on.
    pub(crate) fn is_auto(&self) -> bool {
        self.shared.state.borrow().auto.is_some()
    }

    /// Turns auto-flush on: listens for `online`, `offline` and `visibilitychange` and
    /// runs now. No-op when already on or closed.
    pub(crate) fn start_auto(&self) {
        if self.shared.closed.get() || self.is_auto() {
            return;
        }
        let mut listeners = Vec::new();
        let global: JsValue = js_sys::global().into();
        if let Ok(global) = global.dyn_into::<EventTarget>() {
            let weak = Rc::downgrade(&self.shared);
            listeners.extend(Listener::new(global.clone(), "online", move |_| {
                // Circuits opened while offline would hold publishes back for up to
                // `circuitOpenMs` although the network is back.
                if let Some(shared) = weak.upgrade() {
                    shared.transport.network_restored();
                }
                Shared::wake(&weak);
            }));
            let weak = Rc::downgrade(&self.shared);
            listeners.extend(Listener::new(global, "offline", move |_| {
                if let Some(shared) = weak.upgrade() {
                    if let Some(auto) = shared.state.borrow_mut().auto.as_mut() {
                        auto.timer = None;
                    }
                }
            }));
        }
        if let Some(document) = sys::page_document() {
            let weak = Rc::downgrade(&self.shared);
            listeners.extend(Listener::new(document, "visibilitychange", move |_| {
                if sys::is_visible() {
                    Shared::wake(&weak);
                }
            }));
        }
        self.shared.state.borrow_mut().auto = Some(Auto {
            _listeners: listeners,
            timer: None,
        });
        Shared::start(&self.shared);
    }

    /// Turns auto-flush off: removes every listener and the timer. A run in progress
    /// finishes.
    pub(crate) fn stop_auto(&self) {
        let auto = self.shared.state.borrow_mut().auto.take();
        drop(auto);
    }

    /// Stops auto-flush, refuses new runs, and waits for a run in progress.
    pub(crate) async fn close(&self) {
        self.shared.closed.set(true);
        self.stop_auto();
        let (running, queued) = {
            let mut state = self.shared.state.borrow_mut();
            (state.running.clone(), std::mem::take(&mut state.queued))
        };
        for (_, q) in queued {
            q.complete(Err(RunError::Closed));
        }
        if let Some(r) = running {
            let _ = Wait(r).await;
        }
    }
}

impl<S: Store + 'static, T: Transport + 'static> Drop for Runtime<S, T> {
    fn drop(&mut self) {
        self.shared.closed.set(true);
        self.stop_auto();
    }
}

/// When auto-flush runs again after `result` at `now`: the policy is `flush::wake`'s
/// (natively tested); the runtime only arms its timer. A failure is reported here.
fn wake_at(
    result: &RunResult,
    now: u64,
    config: &RuntimeConfig,
    on_error: &ErrorSink,
    unreachable: bool,
    probes: &Cell<Probes>,
) -> Option<u64> {
    let end = match result {
        Ok(view) if view.ran => RunEnd::Ran {
            claimed: view.claimed,
            next_due_ms: view.next_due_at,
        },
        Ok(view) if view.skipped == Some("locked") => RunEnd::Locked,
        Ok(_) | Err(RunError::Closed) => RunEnd::Idle,
        Err(e) => {
            on_error(e.clone());
            RunEnd::Failed
        }
    };
    let delays = WakeDelays {
        lock_retry_ms: config.lock_retry_ms,
        error_retry_ms: config.error_retry_ms,
    };
    let mut p = probes.get();
    let at = wake::next_wake(end, now, delays, unreachable, &mut p);
    probes.set(p);
    at
}

impl<S: Store + 'static, T: Transport + 'static> Shared<S, T> {
    fn wake(weak: &Weak<Self>) {
        if let Some(shared) = weak.upgrade() {
            if !shared.closed.get() {
                Shared::start(&shared);
            }
        }
    }

    /// Starts a run, or queues one after the run in progress; returns its result cell.
    fn start(this: &Rc<Self>) -> Rc<Pending> {
        Shared::start_with(this, Filter::default())
    }

    /// [`Shared::start`] of a run over what `filter` admits.
    fn start_with(this: &Rc<Self>, filter: Filter) -> Rc<Pending> {
        let mut state = this.state.borrow_mut();
        if state.running.is_some() {
            if let Some((_, p)) = state.queued.iter().find(|(f, _)| *f == filter) {
                return p.clone();
            }
            let pending: Rc<Pending> = Rc::default();
            state.queued.push((filter, pending.clone()));
            return pending;
        }
        let pending: Rc<Pending> = Rc::default();
        state.running = Some(pending.clone());
        drop(state);
        Shared::spawn(this.clone(), filter, pending.clone());
        pending
    }

    fn spawn(this: Rc<Self>, filter: Filter, pending: Rc<Pending>) {
        spawn_local(async move {
            let result = this.run(&filter).await;
            pending.complete(result.clone());
            let next = {
                let mut state = this.state.borrow_mut();
                state.running = None;
                (!state.queued.is_empty()).then(|| state.queued.remove(0))
            };
            match next {
                Some((filter, queued)) if !this.closed.get() => {
                    this.state.borrow_mut().running = Some(queued.clone());
                    Shared::spawn(this.clone(), filter, queued);
                }
                Some((_, queued)) => queued.complete(Err(RunError::Closed)),
                None => this.schedule(&result),
            }
        });
    }

    /// Arms the auto-flush timer after a run.
    fn schedule(self: &Rc<Self>, result: &RunResult) {
        // Without a clock no time can be set: the failure is reported, and the next
        // run (`flush()`, an enqueue, `online`) fails at its start until it is back.
        let Some(now) = platform::clock() else {
            return (self.on_error)(RunError::Clock);
        };
        let unreachable = !self.transport.unreachable().is_empty();
        let at = wake_at(
            result,
            now,
            &self.config,
            &self.on_error,
            unreachable,
            &self.probes,
        );
        let mut state = self.state.borrow_mut();
        let Some(auto) = state.auto.as_mut() else {
            return;
        };
        // No timer (`setTimeout` gone since the run's check): nothing is armed, and the
        // next run fails at its start with `unsupported`.
        auto.timer = at.and_then(|at| {
            let weak = Rc::downgrade(self);
            let delay = at.saturating_sub(now) + TIMER_SLACK_MS;
            Timer::new(u32::try_from(delay).unwrap_or(u32::MAX), move || {
                Shared::wake(&weak)
            })
        });
    }

    /// Probes every unreachable relay when a probe is due ([`wake::Probes`]), one
    /// after the other (a refused connection fails at once). One that opens is reported
    /// recovered by the transport, and the run that follows makes the records waiting
    /// for it due.
    async fn probe_if_due(&self) {
        if !platform::clock().is_some_and(|now| self.probes.get().due(now)) {
            return;
        }
        let mut reached = false;
        for relay in self.transport.unreachable() {
            reached |= self.transport.probe(&relay).await;
        }
        let mut probes = self.probes.get();
        probes.probed(reached);
        self.probes.set(probes);
    }

    async fn run(&self, filter: &Filter) -> RunResult {
        if self.closed.get() {
            return Err(RunError::Closed);
        }
        let mut view = FlushView::default();
        if !sys::is_online() {
            view.skipped = Some("offline");
            return Ok(view);
        }
        let lock = match &self.config.lock_name {
            None => LockGuard(None),
            // `undefined`: no Web Locks API here, the leases alone keep records apart.
            // `null` (another context holds the lock) or a refusal (a document that is
            // not fully active): skipped, since the holder takes every other owner's
            // leases over as orphans, this run's too.
            Some(name) => match JsFuture::from(platform::try_lock(name)).await {
                Ok(v) if !v.is_null() => LockGuard(v.dyn_into::<js_sys::Function>().ok()),
                _ => {
                    view.skipped = Some("locked");
                    return Ok(view);
                }
            },
        };
        // Holding the lock makes this the only live flusher: leases of other owners
        // are orphans, taken over at once; so does storage no other live context
        // reaches (a Durable Object's: a new incarnation owns what the old one leased).
        // A memory store is private: nothing to take over.
        let take_over = lock.0.is_some() || self.config.exclusive;
        // Storage other live contexts may share, with no Web Lock (Deno KV, SQLite, a
        // context without `navigator.locks`): the run beats while it runs, and takes
        // over the leases of owners whose heartbeat has lapsed (a killed process).
        // Only the edge build has such storage: browsers have Web Locks, and the heartbeat
        // costs the browser .wasm 3.3 KB gzipped.
        #[cfg(feature = "adapter")]
        let result = {
            let beating = !take_over && self.config.shared;
            self.run_beating(&mut view, take_over, beating, filter)
                .await
        };
        #[cfg(not(feature = "adapter"))]
        let result = self.run_locked(&mut view, take_over, false, filter).await;
        lock.release().await;
        result.map(|()| view)
    }

    /// [`Runtime::run_locked`], keeping this owner's heartbeat when `beating`
    /// ([`crate::core::heartbeat`]): written first, renewed every [`BEAT_EVERY_MS`]
    /// while the run lasts, removed at its end (a failed renewal or removal only lets
    /// the row lapse). One call of `run_locked` either way: its state machine is large.
    #[cfg(feature = "adapter")]
    async fn run_beating(
        &self,
        view: &mut FlushView,
        take_over: bool,
        beating: bool,
        filter: &Filter,
    ) -> Result<(), RunError> {
        let owner = &self.config.flush.owner;
        let lease_ms = sign::lease_ms(&self.config.flush, self.config.sign);
        let beat = || async move {
            let now = platform::clock().ok_or(RunError::Clock)?;
            let beat = Heartbeat::at(now, lease_ms);
            self.store
                .beat(owner, Some(beat), now)
                .await
                .map(drop)
                .map_err(RunError::Store)
        };
        if beating {
            beat().await?;
        }
        let renew = async {
            if !beating {
                return futures_util::future::pending().await;
            }
            loop {
                Sleep::new(BEAT_EVERY_MS as u32).await;
                // Best effort: a renewal that fails is tried again at the next.
                let _ = beat().await;
            }
        };
        let run = self.run_locked(view, take_over || beating, beating, filter);
        let result = match select(pin!(run), pin!(renew)).await {
            Either::Left((result, _)) => result,
            Either::Right((never, _)) => never,
        };
        if !beating {
            return result;
        }
        let now = platform::clock().unwrap_or_default();
        // Another flusher that runs (or stopped lately) may hold leases: if it stops
        // beating they are taken over once its heartbeat lapses, so the next run comes
        // then, not when those leases run out.
        if self.store.beat(owner, None, now).await.is_ok_and(|n| n > 0) && result.is_ok() {
            let at = now + BEAT_LAPSE_MS + BEAT_EVERY_MS;
            view.next_due_at = Some(view.next_due_at.map_or(at, |due| due.min(at)));
        }
        result
    }

    async fn run_locked(
        &self,
        view: &mut FlushView,
        take_over: bool,
        lapsed_only: bool,
        filter: &Filter,
    ) -> Result<(), RunError> {
        // The clock, a timer and the random words, checked before anything is claimed.
        let start = platform::clock().ok_or(RunError::Clock)?;
        if !platform::has_timers() {
            return Err(RunError::Timer);
        }
        let words = RefCell::new(platform::RandomWords::new());
        words.borrow_mut().ready(64).map_err(RunError::Random)?;
        let timers = timer_failures();
        self.probe_if_due().await;
        // A clock that fails during the run reads as its last reading (time stands
        // still: no lease looks expired early) and stops the run.
        let (last, clock_failed) = (Cell::new(start), Cell::new(false));
        let clock = || match platform::clock() {
            Some(now) => {
                last.set(now);
                now
            }
            None => {
                clock_failed.set(true);
                last.get()
            }
        };
        let sound = || !clock_failed.get() && timer_failures() == timers;
        let mut random = || words.borrow_mut().next_u32();
        let mut observer = |ev: FlushEvent<'_>| (self.on_event)(ev);
        // Asked before each claim, whose lease id takes 4 words.
        let keep_going = || {
            sound() && words.borrow_mut().ready(4).is_ok() && !self.closed.get() && sys::is_online()
        };
        let sleep = |ms: u64| -> LocalBoxFuture<'static, ()> {
            Box::pin(Sleep::new(u32::try_from(ms).unwrap_or(u32::MAX)))
        };
        let bounds = flush::RunBounds {
            max_ticks: self.config.max_ticks,
            keep_going: &keep_going,
            take_over,
            sleep: Some(&sleep),
            hurry: Some(&|| self.hurry.replace(0)),
            // Without a timer the held run's look again would come at once: no hold.
            hold: Some(&|| self.writing.get() > 0 && sound()),
            nudge: Some(&self.nudge),
            prepare: self
                .config
                .signer
                .as_ref()
                .map_or(0, crate::transport::Signer::can),
        };
        let filtered;
        let config = if *filter == Filter::default() && !lapsed_only {
            &self.config.flush
        } else {
            filtered = FlushConfig {
                lanes: filter.lanes.clone(),
                relays: filter.relays.clone(),
                lapsed_only,
                ..self.config.flush.clone()
            };
            &filtered
        };
        // Drafts first: a draft signed now is published by this run.
        if let Some(signer) = &self.config.signer {
            let signed = sign::sign_drafts(
                &*self.store,
                signer,
                config,
                self.config.sign,
                take_over,
                &clock,
                &mut random,
                &sleep,
                &keep_going,
                &mut observer,
            )
            .await
            .map_err(RunError::Store)?;
            view.add(&FlushSummary {
                stats: signed,
                ..FlushSummary::default()
            });
        }
        let summary = flush::run(
            &*self.store,
            &*self.transport,
            config,
            &clock,
            &mut random,
            &mut observer,
            &bounds,
        )
        .await
        .map_err(RunError::Store)?;
        if clock_failed.get() {
            return Err(RunError::Clock);
        }
        if timer_failures() != timers {
            return Err(RunError::Timer);
        }
        words.borrow_mut().ready(0).map_err(RunError::Random)?;
        view.add(&summary);
        view.next_due_at = summary.next_due_ms;
        view.ran = true;
        Ok(())
    }
}
