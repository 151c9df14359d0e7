// `outbox.publish(relays, event, options)`: nostr-tools' `SimplePool.publish` contract on
// top of the outbox's public API (enqueue, `change` events, records' `targets`). Written in
// JavaScript, not Rust: the .wasm is at its size budget and this needs nothing the public
// API does not give (relay URLs are normalized by the .wasm's own `normalizeRelayUrl`, so
// a relay's promise is matched with the record's target whatever the URL looks like).
//
// One promise per relay, in the order given. The event is enqueued first (idempotent by
// id: publishing it again is a replay, never a second record). A promise resolves with the
// relay's OK message once that relay accepted (`duplicate:` included) and rejects with a
// `PublishError` whose message reads as nostr-tools' does (the relay's `blocked: …`,
// `publish timed out`, `connection failure: …`; the outbox's own words are in `detail`):
// - at once (`queued: false`) when the relay refused for good, or when the record stopped
//   (terminal stage) without it;
// - at once (`queued: true`) when the relay is known to be unreachable (its latest answer
//   is `unreachable`: connection refused, its circuit open), as nostr-tools rejects a
//   refused connection at once; the outbox keeps delivering the event to it;
// - after `maxWait` (`queued: true`) when it has not answered by then, counted from the
//   record's own time when it waits for one (`notBefore`, the outbox's `holdMs`, an event
//   dated ahead): a held post is not a relay that failed to answer.
// A record still in delivery (any stage but the terminal ones, e.g. `delivering` once its
// policy is met while other targets are open) keeps every open relay's promise waiting.
import { Outbox, normalizeRelayUrl } from "./nostr_outbox.js";
import { TERMINAL } from "./stages.js";

/**
 * A relay's publish did not succeed (yet). `queued`: the outbox still delivers it; `detail`:
 * the relay's or the transport's full message behind `message`.
 */
export class PublishError extends Error {
  constructor(message, { relay, id, queued, outcome = null, detail = null, stage = null, reason = null }) {
    super(message);
    this.name = "PublishError";
    this.relay = relay;
    this.id = id;
    this.queued = queued;
    this.outcome = outcome;
    this.detail = detail;
    this.stage = stage;
    this.reason = reason;
  }
}

// 8 hex digits of FNV-1a over the plan's relays and policy (an id suffix, not a digest).
function planHash(relays, policy) {
  let h = 0x811c9dc5;
  for (const c of JSON.stringify([relays, policy])) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
}

// What nostr-tools would have said for this latest answer: its words for a failed
// connection (`connection failure: connection failed` / `… connection timed out`, `relay
// connection closed` when it closed before the OK), `publish timed out`, or the relay's own
// message (minus the outbox's notes on AUTH).
function failure(latest) {
  const detail = latest?.message ?? "";
  switch (latest?.outcome) {
    case undefined:
    case "timeout":
    case "notAttempted":
      return "publish timed out";
    case "unreachable":
      if (!detail.startsWith("circuit open") && /before the relay answered|while authenticating/.test(detail)) {
        return "relay connection closed";
      }
      return `connection failure: connection ${/timeout|timed out/.test(detail) ? "timed out" : "failed"}`;
    default:
      return detail.replace(/ \((no signer configured|authentication failed: .*)\)$/s, "") || latest.outcome;
  }
}

/**
 * Enqueues `event` for `relays` on `outbox` and returns one promise per relay.
 * Options: `maxWait` (ms, default 10 000), `onauth` and `abort` (accepted for nostr-tools'
 * signature, not used: AUTH is answered by the outbox's `signer` option), and enqueue's `policy`,
 * `id`, `deadline`, `maxAttempts`.
 */
