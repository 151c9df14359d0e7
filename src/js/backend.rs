//! The concrete storage and transport behind an `Outbox`: enums that delegate to the
//! memory, IndexedDB or adapter backend of the one [`KvStore`] and to the WebSocket
//! ([`WsTransport`]) or an application-supplied [`Transport`]. Pure delegation; the application transport's
//! answers are classified by [`crate::nostr::classify_ok`].

use futures_util::future::LocalBoxFuture;
use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[cfg(feature = "adapter")]
use super::kv::JsKv;
use crate::core::{EventEnvelope, Outcome};
use crate::platform::thrown;
#[cfg(feature = "indexeddb")]
use crate::store::idb::IdbKv;
use crate::store::kv::{
    KvBackend, KvCommit, KvCommitted, KvEntry, KvLimits, KvRange, KvStore, KvValue, MemoryKv,
};
use crate::store::{Progress, StoreError};
use crate::transport::websocket::WsTransport;
use crate::transport::{PublishReport, Transport};

/// The storage under an `Outbox`'s one store ([`KvStore`]): memory, IndexedDB or the
/// application's storage adapter.
#[derive(Debug)]
pub(crate) enum AnyKv {
    Memory(MemoryKv),
    #[cfg(feature = "indexeddb")]
    Idb(IdbKv),
    /// The application's storage adapter.
    #[cfg(feature = "adapter")]
    Js(JsKv),
}

/// The store of an `Outbox`: the one [`KvStore`], over the backend it was opened with.
/// (Awaiting its operations through boxed futures, as a wrapper, made the .wasm 1.5 KB
/// larger, measured.)
pub(crate) type AnyStore = KvStore<AnyKv>;

// Each call awaits one boxed future: the store's state machines hold a pointer instead
// of every variant's future (a smaller .wasm).
macro_rules! delegate {
    ($self:ident, $s:ident => $call:expr) => {{
        let future: LocalBoxFuture<'_, _> = match $self {
            AnyKv::Memory($s) => Box::pin($call),
            #[cfg(feature = "indexeddb")]
            AnyKv::Idb($s) => Box::pin($call),
            #[cfg(feature = "adapter")]
            AnyKv::Js($s) => Box::pin($call),
        };
        future.await
    }};
}

impl AnyKv {
    /// Closes the IndexedDB connection (no-op for the others).
    pub(crate) fn close(&self) {
        #[cfg(feature = "indexeddb")]
        if let AnyKv::Idb(s) = self {
            s.close();
        }
    }

    /// `"memory"`, `"indexeddb"` or `"adapter"`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            AnyKv::Memory(_) => "memory",
            #[cfg(feature = "indexeddb")]
            AnyKv::Idb(_) => "indexeddb",
            #[cfg(feature = "adapter")]
            AnyKv::Js(_) => "adapter",
        }
    }
}

impl KvBackend for AnyKv {
    fn limits(&self) -> KvLimits {
        match self {
            AnyKv::Memory(s) => s.limits(),
            #[cfg(feature = "indexeddb")]
            AnyKv::Idb(s) => s.limits(),
            #[cfg(feature = "adapter")]
            AnyKv::Js(s) => s.limits(),
        }
    }
    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<KvValue>>, StoreError> {
        delegate!(self, s => s.get_many(keys))
    }
    async fn list(&self, range: &KvRange) -> Result<Vec<KvEntry>, StoreError> {
        delegate!(self, s => s.list(range))
    }
    async fn commit(&self, commit: KvCommit) -> Result<KvCommitted, StoreError> {
        delegate!(self, s => s.commit(commit))
    }
    fn tell_next_commit(&self, progress: Progress, units: usize) {
        #[cfg(feature = "indexeddb")]
        if let AnyKv::Idb(s) = self {
            s.tell_next_commit(progress, units);
        }
        #[cfg(not(feature = "indexeddb"))]
        let _ = (progress, units);
    }
    async fn count(&self, start: &str, end: &str) -> Result<usize, StoreError> {
        delegate!(self, s => s.count(start, end))
    }
    fn checks_new_rows(&self, rows: usize) -> bool {
        #[cfg(feature = "indexeddb")]
        if let AnyKv::Idb(s) = self {
            return s.checks_new_rows(rows);
        }
        let _ = rows;
        true
    }
    fn one_run_at_a_time(&self) -> bool {
        #[cfg(feature = "adapter")]
        if let AnyKv::Js(s) = self {
            return s.one_run_at_a_time();
        }
        false
    }
    fn holds_index_keys(&self) -> bool {
        match self {
            AnyKv::Memory(s) => s.holds_index_keys(),
            #[cfg(feature = "indexeddb")]
            AnyKv::Idb(s) => s.holds_index_keys(),
            #[cfg(feature = "adapter")]
            AnyKv::Js(s) => s.holds_index_keys(),
        }
    }
}

