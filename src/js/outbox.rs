//! The `Outbox` class: opens a store, converts JavaScript arguments into plans and
//! queries, calls the store and the flusher runtime, and converts results and errors
//! back. Every method returns a promise and rejects with an `OutboxError`; nothing is
//! written before every argument has been read and checked.

use std::cell::Cell;
use std::rc::Rc;

use futures_util::future::LocalBoxFuture;
use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use super::backend::{AnyKv, AnyStore, AnyTransport, JsTransport};
use super::error::{ApiError, Details};
use super::events::Events;
use super::input::{self, shape, GroupOptions, ItemInput, PlanOptions, Raw, Reader, Uint};
#[cfg(feature = "adapter")]
use super::kv::JsKv;
use super::runtime::{Filter, Hold, RunError, Runtime, RuntimeConfig};
use super::{sys, transfer, view};
use crate::core::plan::MAX_ATTEMPTS_LIMIT;
use crate::core::semantics;
use crate::core::{
    group_plans, Change, Enqueued, ErrorCode, ListQuery, Plan, Policy, Priority, Record,
    RetryConfig, Stage,
};
use crate::flush::sign::SignConfig;
use crate::flush::{FlushConfig, FlushEvent};
use crate::nostr::template::MAX_POW;
use crate::nostr::SignatureCheck;
use crate::outbox as service;
use crate::platform::{self, storage as persistence};
#[cfg(feature = "indexeddb")]
use crate::store::idb::{IdbKv, IdbOptions};
use crate::store::kv::{KvStore, MemoryKv};
use crate::store::{Durability, Progress, Store};
use crate::transport::websocket::{JsSigner, WsTransport, WsTransportConfig};

/// The default database name.
pub const DEFAULT_NAME: &str = "nostr-outbox";
/// The default `list` page size.
const DEFAULT_LIST_LIMIT: u32 = 100;
/// Records per transaction of an import (each an `enqueueMany` of their plans; Deno
/// KV's limits admit about 74 new records per commit).
const IMPORT_BATCH: usize = 50;

/// The keys of `Outbox.open` options.
const OPEN_KEYS: [&str; 26] = [
    "name",
    "storage",
    "durability",
    "policy",
    "maxAttempts",
    "stopWhenSatisfied",
    "holdMs",
    "baseDelayMs",
    "maxDelayMs",
    "publishTimeoutMs",
    "connectTimeoutMs",
    "circuitFailures",
    "circuitOpenMs",
    "relayInfoTtlMs",
    "batchSize",
    "concurrency",
    "lowConcurrency",
    "leaseMs",
    "newerKinds",
    "signer",
    "signTimeoutMs",
    "resolver",
    "requestPersistence",
    "autoFlush",
    "broadcast",
    "transport",
];
/// The keys of `handleSync` options: those of `Outbox.open`, and `tag`.
const SYNC_KEYS: [&str; 27] = {
    let mut keys = [""; 27];
    let mut i = 0;
    while i < OPEN_KEYS.len() {
        keys[i] = OPEN_KEYS[i];
        i += 1;
    }
    keys[OPEN_KEYS.len()] = "tag";
    keys
};

shape! {
    /// `Outbox.open` options (and `handleSync` options, which add `tag`).
    OpenOptions {
        name: String = "name",
        storage: Raw = "storage",
        durability: String = "durability",
        policy: input::PolicyInput = "policy",
        max_attempts: Uint = "maxAttempts",
        stop_when_satisfied: bool = "stopWhenSatisfied",
        hold_ms: Uint = "holdMs",
        base_delay_ms: Uint = "baseDelayMs",
        max_delay_ms: Uint = "maxDelayMs",
        publish_timeout_ms: Uint = "publishTimeoutMs",
        connect_timeout_ms: Uint = "connectTimeoutMs",
        circuit_failures: Uint = "circuitFailures",
        circuit_open_ms: Uint = "circuitOpenMs",
        relay_info_ttl_ms: Uint = "relayInfoTtlMs",
        batch_size: Uint = "batchSize",
        concurrency: Uint = "concurrency",
        low_concurrency: Uint = "lowConcurrency",
        lease_ms: Uint = "leaseMs",
        newer_kinds: Raw = "newerKinds",
        signer: Raw = "signer",
        sign_timeout_ms: Uint = "signTimeoutMs",
        resolver: Raw = "resolver",
        request_persistence: bool = "requestPersistence",
        auto_flush: bool = "autoFlush",
        broadcast: bool = "broadcast",
        transport: Raw = "transport",
        tag: String = "tag",
    }
}

/// The longest undo window (`holdMs`): a day.
const MAX_HOLD_MS: u64 = 86_400_000;

/// Where an outbox keeps its records.
pub(crate) enum StorageChoice {
    /// IndexedDB (the default): shared by the origin's tabs and workers.
    IndexedDb,
    /// This context's memory: gone with it.
    Memory,
    /// The application's storage adapter (Durable Objects, Deno KV, SQLite, ...).
    Adapter(Adapter),
}

#[cfg(feature = "adapter")]
type Adapter = JsKv;
#[cfg(feature = "adapter")]
fn adapter(v: JsValue) -> Result<JsKv, ApiError> {
    JsKv::new(v)
}
/// Without adapters, any object is refused at open (`storage_unavailable`).
#[cfg(not(feature = "adapter"))]
type Adapter = ();
#[cfg(not(feature = "adapter"))]
fn adapter(_: JsValue) -> Result<(), ApiError> {
    Ok(())
}

/// What `Outbox.open` read from its options.
pub(crate) struct OpenConfig {
    name: String,
    storage: StorageChoice,
    durability: Durability,
    policy: Policy,
    max_attempts: Option<u32>,
    stop_when_satisfied: bool,
    hold_ms: Option<u64>,
    flush: FlushConfig,
    ws: WsTransportConfig,
    signer: Option<js_sys::Function>,
    /// The signer as given (its `getPublicKey()` is asked about protected events).
    signer_object: Option<JsValue>,
    /// The app's resolver of routing intents.
    resolver: Option<js_sys::Function>,
    sign: SignConfig,
    request_persistence: bool,
    auto_flush: bool,
    broadcast: bool,
    transport: Option<JsTransport>,
}

