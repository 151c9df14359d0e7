// The reliability torture suite inside `make test` (issue 9):
// - bad input: malformed events, bad relay URLs and options are typed OutboxErrors and
//   change nothing stored;
// - hostile relays: junk, 10 MB frames, OKs for unknown ids, OKs of the wrong types,
//   NOTICE floods and AUTH before every message are ignored; outcomes stay correct;
// - storage faults: quota exhausted mid-batch and mid-flush, a newer schema on disk, a
//   version change from another tab during a flush, undecodable rows;
// - the short total-queue torture run (tests/e2e/torture.mjs --short): tabs + service
//   worker, flapping faulty relays, SIGKILLed browser, checked against the relays' own
//   databases. `make torture` runs the long one.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { generateSecretKey, finalizeEvent } from "nostr-tools/pure";
import { startServer, launch, relay, queryRelay, IMPORT_PACKAGE } from "./harness.mjs";
import { faultProxy } from "./torture/proxy.mjs";
import { snapshotRoot } from "./torture/snapshot.mjs";
import { startFaultRelay, faultRelayBinary } from "./torture/fault-relay.mjs";
import { badInputCases, runBadInput } from "./torture/bad-input.mjs";
import { runTorture, formatTable } from "./torture.mjs";

/** The IndexedDB schema version this build writes (src/store/idb/schema.rs, MAX_VERSION). */
const SCHEMA = 6;
// The IndexedDB layout of schema 6 (docs/STORE.md, key layout 3), evaluated in a page:
// the `kv` store holds rows under ordered keys; a record's row under `R/<id>` as
// `{v: JSON, n: version, k: index keys}`, its index keys `P/` (claim order), `L/` (list
// order) and `T/` (per stage) held in `k` (the multiEntry index `k`); numbers are 20 decimal digits, and an ASCII character of free text outside
// [A-Za-z0-9._:-] is written %XX.
const KV_LAYOUT = `(() => {
  const text = (s) => Array.from(s, (c) => (c.charCodeAt(0) < 128 && !/[A-Za-z0-9._:-]/.test(c) ? "%" + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0") : c)).join("");
  const num = (n) => String(n).padStart(20, "0");
  // Puts the row as a stored row would be (schema 6: {v, n, k}), holding the index
  // keys its fields give.
  const putRow = (store, row) => {
    const id = text(row.id);
    const k = [];
    if (Number.isInteger(row.createdMs)) {
      k.push("L/" + num(row.createdMs) + "/" + id);
      if (typeof row.stage === "string") k.push("T/" + row.stage + "/" + num(row.createdMs) + "/" + id);
      if (Number.isInteger(row.dueMs)) k.push("P/1/" + num(row.dueMs) + "/" + num(row.createdMs) + "/" + id);
    }
    store.put({ v: JSON.stringify(row), n: 1, k }, "R/" + id);
  };
  // Every row's item id and its JSON, from the keys and values of kv.
  const rows = (keys, values) => keys
    .map((k, i) => [k, values[i]])
    .filter(([k]) => k.startsWith("R/"))
    .map(([k, v]) => ({ id: decodeURIComponent(k.slice(2)), row: JSON.parse(v.v) }));
  return { putRow, rows };
})()`;

let web, server, browser, backend, healthy, hostile, fakeOk, slow;
before(async () => {
  web = await snapshotRoot();
  server = await startServer(web.root);
  backend = await relay();
  await backend.start();
  healthy = await faultProxy({ name: "healthy", backend: backend.url });
  hostile = await faultProxy({ name: "hostile", backend: backend.url });
  hostile.setHostile({ hugeBytes: 10 * 1024 * 1024, noticeFlood: 500, authEveryMessage: true, binary: true });
  fakeOk = await faultProxy({ name: "fake-ok", backend: backend.url });
  fakeOk.setHostile({ noticeFlood: 20, authEveryMessage: true, withholdOk: true });
  slow = await faultProxy({ name: "slow", backend: backend.url });
  slow.setDelay(1500);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  for (const p of [healthy, hostile, fakeOk, slow]) await p?.stop();
  await backend?.destroy();
  await server?.close();
  await web?.remove();
});

const sk = generateSecretKey();
let seq = 0;
function events(n, content = (i) => `torture e2e ${i}`) {
  const base = Math.floor(Date.now() / 1000);
  return Array.from({ length: n }, (_, i) => finalizeEvent({ kind: 1, created_at: base - i, tags: [["t", "torture-e2e"]], content: `${content(i)} #${++seq}` }, sk));
}

