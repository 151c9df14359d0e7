// Groups, in Chromium (IndexedDB) against real nostr-rs-relays: one NIP-17 message to three
// recipients, gift-wrapped by nostr-tools (four wraps with the copy to self), enqueued as one
// group, each wrap for its own recipient's DM relay. The relay of the third recipient (the
// fault relay's `/reply/blocked`) refuses everything for good. Each wrap reaches exactly its relay, byte for byte (same id and sig,
// never re-wrapped or re-signed); the group ends "partial", delivered to 3 of 4, and `group`
// events tell it; `retryGroup` re-arms only the failed member, `cancelGroup` only what is
// open; the same group again is a replay; bad input is typed and stores nothing. Another tab
// of the same outbox, which flushes nothing, hears the group's `group` events too.
// Run: cd tests/e2e && node --test groups.test.mjs   (needs pkg/ from `make build`)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, getPublicKey } from "nostr-tools/pure";
import { wrapManyEvents } from "nostr-tools/nip17";
import { startServer, launch, relay, queryRelay, IMPORT_PACKAGE } from "./harness.mjs";
import { startFaultRelay } from "./torture/fault-relay.mjs";

let server, browser, relays, fault;
before(async () => {
  server = await startServer();
  browser = await launch();
  // Self, recipients 1 and 2; recipient 3's relay refuses everything (`blocked:`).
  relays = [await relay(), await relay(), await relay()];
  await Promise.all(relays.map((r) => r.start()));
  fault = await startFaultRelay();
  assert.ok(fault, "the fault relay is built (scripts/setup.sh)");
});
after(async () => {
  await browser?.close();
  await Promise.all((relays ?? []).map((r) => r.destroy()));
  await fault?.stop();
  await server?.close();
});

test("a gift-wrapped message to three recipients is one group: each wrap to its own relay, byte for byte, 3 of 4 delivered", async () => {
  const sender = generateSecretKey();
  const recipients = [1, 2, 3].map(() => ({ publicKey: getPublicKey(generateSecretKey()) }));
  const wraps = wrapManyEvents(sender, recipients, "hello, three of you");
  assert.equal(wraps.length, 4); // the copy to self first
  const urls = [...relays.map((r) => r.url), `${fault.url}/reply/blocked`];
  const page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  const out = await page.evaluate(async ([IMPORT_PACKAGE, wraps, urls]) => {
    const m = await eval(IMPORT_PACKAGE);
    const outbox = await m.Outbox.open({ name: `groups-${Math.random()}` });
    const groups = [];
    outbox.addEventListener("group", (e) => groups.push(e.detail));
    const code = (p) => p.then(() => null, (e) => `${e.code}:${e.details?.field ?? e.details?.argument ?? e.details?.option ?? ""}:${e.details?.index ?? ""}`);
    const items = wraps.map((event, i) => ({ event, relays: [urls[i]], maxAttempts: 2 }));
    const bad = {
      empty: await code(outbox.enqueueGroup([], { group: "dm-1" })),
      withId: await code(outbox.enqueueGroup([items[0], { ...items[1], id: "mine" }], { group: "dm-1" })),
      badGroup: await code(outbox.enqueueGroup(items, { group: "dm 1" })),
      unknownOption: await code(outbox.enqueueGroup(items, { grop: "dm-1" })),
      badRelay: await code(outbox.enqueueGroup([items[0], { ...items[1], relays: ["http://x"] }], { group: "dm-1" })),
      badSig: await code(outbox.enqueueGroup([items[0], { ...items[1], event: { ...wraps[1], sig: wraps[0].sig } }], { group: "dm-1" })),
      notFound: await code(outbox.cancelGroup("dm-1")),
    };
    const storedAfterBad = (await outbox.status()).total;
    const missing = await outbox.group("dm-1");
    const first = await outbox.enqueueGroup(items, { group: "dm-1" });
    const again = await outbox.enqueueGroup(items, { group: "dm-1" });
    const conflict = await code(outbox.enqueueGroup(items.slice(0, 3), { group: "dm-1" }));
    // Flush until no member is open (the refused one ends after its refusal).
    let status = await outbox.group("dm-1");
    for (let i = 0; i < 20 && status.state === "sending"; i++) {
      await outbox.flush();
      status = await outbox.group("dm-1");
    }
    await new Promise((r) => setTimeout(r, 50)); // the flush's `group` events come shortly after
    const afterFlush = groups.length;
    const retried = await outbox.retryGroup("dm-1");
    const cancelled = await outbox.cancelGroup("dm-1");
    await new Promise((r) => setTimeout(r, 50)); // and its `group` event
    const pick = (g) => g && { id: g.id, size: g.size, state: g.state, delivered: g.delivered, failed: g.failed, open: g.open, missing: g.missing };
    return {
      bad, storedAfterBad, missing,
      first: { id: first.id, ids: first.results.map((r) => r.id), dispositions: first.results.map((r) => r.disposition), group: pick(first.group) },
      again: again.results.map((r) => r.disposition),
      conflict,
      status: pick(status),
      members: status.members.map((r) => ({ id: r.id, stage: r.stage, group: r.group, event: r.event, relays: r.targets.map((t) => [t.relay, t.state]) })),
      events: groups.slice(0, afterFlush).map(pick),
      retried: pick(retried),
      retriedStages: retried.members.map((r) => r.stage),
      cancelled: pick(cancelled),
      cancelledStages: cancelled.members.map((r) => r.stage),
      lastEvent: pick(groups.at(-1)),
    };
  }, [IMPORT_PACKAGE, wraps, urls]);

  assert.deepEqual(out.bad, {
    empty: "invalid_argument:group:",
    withId: "invalid_argument:id:1",
    badGroup: "invalid_item_id::",
    unknownOption: "invalid_options:grop:",
    badRelay: "invalid_relay_url::1",
    badSig: "invalid_event:sig:1",
    notFound: "not_found::",
  });
  assert.equal(out.storedAfterBad, 0, "refused groups stored nothing");
  assert.equal(out.missing, null);
  assert.deepEqual(out.first.ids, ["dm-1:0", "dm-1:1", "dm-1:2", "dm-1:3"]);
  assert.deepEqual(out.first.dispositions, ["created", "created", "created", "created"]);
  assert.deepEqual(out.first.group, { id: "dm-1", size: 4, state: "sending", delivered: 0, failed: 0, open: 4, missing: 0 });
  assert.deepEqual(out.again, ["replay", "replay", "replay", "replay"]);
  assert.equal(out.conflict, "plan_conflict::");

  // Delivered to 3 of 4: the one whose relay refuses failed for good.
  assert.deepEqual(out.status, { id: "dm-1", size: 4, state: "partial", delivered: 3, failed: 1, open: 0, missing: 0 });
  for (const [i, m] of out.members.entries()) {
    assert.deepEqual(m.group, { id: "dm-1", index: i, size: 4 });
    assert.deepEqual(m.event, JSON.parse(JSON.stringify(wraps[i])), "stored as wrapped");
    assert.deepEqual(m.relays, [[urls[i], i === 3 ? "rejected" : "accepted"]]);
    assert.equal(m.stage, i === 3 ? "exhausted" : "satisfied");
  }
  // Each wrap is on exactly its recipient's relay, with the id and sig it was wrapped with.
  for (const [r, url] of [...urls.slice(0, 3), fault.url].entries()) {
    const held = await queryRelay(url, wraps.map((w) => w.id));
    const want = r === 3 ? [] : [wraps[r]];
    assert.deepEqual(held.map((e) => [e.id, e.sig]), want.map((e) => [e.id, e.sig]), `relay ${r}`);
  }
  // `group` events: the enqueue's, then the flush's, the last of them the outcome.
  assert.deepEqual([out.events[0].id, out.events[0].size, out.events[0].state], ["dm-1", 4, "sending"]);
  assert.deepEqual(out.events.at(-1), out.status);
  assert.ok(out.events.length >= 2);
  // retryGroup re-arms the failed member only; cancelGroup then cancels it (the only open one).
  assert.deepEqual(out.retried, { id: "dm-1", size: 4, state: "sending", delivered: 3, failed: 0, open: 1, missing: 0 });
  assert.deepEqual(out.retriedStages.slice(0, 3), ["satisfied", "satisfied", "satisfied"]);
  assert.deepEqual(out.cancelled, { id: "dm-1", size: 4, state: "partial", delivered: 3, failed: 1, open: 0, missing: 0 });
  assert.deepEqual(out.cancelledStages, ["satisfied", "satisfied", "satisfied", "cancelled"]);
  assert.deepEqual(out.lastEvent, out.cancelled);
  await page.close();
});

