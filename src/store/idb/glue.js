// IndexedDB glue for the nostr-outbox IndexedDB store. Small on purpose: it turns
// IDB requests and transactions into promises without any Rust closure (so nothing
// leaks when only one of success/error fires), opens a database with a synchronous
// upgrade callback, and closes a connection when another context asks for an upgrade.

export function requestPromise(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = (event) => {
      // Keep the transaction's own abort reporting in charge; the error surfaces here.
      if (event && event.preventDefault) event.preventDefault();
      reject(req.error);
    };
  });
}

// Reads many keys of one object store at once: every request is issued before the
// first answer is awaited (one IPC round trip for the lot instead of one per key).
// Resolves with the values in key order (undefined where absent); rejects with the
// first request's error, or with a synchronous throw (an inactive transaction).
export function getMany(store, keys) {
  try {
    return Promise.all(keys.map((key) => requestPromise(store.get(key))));
  } catch (err) {
    return Promise.reject(err);
  }
}

// Resolves when the transaction commits; rejects with the transaction's error (e.g.
// QuotaExceededError, which Chromium reports only as the abort) or an AbortError.
// It also rejects when any write request of the transaction failed unhandled, even if
// the browser then completed the transaction: Firefox refuses a write over quota at
// the request, and a transaction already committing (commit() called) completes
// without it; that must never look like success.
export function transactionDone(tx) {
  return new Promise((resolve, reject) => {
    let failed = null;
    tx.addEventListener("error", (event) => {
      // Errors a caller handled (preventDefault: reads, duplicate keys) are not ours.
      if (event.defaultPrevented || failed) return;
      failed = (event.target && event.target.error) || new DOMException("request failed", "UnknownError");
      try {
        tx.abort();
      } catch (_) {
        // Already committing or finished: `complete` below reports the failure.
      }
    });
    tx.oncomplete = () => (failed ? reject(failed) : resolve());
    tx.onabort = () => reject(tx.error || failed || new DOMException("transaction aborted", "AbortError"));
  });
}

// Adds every row. With `tolerateExisting`, a row whose key already exists does not
// abort the transaction: its index is reported so the caller can decide between replay
// and conflict. Without it, such a row's error is left to fail the transaction as any
// other would (the caller then writes the row again, tolerating it). Resolves with the
// indexes of the rows that already existed.
//
// Any other failure (QuotaExceededError at the request in Firefox) aborts the
// transaction at once, inside the error event, before the caller can commit it, and
// rejects with that error: an add that did not happen is never reported as done.
//
// A transaction's requests answer in the order they were made, so only the last one
// listens for success (one call back into JavaScript per batch, not per row), and the
// error handler is one function for all of them: it finds the failed request's index
// by walking forward from the previous failure's.
export function addRows(store, rows, tolerateExisting) {
  return new Promise((resolve, reject) => {
    const existing = [];
    let failed = null;
    const n = rows.length;
    if (n === 0) {
      resolve(existing);
      return;
    }
    const requests = new Array(n);
    let cursor = 0;
    const finish = () => (failed ? reject(failed) : resolve(existing));
    const onError = (event) => {
      const req = event.target;
      while (cursor < n && requests[cursor] !== req) cursor += 1;
      const name = req.error ? req.error.name : "";
      if (name === "ConstraintError") {
        if (tolerateExisting) {
          event.preventDefault();
          event.stopPropagation();
        }
        existing.push(cursor);
      } else if (!failed) {
        failed = req.error || new DOMException("add failed", "UnknownError");
        try {
          store.transaction.abort();
        } catch (_) {
          // Already aborting.
        }
      }
      if (req === requests[n - 1]) finish();
    };
    try {
      for (let i = 0; i < n; i += 1) {
        const req = store.add(rows[i]);
        req.onerror = onError;
        requests[i] = req;
      }
    } catch (e) {
      // An add that throws (the connection refuses writes, a value that cannot be
      // cloned) must not leave the rows before it to be committed.
      try {
        store.transaction.abort();
      } catch (_) {
        // Not active any more.
      }
      reject(e);
      return;
    }
    requests[n - 1].onsuccess = finish;
  });
}

export function openTransaction(db, stores, mode, durability) {
  return db.transaction(stores, mode, { durability });
}

// Commits now where the browser can; a transaction that already aborted (a failed
// request aborted it) cannot be committed and is left to report its abort.
export function commitTransaction(tx) {
  if (typeof tx.commit !== "function") return;
  try {
    tx.commit();
  } catch (_) {
    // InvalidStateError: not active any more (aborted or finishing); `done` tells.
  }
}

// Opens `name` at `version`. `upgrade(db, tx, oldVersion)` runs synchronously inside
// `upgradeneeded` and may throw to abort the upgrade. Resolves with a connection object
// `{ db, closed }`; `closed` turns true when another context asks for a version change
// (we close at once so its upgrade can proceed) or the browser drops the connection.
// Rejects with a DOMException named "VersionError" when the stored version is newer,
// and with an Error named "BlockedError" when our upgrade is blocked by another open
// connection; if such a blocked open later succeeds, the late connection is closed.
export function openDatabase(factory, name, version, upgrade) {
  return new Promise((resolve, reject) => {
    let settled = false;
    let req;
    try {
      req = factory.open(name, version);
    } catch (err) {
      reject(err);
      return;
    }
    req.onupgradeneeded = (event) => {
      try {
        upgrade(req.result, req.transaction, event.oldVersion);
      } catch (err) {
        try { req.transaction.abort(); } catch (_) { /* already aborted */ }
        settled = true;
        reject(err);
      }
    };
    req.onblocked = () => {
      if (settled) return;
      settled = true;
      const err = new Error(`opening IndexedDB "${name}" is blocked by another connection that does not close`);
      err.name = "BlockedError";
      reject(err);
    };
    req.onerror = (event) => {
      if (event && event.preventDefault) event.preventDefault();
      if (settled) return;
      settled = true;
      reject(req.error);
    };
    req.onsuccess = () => {
      const db = req.result;
      if (settled) {
        db.close();
        return;
      }
      settled = true;
      const conn = { db, closed: false };
      db.onversionchange = () => {
        conn.closed = true;
        db.close();
      };
      db.onclose = () => {
        conn.closed = true;
      };
      resolve(conn);
    };
  });
}

export function indexedDbFactory() {
  return globalThis.indexedDB;
}

// Settles with `promise`'s value, or with `undefined` after `ms` (Firefox shows a
// permission prompt for persist(), which a headless or unattended page never answers).
export function withTimeout(promise, ms) {
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve(undefined), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function storageManager() {
  const nav = globalThis.navigator;
  return nav && nav.storage ? nav.storage : null;
}

// A stored row (format 1, docs/STORE.md) as a plain object, fields in this order;
// `dueMs` is left out when undefined (a terminal record stays out of the due index).
export function newRow(id, v, stage, dueMs, createdMs, eventId, doc) {
  return dueMs === undefined
    ? { id, v, stage, createdMs, eventId, doc }
    : { id, v, stage, dueMs, createdMs, eventId, doc };
}
