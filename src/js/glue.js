// Runtime glue for the nostr-outbox JavaScript API: the few calls that are simpler
// (or smaller) in JavaScript than through web-sys. No business rule lives here; every
// function works in windows, dedicated/shared/service workers and edge runtimes (it
// only touches `globalThis` and feature-detects everything else).

const EVENT_FIELDS = ["id", "pubkey", "created_at", "kind", "tags", "content", "sig"];

// The JSON text of the seven NIP-01 fields of an event object (other properties, e.g.
// of library event classes, are ignored). Throws a TypeError on cycles or BigInt.
export function eventFieldsJson(event) {
  const picked = {};
  for (const k of EVENT_FIELDS) {
    if (k in event) picked[k] = event[k];
  }
  return JSON.stringify(picked);
}

// Calls `f` (Rust reading an application's value) and returns `{ thrown }` when a getter
// or a Proxy trap of that value throws, undefined otherwise.
export function catching(f) {
  try {
    f();
    return undefined;
  } catch (thrown) {
    return { thrown };
  }
}

// `false` only when the runtime says it is offline (navigator.onLine === false).
export function isOnline() {
  const nav = globalThis.navigator;
  return !(nav && nav.onLine === false);
}

// The `document` of a window (undefined in workers and edge runtimes).
export function pageDocument() {
  const d = globalThis.document;
  return d && typeof d.addEventListener === "function" ? d : undefined;
}

// True when there is no document, or the document is visible.
export function isVisible() {
  const d = pageDocument();
  return !d || d.visibilityState !== "hidden";
}

// Takes the Web Lock `name` if it is free. Resolves with:
// - `undefined` when the Web Locks API is unavailable (callers fall back on leases);
// - `null` when another context holds the lock;
// - a `release` function otherwise: the lock is held until it is called; the promise
//   it returns settles once the lock is actually free again.
export function tryLock(name) {
  const locks = globalThis.navigator && globalThis.navigator.locks;
  if (!locks || typeof locks.request !== "function") return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    let release;
    const held = new Promise((r) => { release = r; });
    const done = locks
      .request(name, { ifAvailable: true }, (lock) => {
        if (!lock) {
          resolve(null);
          return undefined;
        }
        resolve(() => {
          release();
          return done.then(() => undefined, () => undefined);
        });
        return held;
      });
    done.catch(reject);
  });
}

// A NIP-42 signer as a function: accepts `{ signEvent(template) }` (NIP-07 shape, e.g.
// window.nostr) or a bare function. Anything else gives undefined.
export function signerFunction(signer) {
  if (typeof signer === "function") return signer;
  if (signer && typeof signer.signEvent === "function") {
    return (template) => signer.signEvent(template);
  }
  // NDK's signers: `sign(event)` resolves with the signature of the event as given.
  if (signer && typeof signer.sign === "function") {
    return (template) => signer.sign(template);
  }
  return undefined;
}

// Routing intents (`route` on enqueue): asks the app's resolver about each intent of
// `route` in turn for one event or draft (`text`, its JSON) and answers as lines: first
// why it cannot be sent, "<pubkey> has no DM relays (kind 10050)" for a `dm` recipient
// the resolver found no relay for (NIP-17 forbids sending it elsewhere; the intents
// after it are not asked) or "no recipient (no p tag)", else an empty line; then one
// line per relay chosen, `<relay>\t<intent>: <reason>` (or the intent alone, without a
// reason; tabs and line breaks in them made spaces): the evidence's words, written here
// so the .wasm formats nothing. `outbox` asks about the author, `inbox` about the
// pubkeys its `p` tags name (at most 64), `dm` about each of those in turn. Relays may
// be given as strings; the flusher normalizes them and leaves out the invalid. A call
// that takes more than 15 s fails (the record is asked about again after a backoff).
export async function resolveRoute(resolver, route, text) {
  const event = JSON.parse(text);
  const hex = /^[0-9a-f]{64}$/;
  const tags = Array.isArray(event.tags) ? event.tags : [];
  const tagged = [...new Set(tags.filter((t) => t[0] === "p" && hex.test(t[1])).map((t) => t[1]))].slice(0, 64);
  const flat = (v) => String(v ?? "").replace(/[\t\r\n]/g, " ");
  const lines = [""];
  const ask = async (intent, pubkeys) => {
    let timer;
    const late = new Promise((_, no) => (timer = setTimeout(() => no(new Error("no answer within 15 s")), 15_000)));
    const got = await Promise.race([resolver({ intent, pubkeys, event }), late]).finally(() => clearTimeout(timer));
    if (!Array.isArray(got)) throw new Error("the resolver must resolve with an array of { relay, reason }");
    for (const r of got) {
      const [relay, reason] = typeof r === "string" ? [r, ""] : [r?.relay, flat(r?.reason)];
      lines.push(`${flat(relay)}\t${intent}${reason && ": "}${reason}`);
    }
    return got.length;
  };
  for (const intent of route) {
    if (intent === "outbox") await ask(intent, [event.pubkey]);
    else if (intent === "inbox") {
      if (tagged.length) await ask(intent, tagged);
    } else if (tagged.length === 0) lines[0] = "no recipient (no p tag)";
    else {
      for (const pubkey of tagged) {
        if ((await ask(intent, [pubkey])) === 0) {
          lines[0] = `${pubkey} has no DM relays (kind 10050)`;
          break;
        }
      }
    }
    if (lines[0]) break;
  }
  return lines.join("\n");
}

