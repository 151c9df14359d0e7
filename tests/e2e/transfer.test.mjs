// Export and import on the built package: a queue with history (delivered, refused,
// unreachable, cancelled, superseded, waiting records) exported from IndexedDB in Chromium,
// imported into the edge build in Node over a storage adapter, exported there byte for byte
// the same, imported back into another IndexedDB database; replays; the records keep being
// delivered from where they arrive; and hostile files, each refused with its typed error and
// line, nothing written. Events signed by nostr-tools; relays played by a `transport`.
// Run: cd tests/e2e && node --test transfer.test.mjs   (needs pkg/ from `make build`)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { readFile, writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { generateSecretKey, finalizeEvent } from "nostr-tools/pure";
import { startServer, launch, IMPORT_PACKAGE, ROOT } from "./harness.mjs";
import { signedEvents } from "./events.mjs";

let server, browser, page;

before(async () => {
  server = await startServer();
  browser = await launch();
  page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  await page.evaluate(async (IMPORT_PACKAGE) => {
    const m = await eval(IMPORT_PACKAGE);
    window.m = m;
    // a accepts, b is down, c refuses for good.
    window.transport = {
      publish: async (relay) => {
        if (relay === "wss://a.example") return { ok: true, message: "" };
        if (relay === "wss://c.example") return { ok: false, message: "blocked: not here" };
        throw new Error("connection refused");
      },
    };
    window.open_ = (name) => m.Outbox.open({ name: `${name}-${Math.random()}`, autoFlush: false, transport: window.transport });
    window.text = (stream) => new Response(stream).text();
  }, IMPORT_PACKAGE);
});
after(async () => {
  await browser?.close();
  await server?.close();
});

const RELAYS = ["wss://a.example", "wss://b.example", "wss://c.example"];
const sk = generateSecretKey();
const notes = signedEvents(64, { sk });
const profile = (at, name) => finalizeEvent({ kind: 0, created_at: at, tags: [], content: JSON.stringify({ name }) }, sk);
const now = Math.floor(Date.now() / 1000);
const [profile1, profile2] = [profile(now - 100, "old"), profile(now - 50, "new")];

/** The edge build in this Node process, over the memory storage adapter. */
async function edgeOutbox(limits) {
  const edge = await import(pathToFileURL(join(ROOT, "pkg/edge/index.js")).href);
  await edge.default();
  const { memoryStorage } = await import(pathToFileURL(join(ROOT, "pkg/memory-storage.js")).href);
  const transport = { publish: async () => ({ ok: true, message: "" }) };
  return edge.Outbox.open({ storage: memoryStorage({ limits }), autoFlush: false, transport });
}

let exported; // the export of the first outbox (IndexedDB)
const FIXTURE = join(ROOT, "tests/data/export_v1.ndjson");

test("the committed export (version 1) imports into IndexedDB and exports the same", async () => {
  // The edge tier exports it from Deno KV and bun:sqlite byte for byte: so a queue moves from
  // there to IndexedDB as from IndexedDB to there.
  const fixture = await readFile(FIXTURE, "utf8");
  const out = await page.evaluate(async (fixture) => {
    const b = await window.open_("transfer-fixture");
    const result = await b.import(fixture);
    return { result, text: await window.text(b.export()) };
  }, fixture);
  const count = fixture.trimEnd().split("\n").length - 1;
  assert.deepEqual(out.result, { total: count, created: count, replayed: 0, superseded: 0 });
  assert.equal(out.text, fixture);
});

