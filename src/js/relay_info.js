// NIP-11 relay information for the relay transport: each target relay's information
// document fetched (`Accept: application/nostr+json` on the relay's http(s) URL), read
// with bounds, reduced to the limits the outbox checks, kept with a time to live, and the
// check of one signed event against them before it is sent.
//
// Why JavaScript: nothing here needs the core. Fetching, caching and reading a JSON
// document are what the runtime does natively; the wasm side (`WsTransport::publish`)
// only awaits one verdict per publish. Kept durably where the runtime has the Cache API
// (browsers' windows, workers and service workers of one origin share it; Deno;
// Cloudflare Workers, where it is per data centre), in memory otherwise (Node, Bun), or
// in a store the app gives (`setRelayInformationStore`).
//
// Guarantees: no document, a fetch that fails, or a document that is invalid means no
// checks, never a blocked delivery. A document is read up to MAX_DOCUMENT_BYTES, as
// JSON, and only `limitation`'s fields of the right type are taken (a non-negative safe
// integer, a boolean); everything else is ignored and noted (`relayInformation(url)`).

/** The largest information document read (bytes); a larger one is ignored. */
export const MAX_DOCUMENT_BYTES = 64 * 1024;
/** How long a failed fetch (network error, timeout) is remembered before trying again (ms). */
export const FAILED_TTL_MS = 5 * 60 * 1000;

const CACHE_NAME = "nostr-outbox-nip11";
const NUMBERS = [
  "max_message_length",
  "max_event_tags",
  "max_content_length",
  "min_pow_difficulty",
  "created_at_lower_limit",
  "created_at_upper_limit",
];
const FLAGS = ["auth_required", "payment_required", "restricted_writes"];

// url (as the transport normalizes it) -> { info } | { pending: Promise }
const known = new Map();
const utf8 = new TextEncoder();

// What is known without a usable document: `status` and why.
function noDocument(status, notes) {
  return { status, document: null, limits: {}, notes };
}

/** The http(s) URL a relay serves its information document at. */
export function infoUrl(relay) {
  return relay.replace(/^ws(s?):\/\//i, "http$1://");
}

/** What `limitation` states, as the outbox reads it: `{ limits, notes }`. Only a
 * non-negative safe integer (a number field) or a boolean (a flag) is taken; a limit of 0
 * is read as none. Everything else is noted and ignored. */
export function limitsOf(doc) {
  const limits = {};
  const notes = [];
  const lim = doc.limitation;
  if (lim === undefined || lim === null) return { limits, notes };
  if (typeof lim !== "object" || Array.isArray(lim)) {
    notes.push("limitation: not an object, ignored");
    return { limits, notes };
  }
  for (const key of NUMBERS) {
    const v = lim[key];
    if (v === undefined || v === null) continue;
    if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) {
      if (v > 0) limits[key] = v;
    } else {
      notes.push(`limitation.${key}: not a non-negative integer, ignored`);
    }
  }
  for (const key of FLAGS) {
    const v = lim[key];
    if (v === undefined || v === null) continue;
    if (typeof v === "boolean") limits[key] = v;
    else notes.push(`limitation.${key}: not a boolean, ignored`);
  }
  return { limits, notes };
}

/** Reads a document's text: `{ status, document, limits, notes }`. `invalid` (not JSON, not
 * an object) means no checks. */
export function readDocument(text) {
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    return noDocument("invalid", [`not JSON: ${describe(e)}`]);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    return noDocument("invalid", ["not a JSON object"]);
  }
  const { limits, notes } = limitsOf(doc);
  return { status: "ok", document: doc, limits, notes };
}

function describe(e) {
  return String((e && e.message) || e).slice(0, 200);
}

