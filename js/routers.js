// nostr-outbox/routers: resolvers for routing intents, built on the relay-selection
// ("outbox model") machinery of NDK, applesauce and welshman. Imports nothing: each
// function takes the library's objects and duck-types them, so bundling this file never
// pulls a library in.
//
// The contract (js/routers.d.ts): `resolver({ intent, pubkeys, event })` resolves with
// `[{ relay, reason }]`:
// - "outbox": the NIP-65 (kind 10002) write relays of `pubkeys` (`r` tags, no marker or "write");
// - "inbox":  the NIP-65 read relays of `pubkeys` (`r` tags, no marker or "read");
// - "dm":     the NIP-17 DM relays (kind 10050 `relay` tags) of `pubkeys`; a pubkey without a
//             kind 10050 gets none (never its NIP-65 relays, never a default relay).
// A list that was looked for and not found gives no relays (`[]`); when the library could not
// look (no relay answered, the loader failed) the promise rejects, so the outbox retries later.
// Relays are deduplicated per call (the first pubkey's reason is kept) and capped at
// `maxPerPubkey` (default 8) per pubkey.

const RELAY_LIST = 10002;
const DM_RELAYS = 10050;
const DEFAULT_MAX = 8;

/** @typedef {import("./routers.d.ts").RouteRequest} RouteRequest */
/** @typedef {import("./routers.d.ts").Route} Route */
/** @typedef {import("./routers.d.ts").Resolver} Resolver */

/** The kind a request reads and the words of its reasons. */
function plan(request) {
  const { intent } = request ?? {};
  if (intent === "outbox") return { kind: RELAY_LIST, marker: "write", label: "write relay" };
  if (intent === "inbox") return { kind: RELAY_LIST, marker: "read", label: "read relay" };
  if (intent === "dm") return { kind: DM_RELAYS, marker: null, label: "DM relay" };
  throw new TypeError(`nostr-outbox/routers: unknown intent ${JSON.stringify(intent)}`);
}

/** The request's pubkeys, each once, in order. */
function pubkeysOf(request) {
  const pubkeys = Array.isArray(request.pubkeys) ? request.pubkeys : [];
  return [...new Set(pubkeys.filter((p) => typeof p === "string" && p.length > 0))];
}

function maxOf(options) {
  const max = options?.maxPerPubkey ?? DEFAULT_MAX;
  if (!Number.isInteger(max) || max < 1) {
    throw new RangeError(`nostr-outbox/routers: maxPerPubkey must be a positive integer, got ${max}`);
  }
  return max;
}

/**
 * Routes from each pubkey's relays: at most `max` per pubkey (its first ones, in the order
 * the library gave them), each relay once per call (the first pubkey's reason wins).
 * @param {Array<{ pubkey: string, relays: string[] }>} perPubkey
 * @returns {Route[]}
 */
function routesOf(perPubkey, { kind, label }, max) {
  const seen = new Set();
  const routes = [];
  for (const { pubkey, relays } of perPubkey) {
    const own = [...new Set(relays.filter((r) => typeof r === "string" && r.length > 0))].slice(0, max);
    for (const relay of own) {
      if (seen.has(relay)) continue;
      seen.add(relay);
      routes.push({ relay, reason: `${label} of ${pubkey.slice(0, 8)} (kind ${kind})` });
    }
  }
  return routes;
}

/**
 * A relay URL the way NDK's `normalizeRelayUrl` writes it (what `NDKRelayList` returns):
 * lower-case host, no hash, a trailing slash. NDK has no reader for kind 10050; this
 * normalizes its `relay` tags alike. Returns undefined for anything but ws:/wss: URLs.
 */
function ndkStyleUrl(url) {
  let parsed;
  try {
    parsed = new URL(String(url).trim());
  } catch {
    return undefined;
  }
  if (parsed.protocol !== "wss:" && parsed.protocol !== "ws:") return undefined;
  parsed.hash = "";
  let out = parsed.toString();
  if (!out.endsWith("/")) out += "/";
  return out;
}

// ---------------------------------------------------------------------------------------
// NDK (@nostr-dev-kit/ndk v3)

/**
 * The newest event of `kind` of each author that NDK's relays hold, through
 * `ndk.subscribe` (the way NDK's own `getRelayListForUsers` asks: closeOnEose, an explicit
 * relay set of the pool's relays). Resolves once the relays sent EOSE, or at `timeout` if at
 * least one did (or every author was found, e.g. in NDK's cache); rejects at `timeout` when
 * no relay answered: NDK could not look.
 */
