// `outbox.publish(relays, event, options)`, nostr-tools' SimplePool.publish contract, in
// Chromium against a real nostr-rs-relay and the fault relay (`/reply/blocked`): one
// promise per relay; OK message on acceptance; `connection failure: …` after `maxWait`
// while the relay is down, with the event still queued and delivered once it is back;
// the relay's `blocked: …` as a final refusal; `duplicate url`; idempotent by event id.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, finalizeEvent } from "nostr-tools/pure";
import { startServer, launch, relay, queryRelay, freePort, IMPORT_PACKAGE } from "./harness.mjs";
import { startFaultRelay } from "./torture/fault-relay.mjs";
import { signedEvents } from "./events.mjs";

let server, browser, nrr, fault, page;
before(async () => {
  server = await startServer();
  browser = await launch();
  nrr = await relay();
  fault = await startFaultRelay();
  if (!fault) throw new Error("tests/fault-relay is not built (scripts/setup.sh builds it)");
  page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  await page.evaluate(async (IMPORT_PACKAGE) => {
    const m = await eval(IMPORT_PACKAGE);
    window.m = m;
    window.outbox = await m.Outbox.open({ name: "publish", connectTimeoutMs: 1000, baseDelayMs: 300, maxDelayMs: 1000, autoFlush: true });
    // Each relay's promise settled, as { ok, value } or { ok: false, error fields }.
    window.settle = (promises) => Promise.all(promises.map((p) => p.then(
      (value) => ({ ok: true, value }),
      (e) => ({ ok: false, name: e.name, message: e.message, queued: e.queued, id: e.id, relay: e.relay, outcome: e.outcome, isError: e instanceof Error, isPublishError: e instanceof m.PublishError }),
    )));
  }, IMPORT_PACKAGE);
});
after(async () => {
  await browser?.close();
  await fault?.stop();
  await nrr?.destroy();
  await server?.close();
});

test("a relay that is down: `connection failure` after maxWait, still queued, delivered when it is back", async () => {
  const [event] = signedEvents(1, { content: () => "publish while down" });
  const down = await page.evaluate(([url, event]) => settle(outbox.publish([url], event, { maxWait: 1500 })), [nrr.url, event]);
  assert.equal(down.length, 1);
  assert.equal(down[0].ok, false, JSON.stringify(down));
  assert.ok(down[0].isError && down[0].isPublishError && down[0].name === "PublishError");
  assert.match(down[0].message, /^connection failure: /);
  assert.match(down[0].message, new RegExp(`still queued as ${event.id}`));
  assert.equal(down[0].queued, true);
  assert.equal(down[0].id, event.id);
  assert.equal(down[0].relay, nrr.url);
  assert.equal(down[0].outcome, "unreachable");

  await nrr.start();
  // Delivered by the outbox's own retry (auto-flush probes the relay): no re-publish.
  const record = await page.evaluate(async (id) => {
    const r = await outbox.get(id);
    if (r.stage === "satisfied") return r;
    return new Promise((ok) => outbox.addEventListener("delivered", (e) => e.detail.id === id && ok(e.detail)));
  }, event.id);
  assert.equal(record.stage, "satisfied");
  assert.equal(record.evidence.filter((e) => e.outcome === "accepted").length, 1);
  const stored = await queryRelay(nrr.url, [event.id]);
  assert.equal(stored.length, 1);
  assert.equal(stored[0].sig, event.sig, "the same signed event, never re-signed");

  // Publishing it again is a replay of the same record, resolved at once from its evidence.
  const again = await page.evaluate(async ([url, event]) => {
    const answers = await settle(outbox.publish([url], event));
    return { answers, status: await outbox.status() };
  }, [nrr.url, event]);
  assert.deepEqual(again.answers, [{ ok: true, value: record.targets[0].latest.message }]);
  assert.equal(again.status.total, 1, "one record");
});