/// `words` random 32-bit words as hex, from `crypto.getRandomValues`.
fn random_hex(words: usize) -> Result<String, ApiError> {
    (0..words)
        .map(|_| {
            platform::random_u32()
                .map(|n| format!("{n:08x}"))
                .map_err(ApiError::no_random_source)
        })
        .collect()
}

impl OpenConfig {
    /// Reads `Outbox.open` options.
    pub(crate) fn parse(value: &JsValue) -> Result<OpenConfig, ApiError> {
        const WHAT: &str = "Outbox.open options";
        // `read` refuses `tag` (a key of the shape that open does not take).
        let (o, r) = input::read::<OpenOptions>(value, WHAT, &OPEN_KEYS)?;
        OpenConfig::read(o, &r)
    }

    /// Reads `handleSync` options: those of `Outbox.open`, and the sync `tag`.
    pub(crate) fn parse_sync(value: &JsValue) -> Result<(OpenConfig, Option<String>), ApiError> {
        let (mut o, r) = input::read::<OpenOptions>(value, "handleSync options", &SYNC_KEYS)?;
        let tag = std::mem::take(&mut o.tag);
        let config = OpenConfig::read(o, &r)?;
        Ok((config, r.string("tag", tag)?))
    }

    fn read(o: OpenOptions, r: &Reader) -> Result<OpenConfig, ApiError> {
        let name = r
            .string("name", o.name)?
            .unwrap_or_else(|| DEFAULT_NAME.to_string());
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(ApiError::options(
                "name",
                "must be a non-empty database name without control characters",
            ));
        }
        let storage = match r.value(o.storage) {
            None => StorageChoice::IndexedDb,
            Some(v) => match v.as_string().as_deref() {
                Some("indexeddb") => StorageChoice::IndexedDb,
                Some("memory") => StorageChoice::Memory,
                _ if v.is_object() => StorageChoice::Adapter(adapter(v)?),
                got => {
                    let got = match got {
                        Some(text) => format!("`{text}`"),
                        None => input::type_name(&v).to_string(),
                    };
                    return Err(ApiError::options(
                        "storage",
                        format!(
                            "in Outbox.open options must be one of indexeddb, memory or a \
                             storage adapter object, got {got}"
                        ),
                    ));
                }
            },
        };
        let durability = match r.choice("durability", o.durability, &["strict", "relaxed"])? {
            Some("relaxed") => Durability::Relaxed,
            _ => Durability::Strict,
        };
        let defaults = RetryConfig::default();
        let base = r
            .uint("baseDelayMs", o.base_delay_ms)?
            .unwrap_or(defaults.base_delay_ms);
        let retry = RetryConfig {
            base_delay_ms: base,
            max_delay_ms: r
                .uint("maxDelayMs", o.max_delay_ms)?
                .unwrap_or(defaults.max_delay_ms.max(base)),
            ..defaults
        };
        let ws_defaults = WsTransportConfig::default();
        let ws = WsTransportConfig {
            publish_timeout_ms: r
                .uint32("publishTimeoutMs", o.publish_timeout_ms)?
                .unwrap_or(ws_defaults.publish_timeout_ms),
            connect_timeout_ms: r
                .uint32("connectTimeoutMs", o.connect_timeout_ms)?
                .unwrap_or(ws_defaults.connect_timeout_ms),
            circuit_failures: r
                .uint32("circuitFailures", o.circuit_failures)?
                .unwrap_or(ws_defaults.circuit_failures),
            circuit_open_ms: r
                .uint32("circuitOpenMs", o.circuit_open_ms)?
                .unwrap_or(ws_defaults.circuit_open_ms),
            relay_info_ttl_ms: r
                .uint32("relayInfoTtlMs", o.relay_info_ttl_ms)?
                .unwrap_or(ws_defaults.relay_info_ttl_ms),
            ..ws_defaults
        };
        ws.validate()?;
        // The owner id is drawn at the end (below); validated with a stand-in of its form.
        let mut flush = FlushConfig::new("outbox-00000000000000000000000000000000");
        // 64: with each operation in one IndexedDB transaction (store/idb/ops.rs), 128
        // flushed 2 000 to one relay 1.08x as fast as 64 but an answer waited about twice
        // as long for its commit (median 289 against 159 ms, p99 469 against 269), and to
        // five relays 64 was as fast (1.04x) with half the wait (docs/BENCHMARKS.md,
        // "Claim and group size").
        flush.batch_size = r.uint32("batchSize", o.batch_size)?.unwrap_or(64);
        flush.concurrency = r.uint32("concurrency", o.concurrency)?.unwrap_or(256);
        flush.low_concurrency = r
            .uint32("lowConcurrency", o.low_concurrency)?
            .unwrap_or(crate::flush::LOW_WINDOW);
        // A lease must outlast a whole tick: a few rounds of connect, NIP-42 AUTH and
        // publish (twice when the relay asks for AUTH first).
        let round = u64::from(ws.connect_timeout_ms)
            + u64::from(ws.auth_timeout_ms)
            + 2 * u64::from(ws.publish_timeout_ms);
        flush.lease_ms = r
            .uint("leaseMs", o.lease_ms)?
            .unwrap_or((3 * round).max(120_000));
        flush.retry = retry;
        if let Some(v) = r.value(o.newer_kinds) {
            flush.newer_kinds = input::kinds(&v).ok_or_else(|| {
                ApiError::options(
                    "newerKinds",
                    "in Outbox.open options must be an array of at most 64 event kinds \
                     (integers 0..=65535)",
                )
            })?;
        }
        flush.validate()?;
        let signer_object = r.value(o.signer);
        let signer = match &signer_object {
            None => None,
            Some(s) => Some(sys::signer_function(s).ok_or_else(|| {
                ApiError::options(
                    "signer",
                    "must be an object with a signEvent(template) or sign(event) method, or a function",
                )
            })?),
        };
        let mut sign = SignConfig::default();
        if let Some(ms) = r.uint("signTimeoutMs", o.sign_timeout_ms)? {
            if ms == 0 || ms > 600_000 {
                return Err(ApiError::options("signTimeoutMs", "must be 1..=600000"));
            }
            sign.timeout_ms = ms;
        }
        let resolver = match r.value(o.resolver) {
            None => None,
            Some(f) => Some(f.dyn_into::<js_sys::Function>().map_err(|_| {
                ApiError::options(
                    "resolver",
                    "must be a function ({ intent, pubkeys, event }) => relays",
                )
            })?),
        };
        let transport = match r.value(o.transport) {
            None => None,
            Some(t) => Some(JsTransport::new(t).ok_or_else(|| {
                ApiError::options(
                    "transport",
                    "must be an object with a publish(relay, event) method",
                )
            })?),
        };
        let max_attempts = r.uint32("maxAttempts", o.max_attempts)?;
        if max_attempts.is_some_and(|n| n == 0 || n > MAX_ATTEMPTS_LIMIT) {
            return Err(ApiError::new(
                ErrorCode::InvalidConfig,
                format!("invalid configuration `maxAttempts`: must be 1..={MAX_ATTEMPTS_LIMIT}"),
            )
            .with_details(Details::field("maxAttempts")));
        }
        let policy = r.policy("policy", o.policy)?.unwrap_or(Policy::All);
        let stop_when_satisfied = r
            .boolean("stopWhenSatisfied", o.stop_when_satisfied)?
            .unwrap_or(false);
        let hold_ms = r.uint("holdMs", o.hold_ms)?.filter(|ms| *ms > 0);
        if hold_ms.is_some_and(|ms| ms > MAX_HOLD_MS) {
            return Err(ApiError::options("holdMs", "must be 0..=86400000 (a day)"));
        }
        let request_persistence = r
            .boolean("requestPersistence", o.request_persistence)?
            .unwrap_or(false);
        let auto_flush = r.boolean("autoFlush", o.auto_flush)?.unwrap_or(false);
        let broadcast = r.boolean("broadcast", o.broadcast)?.unwrap_or(true);
        // The flusher's owner id, drawn once every option is known good: a runtime
        // without `crypto.getRandomValues` cannot make lease ids, and says so here, as
        // one without a clock or a working `setTimeout` does (`unsupported`).
        sys::check_runtime()?;
        flush.owner = format!("outbox-{}", random_hex(4)?);
        Ok(OpenConfig {
            name,
            storage,
            durability,
            policy,
            max_attempts,
            stop_when_satisfied,
            hold_ms,
            flush,
            ws,
            signer,
            signer_object,
            resolver,
            sign,
            request_persistence,
            auto_flush,
            broadcast,
            transport,
        })
    }

    /// The database name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

