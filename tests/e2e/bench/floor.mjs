// The floor of a durable flush: the fastest design this project knows for "publish every
// queued event to its relays and record each answer durably", written directly on
// IndexedDB and raw WebSockets in plain JavaScript (no wasm, no library). It is a side of
// the flush and fan-out benchmarks (tests/e2e/bench.mjs, issue 24 point 4), so the outbox
// is measured against the least work its guarantees need, in the same page and run.
//
// The design (the best rows of issue 24's table):
//   - `events`: each signed event in a row of its own, written once at enqueue (here: at
//     prepare time, not timed) and never rewritten: {id, eventId, json}.
//   - `state`: a small row per record, {id, stage, dueMs, attempts, relays, outcomes},
//     with ONE index, `due` = [dueMs, id]. A settled row has no dueMs, so it leaves the
//     index; `outcomes` holds the latest answer per relay ({ok, msg, at}).
//   - `leases`: one row per claimed batch, {leaseId, owner, ids, until}.
//   - claim = ONE relaxed readwrite transaction (as the outbox's claim: a lease lost to
//     power loss only makes its records claimable again): read the active lease rows
//     (records they list are skipped; an expired lease is folded: each of its records
//     still due gets attempts + 1, so an attempt counts across a crash), read up to 256
//     state rows through the due index, read their event rows, write ONE lease row for
//     the batch. No state row is written by a claim.
//   - publish: one raw WebSocket per relay, `["EVENT", ev]` (the stored JSON spliced in,
//     no stringify), `["OK", id, ok, msg]` matched by event id, 256 events in flight per
//     relay; claimed records wait in a per-relay queue, and the next claim starts while
//     256 or fewer claimed records still wait for answers, so the window stays full.
//   - record = group commit: ONE strict readwrite transaction in flight; the answers that
//     arrive while it runs form the next group (up to 256 records), written when it
//     completes. Each record's state row is written ONCE, when its last relay answered
//     (fan-out, policy "all": the earlier relays' answers are kept in memory until then,
//     which is cheaper than a rewrite per answer: a crash before the last answer only
//     re-sends to relays that answered, which relays treat as a duplicate). The row is
//     put blind (no read): the lease makes this flusher the only writer of its records
//     until it ends. The transaction that records a batch's last record also deletes the
//     batch's lease row. An answer counts as done only once its transaction completed.
//     `write: "answer"` (a variant, bench.mjs --floor-variants) writes the state row at
//     every answer instead (answers of one record that meet in a group make one put):
//     a crash then re-sends only to the relays that had not answered.
//   - per answer, the time from the OK's arrival to the commit of the transaction that
//     recorded it (median and p99 returned), and the same from each record's last answer.
//
// Per record, in the timed part: 1 state-row put (strict, grouped by up to 256), 1 event-row
// read and 1 state-row read (in the claim); per batch of 256: 1 claim transaction writing 1
// lease row, and the lease's delete in a recording transaction it already shares.
// Outcomes: ok (or a "duplicate:" refusal) = accepted; "invalid:"/"blocked:"/"pow:" refusals
// are final (stage "rejected"); anything else (another refusal, a closed socket, no answer
// within 10 s) leaves the record due again after a backoff. A run ends when nothing is due
// and nothing is in flight.

const BATCH = 256; // records per claim
const WIDTH = 256; // events in flight per relay
const GROUP = 256; // records per recording transaction at most
const LEASE_MS = 60_000;
const ANSWER_TIMEOUT_MS = 10_000;
const BACKOFF_MS = 30_000;

/** An IndexedDB request as a promise (also the page's raw IndexedDB sides'). */
export const request = (r) =>
  new Promise((ok, fail) => {
    r.onsuccess = () => ok(r.result);
    r.onerror = () => fail(r.error);
  });
/** A transaction's completion as a promise (also the page's raw IndexedDB sides'). */
export const committed = (tx) =>
  new Promise((ok, fail) => {
    tx.oncomplete = () => ok();
    tx.onabort = () => fail(tx.error || new Error("transaction aborted"));
  });
const pad = (i) => "r" + String(i).padStart(8, "0");