async function newPage(base = server.url) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error" && /panicked|unreachable/.test(m.text())) errors.push(m.text()); });
  await page.goto(`${base}/tests/e2e/pages/blank.html`);
  return { page, errors };
}

test("bad input: every malformed event, relay URL and option is a typed OutboxError and changes nothing", async () => {
  const { page, errors } = await newPage();
  const { cases, seed } = badInputCases();
  const out = await page.evaluate(runBadInput, [cases, seed, IMPORT_PACKAGE, `bad-input-${Date.now()}`]);
  const wrong = [];
  for (const c of cases) {
    const r = out.results.find((x) => x.name === c.name);
    const codes = c.expect.codes || [c.expect.code];
    const problems = [];
    if (!r || r.ok) problems.push("accepted");
    else {
      if (!r.isOutboxError || !r.isError || r.errName !== "OutboxError") problems.push("not an OutboxError");
      if (!codes.includes(r.code)) problems.push(`code ${r.code}`);
      if (c.expect.reason && r.details?.reason !== c.expect.reason) problems.push(`reason ${r.details?.reason}`);
      if (c.expect.field && r.details?.field !== c.expect.field) problems.push(`field ${r.details?.field}`);
      if (c.expect.index != null && r.details?.index !== c.expect.index) problems.push(`index ${r.details?.index}`);
      if (c.expect.option && r.details?.option !== c.expect.option) problems.push(`option ${r.details?.option}`);
    }
    if (problems.length) wrong.push(`${c.name}: ${problems.join(", ")} (${JSON.stringify(r)})`);
  }
  assert.deepEqual(wrong, [], "every case gets its typed error");
  assert.ok(out.unchanged, `status() and list() unchanged: ${out.before} → ${out.after}`);
  assert.ok(cases.length >= 80, `${cases.length} cases`);
  assert.deepEqual(errors, []);
  await page.close();
});

test("hostile relays: junk, 10 MB frames, unknown/wrong-typed OKs, NOTICE floods, AUTH on every message are ignored", async () => {
  const { page, errors } = await newPage();
  const good = events(4);
  const withheld = events(2);
  const out = await page.evaluate(async ([IMPORT_PACKAGE, good, withheld, urls]) => {
    const { Outbox } = await eval(IMPORT_PACKAGE);
    // 4 × (10 MB + 500 NOTICEs + junk) before each answer: give the publishes time.
    const outbox = await Outbox.open({ name: `hostile-${Date.now()}`, publishTimeoutMs: 20_000 });
    for (const e of good) await outbox.enqueue(e, [urls.hostile, urls.healthy]);
    const stats = await outbox.flush();
    const records = [];
    for (const e of good) records.push(await outbox.get(e.id));
    // The only OKs for these are of the wrong types or for other ids: never accepted.
    const strict = await Outbox.open({ name: `fake-ok-${Date.now()}`, publishTimeoutMs: 2000 });
    for (const e of withheld) await strict.enqueue(e, [urls.fakeOk], { maxAttempts: 1 });
    const strictStats = await strict.flush();
    for (const e of withheld) records.push(await strict.get(e.id));
    // Both still work afterwards.
    const status = await outbox.status();
    const strictStatus = await strict.status();
    await outbox.close();
    await strict.close();
    return { stats, strictStats, status, strictStatus, records };
  }, [IMPORT_PACKAGE, good, withheld, { hostile: hostile.url, healthy: healthy.url, fakeOk: fakeOk.url }]);

  for (const e of good) {
    const rec = out.records.find((r) => r.id === e.id);
    assert.equal(rec.stage, "satisfied", JSON.stringify(rec.targets));
    // Both proxies front one relay: the second to arrive answers `duplicate:`.
    for (const t of rec.targets) assert.ok(["accepted", "duplicate"].includes(t.latest.outcome), JSON.stringify(t));
    assert.equal(rec.evidence.length, 2, "one answer per relay, nothing from the junk");
  }
  for (const e of withheld) {
    const rec = out.records.find((r) => r.id === e.id);
    assert.equal(rec.stage, "exhausted");
    assert.equal(rec.reason, "maxAttempts");
    assert.equal(rec.targets[0].state, "open", "a wrong-typed OK never counts as accepted");
    assert.equal(rec.targets[0].latest.outcome, "timeout", JSON.stringify(rec.targets[0].latest));
  }
  assert.equal(out.status.satisfied, good.length);
  assert.equal(out.strictStatus.exhausted, withheld.length);
  const stored = await queryRelay(backend.url, good.map((e) => e.id));
  assert.equal(stored.length, good.length, "the relay behind the hostile proxy stored every event");
  for (const s of stored) assert.equal(s.sig, good.find((e) => e.id === s.id).sig);
  assert.equal(hostile.log.events.length, good.length, "each event was sent once to the hostile relay");
  assert.equal(fakeOk.log.events.length, withheld.length, "and once to the fake-OK relay");
  assert.deepEqual(errors, [], "no uncaught errors or panics in the page");
  console.log(`# hostile: flush ${JSON.stringify(out.stats)}`);
  await page.close();
});

