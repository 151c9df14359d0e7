// The built-in resolver (nostr-outbox/relay-lists) in Node.js, against index relays played by
// a scripted WebSocket class (what each relay sends, and whether it answers at all): only
// events whose id and signature check, of the kind and an author asked for, are used, the
// newest version winning; the cache keeps a list and the absence of one for its TTL and is
// asked again after; no index relay answering is an error unless a list is kept (then the
// kept one is used); `observe` keeps a newer valid list only; `announce` sends the author's
// kind 10002 along to relays a route uses for the first time, once each. Then an outbox
// (memory storage, a recording transport) with the resolver: a record routed `inbox`
// reaches the tagged person's read relays, through the browser entry and the edge entry; a
// list enqueued through an outbox the resolver follows is used at once.
// Run: cd tests/e2e && node --test relay-lists.test.mjs   (needs pkg/ from `make build`)
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { generateSecretKey, getPublicKey, finalizeEvent } from "nostr-tools/pure";

const pkgDir = new URL("../../pkg/", import.meta.url);
let mod, relayListResolver, edge, edgeLists;
before(async () => {
  mod = await import(new URL("index.js", pkgDir));
  await mod.default({ module_or_path: await readFile(new URL("nostr_outbox_bg.wasm", pkgDir)) });
  ({ relayListResolver } = await import(new URL("relay-lists.js", pkgDir)));
  edge = await import(new URL("edge/index.js", pkgDir));
  await edge.default();
  ({ relayListResolver: edgeLists } = await import(new URL("edge/relay-lists.js", pkgDir)));
});

const now = () => Math.floor(Date.now() / 1000);
const list = (sk, kind, tags, created_at = now() - 60) => finalizeEvent({ kind, created_at, tags, content: "" }, sk);

// Index relays: url → the events it holds, or "down". Counts the REQs each receives.
function scriptedRelays(relays) {
  const reqs = [];
  class FakeSocket {
    constructor(url) {
      this.url = url;
      setTimeout(() => (relays[url] === "down" || !relays[url] ? this.onerror?.({}) : this.onopen?.()), 1);
    }
    send(text) {
      const [verb, sub, filter] = JSON.parse(text);
      assert.equal(verb, "REQ");
      reqs.push([this.url, filter]);
      const held = relays[this.url].filter((e) => filter.kinds.includes(e.kind) && filter.authors.includes(e.pubkey));
      setTimeout(() => {
        for (const e of held) this.onmessage?.({ data: JSON.stringify(["EVENT", sub, e]) });
        this.onmessage?.({ data: JSON.stringify(["EOSE", sub]) });
      }, 1);
    }
    close() {}
  }
  return { FakeSocket, reqs };
}

test("lists are verified, the newest wins, kept for their TTL (absence too), and refetched after", async () => {
  const [a, b, c] = [generateSecretKey(), generateSecretKey(), generateSecretKey()];
  const [pa, pb, pc] = [a, b, c].map(getPublicKey);
  const forged = { ...list(b, 10050, [["relay", "wss://evil.example"]], now()), sig: list(a, 10050, []).sig };
  const relays = {
    "wss://index-1.example": [
      list(a, 10050, [["relay", "wss://old.example"]], now() - 3600),
      list(b, 10050, [["relay", "wss://b-dm.example"]]),
      forged, // newer, but its signature is not b's
      list(c, 10002, [["r", "wss://c-read.example", "read"], ["r", "wss://c-write.example", "write"], ["r", "wss://c-both.example"]]),
    ],
    "wss://index-2.example": [list(a, 10050, [["relay", "wss://a-dm.example/"], ["relay", "WSS://A-DM.example"], ["relay", "nope"]])],
  };
  const { FakeSocket, reqs } = scriptedRelays(relays);
  const resolver = relayListResolver({ indexRelays: Object.keys(relays), cache: new Map(), ttlMs: 200, WebSocket: FakeSocket });
  const relaysOf = (routes) => routes.map((r) => r.relay);

  assert.deepEqual(relaysOf(await resolver({ intent: "dm", pubkeys: [pa], event: {} })), ["wss://a-dm.example"], "newest of two relays, normalized, deduped");
  assert.deepEqual(relaysOf(await resolver({ intent: "dm", pubkeys: [pb], event: {} })), ["wss://b-dm.example"], "the forged newer one is ignored");
  assert.deepEqual(await resolver({ intent: "dm", pubkeys: [pc], event: {} }), [], "no kind 10050: none");
  assert.deepEqual(relaysOf(await resolver({ intent: "inbox", pubkeys: [pc], event: {} })), ["wss://c-read.example", "wss://c-both.example"]);
  assert.deepEqual(relaysOf(await resolver({ intent: "outbox", pubkeys: [pc], event: {} })), ["wss://c-write.example", "wss://c-both.example"]);
  const [route] = await resolver({ intent: "dm", pubkeys: [pb], event: {} });
  assert.match(route.reason, new RegExp(`^DM relay of ${pb.slice(0, 8)} \\(kind 10050 of \\d+\\)$`));
  const asked = reqs.length;
  await resolver({ intent: "dm", pubkeys: [pa, pc], event: {} });
  assert.equal(reqs.length, asked, "within the TTL: from the cache, the absence of c's list too");
  await new Promise((r) => setTimeout(r, 250));
  relays["wss://index-1.example"].push(list(c, 10050, [["relay", "wss://c-dm.example"]], now()));
  assert.deepEqual(relaysOf(await resolver({ intent: "dm", pubkeys: [pc], event: {} })), ["wss://c-dm.example"], "after the TTL: asked again");
  assert.ok(reqs.length > asked);
});

