//! The browser relay transport: [`WsTransport`] publishes signed events to Nostr relays
//! over the runtime's `WebSocket` (windows, workers, service workers, edge runtimes) and
//! maps every result to the core's [`Outcome`].
//!
//! What it owns:
//! - one connection per relay (by normalized URL), opened lazily, shared by every
//!   publish, closed after [`WsTransportConfig::idle_close_ms`] without use;
//! - many events in flight on one connection, each waiting for the `OK` with its id
//!   (within [`WsTransportConfig::publish_timeout_ms`]);
//! - NIP-42: the relay's latest `AUTH` challenge; on `auth-required:` the app's
//!   [`Signer`] signs the kind-22242 event, the transport checks it, sends it, waits
//!   for its `OK` and resends the *same* signed event once;
//! - NIP-70: a protected event (`["-"]` tag) is sent only on a connection that has
//!   authenticated as its author: AUTH first (waiting up to the auth timeout for the
//!   relay's challenge), never an unauthenticated send; otherwise `AuthRequired` (no
//!   signer, no challenge, a failed AUTH: retried) or `Rejected(Restricted)` (the
//!   signer is another key), with the reason;
//! - read-back ([`Transport::holds`]): a `REQ` by id until the event or `EOSE`, on a short-lived
//!   connection of its own (`glue.js`'s `storedEvents`), never on the shared ones;
//! - per-relay state: a `rate-limited:` answer pauses that relay alone for
//!   [`WsTransportConfig::rate_limit_backoff_ms`]; repeated connection failures open a
//!   circuit so publishes to a dead relay report `Unreachable` at once;
//! - diagnostics ([`WsTransport::diagnostics`]): ignored, malformed, oversized and
//!   unrelated frames, notices, connections, per-relay state.
//!
//! What it must not do: retry (the core decides), touch a store, re-serialize or re-sign
//! an event (it sends `event.raw` verbatim), panic on any frame, or leak closures (each
//! connection owns its handlers and detaches them when it closes or drops).
//!
//! See `docs/TRANSPORT.md` for the outcome table and the design notes.

use std::cell::RefCell;
use std::fmt;
use std::pin::pin;
use std::rc::Rc;

use futures_util::future::{select, Either, LocalBoxFuture};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::{Pace, PublishReport, Signer, Transport};
use crate::core::{EventEnvelope, Outcome, RejectReason};
use crate::nostr::{
    auth_message, auth_template, check_auth_event, classify_ok, event_message, newer_version,
    req_by_ids, req_newest, Event, RelayUrl,
};

mod conn;
mod notify;

#[wasm_bindgen(module = "/src/js/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = storedEvents)]
    fn stored_events(url: &str, req: &str, timeout_ms: u32) -> js_sys::Promise;
    #[wasm_bindgen(js_name = resolveRoute)]
    fn resolve_route(
        resolver: &js_sys::Function,
        route: &js_sys::Array,
        event: &str,
    ) -> js_sys::Promise;
}

#[wasm_bindgen(module = "/src/js/relay_info.js")]
extern "C" {
    /// NIP-11: the relay's information document, kept or fetched within `bound_ms`
    /// (kept `ttl_ms`; 0: no document, no checks), and the check of `raw` against its
    /// limits: `null` (send) or the evidence message, prefixed `limit:` (never passes)
    /// or `wait:`. Never rejects.
    #[wasm_bindgen(js_name = relayVerdict)]
    fn relay_verdict(url: &str, raw: &str, ttl_ms: u32, bound_ms: u32) -> js_sys::Promise;
}

use crate::platform::{describe, now_ms, Sleep};
use conn::{Answer, AuthState, BusyGuard, Conn, ConnState, Counters};

/// How the WebSocket transport times, limits and protects its connections. Every field
/// is checked by [`WsTransportConfig::validate`]; JSON/JS names are camelCase and every
/// field has a default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WsTransportConfig {
    /// How long opening a connection may take (1..=600 000 ms; default 5 000).
    pub connect_timeout_ms: u32,
    /// How long a publish waits for its `OK` once sent (1..=600 000 ms; default 10 000).
    pub publish_timeout_ms: u32,
    /// How long NIP-42 authentication may take: signer plus the relay's `OK` to the
    /// `AUTH` event (1..=600 000 ms; default 30 000, NIP-07 signers may prompt the user).
    pub auth_timeout_ms: u32,
    /// An unused connection is closed after this long (1..=86 400 000 ms; default 30 000).
    pub idle_close_ms: u32,
    /// Longer frames are ignored and counted, never parsed (1 024..=67 108 864 bytes;
    /// default 1 MiB).
    pub max_frame_bytes: u32,
    /// After a `rate-limited:` answer, publishes to that relay report `RateLimited`
    /// without sending for this long (0..=3 600 000 ms, 0 = never pause; default 5 000).
    pub rate_limit_backoff_ms: u32,
    /// After this many consecutive failed connections (connect failure or close with
    /// publishes in flight, with no `OK` in between) the relay's circuit opens
    /// (0..=1 000, 0 = never; default 3).
    pub circuit_failures: u32,
    /// The longest an open circuit short-circuits publishes with `Unreachable`
    /// (1..=3 600 000 ms; default 30 000). It opens for a sixteenth of this at first
    /// and twice as long after every further failed connection, up to this: a relay
    /// that restarts is tried again within seconds, one that stays down at most this
    /// often. Afterwards one connection is tried again.
    pub circuit_open_ms: u32,
    /// NIP-11: how long a relay's information document is kept before it is fetched
    /// again (0..=604 800 000 ms, 0 = never fetched, no checks; default 3 600 000).
    /// Each publish is checked against the limits it states before sending
    /// (`src/js/relay_info.js`).
    pub relay_info_ttl_ms: u32,
}

