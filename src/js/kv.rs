//! The storage adapter bridge: a JavaScript object implementing the adapter contract
//! (`getMany`, `list`, `commit`, optional `limits`; see [`crate::store::kv`] and the
//! `StorageAdapter` TypeScript type) as a [`KvBackend`], so the one [`KvStore`](crate::store::kv::KvStore) runs
//! over Durable Object storage, Deno KV, SQLite or a `Map`.
//!
//! Answers are checked, never trusted: a `getMany` answer of the wrong length, an
//! entry without string `value` and `version`, or a `commit` answer that is not a
//! boolean is a [`StoreError::Backend`] (the operation writes nothing more). A throw or
//! a rejection is a [`StoreError::Backend`] with the adapter's message, or
//! [`StoreError::QuotaExceeded`] when it is a `QuotaExceededError`.

use js_sys::{Array, Promise, Reflect};
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::error::ApiError;
use crate::platform::thrown;
use crate::store::kv::{
    KvBackend, KvCommit, KvCommitted, KvEntry, KvLimits, KvMutation, KvRange, KvValue,
};
use crate::store::StoreError;

#[wasm_bindgen]
extern "C" {
    /// The application's storage adapter object.
    #[derive(Debug, Clone)]
    pub type JsAdapter;
    #[wasm_bindgen(method, catch, js_name = getMany)]
    fn get_many(this: &JsAdapter, keys: Array) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn list(this: &JsAdapter, range: JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn commit(this: &JsAdapter, commit: JsValue) -> Result<JsValue, JsValue>;
}

/// A [`KvBackend`] over the application's storage adapter.
#[derive(Debug)]
pub struct JsKv {
    adapter: JsAdapter,
    limits: KvLimits,
    exclusive: bool,
}

/// The string property `key` of `v` (`None`: missing, not a string, or `v` not an
/// object). The adapter's answers are read property by property: with serde-wasm-bindgen's
/// deserializer (three derived readers) the edge `.wasm` was 5 449 B gzipped larger
/// (254 997 → 249 548 B, scripts/build.sh): it was the build's last use of it.
fn text(v: &JsValue, key: &str) -> Option<String> {
    Reflect::get(v, &JsValue::from_str(key)).ok()?.as_string()
}

/// The entries of an adapter's answer: an array, each item read by `read`.
fn items<T>(answer: &JsValue, read: impl Fn(&JsValue) -> Option<T>) -> Option<Vec<T>> {
    let array: &Array = answer.dyn_ref()?;
    array.iter().map(|v| read(&v)).collect()
}

#[derive(Serialize)]
struct RangeOutput<'a> {
    start: &'a str,
    end: &'a str,
    limit: u32,
    reverse: bool,
}

#[derive(Serialize)]
struct CheckOutput<'a> {
    key: &'a str,
    version: Option<&'a str>,
}

#[derive(Serialize)]
struct PutOutput<'a> {
    key: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
struct CommitOutput<'a> {
    checks: Vec<CheckOutput<'a>>,
    puts: Vec<PutOutput<'a>>,
    deletes: Vec<&'a str>,
}

fn is_function(target: &JsValue, name: &str) -> bool {
    Reflect::get(target, &JsValue::from_str(name)).is_ok_and(|f| f.is_function())
}

impl JsKv {
    /// True when the adapter says no other live context reaches its storage
    /// (`exclusive: true`): this outbox's flusher is then the only live one, as the Web
    /// Lock holder is in a browser, and takes other owners' leases over at once.
    pub fn exclusive(&self) -> bool {
        self.exclusive
    }

    /// Wraps `value` when it has the three methods; reads its `limits` (each a positive
    /// integer when given).
    pub fn new(value: JsValue) -> Result<JsKv, ApiError> {
        let missing: Vec<&str> = ["getMany", "list", "commit"]
            .into_iter()
            .filter(|m| !is_function(&value, m))
            .collect();
        if !missing.is_empty() {
            return Err(ApiError::options(
                "storage",
                format!(
                    "must be \"indexeddb\", \"memory\" or a storage adapter with the methods \
                     getMany, list and commit (missing: {})",
                    missing.join(", ")
                ),
            ));
        }
        // `exclusive: true`: no other live context reaches this storage (a Durable
        // Object's, by Cloudflare's single-instance guarantee).
        let exclusive = Reflect::get(&value, &JsValue::from_str("exclusive"))
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        let raw = Reflect::get(&value, &JsValue::from_str("limits")).unwrap_or_default();
        let limits = if raw.is_undefined() || raw.is_null() {
            KvLimits::UNLIMITED
        } else {
            let bad = || {
                ApiError::options(
                    "storage",
                    "limits must be { maxMutations?, maxChecks?, maxValueBytes?, \
                     maxCommitBytes?, maxKeyBytes? }, each a positive integer",
                )
            };
            if !raw.is_object() {
                return Err(bad());
            }
            let one = |key: &str| {
                let n = Reflect::get(&raw, &JsValue::from_str(key)).map_err(|_| bad())?;
                if n.is_undefined() || n.is_null() {
                    return Ok(usize::MAX);
                }
                match n.as_f64() {
                    Some(n) if n >= 1.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_991.0 => {
                        Ok(n as usize)
                    }
                    _ => Err(bad()),
                }
            };
            KvLimits {
                max_mutations: one("maxMutations")?,
                max_checks: one("maxChecks")?,
                max_value_bytes: one("maxValueBytes")?,
                max_commit_bytes: one("maxCommitBytes")?,
                max_key_bytes: one("maxKeyBytes")?,
                max_key_len: one("maxKeyLength")?,
            }
        };
        Ok(JsKv {
            adapter: value.unchecked_into(),
            limits,
            exclusive,
        })
    }
}

