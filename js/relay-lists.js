// nostr-outbox/relay-lists: the built-in resolver of routing intents (`route` on
// `enqueue`; `resolver` of `Outbox.open`). It reads NIP-65 relay lists (kind 10002) and
// NIP-17 DM relay lists (kind 10050) from the index relays the app names, with a `REQ`
// per kind for the pubkeys it lacks, and keeps what it learns in a cache with a time to
// live:
// - every event an index relay sends is checked (id and signature, by the .wasm's
//   `verifyEvent`), and must be of the kind and an author asked for; the newest version
//   wins (NIP-01: a later `created_at`, then the lower id), whether it comes from an index
//   relay, the cache or `observe(event)` (a newer list the app saw elsewhere);
// - a pubkey an index relay answered for without a list is kept as "none" for the TTL too
//   (for `dm`: `recipientNotReady`, never a fallback to other relays);
// - when no index relay answers, a list kept past its TTL is used; with none, the
//   resolver throws, and the outbox asks again after a backoff (like a relay that is down);
// - the cache: IndexedDB where the runtime has it (database `nostr-outbox-relay-lists`),
//   else memory, or the app's: a `Map`, a Durable Object's `storage` (get/put), a Deno KV
//   (get/set of keys `["nostr-outbox-relay-lists", key]`), or any `{ get, set }`.
// - `announce` (NIP-65; an option, or set `resolver.announce = outbox` once the outbox is
//   open): the author's own kind 10002, when known, is enqueued to the relays a route
//   sends to for the first time (once per relay, remembered in the cache), so the people
//   reading there can find the author's other relays.
// - `follow(outbox)` (done for `announce`'s outbox): the kind 10002 and 10050 lists the
//   app enqueues through that outbox are observed as it stores them.
import { verifyEvent, normalizeRelayUrl } from "./nostr_outbox.js";

const DB = "nostr-outbox-relay-lists";

function idbCache() {
  let db;
  const open = () =>
    (db ??= new Promise((resolve, reject) => {
      const req = indexedDB.open(DB, 1);
      req.onupgradeneeded = () => req.result.createObjectStore("lists");
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    }));
  const run = async (mode, op) => {
    const tx = (await open()).transaction("lists", mode);
    return new Promise((resolve, reject) => {
      const req = op(tx.objectStore("lists"));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = tx.onabort = () => reject(tx.error);
    });
  };
  return {
    get: (key) => run("readonly", (s) => s.get(key)),
    set: (key, value) => run("readwrite", (s) => s.put(value, key)),
  };
}

// The app's storage as `{ get, set }`.
function cacheOf(store) {
  if (store === undefined) return typeof indexedDB === "undefined" ? new Map() : idbCache();
  if (typeof store.atomic === "function") {
    // Deno KV
    return {
      get: async (key) => (await store.get([DB, key])).value ?? undefined,
      set: (key, value) => store.set([DB, key], value),
    };
  }
  if (typeof store.get === "function" && typeof store.set === "function") return store;
  if (typeof store.get === "function" && typeof store.put === "function") {
    return { get: (key) => store.get(key), set: (key, value) => store.put(key, value) };
  }
  throw new TypeError("relayListResolver: `cache` must have get(key) and set(key, value) (or put)");
}

const newer = (a, b) => !b || a.created_at > b.created_at || (a.created_at === b.created_at && a.id < b.id);
const HEX = /^[0-9a-f]{64}$/;