function ndkLatest(ndk, kind, authors, options) {
  const pool = options.pool ?? ndk.outboxPool ?? ndk.pool;
  const subOptions = {
    closeOnEose: true,
    groupable: false,
    // NDK wraps a kind 10002 in its NDKRelayList (readRelayUrls / writeRelayUrls).
    wrap: true,
    subId: "outbox-route",
  };
  if (options.cacheUsage) subOptions.cacheUsage = options.cacheUsage;
  if (options.relaySet) {
    subOptions.relaySet = options.relaySet;
  } else if (options.relayUrls) {
    subOptions.relayUrls = options.relayUrls;
  } else {
    // The pool's relays, as getRelayListForUsers builds its NDKRelaySet (`relays` is all
    // NDKSubscription reads of a relay set).
    const relays = new Set(pool?.relays?.values?.() ?? []);
    if (relays.size === 0) {
      return Promise.reject(new Error("nostr-outbox/routers: NDK has no relay to ask for relay lists"));
    }
    subOptions.pool = pool;
    subOptions.relaySet = { relays, size: relays.size, relayUrls: [...relays].map((r) => r.url) };
  }
  const timeout = options.timeout ?? 4000;
  return new Promise((resolve, reject) => {
    const latest = new Map();
    let sub = null;
    let done = false;
    const answered = () => authors.every((a) => latest.has(a)) || (sub?.eosesSeen?.size ?? 0) > 0;
    const finish = (error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try {
        sub?.stop();
      } catch {
        /* already stopped */
      }
      if (error) reject(error);
      else resolve(latest);
    };
    subOptions.onEvent = (event) => {
      if (event.kind !== kind || !authors.includes(event.pubkey)) return;
      const previous = latest.get(event.pubkey);
      if (!previous || (event.created_at ?? 0) > (previous.created_at ?? 0)) latest.set(event.pubkey, event);
    };
    subOptions.onEose = () => {
      if (answered()) finish();
    };
    const timer = setTimeout(() => {
      if (answered()) finish();
      else finish(new Error(`nostr-outbox/routers: no relay answered NDK's request for kind ${kind} within ${timeout} ms`));
    }, timeout);
    try {
      sub = ndk.subscribe({ kinds: [kind], authors }, subOptions);
    } catch (error) {
      finish(error);
    }
  });
}

/** NDKRelayList's getters when NDK wrapped the event, else the same reading of its tags. */
function ndkRelayListUrls(event, marker) {
  const getter = marker === "write" ? "writeRelayUrls" : "readRelayUrls";
  if (Array.isArray(event[getter])) return event[getter];
  return (event.tags ?? [])
    .filter((t) => (t[0] === "r" || t[0] === "relay") && (!t[2] || t[2] === marker))
    .map((t) => ndkStyleUrl(t[1]))
    .filter(Boolean);
}

/**
 * A resolver over an NDK instance. Lists are fetched with `ndk.subscribe` for every call
 * (NDK's cache adapter, if any, answers first), from `options.relaySet`, else
 * `options.relayUrls`, else every relay of `ndk.outboxPool ?? ndk.pool` (the relays NDK's
 * `getRelayListForUsers` asks). Outbox/inbox read NDK's `NDKRelayList.writeRelayUrls` /
 * `readRelayUrls`; dm reads the kind 10050's `relay` tags (NDK has no class for it).
 * Rejects when no relay answered within `options.timeout` (default 4000 ms).
 * @param {object} ndk an `NDK` instance, connected (`await ndk.connect()`)
 * @param {import("./routers.d.ts").NDKResolverOptions} [options]
 * @returns {Resolver}
 */
export function ndkResolver(ndk, options = {}) {
  if (typeof ndk?.subscribe !== "function") throw new TypeError("ndkResolver: expected an NDK instance");
  const max = maxOf(options);
  return async (request) => {
    const p = plan(request);
    const pubkeys = pubkeysOf(request);
    if (pubkeys.length === 0) return [];
    const latest = await ndkLatest(ndk, p.kind, pubkeys, options);
    const perPubkey = pubkeys.map((pubkey) => {
      const event = latest.get(pubkey);
      if (!event) return { pubkey, relays: [] };
      if (p.kind === DM_RELAYS) {
        const tags = (event.tags ?? []).filter((t) => t[0] === "relay");
        return { pubkey, relays: tags.map((t) => ndkStyleUrl(t[1])).filter(Boolean) };
      }
      return { pubkey, relays: ndkRelayListUrls(event, p.marker) };
    });
    return routesOf(perPubkey, p, max);
  };
}

// ---------------------------------------------------------------------------------------
// applesauce (applesauce-core v6)