/// A failed adapter call as a store error.
fn failed(call: &str, e: &JsValue) -> StoreError {
    let t = thrown(e);
    let quota = t.name == "QuotaExceededError";
    let message = t.into_text();
    if quota {
        return StoreError::QuotaExceeded(format!("storage adapter {call}: {message}"));
    }
    StoreError::Backend(format!("storage adapter {call} failed: {message}"))
}

fn bad_answer(call: &str, expected: &str) -> StoreError {
    StoreError::Backend(format!("storage adapter {call} must resolve to {expected}"))
}

/// Calls one adapter method and awaits its answer (a promise or a plain value).
async fn call(name: &str, result: Result<JsValue, JsValue>) -> Result<JsValue, StoreError> {
    let returned = result.map_err(|e| failed(name, &e))?;
    JsFuture::from(Promise::resolve(&returned))
        .await
        .map_err(|e| failed(name, &e))
}

impl KvBackend for JsKv {
    fn limits(&self) -> KvLimits {
        self.limits
    }

    /// An adapter keeps every key as a key of its own.
    fn holds_index_keys(&self) -> bool {
        false
    }

    /// Each call of an adapter is its own transaction.
    fn one_run_at_a_time(&self) -> bool {
        true
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<KvValue>>, StoreError> {
        let array: Array = keys.iter().map(|k| JsValue::from_str(k)).collect();
        let answer = call("getMany", self.adapter.get_many(array)).await?;
        const EXPECTED: &str = "an array of { value: string, version: string } or null, \
                                one per key";
        let entries = items(&answer, |v| {
            if v.is_null() || v.is_undefined() {
                return Some(None);
            }
            Some(Some(KvValue {
                value: text(v, "value")?,
                version: text(v, "version")?,
            }))
        })
        .filter(|e| e.len() == keys.len());
        entries.ok_or_else(|| bad_answer("getMany", EXPECTED))
    }

    async fn list(&self, range: &KvRange) -> Result<Vec<KvEntry>, StoreError> {
        let out = RangeOutput {
            start: &range.start,
            end: &range.end,
            limit: range.limit,
            reverse: range.reverse,
        };
        let arg = super::view::to_js(&out);
        let answer = call("list", self.adapter.list(arg)).await?;
        const EXPECTED: &str = "an array of { key: string, value: string, version: string }";
        let listed = items(&answer, |v| {
            Some(KvEntry {
                key: text(v, "key")?,
                value: text(v, "value")?,
                version: text(v, "version")?,
            })
        })
        .ok_or_else(|| bad_answer("list", EXPECTED))?;
        // The store relies on the range and the order: an answer outside them is a
        // broken adapter, not data.
        let in_order = listed.windows(2).all(|w| {
            if range.reverse {
                w[0].key > w[1].key
            } else {
                w[0].key < w[1].key
            }
        });
        let in_range = listed
            .iter()
            .all(|e| e.key.as_str() >= range.start.as_str() && e.key.as_str() < range.end.as_str());
        if !in_order || !in_range || listed.len() > range.limit as usize {
            return Err(bad_answer(
                "list",
                "at most `limit` keys of [start, end), in key order",
            ));
        }
        Ok(listed)
    }

    async fn commit(&self, commit: KvCommit) -> Result<KvCommitted, StoreError> {
        let mut out = CommitOutput {
            checks: commit
                .checks
                .iter()
                .map(|c| CheckOutput {
                    key: &c.key,
                    version: c.version.as_deref(),
                })
                .collect(),
            puts: Vec::new(),
            deletes: Vec::new(),
        };
        for m in &commit.mutations {
            match m {
                KvMutation::Put { key, value } => out.puts.push(PutOutput { key, value }),
                KvMutation::Delete { key } => out.deletes.push(key),
            }
        }
        let arg = super::view::to_js(&out);
        let answer = call("commit", self.adapter.commit(arg)).await?;
        match answer.as_bool() {
            Some(true) => Ok(KvCommitted::Applied),
            Some(false) => Ok(KvCommitted::Conflict),
            None => Err(bad_answer(
                "commit",
                "true (applied) or false (a check failed)",
            )),
        }
    }
}