test("another tab of the same outbox hears the group: its `group` events follow the flusher's changes", async () => {
  const sender = generateSecretKey();
  const wraps = wrapManyEvents(sender, [{ publicKey: getPublicKey(generateSecretKey()) }], "across tabs");
  const urls = [relays[0].url, `${fault.url}/reply/blocked`];
  const name = `groups-tabs-${Math.random()}`;
  const open = async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
    await page.evaluate(async ([IMPORT_PACKAGE, name]) => {
      const m = await eval(IMPORT_PACKAGE);
      window.outbox = await m.Outbox.open({ name });
      window.told = [];
      outbox.addEventListener("group", (e) => told.push([e.detail.state, e.detail.delivered, e.detail.failed, e.detail.open]));
    }, [IMPORT_PACKAGE, name]);
    return page;
  };
  const [a, b] = [await open(), await open()];
  await a.evaluate(async ([wraps, urls]) => {
    await outbox.enqueueGroup(wraps.map((event, i) => ({ event, relays: [urls[i]] })), { group: "dm-tabs" });
    await outbox.flush();
  }, [wraps, urls]);
  // Tab b flushed nothing: it hears the relayed changes and reads the group itself.
  let told = [];
  for (let i = 0; i < 50 && JSON.stringify(told.at(-1)) !== JSON.stringify(["partial", 1, 1, 0]); i++) {
    await new Promise((r) => setTimeout(r, 100));
    told = await b.evaluate(() => told);
  }
  assert.deepEqual(told.at(-1), ["partial", 1, 1, 0], JSON.stringify(told));
  // Each one the group as it was then: its two members counted once.
  for (const [, delivered, failed, open] of told) assert.equal(delivered + failed + open, 2, JSON.stringify(told));
  await a.close();
  await b.close();
});
