// Page side of tests/e2e/bench.mjs: everything that runs inside Chromium. The Node driver
// calls these through `window.bench` (page.evaluate) one measurement at a time, so it can
// interleave the outbox and its baseline round by round and start/stop relays between them.
// Nothing here asserts a time; every function returns raw milliseconds and counts.
import { verifyEvent } from "nostr-tools/pure";
import { Relay } from "nostr-tools/relay";
import { SimplePool } from "nostr-tools/pool";
import { openFloorDb, floorEnqueue, floorFlush, floorVerify, request, committed } from "./floor.mjs";

let pkg = null; // the nostr-outbox module, imported through its package.json entry
let wasm = null; // what init() resolved with: the wasm exports, including `memory`
let EVENTS = []; // signed events handed over by the driver
let ROWS = null; // the rows an outbox wrote, read back, for the raw IndexedDB baseline
const state = {}; // long-running measurements (recovery, memory)

const now = () => performance.now();
const rand = () => Math.random().toString(36).slice(2);

// ---------- IndexedDB work counters ----------

/**
 * What a side asks of IndexedDB, counted by wrapping the prototypes' methods once (the
 * wasm's web-sys calls go through them too): transactions, rows written and their bytes,
 * single-row reads, range reads and the rows and bytes they return, deletes. Bytes are
 * estimated: a string's length, 8 per number or boolean, the sum over an array's or
 * object's members. Unlike CPU times on this shared machine they do not drift between
 * rounds, so they show where two durable designs differ. Reset at the start of each timed
 * flush; the cost (a call and, per read, one more success listener) is paid by every side.
 */
const idb = {};
function idbReset() {
  for (const k of ["tx", "put", "putBytes", "get", "getBytes", "range", "rangeRows", "rangeBytes", "del"]) idb[k] = 0;
}
function bytes(v, depth = 0) {
  if (typeof v === "string") return v.length;
  if (typeof v === "number" || typeof v === "boolean") return 8;
  if (v === null || typeof v !== "object" || depth > 4) return 0;
  let sum = 0;
  for (const x of Array.isArray(v) ? v : Object.values(v)) sum += bytes(x, depth + 1);
  return sum;
}
function countIdb() {
  const wrap = (proto, name, after) => {
    const f = proto[name];
    proto[name] = function (...args) {
      const r = f.apply(this, args);
      after(r, args);
      return r;
    };
  };
  const onResult = (r, fn) => r.addEventListener("success", () => fn(r.result));
  wrap(IDBDatabase.prototype, "transaction", () => idb.tx++);
  for (const m of ["put", "add"]) {
    wrap(IDBObjectStore.prototype, m, (_, [v]) => {
      idb.put++;
      idb.putBytes += bytes(v);
    });
  }
  wrap(IDBObjectStore.prototype, "delete", () => idb.del++);
  for (const proto of [IDBObjectStore.prototype, IDBIndex.prototype]) {
    wrap(proto, "get", (r) => {
      idb.get++;
      onResult(r, (v) => (idb.getBytes += bytes(v)));
    });
    for (const m of ["getAll", "getAllKeys"]) {
      wrap(proto, m, (r) => {
        idb.range++;
        onResult(r, (rows) => {
          idb.rangeRows += rows.length;
          for (const x of rows) idb.rangeBytes += bytes(x);
        });
      });
    }
  }
}
idbReset();
countIdb();

// ---------- raw IndexedDB: the physical limit ----------

/**
 * A database with the outbox's object stores (schema 5's `kv`, and schema 4's
 * `records` and `lookup` with their indexes for an older build under --compare), so
 * that the raw side writes what the outbox under test writes.
 */
function openRawDb(name) {
  const r = indexedDB.open(name, 1);
  r.onupgradeneeded = () => {
    const db = r.result;
    const records = db.createObjectStore("records", { keyPath: "id" });
    records.createIndex("due", ["rank", "dueMs", "createdMs", "id"]);
    records.createIndex("laneDue", ["lane", "rank", "dueMs", "createdMs", "id"]);
    records.createIndex("stage", ["stage", "createdMs", "id"]);
    records.createIndex("slot", ["slot", "slotPart", "slotOrder", "eventId"]);
    const lookup = db.createObjectStore("lookup", { keyPath: "id" });
    lookup.createIndex("created", ["createdMs", "id"]);
    lookup.createIndex("event", "eventId");
    db.createObjectStore("meta");
    // schema 6: rows under ordered keys, a record's index keys in its row (index `k`)
    db.createObjectStore("kv").createIndex("k", "k", { multiEntry: true });
  };
  return request(r);
}

