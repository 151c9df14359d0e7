// NIP-11 (issue "Relay-aware delivery", point 1): each target relay's information document
// fetched, kept with a time to live and checked before sending.
//
// First, src/js/relay_info.js alone in Node (no Cache API: memory): the check of an event
// against each limit, and the reading of hostile documents, by cases and by randomized
// inputs. Then end to end in Chromium against the fault relay's `/info/<document>` paths
// (HTTP: the document; WebSocket: a normal relay that stores events and counts them per
// path) and a real nostr-rs-relay: an event a relay's document says it cannot take is
// never sent there and is delivered to the others; hostile documents lose nothing; the
// document is fetched once and shared by every context of the origin (Cache API).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, finalizeEvent, getEventHash } from "nostr-tools/pure";
import { startServer, launch, relay, IMPORT_PACKAGE } from "./harness.mjs";
import { startFaultRelay } from "./torture/fault-relay.mjs";
import {
  checkEvent,
  readDocument,
  limitsOf,
  relayInformation,
  forgetRelayInformation,
  setRelayInformationStore,
  MAX_DOCUMENT_BYTES,
} from "../../src/js/relay_info.js";

const NOW = 1_800_000_000;
const key = generateSecretKey();
const sign = (fields) =>
  finalizeEvent({ kind: 1, created_at: NOW, tags: [], content: "hello", ...fields }, key);

// --- src/js/relay_info.js in Node -------------------------------------------------------

test("checkEvent: each stated limit the event exceeds is a `limit:` verdict naming it; within, null", () => {
  const ev = sign({ content: "é".repeat(100), tags: [["t", "a"], ["t", "b"], ["t", "c"]] });
  const raw = JSON.stringify(ev);
  const frame = new TextEncoder().encode(`["EVENT",${raw}]`).length;
  assert.equal(checkEvent({ max_message_length: frame }, raw, NOW), null, "exactly the limit passes");
  assert.match(checkEvent({ max_message_length: frame - 1 }, raw, NOW), new RegExp(`^limit: .*max_message_length ${frame - 1}; the EVENT message is ${frame} bytes$`));
  assert.equal(checkEvent({ max_event_tags: 3 }, raw, NOW), null);
  assert.match(checkEvent({ max_event_tags: 2 }, raw, NOW), /^limit: .*max_event_tags 2; the event has 3$/);
  assert.equal(checkEvent({ max_content_length: 100 }, raw, NOW), null, "characters, not bytes (200 bytes of UTF-8)");
  assert.match(checkEvent({ max_content_length: 99 }, raw, NOW), /^limit: .*max_content_length 99; the content has 100 characters$/);
  assert.equal(checkEvent({ created_at_lower_limit: 60 }, raw, NOW + 60), null);
  assert.match(checkEvent({ created_at_lower_limit: 60 }, raw, NOW + 61), /^limit: .*created_at_lower_limit 60; the event is 61 s old$/);
  assert.equal(checkEvent({ created_at_upper_limit: 60 }, raw, NOW - 60), null);
  assert.match(checkEvent({ created_at_upper_limit: 60 }, raw, NOW - 61), /^wait: .*created_at_upper_limit 60; the event is 61 s ahead$/, "time fixes it: wait");
  for (const flag of ["auth_required", "payment_required", "restricted_writes"]) {
    assert.equal(checkEvent({ [flag]: true }, raw, NOW), null, `${flag}: sent, the relay's answer decides`);
  }
  assert.equal(checkEvent({}, raw, NOW), null);
  assert.equal(checkEvent({ max_message_length: 10 }, "not json", NOW), null, "an event the check cannot read is not held back");
});

