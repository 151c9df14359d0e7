// Routing intents, in Chromium (IndexedDB) against real nostr-rs-relays: an index relay holds
// the kind 10002 and 10050 lists of three recipients and of the sender; the third recipient
// has a kind 10002 but no kind 10050. One NIP-17 message to the three, gift-wrapped by
// nostr-tools (four wraps with the copy to self), is enqueued as one group with
// `route: ["dm"]` and no relays, and the outbox's resolver is the built-in
// `relayListResolver` (nostr-outbox/relay-lists) over the index relay. Each wrap reaches
// exactly its recipient's DM relays, byte for byte (same id and sig: nothing re-signed); the
// one without a kind 10050 ends `recipientNotReady` and is sent nowhere (not to its NIP-65
// relays); the evidence says which relay was chosen and why. Then a resolver that fails,
// then answers: the record waits (no attempt counted) and is delivered after its backoff;
// the built-in resolver with its index relay down makes the record wait too. Bad input
// is typed and stores nothing.
// Run: cd tests/e2e && node --test routes.test.mjs   (needs pkg/ from `make build`)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, getPublicKey, finalizeEvent } from "nostr-tools/pure";
import { wrapManyEvents } from "nostr-tools/nip17";
import WebSocket from "ws";
import { startServer, launch, relay, queryRelay, IMPORT_PACKAGE } from "./harness.mjs";

let server, browser, index, relays;
before(async () => {
  server = await startServer();
  browser = await launch();
  index = await relay();
  relays = [await relay(), await relay(), await relay()];
  await Promise.all([index, ...relays].map((r) => r.start()));
});
after(async () => {
  await browser?.close();
  await Promise.all([index, ...(relays ?? [])].filter(Boolean).map((r) => r.destroy()));
  await server?.close();
});

// Publishes `event` to `url` and waits for its OK.
async function publish(url, event) {
  const ws = new WebSocket(url);
  await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`no OK from ${url}`)), 5000);
    ws.onopen = () => ws.send(JSON.stringify(["EVENT", event]));
    ws.onmessage = (m) => {
      const msg = JSON.parse(m.data);
      if (msg[0] === "OK" && msg[1] === event.id) {
        clearTimeout(timer);
        msg[2] ? ok() : fail(new Error(`refused: ${msg[3]}`));
      }
    };
    ws.onerror = () => fail(new Error(`cannot reach ${url}`));
  });
  ws.close();
}

const list = (sk, kind, tags, created_at = Math.floor(Date.now() / 1000) - 60) =>
  finalizeEvent({ kind, created_at, tags, content: "" }, sk);