test("an IndexedDB queue exports with its history and imports into an edge adapter, byte for byte", async () => {
  const a = await page.evaluate(async ([notes, profile1, profile2, RELAYS]) => {
    const a = await window.open_("transfer-a");
    window.a = a;
    for (const n of notes.slice(0, 4)) await a.enqueue(n, RELAYS);
    await a.enqueue(profile1, ["wss://a.example"]);
    await a.cancel(notes[3].id);
    await a.flush(); // notes 0-2: a accepted, b unreachable, c refused; profile 1 delivered
    await a.enqueue(profile2, ["wss://b.example"]); // waits (b is down): supersedes nothing delivered
    for (const n of notes.slice(4)) await a.enqueue(n, ["wss://a.example"]);
    return { text: await window.text(a.export()), status: await a.status(), list: await a.list({ limit: 1000 }) };
  }, [notes, profile1, profile2, RELAYS]);
  exported = a.text;
  // The file the edge tier imports into Deno KV and bun:sqlite (tests/edge/transfer.mjs).
  if (process.env.WRITE_EXPORT_FIXTURE) await writeFile(FIXTURE, a.text);
  const lines = a.text.split("\n");
  assert.equal(lines[0], '{"format":"nostr-outbox/records","version":1}');
  assert.equal(lines.at(-1), "", "the export ends with a newline");
  assert.equal(lines.length - 2, 66, "every record is a line");
  assert.equal(a.status.total, 66);
  assert.ok(a.status.delivering >= 3 && a.status.cancelled === 1 && a.status.satisfied === 1, JSON.stringify(a.status));

  const edge = await edgeOutbox();
  const progress = [];
  edge.addEventListener("progress", (e) => progress.push(e.detail));
  const result = await edge.import(a.text);
  assert.deepEqual(result, { total: 66, created: 66, replayed: 0, superseded: 0 });
  assert.deepEqual(progress, [
    { operation: "import", done: 50, total: 66 },
    { operation: "import", done: 66, total: 66 },
  ]);
  assert.equal(await new Response(edge.export()).text(), a.text, "exported there as it was exported here");
  assert.deepEqual(await edge.list({ limit: 1000 }), a.list, "the same records, field by field");
  assert.deepEqual(await edge.import(a.text), { total: 66, created: 0, replayed: 66, superseded: 0 });
  // A storage whose commits hold 20 000 bytes (fewer than 50 records): smaller batches.
  const small = await edgeOutbox({ maxMutations: 1000, maxChecks: 100, maxValueBytes: 65536, maxKeyBytes: 65536, maxCommitBytes: 20_000 });
  const steps = [];
  small.addEventListener("progress", (e) => steps.push(e.detail.done));
  assert.deepEqual(await small.import(a.text), { total: 66, created: 66, replayed: 0, superseded: 0 });
  assert.ok(steps.length > 2 && steps.at(-1) === 66, `batches: ${steps}`);
  assert.equal(await new Response(small.export()).text(), a.text);
  await small.close();
  // Delivered from where it arrived: the waiting notes go out from the edge.
  await edge.flush();
  const status = await edge.status();
  assert.equal(status.total, 66);
  assert.ok(status.satisfied >= 61, JSON.stringify(status));
  await edge.close();
});

test("an export imports into another IndexedDB database from a Blob, a stream and bytes", async () => {
  assert.ok(exported, "the first test exported");
  const out = await page.evaluate(async (text) => {
    const results = [];
    const sources = [new Blob([text]), new Response(text).body, new TextEncoder().encode(text)];
    let again;
    for (const source of sources) {
      const b = await window.open_("transfer-b");
      results.push(await b.import(source));
      if (!again) again = { text: await window.text(b.export()), list: await b.list({ limit: 1000 }), replay: await b.import(text) };
      await b.close();
    }
    return { results, again, original: await window.a.list({ limit: 1000 }) };
  }, exported);
  for (const r of out.results) assert.deepEqual(r, { total: 66, created: 66, replayed: 0, superseded: 0 });
  assert.equal(out.again.text, exported);
  assert.deepEqual(out.again.list, out.original);
  assert.deepEqual(out.again.replay, { total: 66, created: 0, replayed: 66, superseded: 0 });
});

test("the queue's rules hold across outboxes: an older version arrives superseded, a newer one withdraws", async () => {
  const out = await page.evaluate(async ([profile1, profile2]) => {
    // Here the newer profile waits; the file brings the older one, waiting there.
    const there = await window.open_("transfer-old");
    await there.enqueue(profile1, ["wss://b.example"]);
    const older = await window.text(there.export());
    const here = await window.open_("transfer-new");
    await here.enqueue(profile2, ["wss://b.example"]);
    const first = await here.import(older);
    const old = await here.get(profile1.id);
    // The other way: the file brings the newer one; the older one here is withdrawn.
    const back = await window.open_("transfer-back");
    await back.enqueue(profile1, ["wss://b.example"]);
    const newer = await window.text(here.export());
    const second = await back.import(newer);
    return { first, old: [old.stage, old.reason, old.supersededBy], withdrawn: (await back.get(profile1.id)).stage, second };
  }, [profile1, profile2]);
  assert.deepEqual(out.first, { total: 1, created: 0, replayed: 0, superseded: 1 });
  assert.deepEqual(out.old, ["superseded", "superseded", profile2.id]);
  assert.equal(out.withdrawn, "superseded");
  assert.equal(out.second.total, 2);
  assert.equal(out.second.replayed, 1, "profile 1 is the same plan here");
});