impl Default for WsTransportConfig {
    fn default() -> Self {
        WsTransportConfig {
            connect_timeout_ms: 5_000,
            publish_timeout_ms: 10_000,
            auth_timeout_ms: 30_000,
            idle_close_ms: 30_000,
            max_frame_bytes: 1024 * 1024,
            rate_limit_backoff_ms: 5_000,
            circuit_failures: 3,
            circuit_open_ms: 30_000,
            relay_info_ttl_ms: 3_600_000,
        }
    }
}

/// A [`WsTransportConfig`] field out of its range.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid transport config: {field} must be in {min}..={max}, got {value}")]
pub struct WsConfigError {
    /// The camelCase field name.
    pub field: &'static str,
    /// The smallest allowed value.
    pub min: u64,
    /// The largest allowed value.
    pub max: u64,
    /// The value given.
    pub value: u64,
}

impl WsConfigError {
    /// The stable error code: `invalid_config` (one of `ErrorCode`'s, checked by
    /// `tests/core/api_lists.rs`).
    pub fn code(&self) -> &'static str {
        "invalid_config"
    }
}

impl WsTransportConfig {
    /// Checks every field against its range.
    pub fn validate(&self) -> Result<(), WsConfigError> {
        let check = |field: &'static str, value: u32, min: u64, max: u64| {
            let v = u64::from(value);
            if v < min || v > max {
                Err(WsConfigError {
                    field,
                    min,
                    max,
                    value: v,
                })
            } else {
                Ok(())
            }
        };
        check("connectTimeoutMs", self.connect_timeout_ms, 1, 600_000)?;
        check("publishTimeoutMs", self.publish_timeout_ms, 1, 600_000)?;
        check("authTimeoutMs", self.auth_timeout_ms, 1, 600_000)?;
        check("idleCloseMs", self.idle_close_ms, 1, 86_400_000)?;
        check(
            "maxFrameBytes",
            self.max_frame_bytes,
            1024,
            64 * 1024 * 1024,
        )?;
        check(
            "rateLimitBackoffMs",
            self.rate_limit_backoff_ms,
            0,
            3_600_000,
        )?;
        check("circuitFailures", self.circuit_failures, 0, 1_000)?;
        check("circuitOpenMs", self.circuit_open_ms, 1, 3_600_000)?;
        check("relayInfoTtlMs", self.relay_info_ttl_ms, 0, 604_800_000)?;
        Ok(())
    }
}

/// A [`Signer`] backed by a JavaScript function `(template) => signedEvent` or
/// `async (template) => signedEvent`, e.g. `t => window.nostr.signEvent(t)` (NIP-07),
/// and, for the flusher, the app's resolver of routing intents (`glue.js`'s
/// `resolveRoute` calls it). A throw or a rejection is reported as the error.
#[derive(Debug, Clone)]
pub struct JsSigner {
    function: Option<js_sys::Function>,
    resolver: Option<js_sys::Function>,
}

impl JsSigner {
    /// Wraps the JavaScript signer function.
    pub fn new(function: js_sys::Function) -> JsSigner {
        JsSigner {
            function: Some(function),
            resolver: None,
        }
    }

    /// The helpers that prepare records ([`Signer::can`]): the signer function and
    /// the resolver function, either optional; `None` when neither is given.
    pub fn helpers(
        function: Option<js_sys::Function>,
        resolver: Option<js_sys::Function>,
    ) -> Option<JsSigner> {
        (function.is_some() || resolver.is_some()).then_some(JsSigner { function, resolver })
    }
}

impl Signer for JsSigner {
    fn can(&self) -> u8 {
        (u8::from(self.function.is_some()) * crate::core::NEEDS_SIGNER)
            | (u8::from(self.resolver.is_some()) * crate::core::NEEDS_RESOLVER)
    }