test("a DM to three recipients routed by their kind 10050: each wrap to its own DM relays, the one without a list `recipientNotReady`", async () => {
  const [r0, r1, r2] = relays.map((r) => r.url);
  const sender = generateSecretKey();
  const keys = [generateSecretKey(), generateSecretKey(), generateSecretKey()];
  const recipients = keys.map((k) => ({ publicKey: getPublicKey(k) }));
  // Self's DM relay r2; A's r0; B's r1 and r2 (an older list said r0: the newest wins);
  // C has NIP-65 relays (r0, r1) but no kind 10050.
  for (const e of [
    list(sender, 10050, [["relay", r2]]),
    list(keys[0], 10050, [["relay", r0]]),
    list(keys[1], 10050, [["relay", r0]], Math.floor(Date.now() / 1000) - 3600),
    list(keys[1], 10050, [["relay", r1], ["relay", r2], ["relay", "not a url"]]),
    list(keys[0], 10002, [["r", r1]]),
    list(keys[2], 10002, [["r", r0], ["r", r1, "read"]]),
  ]) {
    await publish(index.url, e);
  }
  const wraps = wrapManyEvents(sender, recipients, "routed by their lists");
  assert.equal(wraps.length, 4); // [self, A, B, C]
  const page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  const out = await page.evaluate(async ([IMPORT_PACKAGE, wraps, indexUrl]) => {
    const m = await eval(IMPORT_PACKAGE);
    const { relayListResolver } = await import("/pkg/relay-lists.js");
    const resolver = relayListResolver({ indexRelays: [indexUrl], cache: new Map() });
    const outbox = await m.Outbox.open({ name: `routes-${Math.random()}`, resolver });
    const code = (p) => p.then(() => null, (e) => `${e.code}:${e.details?.field ?? e.details?.argument ?? e.details?.option ?? ""}:${e.details?.index ?? ""}`);
    const bad = {
      unknownIntent: await code(outbox.enqueue(wraps[0], [], { route: ["dms"] })),
      notAnArray: await code(outbox.enqueue(wraps[0], [], { route: "dm" })),
      noRelaysNoRoute: await code(outbox.enqueue(wraps[0], [])),
      badMember: await code(outbox.enqueueGroup(wraps.map((event, i) => ({ event, relays: [], route: i === 2 ? ["dm", 7] : ["dm"] })), { group: "dm-r" })),
      badResolver: await code(m.Outbox.open({ name: "routes-bad", storage: "memory", resolver: "index" })),
    };
    const storedAfterBad = (await outbox.status()).total;
    const first = await outbox.enqueueGroup(wraps.map((event) => ({ event, relays: [], route: ["dm"] })), { group: "dm-r" });
    const waiting = (await outbox.group("dm-r")).members.map((r) => [r.stage, r.route, r.routed, r.targets.length]);
    let status = await outbox.group("dm-r");
    for (let i = 0; i < 20 && status.state === "sending"; i++) {
      await outbox.flush();
      status = await outbox.group("dm-r");
    }
    const pick = (g) => ({ state: g.state, delivered: g.delivered, failed: g.failed, open: g.open });
    return {
      bad, storedAfterBad,
      first: first.results.map((r) => r.disposition),
      waiting,
      status: pick(status),
      members: status.members.map((r) => ({
        stage: r.stage, reason: r.reason, event: r.event, routed: r.routed,
        relays: r.targets.map((t) => [t.relay, t.state]),
        why: r.evidence.filter((e) => e.relay === "resolver").map((e) => [e.outcome, e.message]),
      })),
    };
  }, [IMPORT_PACKAGE, wraps, index.url]);

  assert.deepEqual(out.bad, {
    unknownIntent: "invalid_argument:route:",
    notAnArray: "invalid_argument:route:",
    noRelaysNoRoute: "invalid_targets::",
    badMember: "invalid_argument:route:2",
    badResolver: "invalid_options:resolver:",
  });
  assert.equal(out.storedAfterBad, 0, "refused input stored nothing");
  assert.deepEqual(out.first, ["created", "created", "created", "created"]);
  for (const w of out.waiting) assert.deepEqual(w, ["draft", ["dm"], null, 0], "waits for its resolution");

  assert.deepEqual(out.status, { state: "partial", delivered: 3, failed: 1, open: 0 });
  const want = [[r2], [r0], [r1, r2], []];
  for (const [i, m] of out.members.entries()) {
    assert.deepEqual(m.event, JSON.parse(JSON.stringify(wraps[i])), `wrap ${i} stored as wrapped`);
    assert.deepEqual(m.relays, want[i].map((u) => [u, "accepted"]).sort(), `wrap ${i}'s targets`);
    if (i < 3) {
      assert.equal(m.stage, "satisfied");
      assert.deepEqual([...m.routed].sort(), [...want[i]].sort());
      assert.deepEqual(m.why.map(([o]) => o), want[i].map(() => "accepted"));
      for (const [j, u] of want[i].entries()) {
        assert.match(m.why[j][1], new RegExp(`^${u.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} dm: DM relay of [0-9a-f]{8} \\(kind 10050 of \\d+\\)$`));
      }
    } else {
      assert.deepEqual([m.stage, m.reason, m.routed], ["exhausted", "recipientNotReady", null]);
      assert.deepEqual(m.why.map(([o]) => o), ["rejected"]);
      assert.match(m.why[0][1], new RegExp(`^${recipients[2].publicKey} has no DM relays`));
    }
  }
  // Each wrap is on exactly its recipient's DM relays, with the id and sig it was wrapped
  // with; C's (no kind 10050) is on none, not on its NIP-65 relays either.
  for (const [r, url] of [r0, r1, r2].entries()) {
    const held = await queryRelay(url, wraps.map((w) => w.id));
    const expected = wraps.filter((_, i) => want[i].includes(url));
    assert.deepEqual(
      held.map((e) => [e.id, e.sig]).sort(),
      expected.map((e) => [e.id, e.sig]).sort(),
      `relay ${r}`,
    );
  }
  await page.close();
});