test("the project's fault relay: every misbehaviour ends in its typed outcome, each event sent once", { skip: faultRelayBinary() ? false : "fault-relay not built (scripts/setup.sh builds it)" }, async () => {
  const fault = await startFaultRelay();
  const { page, errors } = await newPage();
  try {
    const tag = `t=torture-${Date.now()}`;
    const paths = {
      hostile: { path: "/hostile", outcome: "accepted", stage: "satisfied" },
      blocked: { path: "/reply/blocked", outcome: "rejected", rejectReason: "blocked", stage: "exhausted", reason: "rejected" },
      invalid: { path: "/reply/invalid", outcome: "rejected", rejectReason: "invalid", stage: "exhausted", reason: "rejected" },
      rateLimited: { path: "/reply/rate-limited", outcome: "rateLimited", stage: "exhausted", reason: "maxAttempts" },
      error: { path: "/reply/error", outcome: "error", stage: "exhausted", reason: "maxAttempts" },
      duplicate: { path: "/reply/duplicate", outcome: "duplicate", stage: "satisfied" },
      silent: { path: "/silent", outcome: "timeout", stage: "exhausted", reason: "maxAttempts" },
      // An attempt that reached no relay does not use up the budget: still retryable.
      close: { path: "/close", outcome: "unreachable", stage: "retryable" },
      drop: { path: "/drop", outcome: "unreachable", stage: "retryable" },
    };
    const evs = events(Object.keys(paths).length);
    const plan = Object.entries(paths).map(([k, v], i) => ({ k, event: evs[i], relay: `${fault.url}${v.path}?${tag}` }));
    const out = await page.evaluate(async ([IMPORT_PACKAGE, plan]) => {
      const { Outbox } = await eval(IMPORT_PACKAGE);
      const outbox = await Outbox.open({ name: `fault-relay-${Date.now()}`, publishTimeoutMs: 3000, connectTimeoutMs: 3000, maxAttempts: 1 });
      for (const p of plan) await outbox.enqueue(p.event, [p.relay]);
      const stats = await outbox.flush();
      const records = {};
      for (const p of plan) records[p.k] = await outbox.get(p.event.id);
      await outbox.close();
      return { stats, records };
    }, [IMPORT_PACKAGE, plan]);
    const wrong = [];
    for (const [k, want] of Object.entries(paths)) {
      const rec = out.records[k];
      const latest = rec.targets[0].latest;
      const got = { outcome: latest?.outcome, rejectReason: latest?.rejectReason, stage: rec.stage, reason: rec.reason };
      if (got.outcome !== want.outcome || got.stage !== want.stage || (want.rejectReason && got.rejectReason !== want.rejectReason) || (want.reason && got.reason !== want.reason)) {
        wrong.push(`${k}: ${JSON.stringify(got)} (${latest?.message})`);
      }
    }
    assert.deepEqual(wrong, [], "each misbehaviour is recorded as its typed outcome");
    const stats = await fault.control(["STATS"]);
    for (const v of Object.values(paths)) {
      assert.equal(stats.events[`${v.path}?${tag}`], 1, `${v.path}: sent once (${JSON.stringify(stats.events)})`);
    }
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    await fault.stop();
  }
});

