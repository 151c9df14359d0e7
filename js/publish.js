// `outbox.publish(relays, event, options)`: nostr-tools' `SimplePool.publish` contract on
// top of the outbox's public API (enqueue, `change` events, records' `targets`). Written in
// JavaScript, not Rust: the .wasm is at its size budget and this needs nothing the public
// API does not give.
//
// One promise per relay, in the order given. The event is enqueued first (idempotent by
// id: publishing it again is a replay, never a second record). A promise resolves with the
// relay's OK message once that relay accepted (`duplicate:` included) and rejects with a
// `PublishError` whose message starts as nostr-tools' does (the relay's `blocked: …`,
// `publish timed out`, `connection failure: …`) when the relay refused for good, the
// record stopped, or `maxWait` passed. After `maxWait` the event is still queued
// (`err.queued`, `err.id`): a transient failure does not end its delivery.
import { Outbox } from "./nostr_outbox.js";

const TERMINAL = ["satisfied", "exhausted", "cancelled", "superseded"];

/** A relay's publish did not succeed (yet). `queued`: the outbox still delivers it. */
export class PublishError extends Error {
  constructor(message, { relay, id, queued, outcome }) {
    super(message);
    this.name = "PublishError";
    this.relay = relay;
    this.id = id;
    this.queued = queued;
    this.outcome = outcome;
  }
}

/** The relay URL as the outbox stores it (lowercase scheme and host, no default port, no lone `/`). */
export function normalizeRelayUrl(url) {
  const u = new URL(String(url).trim());
  const path = u.pathname === "/" ? "" : u.pathname;
  return `${u.protocol}//${u.host}${path}${u.search}`;
}

// 8 hex digits of FNV-1a over the plan's relays and policy (an id suffix, not a digest).
function planHash(relays, policy) {
  let h = 0x811c9dc5;
  for (const c of JSON.stringify([relays, policy])) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
}

// The first words of the error, as nostr-tools would have said it for the latest answer.
function failure(latest) {
  switch (latest?.outcome) {
    case undefined:
    case "timeout":
    case "notAttempted":
      return "publish timed out";
    case "unreachable":
      return `connection failure: ${latest.message}`;
    default:
      return latest.message || latest.outcome;
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
          url = normalizeRelayUrl(relay);
        } catch {
          url = String(relay);
        }
        if (waiting.has(url)) reject(new PublishError("duplicate url", { relay, id: null, queued: false, outcome: null }));
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
    const terminal = TERMINAL.includes(record.stage);
    for (const t of record.targets) {
      const w = waiting.get(t.relay);
      if (!w) continue;
      const info = { relay: w.relay, id: record.id, outcome: t.latest?.outcome ?? null };
      if (t.state === "accepted") w.resolve(t.latest?.message ?? "");
      else if (t.state === "rejected") w.reject(new PublishError(t.latest?.message || "rejected", { ...info, queued: false }));
      else if (terminal) {
        const why = record.reason ? `${record.stage}: ${record.reason}` : record.stage;
        w.reject(new PublishError(`${failure(t.latest)} (not sent: the outbox record ${record.id} is ${why})`, { ...info, queued: false }));
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
      timer = setTimeout(() => {
        const record = last && last.revision >= first.revision ? last : first;
        const targets = new Map(record.targets.map((t) => [t.relay, t]));
        for (const [url, w] of waiting) {
          const latest = targets.get(url)?.latest ?? null;
          w.reject(
            new PublishError(`${failure(latest)} (still queued as ${record.id}: the outbox keeps delivering it)`, {
              relay: w.relay,
              id: record.id,
              queued: true,
              outcome: latest?.outcome ?? null,
            }),
          );
        }
        waiting.clear();
        done();
      }, maxWait);
      if (!outbox.autoFlush) outbox.flush().catch(() => {});
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
