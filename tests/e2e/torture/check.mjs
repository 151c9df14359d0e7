// The total-queue check of the torture run (in the spirit of Jepsen's total-queue
// checker): given what the driver asked for, what the outbox holds at the end, what every
// relay stored and every frame the proxies saw, it lists every violation of the README's
// guarantees and counts what happened. Pure: no I/O.
import { verifyEvent } from "nostr-tools/pure";

const TERMINAL = new Set(["satisfied", "exhausted", "cancelled"]);
const ACCEPTING = new Set(["accepted", "duplicate"]);
const FIELDS = ["id", "pubkey", "created_at", "kind", "tags", "content", "sig"];

/** The NIP-01 fields of `a` and `b` are equal (the bytes that were signed). */
export function sameEvent(a, b) {
  if (!a || !b) return false;
  return FIELDS.every((f) => JSON.stringify(a[f]) === JSON.stringify(b[f]));
}

/** How many accepted relays a policy needs, over `targets` (normalized URLs). */
export function need(policy, targets) {
  if (policy === "all" || policy?.kind === "all") return { count: targets.length, over: targets };
  if (policy === "any" || policy?.kind === "any") return { count: 1, over: targets };
  if (policy && typeof policy === "object" && "atLeast" in policy) return { count: policy.atLeast, over: targets };
  if (policy && typeof policy === "object" && "required" in policy) {
    return { count: policy.required.length, over: policy.required };
  }
  return null;
}

/** The normalized form of a 127.0.0.1 relay URL the driver used (scheme/host lowercase, no trailing slash). */
export function normalizeRelay(url) {
  return String(url).trim().replace(/^WS:/i, "ws:").replace(/\/+$/, "").toLowerCase();
}

/** The proxy's name (R0, R1, …) for a relay URL, in `relayNames`; the URL when none. */
export function relayName(relayNames, url) {
  return relayNames[normalizeRelay(url)] ?? url;
}

/**
 * @param input.plans      Map id → { event, relays, options, state, ctx, cancelRequested }
 *                         state: "confirmed" (enqueue resolved) · "uncertain" (in flight at
 *                         a crash) · "refused" (typed error) · "replayOnly"
 * @param input.records    every record `list()` returned at the end
 * @param input.status     `status()` at the end
 * @param input.relayDbs   { relayName: Map id → event } what each relay stored
 * @param input.relayNames { normalized URL → relay name }
 * @param input.proxyLogs  { relayName: { events, oks, closes } }
 * @param input.kills      [{ start, end }] each crash, from SIGKILL until the browser's
 *                         last process was gone, and each tab reload (ms)
 * @param input.wire       optional: what the browser's contexts sent and heard on their
 *                         sockets (tests/e2e/torture/wire.js), quoted in explanations
 * @param input.publishTimeoutMs, input.leaseMs
 */