test("storage: quota exhausted mid-batch and mid-flush: typed quota_exceeded, nothing lost, delivered once there is room", async () => {
  // An origin of its own: Chromium applies a quota override only to an origin whose
  // storage this browser has not used yet (and estimate() does not show it).
  const origin = await startServer(web.root);
  const { page, errors } = await newPage(origin.url);
  const cdp = await browser.context.newCDPSession(page);
  const quota = (quotaSize) => cdp.send("Storage.overrideQuotaForOrigin", { origin: origin.url, quotaSize });
  const name = `quota-${Date.now()}`;
  // Random (incompressible) 8 KB notes: IndexedDB compresses repetitive values.
  const big = events(160, (i) => `${i} ${randomBytes(4_000).toString("hex")}`);
  const ids = big.slice(0, 10).map((e) => e.id);
  await quota(1024 * 1024);
  const t0 = Date.now();
  const phase = {};
  try {
    // Mid-batch: 150 × 8 KB do not fit in 1 MB.
    const batch = await page.evaluate(async ([IMPORT_PACKAGE, name, big, relays]) => {
      const { Outbox, OutboxError } = await eval(IMPORT_PACKAGE);
      window.describe = (err) => ({ code: err?.code, isOutboxError: err instanceof OutboxError });
      const outbox = (window.outbox = await Outbox.open({ name, leaseMs: 3000, publishTimeoutMs: 2500, connectTimeoutMs: 2000, baseDelayMs: 100, maxDelayMs: 200 }));
      for (const e of big.slice(0, 10)) await outbox.enqueue(e, relays);
      const before = JSON.stringify(await outbox.list({ limit: 1000 }));
      let error = null;
      try { await outbox.enqueueMany(big.slice(10).map((event) => ({ event, relays }))); } catch (err) { error = window.describe(err); }
      const unchanged = JSON.stringify(await outbox.list({ limit: 1000 })) === before;
      return { error, unchanged, status: await outbox.status() };
    }, [IMPORT_PACKAGE, name, big, [slow.url]]);
    assert.equal(batch.error?.code, "quota_exceeded", `a batch over quota fails typed: ${JSON.stringify(batch.error)}`);
    assert.ok(batch.error.isOutboxError);
    assert.ok(batch.unchanged, "the failed batch wrote nothing");
    assert.equal(batch.status.total, 10);
    phase.batch = Date.now() - t0;

    // Mid-flush: some room again, a flush starts (the relay holds each publish 1.5 s)
    // and meanwhile another database of the origin takes every byte left, so the
    // flush's evidence writes find the quota full.
    await quota(4 * 1024 * 1024);
    const full = await page.evaluate(async (name) => {
      const flushing = window.outbox.flush().then((v) => ({ ok: true, v }), (err) => ({ ok: false, ...window.describe(err) }));
      await new Promise((r) => setTimeout(r, 300));
      const filler = await new Promise((ok, fail) => {
        const r = indexedDB.open(`${name}-filler`);
        r.onupgradeneeded = () => r.result.createObjectStore("junk");
        r.onsuccess = () => ok(r.result);
        r.onerror = () => fail(r.error);
      });
      let filled = 0;
      for (let i = 0; i < 200; i++) {
        const tx = filler.transaction("junk", "readwrite");
        tx.objectStore("junk").put(crypto.getRandomValues(new Uint8Array(65536)), i);
        const ok = await new Promise((done) => { tx.oncomplete = () => done(true); tx.onabort = () => done(false); tx.onerror = () => {}; });
        if (!ok) break;
        filled += 1;
      }
      filler.close();
      return { filled, flushed: await flushing, status: await window.outbox.status() };
    }, name);
    assert.ok(!full.flushed.ok, `the flush ran into the full quota: ${JSON.stringify(full)}`);
    assert.equal(full.flushed.code, "quota_exceeded");
    assert.ok(full.flushed.isOutboxError);
    assert.equal(full.status.total, 10, "nothing lost while the quota was full");
    phase.full = Date.now() - t0;

    // Room again: the leases of the failed writes expire and every record is delivered.
    await quota(64 * 1024 * 1024);
    const done = await page.evaluate(async (ids) => {
      const o = window.outbox;
      const until = Date.now() + 30_000;
      let status = await o.status();
      const flushErrors = [];
      while (status.satisfied < 10 && Date.now() < until) {
        await o.flush().catch((err) => flushErrors.push(window.describe(err)));
        await new Promise((r) => setTimeout(r, 300));
        status = await o.status();
      }
      const states = [];
      for (const id of ids) states.push((await o.get(id)).targets.map((t) => t.latest?.outcome).join());
      await o.close();
      return { status, flushErrors, states };
    }, ids);
    phase.done = Date.now() - t0;
    console.log(`# quota phases: ${JSON.stringify(phase)}`);
    console.log(`# quota: batch ${batch.error.code}; flush under a shrinking quota ${full.flushed.code} with ${JSON.stringify(full.status)}; then ${JSON.stringify(done.status)} (${done.states.join(" ")})`);
    assert.equal(done.status.satisfied, 10, JSON.stringify(done));
    assert.equal(done.status.total, 10);
    const stored = await queryRelay(backend.url, ids);
    assert.equal(stored.length, 10, "the relay has every event");
    // At-least-once: publishes whose OK could not be recorded were sent again (`duplicate:`).
    const sent = slow.log.events.filter((e) => ids.includes(e.id)).length;
    assert.ok(sent >= 10, `${sent} EVENT frames`);
    assert.deepEqual(errors, []);
  } finally {
    await quota(undefined).catch(() => {});
    await page.close();
    await origin.close();
  }
});

