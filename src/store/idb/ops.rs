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
//! others' commits in it stand). The versions of the keys read or written in a
//! transaction are kept with it (no other transaction writes while it is active), so a
//! commit reads again only the checked keys its transaction has not met. Requests run
//! in the order they are issued, and a commit issues its writes only once its checks
//! are answered, so a read (or a check) issued before another commit's writes in the
//! same transaction is answered from before them: the version noted for a key is the
//! last write's, and each commit's number is past every number written before it in
//! the transaction (`tests/store_idb.rs` holds both cases: before, two commits at once
//! both passed a check of one row and wrote one number).
//!
//! [`super::IdbKv`] keeps one current transaction, and an operation started from
//! another task (a claim, a relay's answer) while no transaction is active finds it
//! inactive and replaces it; an operation whose reads were still being answered in the
//! old one called into the new one and read its checked rows again there (a flush of
//! 2 000 to one relay in Chromium: 37 of 44 recording commits, 2 818 rows read again).
//! So every call goes first to the transaction whose answer was delivered last, active
//! exactly when the caller continues from that answer, and to the caller's otherwise:
//! an operation's reads and commit share one transaction. And a claim takes the rows
//! its range read over the claim order answered (an index's `getAll` answers whole
//! rows) instead of reading each again. Measured side by side (2 000 to one relay, 4
//! interleaved rounds, against the build before, both with `batchSize` 128): per 1 000
//! publishes 1 001 rows read one by one against 4 561 and 18 transactions against 120;
//! the flush 1.22× as fast (3 084 against 3 749 ms) with 15 % less CPU; an answer's
//! `OK` → commit took a median 254 ms against 159 (p99 404 against 296): one
//! transaction per operation, the recordings wait for the claims' (docs/BENCHMARKS.md,
//! "Claim and group size": why `batchSize` is 64).
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
// Schema v6: a record's index keys (keys.rs: `P/`, `L/`, `T/`, `E/`, `S/`, each ending in
// `/<item id>`) are not rows of `kv` but held in their record's row, `{v, n, k}` (value,
// version, the index keys), and found through the multiEntry index `k`: a record written
// is one put, whose index entries IndexedDB writes with it. Every other key is a row
// `[value, version]`.
// The index keys' prefixes, each `<letter>/` (keys.rs: EVENT, CREATED, DUE, SLOT, STAGE);
// every key of prefix `p` is in [p/, p0).
const HELD = [..."ELPST"];
function held(key) {
  return key[1] === "/" && HELD.includes(key[0]);
}
// Whether [start, end) holds only index keys (of one prefix).
function heldRange(start, end) {
  return held(start) && end <= start[0] + "0";
}
function rowOf(key) {
  return "R/" + key.slice(key.lastIndexOf("/") + 1);
}
// What an index key reads as: no value, and a version nothing checks.
const INDEX_ROW = ["", 0];
// A stored row as `[value, version]` (a row of v6 is `{v, n, k}`); anything else as it is.
function pair(row) {
  return row !== null && typeof row === "object" && !Array.isArray(row) && Array.isArray(row.k) ? [row.v, row.n] : row;
}
// The version of a stored row as the store compares it ("" for a row it cannot read).
function versionOf(row) {
  row = pair(row);
  return row === undefined ? null : Array.isArray(row) && typeof row[1] === "number" ? String(row[1]) : "";
}
// The upgrade to schema v6, in its versionchange transaction: `kv` with the index `k`;
// a v5 `kv` is copied into a new object store with the index, each index key into its
// row (an index key whose row is missing, or is not a row this store wrote, is dropped),
// 500 entries per request, then deleted, and the new store renamed `kv`. Why not an
// index added to the old store: in WebKit (2.50), once an upgrade that created an index
// on an existing object store was aborted, no index can be created in that database
// again (every later upgrade aborts); an aborted upgrade that created a store with its
// index leaves no such trace (schema.rs). The transaction is atomic: a
// crash leaves v5 as it was, and the next open runs the upgrade again.
export function toV6(tx) {
  const db = tx.db;
  const index = (store) => store.createIndex("k", "k", { multiEntry: true });
  if (!db.objectStoreNames.contains("kv")) return void index(db.createObjectStore("kv"));
  const old = tx.objectStore("kv");
  if (old.indexNames.contains("k")) return;
  const next = db.createObjectStore("kv-v6");
  index(next);
  const reads = HELD.map((p) => old.getAllKeys(IDBKeyRange.bound(p + "/", p + "0", false, true)));
  reads[reads.length - 1].onsuccess = () => {
    const keysOf = new Map();
    for (const read of reads) for (const key of read.result) {
      const row = rowOf(key);
      if (!keysOf.has(row)) keysOf.set(row, []);
      keysOf.get(row).push(key);
    }
    const page = (after) => {
      const range = after === undefined ? null : IDBKeyRange.lowerBound(after, true);
      const keys = old.getAllKeys(range, 500);
      const values = old.getAll(range, 500);
      values.onsuccess = () => {
        keys.result.forEach((key, i) => {
          if (held(key)) return;
          const row = values.result[i];
          const record = key.startsWith("R/") && Array.isArray(row) && typeof row[1] === "number";
          next.put(record ? { v: row[0], n: row[1], k: keysOf.get(key) ?? [] } : row, key);
        });
        if (keys.result.length === 500) return page(keys.result[499]);
        db.deleteObjectStore("kv");
        next.name = "kv";
      };
    };
    page(undefined);
  };
}
// Per read-write transaction, the version of every key read or written in it so far: no
// other transaction can write while it is active, so they are the keys' versions now,
// and a commit in it checks them without reading the rows again. Several operations
// share a transaction, so a read may be answered after a later commit's writes were
// issued: its answer is from before them, and the version noted for such a key stays
// the write's. `counter` is the last commit number written in the transaction (they
// grow), `wrote` the number of each key's last write in it. `rows` holds the records'
// rows a range read over index keys answered (`list`), each with the counter when its
// read was issued: a claim reads the rows it found there next (`getMany`), and takes them
// from there while no commit of the transaction wrote them since (one `get` fewer per
// record claimed, and its row not cloned again).
const known = new WeakMap();
function note(tx) {
  let state = known.get(tx);
  if (!state) known.set(tx, (state = { seen: new Map(), wrote: new Map(), rows: new Map(), counter: 0 }));
  return state;
}
// True when no commit of the transaction wrote `key` since its counter was `since`.
function unwritten(state, key, since) {
  return (state.wrote.get(key) ?? 0) <= since;
}
// Notes `version` for `key` as read by a request issued when the counter was `since`.
function noteRead(state, key, version, since) {
  if (unwritten(state, key, since)) state.seen.set(key, version);
}
// The transaction whose answer was delivered last. An operation that continues from an
// answer (its reads answered, now its commit) runs in that answer's event, where that
// transaction is active: its next call goes there, though another operation, started
// from another task while this one waited (when no transaction is active), made a new
// one the caller's current. So an operation's reads and its commit share a transaction
// and the commit reads nothing again. Elsewhere (another task) that transaction is not
// active, the call throws before it issues anything, and runs on the caller's.
let answered = null;
function answering(tx, value) {
  answered = tx;
  return value;
}
function onAnswered(op) {
  return (tx, ...args) => {
    const last = answered;
    if (last && last !== tx && last.db === tx.db) {
      try {
        return op(last, ...args);
      } catch {}
    }
    return op(tx, ...args);
  };
}
export const getMany = onAnswered((tx, keys) => {
  const kv = tx.objectStore("kv");
  const state = note(tx);
  const at = state.counter;
  const index = kv.index("k");
  const cached = keys.map((key) => {
    const hit = state.rows.get(key);
    return hit && unwritten(state, key, hit.at) ? hit : null;
  });
  const requests = keys.map((key, i) => (cached[i] ? null : held(key) ? index.getKey(key) : kv.get(key)));
  const issued = requests.filter((r) => r);
  const answer = () => requests.map((r, i) => {
    if (cached[i]) {
      noteRead(state, keys[i], versionOf(cached[i].row), cached[i].at);
      return pair(cached[i].row);
    }
    if (held(keys[i])) return r.result === undefined ? undefined : INDEX_ROW;
    noteRead(state, keys[i], versionOf(r.result), at);
    return pair(r.result);
  });
  return new Promise((resolve, reject) => {
    if (issued.length === 0) return resolve(answer());
    for (const r of issued) r.onerror = failed(tx, reject);
    issued[issued.length - 1].onsuccess = () => resolve(answering(tx, answer()));
  });
});
export const list = onAnswered((tx, start, end, limit) => {
  const kv = tx.objectStore("kv");
  const state = note(tx);
  const at = state.counter;
  const range = IDBKeyRange.bound(start, end, false, true);
  if (heldRange(start, end)) {
    // Index keys, in key order: the rows the index finds there, once per key in the
    // range (in key order, so a row's n-th time there is its n-th key in the range).
    const rows = kv.index("k").getAll(range, limit);
    return new Promise((resolve, reject) => {
      rows.onerror = failed(tx, reject);
      rows.onsuccess = () => {
        const keys = [];
        const met = new Map();
        for (const row of rows.result) {
          // `k` is an array in every row this store writes; a string (other software's
          // row) is indexed as one key.
          const mine = [].concat(row.k).filter((k) => k >= start && k < end).sort();
          const n = met.get(mine[0]) ?? 0;
          met.set(mine[0], n + 1);
          keys.push(mine[n]);
          if (Array.isArray(row.k)) state.rows.set(rowOf(mine[n]), { row, at });
        }
        resolve(answering(tx, [keys, keys.map(() => INDEX_ROW)]));
      };
    });
  }
  if (HELD.some((p) => start < p + "0" && end > p + "/")) return Promise.reject(new Error(`a range over index keys and rows: [${start}, ${end})`));
  const keys = kv.getAllKeys(range, limit);
  const values = kv.getAll(range, limit);
  return new Promise((resolve, reject) => {
    keys.onerror = values.onerror = failed(tx, reject);
    values.onsuccess = () => {
      keys.result.forEach((key, i) => noteRead(state, key, versionOf(values.result[i]), at));
      resolve(answering(tx, [keys.result, values.result.map(pair)]));
    };
  });
});
// How many keys are in [start, end) (no value is read).
export const count = onAnswered((tx, start, end) => {
  const kv = tx.objectStore("kv");
  const range = IDBKeyRange.bound(start, end, false, true);
  const request = heldRange(start, end) ? kv.index("k").count(range) : kv.count(range);
  return new Promise((resolve, reject) => {
    request.onerror = failed(tx, reject);
    request.onsuccess = () => resolve(answering(tx, request.result));
  });
});
// Commit numbers (a row's version) are unique in the database: each connection takes a
// block of BLOCK numbers at a time, reserved by moving `meta` "commit" past it in the
// transaction of the commit that needs it. A block is drawn from by that transaction,
// and by others once it has committed (a reservation rolled back is never drawn from:
// another connection may reserve those numbers). A commit whose checked keys its
// transaction has all met, drawing from a block it may use, issues its writes at once,
// without waiting for a read of `meta`: one round trip fewer. Numbers drawn by one
// connection increase, so a transaction's commits stay ordered (`unwritten`). Builds
// that take one number per commit (the same schema in another tab) read `meta` and write
// past every block reserved.
const BLOCK = 65536;
const blocks = new WeakMap(); // connection → { next, end, tx: the reserving one until it commits }
function usable(tx) {
  const block = blocks.get(tx.db);
  return block && (block.tx === null || block.tx === tx) && block.next <= block.end ? block : null;
}
// The next commit number for a commit in `tx`; `last`, the request that read `meta`
// "commit" in `tx`, is needed when no block may be drawn from.
function draw(tx, last) {
  const block = usable(tx);
  if (block) return block.next++;
  // `last` may have been read before a reservation of this connection: the block's end
  // is past it.
  const previous = blocks.get(tx.db);
  const base = Math.max(typeof last?.result === "number" ? last.result : 0, note(tx).counter, previous ? previous.end : 0);
  const mine = { next: base + 2, end: base + BLOCK, tx };
  blocks.set(tx.db, mine);
  tx.objectStore("meta").put(mine.end, "commit");
  tx.addEventListener("complete", () => (mine.tx = null));
  tx.addEventListener("abort", () => {
    if (blocks.get(tx.db) === mine) blocks.delete(tx.db);
  });
  return base + 1;
}
// `onWritten` (a function, or undefined) is told, about every hundredth write answered,
// the `units` done, spread evenly over the writes: increasing, and never all of them
// (the commit's end is its promise's answer).
function commitIn(tx, checks, versions, puts, deletes, onWritten, units) {
  const kv = tx.objectStore("kv");
  const state = note(tx);
  const { seen, wrote } = state;
  const at = state.counter;
  // Each record's index keys go into its row: the store puts all of them with the row
  // (`KvBackend::holds_index_keys`), and a deleted row takes its index entries along.
  const indexed = new Map();
  const rows = [];
  for (let i = 0; i < puts.length; i += 2) {
    if (!held(puts[i])) {
      rows.push(i);
      continue;
    }
    const row = rowOf(puts[i]);
    if (!indexed.has(row)) indexed.set(row, []);
    indexed.get(row).push(puts[i]);
  }
  // A commit that deletes an index key was made for keys of their own (the changed keys
  // only, the row's others left out): refused, as one that writes an index key alone.
  const dropped = deletes.filter((key) => !held(key));
  const written = new Set(rows.map((i) => puts[i]));
  const stray = deletes.find(held) ?? [...indexed.keys()].find((row) => !written.has(row));
  if (stray !== undefined) return Promise.reject(new Error(`index key ${stray}: written without its row, or deleted`));
  // A new row written alone, checked absent and not read in this transaction (an
  // enqueue of a new id: the store took it as new without reading it) is written with
  // `add`, which checks that absence itself: one round trip fewer than a read, then
  // the put. Refused (`ConstraintError`: the row is there), the commit has written
  // nothing and conflicts, and the transaction goes on (its other commits stand).
  const unseen = checks.findIndex((key) => !seen.has(key));
  const added = unseen >= 0 && versions[unseen] === null && checks.slice(unseen + 1).every((key) => seen.has(key))
    && rows.length === 1 && puts[rows[0]] === checks[unseen] && dropped.length === 0 && usable(tx) ? checks[unseen] : null;
  // Otherwise the checked keys not read or written in this transaction are read again;
  // `meta` too when the connection has no block left, or while reads are awaited anyway.
  const read = checks.map((key) => (seen.has(key) || key === added ? null : kv.get(key)));
  const waits = read.filter((r) => r);
  const last = waits.length || !usable(tx) ? tx.objectStore("meta").get("commit") : null;
  if (last) waits.push(last);
  // A commit with nothing to read writes at once, in this call: if its transaction is
  // not active in this task (a new row's `add` read nothing that would have thrown
  // first; called from another task while that transaction's requests are pending),
  // its first write throws and nothing is written; that is thrown from this call, as
  // every call here throws, so the caller runs it again in a new transaction.
  let early = null;
  const answer = new Promise((resolve, reject) => {
    const write = (now) => {
      for (let i = 0; i < checks.length; i++) {
        if (checks[i] === added) continue;
        // A commit in this transaction that wrote the key after the read was issued
        // left its version in `seen`.
        const fresh = read[i] && unwritten(state, checks[i], at);
        const version = fresh ? versionOf(read[i].result) : seen.get(checks[i]);
        if (version !== versions[i]) return resolve(false);
      }
      const writes = rows.length + dropped.length;
      const step = Math.ceil(writes / 100);
      let n = 0;
      let told = 0;
      const tell = (request) => {
        if (onWritten && ++n % step === 0 && n < writes) {
          const done = Math.min(units - 1, Math.floor((units * n) / writes));
          if (done > told) {
            told = done;
            request.onsuccess = () => onWritten(done);
          }
        }
      };
      let issued = false;
      try {
        const version = draw(tx, last);
        // After `draw`'s own listener: a block this transaction reserved is free to
        // draw from once it commits, before the caller goes on (a commit that follows
        // at once wrote without reading `meta` first). Once a write is issued: a call
        // whose first write throws (its transaction not active) leaves no listener on
        // that transaction to settle a promise nobody awaits.
        const listen = () => {
          if (issued) return;
          issued = true;
          state.counter = version;
          tx.addEventListener("complete", () => resolve(true));
          tx.addEventListener("abort", () => reject(tx.error || new DOMException("the transaction was aborted", "AbortError")));
        };
        for (const i of rows) {
          const key = puts[i];
          const row = key.startsWith("R/") ? { v: puts[i + 1], n: version, k: indexed.get(key) || [] } : [puts[i + 1], version];
          if (key === added) {
            const request = kv.add(row, key);
            request.onerror = (event) => {
              if (request.error?.name !== "ConstraintError") return;
              event.preventDefault();
              seen.delete(key);
              resolve(false);
            };
          } else tell(kv.put(row, key));
          listen();
          seen.set(key, String(version));
          wrote.set(key, version);
        }
        for (const key of dropped) {
          tell(kv.delete(key));
          listen();
          seen.set(key, null);
          wrote.set(key, version);
        }
        listen();
      } catch (error) {
        if (now && !issued) {
          early = error;
          return;
        }
        // A write that throws (Firefox's connection refuses writes after a full quota
        // with InvalidStateError) must not leave the writes before it to be committed.
        try { tx.abort(); } catch {}
        reject(error);
      }
    };
    if (waits.length === 0) return write(true);
    for (const r of waits) r.onerror = failed(tx, reject);
    waits[waits.length - 1].onsuccess = () => write(false);
  });
  if (early) throw early;
  return answer;
}
export const commit = onAnswered(commitIn);
// What older builds wrote (legacy.rs), read in a new read-write transaction over every
// store the move writes: up to `limit` rows of the old `records` store (schemas v1–v4),
// if there is one, and up to `limit` entries of each old key range of `kv` (key layouts 1
// and 2; `ranges` is [start, end, ...], keys.rs OLD_RANGES): `[tx, keys, kvKeys, rowKeys,
// texts]`, the keys to delete from `records` and from `kv`, and each row's key (its item
// id in `records`, `r/…` in `kv`) with its JSON text.
export function legacyBatch(db, limit, ranges) {
  const names = ["kv", "meta"];
  for (const name of ["records", "lookup"]) if (db.objectStoreNames.contains(name)) names.push(name);
  const tx = db.transaction(names, "readwrite", { durability: "strict" });
  const records = names.includes("records") ? tx.objectStore("records") : null;
  const reads = records ? [records.getAllKeys(null, limit), records.getAll(null, limit)] : [];
  for (let i = 0; i < ranges.length; i += 2) {
    const range = IDBKeyRange.bound(ranges[i], ranges[i + 1], false, true);
    reads.push(tx.objectStore("kv").getAllKeys(range, limit), tx.objectStore("kv").getAll(range, limit));
  }
  return new Promise((resolve, reject) => {
    for (const r of reads) r.onerror = failed(tx, reject);
    reads[reads.length - 1].onsuccess = () => {
      const out = [tx, [], [], [], []];
      for (let i = 0; i < reads.length; i += 2) {
        const fromKv = !records || i > 0;
        reads[i].result.forEach((key, j) => {
          const value = reads[i + 1].result[j];
          out[fromKv ? 2 : 1].push(key);
          if (!fromKv || key.startsWith("r/")) {
            out[3].push(key);
            out[4].push(fromKv ? (Array.isArray(value) ? String(value[0]) : "") : JSON.stringify(value));
          }
        });
      }
      resolve(out);
    };
  });
}
// The move of a `legacyBatch`, in its transaction: `keys` deleted from `records` (and
// `lookup`), `kvKeys` from `kv`, and `puts` ([key, value, ...]) written into `kv` by
// `commit` (one writer of the rows); answers once the transaction has committed.
export function legacyMove(tx, keys, kvKeys, puts) {
  const records = keys.length ? tx.objectStore("records") : null;
  const lookup = records && tx.objectStoreNames.contains("lookup") ? tx.objectStore("lookup") : null;
  try {
    for (const key of keys) {
      records.delete(key);
      if (lookup) lookup.delete(key);
    }
  } catch (error) {
    // Rows deleted and not written must never commit.
    try { tx.abort(); } catch {}
    return Promise.reject(error);
  }
  return commitIn(tx, [], [], puts, kvKeys);
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = openTx, catch)]
    pub(super) fn open_tx(db: &JsValue, strict: bool) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = legacyBatch, catch)]
    pub(super) fn legacy_batch(db: &JsValue, limit: u32, ranges: Array)
        -> Result<Promise, JsValue>;
    #[wasm_bindgen(js_name = legacyMove, catch)]
    pub(super) fn legacy_move(
        tx: &JsValue,
        keys: &JsValue,
        kv_keys: &JsValue,
        puts: Array,
    ) -> Result<Promise, JsValue>;
    #[wasm_bindgen(js_name = toV6, catch)]
    pub(super) fn to_v6(tx: &JsValue) -> Result<(), JsValue>;
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
    pub(super) fn count(tx: &JsValue, start: &str, end: &str) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    pub(super) fn commit(
        tx: &JsValue,
        checks: Array,
        versions: Array,
        puts: Array,
        deletes: Array,
        on_written: &JsValue,
        units: u32,
    ) -> Result<Promise, JsValue>;
}
