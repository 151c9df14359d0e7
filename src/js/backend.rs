//! The concrete store and transport behind an `Outbox`: enums that delegate to the
//! memory or IndexedDB [`Store`] and to the WebSocket ([`WsTransport`]) or an
//! application-supplied [`Transport`]. Pure delegation; the application transport's
//! answers are classified by [`crate::nostr::classify_ok`].

use futures_util::future::LocalBoxFuture;
use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[cfg(feature = "adapter")]
use super::kv::AdapterStore;
use crate::core::{
    ClaimRequest, Completion, Enqueued, EventEnvelope, ListQuery, Lookups, Outcome, Plan, Record,
    RetryConfig, StageCounts,
};
#[cfg(feature = "indexeddb")]
use crate::store::idb::IdbStore;
use crate::store::{CorruptRow, MemoryStore, Store, StoreError};
use crate::transport::websocket::WsTransport;
use crate::transport::{PublishReport, Transport};

/// The store an `Outbox` was opened with.
#[derive(Debug)]
pub(crate) enum AnyStore {
    Memory(MemoryStore),
    #[cfg(feature = "indexeddb")]
    Idb(IdbStore),
    /// The application's storage adapter.
    #[cfg(feature = "adapter")]
    Kv(AdapterStore),
}

// Each call awaits one boxed future: callers' state machines hold a pointer instead of
// every variant's future (a smaller .wasm).
macro_rules! delegate {
    ($self:ident, $s:ident => $call:expr) => {{
        let future: LocalBoxFuture<'_, _> = match $self {
            AnyStore::Memory($s) => Box::pin($call),
            #[cfg(feature = "indexeddb")]
            AnyStore::Idb($s) => Box::pin($call),
            #[cfg(feature = "adapter")]
            AnyStore::Kv($s) => Box::pin($call),
        };
        future.await
    }};
}

impl AnyStore {
    /// Closes the IndexedDB connection (no-op for memory).
    pub(crate) fn close(&self) {
        #[cfg(feature = "indexeddb")]
        if let AnyStore::Idb(s) = self {
            s.close();
        }
    }
}

impl Store for AnyStore {
    async fn enqueue(&self, plan: Plan, now_ms: u64) -> Result<Enqueued, StoreError> {
        delegate!(self, s => s.enqueue(plan, now_ms))
    }
    async fn enqueue_many(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
    ) -> Result<Vec<Enqueued>, StoreError> {
        delegate!(self, s => s.enqueue_many(plans, now_ms))
    }
    async fn enqueue_many_checked(
        &self,
        plans: Vec<Plan>,
        now_ms: u64,
        check: &mut dyn FnMut() -> bool,
    ) -> Result<Option<Vec<Enqueued>>, StoreError> {
        delegate!(self, s => s.enqueue_many_checked(plans, now_ms, check))
    }
    async fn get(&self, id: &str) -> Result<Option<Record>, StoreError> {
        delegate!(self, s => s.get(id))
    }
    async fn related(&self, lookups: &Lookups) -> Result<Vec<Record>, StoreError> {
        delegate!(self, s => s.related(lookups))
    }
    async fn claim(&self, request: &ClaimRequest, now_ms: u64) -> Result<Vec<Record>, StoreError> {
        delegate!(self, s => s.claim(request, now_ms))
    }
    async fn take_over(
        &self,
        request: &ClaimRequest,
        now_ms: u64,
    ) -> Result<Vec<Record>, StoreError> {
        delegate!(self, s => s.take_over(request, now_ms))
    }
    async fn complete_attempt(
        &self,
        completion: &Completion,
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        delegate!(self, s => s.complete_attempt(completion, retry, now_ms))
    }
    async fn complete_attempts(
        &self,
        completions: &[Completion],
        retry: &RetryConfig,
        now_ms: u64,
    ) -> Vec<Result<Record, StoreError>> {
        delegate!(self, s => s.complete_attempts(completions, retry, now_ms))
    }
    async fn release(
        &self,
        id: &str,
        lease_id: &str,
        revision: u64,
        now_ms: u64,
    ) -> Result<Record, StoreError> {
        delegate!(self, s => s.release(id, lease_id, revision, now_ms))
    }
    async fn retry(&self, id: &str, now_ms: u64) -> Result<Record, StoreError> {
        delegate!(self, s => s.retry(id, now_ms))
    }
    async fn cancel(&self, id: &str, now_ms: u64) -> Result<Record, StoreError> {
        delegate!(self, s => s.cancel(id, now_ms))
    }
    async fn relay_back(&self, relay: &str, now_ms: u64) -> Result<Vec<Record>, StoreError> {
        delegate!(self, s => s.relay_back(relay, now_ms))
    }
    async fn purge(&self, before_ms: u64) -> Result<u32, StoreError> {
        delegate!(self, s => s.purge(before_ms))
    }
    async fn list(&self, query: &ListQuery) -> Result<Vec<Record>, StoreError> {
        delegate!(self, s => s.list(query))
    }
    async fn status(&self) -> Result<StageCounts, StoreError> {
        delegate!(self, s => s.status())
    }
    async fn corrupt_rows(&self) -> Result<Vec<CorruptRow>, StoreError> {
        delegate!(self, s => s.corrupt_rows())
    }
    async fn next_due(&self) -> Result<Option<u64>, StoreError> {
        delegate!(self, s => s.next_due())
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

fn describe(e: &JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    e.as_string().unwrap_or_else(|| "publish failed".into())
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
}