test("storage: a newer schema on disk is refused with storage_version_too_new and left untouched", async () => {
  const { page, errors } = await newPage();
  const name = `future-${Date.now()}`;
  const out = await page.evaluate(async ([IMPORT_PACKAGE, name]) => {
    const { Outbox, OutboxError } = await eval(IMPORT_PACKAGE);
    const req = (r) => new Promise((ok, fail) => { r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
    const open99 = indexedDB.open(name, 99);
    open99.onupgradeneeded = () => {
      const db = open99.result;
      db.createObjectStore("records", { keyPath: "id" }).put({ id: "from-the-future", v: 7, doc: "?" });
      db.createObjectStore("meta").put({ version: 99, library: "nostr-outbox 9.9.9" }, "schema");
      db.createObjectStore("future");
    };
    (await req(open99)).close();
    let error = null;
    try { await Outbox.open({ name }); } catch (err) { error = { code: err.code, details: err.details, isOutboxError: err instanceof OutboxError }; }
    const db = await req(indexedDB.open(name));
    const after = { version: db.version, stores: [...db.objectStoreNames], rows: await req(db.transaction("records").objectStore("records").getAll()) };
    db.close();
    return { error, after };
  }, [IMPORT_PACKAGE, name]);
  assert.equal(out.error?.code, "storage_version_too_new", JSON.stringify(out.error));
  assert.ok(out.error.isOutboxError);
  assert.equal(out.error.details?.found, 99);
  assert.equal(out.error.details?.supported, SCHEMA);
  assert.equal(out.after.version, 99);
  assert.deepEqual(out.after.stores, ["future", "meta", "records"]);
  assert.deepEqual(out.after.rows, [{ id: "from-the-future", v: 7, doc: "?" }]);
  assert.deepEqual(errors, []);
  await page.close();
});

for (const kind of ["aborted", "committed"]) {
  test(`storage: a version change from another tab during a flush (${kind} upgrade): typed errors, nothing lost`, async () => {
    const a = await newPage();
    const b = await newPage();
    const name = `vchange-${kind}-${Date.now()}`;
    const evs = events(8);
    await a.page.evaluate(async ([IMPORT_PACKAGE, name, evs, relays]) => {
      const { Outbox } = await eval(IMPORT_PACKAGE);
      window.outbox = await Outbox.open({ name, leaseMs: 4000, publishTimeoutMs: 4000, connectTimeoutMs: 2000, baseDelayMs: 100, maxDelayMs: 200 });
      await window.outbox.enqueueMany(evs.map((event) => ({ event, relays })));
      window.flushing = window.outbox.flush().then((v) => ({ ok: true, v }), (err) => ({ ok: false, code: err.code, name: err.name }));
    }, [IMPORT_PACKAGE, name, evs, [slow.url]]);
    // The slow relay holds every publish for 1.5 s: the other tab upgrades meanwhile.
    await new Promise((r) => setTimeout(r, 600));
    const upgrade = await b.page.evaluate(async ([name, kind, next]) => {
      let blocked = false;
      const r = indexedDB.open(name, next);
      r.onblocked = () => { blocked = true; };
      r.onupgradeneeded = () => {
        r.result.createObjectStore("added-by-a-newer-version");
        if (kind === "aborted") r.transaction.abort();
      };
      const result = await new Promise((ok) => {
        r.onsuccess = () => { const v = r.result.version; r.result.close(); ok({ opened: v }); };
        r.onerror = () => ok({ error: r.error?.name });
      });
      return { ...result, blocked };
    }, [name, kind, SCHEMA + 1]);
    const flushed = await a.page.evaluate(() => window.flushing);
    const out = await a.page.evaluate(async () => {
      const o = window.outbox;
      const describe = (err) => ({ code: err.code, name: err.name });
      let status = null;
      let statusError = null;
      const until = Date.now() + 20_000;
      for (;;) {
        try { status = await o.status(); statusError = null; } catch (err) { statusError = describe(err); break; }
        if (status.satisfied === status.total || Date.now() > until) break;
        try { await o.flush(); } catch (err) { statusError = describe(err); break; }
        await new Promise((r) => setTimeout(r, 300));
      }
      return { status, statusError };
    });
    // Whatever the outbox says, the rows are all still there.
    const raw = await b.page.evaluate(async ([name, KV_LAYOUT]) => {
      const kv = eval(KV_LAYOUT);
      const req = (r) => new Promise((ok, fail) => { r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
      const db = await req(indexedDB.open(name));
      const tx = db.transaction("kv");
      const [keys, values] = await Promise.all([req(tx.objectStore("kv").getAllKeys()), req(tx.objectStore("kv").getAll())]);
      db.close();
      const rows = kv.rows(keys, values);
      return { version: db.version, ids: rows.map((r) => r.id), stages: rows.map((r) => r.row.stage) };
    }, [name, KV_LAYOUT]);
    assert.deepEqual(raw.ids.sort(), evs.map((e) => e.id).sort(), "no record lost");
    if (kind === "aborted") {
      assert.equal(upgrade.error, "AbortError", JSON.stringify(upgrade));
      assert.equal(raw.version, SCHEMA);
      assert.ok(flushed.ok || flushed.code, `the flush ended (${JSON.stringify(flushed)})`);
      assert.equal(out.statusError, null, JSON.stringify(out));
      assert.equal(out.status.satisfied, evs.length, `delivered after the aborted upgrade: ${JSON.stringify(out)}`);
    } else {
      assert.equal(upgrade.opened, SCHEMA + 1, `the other tab's upgrade is not blocked: ${JSON.stringify(upgrade)}`);
      assert.equal(raw.version, SCHEMA + 1);
      // This build cannot write a newer database: it says so, typed.
      const codes = [flushed.ok ? null : flushed.code, out.statusError?.code].filter(Boolean);
      assert.ok(codes.length > 0, `some call reports the newer schema: ${JSON.stringify({ flushed, out })}`);
      for (const c of codes) assert.equal(c, "storage_version_too_new", JSON.stringify({ flushed, out }));
    }
    console.log(`# version change (${kind}): flush ${JSON.stringify(flushed.ok ? { delivered: flushed.v.delivered, lostClaims: flushed.v.lostClaims } : flushed)}, then ${JSON.stringify(out)}; rows ${raw.stages.join(",")}`);
    assert.deepEqual([...a.errors, ...b.errors], []);
    await a.page.close();
    await b.page.close();
  });
}

test("storage: undecodable rows are skipped by flush and list, reported by get as corrupt_record, never deleted", async () => {
  const { page, errors } = await newPage();
  const name = `corrupt-${Date.now()}`;
  const evs = events(3);
  const out = await page.evaluate(async ([IMPORT_PACKAGE, name, evs, relays, KV_LAYOUT]) => {
    const { Outbox, OutboxError } = await eval(IMPORT_PACKAGE);
    const kv = eval(KV_LAYOUT);
    const req = (r) => new Promise((ok, fail) => { r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
    const outbox = await Outbox.open({ name, publishTimeoutMs: 3000 });
    for (const e of evs) await outbox.enqueue(e, relays);
    // Garbage rows in `kv`, filed in the claim, list and stage orders as a row would be
    // (docs/STORE.md: { id, v, stage, dueMs?, createdMs, eventId, doc }).
    const db = await req(indexedDB.open(name));
    const garbage = [
      { id: "garbage-doc", v: 1, stage: "pending", dueMs: 0, createdMs: 0, eventId: "x", doc: "{not json" },
      { id: "garbage-format", v: 99, stage: "pending", dueMs: 1, createdMs: 1, eventId: "y", doc: "{}" },
      { id: "garbage-shape", v: "one", stage: 5, dueMs: 2, createdMs: 2 },
      { id: "garbage-key", v: 1, stage: "pending", dueMs: 3, createdMs: 3, eventId: "z", doc: JSON.stringify({ id: "someone-else" }) },
      { id: "garbage-terminal", v: 1, stage: "satisfied", createdMs: 4, eventId: "w", doc: "[]" },
    ];
    const tx = db.transaction("kv", "readwrite");
    for (const g of garbage) kv.putRow(tx.objectStore("kv"), g);
    await new Promise((ok, fail) => { tx.oncomplete = ok; tx.onerror = () => fail(tx.error); });
    const describe = (err) => ({ code: err?.code, isOutboxError: err instanceof OutboxError, details: err?.details ?? null });
    const flush = await outbox.flush().catch((err) => ({ error: describe(err) }));
    const listed = (await outbox.list({ limit: 100 })).map((r) => r.id);
    const status = await outbox.status().catch((err) => ({ error: describe(err) }));
    const gets = {};
    for (const g of garbage) gets[g.id] = await outbox.get(g.id).then(() => "decoded", (err) => describe(err));
    const purged = await outbox.purge({ before: Date.now() + 1000 }).catch((err) => ({ error: describe(err) }));
    const flush2 = await outbox.flush().catch((err) => ({ error: describe(err) }));
    const left = db.transaction("kv");
    const [keys, values] = await Promise.all([req(left.objectStore("kv").getAllKeys()), req(left.objectStore("kv").getAll())]);
    const rows = kv.rows(keys, values).map((r) => r.id);
    db.close();
    await outbox.close();
    return { flush, listed, status, gets, purged, flush2, rows };
  }, [IMPORT_PACKAGE, name, evs, [healthy.url], KV_LAYOUT]);
  assert.ok(!out.flush.error, `flush is not stopped by corrupt rows: ${JSON.stringify(out.flush)}`);
  assert.equal(out.flush.delivered, 3, JSON.stringify(out.flush));
  assert.deepEqual(out.listed.sort(), evs.map((e) => e.id).sort(), "list skips the corrupt rows");
  for (const id of ["garbage-doc", "garbage-format", "garbage-shape", "garbage-key", "garbage-terminal"]) {
    assert.equal(out.gets[id].code, "corrupt_record", `${id}: ${JSON.stringify(out.gets[id])}`);
    assert.ok(out.gets[id].isOutboxError);
  }
  assert.equal(out.purged, 3, "purge deletes the 3 satisfied records and none of the corrupt ones");
  assert.ok(!out.flush2.error, JSON.stringify(out.flush2));
  assert.deepEqual(out.rows.sort(), ["garbage-doc", "garbage-format", "garbage-key", "garbage-shape", "garbage-terminal"], "corrupt rows are never deleted");
  console.log(`# corrupt rows: status ${JSON.stringify(out.status)}, flush ${JSON.stringify(out.flush)}`);
  assert.deepEqual(errors, []);
  await page.close();
});

// Found by this suite (fixed): status() counted undecodable rows under the stage their
// row claims, while list() skipped them and nothing in the JS API named them, so an app
// saw e.g. `pending: 3` that no list() or flush ever resolved. Now status() counts them
// apart as `corrupt` and corruptRecords() names them.
test("storage: status() and list() agree when rows are corrupt, and corruptRecords() names them", async () => {
  const { page } = await newPage();
  const name = `corrupt-count-${Date.now()}`;
  const evs = events(2);
  const out = await page.evaluate(async ([IMPORT_PACKAGE, name, evs, KV_LAYOUT]) => {
    const { Outbox } = await eval(IMPORT_PACKAGE);
    const kv = eval(KV_LAYOUT);
    const req = (r) => new Promise((ok, fail) => { r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
    const outbox = await Outbox.open({ name });
    for (const e of evs) await outbox.enqueue(e, ["ws://127.0.0.1:9"]);
    const db = await req(indexedDB.open(name));
    const tx = db.transaction("kv", "readwrite");
    kv.putRow(tx.objectStore("kv"), { id: "garbage", v: 1, stage: "pending", dueMs: 0, createdMs: 0, eventId: "x", doc: "{not json" });
    await new Promise((ok) => { tx.oncomplete = ok; });
    db.close();
    const status = await outbox.status();
    const listed = await outbox.list({ limit: 1000 });
    const corrupt = await outbox.corruptRecords();
    await outbox.close();
    return { status, listed: listed.length, corrupt };
  }, [IMPORT_PACKAGE, name, evs, KV_LAYOUT]);
  await page.close();
  assert.equal(out.status.corrupt, 1, JSON.stringify(out));
  assert.equal(out.status.pending, 2, `the corrupt row is not counted as pending: ${JSON.stringify(out)}`);
  assert.equal(out.status.total - out.status.corrupt, out.listed, JSON.stringify(out));
  assert.equal(out.corrupt.length, 1, JSON.stringify(out));
  assert.equal(out.corrupt[0].id, "garbage");
  assert.equal(out.corrupt[0].stage, "pending");
  assert.equal(typeof out.corrupt[0].reason, "string");
});

// Found by this suite (fixed): an attempt that reached no relay (offline, relay down,
// circuit open) did not use up the budget, so it raised the attempt limit by one and
// appended its evidence anyway: a record waiting for unreachable relays grew without
// bound (366 KB after 1 050 attempts to 3 relays) and every attempt rewrote the whole,
// growing document. Now such a try is not counted and reuses its evidence entries.
test("a record waiting for unreachable relays stays small and keeps its budget", async () => {
  const { page } = await newPage();
  const [event] = events(1);
  const out = await page.evaluate(async ([IMPORT_PACKAGE, event]) => {
    const { Outbox } = await eval(IMPORT_PACKAGE);
    // Every publish fails as unreachable (a throw), like a relay that is down.
    const transport = { publish: async () => { throw new Error("connection refused"); } };
    const outbox = await Outbox.open({ storage: "memory", transport, baseDelayMs: 1, maxDelayMs: 1, maxAttempts: 3 });
    await outbox.enqueue(event, ["wss://a.example", "wss://b.example", "wss://c.example"]);
    for (let i = 0; i < 1050; i++) {
      await outbox.flush();
      await new Promise((r) => setTimeout(r, 2));
    }
    const rec = await outbox.get(event.id);
    await outbox.close();
    return { stage: rec.stage, attempts: rec.attempts, attemptLimit: rec.attemptLimit, evidence: rec.evidence.length, tries: rec.evidence.map((e) => e.tries), firstAt: rec.evidence.map((e) => typeof e.firstAt), bytes: JSON.stringify(rec).length };
  }, [IMPORT_PACKAGE, event]);
  await page.close();
  console.log(`# unreachable for 1050 flushes: ${JSON.stringify(out)}`);
  assert.equal(out.stage, "retryable", JSON.stringify(out));
  assert.equal(out.attempts, 0, "no try reached a relay: none counted");
  assert.equal(out.attemptLimit, 3, "the budget is untouched");
  assert.equal(out.evidence, 3, "one entry per relay");
  assert.deepEqual(out.tries, [1050, 1050, 1050]);
  assert.deepEqual(out.firstAt, ["number", "number", "number"]);
  assert.ok(out.bytes < 4000, `record size ${out.bytes}`);
});

test("torture (short): tabs + service worker, flapping faulty relays, SIGKILLed browser: nothing lost", { timeout: 6 * 60_000 }, async () => {
  const lines = [];
  const summary = await runTorture({ short: true, log: (...a) => lines.push(a.join(" ")) });
  console.log(formatTable(summary).split("\n").map((l) => `# ${l}`).join("\n"));
  if (summary.failures.length) {
    console.log(lines.map((l) => `# ${l}`).join("\n"));
    // Both sides of every socket, for explaining the failure afterwards.
    const file = new URL("./out/torture-trace.json", import.meta.url);
    await mkdir(new URL("./out/", import.meta.url), { recursive: true });
    await writeFile(file, JSON.stringify({ seed: summary.seed, failures: summary.failures, trace: summary.trace }));
    console.log(`# trace: ${file.pathname}`);
  }
  assert.deepEqual(summary.failures.slice(0, 20), [], `${summary.failures.length} failed checks`);
  assert.equal(summary.lost, 0);
  assert.ok(summary.enqueued >= 50, `${summary.enqueued} events enqueued`);
  assert.ok(summary.crashes >= 2, `${summary.crashes} crashes`);
  assert.ok(summary.flaps >= 3, `${summary.flaps} flaps`);
});