    fn sign(&self, template: String) -> LocalBoxFuture<'static, Result<String, String>> {
        let function = self.function.clone();
        Box::pin(async move {
            let function = function.ok_or("no signer")?;
            let arg = js_sys::JSON::parse(&template)
                .map_err(|e| format!("cannot build the template: {}", describe(&e)))?;
            let returned = function
                .call1(&JsValue::UNDEFINED, &arg)
                .map_err(|e| format!("signer threw: {}", describe(&e)))?;
            let signed = JsFuture::from(js_sys::Promise::resolve(&returned))
                .await
                // Not "rejected": the drafts' signing tells a refusal by its words
                // (`flush::sign::is_refusal`), and these are the signer's own.
                .map_err(|e| format!("signer failed: {}", describe(&e)))?;
            // `JSON.stringify(undefined)` is `undefined`, not a string (a signer that
            // resolves with nothing): an error, never a string conversion that panics.
            js_sys::JSON::stringify(&signed)
                .map_err(|e| format!("signer returned a value that is not JSON: {}", describe(&e)))?
                .as_string()
                .ok_or_else(|| "signer returned a value that is not an event: undefined".into())
        })
    }

    fn resolve(
        &self,
        route: &[String],
        event: &str,
    ) -> LocalBoxFuture<'static, Result<String, String>> {
        let asked = self.resolver.as_ref().map(|r| {
            let intents: js_sys::Array = route.iter().map(|i| JsValue::from_str(i)).collect();
            resolve_route(r, &intents, event)
        });
        Box::pin(async move {
            JsFuture::from(asked.ok_or("no resolver")?)
                .await
                .map_err(|e| format!("resolver failed: {}", describe(&e)))?
                .as_string()
                .ok_or_else(|| "resolver failed".into())
        })
    }

    /// In a `Worker` where the runtime has them ([`crate::platform::pow`]).
    fn mine(&self, template: String, ms: u64) -> LocalBoxFuture<'static, Result<Option<u64>, ()>> {
        Box::pin(async move { crate::platform::pow::mine(&template, ms).await })
    }
}

/// The state of a relay's connection, for diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConnectionState {
    /// No connection (never opened, or replaced after closing).
    None,
    /// Opening.
    Connecting,
    /// Open.
    Open,
    /// Closed (idle, by the relay, or failed); the next publish opens a new one.
    Closed,
}

/// Counters and state of one relay, since the transport was created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelayDiagnostics {
    /// The normalized relay URL.
    pub url: String,
    /// The current connection's state.
    pub connection: ConnectionState,
    /// True when the current connection completed NIP-42 authentication.
    pub authenticated: bool,
    /// Publishes waiting for an `OK` now.
    pub in_flight: u32,
    /// Connections opened so far.
    pub connections_opened: u64,
    /// `EVENT` frames sent (first sends and resends after AUTH).
    pub events_sent: u64,
    /// `OK` frames matched to a publish (including AUTH answers).
    pub oks: u64,
    /// Well-formed frames about something else: `OK` for an id not waited for (unknown
    /// or late), `EVENT`, `EOSE`, `CLOSED`, unknown message types.
    pub unrelated_frames: u64,
    /// Frames that are not JSON or have the wrong shape.
    pub malformed_frames: u64,
    /// Frames longer than `maxFrameBytes` (not parsed).
    pub oversized_frames: u64,
    /// Binary frames (relays speak text).
    pub binary_frames: u64,
    /// `NOTICE` frames.
    pub notices: u64,
    /// The last `NOTICE` text (at most 256 characters).
    pub last_notice: Option<String>,
    /// `AUTH` challenges received.
    pub auth_challenges: u64,
    /// Signed `AUTH` events sent.
    pub auth_sent: u64,
    /// Publishes answered without sending (circuit open or rate-limit pause).
    pub short_circuited: u64,
    /// Publishes that timed out waiting for their `OK`.
    pub timeouts: u64,
    /// Consecutive failed connections without an `OK` in between.
    pub consecutive_failures: u32,
    /// When the open circuit closes again (unix ms), if open now.
    pub circuit_open_until_ms: Option<u64>,
    /// When the rate-limit pause ends (unix ms), if paused now.
    pub rate_limited_until_ms: Option<u64>,
    /// The spacing of `EVENT`s to this relay now (ms; 0: none): see [`super::Pace`].
    pub pace_ms: u32,
    /// Publishes that waited for their turn under that spacing before being sent.
    pub paced: u64,
    /// The last connection failure.
    pub last_failure: Option<String>,
}

/// A snapshot of the transport's connections and counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WsDiagnostics {
    /// Connections connecting or open now.
    pub open_connections: u32,
    /// Frames ignored over all relays: unrelated + malformed + oversized + binary.
    pub ignored_frames: u64,
    /// Malformed frames over all relays.
    pub malformed_frames: u64,
    /// Oversized frames over all relays.
    pub oversized_frames: u64,
    /// Unrelated frames over all relays.
    pub unrelated_frames: u64,
    /// `NOTICE` frames over all relays.
    pub notices: u64,
    /// One entry per relay ever published to, in URL order.
    pub relays: Vec<RelayDiagnostics>,
}

impl WsDiagnostics {
    /// The entry for `relay` (any spelling that normalizes to the same URL).
    pub fn relay(&self, relay: &str) -> Option<&RelayDiagnostics> {
        let url = RelayUrl::parse(relay).ok()?;
        self.relays.iter().find(|r| r.url == url.as_str())
    }
}

struct RelayState {
    conn: Option<Rc<Conn>>,
    counters: Rc<Counters>,
    consecutive_failures: u32,
    circuit_open_until: f64,
    rate_limited_until: f64,
    /// The spacing of `EVENT`s ([`super::Pace`]).
    pace: Pace,
    last_failure: Option<String>,
    /// A connection failed since the relay last answered (kept by
    /// `network_restored`, which only forgets the counts).
    unreachable: bool,
}

impl RelayState {
    fn new() -> RelayState {
        RelayState {
            conn: None,
            counters: Rc::default(),
            consecutive_failures: 0,
            circuit_open_until: 0.0,
            rate_limited_until: 0.0,
            pace: Pace::default(),
            last_failure: None,
            unreachable: false,
        }
    }
}