/**
 * A database of one object store, `events`, with out-of-line keys and no index: the
 * floor of storing a signed event (issue 24's enqueue baseline: its JSON alone).
 */
function openEventDb(name) {
  const r = indexedDB.open(name, 1);
  r.onupgradeneeded = () => r.result.createObjectStore("events");
  return request(r);
}

/** Puts each `[id, json]` pair into `events`, in one transaction. */
function putEvents(db, pairs, durability) {
  const tx = db.transaction("events", "readwrite", { durability });
  const store = tx.objectStore("events");
  for (const [id, json] of pairs) store.put(json, id);
  return committed(tx);
}

async function deleteDb(name) {
  await request(indexedDB.deleteDatabase(name));
}

/**
 * Every record's rows in an existing database (the outbox's own): in schema 6, one
 * `{ id, kv }` per record, `kv` the `[key, value]` entries of `kv` it wrote (its row,
 * which holds its index keys); before, the rows of `records`.
 */
async function readRows(name) {
  const db = await request(indexedDB.open(name));
  if (!db.objectStoreNames.contains("kv")) {
    const tx = db.transaction("records", "readonly");
    const rows = await request(tx.objectStore("records").getAll());
    db.close();
    return rows;
  }
  const tx = db.transaction("kv", "readonly");
  const [keys, values] = await Promise.all([request(tx.objectStore("kv").getAllKeys()), request(tx.objectStore("kv").getAll())]);
  db.close();
  const byId = new Map();
  keys.forEach((key, i) => {
    const id = key.slice(key.lastIndexOf("/") + 1);
    if (key.startsWith("K/")) return; // slot locks belong to no record
    if (!byId.has(id)) byId.set(id, { id, kv: [] });
    byId.get(id).kv.push([key, values[i]]);
  });
  return [...byId.values()];
}

/**
 * All rows, and their lookup rows (as the outbox writes them: `eventId` only when it is
 * not the item id), in one readwrite transaction: what a hand-written app does at best.
 */
function putAll(db, rows, durability) {
  if (rows[0]?.kv) {
    const tx = db.transaction("kv", "readwrite", { durability });
    const kv = tx.objectStore("kv");
    for (const row of rows) for (const [key, value] of row.kv) kv.put(value, key);
    return committed(tx);
  }
  const tx = db.transaction(["records", "lookup"], "readwrite", { durability });
  const store = tx.objectStore("records");
  const lookup = tx.objectStore("lookup");
  for (const row of rows) {
    store.put(row);
    const { id, eventId, createdMs } = row;
    lookup.put(eventId === id ? { id, createdMs } : { id, eventId, createdMs });
  }
  return committed(tx);
}

// ---------- helpers ----------

function items(events, relays, extra = {}) {
  return events.map((event) => ({ event, relays, ...extra }));
}

/** The same event with the last hex digit of `id` changed: refused by the id check. */
function badId(event) {
  const last = event.id.slice(-1);
  return { ...event, id: event.id.slice(0, -1) + (last === "0" ? "1" : "0") };
}

/** A fresh copy: nostr-tools' verifyEvent caches its verdict on the object. */
function fresh(event) {
  return { ...event, tags: event.tags.map((t) => t.slice()) };
}

/**
 * Diagnostic transports (public `transport` option) named by a string, since the driver
 * cannot pass functions: "instant" answers OK at once without any I/O (the outbox's own
 * cost), "nostr-tools" publishes through nostr-tools' Relay (our store and flusher with
 * their socket code).
 */
