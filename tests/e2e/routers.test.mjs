// The resolvers of js/routers.js against the real libraries (Node, no browser): NDK v3,
// applesauce-core v6 and @welshman/router 0.8. Signed kind 10002 / 10050 lists (nostr-tools)
// go to a real nostr-rs-relay on 127.0.0.1, from which NDK and welshman fetch them; applesauce
// gets them the applesauce way (EventStore.add, or a loader through applesauce-relay).
//
// Cast: author A; recipients B and C share a relay; C has a kind 10002 and NO kind 10050; D
// has 12 relays (for the per-pubkey cap). A dm to C must resolve to [] although C has NIP-65
// relays (the bare welshman router would give them for RelayMode.Messaging, see below).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { relay as startRelay, freePort } from "./harness.mjs";
import { finalizeEvent, generateSecretKey, getPublicKey } from "nostr-tools/pure";
import { Relay as NostrToolsRelay, useWebSocketImplementation } from "nostr-tools/relay";
import NDK from "@nostr-dev-kit/ndk";
import { EventStore } from "applesauce-core";
import { getInboxes, getOutboxes } from "applesauce-core/helpers";
import { getRelaysFromList } from "applesauce-common/helpers";
import { Relay as ApplesauceRelay } from "applesauce-relay";
import { lastValueFrom, toArray } from "rxjs";
import { Router } from "@welshman/router";
import { Repository, Pool, request } from "@welshman/net";
import { ndkResolver, applesauceResolver, welshmanResolver } from "../../js/routers.js";

// NDK and applesauce-relay open sockets with the global WebSocket (Node 20 has none).
globalThis.WebSocket ??= WebSocket;
useWebSocketImplementation(WebSocket);

// NDK 3.0.3 never lets Node exit: every NDKRelay re-arms a 30 s `updateValidationRatio`
// timer forever, and `disconnect()` leaves its reconnect timers armed. So that this file
// ends when its tests do, timers armed from NDK's own code are unref'd (they still fire
// while anything else keeps the process alive; the tests' own timers are untouched).
for (const name of ["setTimeout", "setInterval"]) {
  const original = globalThis[name];
  globalThis[name] = function (...args) {
    const timer = original.apply(this, args);
    if (new Error().stack?.includes("/@nostr-dev-kit/ndk/")) timer?.unref?.();
    return timer;
  };
}

const people = Object.fromEntries(
  ["A", "B", "C", "D"].map((name) => {
    const sk = generateSecretKey();
    return [name, { sk, pk: getPublicKey(sk) }];
  }),
);
const { A, B, C, D } = people;
const now = Math.floor(Date.now() / 1000);
const sign = (who, kind, tags) => finalizeEvent({ kind, created_at: now, tags, content: "" }, who.sk);
const u = (host) => `wss://${host}.example.com/`;

const lists = [
  sign(A, 10002, [["r", u("a-write"), "write"], ["r", u("a-both")], ["r", u("a-read"), "read"]]),
  sign(A, 10050, [["relay", u("a-dm")]]),
  sign(B, 10002, [["r", u("b-read"), "read"], ["r", u("shared")], ["r", u("b-write"), "write"], ["r", u("b-read"), "read"]]),
  // b-dm1 twice (once without the trailing slash): one route.
  sign(B, 10050, [["relay", u("b-dm1")], ["relay", u("b-dm2")], ["relay", u("b-dm1").slice(0, -1)]]),
  sign(C, 10002, [["r", u("c-read"), "read"], ["r", u("shared")], ["r", u("c-write"), "write"]]),
  sign(D, 10002, Array.from({ length: 12 }, (_, i) => ["r", u(`d${i}`)])),
  sign(D, 10050, Array.from({ length: 10 }, (_, i) => ["relay", u(`d-dm${i}`)])),
];

/** What each intent must give for each pubkey (the library may pick a subset when capped). */
const expected = {
  outbox: { [A.pk]: [u("a-write"), u("a-both")] },
  inbox: {
    [B.pk]: [u("b-read"), u("shared")],
    [C.pk]: [u("c-read"), u("shared")],
    [D.pk]: Array.from({ length: 12 }, (_, i) => u(`d${i}`)),
  },
  dm: { [A.pk]: [u("a-dm")], [B.pk]: [u("b-dm1"), u("b-dm2")], [C.pk]: [], [D.pk]: Array.from({ length: 10 }, (_, i) => u(`d-dm${i}`)) },
};