struct Inner {
    name: String,
    store: Rc<AnyStore>,
    transport: Rc<AnyTransport>,
    runtime: Runtime<AnyStore, AnyTransport>,
    events: Rc<Events>,
    policy: Policy,
    max_attempts: Option<u32>,
    stop_when_satisfied: bool,
    /// The undo window every enqueue without a `notBefore` of its own gets (`holdMs`).
    hold_ms: Option<u64>,
    /// The app's signer as given, to refuse protected events of another author.
    signer: Option<JsValue>,
    persisted: Option<bool>,
    closed: Cell<bool>,
    /// While `flush()` runs: the attempts ended so far and the records due when it
    /// started (`progress` events).
    progress: Rc<Cell<Option<(usize, usize)>>>,
}

/// A durable outbox of signed Nostr events (see `docs/API.md`).
#[wasm_bindgen(skip_typescript)]
pub struct Outbox {
    inner: Rc<Inner>,
}

/// The group id of `enqueueGroup`'s `options`: its `group`, or a fresh `group-` and 32
/// random hex digits.
fn group_id(options: &JsValue) -> Result<String, ApiError> {
    let (o, r) = input::read::<GroupOptions>(options, "enqueueGroup options", &["group"])?;
    match r.string("group", o.group)? {
        Some(id) => Ok(id),
        None => Ok("group-".to_owned() + &random_hex(4)?),
    }
}

/// `e` with the index of the `enqueueMany` item it is about.
fn with_index(e: ApiError, index: usize) -> ApiError {
    e.add_details(Details::index(index))
}

/// The first of `enqueueMany`'s `signatures` read so far that does not verify, as the
/// error it rejects with, with its item's index.
fn bad_signature(signatures: &[Option<SignatureCheck>]) -> Option<ApiError> {
    let (index, e) = SignatureCheck::first_bad_of(signatures)?;
    Some(with_index(e.into(), index))
}

fn reject(e: ApiError) -> JsValue {
    e.into_js()
}

fn run_error(e: RunError) -> ApiError {
    match e {
        RunError::Closed => ApiError::closed(),
        RunError::Store(e) => e.into(),
        RunError::Clock => ApiError::no_clock(),
        RunError::Timer => ApiError::no_timer(),
        RunError::Random(e) => ApiError::no_random_source(e),
    }
}

/// Turns a future of `Result<JsValue, ApiError>` into a promise.
/// Every method goes through this one (boxed, so the promise glue is compiled once).
pub(crate) fn promise(
    f: impl std::future::Future<Output = Result<JsValue, ApiError>> + 'static,
) -> Promise {
    run_boxed(Box::pin(f))
}

fn run_boxed(f: LocalBoxFuture<'static, Result<JsValue, ApiError>>) -> Promise {
    future_to_promise(async move { f.await.map_err(reject) })
}

/// An `EnqueueResult`, and its record (the `enqueued` event's detail).
fn enqueue_result(e: &Enqueued) -> (JsValue, JsValue) {
    let record = view::record(&e.record);
    (
        view::enqueue_result(&e.record.id, e.outcome, &record),
        record,
    )
}

fn item_id(value: &JsValue) -> Result<String, ApiError> {
    value.as_string().ok_or_else(|| {
        ApiError::argument(
            "id",
            format!("must be a string, got {}", input::type_name(value)),
        )
    })
}