// NIP-70 at enqueue: the index of the first of `authors` (the pubkeys of protected
// events; "" for the others) that is not the signer's key, else -1. The key is asked of
// the signer: NIP-07's, nostr-tools' BunkerSigner's and applesauce's `getPublicKey()`,
// NDK's `user()`. A signer that cannot tell within 2 s (none of those, offline, a throw)
// gives -1: the transport still sends a protected event only where its author
// authenticates.
export async function foreignAuthor(signer, authors) {
  let timer;
  try {
    const key =
      typeof signer.getPublicKey === "function"
        ? signer.getPublicKey()
        : typeof signer.user === "function"
          ? Promise.resolve(signer.user()).then((u) => u && u.pubkey)
          : undefined;
    const late = new Promise((resolve) => (timer = setTimeout(resolve, 2000)));
    const me = await Promise.race([key, late]);
    if (typeof me !== "string" || !/^[0-9a-f]{64}$/.test(me)) return -1;
    return authors.findIndex((a) => a !== "" && a !== me);
  } catch {
    return -1;
  } finally {
    clearTimeout(timer);
  }
}

// Dispatches `new CustomEvent(type, { detail })` on `target`.
export function fire(target, type, detail) {
  target.dispatchEvent(new CustomEvent(type, { detail }));
}

// Registers a Background Sync (Chromium only). Resolves with whether it registered.
export async function registerSync(registration, tag) {
  const sync = registration && registration.sync;
  if (!sync || typeof sync.register !== "function") return false;
  try {
    await sync.register(tag);
    return true;
  } catch (_) {
    return false;
  }
}

// Event types relayed between the outboxes of one database.
const RELAYED = ["enqueued", "attempt", "delivered", "retrying", "exhausted", "change"];

// Joins the BroadcastChannel `name`, when the runtime has one: its messages from other
// contexts (`{ type, detail, change? }`, or `{ batch: [...] }` of them) are dispatched
// on `local`, in order, for the relayed types only.
export function openChannel(name, local) {
  if (typeof globalThis.BroadcastChannel !== "function") return undefined;
  const channel = new globalThis.BroadcastChannel(name);
  const one = (m) => {
    if (!m || !RELAYED.includes(m.type)) return;
    fire(local, m.type, m.detail);
    // A record event posted with `change` stands for two.
    if (m.change && m.type !== "change") fire(local, "change", m.detail);
  };
  channel.onmessage = (e) => {
    const data = e.data;
    if (data && Array.isArray(data.batch)) data.batch.forEach(one);
    else one(data);
  };
  // Node.js: an open channel must not keep the process alive.
  if (typeof channel.unref === "function") channel.unref();
  const joined = { channel, pending: null, wake: null, port: null };
  // What is queued is posted in a task of its own, after the caller's continuation: an
  // awaited `enqueue` resolves before its event is cloned and sent to the other
  // contexts. A MessageChannel task, not a timer: timers are throttled in hidden pages.
  if (typeof globalThis.MessageChannel === "function") {
    const ports = new globalThis.MessageChannel();
    ports.port1.onmessage = () => sendPending(joined);
    if (typeof ports.port1.unref === "function") ports.port1.unref();
    joined.port = ports;
    joined.wake = () => ports.port2.postMessage(null);
  } else {
    joined.wake = () => setTimeout(() => sendPending(joined), 0);
  }
  return joined;
}

// Queues `{ type, detail, change? }`; what is queued by then is posted together in the
// next task (see `openChannel`): one alone, several as `{ batch: [...] }`, in order.
export function postToChannel(joined, type, detail, change) {
  if (!joined.pending) {
    joined.pending = [];
    joined.wake();
  }
  joined.pending.push(change ? { type, detail, change: true } : { type, detail });
}

function sendPending(joined) {
  const pending = joined.pending;
  joined.pending = null;
  if (!pending || pending.length === 0) return;
  try {
    joined.channel.postMessage(pending.length === 1 ? pending[0] : { batch: pending });
  } catch (_) {
    // Closed meanwhile: nobody to tell.
  }
}

// Posts what is queued, then leaves the channel.
export function closeChannel(joined) {
  sendPending(joined);
  joined.channel.onmessage = null;
  joined.channel.close();
  if (joined.port) {
    joined.port.port1.onmessage = null;
    joined.port.port1.close();
    joined.port.port2.close();
  }
}

// True when this runtime has IndexedDB.
// Cloudflare's workerd binds every I/O object (a WebSocket) to the request that opened
// it: detected by its own API, `WebSocketPair`, not by the user agent.
export function ioBoundToRequest() {
  return typeof globalThis.WebSocketPair === "function";
}