test("hostile files are refused with their line, and nothing is written", async () => {
  assert.ok(exported, "the first test exported");
  const lines = exported.split("\n");
  const record = JSON.parse(lines[1]);
  const withRecord = (change) => {
    const r = structuredClone(record);
    change(r);
    return [lines[0], JSON.stringify(r)].join("\n");
  };
  const cases = [
    ["empty", "", "invalid_import", 1],
    ["another format", '{"format":"other","version":1}\n', "invalid_import", 1],
    ["a newer version", '{"format":"nostr-outbox/records","version":2}\n', "invalid_import", 1],
    ["not JSON", `${lines[0]}\n{"id":`, "invalid_import", 2],
    ["not a record", `${lines[0]}\n[1,2,3]`, "invalid_import", 2],
    ["the event's text changed", withRecord((r) => (r.event.raw = r.event.raw.replace('"content":"', '"content":"x'))), "invalid_import", 2],
    ["a forged signature", withRecord((r) => (r.event.raw = r.event.raw.replace(/"sig":"(.)/, (_, c) => `"sig":"${c === "0" ? "1" : "0"}`))), "invalid_import", 2],
    ["a verdict its evidence does not give", withRecord((r) => (r.satisfaction = "satisfied")), "invalid_import", 2],
    ["a target that is not a relay", withRecord((r) => (r.targets[0] = "https://evil.example")), "invalid_import", 2],
    ["a stage without its lease", withRecord((r) => (r.stage = "leased")), "invalid_import", 2],
    // Signatures are checked in batches after the other checks: the earlier line still wins.
    ["a forged signature before a bad line", withRecord((r) => (r.event.raw = r.event.raw.replace(/"sig":"(.)/, (_, c) => `"sig":"${c === "0" ? "1" : "0"}`))) + "\n" + lines[2] + "\nnonsense", "invalid_import", 2],
    ["a bad line after a full batch", [...lines.slice(0, 60), "nonsense", ...lines.slice(60)].join("\n"), "invalid_import", 61],
  ];
  const out = await page.evaluate(async ([cases, text]) => {
    const h = await window.open_("transfer-hostile");
    const seen = [];
    for (const [name, file] of cases) {
      try {
        await h.import(file);
        seen.push([name, "imported"]);
      } catch (e) {
        seen.push([name, e.code, e.details?.line ?? null, e instanceof window.m.OutboxError]);
      }
    }
    const afterHostile = (await h.status()).total;
    // Invalid UTF-8 in the middle of a record's line.
    const bytes = new TextEncoder().encode(text);
    const at = text.indexOf('"content') + text.split("\n")[0].length; // inside line 2 or 3
    const broken = new Uint8Array(bytes);
    broken[at] = 0xff;
    let utf8;
    try {
      await h.import(broken);
    } catch (e) {
      utf8 = [e.code, e.details?.line];
    }
    let notASource;
    try {
      await h.import(42);
    } catch (e) {
      notASource = [e.code, e.details?.argument];
    }
    // Another plan under an id, in the file (the same event to other relays) or here.
    const other = await window.open_("transfer-other");
    const firstNote = JSON.parse(text.split("\n")[1]).event.raw;
    await other.enqueue(firstNote, ["wss://z.example"]);
    const otherLine = (await window.text(other.export())).split("\n")[1];
    const rows = text.trimEnd().split("\n");
    const inFile = [...rows, otherLine].join("\n");
    let fileConflict;
    try {
      await h.import(inFile);
    } catch (e) {
      fileConflict = [e.code, e.details?.line, e.details?.id];
    }
    await h.enqueue(firstNote, ["wss://z.example"]);
    let storedConflict;
    try {
      await h.import(text);
    } catch (e) {
      storedConflict = [e.code, e.details?.line, e.details?.id];
    }
    return { seen, afterHostile, utf8, notASource, fileConflict, storedConflict, total: (await h.status()).total, rows: rows.length };
  }, [cases, exported]);
  for (const [name, , code, line] of cases) {
    const got = out.seen.find((s) => s[0] === name);
    assert.deepEqual(got, [name, code, line, true], name);
  }
  assert.equal(out.afterHostile, 0, "no hostile file wrote anything");
  assert.equal(out.utf8[0], "invalid_import");
  assert.ok(out.utf8[1] === 2 || out.utf8[1] === 3, `the line of the broken byte: ${out.utf8[1]}`);
  assert.deepEqual(out.notASource, ["invalid_argument", "source"]);
  const firstId = JSON.parse(lines[1]).id;
  assert.deepEqual(out.fileConflict, ["plan_conflict", out.rows + 1, firstId]);
  assert.deepEqual(out.storedConflict, ["plan_conflict", 2, firstId]);
  assert.equal(out.total, 1, "only the record enqueued here is stored");
});

test("flush() reports progress: each attempt that ended, of the records due when it started", async () => {
  const out = await page.evaluate(async (notes) => {
    const o = await window.open_("progress");
    await o.enqueueMany(notes.map((event) => ({ event, relays: ["wss://a.example"] })));
    const seen = [];
    o.addEventListener("progress", (e) => seen.push(e.detail));
    const result = await o.flush();
    // A flush with nothing due: one event, 0 of 0.
    const idle = seen.length;
    await o.flush();
    return { seen, idle, delivered: result.delivered };
  }, notes);
  const flushes = out.seen.slice(0, out.idle);
  assert.equal(out.delivered, 64);
  assert.ok(flushes.every((p) => p.operation === "flush" && p.total === 64), JSON.stringify(flushes.slice(0, 3)));
  assert.deepEqual(flushes.map((p) => p.done), [...Array.from({ length: 64 }, (_, i) => i + 1), 64]);
  assert.deepEqual(out.seen.slice(out.idle), [{ operation: "flush", done: 0, total: 0 }]);
});

test("enqueueMany of thousands reports progress while IndexedDB takes the writes, then done of all once stored", async () => {
  const many = signedEvents(2000, { sk, content: (i) => `bulk ${i}` });
  const out = await page.evaluate(async (events) => {
    const items = events.map((event) => ({ event, relays: ["wss://a.example", "wss://b.example"] }));
    const o = await window.open_("bulk");
    const seen = [];
    o.addEventListener("progress", (e) => seen.push(e.detail));
    let enqueuedBeforeEnd = 0;
    o.addEventListener("enqueued", () => {
      if (!seen.some((p) => p.done === p.total)) enqueuedBeforeEnd++;
    });
    const answers = await o.enqueueMany(items);
    const atResolve = seen.length;
    // A bad signature on the last item: refused before anything is written, no progress.
    const bad = { ...events[0], sig: "00".repeat(64) };
    const failedSeen = [];
    const other = await window.open_("bulk-bad");
    other.addEventListener("progress", (e) => failedSeen.push(e.detail));
    const refused = await other
      .enqueueMany([...items.slice(1, 500), { event: bad, relays: ["wss://a.example"] }])
      .then(() => null, (e) => [e.code, e.details?.index]);
    // Memory cannot tell how far a commit got: only the end.
    const memory = await window.m.Outbox.open({ storage: "memory", autoFlush: false, transport: window.transport });
    const memorySeen = [];
    memory.addEventListener("progress", (e) => memorySeen.push(e.detail));
    await memory.enqueueMany(items.slice(0, 300));
    return {
      seen, atResolve, answers: answers.length, enqueuedBeforeEnd,
      stored: (await o.status()).total, refused, failedSeen,
      otherStored: (await other.status()).total, memorySeen,
    };
  }, many);
  assert.equal(out.answers, 2000);
  assert.equal(out.stored, 2000);
  assert.ok(out.seen.every((p) => p.operation === "enqueueMany" && p.total === 2000), JSON.stringify(out.seen.slice(0, 3)));
  const dones = out.seen.map((p) => p.done);
  const during = dones.slice(0, -1);
  assert.ok(during.length >= 20, `progress while writing: ${dones.join(",")}`);
  assert.ok(during.every((d, i) => d > 0 && d < 2000 && (i === 0 || d > during[i - 1])), `increasing, below the total: ${dones.join(",")}`);
  assert.equal(dones.at(-1), 2000, "the last is done of all");
  assert.equal(out.atResolve, out.seen.length, "the last arrives before the promise resolves");
  assert.equal(out.enqueuedBeforeEnd, 2000, "the records' events come first, then the end");
  assert.deepEqual(out.refused, ["invalid_event", 499]);
  assert.deepEqual(out.failedSeen, [], "a refused batch reports no progress");
  assert.equal(out.otherStored, 0);
  assert.deepEqual(out.memorySeen, [{ operation: "enqueueMany", done: 300, total: 300 }]);
});