/// Opens the store `storage` names. A storage this build lacks (IndexedDB in the edge
/// build, adapters in the browser build) or this context lacks is `storage_unavailable`.
async fn open_store(
    storage: StorageChoice,
    name: &str,
    durability: Durability,
) -> Result<AnyStore, ApiError> {
    let unavailable = |message: &str| Err(ApiError::new(ErrorCode::StorageUnavailable, message));
    match storage {
        StorageChoice::Memory => Ok(KvStore::new(AnyKv::Memory(MemoryKv::new()))),
        #[cfg(feature = "adapter")]
        StorageChoice::Adapter(kv) => {
            // What an older build wrote (key layouts 1 and 2) moves to the current
            // layout before anything reads. (IndexedDB moves it when it opens:
            // `store::idb::legacy`.)
            let store = KvStore::new(AnyKv::Js(kv));
            store.migrate().await?;
            Ok(store)
        }
        #[cfg(not(feature = "adapter"))]
        StorageChoice::Adapter(_) => unavailable(
            "this is the browser build of nostr-outbox, without storage adapters; \
             import \"nostr-outbox/edge\" to open one",
        ),
        #[cfg(feature = "indexeddb")]
        StorageChoice::IndexedDb if sys::has_indexed_db() => Ok(KvStore::new(AnyKv::Idb(
            IdbKv::open(IdbOptions {
                name: name.to_string(),
                durability,
            })
            .await?,
        ))),
        StorageChoice::IndexedDb => {
            let _ = (name, durability);
            if cfg!(feature = "indexeddb") {
                unavailable(
                    "IndexedDB is not available in this context; open with a storage adapter \
                     or { storage: \"memory\" }",
                )
            } else {
                unavailable(
                    "this is the edge build of nostr-outbox, without IndexedDB; open with a \
                     storage adapter (nostr-outbox/durable-object, /deno-kv, /sqlite) or \
                     { storage: \"memory\" }, or import \"nostr-outbox/browser\"",
                )
            }
        }
    }
}

impl Outbox {
    /// Opens an outbox from parsed options.
    pub(crate) async fn open_with(config: OpenConfig) -> Result<Outbox, ApiError> {
        // Memory and adapters are not the origin's: no cross-tab election or broadcast.
        let local = !matches!(config.storage, StorageChoice::IndexedDb);
        #[cfg(feature = "adapter")]
        let shared = !matches!(config.storage, StorageChoice::Memory);
        #[cfg(feature = "adapter")]
        let exclusive = matches!(&config.storage, StorageChoice::Adapter(kv) if kv.exclusive());
        #[cfg(not(feature = "adapter"))]
        let exclusive = false;
        let store = open_store(config.storage, &config.name, config.durability).await?;
        if config.transport.is_none() && !sys::has_web_socket() {
            store.backend().close();
            return Err(ApiError::new(
                ErrorCode::Unsupported,
                "this runtime has no global WebSocket (Node before 22): open with a \
                 `transport` ({ publish(relay, eventJson) }, e.g. over the `ws` package)",
            ));
        }
        let persisted = if config.request_persistence {
            persistence::request_persistence().await
        } else {
            None
        };
        let store = Rc::new(store);
        let transport = Rc::new(match config.transport {
            Some(t) => AnyTransport::Js(t),
            None => {
                let ws = WsTransport::new(config.ws)?;
                ws.set_js_signer(config.signer.clone());
                AnyTransport::Ws(ws)
            }
        });
        let signer = JsSigner::helpers(config.signer, config.resolver);
        let channel = format!("nostr-outbox:{}", config.name);
        let events = Rc::new(
            Events::new(&channel, config.broadcast && !local).map_err(|e| {
                ApiError::new(ErrorCode::Unsupported, "this runtime has no EventTarget")
                    .with_cause(e)
            })?,
        );
        let sink = events.clone();
        let progress: Rc<Cell<Option<(usize, usize)>>> = Rc::default();
        let counter = progress.clone();
        let on_event = Box::new(move |ev: FlushEvent<'_>| match service::tell(&ev) {
            service::Tell::Record {
                name,
                record,
                ends_attempt,
            } => {
                // One more of a `flush()`'s records done.
                if let (true, Some((done, total))) = (ends_attempt, counter.get()) {
                    let (done, total) = (done + 1, total.max(done + 1));
                    counter.set(Some((done, total)));
                    sink.emit_local("progress", &view::progress("flush", done, total));
                }
                sink.emit_record(name, &view::record(record));
            }
            service::Tell::Change(record) => sink.emit("change", &view::record(record)),
            service::Tell::Nothing => {}
        });
        let sink = events.clone();
        let on_error = Box::new(move |e| sink.emit_local("error", &run_error(e).into_js()));
        let runtime = Runtime::new(
            store.clone(),
            transport.clone(),
            RuntimeConfig {
                lock_name: (!local).then(|| channel.clone()),
                flush: config.flush,
                max_ticks: crate::flush::MAX_TICKS,
                lock_retry_ms: 1_000,
                error_retry_ms: 10_000,
                exclusive,
                #[cfg(feature = "adapter")]
                shared,
                signer,
                sign: config.sign,
            },
            on_event,
            on_error,
        );
        let outbox = Outbox {
            inner: Rc::new(Inner {
                name: config.name,
                store,
                transport,
                runtime,
                events,
                policy: config.policy,
                max_attempts: config.max_attempts,
                stop_when_satisfied: config.stop_when_satisfied,
                hold_ms: config.hold_ms,
                signer: config.signer_object,
                persisted,
                closed: Cell::new(false),
                progress,
            }),
        };
        if config.auto_flush {
            outbox.inner.runtime.start_auto();
        }
        Ok(outbox)
    }

    /// `enqueueMany(items)`, or with `group` (its options) `enqueueGroup(items, group)`:
    /// one path, so the `.wasm` has one copy of it.
    fn enqueue_items(&self, items: JsValue, group: Option<JsValue>) -> Promise {
        let live = self.live_at();
        promise(async move {
            let (inner, now) = live?;
            let group = group.as_ref().map(group_id).transpose()?;
            let (mut plans, signatures) = inner.item_plans(now, &items, group.is_some())?;
            if let Some(id) = &group {
                plans = group_plans(id, plans)?;
            }
            // `progress` events while the storage takes the writes (IndexedDB tells),
            // then done of all once they are stored.
            let total = plans.len();
            let sink = inner.events.clone();
            let progress: Progress = Rc::new(move |done, of| {
                sink.emit_local("progress", &view::progress("enqueueMany", done, of))
            });
            let answers = inner
                .enqueue_verified(now, plans, &signatures, true, Some(progress))
                .await?;
            let out = Array::new();
            for answer in &answers {
                let (result, record) = enqueue_result(answer);
                inner.created(answer, &record);
                out.push(&result);
            }
            inner
                .events
                .emit_local("progress", &view::progress("enqueueMany", total, total));
            Ok(match group {
                None => out.into(),
                Some(id) => view::group_enqueued(&id, out),
            })
        })
    }

    /// `retry`, `cancel` and `reschedule`: one path (one copy in the `.wasm`). The record
    /// as changed (`change` fires); the flusher's timer follows the next due time.
    fn change(&self, id: JsValue, change: Result<Change, ApiError>) -> Promise {
        let live = self.live_at();
        promise(async move {
            let (inner, now) = live?;
            let id = item_id(&id)?;
            let record = inner.store.change(&id, change?, now).await?;
            let detail = inner.changed(&record);
            inner.runtime.kick();
            Ok(detail)
        })
    }

    fn live(&self) -> Result<Rc<Inner>, ApiError> {
        if self.inner.closed.get() {
            Err(ApiError::closed())
        } else {
            Ok(self.inner.clone())
        }
    }

    /// [`Outbox::live`] and the clock, for a call that writes: `unsupported` where the
    /// clock cannot be read (never a made-up time).
    fn live_at(&self) -> Result<(Rc<Inner>, u64), ApiError> {
        let inner = self.live()?;
        Ok((inner, sys::now_ms()?))
    }

    /// Runs the flusher once (used by `handleSync`). With `network_restored` (a
    /// Background Sync `sync` event: the browser saw connectivity come back) every
    /// open circuit is closed first, as the `online` event does under auto-flush.
    pub(crate) async fn flush_now(
        &self,
        network_restored: bool,
    ) -> Result<view::FlushView, ApiError> {
        let inner = self.live()?;
        if network_restored {
            crate::transport::Transport::network_restored(&*inner.transport);
        }
        inner.runtime.flush().await.map_err(run_error)
    }

    /// True once closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.closed.get()
    }

    /// A second handle on the same outbox.
    pub(crate) fn share(&self) -> Outbox {
        Outbox {
            inner: self.inner.clone(),
        }
    }
}

