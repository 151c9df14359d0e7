//! One WebSocket connection to one relay: the socket, the four event handlers it owns,
//! the publishes waiting for their `OK`, the relay's latest NIP-42 challenge and the
//! authentication state. It classifies nothing and decides no retry: it routes each
//! `OK` to the publish waiting for that event id and counts every other frame.
//!
//! Ownership: the handlers hold only a `Weak` reference to the connection, so dropping
//! the last `Rc<Conn>` drops the connection; `Drop` detaches the handlers from the socket
//! (so no callback runs afterwards), closes the socket, and frees the closures.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::{Rc, Weak};
use std::task::{Poll, Waker};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{BinaryType, CloseEvent, Event, MessageEvent, WebSocket};

use super::notify::Notify;
use crate::nostr::{RelayMessage, RelayUrl};
use crate::platform::{describe, Timer};

/// The longest challenge remembered (longer `AUTH` frames are counted as malformed).
const MAX_CHALLENGE_LEN: usize = 1024;
/// The longest `NOTICE` text kept for diagnostics.
const MAX_NOTICE_KEPT: usize = 256;

/// Per-relay counters, shared by the relay's successive connections.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub connections_opened: Cell<u64>,
    pub events_sent: Cell<u64>,
    pub oks: Cell<u64>,
    pub unrelated_frames: Cell<u64>,
    pub malformed_frames: Cell<u64>,
    pub oversized_frames: Cell<u64>,
    pub binary_frames: Cell<u64>,
    pub notices: Cell<u64>,
    pub auth_challenges: Cell<u64>,
    pub auth_sent: Cell<u64>,
    pub short_circuited: Cell<u64>,
    pub timeouts: Cell<u64>,
    pub paced: Cell<u64>,
    pub last_notice: RefCell<Option<String>>,
}

impl Counters {
    pub(crate) fn bump(cell: &Cell<u64>) {
        cell.set(cell.get().saturating_add(1));
    }
}

/// Where the socket is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConnState {
    Connecting,
    Open,
    Closed(String),
}

/// What a waiting publish receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The relay's `OK` for the event id.
    Ok { accepted: bool, message: String },
    /// The socket closed first; the text says how.
    Closed(String),
}

/// NIP-42 progress on this connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthState {
    Idle,
    Running,
    Done,
    Failed(String),
}

/// Where one publish's answer lands.
#[derive(Default)]
struct AnswerCell {
    value: RefCell<Option<Answer>>,
    waker: RefCell<Option<Waker>>,
}