test("a resolver that fails, then answers: the record waits without spending an attempt, then goes where it says; an index relay that is down makes it wait", async () => {
  const [r0] = relays.map((r) => r.url);
  const author = generateSecretKey();
  const note = finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content: "routed later" }, author);
  const page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  const out = await page.evaluate(async ([IMPORT_PACKAGE, note, r0]) => {
    const m = await eval(IMPORT_PACKAGE);
    const { relayListResolver } = await import("/pkg/relay-lists.js");
    const asked = [];
    const resolver = async (request) => {
      asked.push([request.intent, request.pubkeys]);
      if (asked.length === 1) throw new Error("index relays unreachable");
      return [{ relay: r0 + "/", reason: "my write relay" }, "wss://bad host", { relay: r0, reason: "again" }];
    };
    const outbox = await m.Outbox.open({ name: `routes-fail-${Math.random()}`, resolver, baseDelayMs: 300, maxDelayMs: 300 });
    await outbox.enqueue(note, [], { route: ["outbox"] });
    await outbox.flush();
    const waited = await outbox.get(note.id);
    await new Promise((r) => setTimeout(r, 400));
    await outbox.flush();
    const done = await outbox.get(note.id);
    // The built-in resolver, its index relay down: the record waits.
    const down = await m.Outbox.open({
      name: `routes-down-${Math.random()}`,
      resolver: relayListResolver({ indexRelays: ["ws://127.0.0.1:9/"], cache: new Map(), timeoutMs: 500 }),
    });
    await down.enqueue(note, [], { route: ["outbox"] });
    await down.flush();
    const stuck = await down.get(note.id);
    const view = (r) => ({
      stage: r.stage, attempts: r.attempts, routed: r.routed,
      relays: r.targets.map((t) => [t.relay, t.state]),
      why: r.evidence.filter((e) => e.relay === "resolver").map((e) => [e.outcome, e.message]),
      due: r.nextAttemptAt !== null,
    });
    return { asked, waited: view(waited), done: view(done), stuck: view(stuck) };
  }, [IMPORT_PACKAGE, note, r0]);

  assert.deepEqual(out.asked, [["outbox", [note.pubkey]], ["outbox", [note.pubkey]]]);
  assert.deepEqual(out.waited.stage, "draft");
  assert.equal(out.waited.attempts, 0, "no attempt spent");
  assert.deepEqual(out.waited.why, [["unreachable", "resolver failed: Error: index relays unreachable"]]);
  assert.equal(out.waited.due, true);
  assert.deepEqual(out.done.relays, [[r0, "accepted"]], "one relay: normalized, repeats and invalid URLs left out");
  assert.equal(out.done.stage, "satisfied");
  assert.deepEqual(out.done.routed, [r0]);
  assert.deepEqual(out.done.why.map(([o]) => o), ["unreachable", "accepted", "accepted"]);
  assert.equal(out.done.why[1][1], `${r0} outbox: my write relay`);
  const held = await queryRelay(r0, [note.id]);
  assert.deepEqual(held.map((e) => e.sig), [note.sig], "the event as signed");
  assert.equal(out.stuck.stage, "draft");
  assert.equal(out.stuck.attempts, 0);
  assert.match(out.stuck.why[0][1], /no index relay answered/);
  await page.close();
});
