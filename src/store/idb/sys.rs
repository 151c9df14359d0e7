//! The JavaScript side of the IndexedDB store: bindings to `glue.js`, promise-based
//! request helpers and the mapping of DOM exceptions to [`StoreError`]. Holds no
//! business rule.

use js_sys::{Array, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbDatabase, IdbFactory, IdbRequest, IdbTransaction};

use crate::store::StoreError;

#[wasm_bindgen(module = "/src/store/idb/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = requestPromise)]
    fn request_promise(req: &IdbRequest) -> Promise;
    #[wasm_bindgen(js_name = transactionDone)]
    fn transaction_done(tx: &IdbTransaction) -> Promise;
    #[wasm_bindgen(js_name = getMany)]
    fn get_many_js(store: &web_sys::IdbObjectStore, keys: &Array) -> Promise;
    #[wasm_bindgen(js_name = addRows)]
    pub(super) fn add_rows(
        store: &web_sys::IdbObjectStore,
        rows: &Array,
        tolerate_existing: bool,
    ) -> Promise;
    #[wasm_bindgen(js_name = openTransaction, catch)]
    fn open_transaction_js(
        db: &IdbDatabase,
        stores: &Array,
        mode: &str,
        durability: &str,
    ) -> Result<IdbTransaction, JsValue>;
    #[wasm_bindgen(js_name = commitTransaction)]
    fn commit_transaction(tx: &IdbTransaction);
    #[wasm_bindgen(js_name = openDatabase)]
    pub(super) fn open_database(
        factory: &IdbFactory,
        name: &str,
        version: u32,
        upgrade: &Closure<dyn FnMut(IdbDatabase, IdbTransaction, f64) -> Result<(), JsValue>>,
    ) -> Promise;
    #[wasm_bindgen(js_name = indexedDbFactory)]
    pub(super) fn indexed_db_factory() -> Option<IdbFactory>;
    #[wasm_bindgen(js_name = withTimeout)]
    pub(super) fn with_timeout(promise: &Promise, ms: u32) -> Promise;
    #[wasm_bindgen(js_name = storageManager)]
    pub(super) fn storage_manager() -> Option<web_sys::StorageManager>;
}

/// Why an IndexedDB call failed, before it becomes a [`StoreError`]: a lost
/// connection is worth one reopen and retry; anything else is final.
#[derive(Debug)]
pub(super) enum Failure {
    /// The connection is closed or closing (version change, browser dropped it).
    Lost(String),
    /// A final error.
    Store(StoreError),
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        Failure::Store(e)
    }
}

impl From<crate::core::CoreError> for Failure {
    fn from(e: crate::core::CoreError) -> Failure {
        Failure::Store(StoreError::Core(e))
    }
}

impl From<Failure> for StoreError {
    fn from(f: Failure) -> StoreError {
        match f {
            Failure::Lost(m) => StoreError::Backend(format!("IndexedDB connection lost: {m}")),
            Failure::Store(e) => e,
        }
    }
}

/// The `name` and `message` of a thrown JavaScript value.
pub(super) fn error_parts(err: &JsValue) -> (String, String) {
    let get = |key: &str| {
        Reflect::get(err, &JsValue::from_str(key))
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default()
    };
    if err.is_object() {
        (get("name"), get("message"))
    } else {
        (
            String::new(),
            err.as_string().unwrap_or_else(|| format!("{err:?}")),
        )
    }
}

/// Maps a DOM exception (or other thrown value) to a failure.
pub(super) fn failure(err: JsValue) -> Failure {
    let (name, message) = error_parts(&err);
    match name.as_str() {
        "QuotaExceededError" => Failure::Store(StoreError::QuotaExceeded(if message.is_empty() {
            "the browser refused to store more data for this origin (QuotaExceededError); \
             nothing of this operation was written"
                .into()
        } else {
            message
        })),
        "InvalidStateError" | "UnknownError" => Failure::Lost(format!("{name}: {message}")),
        "BlockedError" => Failure::Store(StoreError::Blocked(message)),
        "" => Failure::Store(StoreError::Backend(message)),
        _ => Failure::Store(StoreError::Backend(format!("{name}: {message}"))),
    }
}

/// Awaits one request: its `result`, or its error mapped to a failure.
pub(super) async fn request(req: Result<IdbRequest, JsValue>) -> Result<JsValue, Failure> {
    let req = req.map_err(failure)?;
    JsFuture::from(request_promise(&req)).await.map_err(failure)
}

/// Reads the rows stored under `keys`, all requests issued at once; in key order,
/// `undefined` where a key has no row.
pub(super) async fn get_many<'k>(
    store: &web_sys::IdbObjectStore,
    keys: impl Iterator<Item = &'k str>,
) -> Result<Array, Failure> {
    let keys: Array = keys.map(JsValue::from_str).collect();
    let rows = JsFuture::from(get_many_js(store, &keys))
        .await
        .map_err(failure)?;
    Ok(rows.unchecked_into())
}

/// Whether a transaction must survive power loss (`strict`) or may trade that for
/// throughput (`relaxed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Flushed to disk before the transaction completes (the default).
    #[default]
    Strict,
    /// May lose the last writes on power loss (not on a tab or browser crash).
    Relaxed,
}

impl Durability {
    fn as_str(self) -> &'static str {
        match self {
            Durability::Strict => "strict",
            Durability::Relaxed => "relaxed",
        }
    }
}

/// An open transaction plus the promise of its completion (subscribed at creation so
/// no event is missed).
pub(super) struct Tx {
    pub(super) tx: IdbTransaction,
    done: Promise,
}

impl Tx {
    /// Starts a transaction over `stores`.
    pub(super) fn open(
        db: &IdbDatabase,
        stores: &[&str],
        readwrite: bool,
        durability: Durability,
    ) -> Result<Tx, Failure> {
        let names: Array = stores.iter().map(|s| JsValue::from_str(s)).collect();
        let mode = if readwrite { "readwrite" } else { "readonly" };
        let tx = open_transaction_js(db, &names, mode, durability.as_str()).map_err(failure)?;
        let done = transaction_done(&tx);
        Ok(Tx { tx, done })
    }

    /// An object store of this transaction.
    pub(super) fn store(&self, name: &str) -> Result<web_sys::IdbObjectStore, Failure> {
        self.tx.object_store(name).map_err(failure)
    }

    /// Commits and waits until the data is written (or the abort's reason).
    pub(super) async fn commit(self) -> Result<(), Failure> {
        commit_transaction(&self.tx);
        JsFuture::from(self.done).await.map(|_| ()).map_err(failure)
    }

    /// Rolls back everything this transaction did.
    pub(super) async fn abort(self) {
        if self.tx.abort().is_ok() {
            // The completion promise rejects with AbortError: expected.
            let _ = JsFuture::from(self.done).await;
        }
    }
}

/// True when the connection object from `openDatabase` was closed under us.
pub(super) fn is_closed(conn: &JsValue) -> bool {
    Reflect::get(conn, &JsValue::from_str("closed"))
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(true)
}

/// The `IDBDatabase` of a connection object.
pub(super) fn database(conn: &JsValue) -> Result<IdbDatabase, Failure> {
    Reflect::get(conn, &JsValue::from_str("db"))
        .ok()
        .and_then(|v| v.dyn_into::<IdbDatabase>().ok())
        .ok_or_else(|| Failure::Lost("connection object without a database".into()))
}