test("no index relay answering: an error, unless a list is kept; observe keeps only a newer valid list", async () => {
  const a = generateSecretKey();
  const pa = getPublicKey(a);
  const relays = { "wss://index.example": [list(a, 10050, [["relay", "wss://a-dm.example"]], now() - 100)] };
  const { FakeSocket } = scriptedRelays(relays);
  const cache = new Map();
  const resolver = relayListResolver({ indexRelays: ["wss://index.example"], cache, ttlMs: 1, WebSocket: FakeSocket });
  const stranger = getPublicKey(generateSecretKey());
  relays["wss://index.example"] = "down";
  await assert.rejects(resolver({ intent: "dm", pubkeys: [stranger], event: {} }), /no index relay answered/);
  relays["wss://index.example"] = [list(a, 10050, [["relay", "wss://a-dm.example"]], now() - 100)];
  await resolver({ intent: "dm", pubkeys: [pa], event: {} });
  relays["wss://index.example"] = "down";
  await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual((await resolver({ intent: "dm", pubkeys: [pa], event: {} })).map((r) => r.relay), ["wss://a-dm.example"], "kept past its TTL, used");
  // observe: a newer valid list replaces it; an older one or a forged one does not.
  assert.equal(await resolver.observe(list(a, 10050, [["relay", "wss://older.example"]], now() - 1000)), false);
  assert.equal(await resolver.observe({ ...list(a, 10050, [["relay", "wss://forged.example"]], now()), content: "x" }), false);
  assert.equal(await resolver.observe(list(a, 10050, [["relay", "wss://newer.example"]], now())), true);
  assert.equal((await resolver.lists(10050, [pa])).get(pa).tags[0][1], "wss://newer.example");
  // A Durable Object's storage shape (get/put) works as the cache too.
  const stored = new Map();
  const doStorage = { get: async (k) => stored.get(k), put: async (k, v) => void stored.set(k, v) };
  relays["wss://index.example"] = [list(a, 10050, [["relay", "wss://a-dm.example"]])];
  const r2 = relayListResolver({ indexRelays: ["wss://index.example"], cache: doStorage, WebSocket: FakeSocket });
  assert.equal((await r2({ intent: "dm", pubkeys: [pa], event: {} })).length, 1);
  assert.ok(stored.has(`10050:${pa}`));
  assert.throws(() => relayListResolver({ indexRelays: [] }), TypeError);
  assert.throws(() => relayListResolver({ indexRelays: ["http://x"] }), (e) => e.code === "invalid_relay_url");
});