// The events a relay sends for `filter` until its EOSE; `null` when it did not answer
// (unreachable, CLOSED, no EOSE within `ms`).
function query(WS, url, filter, ms) {
  return new Promise((resolve) => {
    const events = [];
    let ws;
    let done = false;
    const finish = (answered) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try {
        ws?.close();
      } catch {}
      resolve(answered ? events : null);
    };
    const timer = setTimeout(() => finish(false), ms);
    try {
      ws = new WS(url);
    } catch {
      finish(false);
      return;
    }
    ws.onopen = () => ws.send(JSON.stringify(["REQ", "lists", filter]));
    ws.onmessage = ({ data }) => {
      let m;
      try {
        m = JSON.parse(data);
      } catch {
        return;
      }
      if (!Array.isArray(m) || m[1] !== "lists") return;
      if (m[0] === "EVENT" && events.length < 1000) events.push(m[2]);
      else if (m[0] === "EOSE") finish(true);
      else if (m[0] === "CLOSED") finish(false);
    };
    ws.onerror = ws.onclose = () => finish(false);
  });
}

/**
 * The built-in resolver (see the file header). `indexRelays`: where to read lists
 * (e.g. `wss://purplepag.es`, `wss://relay.nostr.band`); `ttlMs` (default 1 h): how long a
 * list (or its absence) is trusted; `timeoutMs` (default 5 s): how long an index relay may
 * take; `maxPerPubkey` (default 8): relays taken per pubkey, in the list's order;
 * `cache`: where lists are kept (see above); `announce`: an outbox to send the author's
 * kind 10002 along with (NIP-65; also settable later as `resolver.announce`).
 */