export function publishThrough(outbox, relays, event, options = {}) {
  const { maxWait = 10_000, onauth: _onauth, abort: _abort, ...enqueueOptions } = options || {};
  if (!Array.isArray(relays)) throw new TypeError("publish: relays must be an array of relay URLs");
  const list = relays;
  const waiting = new Map(); // normalized url -> { relay, resolve, reject }
  const promises = list.map(
    (relay) =>
      new Promise((resolve, reject) => {
        let url;
        try {
          url = normalizeRelayUrl(String(relay));
        } catch {
          url = String(relay); // enqueue refuses it: every promise gets its OutboxError
        }
        if (waiting.has(url)) reject(new PublishError("duplicate url", { relay, id: null, queued: false }));
        else waiting.set(url, { relay, resolve, reject });
      }),
  );
  let id = enqueueOptions.id;
  if (id === undefined) {
    try {
      id = (typeof event === "string" ? JSON.parse(event) : event).id;
    } catch {
      id = undefined;
    }
  }
  let timer;
  const done = () => {
    clearTimeout(timer);
    outbox.removeEventListener("change", onChange);
  };
  const settle = (record) => {
    const terminal = TERMINAL.has(record.stage);
    for (const t of record.targets) {
      const w = waiting.get(t.relay);
      if (!w) continue;
      const latest = t.latest;
      const info = {
        relay: w.relay,
        id: record.id,
        outcome: latest?.outcome ?? null,
        detail: latest?.message ?? null,
        stage: record.stage,
        reason: record.reason ?? null,
      };
      if (t.state === "accepted") w.resolve(latest?.message ?? "");
      else if (t.state === "rejected") w.reject(new PublishError(latest?.message || "rejected", { ...info, queued: false }));
      else if (terminal) {
        // Stopped without this relay: its deadline or budget ran out, it was cancelled or
        // superseded (or the outbox was told to stop delivering at satisfaction).
        const message = latest ? failure(latest) : `not sent: ${record.reason ?? record.stage}`;
        w.reject(new PublishError(message, { ...info, queued: false }));
      } else if (latest?.outcome === "unreachable") {
        w.reject(new PublishError(failure(latest), { ...info, queued: true }));
      } else continue;
      waiting.delete(t.relay);
    }
    if (waiting.size === 0) done();
  };
  let last = null;
  const onChange = (e) => {
    if (e.detail && e.detail.id === id) {
      last = e.detail;
      settle(e.detail);
    }
  };
  outbox.addEventListener("change", onChange);
  outbox
    .enqueue(event, list, enqueueOptions)
    .catch((err) => {
      // The same event published again to other relays (a rebroadcast): its own record,
      // `<event id>:<hash of the relays and policy>`, so that publishing it there again
      // is a replay too.
      if (err?.code !== "plan_conflict" || enqueueOptions.id !== undefined || typeof id !== "string") throw err;
      id = `${id}:${planHash([...waiting.keys()].sort(), enqueueOptions.policy ?? null)}`;
      return outbox.enqueue(event, list, { ...enqueueOptions, id });
    })
    .then(({ record: first }) => {
      id = first.id;
      if (!last || last.revision < first.revision) settle(first);
      if (waiting.size === 0) return;
      // A record that waits for its time (scheduled, an undo window, dated ahead) is not
      // sent before it: maxWait starts then.
      const held = first.stage === "pending" && first.nextAttemptAt != null ? Math.max(0, first.nextAttemptAt - Date.now()) : 0;
      timer = setTimeout(() => {
        const record = last && last.revision >= first.revision ? last : first;
        const targets = new Map(record.targets.map((t) => [t.relay, t]));
        for (const [url, w] of waiting) {
          const latest = targets.get(url)?.latest ?? null;
          w.reject(
            new PublishError(failure(latest), {
              relay: w.relay,
              id: record.id,
              queued: true,
              outcome: latest?.outcome ?? null,
              detail: latest?.message ?? null,
              stage: record.stage,
              reason: record.reason ?? null,
            }),
          );
        }
        waiting.clear();
        done();
      }, held + maxWait);
      // The relays still waiting must get the event when they are back, with no call from
      // the app: that takes a flusher that runs at the retry times and probes relays that
      // were down, so publish() turns auto-flush on (it flushes now, too).
      if (!outbox.autoFlush) outbox.startAutoFlush();
    })
    .catch((err) => {
      for (const w of waiting.values()) w.reject(err);
      waiting.clear();
      done();
    });
  return promises;
}

Outbox.prototype.publish = function publish(relays, event, options) {
  return publishThrough(this, relays, event, options);
};