const note = sign(A, 1, [["p", B.pk], ["p", C.pk]]);
const req = (intent, pubkeys) => ({ intent, pubkeys, event: note });
const REASON = /^(write relay|read relay|DM relay) of ([0-9a-f]{8}) \(kind (10002|10050)\)$/;
const sorted = (a) => [...a].sort();

/** Every route has a reason naming a requested pubkey; relays are unique and belong to that pubkey. */
function checkRoutes(routes, intent, pubkeys, max) {
  const relays = routes.map((r) => r.relay);
  assert.equal(new Set(relays).size, relays.length, `duplicate relays: ${relays}`);
  const perPubkey = new Map();
  for (const { relay, reason } of routes) {
    const m = REASON.exec(reason ?? "");
    assert.ok(m, `reason ${JSON.stringify(reason)}`);
    assert.equal(m[1], { outbox: "write relay", inbox: "read relay", dm: "DM relay" }[intent]);
    assert.equal(m[3], intent === "dm" ? "10050" : "10002");
    const pk = pubkeys.find((p) => p.startsWith(m[2]));
    assert.ok(pk, `reason names ${m[2]}, not a requested pubkey`);
    assert.ok(expected[intent][pk].includes(relay), `${relay} is not a ${intent} relay of ${m[2]}`);
    perPubkey.set(pk, (perPubkey.get(pk) ?? 0) + 1);
  }
  for (const [pk, n] of perPubkey) assert.ok(n <= max, `${n} relays for ${pk.slice(0, 8)} > ${max}`);
}

/**
 * The shared assertions. `exactOrder`: the library keeps the list's order (NDK, applesauce),
 * so a capped list is its first relays; welshman's router picks a random weighted subset.
 */
async function checkResolver(make) {
  const resolve = make();
  // outbox: the author's write relays only (a-read is a read relay).
  const outbox = await resolve(req("outbox", [A.pk]));
  checkRoutes(outbox, "outbox", [A.pk], 8);
  assert.deepEqual(sorted(outbox.map((r) => r.relay)), sorted(expected.outbox[A.pk]));
  assert.equal(outbox[0].reason.startsWith(`write relay of ${A.pk.slice(0, 8)}`), true);

  // inbox: the tagged pubkeys' read relays only; "shared" once.
  const inbox = await resolve(req("inbox", [B.pk, C.pk]));
  checkRoutes(inbox, "inbox", [B.pk, C.pk], 8);
  assert.deepEqual(sorted(inbox.map((r) => r.relay)), sorted([u("b-read"), u("shared"), u("c-read")]));

  // dm: exactly B's kind 10050 relays (b-dm1 once).
  const dmB = await resolve(req("dm", [B.pk]));
  checkRoutes(dmB, "dm", [B.pk], 8);
  assert.deepEqual(sorted(dmB.map((r) => r.relay)), sorted(expected.dm[B.pk]));

  // dm to C (a kind 10002, no kind 10050): nothing, never its NIP-65 relays.
  assert.deepEqual(await resolve(req("dm", [C.pk])), []);

  // maxPerPubkey: default 8 of D's 12; 3 when asked; on dm too.
  const inboxD = await resolve(req("inbox", [B.pk, D.pk]));
  checkRoutes(inboxD, "inbox", [B.pk, D.pk], 8);
  assert.equal(inboxD.filter((r) => r.reason.includes(D.pk.slice(0, 8))).length, 8);
  assert.equal(inboxD.length, 10);
  const capped = make({ maxPerPubkey: 3 });
  const inbox3 = await capped(req("inbox", [B.pk, C.pk, D.pk]));
  checkRoutes(inbox3, "inbox", [B.pk, C.pk, D.pk], 3);
  assert.equal(inbox3.filter((r) => r.reason.includes(D.pk.slice(0, 8))).length, 3);
  const dmD = await capped(req("dm", [D.pk]));
  checkRoutes(dmD, "dm", [D.pk], 3);
  assert.equal(dmD.length, 3);
  const cap1 = await make({ maxPerPubkey: 1 })(req("outbox", [A.pk]));
  assert.equal(cap1.length, 1);

  // An author without any list: [] (looked, found nothing); an unknown intent rejects.
  const nobody = getPublicKey(generateSecretKey());
  assert.deepEqual(await resolve(req("outbox", [nobody])), []);
  assert.deepEqual(await resolve(req("dm", [nobody])), []);
  await assert.rejects(resolve(req("broadcast", [A.pk])), TypeError);
  return { outbox, inbox, dmB, inbox3 };
}