// The clock in unix ms; -1 where it cannot be read (Date.now missing or throwing, or
// not a finite time): the outbox then fails with `unsupported`, never reads it as 0.
export function clock() {
  try {
    const now = Date.now();
    return Number.isFinite(now) && now >= 0 ? now : -1;
  } catch {
    return -1;
  }
}

export function hasTimers() {
  return typeof globalThis.setTimeout === "function" && typeof globalThis.clearTimeout === "function";
}

export function hasWebSocket() {
  return typeof globalThis.WebSocket === "function";
}

export function hasIndexedDb() {
  return typeof globalThis.indexedDB === "object" && globalThis.indexedDB !== null;
}

// NIP-13 mining in a worker (src/platform/pow.rs). The worker instantiates the outbox's
// own compiled module with imports that throw (it calls `__powSlice` only, which needs
// none) and tries nonces in slices until one fits or its time is up: it answers the
// nonce, -1 when none was found in time, -2 when the draft could not be read.
const POW_WORKER = `onmessage = ({ data: { module, template, ms } }) => {
  const end = Date.now() + ms;
  const imports = {};
  for (const { module: from, name } of WebAssembly.Module.imports(module)) {
    (imports[from] ||= {})[name] = () => { throw new Error("not in the proof-of-work worker"); };
  }
  const wasm = new WebAssembly.Instance(module, imports).exports;
  const bytes = new TextEncoder().encode(template);
  let found = -1;
  for (let start = 0; found === -1 && Date.now() < end; start += 16384) {
    const at = wasm.__wbindgen_malloc(bytes.length, 1); // freed by __powSlice
    new Uint8Array(wasm.memory.buffer, at, bytes.length).set(bytes);
    found = wasm.__powSlice(at, bytes.length, start, 16384);
  }
  postMessage(found);
};`;
let powWorkerUrl;

// Mines `template` (unsigned event JSON with its nonce tag) in a new worker for at most
// `ms`: resolves with the nonce or -1 (none in time); rejects where no worker can run it
// (none in this runtime, a Content Security Policy refusing blob: workers, a worker
// that fails), and the caller mines on its own thread.
export function mineInWorker(module, template, ms) {
  return new Promise((resolve, reject) => {
    let worker;
    try {
      powWorkerUrl ||= URL.createObjectURL(new Blob([POW_WORKER], { type: "text/javascript" }));
      worker = new Worker(powWorkerUrl, { type: "module" });
    } catch (e) {
      reject(e);
      return;
    }
    const done = (settle, value) => {
      clearTimeout(timer);
      worker.terminate();
      settle(value);
    };
    // A worker that never answers (one refused without an error event) is given up.
    const timer = setTimeout(() => done(reject, new Error("no answer from the worker")), ms + 5000);
    worker.onmessage = ({ data }) =>
      data >= -1 ? done(resolve, data) : done(reject, new Error("the worker could not read the draft"));
    worker.onerror = (e) => {
      e.preventDefault();
      done(reject, new Error(e.message || "the worker failed"));
    };
    worker.postMessage({ module, template, ms });
  });
}

// Read-back and queries of the relay transport (`WsTransport::query`): sends `req` (a
// `["REQ",…]` frame) on a connection of its own to `url` and resolves with the events
// stored (at most 8, as parsed) once the relay sends `EOSE`; with null when it
// cannot tell: no connection, a `CLOSED`, a close, or no `EOSE` within `ms`. The relay
// transport's shared connections carry publishes only; a query is rare (after an answer
// that left it unclear whether the relay stored an event), so it pays for a connection
// rather than the .wasm for subscription bookkeeping.
//
// A `REQ` by ids ends as soon as every id asked for came back: the relay holds them,
// whether or not its `EOSE` follows.
export function storedEvents(url, req, ms) {
  let wanted = null;
  try {
    const ids = JSON.parse(req)[2]?.ids;
    if (Array.isArray(ids) && ids.length > 0) wanted = new Set(ids);
  } catch (_) {}
  return new Promise((resolve) => {
    const events = [];
    let ws, done = false;
    const finish = (value) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try { ws.close(); } catch (_) {}
      resolve(value);
    };
    const timer = setTimeout(() => finish(null), ms);
    try {
      ws = new WebSocket(url);
    } catch (_) {
      finish(null);
      return;
    }
    ws.onopen = () => {
      try { ws.send(req); } catch (_) { finish(null); }
    };
    ws.onmessage = ({ data }) => {
      let m;
      try { m = JSON.parse(data); } catch (_) { return; }
      if (!Array.isArray(m)) return;
      if (m[0] === "EVENT" && m[1] === "outbox" && events.length < 8) {
        events.push(m[2]);
        if (wanted && wanted.delete(m[2]?.id) && wanted.size === 0) finish(events);
      } else if (m[0] === "EOSE" && m[1] === "outbox") finish(events);
      else if (m[0] === "CLOSED" && m[1] === "outbox") finish(null);
    };
    ws.onclose = () => finish(null);
    ws.onerror = () => finish(null);
  });
}