/** Opens (creating) the floor's database: events, state (one index), leases. */
export function openFloorDb(name) {
  const r = indexedDB.open(name, 1);
  r.onupgradeneeded = () => {
    const db = r.result;
    db.createObjectStore("events", { keyPath: "id" });
    db.createObjectStore("state", { keyPath: "id" }).createIndex("due", ["dueMs", "id"]);
    db.createObjectStore("leases", { keyPath: "leaseId" });
  };
  return request(r);
}

/** The enqueue (not timed in the bench): every event row and state row in one strict transaction. */
export async function floorEnqueue(db, events, relays) {
  const tx = db.transaction(["events", "state"], "readwrite", { durability: "strict" });
  const ev = tx.objectStore("events");
  const st = tx.objectStore("state");
  const dueMs = Date.now();
  events.forEach((e, i) => {
    const id = pad(i);
    ev.put({ id, eventId: e.id, json: JSON.stringify(e) });
    st.put({ id, stage: "pending", dueMs, attempts: 0, relays, outcomes: {} });
  });
  await committed(tx);
  return events.length;
}

/**
 * One claim transaction: up to `limit` due records not leased by anyone, with their event
 * JSON, and one lease row naming them. `after` = the due key this flusher claimed last (a
 * hint that skips its own leased records; they are also excluded by the lease rows).
 */
async function claim(db, owner, limit, after) {
  const tx = db.transaction(["state", "events", "leases"], "readwrite", { durability: "relaxed" });
  const done = committed(tx);
  const st = tx.objectStore("state");
  const leases = tx.objectStore("leases");
  const now = Date.now();
  const leased = new Set();
  for (const l of await request(leases.getAll())) {
    if (l.until > now) {
      for (const id of l.ids) leased.add(id);
      continue;
    }
    // A lease that outlived its flusher (a crash, a closed tab): its attempt counts.
    for (const id of l.ids) {
      const row = await request(st.get(id));
      if (row && row.dueMs !== undefined) st.put({ ...row, attempts: row.attempts + 1 });
    }
    leases.delete(l.leaseId);
  }
  const index = st.index("due");
  const rows = [];
  let from = after;
  for (;;) {
    const range = from ? IDBKeyRange.bound(from, [now, []], true, false) : IDBKeyRange.upperBound([now, []]);
    const want = limit - rows.length;
    const page = await request(index.getAll(range, want));
    for (const row of page) if (!leased.has(row.id)) rows.push(row);
    if (page.length < want || rows.length >= limit) break;
    from = [page[page.length - 1].dueMs, page[page.length - 1].id];
  }
  if (rows.length === 0) {
    tx.commit();
    await done;
    return { rows, events: [], lease: null, last: null };
  }
  const ev = tx.objectStore("events");
  const reads = rows.map((row) => request(ev.get(row.id)));
  const lease = { leaseId: `${owner}-${now}-${rows[0].id}`, owner, ids: rows.map((r) => r.id), until: now + LEASE_MS };
  leases.put(lease);
  const events = await Promise.all(reads);
  tx.commit();
  await done;
  const lastRow = rows[rows.length - 1];
  return { rows, events, lease, last: [lastRow.dueMs, lastRow.id] };
}

const quantile = (sorted, q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN);
const finalRefusal = (msg) => /^(invalid|blocked|pow):/.test(msg || "");

/**
 * Flushes every due record of `db` to its relays with the design above. Resolves when
 * nothing is due and nothing is in flight, with counts and the OK-to-commit times.
 */