test("checkEvent: proof of work counted as NIP-13 leading zero bits of the id", () => {
  const mined = { ...sign({}), id: "000f" + "a".repeat(60) }; // 12 zero bits
  const raw = JSON.stringify(mined);
  assert.equal(checkEvent({ min_pow_difficulty: 12 }, raw, NOW), null);
  assert.match(checkEvent({ min_pow_difficulty: 13 }, raw, NOW), /^limit: .*min_pow_difficulty 13; the event id has 12 leading zero bits$/);
  for (const [id, bits] of [["8" + "0".repeat(63), 0], ["7f", 1], ["0".repeat(64), 256], ["01", 7]]) {
    const r = checkEvent({ min_pow_difficulty: 300 }, JSON.stringify({ ...mined, id }), NOW);
    assert.match(r, new RegExp(`has ${bits} leading zero bits$`), id);
  }
});

test("checkEvent: the message length is the UTF-8 length of the frame, for any content (randomized)", () => {
  const pick = ["a", "é", "中", "😀", "\u0000", "\"", "\\", "\n", "\u2028", "𝄞"];
  for (let i = 0; i < 500; i++) {
    let content = "";
    for (let n = Math.floor(Math.random() * 40); n > 0; n--) content += pick[Math.floor(Math.random() * pick.length)];
    const raw = JSON.stringify(sign({ content }));
    const bytes = new TextEncoder().encode(`["EVENT",${raw}]`).length;
    assert.equal(checkEvent({ max_message_length: bytes }, raw, NOW), null, content);
    assert.ok(checkEvent({ max_message_length: bytes - 1 }, raw, NOW)?.startsWith("limit:"), content);
    const chars = [...content].length;
    assert.equal(checkEvent({ max_content_length: Math.max(1, chars) }, raw, NOW), null, content);
  }
});

test("readDocument: only limits of the right type are taken; everything else is noted; 0 is no limit", () => {
  const good = readDocument(JSON.stringify({
    name: "r",
    limitation: { max_message_length: 1000, max_event_tags: 0, auth_required: false, restricted_writes: true, max_limit: 5 },
  }));
  assert.equal(good.status, "ok");
  assert.deepEqual(good.limits, { max_message_length: 1000, auth_required: false, restricted_writes: true });
  assert.deepEqual(good.notes, []);
  const bad = readDocument(JSON.stringify({
    limitation: {
      max_message_length: "10", max_event_tags: -1, max_content_length: 1.5, min_pow_difficulty: [30],
      created_at_lower_limit: { a: 1 }, created_at_upper_limit: 1e300, auth_required: "yes",
      payment_required: 1, restricted_writes: null,
    },
  }));
  assert.equal(bad.status, "ok");
  assert.deepEqual(bad.limits, {});
  assert.equal(bad.notes.length, 8, JSON.stringify(bad.notes));
  for (const text of ["", "nope", "[1,2]", "null", "3", "\"s\"", "{\"limitation\":", "\u0000"]) {
    const r = readDocument(text);
    assert.equal(r.status, "invalid", text);
    assert.deepEqual(r.limits, {}, text);
  }
  assert.deepEqual(readDocument('{"limitation":[1]}').limits, {});
  assert.deepEqual(readDocument('{"limitation":[1]}').notes, ["limitation: not an object, ignored"]);
  const deep = "[".repeat(20_000) + "]".repeat(20_000);
  assert.doesNotThrow(() => readDocument(`{"x":${deep}}`));
  assert.doesNotThrow(() => readDocument(deep));
});

test("limitsOf: random hostile values never yield a limit of the wrong type (randomized)", () => {
  const keys = ["max_message_length", "max_event_tags", "max_content_length", "min_pow_difficulty",
    "created_at_lower_limit", "created_at_upper_limit", "auth_required", "payment_required", "restricted_writes", "other"];
  const values = [0, 1, -1, 1.5, 2 ** 53, 2 ** 53 - 1, NaN, Infinity, "1", "", true, false, null, [], [1], {}, { a: 1 }, undefined];
  for (let i = 0; i < 2000; i++) {
    const limitation = {};
    for (const k of keys) if (Math.random() < 0.6) limitation[k] = values[Math.floor(Math.random() * values.length)];
    const doc = Math.random() < 0.1 ? { limitation: values[Math.floor(Math.random() * values.length)] } : { limitation };
    const { limits, notes } = limitsOf(doc);
    for (const [k, v] of Object.entries(limits)) {
      if (k.endsWith("_required") || k === "restricted_writes") assert.equal(typeof v, "boolean", k);
      else assert.ok(Number.isSafeInteger(v) && v > 0, `${k}: ${v}`);
      assert.ok(keys.includes(k) && k !== "other", k);
    }
    assert.ok(Array.isArray(notes));
    // Whatever was taken, a verdict never throws.
    assert.doesNotThrow(() => checkEvent(limits, JSON.stringify(sign({})), NOW));
  }
});