function withTransport(options) {
  if (options.transport === "instant") {
    return { ...options, transport: { publish: async () => ({ ok: true, message: "" }) } };
  }
  if (options.transport === "nostr-tools") {
    const conns = new Map();
    return {
      ...options,
      transport: {
        async publish(url, json) {
          if (!conns.has(url)) conns.set(url, Relay.connect(url));
          const relay = await conns.get(url);
          try {
            return { ok: true, message: await relay.publish(JSON.parse(json)) };
          } catch (e) {
            return { ok: false, message: `error: ${e?.message || e}` };
          }
        },
      },
    };
  }
  return options;
}

/**
 * Diagnosis of a flush that left records `retryable` (a relay did not answer in time) or
 * `pending` (never attempted, or every try reached no relay): their event ids, where they
 * were in claim order (position from 0 of `n`), their attempts, and the messages of their
 * unsettled relays, per relay, so the bench can ask each relay whether it stored them.
 */
async function lateAnswers(outbox, { n, offset }) {
  const records = [
    ...(await outbox.list({ stage: "retryable", limit: 1000 })),
    ...(await outbox.list({ stage: "pending", limit: 1000 })),
  ];
  // Claim order: one `enqueueMany` gives every record the same creation time, so a flush
  // claims them in the order of their ids.
  const position = new Map(EVENTS.slice(offset, offset + n).map((e) => e.id).sort().map((id, i) => [id, i]));
  const count = (o, k) => { o[k] = (o[k] || 0) + 1; };
  const byRelay = {};
  const messages = {};
  const attempts = {};
  for (const r of records) {
    count(attempts, `${r.stage} after ${r.attempts}`);
    for (const e of r.evidence) {
      if (e.outcome === "accepted" || e.outcome === "duplicate") continue;
      (byRelay[e.relay] ||= []).push(r.event.id);
      count(messages, e.message);
    }
  }
  const positions = records.map((r) => position.get(r.event.id) ?? -1).sort((a, b) => a - b);
  const untried = records.filter((r) => r.evidence.length === 0).length;
  return { n, byRelay, messages, positions, attempts, untried };
}

async function openOutbox(options) {
  const name = `bench-${rand()}`;
  const outbox = await pkg.Outbox.open({ name, ...options });
  return { name, outbox };
}

async function closeAndDelete({ name, outbox }) {
  await outbox.close();
  await deleteDb(name);
}