export function checkTotalQueue(input) {
  const { plans, records, relayDbs, relayNames, proxyLogs, kills } = input;
  const failures = [];
  const fail = (kind, detail) => failures.push({ kind, ...detail });
  const byId = new Map(records.map((r) => [r.id, r]));
  const counts = {
    enqueued: 0, uncertain: 0, uncertainPresent: 0, refused: 0,
    satisfied: 0, exhausted: 0, exhaustedBy: {}, cancelled: 0, lost: 0, stuck: 0,
    eventFrames: 0, faults: {}, resends: 0, historyViolations: 0, readBack: 0,
    dupAfterCrash: 0, dupLateOk: 0, dupCut: 0, dupUnexplained: 0, concurrentSends: 0,
    resendAfterRejectCrash: 0, resendAfterRejectRetry: 0, resendAfterRejectCut: 0, resendAfterRejectUnexplained: 0,
  };

  // 1. Every confirmed enqueue is in the outbox, complete and terminal; nothing else is.
  for (const [id, plan] of plans) {
    const rec = byId.get(id);
    if (plan.state === "confirmed") {
      counts.enqueued += 1;
      if (!rec) {
        counts.lost += 1;
        fail("lost", { id, ctx: plan.ctx });
      }
    } else if (plan.state === "uncertain") {
      counts.uncertain += 1;
      if (rec) counts.uncertainPresent += 1;
    } else if (plan.state === "refused") {
      counts.refused += 1;
      if (rec) fail("refused-but-stored", { id, error: plan.error });
    }
  }
  for (const rec of records) {
    const plan = plans.get(rec.id);
    if (!plan || plan.state === "refused") {
      fail("phantom-record", { id: rec.id });
      continue;
    }
    if (!sameEvent(rec.event, plan.event)) fail("record-event-changed", { id: rec.id });
    const targets = rec.targets.map((t) => t.relay);
    const want = [...new Set(plan.relays.map(normalizeRelay))].sort();
    if (JSON.stringify(targets) !== JSON.stringify(want)) fail("record-targets-changed", { id: rec.id, targets, want });
    if (!TERMINAL.has(rec.stage)) {
      counts.stuck += 1;
      fail("not-terminal", { id: rec.id, stage: rec.stage, nextAttemptAt: rec.nextAttemptAt, lastError: rec.lastError });
      continue;
    }
    const latest = new Map(rec.targets.map((t) => [t.relay, t]));
    const accepted = rec.targets.filter((t) => t.latest && ACCEPTING.has(t.latest.outcome)).map((t) => t.relay);
    // Every target that counts as accepted heard OK true from that relay for this id,
    // or (read-back, after an answer that left it unclear) was asked for the event by id
    // and sent it back; either way the relay stored exactly these bytes.
    for (const relay of accepted) {
      const name = relayNames[relay];
      const oks = (proxyLogs[name]?.oks || []).filter((o) => o.id === rec.id && o.accepted);
      const readBack = latest.get(relay)?.latest?.message?.startsWith("read back:");
      if (readBack) counts.readBack += 1;
      if (!oks.length && !readBack) fail("accepted-without-ok", { id: rec.id, relay, latest: latest.get(relay)?.latest });
      const stored = relayDbs[name]?.get(rec.id);
      if (!stored) fail("accepted-not-stored", { id: rec.id, relay });
      else if (!sameEvent(stored, plan.event)) fail("relay-stored-other-bytes", { id: rec.id, relay });
    }
    if (rec.stage === "satisfied") {
      counts.satisfied += 1;
      const n = need(rec.policy, targets);
      const got = accepted.filter((r) => n.over.includes(r)).length;
      if (got < n.count) fail("satisfied-without-evidence", { id: rec.id, policy: rec.policy, accepted });
    } else if (rec.stage === "exhausted") {
      counts.exhausted += 1;
      counts.exhaustedBy[rec.reason] = (counts.exhaustedBy[rec.reason] || 0) + 1;
      if (rec.reason === "rejected") {
        const rejected = rec.targets.filter((t) => t.state === "rejected");
        if (!rejected.length) fail("rejected-without-evidence", { id: rec.id });
        for (const t of rejected) {
          const oks = (proxyLogs[relayNames[t.relay]]?.oks || []).filter((o) => o.id === rec.id && !o.accepted && /^(blocked|invalid|restricted|pow|mute):/.test(o.message));
          if (!oks.length) fail("rejected-without-terminal-ok", { id: rec.id, relay: t.relay, latest: t.latest });
        }
        const n = need(rec.policy, targets);
        const open = rec.targets.filter((t) => t.state === "open" && n.over.includes(t.relay)).length;
        const acc = rec.targets.filter((t) => t.state === "accepted" && n.over.includes(t.relay)).length;
        if (acc + open >= n.count) fail("rejected-but-policy-reachable", { id: rec.id });
      } else if (rec.reason === "maxAttempts") {
        if (rec.attempts < rec.attemptLimit) fail("maxAttempts-early", { id: rec.id, attempts: rec.attempts, limit: rec.attemptLimit });
        const last = rec.evidence.filter((e) => e.attempt === rec.attempts);
        if (!last.length) fail("maxAttempts-without-evidence", { id: rec.id });
      } else if (rec.reason === "expired") {
        if (rec.deadline == null || rec.updatedAt < rec.deadline - 60_000) fail("expired-early", { id: rec.id, deadline: rec.deadline, updatedAt: rec.updatedAt });
      } else {
        fail("exhausted-without-reason", { id: rec.id, reason: rec.reason });
      }
    } else if (rec.stage === "cancelled") {
      counts.cancelled += 1;
      if (!plan.cancelRequested) fail("cancelled-unasked", { id: rec.id });
    }
    if (!rec.event || latest.size === 0) fail("record-incomplete", { id: rec.id });
    // History is append-only and terminal is terminal: every snapshot taken during the
    // run is a prefix of the final record.
    // The one allowed change: an entry of an attempt that reached no relay grows its
    // `tries` (and `at`, `message`) when that attempt is tried again.
    for (const snap of plan.snapshots || []) {
      const problems = [];
      if (rec.revision < snap.revision) problems.push(`revision ${snap.revision} → ${rec.revision}`);
      const before = JSON.parse(snap.evidence);
      if (before.length > rec.evidence.length || before.some((e, i) => !evidenceGrew(e, rec.evidence[i]))) problems.push("evidence rewritten");
      if ((snap.stage === "satisfied" || snap.stage === "cancelled") && rec.stage !== snap.stage) problems.push(`${snap.stage} → ${rec.stage}`);
      if (snap.stage === "exhausted" && rec.stage !== "exhausted" && !(plan.retries || []).some((t) => t >= snap.t)) problems.push(`exhausted → ${rec.stage} without retry()`);
      if (problems.length) {
        counts.historyViolations += 1;
        fail("history-not-append-only", { id: rec.id, problems });
      }
    }
  }

  // 2. Relays stored nothing that was not enqueued, and only the enqueued bytes.
  for (const [name, db] of Object.entries(relayDbs)) {
    for (const [id, ev] of db) {
      const plan = plans.get(id);
      if (!plan) fail("relay-has-unknown-event", { relay: name, id });
      else if (!sameEvent(ev, plan.event)) fail("relay-has-other-bytes", { relay: name, id });
      else if (plan.state === "refused") fail("relay-has-refused-event", { relay: name, id });
    }
  }

  // 3. Every EVENT frame carried the enqueued bytes; none was sent again to a relay that
  //    had already accepted it (or rejected it for good) unless a crash came between.
  // A crash separates a (an answer, a send) from b (a later send) when the browser was
  // still alive at a (the crash ended after it) and was killed before b.
  const relayOf = (url) => relayName(relayNames, url);
  const crashBetween = (a, b) => kills.some((k) => k.end >= a && k.start <= b);
  for (const [name, log] of Object.entries(proxyLogs)) {
    const cuts = log.closes.filter((c) => c.why === "drop" || c.why === "stop");
    for (const e of log.events) {
      counts.eventFrames += 1;
      counts.faults[e.fault] = (counts.faults[e.fault] || 0) + 1;
    }
    const frames = new Map();
    for (const e of log.events) {
      if (!frames.has(e.id)) frames.set(e.id, []);
      frames.get(e.id).push(e);
    }
    for (const [id, list] of frames) {
      const plan = plans.get(id);
      let sent;
      try { sent = JSON.parse(list[0].raw)[1]; } catch { sent = null; }
      if (!plan) fail("sent-unknown-event", { relay: name, id });
      for (const e of list) {
        let ev = null;
        try { ev = JSON.parse(e.raw)[1]; } catch {}
        if (plan && !sameEvent(ev, plan.event)) fail("sent-other-bytes", { relay: name, id });
      }
      if (sent && !verifyEvent({ ...sent })) fail("sent-bad-signature", { relay: name, id });
      counts.resends += list.length - 1;
      const oks = log.oks.filter((o) => o.id === id);
      // Two flushers never hold one record: a frame is not sent again while an earlier
      // one is still waiting for its answer (no OK yet, connection open, within the
      // publish timeout), unless a crash came between.
      for (let i = 1; i < list.length; i++) {
        const e = list[i];
        for (const p of list.slice(0, i)) {
          if (p.conn === e.conn) continue;
          const answered = oks.some((o) => o.conn === p.conn && o.t >= p.t && o.t <= e.t);
          const closed = log.closes.some((c) => (c.conn === p.conn || c.conn === 0) && c.t >= p.t && c.t <= e.t);
          const timedOut = e.t - p.t >= input.publishTimeoutMs - 100;
          if (!answered && !closed && !timedOut && !crashBetween(p.t, e.t)) {
            counts.concurrentSends += 1;
            fail("sent-twice-concurrently", { relay: name, id, first: { conn: p.conn, t: p.t, fault: p.fault }, second: { conn: e.conn, t: e.t } });
          }
        }
      }
      const firstAccept = oks.find((o) => o.accepted);
      const firstReject = oks.find((o) => !o.accepted && /^(blocked|invalid|restricted|pow|mute):/.test(o.message));
      for (const e of list) {
        if (firstAccept && e.t > firstAccept.t) {
          if (crashBetween(firstAccept.t, e.t)) counts.dupAfterCrash += 1;
          else if (firstAccept.eventAt != null && firstAccept.t - firstAccept.eventAt >= input.publishTimeoutMs - 100) counts.dupLateOk += 1;
          else if (cuts.some((c) => (c.conn === firstAccept.conn || c.conn === 0) && c.t >= firstAccept.t && c.t - firstAccept.t < 1000)) counts.dupCut += 1;
          else {
            counts.dupUnexplained += 1;
            // What it takes to explain one (ms from the acceptance): every frame, answer and
            // close of the connections involved, the record's evidence for the relay, and the
            // crashes and reloads near it.
            const at = (t) => t - firstAccept.t;
            const conns = new Set(list.map((f) => f.conn));
            const rec = byId.get(id);
            fail("resent-after-accepted", {
              relay: name, id, okAt: firstAccept.t, okConn: firstAccept.conn, resentAt: e.t, resentConn: e.conn, afterMs: e.t - firstAccept.t, okLatencyMs: firstAccept.eventAt == null ? null : firstAccept.t - firstAccept.eventAt,
              frames: list.map((f) => ({ t: at(f.t), conn: f.conn, fault: f.fault })),
              oks: oks.map((o) => ({ t: at(o.t), written: o.writtenAt == null ? null : at(o.writtenAt), conn: o.conn, accepted: o.accepted, message: o.message })),
              closes: log.closes.filter((c) => (conns.has(c.conn) || c.conn === 0) && c.t >= firstAccept.t - 5000 && c.t <= e.t + 1000).map((c) => ({ t: at(c.t), conn: c.conn, why: c.why })),
              evidence: (rec?.evidence || []).map((v) => ({ relay: relayOf(v.relay), attempt: v.attempt, outcome: v.outcome, t: at(v.at), tries: v.tries })),
              kills: kills.filter((k) => k.end >= firstAccept.t - 10_000 && k.start <= e.t + 10_000).map((k) => ({ start: at(k.start), end: at(k.end), why: k.why })),
              stage: rec?.stage, attempts: rec?.attempts, ctx: plans.get(id)?.ctx,
              // What the browser's contexts sent and heard for this event (any relay).
              browser: (input.wire || []).filter((w) => w.id === id || (w.t >= firstAccept.t - 1000 && w.t <= e.t + 1000 && (["error", "freeze", "resume", "pagehide"].includes(w.what) || (w.what === "close" && relayOf(w.url) === name))))
                .map((w) => ({ t: at(w.t), ctx: w.ctx, ws: w.ws, relay: w.url && relayOf(w.url), what: w.what, accepted: w.accepted, code: w.code, message: w.message })),
            });
          }
        } else if (firstReject && e.t > firstReject.t && !(firstAccept && firstAccept.t < e.t)) {
          const rec = byId.get(id);
          const evidence = (rec?.evidence || []).filter((v) => input.relayNames[v.relay] === name);
          // The outbox learned of the rejection when its evidence says so from before
          // this frame; then only a crash or a retry() explains a re-send.
          const recorded = evidence.some((v) => v.outcome === "rejected" && v.at <= e.t);
          if (crashBetween(firstReject.t, e.t)) counts.resendAfterRejectCrash += 1;
          else if ((plan?.retries || []).some((t) => t >= firstReject.t && t <= e.t)) counts.resendAfterRejectRetry += 1;
          // The connection was cut (dropped, relay stopped) within a second of the
          // `OK`, and the outbox never recorded it: the frame was lost with the
          // connection, as for a re-send after an acceptance.
          else if (!recorded && cuts.some((c) => (c.conn === firstReject.conn || c.conn === 0) && c.t >= firstReject.t && c.t - firstReject.t < 1000)) counts.resendAfterRejectCut += 1;
          else {
            // Only a retry() of the record re-arms the relays that rejected it.
            counts.resendAfterRejectUnexplained += 1;
            // What it takes to explain one: every frame and answer for this event at this
            // relay (ms from the rejection) and the record's evidence for the relay.
            const at = (t) => t - firstReject.t;
            fail("resent-after-rejected", {
              relay: name, id, rejectedAt: firstReject.t, resentAt: e.t, recorded,
              frames: list.map((f) => ({ t: at(f.t), conn: f.conn, fault: f.fault })),
              oks: oks.map((o) => ({ t: at(o.t), conn: o.conn, accepted: o.accepted, message: o.message })),
              cuts: cuts.filter((c) => c.t >= firstReject.t - 1000 && c.t <= e.t).map((c) => ({ t: at(c.t), conn: c.conn, why: c.why })),
              evidence: evidence.map((v) => ({ attempt: v.attempt, outcome: v.outcome, t: at(v.at), tries: v.tries })),
              stage: rec?.stage, attempts: rec?.attempts,
            });
          }
        }
      }
    }
  }
  counts.duplicates = counts.dupAfterCrash + counts.dupLateOk + counts.dupCut + counts.dupUnexplained;
  return { failures, counts };
}

const UNREACHED = new Set(["unreachable", "notAttempted"]);

/** True when evidence entry `after` is `before`, or `before` repeated (more tries). */
export function evidenceGrew(before, after) {
  if (JSON.stringify(before) === JSON.stringify(after)) return true;
  return !!after
    && UNREACHED.has(before.outcome) && UNREACHED.has(after.outcome)
    && before.relay === after.relay && before.attempt === after.attempt
    && after.tries > before.tries && after.at >= before.at
    && after.firstAt === (before.firstAt ?? before.at);
}