test("relayInformation: refuses what is not a relay URL, and bounds that are not non-negative numbers (nothing fetched)", async () => {
  await assert.rejects(relayInformation("https://example.com"), TypeError);
  await assert.rejects(relayInformation(42), TypeError);
  for (const bad of [{ maxAgeMs: -1 }, { maxAgeMs: "1" }, { timeoutMs: NaN }, { timeoutMs: Infinity }]) {
    await assert.rejects(relayInformation("wss://relay.invalid", bad), TypeError, JSON.stringify(bad));
  }
});

// --- end to end --------------------------------------------------------------------------

let server, browser, nrr, small, fault, page;
before(async () => {
  fault = await startFaultRelay();
  if (!fault) throw new Error("tests/fault-relay is not built (scripts/setup.sh builds it)");
  server = await startServer();
  browser = await launch();
  nrr = await relay();
  await nrr.start();
  // A nostr-rs-relay that takes events of at most 1 KiB: its NIP-11 document (0.8) states
  // only `payment_required`, so the outbox learns the limit from its answer.
  small = await relay({ maxEventBytes: 1024 });
  await small.start();
  page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  await page.evaluate(async (IMPORT_PACKAGE) => {
    window.m = await eval(IMPORT_PACKAGE);
    // Enqueue `event` to `relays` in a memory outbox, flush until nothing is due or
    // `rounds` ran; the record.
    window.deliver = async (event, relays, options = {}, rounds = 1) => {
      const o = await m.Outbox.open({ name: `nip11-${Math.random()}`, storage: "memory", connectTimeoutMs: 1000, publishTimeoutMs: 3000, ...options });
      await o.enqueue(event, relays);
      const runs = [];
      for (let i = 0; i < rounds; i++) runs.push(await o.flush());
      const record = await o.get(event.id);
      await o.close();
      return { record, runs };
    };
  }, IMPORT_PACKAGE);
});
after(async () => {
  await browser?.close();
  await fault?.stop();
  await nrr?.destroy();
  await small?.destroy();
  await server?.close();
});

const target = (record, url) => record.targets.find((t) => t.relay === url);

