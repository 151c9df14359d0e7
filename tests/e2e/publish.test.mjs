// `outbox.publish(relays, event, options)`, nostr-tools' SimplePool.publish contract, in
// Chromium against real nostr-rs-relays and the fault relay (`/reply/blocked`): one
// promise per relay; OK message on acceptance; `connection failure: …` at once while the
// relay is down (not after `maxWait`), with the event still queued and delivered once it is
// back, with no call from the app; the relay's `blocked: …` as a final refusal; `duplicate
// url`; idempotent by event id; relay URLs read by the .wasm's own normalizer (awkward URLs
// settle from the relay's answer).
//
// "Promptly" is checked by causality, never by elapsed time: a promise that must settle
// from the relay's answer gets a `maxWait` (SLOW) far beyond the test's own timeout, so
// waiting for `maxWait` would fail the test.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { generateSecretKey, finalizeEvent } from "nostr-tools/pure";
import { startServer, launch, relay, queryRelay, IMPORT_PACKAGE, ROOT } from "./harness.mjs";
import { startFaultRelay } from "./torture/fault-relay.mjs";
import { signedEvents } from "./events.mjs";

/** A `maxWait` no test waits for: its tests time out long before it. */
const SLOW = 600_000;
/** The test's own timeout (ms) where a promise must settle from a relay's answer. */
const PROMPT = 60_000;

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
    // No autoFlush: publish() must turn it on itself (the first test checks).
    window.outbox = await m.Outbox.open({ name: "publish", connectTimeoutMs: 1000, baseDelayMs: 300, maxDelayMs: 1000 });
    // Each relay's promise settled, as { ok, value } or { ok: false, error fields }.
    window.settle = (promises) => Promise.all(promises.map((p) => p.then(
      (value) => ({ ok: true, value }),
      (e) => ({ ok: false, name: e.name, code: e.code, message: e.message, queued: e.queued, id: e.id, relay: e.relay, outcome: e.outcome, detail: e.detail, stage: e.stage, reason: e.reason, isError: e instanceof Error, isPublishError: e instanceof m.PublishError }),
    )));
    // The record `id` once its target `url` accepted (at once if it has), by the outbox's own
    // delivery: nothing here publishes or flushes.
    window.acceptedBy = async (id, url) => {
      const relay = m.normalizeRelayUrl(url);
      const done = (r) => r?.targets.find((t) => t.relay === relay)?.state === "accepted";
      return new Promise((ok) => {
        const on = (e) => {
          if (e.detail.id === id && done(e.detail)) {
            outbox.removeEventListener("change", on);
            ok(e.detail);
          }
        };
        outbox.addEventListener("change", on);
        outbox.get(id).then((r) => {
          if (done(r)) {
            outbox.removeEventListener("change", on);
            ok(r);
          }
        });
      });
    };
  }, IMPORT_PACKAGE);
});
after(async () => {
  await browser?.close();
  await fault?.stop();
  await nrr?.destroy();
  await server?.close();
});

/** Asserts a down relay's rejection: nostr-tools' words, the outbox's in the properties. */
function assertDown(answer, { relay, id, queued = true }) {
  assert.equal(answer.ok, false, JSON.stringify(answer));
  assert.ok(answer.isError && answer.isPublishError && answer.name === "PublishError");
  assert.match(answer.message, /^connection failure: connection (failed|timed out)$/, "nostr-tools' words, no internals");
  assert.equal(answer.queued, queued, JSON.stringify(answer));
  assert.equal(answer.id, id);
  assert.equal(answer.relay, relay);
  assert.equal(answer.outcome, "unreachable");
  assert.equal(typeof answer.detail, "string", "the transport's own message");
  assert.ok(answer.detail.length > 0);
}