const WEBSOCKET_URL_CHECK =
  /^wss?:\/\/([-a-zA-Z0-9@:%._\+~#=]{1,256}\.[a-zA-Z0-9()]{1,6}|localhost)\b([-a-zA-Z0-9()@:%_\+.~#?&\/\/=]*)$/;

/** applesauce-core's `isSafeRelayURL`. */
function isSafeRelayURL(url) {
  return typeof url === "string" && url.length >= 8 && WEBSOCKET_URL_CHECK.test(url);
}

/** applesauce-core's `normalizeURL`: collapse double slashes, drop the default port. */
function normalizeURL(url) {
  const p = new URL(url);
  p.pathname = p.pathname.replace(/\/+/g, "/");
  if ((p.port === "80" && p.protocol === "ws:") || (p.port === "443" && p.protocol === "wss:")) p.port = "";
  return p.toString();
}

/** applesauce-core's `normalizeRelayUrl`: `ensureWebSocketURL` then `normalizeURL`. */
function normalizeRelayUrl(input) {
  const withProtocol = /^[a-z][a-z0-9+.-]*:\/\//i.test(input) ? input : `wss://${input}`;
  const p = new URL(withProtocol);
  if (p.protocol === "http:") p.protocol = "ws:";
  else if (p.protocol === "https:") p.protocol = "wss:";
  else if (p.protocol !== "ws:") p.protocol = "wss:";
  return normalizeURL(p.toString());
}

/**
 * applesauce-core's `getInboxes` / `getOutboxes` (helpers/mailboxes): `r` tags with a safe
 * relay URL and the marker (or none), normalized. Uses the value applesauce cached on the
 * event when it already computed it.
 */
function applesauceMailboxes(event, marker) {
  const cached = event[Symbol.for(marker === "read" ? "mailboxes-inboxes" : "mailboxes-outboxes")];
  if (Array.isArray(cached)) return cached;
  const out = [];
  for (const tag of event.tags ?? []) {
    const [name, url, mode] = tag;
    if (name !== "r" || url === undefined) continue;
    try {
      if (isSafeRelayURL(url) && !out.includes(url) && (mode === marker || mode === undefined)) out.push(normalizeURL(url));
    } catch {
      /* applesauce ignores invalid url tags */
    }
  }
  return out;
}

/** applesauce-common's `getRelaysFromList` (public tags): `relay` tag values, normalized, each once. */
function applesauceListRelays(event) {
  const out = new Set();
  for (const tag of event.tags ?? []) {
    if (tag[0] !== "relay" || tag[1] === undefined) continue;
    try {
      out.add(normalizeRelayUrl(tag[1]));
    } catch {
      /* applesauce ignores URLs it cannot parse */
    }
  }
  return [...out];
}

/**
 * A resolver over an applesauce `EventStore` (or any store with `getReplaceable(kind,
 * pubkey)`, sync or async). Outbox/inbox use applesauce's `getOutboxes` / `getInboxes`
 * semantics on the stored kind 10002; dm uses `getRelaysFromList` on the stored kind 10050
 * (what applesauce-common's `directMessageRelays$` reads). Pass applesauce's own helpers as
 * `options.helpers` to use them instead of this file's copies. Without `loader`, a list the
 * store lacks gives no relays; with `loader(pubkey, kind)`, it is awaited for every missing
 * list first (it should add what it finds to the store, or resolve with the event), and its
 * rejection rejects the resolver.
 * @param {{ eventStore: object, loader?: (pubkey: string, kind: number) => Promise<unknown> }} sources
 * @param {import("./routers.d.ts").ApplesauceResolverOptions} [options]
 * @returns {Resolver}
 */
export function applesauceResolver({ eventStore, loader } = {}, options = {}) {
  if (typeof eventStore?.getReplaceable !== "function") {
    throw new TypeError("applesauceResolver: expected { eventStore } with getReplaceable(kind, pubkey)");
  }
  if (loader !== undefined && typeof loader !== "function") throw new TypeError("applesauceResolver: loader must be a function");
  const max = maxOf(options);
  const helpers = options.helpers ?? {};
  const relaysOf = (event, p) => {
    if (p.kind === DM_RELAYS) return (helpers.getRelaysFromList ?? applesauceListRelays)(event);
    if (p.marker === "read") return helpers.getInboxes ? helpers.getInboxes(event) : applesauceMailboxes(event, "read");
    return helpers.getOutboxes ? helpers.getOutboxes(event) : applesauceMailboxes(event, "write");
  };
  return async (request) => {
    const p = plan(request);
    const pubkeys = pubkeysOf(request);
    const perPubkey = await Promise.all(
      pubkeys.map(async (pubkey) => {
        let event = await eventStore.getReplaceable(p.kind, pubkey);
        if (!event && loader) {
          const loaded = await loader(pubkey, p.kind);
          event = await eventStore.getReplaceable(p.kind, pubkey);
          if (!event && loaded?.kind === p.kind && loaded?.pubkey === pubkey && Array.isArray(loaded.tags)) event = loaded;
        }
        return { pubkey, relays: event ? relaysOf(event, p) : [] };
      }),
    );
    return routesOf(perPubkey, p, max);
  };
}

// ---------------------------------------------------------------------------------------
// welshman (@welshman/router 0.8 over @welshman/net's Repository)

/** The router to use now: an instance, the `Router` class (its `Router.get()`), or a function returning one. */
function currentRouter(router) {
  if (typeof router?.FromPubkey === "function") return router;
  if (typeof router?.get === "function") return router.get();
  if (typeof router === "function") return router();
  throw new TypeError("welshmanResolver: router must be a welshman Router, the Router class, or a function returning one");
}

const noFallbacks = () => 0;

/**
 * A resolver over welshman's router. Outbox: `router.FromPubkey(pubkey)`; inbox:
 * `router.ForPubkey(pubkey)`; each with no fallback relays, `.limit(maxPerPubkey)` and
 * `.getUrls()` (so welshman's URL policy and `getRelayQuality` apply, and its random
 * weighting picks which relays when a list is longer than the limit). The router reads the
 * lists through its `getPubkeyRelays` (by default kind 10002 from `Repository.get()`; with
 * @welshman/app, the app's relay lists). Dm reads the kind 10050 from `repository` itself
 * (`relay`/`r` tags, as welshman's `getRelaysFromList`) and filters it through
 * `router.FromRelays(...)`: the router's own `MessagesForPubkey` answers from kind 10002
 * unless @welshman/app configured it, which would be a NIP-65 fallback.
 * The router cannot tell "not loaded" from "none": with `loader(pubkey, kind)`, every list
 * missing from `repository` is loaded first, and a rejection rejects the resolver. With
 * @welshman/app: `(pk, kind) => kind === 10050 ? loadMessagingRelayList(pk) : loadRelayList(pk)`
 * (they never reject: welshman's `load` resolves [] when no relay answers; a loader built on
 * @welshman/net's `request` can count `onEose` and throw when none came).
 * @param {{ router: object, repository: object, loader?: (pubkey: string, kind: number) => Promise<unknown> }} sources
 * @param {import("./routers.d.ts").WelshmanResolverOptions} [options]
 * @returns {Resolver}
 */
export function welshmanResolver({ router, repository, loader } = {}, options = {}) {
  if (!router) throw new TypeError("welshmanResolver: expected { router, repository }");
  if (typeof repository?.query !== "function") {
    throw new TypeError("welshmanResolver: expected { repository } with query(filters) (welshman's Repository)");
  }
  if (loader !== undefined && typeof loader !== "function") throw new TypeError("welshmanResolver: loader must be a function");
  const max = maxOf(options);
  const shape = (scenario) => {
    let s = scenario.policy(noFallbacks).limit(max);
    if (options.allowLocal !== undefined && typeof s.allowLocal === "function") s = s.allowLocal(options.allowLocal);
    if (options.allowInsecure !== undefined && typeof s.allowInsecure === "function") s = s.allowInsecure(options.allowInsecure);
    if (options.allowOnion !== undefined && typeof s.allowOnion === "function") s = s.allowOnion(options.allowOnion);
    return s.getUrls();
  };
  const latest = (kind, pubkey) => {
    const events = repository.query([{ kinds: [kind], authors: [pubkey] }]);
    let best;
    for (const e of events ?? []) if (!best || e.created_at > best.created_at) best = e;
    return best;
  };
  return async (request) => {
    const p = plan(request);
    const pubkeys = pubkeysOf(request);
    if (loader) {
      await Promise.all(pubkeys.filter((pk) => !latest(p.kind, pk)).map((pk) => loader(pk, p.kind)));
    }
    const r = currentRouter(router);
    const perPubkey = pubkeys.map((pubkey) => {
      if (p.kind === DM_RELAYS) {
        const event = latest(DM_RELAYS, pubkey);
        if (!event) return { pubkey, relays: [] };
        const urls = (event.tags ?? []).filter((t) => (t[0] === "relay" || t[0] === "r") && typeof t[1] === "string").map((t) => t[1]);
        return { pubkey, relays: shape(r.FromRelays(urls)) };
      }
      const scenario = p.marker === "write" ? r.FromPubkey(pubkey) : r.ForPubkey(pubkey);
      return { pubkey, relays: shape(scenario) };
    });
    return routesOf(perPubkey, p, max);
  };
}