test("an event a relay's NIP-11 document says it cannot take is never sent there and is delivered to the others", async () => {
  const tag = "big";
  const limited = `${fault.url}/info/max_message_length=1000?t=${tag}`;
  const event = sign({ content: "x".repeat(2000), created_at: Math.floor(Date.now() / 1000) });
  const { record } = await page.evaluate(([e, r]) => deliver(e, r), [event, [limited, nrr.url]]);
  // Policy "all" (the default): one relay can never take it, so the record ends exhausted,
  // with the others' acceptances in its evidence.
  assert.equal(record.stage, "exhausted", JSON.stringify(record.evidence));
  const refused = target(record, limited);
  assert.equal(refused.state, "rejected", JSON.stringify(refused));
  const evidence = record.evidence.find((e) => e.relay === limited);
  assert.equal(evidence.outcome, "rejected");
  assert.equal(evidence.rejectReason, "limit");
  assert.match(evidence.message, /^limit: not sent: the relay's NIP-11 document states max_message_length 1000; the EVENT message is \d+ bytes$/);
  assert.equal(target(record, nrr.url).state, "accepted");
  const stats = await fault.control(["STATS"]);
  assert.equal(stats.events[`/info/max_message_length=1000?t=${tag}`] ?? 0, 0, "never sent: " + JSON.stringify(stats.events));
  assert.equal(stats.info[`/info/max_message_length=1000?t=${tag}`], 1, JSON.stringify(stats.info));
});

test("a relay that states its limit is spared the send; nostr-rs-relay, whose document does not, gets it and never answers OK: both typed, the others get it", async () => {
  const stating = `${fault.url}/info/max_message_length=1500?t=vs`;
  const event = sign({ content: "y".repeat(1500), created_at: Math.floor(Date.now() / 1000) });
  const { record } = await page.evaluate(([e, r]) => deliver(e, r), [event, [stating, small.url, nrr.url]]);
  const of = (url) => record.evidence.find((e) => e.relay === url);
  assert.equal(of(stating).outcome, "rejected");
  assert.equal(of(stating).rejectReason, "limit");
  // nostr-rs-relay 0.8.12 answers an event over `max_event_bytes` with a NOTICE and no OK:
  // a timeout (retried, read back first), not a refusal, never `limit`; what the relay
  // said instead of an OK is kept with it.
  assert.equal(of(small.url).outcome, "timeout", JSON.stringify(of(small.url)));
  assert.match(of(small.url).message, /^no OK within 3000 ms; the relay's NOTICE meanwhile: event exceeded max size$/, JSON.stringify(of(small.url)));
  assert.equal(of(small.url).rejectReason, undefined, "nostr-rs-relay's own answer");
  assert.equal(of(nrr.url).outcome, "accepted");
  const info = await page.evaluate(async (u) => {
    const { status, limits } = await m.relayInformation(u);
    return { status, limits };
  }, small.url);
  assert.deepEqual(info, { status: "ok", limits: { payment_required: false } }, "nostr-rs-relay 0.8 states no size limit");
  assert.equal((await fault.control(["STATS"])).events["/info/max_message_length=1500?t=vs"] ?? 0, 0);
});

test("publish(): the relay whose document states a limit the event exceeds rejects its promise with the limit, not queued; the other resolves", async () => {
  const limited = `${fault.url}/info/max_event_tags=1?t=publish`;
  const event = sign({ created_at: Math.floor(Date.now() / 1000), tags: [["t", "a"], ["t", "b"]], content: "two tags" });
  const answers = await page.evaluate(async ([e, relays]) => {
    const o = await m.Outbox.open({ name: `nip11-publish-${Math.random()}`, storage: "memory", connectTimeoutMs: 1000 });
    const settled = await Promise.allSettled(o.publish(relays, e, { maxWait: 20_000 }));
    await o.close();
    return settled.map((s) => (s.status === "fulfilled" ? { ok: s.value } : { error: s.reason.message, queued: s.reason.queued, name: s.reason.name }));
  }, [event, [limited, nrr.url]]);
  assert.equal(answers[0].name, "PublishError", JSON.stringify(answers));
  assert.match(answers[0].error, /^limit: not sent: the relay's NIP-11 document states max_event_tags 1; the event has 2$/);
  assert.equal(answers[0].queued, false);
  assert.ok("ok" in answers[1], JSON.stringify(answers));
});

test("each stated limit: terminal where the signed event can never pass, waiting where time fixes it", async () => {
  const at = (ahead = 0) => Math.floor(Date.now() / 1000) + ahead;
  const cases = [
    ["max_event_tags=2", () => sign({ created_at: at(), tags: [["t", "a"], ["t", "b"], ["t", "c"]] }), "rejected", /max_event_tags 2; the event has 3$/],
    ["max_content_length=10", () => sign({ created_at: at(), content: "more than ten characters" }), "rejected", /max_content_length 10; the content has 24 characters$/],
    ["min_pow_difficulty=30", () => sign({ created_at: at() }), "rejected", /min_pow_difficulty 30; the event id has \d+ leading zero bits$/],
    ["created_at_lower_limit=3600", () => sign({ created_at: at(-7200) }), "rejected", /created_at_lower_limit 3600; the event is \d+ s old$/],
    // The outbox holds an event dated ahead until 5 s before its time; a relay that takes
    // at most 1 s ahead is not sent it then: it waits (retried).
    ["created_at_upper_limit=1", () => sign({ created_at: at(4) }), "error", /^wait: .*created_at_upper_limit 1; the event is \d s ahead$/],
    // A limit of 0, and limits the event meets: sent.
    ["max_message_length=0,max_event_tags=0", () => sign({ created_at: at() }), "accepted", /.*/],
    ["max_message_length=100000,max_event_tags=5,auth_required=false,payment_required=true,restricted_writes=true", () => sign({ created_at: at(), content: "fits" }), "accepted", /.*/],
  ];
  for (const [doc, make, outcome, message] of cases) {
    const event = make(); // signed now: the relay's window is checked against this moment
    const url = `${fault.url}/info/${doc}?t=each`;
    const { record } = await page.evaluate(([e, u]) => deliver(e, [u]), [event, url]);
    const ev = record.evidence.find((x) => x.relay === url);
    assert.ok(ev, `${doc}: ${JSON.stringify(record).slice(0, 3000)}`);
    assert.equal(ev.outcome, outcome, `${doc}: ${JSON.stringify(ev)}`);
    assert.match(ev.message, message, doc);
    if (outcome === "rejected") {
      assert.equal(ev.rejectReason, "limit", doc);
      assert.equal(record.stage, "exhausted", `${doc}: nothing more can be done: ${JSON.stringify(record)}`);
    }
    if (outcome === "error") assert.notEqual(["exhausted", "satisfied"].includes(record.stage), true, `${doc}: waits: ${record.stage}`);
    const stats = await fault.control(["STATS"]);
    const sent = stats.events[`/info/${doc}?t=each`] ?? 0;
    assert.equal(sent, outcome === "accepted" ? 1 : 0, `${doc}: EVENTs that reached the relay`);
  }
});

test("hostile, missing, invalid or unanswered documents mean no checks: every event is delivered, the document's fate noted", async () => {
  const docs = {
    missing: "missing",
    huge: "invalid",
    "huge-unsized": "invalid",
    deep: "ok", // valid JSON (Chromium parses 30 000 levels), no limitation
    types: "ok",
    html: "invalid",
    array: "invalid",
    slow: "failed", // never answered: the fetch gives up after connectTimeoutMs
  };
  for (const [doc, status] of Object.entries(docs)) {
    const url = `${fault.url}/info/${doc}?t=hostile`;
    const event = sign({ created_at: Math.floor(Date.now() / 1000), content: `through ${doc}` });
    const { record } = await page.evaluate(([e, u]) => deliver(e, [u]), [event, url]);
    assert.equal(record.stage, "satisfied", `${doc}: ${JSON.stringify(record.evidence)}`);
    // (Not the document itself: `deep`'s 30 000 levels do not cross back to Node.)
    const info = await page.evaluate(async (u) => {
      const { status, limits, notes } = await m.relayInformation(m.normalizeRelayUrl(u));
      return { status, limits, notes };
    }, url);
    assert.ok(info, `${doc}: ${JSON.stringify(info)}`);
    assert.equal(info.status, status, `${doc}: ${JSON.stringify(info).slice(0, 300)}`);
    assert.deepEqual(info.limits, {}, doc);
    if (doc === "types") assert.equal(info.notes.length, 8, JSON.stringify(info.notes));
    if (status === "invalid" && doc.startsWith("huge")) assert.match(info.notes[0], new RegExp(`larger than ${MAX_DOCUMENT_BYTES} bytes`));
  }
});

test("the document is fetched once per time to live and shared by every context of the origin (Cache API); relayInfoTtlMs 0 fetches none", async () => {
  const path = `/info/max_event_tags=9?t=shared`;
  const url = `${fault.url}${path}`;
  const now = Math.floor(Date.now() / 1000);
  for (let i = 0; i < 3; i++) {
    const { record } = await page.evaluate(([e, u]) => deliver(e, [u]), [sign({ created_at: now, content: `n${i}` }), url]);
    assert.equal(record.stage, "satisfied");
  }
  // Another page of the origin (its own wasm instance and memory): the kept copy.
  const other = await browser.context.newPage();
  await other.goto(`${server.url}/tests/e2e/pages/blank.html`);
  const info = await other.evaluate(async ([IMPORT_PACKAGE, u]) => {
    const m = await eval(IMPORT_PACKAGE);
    return m.relayInformation(m.normalizeRelayUrl(u));
  }, [IMPORT_PACKAGE, url]);
  await other.close();
  assert.equal(info.status, "ok");
  assert.deepEqual(info.limits, { max_event_tags: 9 });
  assert.equal((await fault.control(["STATS"])).info[path], 1, "fetched once");

  const offPath = `/info/max_message_length=10?t=off`;
  const { record } = await page.evaluate(([e, u]) => deliver(e, [u], { relayInfoTtlMs: 0 }), [sign({ created_at: now }), `${fault.url}${offPath}`]);
  assert.equal(record.stage, "satisfied", "no checks: sent, and this relay takes it");
  assert.equal((await fault.control(["STATS"])).info[offPath] ?? 0, 0, "never fetched");
});

test("Node without the Cache API keeps documents in memory: fetched once", async () => {
  forgetRelayInformation();
  const path = `/info/max_content_length=77?t=node`;
  const url = `${fault.url}${path}`;
  const [a, b] = await Promise.all([relayInformation(url), relayInformation(url)]);
  const c = await relayInformation(url);
  assert.equal(a, b);
  assert.equal(a, c);
  assert.deepEqual(a.limits, { max_content_length: 77 });
  assert.equal((await fault.control(["STATS"])).info[path], 1);
  const again = await relayInformation(url, { maxAgeMs: 0 });
  assert.equal(again.status, "ok");
  assert.equal((await fault.control(["STATS"])).info[path], 2, "maxAgeMs 0: fetched again");
});

test("an app store (setRelayInformationStore) keeps documents across processes; what it gives back is checked again; a failing store means memory", async () => {
  const rows = new Map();
  const store = { get: async (url) => rows.get(url), set: async (url, text) => void rows.set(url, text) };
  setRelayInformationStore(store);
  try {
    const path = `/info/max_event_tags=3?t=app-store`;
    const url = `${fault.url}${path}`;
    forgetRelayInformation();
    assert.deepEqual((await relayInformation(url)).limits, { max_event_tags: 3 });
    assert.ok(rows.has(url), "kept in the app's store");
    forgetRelayInformation(); // a new process, the same store
    assert.deepEqual((await relayInformation(url)).limits, { max_event_tags: 3 });
    assert.equal((await fault.control(["STATS"])).info[path], 1, "read from the store, not fetched again");
    // A tampered copy: its limits are read anew from its document, never taken as given.
    const kept = JSON.parse(rows.get(url));
    rows.set(url, JSON.stringify({ ...kept, limits: { max_event_tags: 0.5, max_message_length: "1" } }));
    forgetRelayInformation();
    assert.deepEqual((await relayInformation(url)).limits, { max_event_tags: 3 });
    // Garbage: not a document, fetched again.
    for (const junk of ["not json", "null", JSON.stringify({ ...kept, url: "ws://elsewhere" }), JSON.stringify({ ...kept, status: "ok", document: [1] })]) {
      rows.set(url, junk);
      forgetRelayInformation();
      assert.deepEqual((await relayInformation(url)).limits, { max_event_tags: 3 }, junk);
    }
    assert.equal((await fault.control(["STATS"])).info[path], 5, "each unusable copy fetched again");
    // A store that throws: memory only, nothing lost.
    setRelayInformationStore({ get: () => { throw new Error("down"); }, set: async () => { throw new Error("down"); } });
    forgetRelayInformation();
    assert.equal((await relayInformation(url)).status, "ok");
    for (const bad of [{}, { get() {} }, 42, "store"]) assert.throws(() => setRelayInformationStore(bad), TypeError);
  } finally {
    setRelayInformationStore(null);
    forgetRelayInformation();
  }
});