for (const entry of ["browser", "edge"]) {
  test(`an outbox routes with it (${entry} entry): \`inbox\` reaches the tagged person's read relays; announce sends the author's kind 10002 along once`, async () => {
    const m = entry === "browser" ? mod : edge;
    const lists = entry === "browser" ? relayListResolver : edgeLists;
    const [me, you] = [generateSecretKey(), generateSecretKey()];
    const relays = {
      "wss://index.example": [
        list(you, 10002, [["r", "wss://your-read.example", "read"], ["r", "wss://your-write.example", "write"]]),
        list(me, 10002, [["r", "wss://my-write.example", "write"]]),
      ],
    };
    const { FakeSocket } = scriptedRelays(relays);
    const published = [];
    const transport = { publish: async (relay, event) => (published.push([relay, JSON.parse(event).kind]), { ok: true, message: "" }) };
    const storage = entry === "browser" ? "memory" : (await import(new URL("memory-storage.js", pkgDir))).memoryStorage();
    const resolver = lists({ indexRelays: ["wss://index.example"], cache: new Map(), WebSocket: FakeSocket });
    const outbox = await m.Outbox.open({ storage, transport, resolver });
    const reply = finalizeEvent({ kind: 1, created_at: now(), tags: [["p", getPublicKey(you)]], content: "hi" }, me);
    const first = await outbox.enqueue(reply, [], { route: ["inbox", "outbox"] });
    assert.equal(first.record.stage, "draft");
    await outbox.flush();
    const record = await outbox.get(reply.id);
    assert.equal(record.stage, "satisfied");
    assert.deepEqual(record.targets.map((t) => t.relay), ["wss://my-write.example", "wss://your-read.example"]);
    assert.deepEqual(published.filter(([, k]) => k === 1).map(([r]) => r).sort(), ["wss://my-write.example", "wss://your-read.example"]);
    await outbox.close();

    // announce: my kind 10002 goes along to the relays a route sends to the first time.
    const sent = [];
    const t2 = { publish: async (relay, event) => (sent.push([relay, JSON.parse(event).kind]), { ok: true, message: "" }) };
    const announcing = lists({ indexRelays: ["wss://index.example"], cache: new Map(), WebSocket: FakeSocket });
    const o3 = await m.Outbox.open({ storage: entry === "browser" ? "memory" : (await import(new URL("memory-storage.js", pkgDir))).memoryStorage(), transport: t2, resolver: announcing });
    announcing.announce = o3;
    const r1 = finalizeEvent({ kind: 1, created_at: now(), tags: [["p", getPublicKey(you)]], content: "one" }, me);
    const r2 = finalizeEvent({ kind: 1, created_at: now() + 1, tags: [["p", getPublicKey(you)]], content: "two" }, me);
    await o3.enqueue(r1, [], { route: ["inbox"] });
    await o3.flush();
    await new Promise((r) => setTimeout(r, 20)); // the announcement is enqueued a task later
    await o3.enqueue(r2, [], { route: ["inbox"] });
    await o3.flush();
    await new Promise((r) => setTimeout(r, 20));
    await o3.flush();
    const announced = (await o3.list()).filter((r) => r.event.kind === 10002);
    assert.equal(announced.length, 1, "once per relay");
    assert.deepEqual(announced[0].targets.map((t) => t.relay), ["wss://your-read.example"]);
    assert.deepEqual(sent.filter(([, k]) => k === 10002), [["wss://your-read.example", 10002]]);
    await o3.close();
  });
}

for (const entry of ["browser", "edge"]) {
  test(`follow (${entry} entry): a list enqueued through the outbox is used at once, before the kept one's TTL`, async () => {
    const m = entry === "browser" ? mod : edge;
    const lists = entry === "browser" ? relayListResolver : edgeLists;
    const me = generateSecretKey();
    const pk = getPublicKey(me);
    const relays = { "wss://index.example": [list(me, 10002, [["r", "wss://old-write.example", "write"]], now() - 600)] };
    const { FakeSocket, reqs } = scriptedRelays(relays);
    const resolver = lists({ indexRelays: ["wss://index.example"], cache: new Map(), WebSocket: FakeSocket });
    const storage = entry === "browser" ? "memory" : (await import(new URL("memory-storage.js", pkgDir))).memoryStorage();
    const transport = { publish: async () => ({ ok: true, message: "" }) };
    const outbox = await m.Outbox.open({ storage, transport, resolver, autoFlush: false });
    const relaysOf = async () => (await resolver({ intent: "outbox", pubkeys: [pk], event: {} })).map((r) => r.relay);
    assert.deepEqual(await relaysOf(), ["wss://old-write.example"]);
    // Not followed yet: a list enqueued is not seen.
    const newer = list(me, 10002, [["r", "wss://new-write.example", "write"]], now() - 60);
    await outbox.enqueue(newer, ["wss://somewhere.example"]);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(await relaysOf(), ["wss://old-write.example"]);
    resolver.follow(outbox);
    resolver.follow(outbox); // once is enough
    const newest = list(me, 10002, [["r", "wss://newest-write.example", "write"]], now());
    await outbox.enqueue(newest, ["wss://somewhere.example"]);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(await relaysOf(), ["wss://newest-write.example"]);
    assert.equal(reqs.length, 1, "from the cache: no index relay asked again");
    // An older list enqueued later does not replace it.
    await outbox.enqueue(list(me, 10002, [["r", "wss://stale.example", "write"]], now() - 3600), ["wss://somewhere.example"]).catch(() => {});
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(await relaysOf(), ["wss://newest-write.example"]);
    await outbox.close();
  });
}