let nrr;
let deadUrl;
before(async () => {
  nrr = await startRelay();
  await nrr.start();
  deadUrl = `ws://127.0.0.1:${await freePort()}`;
  const r = await NostrToolsRelay.connect(nrr.url);
  for (const e of lists) await r.publish(e);
  r.close();
});
after(async () => {
  Pool.get().clear();
  await nrr?.destroy();
});

test("NDK: lists fetched with ndk.subscribe from the pool's relays, NDKRelayList read/write URLs", async () => {
  const ndk = new NDK({ explicitRelayUrls: [nrr.url], enableOutboxModel: false });
  await ndk.connect(3000);
  try {
    const { outbox, inbox3 } = await checkResolver((o) => ndkResolver(ndk, { timeout: 3000, ...o }));
    // NDK keeps the list's order: the capped inbox is each list's first relays.
    assert.deepEqual(outbox.map((r) => r.relay), expected.outbox[A.pk]);
    assert.deepEqual(
      inbox3.filter((r) => r.reason.includes(D.pk.slice(0, 8))).map((r) => r.relay),
      expected.inbox[D.pk].slice(0, 3),
    );
  } finally {
    for (const url of [...ndk.pool.relays.keys()]) ndk.pool.removeRelay(url);
  }
});

test("NDK with its outbox model on: lists asked of ndk.outboxPool", async () => {
  const ndk = new NDK({ explicitRelayUrls: [], outboxRelayUrls: [nrr.url] });
  await ndk.connect(3000);
  try {
    const resolve = ndkResolver(ndk, { timeout: 3000 });
    assert.deepEqual(sorted((await resolve(req("dm", [B.pk]))).map((r) => r.relay)), sorted(expected.dm[B.pk]));
    assert.deepEqual(await resolve(req("dm", [C.pk])), []);
  } finally {
    for (const pool of [ndk.pool, ndk.outboxPool]) for (const url of [...pool.relays.keys()]) pool.removeRelay(url);
  }
});

test("NDK: no relay answers → the resolver rejects (cannot tell), not []", async () => {
  const ndk = new NDK({ explicitRelayUrls: [deadUrl], enableOutboxModel: false });
  await ndk.connect(300);
  try {
    const resolve = ndkResolver(ndk, { timeout: 800 });
    await assert.rejects(resolve(req("dm", [B.pk])), /no relay answered/);
    await assert.rejects(resolve(req("outbox", [A.pk])), /no relay answered/);
    // An NDK with no relay at all cannot look either.
    const empty = new NDK({ explicitRelayUrls: [], enableOutboxModel: false });
    await assert.rejects(ndkResolver(empty)(req("inbox", [B.pk])), /no relay to ask/);
  } finally {
    for (const url of [...ndk.pool.relays.keys()]) ndk.pool.removeRelay(url);
  }
  // One relay down, one up: NDK looked (one EOSE), so the answer stands at the timeout.
  const half = new NDK({ explicitRelayUrls: [deadUrl, nrr.url], enableOutboxModel: false });
  await half.connect(300);
  try {
    const resolve = ndkResolver(half, { timeout: 800 });
    assert.deepEqual(sorted((await resolve(req("dm", [B.pk]))).map((r) => r.relay)), sorted(expected.dm[B.pk]));
    assert.deepEqual(await resolve(req("dm", [C.pk])), []);
  } finally {
    for (const url of [...half.pool.relays.keys()]) half.pool.removeRelay(url);
  }
});