/// Per-relay state by URL: a `Vec` kept sorted by URL (iteration in URL order, as a
/// `BTreeMap` gave). Relays are few; this avoids one more B-tree instantiation in the
/// .wasm.
#[derive(Default)]
struct RelayStates(Vec<(String, RelayState)>);

impl RelayStates {
    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn get(&self, key: &str) -> Option<&RelayState> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut RelayState> {
        self.find(key).ok().map(|i| &mut self.0[i].1)
    }

    /// The state of `key`, created when absent.
    fn get_or_new(&mut self, key: &str) -> &mut RelayState {
        let i = match self.find(key) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (key.to_owned(), RelayState::new()));
                i
            }
        };
        &mut self.0[i].1
    }

    fn iter(&self) -> impl Iterator<Item = (&String, &RelayState)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut RelayState> {
        self.0.iter_mut().map(|(_, v)| v)
    }
}

struct Inner {
    config: WsTransportConfig,
    signer: RefCell<Option<Rc<dyn Signer>>>,
    relays: RefCell<RelayStates>,
    /// Relays that answered again after a failed connection, for `take_recovered`.
    recovered: RefCell<Vec<String>>,
}

/// Publishes signed events to relays over WebSockets; see the module docs.
///
/// Cloning is cheap and shares connections and state. Dropping the last clone closes
/// every connection and frees every handler.
#[derive(Clone)]
pub struct WsTransport {
    inner: Rc<Inner>,
}

impl fmt::Debug for WsTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WsTransport")
            .field("config", &self.inner.config)
            .field("relays", &self.inner.relays.borrow().len())
            .field("signer", &self.inner.signer.borrow().is_some())
            .finish()
    }
}

/// Why one attempt to get an `OK` ended without one.
enum Failure {
    /// The connection closed (or could not be used) first.
    Closed(String),
    /// No `OK` within the publish timeout.
    Timeout,
}

fn ms_u64(t: f64) -> u64 {
    if t.is_finite() && t > 0.0 {
        t as u64
    } else {
        0
    }
}