test("a relay that is down: `connection failure` at once (not after maxWait), still queued, delivered when it is back", { timeout: PROMPT }, async () => {
  const [event] = signedEvents(1, { content: () => "publish while down" });
  const [down, autoFlush] = await page.evaluate(async ([url, event, maxWait]) => {
    const before = outbox.autoFlush;
    const answers = await settle(outbox.publish([url], event, { maxWait }));
    return [answers, { before, after: outbox.autoFlush }];
  }, [nrr.url, event, SLOW]);
  assert.deepEqual(autoFlush, { before: false, after: true }, "publish() turns auto-flush on so the event reaches the relay later");
  assert.equal(down.length, 1);
  assertDown(down[0], { relay: nrr.url, id: event.id });
  assert.equal(down[0].stage === "satisfied" || down[0].stage === "exhausted", false, "the record is still delivered");

  await nrr.start();
  // Delivered by the outbox's own retry (auto-flush probes the relay): no re-publish.
  const record = await page.evaluate(([id, url]) => acceptedBy(id, url), [event.id, nrr.url]);
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

// Relay a accepts, b refuses for good (`blocked:`), c is down; under the outbox's default
// policy ("all": b's refusal means it can no longer be satisfied) and under "any" (a's
// acceptance satisfies it). The assertions marked [delivery goes on] need the core to keep
// delivering to open targets after the record's policy is settled (issue 38, point 1): with a
// core that stops there, c's promise rejects with `queued: false` and c never gets the event.
for (const policy of [undefined, "any"]) {
  test(`a accepts, b refuses, c is down (policy ${policy ?? "default"}): a resolves, b rejects \`blocked:\`, c rejects at once, queued, and gets the event once back`, { timeout: PROMPT }, async () => {
    await nrr.start();
    const c = await relay();
    try {
      const [event] = signedEvents(1, { content: () => `a, b, c under ${policy}` });
      const tag = `three-${policy ?? "default"}`;
      const blocked = `${fault.url}/reply/blocked?t=${tag}`;
      const answers = await page.evaluate(
        ([urls, event, options]) => settle(outbox.publish(urls, event, options)),
        [[nrr.url, blocked, c.url], event, policy ? { policy, maxWait: SLOW } : { maxWait: SLOW }],
      );
      assert.equal(answers.length, 3);
      assert.equal(answers[0].ok, true, JSON.stringify(answers));
      assert.equal(typeof answers[0].value, "string");
      assert.equal(answers[1].ok, false);
      assert.match(answers[1].message, /^blocked: /);
      assert.equal(answers[1].queued, false);
      assert.equal(answers[1].outcome, "rejected");
      assert.equal(answers[1].detail, answers[1].message);
      // c settled from its connection failure, while it was down (it is started below) and
      // long before maxWait (SLOW). [delivery goes on]: queued, the record still delivered.
      assertDown(answers[2], { relay: c.url, id: event.id });
      assert.doesNotMatch(answers[2].message, new RegExp(event.id), "no record id in the message");

      // c comes back: the outbox delivers the event there, with no call from the app. [delivery goes on]
      await c.start();
      const record = await page.evaluate(([id, url]) => acceptedBy(id, url), [event.id, c.url]);
      assert.equal(record.evidence.filter((e) => e.relay === c.url && e.outcome === "accepted").length, 1);
      const stored = await queryRelay(c.url, [event.id]);
      assert.equal(stored.length, 1);
      assert.equal(stored[0].sig, event.sig, "the same signed event, never re-signed");
      // b refused for good: never sent again, however many attempts c took.
      const stats = await fault.control(["STATS"]);
      assert.equal(stats.events[`/reply/blocked?t=${tag}`], 1, JSON.stringify(stats.events));
    } finally {
      await c.destroy();
    }
  });
}

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

test("a held post (notBefore, holdMs, dated ahead): maxWait counts from its time, so the promise resolves from the relay's OK", { timeout: PROMPT }, async () => {
  const [e] = signedEvents(1, { content: () => "held, then published" });
  const res = await page.evaluate(async ([url, e]) => {
    const t0 = Date.now();
    // Sent 4 s from now; maxWait 3 s: before its time counted, this rejected at 3 s
    // ("publish timed out") while the post was still waiting to go.
    const [r] = await settle(outbox.publish([url], e, { maxWait: 3000, notBefore: t0 + 4000 }));
    return { r, after: Date.now() - t0 };
  }, [nrr.url, e]);
  assert.equal(res.r.ok, true, JSON.stringify(res.r));
  assert.ok(res.after >= 4000, `resolved ${res.after} ms after publish(), not before the post's time`);
  assert.equal((await queryRelay(nrr.url, [e.id]))[0]?.sig, e.sig);
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

test("a record that stops without a relay (cancelled): that relay's promise rejects at once, not queued", { timeout: PROMPT }, async () => {
  const [event] = signedEvents(1, { content: () => "cancelled while waiting" });
  const silent = `${fault.url}/silent?t=cancel`; // reads EVENTs, never answers
  const answers = await page.evaluate(async ([url, event, maxWait]) => {
    const created = new Promise((ok) => outbox.addEventListener("change", (e) => e.detail.id === event.id && ok(), { once: false }));
    const promises = outbox.publish([url], event, { maxWait });
    await created;
    await outbox.cancel(event.id);
    return settle(promises);
  }, [silent, event, SLOW]);
  assert.equal(answers[0].ok, false, JSON.stringify(answers));
  assert.equal(answers[0].queued, false);
  assert.equal(answers[0].stage, "cancelled");
  assert.equal(answers[0].reason, "cancelled");
  assert.match(answers[0].message, /^(not sent: cancelled|publish timed out)$/);
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

// relay_url.rs' own test corpus (tests/nostr/relay.rs reads the same file natively and in the
// browser), through the package's `normalizeRelayUrl`: the one normalizer publish() uses.
const CORPUS = JSON.parse(readFileSync(join(ROOT, "tests/data/relay_urls.json"), "utf8"));

test("normalizeRelayUrl, exported by the .wasm, answers relay_url.rs' test corpus as it does", async () => {
  const got = await page.evaluate((corpus) => {
    const run = (input) => {
      try {
        return { url: m.normalizeRelayUrl(input) };
      } catch (e) {
        return { isOutboxError: e instanceof m.OutboxError, code: e.code, message: e.message };
      }
    };
    return { normalized: corpus.normalized.map(([input]) => run(input)), refused: corpus.refused.map(([input]) => run(input)) };
  }, CORPUS);
  assert.deepEqual(got.normalized, CORPUS.normalized.map(([, url]) => ({ url })));
  assert.deepEqual(got.refused, CORPUS.refused.map(([, message]) => ({ isOutboxError: true, code: "invalid_relay_url", message })));
});

test("awkward relay URLs through publish(): each promise settles from its relay's answer, none at maxWait", { timeout: PROMPT }, async () => {
  const port = new URL(fault.url).port;
  const [event, other] = signedEvents(2, { content: (i) => `awkward urls ${i}` });
  // Each read differently by WHATWG `new URL` (publish.js' former normalizer) and the outbox,
  // or awkward enough to check: a mismatch left the promise waiting for maxWait.
  const urls = {
    schemeCase: `WS://127.0.0.1:${port}/accept?t=url-scheme`,
    hostCase: `ws://LocalHost:${port}/accept?t=url-host`,
    whitespaceAndSlashQuery: ` ws://127.0.0.1:${port}/?t=url-slash-query \n`,
    dotSegments: `ws://127.0.0.1:${port}/accept/../accept?t=url-dots`,
    quoteInQuery: `ws://127.0.0.1:${port}/accept?t='url-quote'`,
    punycodeInCapitals: `ws://XN--BCHER-KVA.localhost:${port}/accept?t=url-idn`,
    ipv4MappedIpv6: `ws://[::FFFF:127.0.0.1]:${port}/accept?t=url-v6`,
    defaultPort: "WS://127.0.0.1:80/",
    sameAsTheFirst: `ws://127.0.0.1:${port}/accept?t=url-scheme`,
  };
  const names = Object.keys(urls);
  const answers = await page.evaluate(
    ([urls, event, maxWait]) => settle(outbox.publish(urls, event, { policy: "any", maxWait })),
    [Object.values(urls), event, SLOW],
  );
  const by = Object.fromEntries(names.map((n, i) => [n, answers[i]]));
  for (const n of ["schemeCase", "hostCase", "whitespaceAndSlashQuery", "dotSegments", "quoteInQuery", "punycodeInCapitals"]) {
    assert.equal(by[n].ok, true, `${n}: ${JSON.stringify(by[n])}`);
  }
  // Accepted, or refused by a system that does not connect to IPv4-mapped addresses: an answer.
  assert.ok(by.ipv4MappedIpv6.ok || by.ipv4MappedIpv6.outcome === "unreachable", JSON.stringify(by.ipv4MappedIpv6));
  assert.equal(by.defaultPort.ok, false);
  assert.equal(by.defaultPort.outcome, "unreachable", JSON.stringify(by.defaultPort));
  assert.equal(by.sameAsTheFirst.message, "duplicate url");

  // A non-ASCII host: refused by enqueue as normalizeRelayUrl refuses it (give it in punycode).
  const idn = await page.evaluate(async ([url, event]) => {
    let thrown;
    try {
      m.normalizeRelayUrl(url);
    } catch (e) {
      thrown = e.message;
    }
    return { thrown, answers: await settle(outbox.publish([url], event, { maxWait: 600_000 })) };
  }, [`ws://bücher.localhost:${port}/accept`, other]);
  assert.match(idn.thrown, /^invalid relay URL: invalid host `bücher\.localhost`: non-ASCII/);
  assert.equal(idn.answers[0].code, "invalid_relay_url");
  assert.ok(idn.answers[0].message.endsWith(idn.thrown), JSON.stringify(idn));
});

test("read-back: a relay that stored the event but whose OK was lost is asked by id, not sent it again (FlushResult.readBack)", { timeout: PROMPT }, async () => {
  const [event] = signedEvents(1, { content: () => "the OK was lost" });
  const tag = "readback";
  const swallow = `${fault.url}/swallow?t=${tag}`; // stores EVENTs, never sends their OK
  const res = await page.evaluate(async ([url, event]) => {
    const o = await m.Outbox.open({ name: "publish-readback", storage: "memory", publishTimeoutMs: 500, baseDelayMs: 50, maxDelayMs: 100 });
    await o.enqueue(event, [url]);
    const first = await o.flush();
    // Flush again once the retry is due (its backoff is 50–100 ms; a run may round it up).
    let second = { delivered: 0, readBack: 0 };
    for (let i = 0; i < 40 && second.delivered === 0; i++) {
      await new Promise((ok) => setTimeout(ok, 100));
      const run = await o.flush();
      second = { ...run, delivered: second.delivered + run.delivered, readBack: second.readBack + run.readBack };
    }
    const record = await o.get(event.id);
    await o.close();
    return { first, second, record };
  }, [swallow, event]);
  assert.equal(res.first.retrying, 1, JSON.stringify(res.first));
  assert.equal(res.first.readBack, 0);
  assert.equal(res.second.delivered, 1, JSON.stringify(res.second));
  assert.equal(res.second.readBack, 1, JSON.stringify(res.second));
  assert.equal(res.record.stage, "satisfied");
  const [timeout, readBack] = res.record.evidence;
  assert.equal(timeout.outcome, "timeout", JSON.stringify(res.record.evidence));
  assert.equal(readBack.outcome, "duplicate");
  assert.match(readBack.message, /^read back:/);
  const stats = await fault.control(["STATS"]);
  assert.equal(stats.events[`/swallow?t=${tag}`], 1, "sent once: " + JSON.stringify(stats.events));
});

test("pacing: once a relay has answered rate-limited:, the EVENTs it gets in any second stay under its limit", { timeout: SLOW }, async () => {
  // The fault relay takes 20 EVENTs per rolling second on a connection and refuses the
  // rest with `rate-limited:`. The first window goes out before any answer, so the relay
  // refuses past 20 of it; the refused records wait (at least 30 s) and go again. Unpaced,
  // they would go at once and be refused past 20 again; paced, they go 100 ms apart.
  const limit = 20;
  const events = signedEvents(60, { content: (i) => `paced ${i}` });
  const tag = "pacing";
  const url = `${fault.url}/limit/${limit}?t=${tag}`;
  const res = await page.evaluate(async ([url, events]) => {
    const o = await m.Outbox.open({ name: "publish-pacing", storage: "memory", baseDelayMs: 1000, maxDelayMs: 2000 });
    await o.enqueueMany(events.map((event) => ({ event, relays: [url] })));
    let delivered = 0;
    const deadline = Date.now() + 150_000;
    while (delivered < events.length && Date.now() < deadline) {
      delivered += (await o.flush()).delivered;
      if (delivered < events.length) await new Promise((ok) => setTimeout(ok, 100));
    }
    await o.close();
    return { delivered };
  }, [url, events]);
  assert.equal(res.delivered, events.length, JSON.stringify(res));
  const stats = await fault.control(["STATS"]);
  const key = `/limit/${limit}?t=${tag}`;
  const arrivals = stats.arrivals[key];
  assert.ok(stats.limited[key] >= 1, "the relay refused: " + JSON.stringify(stats.limited));
  // The first refused EVENT came as the (limit + 1)th within a second. Those sent before
  // its refusal came back (the rest of that window, within a few ms) are not paced yet.
  const first = arrivals.findIndex((t, i) => i >= limit && t - arrivals[i - limit] < 1000);
  assert.ok(first >= limit, JSON.stringify(arrivals));
  const later = arrivals.filter((t) => t > arrivals[first] + 200);
  assert.ok(later.length > 0, JSON.stringify(arrivals));
  const busiest = Math.max(...later.map((t) => later.filter((u) => u >= t && u < t + 1000).length));
  assert.ok(busiest < limit, `${busiest} EVENTs in one second after the first refusal (limit ${limit}): ${JSON.stringify(arrivals)}`);
});

test("two devices, one contact list: the stale copy queued offline never reaches a relay that holds the newer one", { timeout: SLOW }, async () => {
  await nrr.start();
  const sk = generateSecretKey();
  const now = Math.floor(Date.now() / 1000);
  const list = (created_at, follows) => finalizeEvent({ kind: 3, created_at, tags: follows.map((p) => ["p", p]), content: "" }, sk);
  const stale = list(now - 100, ["a".repeat(64)]);
  const newer = list(now - 50, ["a".repeat(64), "b".repeat(64)]);
  const second = `${fault.url}/?t=contacts`; // a normal relay (stores, answers REQ)
  const relays = [nrr.url, second];
  // Device B (this browser, IndexedDB): the stale list is queued while it cannot send.
  const openB = `m.Outbox.open({ name: "device-b-contacts" })`;
  await page.evaluate(async ([openB, stale, relays]) => {
    const o = await eval(openB);
    await o.enqueue(stale, relays);
    await o.close();
  }, [openB, stale, relays]);
  // Device A (a browser profile of its own) publishes the newer list meanwhile.
  const deviceA = await launch();
  try {
    const pageA = await deviceA.context.newPage();
    await pageA.goto(`${server.url}/tests/e2e/pages/blank.html`);
    const a = await pageA.evaluate(async ([IMPORT_PACKAGE, newer, relays]) => {
      const m = await eval(IMPORT_PACKAGE);
      const o = await m.Outbox.open({ name: "device-a-contacts" });
      await o.enqueue(newer, relays);
      const run = await o.flush();
      const record = await o.get(newer.id);
      await o.close();
      return { run, stage: record.stage };
    }, [IMPORT_PACKAGE, newer, relays]);
    assert.equal(a.stage, "satisfied", JSON.stringify(a));
  } finally {
    await deviceA.close();
  }
  // Device B comes back: reopened (as after a reload), it flushes its queue.
  const b = await page.evaluate(async ([openB, id]) => {
    const o = await eval(openB);
    const told = [];
    o.addEventListener("superseded", (e) => told.push({ id: e.detail.id, reason: e.detail.reason, by: e.detail.supersededBy }));
    const run = await o.flush();
    const record = await o.get(id);
    await o.close();
    return { run, record, told };
  }, [openB, stale.id]);
  assert.equal(b.record.stage, "superseded", JSON.stringify(b.record));
  assert.equal(b.record.reason, "remoteNewer");
  assert.equal(b.record.supersededBy, newer.id);
  assert.deepEqual(b.told, [{ id: stale.id, reason: "remoteNewer", by: newer.id }]);
  const checked = b.record.evidence.filter((e) => e.outcome === "rejected" && e.rejectReason === "newer");
  assert.ok(checked.length >= 1, JSON.stringify(b.record.evidence));
  assert.ok(checked.every((e) => e.message.startsWith(newer.id)), JSON.stringify(checked));
  // Neither relay got the stale list; both still hold the newer one.
  for (const url of [nrr.url, second]) {
    assert.deepEqual(await queryRelay(url, [stale.id]), [], `${url} never got the stale list`);
    assert.equal((await queryRelay(url, [newer.id]))[0]?.id, newer.id);
  }
  const stats = await fault.control(["STATS"]);
  assert.equal(stats.events["/?t=contacts"], 1, "the second relay got one EVENT, device A's: " + JSON.stringify(stats.events));
});