impl Inner {
    /// The plan of one item, and its event's signature, still to be checked
    /// ([`Inner::enqueue_verified`]); a draft (`sign: true`) has none, and an id of
    /// its own (`draft-` and 32 random hex digits) unless the app gives one.
    fn plan(
        &self,
        now_ms: u64,
        event: &JsValue,
        relays: &JsValue,
        o: PlanOptions,
        r: &Reader,
    ) -> Result<(Plan, Option<SignatureCheck>), ApiError> {
        let sign = r.boolean("sign", o.sign)?.unwrap_or(false);
        let pow = r.uint("pow", o.pow)?;
        if pow.is_some_and(|p| !sign || p > u64::from(MAX_POW)) {
            return Err(ApiError::argument(
                "pow",
                "must be 0..=32, on a draft (`sign: true`) only",
            ));
        }
        let (envelope, check) = if sign {
            let template = input::parse_template(event, pow.map(|p| p as u8))?;
            (template.to_envelope(now_ms / 1_000), None)
        } else {
            let event = input::parse_event(event)?;
            (event.to_envelope(), Some(event.signature()))
        };
        let targets = input::parse_relays(relays)?;
        let policy = r
            .policy("policy", o.policy)?
            .unwrap_or_else(|| self.policy.clone());
        let mut plan = Plan::new(envelope, targets, policy);
        if let Some(id) = r.string("id", o.id)? {
            plan = plan.with_id(id);
        } else if sign {
            plan = plan.with_id("draft-".to_owned() + &random_hex(4)?);
        }
        if let Some(n) = r
            .uint32("maxAttempts", o.max_attempts)?
            .or(self.max_attempts)
        {
            plan = plan.with_max_attempts(n);
        }
        if let Some(lane) = r.string("lane", o.lane)? {
            plan = plan.with_lane(lane);
        }
        plan = plan.with_stop_when_satisfied(
            r.boolean("stopWhenSatisfied", o.stop_when_satisfied)?
                .unwrap_or(self.stop_when_satisfied),
        );
        if let Some(p) = r.choice("priority", o.priority, &["high", "normal", "low"])? {
            plan = plan.with_priority(Priority::parse("priority", p)?);
        }
        if let Some(v) = r.value(o.route) {
            plan.route = input::string_array(&v).ok_or_else(|| {
                ApiError::argument("route", "must be an array of intents: outbox, inbox, dm")
            })?;
        }
        Ok((
            plan.with_deadline_ms(r.uint("deadline", o.deadline)?)
                .with_not_before_ms(r.uint("notBefore", o.not_before)?),
            check,
        ))
    }

    /// The plans of `enqueueMany`'s (or, `group`, `enqueueGroup`'s) `items`, and their
    /// events' signatures, still to be checked. A group's members take no `id` (theirs
    /// is `<group>:<index>`).
    fn item_plans(
        &self,
        now_ms: u64,
        items: &JsValue,
        group: bool,
    ) -> Result<(Vec<Plan>, Vec<Option<SignatureCheck>>), ApiError> {
        if !Array::is_array(items) {
            return Err(ApiError::argument(
                "items",
                format!("must be an array, got {}", input::type_name(items)),
            ));
        }
        let items = Array::from(items);
        let mut plans = Vec::with_capacity(items.length() as usize);
        let mut signatures = Vec::with_capacity(items.length() as usize);
        for (index, item) in items.iter().enumerate() {
            let read = || {
                let (o, r) =
                    input::read::<ItemInput>(&item, "enqueueMany item", &input::ITEM_KEYS)?;
                let (event, relays, o) = o.split();
                let (Some(event), Some(relays)) = (r.value(event), r.value(relays)) else {
                    return Err(ApiError::argument(
                        "items",
                        format!("item #{index} must be an object with `event` and `relays`"),
                    ));
                };
                if group && o.id.is_given() {
                    return Err(ApiError::argument(
                        "id",
                        "a group member's id is `<group>:<index>`: give none",
                    ));
                }
                self.plan(now_ms, &event, &relays, o, &r)
            };
            match read() {
                Ok((plan, signature)) => {
                    plans.push(plan);
                    signatures.push(signature);
                }
                // An earlier item's bad signature is the first error, as if each
                // item were checked whole in turn.
                Err(e) => {
                    return Err(bad_signature(&signatures).unwrap_or_else(|| with_index(e, index)))
                }
            }
        }
        Ok((plans, signatures))
    }