/// A transport supplied by the application: `{ publish(relay, eventJson) }` resolving
/// to `{ ok, message }` (the relay's `OK`). A throw or rejection is `unreachable`.
#[derive(Debug, Clone)]
pub(crate) struct JsTransport {
    target: JsValue,
    publish: Function,
}

impl JsTransport {
    /// Wraps an object with a `publish` method; `None` when it has none.
    pub(crate) fn new(target: JsValue) -> Option<JsTransport> {
        let publish = Reflect::get(&target, &JsValue::from_str("publish")).ok()?;
        let publish: Function = publish.dyn_into().ok()?;
        Some(JsTransport { target, publish })
    }
}

/// A rejection's message (an `Error`'s message alone, as a relay's answer reads).
fn describe(e: &JsValue) -> String {
    let message = thrown(e).message;
    if message.is_empty() {
        "publish failed".into()
    } else {
        message
    }
}

impl Transport for JsTransport {
    async fn publish(&self, relay: &str, event: &EventEnvelope) -> PublishReport {
        let returned = match self.publish.call2(
            &self.target,
            &JsValue::from_str(relay),
            &JsValue::from_str(&event.raw),
        ) {
            Ok(v) => v,
            Err(e) => return PublishReport::new(Outcome::Unreachable, describe(&e)),
        };
        let answer = match JsFuture::from(Promise::resolve(&returned)).await {
            Ok(v) => v,
            Err(e) => return PublishReport::new(Outcome::Unreachable, describe(&e)),
        };
        let ok = Reflect::get(&answer, &JsValue::from_str("ok"))
            .ok()
            .and_then(|v| v.as_bool());
        let message = Reflect::get(&answer, &JsValue::from_str("message"))
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default();
        match ok {
            Some(ok) => PublishReport::new(crate::nostr::classify_ok(ok, &message), message),
            None => PublishReport::new(
                Outcome::Unreachable,
                "transport answer must be { ok: boolean, message?: string }",
            ),
        }
    }
}

/// The transport an `Outbox` publishes with.
pub(crate) enum AnyTransport {
    /// Browser WebSockets (the default).
    Ws(WsTransport),
    /// The application's transport.
    Js(JsTransport),
}

impl AnyTransport {
    /// Closes every connection (publishes in flight report `unreachable`).
    pub(crate) fn close(&self) {
        if let AnyTransport::Ws(t) = self {
            t.close_all();
        }
    }

    /// Closes every connection, keeping what the transport learnt about each relay.
    pub(crate) fn close_connections(&self) {
        if let AnyTransport::Ws(t) = self {
            t.close_connections_only();
        }
    }
}

impl Transport for AnyTransport {
    async fn publish(&self, relay: &str, event: &EventEnvelope) -> PublishReport {
        let future: LocalBoxFuture<'_, PublishReport> = match self {
            AnyTransport::Ws(t) => Box::pin(t.publish(relay, event)),
            AnyTransport::Js(t) => Box::pin(t.publish(relay, event)),
        };
        future.await
    }
    fn network_restored(&self) {
        if let AnyTransport::Ws(t) = self {
            t.network_restored();
        }
    }
    fn take_recovered(&self) -> Vec<String> {
        match self {
            AnyTransport::Ws(t) => t.take_recovered(),
            AnyTransport::Js(_) => Vec::new(),
        }
    }
    fn unreachable(&self) -> Vec<String> {
        match self {
            AnyTransport::Ws(t) => t.unreachable(),
            AnyTransport::Js(_) => Vec::new(),
        }
    }
    async fn probe(&self, relay: &str) -> bool {
        match self {
            AnyTransport::Ws(t) => t.probe(relay).await,
            AnyTransport::Js(_) => false,
        }
    }
    /// The check for a newer version on the relay transport; an application's transport
    /// cannot tell (the event is sent).
    async fn newer(&self, relay: &str, event: &EventEnvelope) -> Option<(String, u64)> {
        match self {
            AnyTransport::Ws(t) => t.newer(relay, event).await,
            AnyTransport::Js(_) => None,
        }
    }
    /// Read-back on the relay transport; an application's transport cannot tell.
    async fn holds(&self, relay: &str, event_id: &str) -> Option<bool> {
        match self {
            AnyTransport::Ws(t) => t.holds(relay, event_id).await,
            AnyTransport::Js(_) => None,
        }
    }
}