/** Runs `fn` over `list` with at most `width` calls in flight. */
async function windowed(list, width, fn) {
  if (!Number.isFinite(width) || width >= list.length) return Promise.all(list.map(fn));
  let next = 0;
  const worker = async () => {
    while (next < list.length) {
      const i = next++;
      await fn(list[i], i);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// ---------- the API the driver calls ----------

const bench = {
  /** Imports the package the way a user does: through the entry its package.json names. */
  async setup({ base = "/pkg" } = {}) {
    const meta = await (await fetch(`${base}/package.json`)).json();
    const e = meta.exports?.["."];
    const entry = (e && (e.browser || e.import || e.default)) || meta.module || meta.main;
    pkg = await import(`${base}/${String(entry).replace(/^\.\//, "")}`);
    wasm = await pkg.default();
    return { version: pkg.version(), userAgent: navigator.userAgent, isolated: globalThis.crossOriginIsolated === true, wasmBytes: wasm.memory.buffer.byteLength };
  },

  load(events) {
    EVENTS = events;
    return EVENTS.length;
  },

  forget() {
    EVENTS = [];
    ROWS = null;
  },

  wasmBytes() {
    return wasm.memory.buffer.byteLength;
  },

  // --- 1. enqueue ---

  /** `enqueueMany` of the first `n` events (public API: parse, verify, plan, one transaction). */
  async enqueueMany({ n, relays, durability, capture = false }) {
    const box = await openOutbox({ durability });
    const list = items(EVENTS.slice(0, n), relays);
    const t = now();
    const results = await box.outbox.enqueueMany(list);
    const ms = now() - t;
    const created = results.filter((r) => r.disposition === "created").length;
    if (created !== n) throw new Error(`enqueueMany created ${created} of ${n}`);
    if (capture) {
      await box.outbox.close();
      ROWS = await readRows(box.name);
      await deleteDb(box.name);
    } else {
      await closeAndDelete(box);
    }
    return { ms };
  },

  /** Diagnosis: `enqueueMany` under other public options, or in chunks of `chunk` items. */
  async enqueueManyVariant({ n, relays, options = {}, chunk = n }) {
    const box = await openOutbox(options);
    const list = items(EVENTS.slice(0, n), relays);
    const t = now();
    for (let i = 0; i < n; i += chunk) await box.outbox.enqueueMany(list.slice(i, i + chunk));
    const ms = now() - t;
    if (options.storage === "memory") await box.outbox.close();
    else await closeAndDelete(box);
    return { ms };
  },

  /**
   * The validation part of `enqueueMany` alone: the same items with the last id broken,
   * so every event is converted, parsed and id-checked, every other event's signature
   * is checked, then the batch is refused before anything is written. (A broken
   * signature would not do since the outbox checks signatures while IndexedDB writes the
   * rows, then aborts.)
   */
  async enqueueManyValidationOnly({ n, relays, durability }) {
    const box = await openOutbox({ durability });
    const list = items(EVENTS.slice(0, n), relays);
    list[n - 1] = { event: badId(list[n - 1].event), relays };
    let err = null;
    const t = now();
    try {
      await box.outbox.enqueueMany(list);
    } catch (e) {
      err = e;
    }
    const ms = now() - t;
    const status = await box.outbox.status();
    await closeAndDelete(box);
    if (err?.code !== "invalid_event" || err?.details?.index !== n - 1 || status.total !== 0) {
      throw new Error(`expected invalid_event at #${n - 1} and nothing written, got ${err?.code} ${JSON.stringify(err?.details)} total=${status.total}`);
    }
    return { ms };
  },

  /** The rows the outbox wrote, put again in one transaction into a database with the same schema. */
  async rawPutAll({ durability }) {
    const name = `bench-raw-${rand()}`;
    const db = await openRawDb(name);
    const t = now();
    await putAll(db, ROWS, durability);
    const ms = now() - t;
    db.close();
    await deleteDb(name);
    return { ms, rows: ROWS.length, rowBytes: JSON.stringify(ROWS[0]).length };
  },

  /**
   * The same signed events' JSON text alone (made before the timed window), put in one
   * transaction into a store with no index: issue 24's baseline for `enqueueMany`.
   */
  async rawEventPutAll({ n, durability }) {
    const name = `bench-rawe-${rand()}`;
    const db = await openEventDb(name);
    const pairs = EVENTS.slice(0, n).map((e) => [e.id, JSON.stringify(e)]);
    const t = now();
    await putEvents(db, pairs, durability);
    const ms = now() - t;
    db.close();
    await deleteDb(name);
    return { ms, bytes: pairs[0][1].length };
  },

  /**
   * Diagnosis of the store's share of `enqueueMany`, in raw calls on the same schema (the
   * `kv` store of schema 6, the keys and values the outbox wrote): "handlers": `add` with
   * a success and an error handler per request (what the store's glue does to tell
   * existing keys apart); "build": each record row's JSON text parsed and written again
   * inside the timed window (what encoding the record costs), then put.
   */
  async rawEnqueueVariant({ durability, kind }) {
    const name = `bench-rawv-${rand()}`;
    const db = await openRawDb(name);
    const entries = ROWS.flatMap((r) => r.kv);
    const docs = kind === "build" ? entries.map(([, value]) => (value?.v === undefined ? null : JSON.parse(value.v))) : null;
    const t = now();
    const tx = db.transaction("kv", "readwrite", { durability });
    const store = tx.objectStore("kv");
    if (kind === "handlers") {
      await new Promise((resolve) => {
        let pending = entries.length;
        const settle = () => {
          pending -= 1;
          if (pending === 0) resolve();
        };
        for (const [key, value] of entries) {
          const req = store.add(value, key);
          req.onsuccess = settle;
          req.onerror = (e) => {
            e.preventDefault();
            settle();
          };
        }
      });
    } else {
      entries.forEach(([key, value], i) => {
        store.put(docs[i] === null ? value : { ...value, v: JSON.stringify(docs[i]) }, key);
      });
    }
    await committed(tx);
    const ms = now() - t;
    db.close();
    await deleteDb(name);
    return { ms };
  },

  /** A hand-written verified outbox: nostr-tools verifyEvent on each event, then the raw puts. */
  async peerVerifyThenPut({ n, durability }) {
    const copies = EVENTS.slice(0, n).map(fresh);
    const name = `bench-peer-${rand()}`;
    const db = await openRawDb(name);
    const t = now();
    for (const e of copies) if (!verifyEvent(e)) throw new Error("nostr-tools rejected a valid event");
    const tv = now();
    await putAll(db, ROWS.slice(0, n), durability);
    const ms = now() - t;
    db.close();
    await deleteDb(name);
    return { ms, verifyMs: tv - t };
  },

  /**
   * Single operations, interleaved one by one: raw put of one row (own transaction, same
   * durability), `enqueue`, validation only (`enqueueMany` of the event and a broken-id
   * copy: both parsed and id-checked, the event's signature checked, nothing written), and
   * nostr-tools verifyEvent + raw put. `sides` picks some of them (default all). Returns
   * the median of each side measured.
   */
  async single({ n, offset, relays, durability, sides }) {
    const box = await openOutbox({ durability });
    const rawName = `bench-raw1-${rand()}`;
    const db = await openRawDb(rawName);
    const peerName = `bench-peer1-${rand()}`;
    const peerDb = await openRawDb(peerName);
    const eventName = `bench-rawe1-${rand()}`;
    const eventDb = await openEventDb(eventName);
    const events = EVENTS.slice(offset, offset + n);
    const bad = events.map((e) => [{ event: e, relays }, { event: badId(e), relays }]);
    const copies = events.map(fresh);
    const rows = ROWS.slice(offset, offset + n);
    const texts = events.map((e) => [e.id, JSON.stringify(e)]);
    const all = {
      raw: async (i) => putAll(db, [rows[i]], durability),
      // Issue 24's baseline: the event's JSON alone, no index, its own transaction.
      event: async (i) => putEvents(eventDb, [texts[i]], durability),
      api: async (i) => {
        const r = await box.outbox.enqueue(events[i], relays);
        if (r.disposition !== "created") throw new Error("not created");
      },
      validation: async (i) => {
        try {
          await box.outbox.enqueueMany(bad[i]);
        } catch (e) {
          if (e.code === "invalid_event" && e.details?.index === 1) return;
          throw e;
        }
        throw new Error("a bad id was accepted");
      },
      peer: async (i) => {
        if (!verifyEvent(copies[i])) throw new Error("nostr-tools rejected a valid event");
        await putAll(peerDb, [rows[i]], durability);
      },
    };
    const steps = Object.fromEntries((sides || Object.keys(all)).map((k) => [k, all[k]]));
    const times = Object.fromEntries(Object.keys(steps).map((k) => [k, []]));
    const order = Object.keys(steps);
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < order.length; k++) {
        const key = order[(i + k) % order.length];
        const t = now();
        await steps[key](i);
        times[key].push(now() - t);
      }
    }
    db.close();
    peerDb.close();
    eventDb.close();
    await closeAndDelete(box);
    await deleteDb(rawName);
    await deleteDb(peerName);
    await deleteDb(eventName);
    return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  },

  /** Diagnosis of single enqueue: the same op under other public options, interleaved. */
  async singleVariants({ n, offset, relays }) {
    const variants = {
      default: { durability: "strict" },
      noBroadcast: { durability: "strict", broadcast: false },
      // No flusher woken by each enqueue (it tries the bench's unreachable relays and
      // records the failures, in transactions beside the enqueues').
      noAutoFlush: { durability: "strict", autoFlush: false },
      relaxed: { durability: "relaxed" },
      memory: { storage: "memory" },
    };
    const boxes = {};
    for (const [k, o] of Object.entries(variants)) boxes[k] = await openOutbox(o);
    const rawName = `bench-raw1-${rand()}`;
    const db = await openRawDb(rawName);
    const events = EVENTS.slice(offset, offset + n);
    const rows = ROWS.slice(offset, offset + n);
    const times = { rawStrict: [], rawRelaxed: [], ...Object.fromEntries(Object.keys(variants).map((k) => [k, []])) };
    for (let i = 0; i < n; i++) {
      let t = now();
      await putAll(db, [rows[i]], "strict");
      times.rawStrict.push(now() - t);
      t = now();
      await putAll(db, [{ ...rows[i], id: rows[i].id + "r" }], "relaxed");
      times.rawRelaxed.push(now() - t);
      for (const k of Object.keys(variants)) {
        t = now();
        await boxes[k].outbox.enqueue(events[i], relays);
        times[k].push(now() - t);
      }
    }
    db.close();
    await deleteDb(rawName);
    for (const b of Object.values(boxes)) await (b.outbox.storage === "memory" ? b.outbox.close() : closeAndDelete(b));
    return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  },

  // --- 3/4. flush ---

  /** Enqueues `n` events for `relays` (not timed), then times one `flush()` of them. */
  async outboxFlush(args) {
    await bench.flushPrepare(args);
    return bench.flushRun();
  },

  async flushPrepare({ n, offset = 0, relays, policy, options = {} }) {
    const box = await openOutbox({ policy, ...withTransport(options) });
    await box.outbox.enqueueMany(items(EVENTS.slice(offset, offset + n), relays));
    state.flush = box;
    state.flushArgs = { n, offset };
    return true;
  },

  async flushRun() {
    const args = state.flushArgs;
    const box = state.flush;
    state.flush = null;
    idbReset();
    const t = now();
    const result = await box.outbox.flush();
    const ms = now() - t;
    const work = { ...idb };
    const status = await box.outbox.status();
    const late = status.retryable || status.pending ? await lateAnswers(box.outbox, args) : undefined;
    await closeAndDelete(box);
    return { ms, result, status, late, idb: work };
  },

  /**
   * The floor (floor.mjs): the same events queued (not timed) in the durable design written
   * directly on IndexedDB and raw WebSockets, for `relays` (every relay must accept: policy
   * "all").
   */
  async floorPrepare({ n, offset = 0, relays }) {
    const name = `bench-floor-${rand()}`;
    const db = await openFloorDb(name);
    await floorEnqueue(db, EVENTS.slice(offset, offset + n), relays);
    state.floor = { name, db };
    return true;
  },

  /**
   * Times the floor's flush, then (not timed) reads every state row back. `write`: "record"
   * (a state-row write per record, at its last answer) or "answer" (one per answer).
   */
  async floorRun({ write = "record" } = {}) {
    const { name, db } = state.floor;
    state.floor = null;
    idbReset();
    const t = now();
    const result = await floorFlush(db, { write });
    const ms = now() - t;
    const work = { ...idb };
    const verify = await floorVerify(db);
    db.close();
    await deleteDb(name);
    return { ms, result, verify, idb: work };
  },

  /**
   * nostr-tools publishing the same events, awaiting every OK: `Relay.publish` for one
   * relay, `SimplePool.publish` for several. `width` = publishes (events) in flight.
   */
  async peerPublish({ n, offset = 0, relays, width }) {
    const events = EVENTS.slice(offset, offset + n);
    const errors = {};
    let ok = 0;
    const fail = (e) => {
      const k = String(e?.message || e).slice(0, 80);
      errors[k] = (errors[k] || 0) + 1;
    };
    const t = now();
    if (relays.length === 1) {
      const relay = await Relay.connect(relays[0]);
      await windowed(events, width, async (e) => {
        try {
          await relay.publish(e);
          ok += 1;
        } catch (err) {
          fail(err);
        }
      });
      const ms = now() - t;
      relay.close();
      return { ms, ok, errors };
    }
    const pool = new SimplePool();
    await windowed(events, width, async (e) => {
      const answers = await Promise.allSettled(pool.publish(relays, e));
      for (const a of answers) (a.status === "fulfilled" ? (ok += 1) : fail(a.reason));
    });
    const ms = now() - t;
    pool.close(relays);
    return { ms, ok, errors };
  },

  /**
   * The least IndexedDB work a lease-based flush of `n` records can do, in raw calls on a
   * database with the same schema and rows: per batch of `batch`, one relaxed readwrite
   * transaction that reads the due index and rewrites each row (the lease), then one
   * strict readwrite transaction that reads and rewrites each row again (the evidence).
   * No network, no wasm: the store's physical limit for one flush.
   */
  async rawFlushEquivalent({ n, relays, batch }) {
    const box = await openOutbox({});
    await box.outbox.enqueueMany(items(EVENTS.slice(0, n), relays));
    await box.outbox.close();
    const rows = await readRows(box.name);
    await deleteDb(box.name);
    const name = `bench-rawflush-${rand()}`;
    const db = await openRawDb(name);
    await putAll(db, rows, "relaxed");
    // Schema 6 (the rows the outbox wrote): a claim reads `batch` rows in claim order
    // (`P/` keys of the multiEntry index `k`) and takes them out of it (relaxed, as a
    // lease); a completion reads each row again and rewrites it (strict).
    const claimOrder = IDBKeyRange.bound("P/", "P0", false, true);
    const t = now();
    let done = 0;
    while (done < n) {
      const tx1 = db.transaction("kv", "readwrite", { durability: "relaxed" });
      const s1 = tx1.objectStore("kv");
      const [keys, page] = await Promise.all([
        request(s1.index("k").getAllKeys(claimOrder, batch)),
        request(s1.index("k").getAll(claimOrder, batch)),
      ]);
      page.forEach((row, i) => s1.put({ ...row, k: row.k.filter((k) => !k.startsWith("P/")) }, keys[i]));
      await committed(tx1);
      const tx2 = db.transaction("kv", "readwrite", { durability: "strict" });
      const s2 = tx2.objectStore("kv");
      for (const key of keys) {
        const cur = await request(s2.get(key));
        s2.put({ ...cur, v: cur.v.replace('"stage":"pending"', '"stage":"satisfied"'), n: cur.n + 1 }, key);
      }
      await committed(tx2);
      done += page.length;
      if (page.length === 0) break;
    }
    const ms = now() - t;
    db.close();
    await deleteDb(name);
    if (done < n) throw new Error(`rawFlushEquivalent: ${done} of ${n} rows claimed (the rows' layout changed?)`);
    return { ms, done };
  },

  // --- 5. recovery ---

  /** Opens an auto-flushing outbox, enqueues `n` events for `relays` (which are down). */
  async recoveryStart({ n, offset = 0, relays, options = {} }) {
    const box = await openOutbox(options);
    const rec = { box, n, delivered: 0, first: null, last: null, attempts: 0 };
    box.outbox.addEventListener("attempt", () => {
      rec.attempts += 1;
    });
    box.outbox.addEventListener("delivered", () => {
      const t = Date.now();
      rec.delivered += 1;
      if (rec.first === null) rec.first = t;
      rec.last = t;
    });
    await box.outbox.enqueueMany(items(EVENTS.slice(offset, offset + n), relays));
    box.outbox.startAutoFlush();
    state.recovery = rec;
    return true;
  },

  async recoveryStatus() {
    const rec = state.recovery;
    const status = await rec.box.outbox.status();
    const sample = await rec.box.outbox.list({ limit: 1 });
    return {
      status,
      delivered: rec.delivered,
      first: rec.first,
      last: rec.last,
      attempts: rec.attempts,
      sample: sample[0] && { attempts: sample[0].attempts, nextAttemptAt: sample[0].nextAttemptAt, lastError: sample[0].lastError },
    };
  },

  async recoveryEnd() {
    const rec = state.recovery;
    state.recovery = null;
    await closeAndDelete(rec.box);
  },

  // --- 8. priority ---

  /**
   * Time from `enqueue` to the `delivered` event (the relay's OK, recorded) of `notes`
   * notes at priority `high`, one after another `gapMs` apart, with auto-flush on; with
   * `backlog`, first that many low-priority events (lane `backfill`) are queued and
   * flushing (300 of them delivered) before the first note. `options` open the outbox
   * (e.g. `{ concurrency: 4 }`). Also returns how many of the backlog were delivered
   * while the notes were timed, and in how long. Each note's steps are timed too: its
   * `EVENT` sent and its `OK` received, seen by wrapping `WebSocket.prototype.send` and
   * the `onmessage` setter for the note being timed.
   */
  async priorityLatency({ backlog, notes, offset = 0, relays, gapMs = 50, options = {} }) {
    const box = await openOutbox(options);
    const o = box.outbox;
    const wire = { id: null, sent: 0, ok: 0 };
    const send = WebSocket.prototype.send;
    const onmessage = Object.getOwnPropertyDescriptor(WebSocket.prototype, "onmessage");
    WebSocket.prototype.send = function (data) {
      if (wire.id && !wire.sent && typeof data === "string" && data.includes(wire.id)) wire.sent = now();
      return send.call(this, data);
    };
    Object.defineProperty(WebSocket.prototype, "onmessage", {
      ...onmessage,
      set(h) {
        const seen = (ev) => {
          if (wire.id && !wire.ok && typeof ev.data === "string" && ev.data.includes(wire.id)) wire.ok = now();
          return h(ev);
        };
        onmessage.set.call(this, typeof h === "function" ? seen : h);
      },
    });
    const waiting = new Map(); // note id -> resolve
    const attempted = new Map(); // note id -> when its attempt started
    o.addEventListener("attempt", (e) => {
      if (waiting.has(e.detail.id)) attempted.set(e.detail.id, now());
    });
    let delivered = 0;
    o.addEventListener("delivered", (e) => {
      const done = waiting.get(e.detail.id);
      if (done) done(now());
      else delivered += 1;
    });
    for (let i = 0; i < backlog; i += 1000) {
      const list = items(EVENTS.slice(offset + i, offset + Math.min(i + 1000, backlog)), relays, { priority: "low", lane: "backfill" });
      await o.enqueueMany(list);
    }
    o.startAutoFlush();
    const flowing = now() + 60_000;
    while (backlog > 0 && delivered < 300 && now() < flowing) await new Promise((r) => setTimeout(r, 5));
    const lat = [];
    const parts = []; // [enqueue resolved, attempt started, delivered, EVENT sent, OK received], ms after the call
    const [before, since] = [delivered, now()];
    for (const event of EVENTS.slice(offset + backlog, offset + backlog + notes)) {
      const done = new Promise((ok) => waiting.set(event.id, ok));
      Object.assign(wire, { id: event.id, sent: 0, ok: 0 });
      const t = now();
      await o.enqueue(event, relays, { priority: "high" });
      const enqueued = now() - t;
      const bound = new Promise((ok) => setTimeout(() => ok(null), 30_000));
      const at = await Promise.race([done, bound]);
      if (at === null) throw new Error(`note ${event.id} not delivered within 30 s`);
      lat.push(at - t);
      parts.push([enqueued, (attempted.get(event.id) ?? at) - t, at - t, (wire.sent || at) - t, (wire.ok || at) - t]);
      await new Promise((r) => setTimeout(r, gapMs));
    }
    const backlogDelivered = delivered;
    const during = { delivered: delivered - before, ms: now() - since };
    WebSocket.prototype.send = send;
    Object.defineProperty(WebSocket.prototype, "onmessage", onmessage);
    o.stopAutoFlush();
    await closeAndDelete(box);
    return { lat, parts, backlogDelivered, during };
  },

  // --- 6. memory ---

  async memoryOpen(options = {}) {
    state.memory = await openOutbox(options);
    return wasm.memory.buffer.byteLength;
  },

  /** Enqueues the loaded events in one batch, then drops every page reference to them. */
  async memoryEnqueue({ relays }) {
    const list = items(EVENTS, relays);
    EVENTS = [];
    const results = await state.memory.outbox.enqueueMany(list);
    return results.length;
  },

  memoryFlushStart() {
    state.memoryFlush = state.memory.outbox.flush().then(
      (r) => ({ ok: true, r }),
      (e) => ({ ok: false, e: String(e?.message || e) }),
    );
    return true;
  },

  async memoryFlushWait() {
    const r = await state.memoryFlush;
    state.memoryFlush = null;
    const status = await state.memory.outbox.status();
    return { ...r, status };
  },

  async memoryPurge() {
    return state.memory.outbox.purge();
  },

  async memoryClose() {
    await closeAndDelete(state.memory);
    state.memory = null;
  },
};

window.bench = bench;
window.benchReady = true;