test("applesauce: lists added to an EventStore, applesauce's getInboxes/getOutboxes semantics", async () => {
  const eventStore = new EventStore();
  for (const e of lists) eventStore.add(e);
  const { inbox, outbox, dmB } = await checkResolver((o) => applesauceResolver({ eventStore }, o));
  // The copies of applesauce's helpers agree with applesauce's own.
  const helpers = { getInboxes, getOutboxes, getRelaysFromList };
  const own = applesauceResolver({ eventStore }, { helpers });
  assert.deepEqual(await own(req("inbox", [B.pk, C.pk])), inbox);
  assert.deepEqual(await own(req("outbox", [A.pk])), outbox);
  assert.deepEqual(await own(req("dm", [B.pk])), dmB);
  assert.deepEqual(await own(req("dm", [C.pk])), []);
});

test("applesauce: an empty store without loader → []; with a loader (applesauce-relay) the store fills", async () => {
  const eventStore = new EventStore();
  assert.deepEqual(await applesauceResolver({ eventStore })(req("outbox", [A.pk])), []);
  assert.deepEqual(await applesauceResolver({ eventStore })(req("dm", [B.pk])), []);

  const calls = [];
  const relayLoader = (url) => async (pubkey, kind) => {
    calls.push([pubkey, kind]);
    const relay = new ApplesauceRelay(url);
    try {
      const events = await lastValueFrom(
        relay.request({ kinds: [kind], authors: [pubkey] }, { timeout: 1500, reconnect: false }).pipe(toArray()),
      );
      for (const e of events) eventStore.add(e);
    } finally {
      relay.close();
    }
  };
  await checkResolver((o) => applesauceResolver({ eventStore, loader: relayLoader(nrr.url) }, o));
  // Loaded once per missing list: C's kind 10050 stays missing and is asked again each time.
  assert.ok(calls.some(([pk, kind]) => pk === C.pk && kind === 10050));
  assert.equal(calls.filter(([pk, kind]) => pk === A.pk && kind === 10002).length, 1);

  // The loader cannot reach its relay → the resolver rejects.
  const unreachable = applesauceResolver({ eventStore: new EventStore(), loader: relayLoader(deadUrl) });
  await assert.rejects(unreachable(req("dm", [B.pk])));
});

test("welshman: Router.get() over Repository.get(), lists loaded with @welshman/net's request", async () => {
  const repository = Repository.get();
  // Without a loader, a repository that lacks the lists: nothing (the router cannot tell why).
  const bare = welshmanResolver({ router: Router, repository });
  assert.deepEqual(await bare(req("outbox", [A.pk])), []);
  assert.deepEqual(await bare(req("dm", [B.pk])), []);

  // A loader the way @welshman/app loads lists (request → repository.publish), that also
  // says when no relay answered (request's onEose), which welshman's `load` does not.
  const welshmanLoader = (relays) => async (pubkey, kind) => {
    let answered = 0;
    const events = await request({
      relays,
      filters: [{ kinds: [kind], authors: [pubkey] }],
      autoClose: true,
      signal: AbortSignal.timeout(1500),
      onEose: () => answered++,
    });
    for (const e of events) repository.publish(e);
    if (answered === 0) throw new Error(`no relay answered for kind ${kind} of ${pubkey.slice(0, 8)}`);
  };
  await checkResolver((o) => welshmanResolver({ router: Router, repository, loader: welshmanLoader([nrr.url]) }, o));

  // The bare router answers RelayMode.Messaging from kind 10002: C's unmarked NIP-65 relay.
  // That is why dm reads kind 10050 from the repository instead.
  assert.deepEqual(Router.get().MessagesForPubkey(C.pk).getUrls(), [u("shared")]);
  assert.deepEqual(await bare(req("dm", [C.pk])), []);

  // Random weighting: over many calls welshman picks different subsets of D's 12 relays.
  const capped = welshmanResolver({ router: () => Router.get(), repository }, { maxPerPubkey: 3 });
  const picks = new Set();
  for (let i = 0; i < 20; i++) picks.add(sorted((await capped(req("inbox", [D.pk]))).map((r) => r.relay)).join(" "));
  assert.ok(picks.size > 1, "welshman's router chose the same 3 relays 20 times");

  // The loader cannot reach its relay → the resolver rejects.
  const lost = getPublicKey(generateSecretKey());
  const unreachable = welshmanResolver({ router: Router, repository, loader: welshmanLoader([deadUrl]) });
  await assert.rejects(unreachable(req("inbox", [lost])), /no relay answered/);
});