impl WsTransport {
    /// A transport with this configuration and no signer.
    pub fn new(config: WsTransportConfig) -> Result<WsTransport, WsConfigError> {
        config.validate()?;
        Ok(WsTransport {
            inner: Rc::new(Inner {
                config,
                signer: RefCell::new(None),
                relays: RefCell::default(),
                recovered: RefCell::default(),
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &WsTransportConfig {
        &self.inner.config
    }

    /// Sets (or removes) the NIP-42 signer. Without one, `auth-required:` answers stay
    /// `AuthRequired` (retryable once a signer is set).
    pub fn set_signer(&self, signer: Option<Rc<dyn Signer>>) {
        *self.inner.signer.borrow_mut() = signer;
    }

    /// Sets (or removes) a JavaScript signer function (see [`JsSigner`]).
    pub fn set_js_signer(&self, function: Option<js_sys::Function>) {
        self.set_signer(function.map(|f| Rc::new(JsSigner::new(f)) as Rc<dyn Signer>));
    }

    /// Closes every connection now (publishes in flight on them report `Unreachable`)
    /// and forgets rate-limit pauses and circuits. Counters are kept.
    pub fn close_all(&self) {
        self.close_connections(true);
    }

    /// Closes every connection but keeps each relay's circuit and rate-limit state
    /// (workerd: sockets must not outlive the request that opened them).
    pub fn close_connections_only(&self) {
        self.close_connections(false);
    }

    fn close_connections(&self, reset: bool) {
        let conns: Vec<Rc<Conn>> = {
            let mut relays = self.inner.relays.borrow_mut();
            relays
                .values_mut()
                .filter_map(|st| {
                    if reset {
                        st.consecutive_failures = 0;
                        st.circuit_open_until = 0.0;
                        st.rate_limited_until = 0.0;
                    }
                    st.conn.take()
                })
                .collect()
        };
        for c in conns {
            c.abort("closed by the application");
        }
    }

    /// A snapshot of connections, counters and per-relay state.
    pub fn diagnostics(&self) -> WsDiagnostics {
        let now = now_ms();
        let relays = self.inner.relays.borrow();
        let mut out = WsDiagnostics {
            open_connections: 0,
            ignored_frames: 0,
            malformed_frames: 0,
            oversized_frames: 0,
            unrelated_frames: 0,
            notices: 0,
            relays: Vec::with_capacity(relays.len()),
        };
        for (url, st) in relays.iter() {
            let c = &st.counters;
            let (connection, authenticated, in_flight) = match &st.conn {
                None => (ConnectionState::None, false, 0),
                Some(conn) => (
                    match conn.state() {
                        ConnState::Connecting => ConnectionState::Connecting,
                        ConnState::Open => ConnectionState::Open,
                        ConnState::Closed(_) => ConnectionState::Closed,
                    },
                    conn.auth_state() == AuthState::Done,
                    conn.in_flight(),
                ),
            };
            if matches!(
                connection,
                ConnectionState::Connecting | ConnectionState::Open
            ) {
                out.open_connections += 1;
            }
            out.malformed_frames += c.malformed_frames.get();
            out.oversized_frames += c.oversized_frames.get();
            out.unrelated_frames += c.unrelated_frames.get();
            out.notices += c.notices.get();
            out.ignored_frames += c.unrelated_frames.get()
                + c.malformed_frames.get()
                + c.oversized_frames.get()
                + c.binary_frames.get();
            out.relays.push(RelayDiagnostics {
                url: url.clone(),
                connection,
                authenticated,
                in_flight,
                connections_opened: c.connections_opened.get(),
                events_sent: c.events_sent.get(),
                oks: c.oks.get(),
                unrelated_frames: c.unrelated_frames.get(),
                malformed_frames: c.malformed_frames.get(),
                oversized_frames: c.oversized_frames.get(),
                binary_frames: c.binary_frames.get(),
                notices: c.notices.get(),
                last_notice: c.last_notice.borrow().clone(),
                auth_challenges: c.auth_challenges.get(),
                auth_sent: c.auth_sent.get(),
                short_circuited: c.short_circuited.get(),
                timeouts: c.timeouts.get(),
                consecutive_failures: st.consecutive_failures,
                circuit_open_until_ms: (st.circuit_open_until > now)
                    .then(|| ms_u64(st.circuit_open_until)),
                rate_limited_until_ms: (st.rate_limited_until > now)
                    .then(|| ms_u64(st.rate_limited_until)),
                pace_ms: st.pace.spacing_at(now) as u32,
                paced: c.paced.get(),
                last_failure: st.last_failure.clone(),
            });
        }
        out
    }

    /// A report without touching the network when the relay's circuit is open or its
    /// rate-limit pause is running.
    fn gate(&self, key: &str) -> Option<PublishReport> {
        let now = now_ms();
        let relays = self.inner.relays.borrow();
        let st = relays.get(key)?;
        if st.circuit_open_until > now {
            Counters::bump(&st.counters.short_circuited);
            return Some(PublishReport::new(
                Outcome::Unreachable,
                format!(
                    "circuit open for {} more ms after {} consecutive connection failures (last: {})",
                    ms_u64(st.circuit_open_until - now),
                    st.consecutive_failures,
                    st.last_failure.as_deref().unwrap_or("unknown"),
                ),
            ));
        }
        if st.rate_limited_until > now {
            Counters::bump(&st.counters.short_circuited);
            return Some(PublishReport::new(
                Outcome::RateLimited,
                format!(
                    "rate-limited: pausing this relay for {} more ms (not sent)",
                    ms_u64(st.rate_limited_until - now)
                ),
            ));
        }
        None
    }

    /// The relay's live connection, or a new one.
    fn connection(&self, url: &RelayUrl) -> Result<Rc<Conn>, String> {
        let mut relays = self.inner.relays.borrow_mut();
        let st = relays.get_or_new(url.as_str());
        if let Some(c) = &st.conn {
            if c.is_usable() {
                return Ok(c.clone());
            }
        }
        let cfg = &self.inner.config;
        let conn = Conn::open(
            url,
            cfg.max_frame_bytes as usize,
            cfg.idle_close_ms,
            st.counters.clone(),
        )?;
        st.conn = Some(conn.clone());
        Ok(conn)
    }

    /// Counts a failed connection (once per connection) and opens the circuit when
    /// enough failed in a row.
    fn note_failure(&self, key: &str, conn: Option<&Conn>, message: &str) {
        if let Some(c) = conn {
            if !c.take_failure() {
                return;
            }
        }
        let mut relays = self.inner.relays.borrow_mut();
        let st = relays.get_or_new(key);
        st.consecutive_failures = st.consecutive_failures.saturating_add(1);
        st.last_failure = Some(message.to_owned());
        st.unreachable = true;
        let threshold = self.inner.config.circuit_failures;
        if threshold > 0 && st.consecutive_failures >= threshold {
            let longest = f64::from(self.inner.config.circuit_open_ms);
            let doublings = (st.consecutive_failures - threshold).min(4);
            let open = (longest / 16.0 * f64::from(1u32 << doublings)).min(longest);
            st.circuit_open_until = now_ms() + open;
        }
    }

    /// The relay answered: it is reachable.
    fn note_answer(&self, key: &str) {
        if let Some(st) = self.inner.relays.borrow_mut().get_mut(key) {
            st.consecutive_failures = 0;
            st.circuit_open_until = 0.0;
            if std::mem::take(&mut st.unreachable) {
                let mut recovered = self.inner.recovered.borrow_mut();
                if !recovered.iter().any(|r| r == key) {
                    recovered.push(key.to_owned());
                }
            }
        }
    }

    /// The events `relay` sends back for the `REQ` frame `req` (subscription `outbox`)
    /// until its `EOSE`, on a connection of its own (`glue.js`'s `storedEvents`) within
    /// the publish timeout; `None` when it cannot tell (unreachable, `CLOSED`, a close,
    /// no `EOSE` in time).
    /// (Boxed: read-back and the check for a newer version share one copy.)
    fn query(&self, relay: &str, req: &str) -> LocalBoxFuture<'static, Option<js_sys::Array>> {
        let asked = RelayUrl::parse(relay).ok().map(|url| {
            let timeout = self.inner.config.publish_timeout_ms;
            JsFuture::from(stored_events(url.as_str(), req, timeout))
        });
        Box::pin(async move {
            let stored = asked?.await.ok().filter(|v| !v.is_null())?;
            Some(js_sys::Array::from(&stored))
        })
    }

    /// Adapts the relay's spacing of `EVENT`s to an answer ([`super::Pace`]).
    fn note_pace(&self, key: &str, rate_limited: bool) {
        if let Some(st) = self.inner.relays.borrow_mut().get_mut(key) {
            st.pace.answered(now_ms(), rate_limited);
        }
    }

    /// This publish's turn under the relay's spacing: how long to wait before sending
    /// (0: at once), its turn taken; `None` when that wait would be longer than the
    /// publish timeout (the publish is then answered `RateLimited`, not sent).
    fn pace_turn(&self, key: &str) -> Option<u32> {
        let timeout = f64::from(self.inner.config.publish_timeout_ms);
        match self.inner.relays.borrow_mut().get_mut(key) {
            Some(st) => st.pace.turn(now_ms(), timeout).map(|ms| ms as u32),
            None => Some(0),
        }
    }

    fn note_rate_limited(&self, key: &str) {
        let backoff = self.inner.config.rate_limit_backoff_ms;
        if backoff == 0 {
            return;
        }
        if let Some(st) = self.inner.relays.borrow_mut().get_mut(key) {
            st.rate_limited_until = now_ms() + f64::from(backoff);
        }
    }

    fn counters(&self, key: &str) -> Option<Rc<Counters>> {
        self.inner
            .relays
            .borrow()
            .get(key)
            .map(|st| st.counters.clone())
    }

    /// The relay's connection (`key` is its URL), held busy and open: waited for at most
    /// the connect timeout; a failure is counted ([`WsTransport::note_failure`]) and
    /// described.
    async fn open_busy(&self, url: &RelayUrl, key: &str) -> Result<(Rc<Conn>, BusyGuard), String> {
        let conn = self
            .connection(url)
            .inspect_err(|msg| self.note_failure(key, None, msg))?;
        let busy = conn.enter();
        self.wait_open(&conn)
            .await
            .inspect_err(|reason| self.note_failure(key, Some(&conn), reason))?;
        Ok((conn, busy))
    }

    /// Waits until `conn` is open (or failed), at most the connect timeout.
    async fn wait_open(&self, conn: &Rc<Conn>) -> Result<(), String> {
        let opened = conn.wait_for(|c| match c.state() {
            ConnState::Connecting => None,
            ConnState::Open => Some(Ok(())),
            ConnState::Closed(reason) => Some(Err(reason)),
        });
        let timeout = Sleep::new(self.inner.config.connect_timeout_ms);
        match select(pin!(opened), timeout).await {
            Either::Left((result, _)) => result,
            Either::Right(((), _)) => {
                let msg = format!(
                    "connect timeout after {} ms",
                    self.inner.config.connect_timeout_ms
                );
                conn.abort(&msg);
                Err(msg)
            }
        }
    }

    /// Sends `frame` and waits for the `OK` for `event_id`, at most `timeout_ms`.
    async fn request_ok(
        &self,
        conn: &Rc<Conn>,
        event_id: &str,
        frame: &str,
        timeout_ms: u32,
    ) -> Result<(bool, String), Failure> {
        let waiter = conn
            .send_expecting_ok(event_id, frame)
            .map_err(Failure::Closed)?;
        let answer = match select(pin!(waiter.answer()), Sleep::new(timeout_ms)).await {
            Either::Left((answer, _)) => Some(answer),
            Either::Right(((), _)) => None,
        };
        match answer {
            Some(Answer::Ok { accepted, message }) => Ok((accepted, message)),
            Some(Answer::Closed(reason)) => Err(Failure::Closed(reason)),
            None => Err(Failure::Timeout),
        }
    }

    /// Publishes once on an open connection and turns the result into a report; the
    /// caller handles `auth-required:`.
    async fn send_event(
        &self,
        key: &str,
        conn: &Rc<Conn>,
        event: &EventEnvelope,
        counters: &Counters,
    ) -> PublishReport {
        let timeout = self.inner.config.publish_timeout_ms;
        // Pacing: after `rate-limited:` answers the relay's `EVENT`s are spaced out, and
        // a publish whose turn is further away than its timeout is not sent.
        match self.pace_turn(key) {
            Some(0) => {}
            Some(wait) => {
                Counters::bump(&counters.paced);
                Sleep::new(wait).await;
            }
            None => {
                Counters::bump(&counters.short_circuited);
                return PublishReport::new(
                    Outcome::RateLimited,
                    "rate-limited: this relay's pacing has no turn within the publish \
                     timeout (not sent)",
                );
            }
        }
        let frame = event_message(&event.raw);
        let notices = counters.notices.get();
        let result = self.request_ok(conn, &event.id, &frame, timeout).await;
        Counters::bump(&counters.events_sent);
        match result {
            Ok((accepted, message)) => {
                self.note_answer(key);
                let outcome = classify_ok(accepted, &message);
                self.note_pace(key, outcome == Outcome::RateLimited);
                if outcome == Outcome::RateLimited {
                    self.note_rate_limited(key);
                }
                PublishReport::new(outcome, message)
            }
            Err(Failure::Closed(reason)) => {
                // Ends with `core::UNANSWERED` (read-back looks for it).
                let msg = format!("{reason} before the relay answered");
                self.note_failure(key, Some(conn), &msg);
                PublishReport::new(Outcome::Unreachable, msg)
            }
            Err(Failure::Timeout) => {
                Counters::bump(&counters.timeouts);
                // Relays that refuse without an `OK` (nostr-rs-relay for an event over
                // its size limit) often say why in a `NOTICE`: kept beside the timeout,
                // which stays a timeout (a `NOTICE` names no event).
                let mut msg = format!("no OK within {timeout} ms");
                if counters.notices.get() != notices {
                    if let Some(notice) = counters.last_notice.borrow().as_deref() {
                        msg.push_str("; the relay's NOTICE meanwhile: ");
                        msg.push_str(notice);
                    }
                }
                PublishReport::new(Outcome::Timeout, msg)
            }
        }
    }

    /// NIP-42 on `conn` with the transport's signer, for a publish that needs it (`why`:
    /// the relay's `auth-required:` message, or what asks for it): the report to give
    /// when it cannot authenticate.
    async fn authenticate_for(
        &self,
        url: &RelayUrl,
        key: &str,
        conn: &Rc<Conn>,
        counters: &Counters,
        why: &str,
    ) -> Result<(), PublishReport> {
        let signer = self.inner.signer.borrow().clone();
        let Some(signer) = signer else {
            return Err(PublishReport::new(
                Outcome::AuthRequired,
                format!("{why} (no signer configured)"),
            ));
        };
        let Err(failed) = self.authenticate(url, conn, signer, counters).await else {
            return Ok(());
        };
        if let ConnState::Closed(reason) = conn.state() {
            let msg = format!("{reason} while authenticating");
            self.note_failure(key, Some(conn), &msg);
            return Err(PublishReport::new(Outcome::Unreachable, msg));
        }
        Err(PublishReport::new(
            Outcome::AuthRequired,
            format!("{why} (authentication failed: {failed})"),
        ))
    }

    /// NIP-42 on `conn`: sign the AUTH event for the latest challenge (or wait for the
    /// publish already doing it) and wait for the relay's `OK`.
    async fn authenticate(
        &self,
        url: &RelayUrl,
        conn: &Rc<Conn>,
        signer: Rc<dyn Signer>,
        counters: &Counters,
    ) -> Result<(), String> {
        let auth_timeout = self.inner.config.auth_timeout_ms;
        let deadline = Sleep::new(auth_timeout);
        let mut deadline = pin!(deadline);
        // Wait while another publish authenticates.
        let settled = conn.wait_for(|c| match c.auth_state() {
            AuthState::Running => None,
            other => Some(other),
        });
        let state = match select(pin!(settled), deadline.as_mut()).await {
            Either::Left((s, _)) => s,
            Either::Right(_) => return Err("timed out waiting for authentication".into()),
        };
        match state {
            AuthState::Done => return Ok(()),
            AuthState::Failed(m) => return Err(m),
            AuthState::Idle | AuthState::Running => {}
        }
        if let ConnState::Closed(reason) = conn.state() {
            return Err(reason);
        }
        let Some(challenge) = conn.challenge() else {
            return Err("the relay sent no AUTH challenge".into());
        };
        conn.set_auth_state(AuthState::Running);
        // Whatever happens below, never leave the state `Running`.
        let guard = AuthGuard { conn };
        let created_at = (now_ms() / 1000.0) as u64;
        let template = auth_template(url, &challenge, created_at);
        let run = async {
            let signed = signer.sign(template.to_string()).await?;
            let event = Event::parse_json(&signed)
                .map_err(|e| format!("the signer returned an invalid event: {e}"))?;
            check_auth_event(&event, url, &challenge)
                .map_err(|e| format!("the signer returned a wrong AUTH event: {e}"))?;
            Counters::bump(&counters.auth_sent);
            let frame = auth_message(event.raw());
            match self
                .request_ok(conn, event.id(), &frame, auth_timeout)
                .await
            {
                Ok((true, _)) => {
                    conn.set_author(event.pubkey());
                    Ok(())
                }
                Ok((false, message)) => Err(format!("the relay refused the AUTH event: {message}")),
                Err(Failure::Closed(reason)) => Err(reason),
                Err(Failure::Timeout) => Err("no OK for the AUTH event".into()),
            }
        };
        let result = match select(pin!(run), deadline).await {
            Either::Left((r, _)) => r,
            Either::Right(_) => Err(format!("authentication took over {auth_timeout} ms")),
        };
        match &result {
            Ok(()) => guard.finish(AuthState::Done),
            Err(m) => guard.finish(AuthState::Failed(m.clone())),
        }
        result
    }
}

/// Resets a connection's authentication from `Running` if the attempt is dropped.
struct AuthGuard<'a> {
    conn: &'a Rc<Conn>,
}

impl AuthGuard<'_> {
    /// Records the result (the drop then has nothing left to reset).
    fn finish(self, state: AuthState) {
        self.conn.set_auth_state(state);
    }
}

impl Drop for AuthGuard<'_> {
    fn drop(&mut self) {
        if self.conn.auth_state() == AuthState::Running {
            self.conn.set_auth_state(AuthState::Idle);
        }
    }
}

impl Transport for WsTransport {
    /// Closes every open circuit and forgets counted connection failures; rate-limit
    /// pauses stay.
    fn network_restored(&self) {
        for st in self.inner.relays.borrow_mut().values_mut() {
            st.consecutive_failures = 0;
            st.circuit_open_until = 0.0;
        }
    }