test("one promise per relay: the OK message, the relay's `blocked:` refusal, `duplicate url`", async () => {
  const [event] = signedEvents(1, { content: () => "publish to three" });
  const blocked = `${fault.url}/reply/blocked`;
  const answers = await page.evaluate(
    ([urls, event]) => settle(outbox.publish(urls, event, { policy: { required: [urls[0]] }, maxWait: 5000 })),
    [[nrr.url, blocked, `${nrr.url}/`], event],
  );
  assert.equal(answers.length, 3);
  assert.equal(answers[0].ok, true, JSON.stringify(answers));
  assert.equal(typeof answers[0].value, "string");
  assert.equal(answers[1].ok, false);
  assert.match(answers[1].message, /^blocked: /);
  assert.equal(answers[1].queued, false);
  assert.equal(answers[1].outcome, "rejected");
  assert.equal(answers[2].ok, false);
  assert.equal(answers[2].message, "duplicate url");
});

test("bad input rejects every promise with the OutboxError and stores nothing", async () => {
  const [event] = signedEvents(1);
  const res = await page.evaluate(async ([url, event]) => {
    const before = (await outbox.status()).total;
    const answers = await Promise.allSettled(outbox.publish([url, "https://not-a-relay"], { ...event, sig: "00".repeat(64) }));
    return { codes: answers.map((a) => a.reason?.code), classes: answers.map((a) => a.reason instanceof m.OutboxError), added: (await outbox.status()).total - before };
  }, [nrr.url, event]);
  assert.deepEqual(res.classes, [true, true]);
  assert.deepEqual(res.codes, ["invalid_relay_url", "invalid_relay_url"]);
  assert.equal(res.added, 0);
});

test("a record whose policy is met without a relay: that relay's promise says it was not sent", async () => {
  const [event] = signedEvents(1, { content: () => "any of two" });
  const closed = `ws://127.0.0.1:${await freePort()}`; // nothing listens there
  const answers = await page.evaluate(
    ([urls, event]) => settle(outbox.publish(urls, event, { policy: "any", maxWait: 20_000 })),
    [[nrr.url, closed], event],
  );
  assert.equal(answers[0].ok, true, JSON.stringify(answers));
  assert.equal(answers[1].ok, false);
  assert.match(answers[1].message, /^connection failure: .*\(not sent: the outbox record [0-9a-f]{64} is satisfied\)$/);
  assert.equal(answers[1].queued, false);
});

test("NIP-42: the outbox's signer answers the relay's AUTH; the promise resolves after it", async () => {
  const sk = generateSecretKey();
  await page.exposeFunction("signAuth", (template) => finalizeEvent(template, sk));
  const [event] = signedEvents(1, { content: () => "behind auth" });
  const answers = await page.evaluate(async ([url, event]) => {
    const authed = await m.Outbox.open({ name: "publish-auth", storage: "memory", signer: (t) => window.signAuth(t), autoFlush: true, baseDelayMs: 200, maxDelayMs: 500 });
    const result = await settle(authed.publish([url], event, { maxWait: 15_000 }));
    await authed.close();
    return result;
  }, [`${fault.url}/auth`, event]);
  assert.equal(answers[0].ok, true, JSON.stringify(answers));
});

test("the same event published again to other relays (a rebroadcast) gets a record of its own, replayed after", async () => {
  const [event] = signedEvents(1, { content: () => "rebroadcast" });
  const blocked = `${fault.url}/reply/blocked`;
  const res = await page.evaluate(async ([a, b, event]) => {
    const first = await settle(outbox.publish([a], event));
    const wider = await settle(outbox.publish([a, b], event, { policy: "any" }));
    const again = await settle(outbox.publish([a, b], event, { policy: "any" }));
    return { first, wider, again, ids: [...new Set([await outbox.get(event.id), ...(await outbox.list({ limit: 1000 }))].filter((r) => r?.event.id === event.id).map((r) => r.id))] };
  }, [nrr.url, blocked, event]);
  assert.equal(res.first[0].ok, true, JSON.stringify(res));
  assert.equal(res.wider[0].ok, true, JSON.stringify(res.wider));
  assert.match(res.wider[0].value, /^duplicate:/, "the relay already had it");
  assert.match(res.wider[1].message, /^blocked: /);
  assert.match(res.wider[1].id, new RegExp(`^${event.id}:[0-9a-f]{8}$`));
  assert.deepEqual(res.again, res.wider, "the second rebroadcast is a replay");
  assert.equal(res.ids.length, 2, JSON.stringify(res.ids));
});