// The body's text, at most `max` bytes; throws beyond.
async function boundedText(res, max) {
  const declared = Number(res.headers.get("content-length"));
  if (declared > max) throw new Error(`document larger than ${max} bytes (content-length ${declared})`);
  if (!res.body || typeof res.body.getReader !== "function") {
    const text = await res.text();
    if (text.length > max) throw new Error(`document larger than ${max} bytes`);
    return text;
  }
  const reader = res.body.getReader();
  const parts = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      reader.cancel().catch(() => {});
      throw new Error(`document larger than ${max} bytes`);
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

// Fetches and reads the document, within `ms`: never throws.
async function fetchInfo(relay, ms) {
  const at = Date.now();
  const controller = typeof AbortController === "function" ? new AbortController() : null;
  const timer = setTimeout(() => controller && controller.abort(), ms);
  try {
    const res = await fetch(infoUrl(relay), {
      headers: { Accept: "application/nostr+json" },
      signal: controller ? controller.signal : undefined,
      credentials: "omit",
      redirect: "follow",
    });
    if (!res.ok) {
      res.body?.cancel?.().catch(() => {});
      return { url: relay, fetchedAt: at, ...noDocument("missing", [`HTTP ${res.status}`]) };
    }
    let text;
    try {
      text = await boundedText(res, MAX_DOCUMENT_BYTES);
    } catch (e) {
      if (controller && controller.signal.aborted) throw e;
      return { url: relay, fetchedAt: at, ...noDocument("invalid", [describe(e)]) };
    }
    return { url: relay, fetchedAt: at, ...readDocument(text) };
  } catch (e) {
    return { url: relay, fetchedAt: at, ...noDocument("failed", [describe(e)]) };
  } finally {
    clearTimeout(timer);
  }
}

function cacheStorage() {
  try {
    return typeof caches === "object" && caches && typeof caches.open === "function" ? caches : null;
  } catch (_) {
    return null;
  }
}

// The app's store of documents (`setRelayInformationStore`), used instead of the Cache API.
let appStore = null;

/**
 * Keeps relays' information documents in the app's store instead of the Cache API (or, in
 * runtimes without one, memory): `{ get(url) → text | undefined, set(url, text) }`, each
 * may return a promise (a Deno KV, a SQLite table, a Durable Object's storage), so every
 * process or isolate of the app shares them. `null` goes back to the default. What is read
 * back is checked as a fetched document is; a store that throws means memory only.
 */
export function setRelayInformationStore(store) {
  if (store !== null && (typeof store !== "object" || typeof store.get !== "function" || typeof store.set !== "function")) {
    throw new TypeError("setRelayInformationStore: an object with get(url) and set(url, text), or null, is required");
  }
  appStore = store;
}

// What was kept, checked again: the right shape, and the limits read anew from the
// document (kept copies are not trusted more than a relay's answer).
function revive(info, relay) {
  if (!info || typeof info !== "object" || info.url !== relay || typeof info.fetchedAt !== "number") return null;
  if (!["ok", "missing", "invalid", "failed"].includes(info.status)) return null;
  const { url, fetchedAt, status } = info;
  if (status !== "ok") return { url, fetchedAt, ...noDocument(status, Array.isArray(info.notes) ? info.notes.map(String) : []) };
  if (!info.document || typeof info.document !== "object" || Array.isArray(info.document)) return null;
  return { url, fetchedAt, status, document: info.document, ...limitsOf(info.document) };
}

async function loadKept(relay) {
  try {
    if (appStore) {
      const text = await appStore.get(relay);
      return typeof text === "string" ? revive(JSON.parse(text), relay) : null;
    }
    const storage = cacheStorage();
    if (!storage) return null;
    const cache = await storage.open(CACHE_NAME);
    // Keyed by the document's own http(s) URL (the Cache API takes no other scheme).
    const res = await cache.match(infoUrl(relay));
    return res ? revive(await res.json(), relay) : null;
  } catch (_) {
    return null;
  }
}

async function keep(info, ttlMs) {
  if (appStore) {
    try {
      await appStore.set(info.url, JSON.stringify(info));
    } catch (_) {
      // The app's store refused: memory only.
    }
    return;
  }
  const storage = cacheStorage();
  if (!storage) return;
  try {
    const cache = await storage.open(CACHE_NAME);
    await cache.put(
      infoUrl(info.url),
      new Response(JSON.stringify(info), {
        headers: {
          "content-type": "application/json",
          "cache-control": `max-age=${Math.max(1, Math.floor(ttlMs / 1000))}`,
        },
      }),
    );
  } catch (_) {
    // Not kept durably (a private window, a full quota, a runtime without put): memory only.
  }
}

// How long `info` is kept: `ttlMs`, and at most FAILED_TTL_MS for a failed fetch.
function ttlOf(info, ttlMs) {
  return info.status === "failed" ? Math.min(ttlMs, FAILED_TTL_MS) : ttlMs;
}

function fresh(info, ttlMs, now) {
  return now - info.fetchedAt < ttlOf(info, ttlMs) && info.fetchedAt <= now;
}

/** The relay's information as kept, fetched when there is none younger than `ttlMs`
 * (within `boundMs`). Concurrent calls share one fetch. Never rejects. */
export function relayInfo(relay, ttlMs, boundMs) {
  const now = Date.now();
  const mem = known.get(relay);
  if (mem) {
    if (mem.pending) return mem.pending;
    if (fresh(mem.info, ttlMs, now)) return Promise.resolve(mem.info);
  }
  const pending = (async () => {
    const kept = await loadKept(relay);
    if (kept && fresh(kept, ttlMs, Date.now())) return kept;
    const info = await fetchInfo(relay, boundMs);
    await keep(info, ttlOf(info, ttlMs));
    return info;
  })().then(
    (info) => {
      known.set(relay, { info });
      return info;
    },
    () => {
      known.delete(relay);
      return null;
    },
  );
  known.set(relay, { pending });
  return pending;
}

// Leading zero bits of a hex id (NIP-13).
function leadingZeroBits(hex) {
  let bits = 0;
  for (const ch of hex) {
    const v = parseInt(ch, 16);
    if (Number.isNaN(v)) return bits;
    if (v === 0) {
      bits += 4;
      continue;
    }
    return bits + Math.clz32(v) - 28;
  }
  return bits;
}

/** The check of one signed event (`raw`, its JSON as sent) against a relay's `limits` at
 * `nowSec`: `null` when it may be sent, else the evidence message, whose prefix the wasm
 * side types: `limit:` can never pass (terminal), `wait:` time fixes it (retried).
 * `auth_required`, `payment_required` and `restricted_writes` send anyway: the transport
 * authenticates when the relay asks (NIP-42), and whether this author may write there
 * only the relay's answer tells. */
export function checkEvent(limits, raw, nowSec) {
  let ev;
  try {
    ev = JSON.parse(raw);
  } catch (_) {
    return null;
  }
  if (!ev || typeof ev !== "object") return null;
  const not = "not sent: the relay's NIP-11 document states";
  const max = limits.max_message_length;
  if (max) {
    const bytes = utf8.encode(raw).length + 10; // ["EVENT", + raw + ] (nostr::message::event_message)
    if (bytes > max) return `limit: ${not} max_message_length ${max}; the EVENT message is ${bytes} bytes`;
  }
  const tags = Array.isArray(ev.tags) ? ev.tags.length : 0;
  if (limits.max_event_tags && tags > limits.max_event_tags) {
    return `limit: ${not} max_event_tags ${limits.max_event_tags}; the event has ${tags}`;
  }
  if (limits.max_content_length && typeof ev.content === "string") {
    let chars = 0;
    for (const _ of ev.content) chars++;
    if (chars > limits.max_content_length) {
      return `limit: ${not} max_content_length ${limits.max_content_length}; the content has ${chars} characters`;
    }
  }
  if (limits.min_pow_difficulty && typeof ev.id === "string") {
    const bits = leadingZeroBits(ev.id);
    if (bits < limits.min_pow_difficulty) {
      return `limit: ${not} min_pow_difficulty ${limits.min_pow_difficulty}; the event id has ${bits} leading zero bits`;
    }
  }
  const at = ev.created_at;
  if (typeof at === "number") {
    const lower = limits.created_at_lower_limit;
    if (lower && at < nowSec - lower) {
      return `limit: ${not} created_at_lower_limit ${lower}; the event is ${nowSec - at} s old`;
    }
    const upper = limits.created_at_upper_limit;
    if (upper && at > nowSec + upper) {
      return `wait: ${not} created_at_upper_limit ${upper}; the event is ${at - nowSec} s ahead`;
    }
  }
  return null;
}

/** The relay transport's check before sending `raw` to `relay` (see `checkEvent`): the
 * document kept or fetched within `boundMs`, kept for `ttlMs`. Resolves with `null` (send)
 * or the evidence message; never rejects. */
export function relayVerdict(relay, raw, ttlMs, boundMs) {
  if (!(ttlMs > 0)) return Promise.resolve(null);
  return relayInfo(relay, ttlMs, boundMs).then((info) =>
    info && info.status === "ok" ? checkEvent(info.limits, raw, Math.floor(Date.now() / 1000)) : null,
  );
}

/**
 * What the outbox knows of a relay's NIP-11 information document: `{ url, fetchedAt,
 * status, document, limits, notes }` (`status`: `ok`, `missing` — not served —,
 * `invalid` — too large, not JSON, not an object —, or `failed` — unreachable, timed out),
 * fetched when none is kept younger than `maxAgeMs` (default one hour).
 * @param {string} url the relay's URL, normalized as `normalizeRelayUrl` returns it
 * @param {{ maxAgeMs?: number, timeoutMs?: number }} [options]
 */
export function relayInformation(url, options) {
  const ttl = options?.maxAgeMs ?? 3_600_000;
  const bound = options?.timeoutMs ?? 5_000;
  if (typeof url !== "string" || !/^wss?:\/\//i.test(url)) {
    return Promise.reject(new TypeError("relayInformation: a ws:// or wss:// URL is required"));
  }
  for (const [name, v] of [["maxAgeMs", ttl], ["timeoutMs", bound]]) {
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
      return Promise.reject(new TypeError(`relayInformation: ${name} must be a non-negative number of ms`));
    }
  }
  return relayInfo(url, ttl, bound);
}

/** Forgets what is kept in memory (tests; the Cache API's copy stays). */
export function forgetRelayInformation() {
  known.clear();
}