    fn take_recovered(&self) -> Vec<String> {
        std::mem::take(&mut *self.inner.recovered.borrow_mut())
    }

    fn unreachable(&self) -> Vec<String> {
        self.inner
            .relays
            .borrow()
            .iter()
            .filter(|(_, st)| st.unreachable)
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Opens (or reuses) the relay's connection and waits for it to open, at most the
    /// connect timeout; a failure counts as a failed connection, an open connection
    /// as an answer (the circuit closes, the relay is reported recovered). The
    /// connection then closes when idle, unless a publish uses it.
    async fn probe(&self, relay: &str) -> bool {
        let Ok(url) = RelayUrl::parse(relay) else {
            return false;
        };
        let key = url.as_str().to_owned();
        let opened = self.open_busy(&url, &key).await.is_ok();
        if opened {
            self.note_answer(&key);
        }
        opened
    }

    /// A `REQ` by id on a connection of its own (`glue.js`'s `storedEvents`), bounded by
    /// the publish timeout: `Some(true)` only when the relay sent back an event with
    /// that id (its `EOSE` is then not awaited).
    async fn holds(&self, relay: &str, event_id: &str) -> Option<bool> {
        let stored = self
            .query(relay, &req_by_ids("outbox", &[event_id]))
            .await?;
        Some(stored.iter().any(|event| {
            js_sys::Reflect::get(&event, &"id".into())
                .ok()
                .and_then(|id| id.as_string())
                .as_deref()
                == Some(event_id)
        }))
    }

    /// The relay's newest version of `event`'s slot (`REQ` with `limit: 1` on a
    /// connection of its own, bounded by the publish timeout), when it is newer: each
    /// event sent back is checked ([`newer_version`]), so a relay cannot stop a
    /// publish with a made-up one.
    async fn newer(&self, relay: &str, event: &EventEnvelope) -> Option<(String, u64)> {
        let req = req_newest("outbox", event.meta.as_ref()?);
        let stored = self.query(relay, &req).await?;
        stored.iter().find_map(|e| {
            let text = js_sys::JSON::stringify(&e).ok()?.as_string()?;
            newer_version(event, &text)
        })
    }

    async fn publish(&self, relay: &str, event: &EventEnvelope) -> PublishReport {
        let url = match RelayUrl::parse(relay) {
            Ok(u) => u,
            Err(e) => {
                return PublishReport::new(Outcome::Unreachable, format!("bad relay URL: {e}"))
            }
        };
        let key = url.as_str().to_owned();
        if let Some(report) = self.gate(&key) {
            return report;
        }
        // NIP-11: the relay's limits, fetched (when not kept) while the connection opens.
        let cfg = &self.inner.config;
        let (ttl, bound) = (cfg.relay_info_ttl_ms, cfg.connect_timeout_ms);
        let limits = JsFuture::from(relay_verdict(&key, &event.raw, ttl, bound));
        let (conn, _busy) = match self.open_busy(&url, &key).await {
            Ok(open) => open,
            Err(reason) => return PublishReport::new(Outcome::Unreachable, reason),
        };
        if let Some(text) = limits.await.ok().and_then(|v| v.as_string()) {
            let outcome = if text.starts_with("wait:") {
                Outcome::Error
            } else {
                Outcome::Rejected(RejectReason::Limit)
            };
            return PublishReport::new(outcome, text);
        }
        let Some(counters) = self.counters(&key) else {
            return PublishReport::new(Outcome::Unreachable, "relay state missing");
        };
        // NIP-70: a protected event goes only to a relay where its author has
        // authenticated: AUTH first (the relay asks for it when a client connects), never
        // an unauthenticated send, which a relay that ignores NIP-70 would store.
        if let Some(m) = event.meta.as_ref().filter(|m| m.protected) {
            const NOT_SENT: &str = "protected event (NIP-70) not sent";
            if conn.auth_state() != AuthState::Done {
                let asked = conn.wait_for(|c| {
                    (c.challenge().is_some() || matches!(c.state(), ConnState::Closed(_)))
                        .then_some(())
                });
                let _ = select(pin!(asked), Sleep::new(self.inner.config.auth_timeout_ms)).await;
                if let Err(report) = self
                    .authenticate_for(&url, &key, &conn, &counters, NOT_SENT)
                    .await
                {
                    return report;
                }
            }
            if conn.author() != m.pubkey {
                return PublishReport::new(
                    Outcome::Rejected(RejectReason::Restricted),
                    format!(
                        "{NOT_SENT} (authenticated as {}, not its author)",
                        conn.author()
                    ),
                );
            }
        }
        let first = self.send_event(&key, &conn, event, &counters).await;
        if first.outcome != Outcome::AuthRequired {
            return first;
        }
        if let Err(report) = self
            .authenticate_for(&url, &key, &conn, &counters, &first.message)
            .await
        {
            return report;
        }
        // Authenticated: resend the same signed event, once.
        self.send_event(&key, &conn, event, &counters).await
    }
}
