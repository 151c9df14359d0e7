//! The backend's reads and commits as a few lines of JavaScript each, over a transaction
//! the caller opens: one call into JavaScript per `get_many`, `list` or commit (not one
//! per request), every request issued at once and answered through the last one.
//!
//! A transaction stays active while its requests' events and their microtasks run, so
//! an operation of the store (reads, decisions in wasm, then its commit) can run whole
//! in one read-write transaction, and so can several operations under way at once:
//! [`super::IdbKv`] issues every call on its current read-write transaction while it is
//! active. Each function throws at once when the transaction has finished (its first
//! request throws `TransactionInactiveError` or `InvalidStateError`); the caller then
//! opens a new one. Sharing is safe because a commit always checks the versions of what
//! its operation read, in the transaction it writes in, and a commit that finds one
//! changed writes nothing and answers a conflict without aborting the transaction (the
//! others' commits in it stand).
//!
//! A commit never calls `commit()`: the transaction commits by itself once its last
//! request has answered, and a write refused on its own (Firefox over quota) aborts it
//! whole, being unhandled; asked to commit with a write pending, Firefox completes the
//! transaction without the refused write.

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(inline_js = r#"
export function openTx(db, strict) {
  return db.transaction(["kv", "meta"], "readwrite", { durability: strict ? "strict" : "relaxed" });
}
// A request's error, or, when it failed because its transaction aborted, the error the
// transaction aborted with (QuotaExceededError, ...).
function failed(tx, reject) {
  return (event) => {
    const error = event.target.error;
    reject(error && error.name === "AbortError" && tx.error ? tx.error : error);
  };
}
export function getMany(tx, keys) {
  const kv = tx.objectStore("kv");
  const requests = keys.map((key) => kv.get(key));
  return new Promise((resolve, reject) => {
    if (requests.length === 0) return resolve([]);
    for (const r of requests) r.onerror = failed(tx, reject);
    requests[requests.length - 1].onsuccess = () => resolve(requests.map((r) => r.result));
  });
}
export function list(tx, start, end, limit) {
  const kv = tx.objectStore("kv");
  const range = IDBKeyRange.bound(start, end, false, true);
  const keys = kv.getAllKeys(range, limit);
  const values = kv.getAll(range, limit);
  return new Promise((resolve, reject) => {
    keys.onerror = values.onerror = failed(tx, reject);
    values.onsuccess = () => resolve([keys.result, values.result]);
  });
}
export function commit(tx, checks, versions, puts, deletes) {
  const kv = tx.objectStore("kv");
  const meta = tx.objectStore("meta");
  const read = checks.map((key) => kv.get(key));
  const last = meta.get("commit");
  return new Promise((resolve, reject) => {
    for (const r of read) r.onerror = failed(tx, reject);
    last.onerror = failed(tx, reject);
    last.onsuccess = () => {
      for (let i = 0; i < read.length; i++) {
        const row = read[i].result;
        const version = Array.isArray(row) && typeof row[1] === "number" ? String(row[1]) : row === undefined ? null : "";
        if (version !== versions[i]) return resolve(false);
      }
      tx.addEventListener("complete", () => resolve(true));
      tx.addEventListener("abort", () => reject(tx.error || new DOMException("the transaction was aborted", "AbortError")));
      const version = (typeof last.result === "number" ? last.result : 0) + 1;
      try {
        for (let i = 0; i < puts.length; i += 2) kv.put([puts[i + 1], version], puts[i]);
        for (const key of deletes) kv.delete(key);
        meta.put(version, "commit");
      } catch (error) {
        // A write that throws (Firefox's connection refuses writes after a full quota
        // with InvalidStateError) must not leave the writes before it to be committed.
        try { tx.abort(); } catch {}
        reject(error);
      }
    };
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = openTx, catch)]
    pub(super) fn open_tx(db: &JsValue, strict: bool) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = getMany, catch)]
    pub(super) fn get_many(tx: &JsValue, keys: Array) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    pub(super) fn list(
        tx: &JsValue,
        start: &str,
        end: &str,
        limit: JsValue,
    ) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    pub(super) fn commit(
        tx: &JsValue,
        checks: Array,
        versions: Array,
        puts: Array,
        deletes: Array,
    ) -> Result<Promise, JsValue>;
}