export function floorFlush(db, { owner = "floor", write = "record" } = {}) {
  const perAnswer = write === "answer";
  return new Promise((resolve, reject) => {
    const sockets = new Map(); // url -> { ws, open, queue, head, inflight }
    const byEvent = new Map(); // url + " " + event id -> record in flight to that relay
    const latencies = []; // per answer: OK arrival -> commit
    const lastLatencies = []; // per record: its last answer -> commit
    let unanswered = 0; // claimed records with answers still missing
    let claiming = false;
    let after = null; // due key of the last claimed record (hint)
    let drained = false; // the last claim found nothing
    let group = []; // records fully answered, waiting for the next recording transaction
    let recording = false;
    const stats = { write, claims: 0, claimed: 0, recordTxs: 0, recorded: 0, puts: 0, delivered: 0, rejected: 0, retry: 0, sent: 0 };
    let failed = false;
    const fail = (e) => {
      if (failed) return;
      failed = true;
      clearInterval(watchdog);
      for (const s of sockets.values()) s.ws.close();
      reject(e);
    };

    const socket = (url) => {
      let s = sockets.get(url);
      if (s) return s;
      s = { ws: new WebSocket(url), open: false, queue: [], head: 0, inflight: new Map() };
      sockets.set(url, s);
      s.ws.onopen = () => {
        s.open = true;
        pump(url, s);
      };
      s.ws.onmessage = (m) => onMessage(url, s, m.data);
      s.ws.onclose = () => {
        s.open = false;
        sockets.delete(url);
        // Everything in flight or queued to this relay failed this attempt.
        for (const rec of s.inflight.values()) answer(rec, url, false, "error: connection closed", null);
        s.inflight.clear();
        for (let i = s.head; i < s.queue.length; i++) answer(s.queue[i], url, false, "error: connection closed", null);
        s.queue = [];
        s.head = 0;
      };
      return s;
    };

    const pump = (url, s) => {
      while (s.open && s.inflight.size < WIDTH && s.head < s.queue.length) {
        const rec = s.queue[s.head++];
        s.inflight.set(rec.eventId, rec);
        rec.sentAt.set(url, performance.now());
        s.ws.send(`["EVENT",${rec.json}]`);
        stats.sent += 1;
      }
      if (s.head === s.queue.length) {
        s.queue = [];
        s.head = 0;
      }
    };

    const onMessage = (url, s, data) => {
      const t = performance.now();
      let msg;
      try {
        msg = JSON.parse(data);
      } catch {
        return;
      }
      if (msg[0] !== "OK") return;
      const rec = s.inflight.get(msg[1]);
      if (!rec) return;
      s.inflight.delete(msg[1]);
      answer(rec, url, msg[2] === true || /^duplicate:/.test(msg[3] || ""), String(msg[3] ?? ""), t);
      pump(url, s);
    };

    /** One relay's answer for `rec` (t = arrival time, null for a failure seen locally). */
    const answer = (rec, url, ok, msg, t) => {
      rec.outcomes[url] = { ok, msg, at: Date.now() };
      if (t !== null) rec.arrivals.push(t);
      rec.waiting -= 1;
      if (rec.waiting > 0) {
        // write "answer": this answer is written too (once per group: several answers of
        // one record that meet in a group make one put).
        if (perAnswer && !rec.queued) {
          rec.queued = true;
          group.push(rec);
          record();
        }
        return;
      }
      unanswered -= 1;
      rec.lastArrival = t;
      if (!rec.queued) {
        rec.queued = true;
        group.push(rec);
      }
      record();
      claimMore();
    };

    /** Starts the next recording transaction unless one is running. */
    const record = () => {
      if (recording || group.length === 0 || failed) return;
      recording = true;
      const batch = group.length <= GROUP ? group : group.slice(0, GROUP);
      group = group.length <= GROUP ? [] : group.slice(GROUP);
      const tx = db.transaction(["state", "leases"], "readwrite", { durability: "strict" });
      const st = tx.objectStore("state");
      const now = Date.now();
      for (const rec of batch) {
        rec.queued = false;
        rec.inTx = rec.arrivals;
        rec.arrivals = [];
        const outcomes = { ...rec.row.outcomes, ...rec.outcomes };
        if (rec.waiting > 0) {
          // An answer of a record still waiting for others (write "answer"): still due
          // and leased, same attempt.
          st.put({ ...rec.row, outcomes });
          rec.stage = null;
          continue;
        }
        const attempts = rec.row.attempts + 1;
        const oks = rec.row.relays.every((u) => outcomes[u]?.ok);
        const final = !oks && rec.row.relays.some((u) => outcomes[u] && !outcomes[u].ok && finalRefusal(outcomes[u].msg));
        const row = { id: rec.row.id, stage: oks ? "delivered" : final ? "rejected" : "pending", attempts, relays: rec.row.relays, outcomes };
        if (!oks && !final) row.dueMs = now + BACKOFF_MS;
        st.put(row);
        rec.stage = row.stage;
        rec.lease.remaining -= 1;
        if (rec.lease.remaining === 0) tx.objectStore("leases").delete(rec.lease.leaseId);
      }
      tx.oncomplete = () => {
        const c = performance.now();
        for (const rec of batch) {
          for (const a of rec.inTx) latencies.push(c - a);
          stats.puts += 1;
          if (rec.stage === null) continue;
          if (rec.lastArrival !== null) lastLatencies.push(c - rec.lastArrival);
          stats[rec.stage === "delivered" ? "delivered" : rec.stage === "rejected" ? "rejected" : "retry"] += 1;
        }
        stats.recordTxs += 1;
        stats.recorded += batch.filter((rec) => rec.stage !== null).length;
        recording = false;
        record();
        maybeFinish();
      };
      tx.onabort = () => fail(tx.error || new Error("recording transaction aborted"));
    };

    /** Claims the next batch while 256 or fewer claimed records wait for answers. */
    const claimMore = () => {
      if (claiming || drained || failed || unanswered > BATCH) return;
      claiming = true;
      claim(db, owner, BATCH, after).then(
        (c) => {
          claiming = false;
          stats.claims += 1;
          if (c.rows.length === 0) {
            if (after !== null) {
              // Nothing after the hint: look once from the start (retries, others' expired leases).
              after = null;
              claimMore();
            } else {
              drained = true;
              maybeFinish();
            }
            return;
          }
          after = c.last;
          stats.claimed += c.rows.length;
          const lease = { leaseId: c.lease.leaseId, remaining: c.rows.length };
          const touched = new Set();
          c.rows.forEach((row, i) => {
            const targets = row.relays.filter((u) => !row.outcomes[u]?.ok);
            const rec = { row, json: c.events[i].json, eventId: c.events[i].eventId, lease, outcomes: {}, waiting: targets.length, arrivals: [], inTx: [], lastArrival: null, sentAt: new Map(), stage: null, queued: false };
            unanswered += 1;
            if (targets.length === 0) {
              unanswered -= 1;
              rec.queued = true;
              group.push(rec);
              return;
            }
            for (const url of targets) {
              socket(url).queue.push(rec);
              touched.add(url);
            }
          });
          for (const url of touched) pump(url, sockets.get(url));
          record();
          claimMore();
        },
        fail,
      );
    };

    const maybeFinish = () => {
      if (!drained || claiming || unanswered > 0 || recording || group.length > 0 || failed) return;
      clearInterval(watchdog);
      for (const s of sockets.values()) s.ws.close();
      const sorted = latencies.sort((a, b) => a - b);
      const sortedLast = lastLatencies.sort((a, b) => a - b);
      resolve({
        ...stats,
        okToCommit: { answers: sorted.length, medianMs: quantile(sorted, 0.5), p99Ms: quantile(sorted, 0.99), maxMs: sorted[sorted.length - 1] },
        lastOkToCommit: { records: sortedLast.length, medianMs: quantile(sortedLast, 0.5), p99Ms: quantile(sortedLast, 0.99) },
      });
    };

    // An answer that never comes fails its attempt (the record is due again later).
    const watchdog = setInterval(() => {
      const t = performance.now();
      for (const [url, s] of sockets) {
        for (const [id, rec] of s.inflight) {
          if (t - rec.sentAt.get(url) > ANSWER_TIMEOUT_MS) {
            s.inflight.delete(id);
            answer(rec, url, false, "error: no answer", null);
          }
        }
        pump(url, s);
      }
    }, 1000);

    claimMore();
  });
}

/** After a run (not timed): every state row, counted by stage, and whether every relay said ok. */
export async function floorVerify(db) {
  const tx = db.transaction(["state", "leases", "events"], "readonly");
  const rows = await request(tx.objectStore("state").getAll());
  const leases = await request(tx.objectStore("leases").count());
  const events = await request(tx.objectStore("events").count());
  const stages = {};
  const refusals = {}; // the relays' messages of the answers that were not ok, counted
  let allOk = 0;
  for (const r of rows) {
    stages[r.stage] = (stages[r.stage] || 0) + 1;
    if (r.stage === "delivered" && r.dueMs === undefined && r.relays.every((u) => r.outcomes[u]?.ok === true)) allOk += 1;
    for (const o of Object.values(r.outcomes)) if (!o.ok) refusals[o.msg] = (refusals[o.msg] || 0) + 1;
  }
  return { rows: rows.length, events, stages, deliveredEverywhere: allOk, leasesLeft: leases, refusals };
}