impl AnswerCell {
    fn fill(&self, answer: Answer) {
        *self.value.borrow_mut() = Some(answer);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

/// The publishes waiting on one event id, oldest first, each with its waiter key.
type Queue = VecDeque<(u64, Rc<AnswerCell>)>;

struct Handlers {
    open: Closure<dyn FnMut(Event)>,
    message: Closure<dyn FnMut(MessageEvent)>,
    close: Closure<dyn FnMut(CloseEvent)>,
    error: Closure<dyn FnMut(Event)>,
}

/// Publishes waiting for an `OK`, by event id: a `Vec` (a connection has few distinct
/// events in flight), which keeps `HashMap`, its hasher and its random seed out of the
/// .wasm.
#[derive(Default)]
struct Pending(Vec<(String, Queue)>);

impl Pending {
    fn get_mut(&mut self, event_id: &str) -> Option<&mut Queue> {
        self.0
            .iter_mut()
            .find(|(id, _)| id == event_id)
            .map(|(_, q)| q)
    }

    fn get_or_default(&mut self, event_id: &str) -> &mut Queue {
        let i = match self.0.iter().position(|(id, _)| id == event_id) {
            Some(i) => i,
            None => {
                self.0.push((event_id.to_owned(), Queue::default()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }

    /// Forgets `event_id` when nobody waits for it any more.
    fn remove_if_empty(&mut self, event_id: &str) {
        if let Some(i) = self
            .0
            .iter()
            .position(|(id, q)| id == event_id && q.is_empty())
        {
            self.0.swap_remove(i);
        }
    }
}

/// A connection to one relay.
pub(crate) struct Conn {
    ws: WebSocket,
    max_frame: usize,
    idle_ms: u32,
    state: RefCell<ConnState>,
    notify: Notify,
    pending: RefCell<Pending>,
    next_waiter: Cell<u64>,
    busy: Cell<u32>,
    challenge: RefCell<Option<String>>,
    auth: RefCell<AuthState>,
    /// The pubkey this connection authenticated (NIP-42); empty before.
    author: RefCell<String>,
    counters: Rc<Counters>,
    idle: RefCell<Option<Timer>>,
    handlers: RefCell<Option<Handlers>>,
    failure_counted: Cell<bool>,
}

impl Conn {
    /// Starts connecting to `url`. Fails only when the browser refuses to create the
    /// socket (e.g. a `ws://` URL from an `https://` page).
    pub(crate) fn open(
        url: &RelayUrl,
        max_frame: usize,
        idle_ms: u32,
        counters: Rc<Counters>,
    ) -> Result<Rc<Conn>, String> {
        let ws = WebSocket::new(url.as_str())
            .map_err(|e| format!("cannot open a WebSocket to {url}: {}", describe(&e)))?;
        ws.set_binary_type(BinaryType::Arraybuffer);
        Counters::bump(&counters.connections_opened);
        let conn = Rc::new_cyclic(|weak: &Weak<Conn>| {
            let w = weak.clone();
            let open = Closure::<dyn FnMut(Event)>::new(move |_: Event| {
                if let Some(c) = w.upgrade() {
                    c.on_open();
                }
            });
            let w = weak.clone();
            let message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
                if let Some(c) = w.upgrade() {
                    c.on_message(&ev);
                }
            });
            let w = weak.clone();
            let close = Closure::<dyn FnMut(CloseEvent)>::new(move |ev: CloseEvent| {
                if let Some(c) = w.upgrade() {
                    let reason = if ev.reason().is_empty() {
                        format!("connection closed (code {})", ev.code())
                    } else {
                        let r: String = ev.reason().chars().take(200).collect();
                        format!("connection closed (code {}: {r})", ev.code())
                    };
                    c.on_closed(reason);
                }
            });
            // An `error` event is always followed by `close`, which carries the detail.
            let error = Closure::<dyn FnMut(Event)>::new(move |_: Event| {});
            Conn {
                ws: ws.clone(),
                max_frame,
                idle_ms,
                state: RefCell::new(ConnState::Connecting),
                notify: Notify::default(),
                pending: RefCell::default(),
                next_waiter: Cell::new(0),
                busy: Cell::new(0),
                challenge: RefCell::new(None),
                auth: RefCell::new(AuthState::Idle),
                author: RefCell::new(String::new()),
                counters,
                idle: RefCell::new(None),
                handlers: RefCell::new(Some(Handlers {
                    open,
                    message,
                    close,
                    error,
                })),
                failure_counted: Cell::new(false),
            }
        });
        if let Some(h) = conn.handlers.borrow().as_ref() {
            ws.set_onopen(Some(h.open.as_ref().unchecked_ref()));
            ws.set_onmessage(Some(h.message.as_ref().unchecked_ref()));
            ws.set_onclose(Some(h.close.as_ref().unchecked_ref()));
            ws.set_onerror(Some(h.error.as_ref().unchecked_ref()));
        }
        Ok(conn)
    }

    /// The socket's state.
    pub(crate) fn state(&self) -> ConnState {
        self.state.borrow().clone()
    }

    /// True once the socket closed (or was closed by us).
    pub(crate) fn is_closed(&self) -> bool {
        matches!(*self.state.borrow(), ConnState::Closed(_))
    }

    /// True while a new publish can use this connection: not closed, and the socket is
    /// not already closing (a `close` event may be on its way; `send` would drop data).
    pub(crate) fn is_usable(&self) -> bool {
        !self.is_closed()
            && matches!(
                self.ws.ready_state(),
                WebSocket::CONNECTING | WebSocket::OPEN
            )
    }

    /// How many publishes wait for an `OK` on this connection.
    pub(crate) fn in_flight(&self) -> u32 {
        let n: usize = self.pending.borrow().0.iter().map(|(_, q)| q.len()).sum();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The relay's latest NIP-42 challenge.
    pub(crate) fn challenge(&self) -> Option<String> {
        self.challenge.borrow().clone()
    }

    /// This connection's authentication state.
    pub(crate) fn auth_state(&self) -> AuthState {
        self.auth.borrow().clone()
    }

    /// The pubkey this connection authenticated; empty before.
    pub(crate) fn author(&self) -> String {
        self.author.borrow().clone()
    }

    /// Records the pubkey this connection authenticated.
    pub(crate) fn set_author(&self, pubkey: &str) {
        *self.author.borrow_mut() = pubkey.to_string();
    }

    /// Sets the authentication state and wakes everyone waiting on this connection.
    pub(crate) fn set_auth_state(&self, state: AuthState) {
        *self.auth.borrow_mut() = state;
        self.notify.notify_all();
    }

    /// Marks this connection's failure as counted; true the first time only.
    pub(crate) fn take_failure(&self) -> bool {
        !self.failure_counted.replace(true)
    }

    /// Marks a publish as using this connection until the guard drops; the idle timer
    /// only runs while no publish uses it.
    pub(crate) fn enter(self: &Rc<Self>) -> BusyGuard {
        self.busy.set(self.busy.get().saturating_add(1));
        self.idle.borrow_mut().take();
        BusyGuard { conn: self.clone() }
    }

    /// Resolves when `check` returns `Some`; re-checked whenever the connection's state
    /// changes (open, close, challenge, authentication).
    pub(crate) async fn wait_for<T>(&self, mut check: impl FnMut(&Conn) -> Option<T>) -> T {
        poll_fn(|cx| match check(self) {
            Some(v) => Poll::Ready(v),
            None => {
                self.notify.register(cx.waker());
                Poll::Pending
            }
        })
        .await
    }

    /// Sends a client frame expecting an `OK` for `event_id`; the returned waiter
    /// resolves with it (or with the close). The waiter is registered before the send,
    /// so an immediate answer is never missed.
    pub(crate) fn send_expecting_ok(
        self: &Rc<Self>,
        event_id: &str,
        frame: &str,
    ) -> Result<Waiter, String> {
        if let ConnState::Closed(reason) = self.state() {
            return Err(reason);
        }
        let key = self.next_waiter.get();
        self.next_waiter.set(key.wrapping_add(1));
        let cell = Rc::new(AnswerCell::default());
        self.pending
            .borrow_mut()
            .get_or_default(event_id)
            .push_back((key, cell.clone()));
        let waiter = Waiter {
            conn: self.clone(),
            event_id: event_id.to_owned(),
            key,
            cell,
        };
        match self.ws.send_with_str(frame) {
            Ok(()) => Ok(waiter),
            // A socket that cannot send is closed for every waiter: the next publish
            // opens a new one (workerd throws here for a socket opened while handling
            // another request).
            Err(e) => {
                let reason = format!("send failed: {}", describe(&e));
                self.abort(&reason);
                Err(reason)
            }
        }
    }

    /// Closes the socket now, failing whatever waits on it with `reason`.
    pub(crate) fn abort(&self, reason: &str) {
        let _ = self
            .ws
            .close_with_code_and_reason(1000, &reason.chars().take(100).collect::<String>());
        self.on_closed(reason.to_owned());
    }

    fn on_open(&self) {
        if *self.state.borrow() == ConnState::Connecting {
            *self.state.borrow_mut() = ConnState::Open;
        }
        self.notify.notify_all();
    }

    fn on_message(&self, ev: &MessageEvent) {
        let data = ev.data();
        let Some(js_text) = data.dyn_ref::<js_sys::JsString>() else {
            Counters::bump(&self.counters.binary_frames);
            return;
        };
        // UTF-8 is never shorter than UTF-16 code units: skip the copy of a huge frame.
        if js_text.length() as usize > self.max_frame {
            Counters::bump(&self.counters.oversized_frames);
            return;
        }
        let text = String::from(js_text);
        self.on_text(&text);
    }

    fn on_text(&self, text: &str) {
        let c = &self.counters;
        match RelayMessage::parse(text, self.max_frame) {
            RelayMessage::Ok {
                event_id,
                accepted,
                message,
            } => {
                let cell = {
                    let mut pending = self.pending.borrow_mut();
                    let cell = pending
                        .get_mut(&event_id)
                        .and_then(VecDeque::pop_front)
                        .map(|(_, s)| s);
                    pending.remove_if_empty(&event_id);
                    cell
                };
                match cell {
                    Some(cell) => {
                        Counters::bump(&c.oks);
                        cell.fill(Answer::Ok { accepted, message });
                    }
                    None => Counters::bump(&c.unrelated_frames),
                }
            }
            RelayMessage::Notice { message } => {
                Counters::bump(&c.notices);
                *c.last_notice.borrow_mut() = Some(message.chars().take(MAX_NOTICE_KEPT).collect());
            }
            RelayMessage::Auth { challenge } => {
                if challenge.len() > MAX_CHALLENGE_LEN {
                    Counters::bump(&c.malformed_frames);
                    return;
                }
                Counters::bump(&c.auth_challenges);
                *self.challenge.borrow_mut() = Some(challenge);
                // A fresh challenge after a failed authentication allows another try.
                if matches!(*self.auth.borrow(), AuthState::Failed(_)) {
                    *self.auth.borrow_mut() = AuthState::Idle;
                }
                self.notify.notify_all();
            }
            RelayMessage::Closed { .. }
            | RelayMessage::Eose { .. }
            | RelayMessage::Event { .. }
            | RelayMessage::Unknown { .. } => Counters::bump(&c.unrelated_frames),
            RelayMessage::Malformed { .. } => Counters::bump(&c.malformed_frames),
            RelayMessage::TooLarge { .. } => Counters::bump(&c.oversized_frames),
        }
    }

    fn on_closed(&self, reason: String) {
        if self.is_closed() {
            return;
        }
        *self.state.borrow_mut() = ConnState::Closed(reason.clone());
        self.idle.borrow_mut().take();
        let pending: Vec<Rc<AnswerCell>> = self
            .pending
            .borrow_mut()
            .0
            .drain(..)
            .flat_map(|(_, q)| q.into_iter().map(|(_, s)| s))
            .collect();
        for cell in pending {
            cell.fill(Answer::Closed(reason.clone()));
        }
        self.notify.notify_all();
        // Nothing more will arrive: detach the handlers now. The closures themselves are
        // freed in a later task, since one of them may be running right now.
        self.detach();
        if let Some(handlers) = self.handlers.borrow_mut().take() {
            wasm_bindgen_futures::spawn_local(async move { drop(handlers) });
        }
    }

    fn detach(&self) {
        self.ws.set_onopen(None);
        self.ws.set_onmessage(None);
        self.ws.set_onclose(None);
        self.ws.set_onerror(None);
    }

    fn arm_idle(self: &Rc<Self>) {
        if self.busy.get() > 0 || self.is_closed() {
            return;
        }
        let weak = Rc::downgrade(self);
        let timer = Timer::new(self.idle_ms, move || {
            if let Some(c) = weak.upgrade() {
                if c.busy.get() == 0 && !c.is_closed() {
                    c.abort("idle");
                }
            }
        });
        *self.idle.borrow_mut() = timer;
    }

    fn remove_waiter(&self, event_id: &str, key: u64) {
        let mut pending = self.pending.borrow_mut();
        if let Some(q) = pending.get_mut(event_id) {
            q.retain(|(k, _)| *k != key);
        }
        pending.remove_if_empty(event_id);
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.detach();
        if !self.is_closed() {
            let _ = self
                .ws
                .close_with_code_and_reason(1000, "transport dropped");
        }
        // `handlers` and `idle` drop with the struct: closures freed, timer cleared.
    }
}

/// Keeps a connection "busy" (no idle close) while a publish uses it.
pub(crate) struct BusyGuard {
    conn: Rc<Conn>,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        let n = self.conn.busy.get().saturating_sub(1);
        self.conn.busy.set(n);
        if n == 0 {
            self.conn.arm_idle();
        }
    }
}

/// One publish waiting for its `OK`. Dropping it (timeout, cancellation) forgets the
/// wait; a late `OK` then counts as an unrelated frame.
pub(crate) struct Waiter {
    conn: Rc<Conn>,
    event_id: String,
    key: u64,
    cell: Rc<AnswerCell>,
}

impl Waiter {
    /// Resolves with the answer.
    pub(crate) async fn answer(&self) -> Answer {
        poll_fn(|cx| {
            if let Some(a) = self.cell.value.borrow_mut().take() {
                return Poll::Ready(a);
            }
            *self.cell.waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.conn.remove_waiter(&self.event_id, self.key);
    }
}