export function relayListResolver({
  indexRelays,
  ttlMs = 3_600_000,
  timeoutMs = 5_000,
  maxPerPubkey = 8,
  cache,
  announce,
  WebSocket: WS = globalThis.WebSocket,
} = {}) {
  if (!Array.isArray(indexRelays) || indexRelays.length === 0) {
    throw new TypeError("relayListResolver: `indexRelays` must be a non-empty array of relay URLs");
  }
  const relays = indexRelays.map((u) => normalizeRelayUrl(u));
  const store = cacheOf(cache);
  const key = (kind, pubkey) => `${kind}:${pubkey}`;

  // Keeps `event` when it is a valid list newer than the one kept; answers the kept entry.
  // One at a time (a read, then a write of the cache): two at once could both read the
  // same kept list and the older of theirs be written last.
  let kept = Promise.resolve();
  function keep(kind, pubkey, event, checkedAt) {
    const run = kept.then(async () => {
      const was = (await store.get(key(kind, pubkey))) ?? undefined;
      const better = event && newer(event, was?.event) ? event : was?.event ?? null;
      const entry = { event: better, checkedAt: Math.max(checkedAt, was?.checkedAt ?? 0) };
      await store.set(key(kind, pubkey), entry);
      return entry;
    });
    kept = run.catch(() => {});
    return run;
  }

  const valid = (e, kind, wanted) =>
    e && typeof e === "object" && e.kind === kind && wanted.has(e.pubkey) && verifyEvent(JSON.stringify(e));

  // The lists of kind `kind` of `pubkeys`: pubkey → event or null (none).
  async function lists(kind, pubkeys) {
    const now = Date.now();
    const found = new Map();
    const stale = [];
    for (const pk of pubkeys) {
      const entry = await store.get(key(kind, pk));
      if (entry && now - entry.checkedAt < ttlMs) found.set(pk, entry.event);
      else stale.push([pk, entry]);
    }
    if (stale.length === 0) return found;
    const wanted = new Set(stale.map(([pk]) => pk));
    const answers = [];
    for (let i = 0; i < stale.length; i += 100) {
      const authors = stale.slice(i, i + 100).map(([pk]) => pk);
      answers.push(...(await Promise.all(relays.map((r) => query(WS, r, { kinds: [kind], authors }, timeoutMs)))));
    }
    const answered = answers.some((a) => a !== null);
    const best = new Map();
    for (const e of answers.flat()) {
      if (valid(e, kind, wanted) && newer(e, best.get(e.pubkey))) best.set(e.pubkey, e);
    }
    for (const [pk, entry] of stale) {
      if (answered) found.set(pk, (await keep(kind, pk, best.get(pk) ?? null, now)).event);
      else if (entry) found.set(pk, entry.event); // kept past its TTL: better than nothing
      else throw new Error(`no index relay answered (${relays.join(", ")})`);
    }
    return found;
  }

  // The relays of `event` (a list) for `intent`, at most `maxPerPubkey`, normalized.
  function relaysOf(event, intent) {
    const urls = [];
    for (const t of event?.tags ?? []) {
      if (!Array.isArray(t) || typeof t[1] !== "string") continue;
      const take =
        intent === "dm"
          ? t[0] === "relay"
          : t[0] === "r" && (!t[2] || t[2] === (intent === "outbox" ? "write" : "read"));
      if (!take) continue;
      try {
        const url = normalizeRelayUrl(t[1]);
        if (!urls.includes(url)) urls.push(url);
      } catch {}
      if (urls.length >= maxPerPubkey) break;
    }
    return urls;
  }

  // NIP-65: the author's kind 10002 to the relays of `routes` it was never sent to.
  async function sendAlong(author, routes) {
    const list = (await store.get(key(10002, author)))?.event;
    if (!list) return;
    const sentKey = `sent:${list.id}`;
    const sent = new Set((await store.get(sentKey)) ?? []);
    const fresh = [...new Set(routes.map((r) => r.relay))].filter((r) => !sent.has(r));
    if (fresh.length === 0) return;
    await store.set(sentKey, [...sent, ...fresh]);
    // After this task: the outbox is inside its flush, which asked this resolver.
    const outbox = resolver.announce;
    setTimeout(() => {
      outbox
        .enqueue(list, fresh, { id: `nip65-${list.id.slice(0, 32)}-${Date.now().toString(36)}`, policy: "any" })
        .catch(() => {});
    }, 0);
  }

  async function resolver({ intent, pubkeys, event }) {
    const kind = intent === "dm" ? 10050 : 10002;
    const keys = [...new Set(pubkeys)].filter((pk) => HEX.test(pk));
    const found = await lists(kind, keys);
    const routes = [];
    for (const pk of keys) {
      const list = found.get(pk);
      const why = intent === "dm" ? "DM relay" : intent === "outbox" ? "write relay" : "read relay";
      for (const relay of relaysOf(list, intent)) {
        routes.push({ relay, reason: `${why} of ${pk.slice(0, 8)} (kind ${kind} of ${list.created_at})` });
      }
    }
    if (resolver.announce && routes.length > 0 && HEX.test(event?.pubkey ?? "")) {
      await lists(10002, [event.pubkey]).catch(() => {});
      await sendAlong(event.pubkey, routes);
    }
    return routes;
  }

  /** A list the app saw elsewhere (kind 10002 or 10050): kept when valid and newer. */
  resolver.observe = async (event) => {
    if (!event || (event.kind !== 10002 && event.kind !== 10050)) return false;
    if (!valid(event, event.kind, new Set([event.pubkey]))) return false;
    const entry = await keep(event.kind, event.pubkey, event, 0);
    return entry.event?.id === event.id;
  };
  /** The kept (or fetched) lists of kind `kind` (10002 or 10050) of `pubkeys`. */
  resolver.lists = (kind, pubkeys) => lists(kind, pubkeys);

  // The lists an outbox is given to send (here, or in another tab or worker: its relayed
  // `change` events carry the record with its event) are observed, so a list published
  // through the outbox is used at once, not after the TTL of the one kept before.
  const followed = new WeakSet();
  resolver.follow = (outbox) => {
    if (!outbox || followed.has(outbox)) return;
    followed.add(outbox);
    outbox.addEventListener("change", (e) => {
      const r = e.detail;
      if (!r?.draft && (r?.event?.kind === 10002 || r?.event?.kind === 10050)) resolver.observe(r.event).catch(() => {});
    });
  };
  // The outbox `announce` sends through is followed too.
  let announcing;
  Object.defineProperty(resolver, "announce", {
    get: () => announcing,
    set: (outbox) => {
      announcing = outbox;
      resolver.follow(outbox);
    },
    enumerable: true,
  });
  resolver.announce = announce;
  return resolver;
}