    /// The enqueue service's steps ([`crate::outbox::enqueue`]) over this outbox.
    fn enqueue_verified<'a>(
        &'a self,
        now_ms: u64,
        plans: Vec<Plan>,
        signatures: &'a [Option<SignatureCheck>],
        indexed: bool,
        progress: Option<Progress>,
    ) -> impl std::future::Future<Output = Result<Vec<Enqueued>, ApiError>> + 'a {
        let request = service::Enqueue {
            now_ms,
            hold_ms: self.hold_ms,
            plans,
            signatures,
            indexed,
            progress,
        };
        service::enqueue(&*self.store, self, request)
    }

    /// Dispatches the events of one enqueue answer ([`crate::outbox::told`]); `record`
    /// is its own record, already converted.
    fn created(&self, e: &Enqueued, record: &JsValue) {
        let (own, withdrawn) = service::told(e);
        if let Some(kind) = own {
            self.events.emit_record(kind, record);
        }
        for (kind, r) in withdrawn {
            self.events.emit_record(kind, &view::record(r));
        }
    }

    /// `change` for `record` (`cancel`, `retry`, `reschedule`).
    fn changed(&self, record: &Record) -> JsValue {
        let detail = view::record(record);
        self.events.emit("change", &detail);
        detail
    }
}

/// The runtime the enqueue service needs ([`crate::outbox::Host`]): this outbox's
/// signer, flusher and errors.
impl service::Host for Inner {
    type Error = ApiError;
    type Hold = Hold;

    /// Asks the signer (`glue.js`'s `foreignAuthor`: none, no `getPublicKey` or no
    /// answer within 2 s is `-1`, cannot tell).
    async fn foreign_author<'a>(&self, authors: impl Iterator<Item = &'a str>) -> Option<usize> {
        let signer = self.signer.as_ref()?;
        let authors: Array = authors.map(JsValue::from_str).collect();
        let found = JsFuture::from(sys::foreign_author(signer, &authors)).await;
        let i = found.ok()?.as_f64().filter(|i| *i >= 0.0)?;
        Some(i as usize)
    }

    fn protected_refused(&self) -> ApiError {
        ApiError::argument(
            "event",
            "is protected (NIP-70) and signed by another key than the signer's: \
             it is sent only where its author authenticates",
        )
    }

    fn at_item(e: ApiError, index: usize) -> ApiError {
        with_index(e, index)
    }

    fn hold_flush(&self) -> Hold {
        self.runtime.hold()
    }

    fn kick(&self, urgent: u32) {
        self.runtime.kick_after_enqueue(urgent);
    }
}

#[wasm_bindgen]
impl Outbox {
    /// Opens (creating if needed) the outbox database.
    #[wasm_bindgen(skip_typescript)]
    pub fn open(options: JsValue) -> Promise {
        promise(async move {
            let config = OpenConfig::parse(&options)?;
            Ok(Outbox::open_with(config).await?.into())
        })
    }

    /// Enqueues a signed event for `relays`.
    #[wasm_bindgen(skip_typescript)]
    pub fn enqueue(&self, event: JsValue, relays: JsValue, options: JsValue) -> Promise {
        let live = self.live_at();
        promise(async move {
            let (inner, now) = live?;
            let (o, r) =
                input::read::<PlanOptions>(&options, "enqueue options", &input::ENQUEUE_KEYS)?;
            let (plan, signature) = inner.plan(now, &event, &relays, o, &r)?;
            let answer = inner
                .enqueue_verified(
                    now,
                    vec![plan],
                    std::slice::from_ref(&signature),
                    false,
                    None,
                )
                .await?
                .pop()
                .ok_or_else(|| ApiError::new(ErrorCode::Storage, "enqueue produced no answer"))?;
            let (result, record) = enqueue_result(&answer);
            inner.created(&answer, &record);
            Ok(result)
        })
    }

    /// Enqueues many items in one transaction, all or nothing.
    #[wasm_bindgen(js_name = enqueueMany, skip_typescript)]
    pub fn enqueue_many(&self, items: JsValue) -> Promise {
        self.enqueue_items(items, None)
    }

    /// Enqueues several events as one group (`<group>:<index>` ids), all or nothing.
    #[wasm_bindgen(js_name = enqueueGroup, skip_typescript)]
    pub fn enqueue_group(&self, items: JsValue, options: JsValue) -> Promise {
        self.enqueue_items(items, Some(options))
    }

    /// A page of the export (`js/transfer.js` streams them): `{ lines, next }`, the
    /// header line first when `after` is `undefined`, then up to `limit` records in list
    /// order after the record `after`; `next` is the cursor of the following page, or
    /// `null` after the last.
    #[wasm_bindgen(js_name = exportPage, skip_typescript)]
    pub fn export_page(&self, after: Option<String>, limit: u32) -> Promise {
        let inner = self.live();
        promise(async move {
            let inner = inner?;
            let lines = Array::new();
            if after.is_none() {
                lines.push(&transfer::header().into());
            }
            let query = ListQuery {
                stage: None,
                limit: limit.clamp(1, crate::core::machine::MAX_LIST),
                after,
                lane: None,
            };
            let records = inner.store.list(&query).await?;
            for record in &records {
                lines.push(&transfer::line(record)?.into());
            }
            let next = match records.last() {
                Some(last) if records.len() == query.limit as usize => last.id.as_str().into(),
                _ => JsValue::NULL,
            };
            let page = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&page, &"lines".into(), &lines);
            let _ = js_sys::Reflect::set(&page, &"next".into(), &next);
            Ok(page.into())
        })
    }

    /// Imports the lines of an export (`js/transfer.js` reads the source into them; it
    /// passes a source it cannot read as it is, refused here as `invalid_argument`):
    /// every line is checked first (`invalid_import` with `details.line`, nothing
    /// written), then every record already stored under its id with another plan
    /// (`plan_conflict` with `details.line`, nothing written); then the records are
    /// enqueued in batches of `IMPORT_BATCH` (50) (fewer where a commit of the storage
    /// holds less), each one transaction, with a `progress`
    /// event (`{ operation: "import", done, total }`) after each. Answers
    /// `{ total, created, replayed, superseded }`.
    #[wasm_bindgen(js_name = importLines, skip_typescript)]
    pub fn import_lines(&self, lines: JsValue) -> Promise {
        let live = self.live_at();
        promise(async move {
            let (inner, now) = live?;
            if !Array::is_array(&lines) {
                return Err(ApiError::argument(
                    "source",
                    format!(
                        "must be a string, bytes, a Blob, a Response or a stream or iterable \
                         of strings or bytes, got {}",
                        input::type_name(&lines)
                    ),
                ));
            }
            let plans = transfer::plans(&lines.into(), now)?;
            for (line, plan) in &plans {
                if let Some(stored) = inner.store.get(&plan.id).await? {
                    let digest = plan.imported.as_ref().map(|r| r.plan_digest.as_str());
                    if Some(stored.plan_digest.as_str()) != digest {
                        return Err(transfer::conflict(&plan.id, *line));
                    }
                }
            }
            let total = plans.len();
            let plans: Vec<Plan> = plans.into_iter().map(|(_, plan)| plan).collect();
            let mut counts = [0u32; 3];
            let (mut done, mut size) = (0, IMPORT_BATCH);
            while done < total {
                let end = total.min(done + size);
                // As `enqueueMany` stores a batch (the signatures were checked when the
                // lines were read).
                let answers = match inner
                    .enqueue_verified(now, plans[done..end].to_vec(), &[], false, None)
                    .await
                {
                    // More than one commit of this storage holds (Deno KV: 64 KB):
                    // halve the batch.
                    Err(e) if end - done > 1 && e.is_invalid_argument("plans") => {
                        size = (end - done) / 2;
                        continue;
                    }
                    answers => answers?,
                };
                for answer in &answers {
                    inner.created(answer, &view::record(&answer.record));
                    counts[answer.outcome as usize] += 1;
                }
                done = end;
                inner
                    .events
                    .emit_local("progress", &view::progress("import", done, total));
            }
            Ok(view::import_result(total, counts))
        })
    }

    /// The record with this id, or `null`.
    #[wasm_bindgen(skip_typescript)]
    pub fn get(&self, id: JsValue) -> Promise {
        let inner = self.live();
        promise(async move {
            let inner = inner?;
            let id = item_id(&id)?;
            Ok(match inner.store.get(&id).await? {
                Some(r) => view::record(&r),
                None => JsValue::NULL,
            })
        })
    }

    /// A page of records in creation order.
    #[wasm_bindgen(skip_typescript)]
    pub fn list(&self, options: JsValue) -> Promise {
        let inner = self.live();
        promise(async move {
            let inner = inner?;
            let (o, r) =
                input::read::<input::ListOptions>(&options, "list options", &input::LIST_KEYS)?;
            let names: Vec<&str> = Stage::ALL.iter().map(|s| s.as_str()).collect();
            let stage = r
                .choice("stage", o.stage, &names)?
                .and_then(Stage::from_name);
            let query = ListQuery {
                stage,
                limit: r.uint32("limit", o.limit)?.unwrap_or(DEFAULT_LIST_LIMIT),
                after: r.string("after", o.after)?,
                lane: r.string("lane", o.lane)?,
            };
            Ok(view::records(&inner.store.list(&query).await?))
        })
    }

    /// How many records are in each stage (of one lane, with `{ lane }`).
    #[wasm_bindgen(skip_typescript)]
    pub fn status(&self, options: JsValue) -> Promise {
        let inner = self.live();
        promise(async move {
            let inner = inner?;
            let (o, r) = input::read::<input::FilterOptions>(
                &options,
                "status options",
                &input::STATUS_KEYS,
            )?;
            let counts = match r.string("lane", o.lane)? {
                Some(lane) => crate::store::lane_status(&*inner.store, &lane).await?,
                None => inner.store.status().await?,
            };
            Ok(view::status(&counts))
        })
    }

    /// Stored rows that cannot be decoded (reads every row): `[{ id, stage, reason }]`.
    #[wasm_bindgen(js_name = corruptRecords, skip_typescript)]
    pub fn corrupt_records(&self) -> Promise {
        let inner = self.live();
        promise(async move {
            let inner = inner?;
            Ok(view::corrupt_rows(&inner.store.corrupt_rows().await?))
        })
    }

    /// Re-arms an exhausted record.
    #[wasm_bindgen(skip_typescript)]
    pub fn retry(&self, id: JsValue) -> Promise {
        self.change(id, Ok(Change::Retry))
    }

    /// The relays that accepted any of the events named by `refs` (event ids, or
    /// `kind:pubkey:d` addresses for every stored version), from stored evidence:
    /// where a NIP-09 deletion of them should be sent.
    #[wasm_bindgen(js_name = acceptedRelays, skip_typescript)]
    pub fn accepted_relays(&self, refs: JsValue) -> Promise {
        let inner = self.live();
        promise(async move {
            let inner = inner?;
            let lookups = input::parse_event_refs(&refs)?;
            let records = inner.store.related(&lookups).await?;
            let relays = semantics::accepted_relays(records.iter().filter(|r| lookups.matches(r)));
            Ok(relays
                .iter()
                .map(|r| JsValue::from_str(r))
                .collect::<Array>()
                .into())
        })
    }

    /// Cancels a record that is not terminal yet.
    #[wasm_bindgen(skip_typescript)]
    pub fn cancel(&self, id: JsValue) -> Promise {
        self.change(id, Ok(Change::Cancel))
    }

    /// Moves a waiting record's next attempt to `at` (unix ms; now when earlier).
    #[wasm_bindgen(skip_typescript)]
    pub fn reschedule(&self, id: JsValue, at: JsValue) -> Promise {
        let at = match <Uint as input::FromJs>::from_js(at.clone()) {
            Some(Uint(at_ms)) => Ok(Change::Reschedule { at_ms }),
            None => Err(ApiError::argument(
                "at",
                format!(
                    "must be a time in unix milliseconds, got {}",
                    input::type_name(&at)
                ),
            )),
        };
        self.change(id, at)
    }

    /// Deletes terminal records last changed before `before` (default: now).
    #[wasm_bindgen(skip_typescript)]
    pub fn purge(&self, options: JsValue) -> Promise {
        let live = self.live_at();
        promise(async move {
            let (inner, now) = live?;
            let (o, r) =
                input::read::<input::PurgeOptions>(&options, "purge options", &input::PURGE_KEYS)?;
            let before = r.uint("before", o.before)?.unwrap_or(now);
            Ok(JsValue::from(inner.store.purge(before).await?))
        })
    }

    /// Runs the flusher until nothing is due (of `lanes`, waiting for `relays`).
    #[wasm_bindgen(skip_typescript)]
    pub fn flush(&self, options: JsValue) -> Promise {
        let inner = self.live();
        promise(async move {
            let inner = inner?;
            let (o, r) =
                input::read::<input::FilterOptions>(&options, "flush options", &input::FLUSH_KEYS)?;
            let filter = Filter {
                lanes: match r.value(o.lanes) {
                    Some(v) => input::parse_lanes(&v)?,
                    None => Vec::new(),
                },
                relays: match r.value(o.relays) {
                    Some(v) => input::parse_relays(&v)?,
                    None => Vec::new(),
                },
            };
            // `progress` events: attempts ended of the records due now; at the end, done
            // of done (a filtered flush leaves the others, records woken join).
            let due = inner.store.count_due(sys::now_ms()?).await?;
            inner.progress.set(Some((0, due as usize)));
            let result = inner.runtime.flush_filtered(filter).await;
            if let Some((done, _)) = inner.progress.take() {
                inner
                    .events
                    .emit_local("progress", &view::progress("flush", done, done));
            }
            // Where a socket belongs to the request that opened it (workerd), none
            // outlives the flush: the next request's flush opens its own.
            if sys::io_bound_to_request() {
                inner.transport.close_connections();
            }
            Ok(result.map_err(run_error)?.to_js())
        })
    }

    /// Starts flushing automatically.
    #[wasm_bindgen(js_name = startAutoFlush, skip_typescript)]
    pub fn start_auto_flush(&self) -> Result<(), JsValue> {
        let inner = self.live().map_err(reject)?;
        inner.runtime.start_auto();
        Ok(())
    }

    /// Stops flushing automatically.
    #[wasm_bindgen(js_name = stopAutoFlush, skip_typescript)]
    pub fn stop_auto_flush(&self) {
        self.inner.runtime.stop_auto();
    }

    /// True while auto-flush is on.
    #[wasm_bindgen(getter = autoFlush, skip_typescript)]
    pub fn auto_flush(&self) -> bool {
        self.inner.runtime.is_auto()
    }

    /// The database name.
    #[wasm_bindgen(getter, skip_typescript)]
    pub fn name(&self) -> String {
        self.inner.name.clone()
    }

    /// `"indexeddb"`, `"memory"` or `"adapter"`.
    #[wasm_bindgen(getter, skip_typescript)]
    pub fn storage(&self) -> String {
        self.inner.store.backend().kind().to_string()
    }

    /// True once `close()` was called.
    #[wasm_bindgen(getter, skip_typescript)]
    pub fn closed(&self) -> bool {
        self.inner.closed.get()
    }

    /// The answer of `navigator.storage.persist()` at open (`requestPersistence`), or
    /// `null` when not requested or unavailable.
    #[wasm_bindgen(getter, skip_typescript)]
    pub fn persisted(&self) -> Option<bool> {
        self.inner.persisted
    }

    /// Usage, quota and persistence of this origin's storage, or `null`.
    #[wasm_bindgen(js_name = storageEstimate, skip_typescript)]
    pub fn storage_estimate(&self) -> Promise {
        promise(async move {
            let Some(estimate) = persistence::estimate().await else {
                return Ok(JsValue::NULL);
            };
            let persisted = persistence::is_persisted().await;
            // Built as a JavaScript object: the numbers are JavaScript's, never
            // formatted as text here.
            let out = js_sys::Object::new();
            for (key, value) in [
                (
                    "usage",
                    estimate.usage.map_or(JsValue::NULL, JsValue::from_f64),
                ),
                (
                    "quota",
                    estimate.quota.map_or(JsValue::NULL, JsValue::from_f64),
                ),
                (
                    "persisted",
                    persisted.map_or(JsValue::NULL, JsValue::from_bool),
                ),
            ] {
                let _ = js_sys::Reflect::set(&out, &JsValue::from_str(key), &value);
            }
            Ok(out.into())
        })
    }

    /// Stops auto-flush, waits for a flush in progress, closes the database.
    #[wasm_bindgen(skip_typescript)]
    pub fn close(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            if !inner.closed.replace(true) {
                inner.runtime.close().await;
                inner.events.close();
                inner.transport.close();
                inner.store.backend().close();
            }
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `EventTarget.addEventListener`, on the outbox's events.
    #[wasm_bindgen(js_name = addEventListener, skip_typescript)]
    pub fn add_event_listener(
        &self,
        kind: JsValue,
        listener: JsValue,
        options: JsValue,
    ) -> Result<(), JsValue> {
        call_target(
            self.inner.events.target(),
            "addEventListener",
            &[kind, listener, options],
        )
        .map(|_| ())
    }

    /// `EventTarget.removeEventListener`, on the outbox's events.
    #[wasm_bindgen(js_name = removeEventListener, skip_typescript)]
    pub fn remove_event_listener(
        &self,
        kind: JsValue,
        listener: JsValue,
        options: JsValue,
    ) -> Result<(), JsValue> {
        call_target(
            self.inner.events.target(),
            "removeEventListener",
            &[kind, listener, options],
        )
        .map(|_| ())
    }

    /// `EventTarget.dispatchEvent`, on the outbox's events.
    #[wasm_bindgen(js_name = dispatchEvent, skip_typescript)]
    pub fn dispatch_event(&self, event: JsValue) -> Result<bool, JsValue> {
        Ok(
            call_target(self.inner.events.target(), "dispatchEvent", &[event])?
                .as_bool()
                .unwrap_or(false),
        )
    }
}

fn call_target(
    target: &web_sys::EventTarget,
    method: &str,
    args: &[JsValue],
) -> Result<JsValue, JsValue> {
    let f: js_sys::Function = js_sys::Reflect::get(target, &JsValue::from_str(method))?.into();
    let args: Array = args.iter().collect();
    f.apply(target, &args)
}
