// Lanes and priority end to end, in Chromium against a real nostr-rs-relay: 10 000
// low-priority events are queued (lane `backfill`) and flushing; then a note is enqueued
// at priority `high`. The note must be published before any of the backlog claimed after
// it: at most the batch whose claim was already in flight when the note was written is
// attempted between its enqueue and its own attempt, and every backlog record attempted
// after it is delivered after it. It is delivered long before the backlog is done.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, relay, queryRelay, IMPORT_PACKAGE } from "./harness.mjs";
import { benchEvents } from "./bench/events.mjs";

const BACKLOG = 10_000;
const BATCH = 16; // the most records of a `low` backlog one claim takes, after the first (4 × lowConcurrency, default 4)

let server, browser, nrr, page;
before(async () => {
  server = await startServer();
  browser = await launch();
  nrr = await relay();
  await nrr.start();
  page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  await page.evaluate(async (IMPORT_PACKAGE) => {
    window.m = await eval(IMPORT_PACKAGE);
  }, IMPORT_PACKAGE);
});
after(async () => {
  await browser?.close();
  await nrr?.destroy();
  await server?.close();
});

test("a high-priority note is published before the low-priority backlog claimed after it", async (t) => {
  const events = await benchEvents(BACKLOG + 1);
  const note = events[BACKLOG];
  const seen = await page.evaluate(async ([url, backlog, note]) => {
    const outbox = await m.Outbox.open({ name: `priority-${Math.random()}` });
    const log = []; // ["attempt" | "delivered", id], in order
    outbox.addEventListener("attempt", (e) => log.push(["attempt", e.detail.id]));
    let delivered = 0;
    let noteDone;
    const noteDelivered = new Promise((ok) => (noteDone = ok));
    outbox.addEventListener("delivered", (e) => {
      log.push(["delivered", e.detail.id]);
      if (e.detail.id === note.id) noteDone();
      else delivered += 1;
    });
    for (let i = 0; i < backlog.length; i += 1000) {
      const items = backlog.slice(i, i + 1000).map((event) => ({ event, relays: [url], priority: "low", lane: "backfill" }));
      await outbox.enqueueMany(items);
    }
    const flushing = outbox.flush();
    while (delivered < 300) await new Promise((r) => setTimeout(r, 5));
    const result = await outbox.enqueue(note, [url], { priority: "high" });
    const enqueuedAt = log.length;
    await noteDelivered;
    const backlogDeliveredWhenNoteWas = delivered;
    const status = await outbox.status({ lane: "backfill" });
    await outbox.close(); // the rest of the backlog stays queued
    await flushing.catch(() => {});
    return { record: result.record, enqueuedAt, log, backlogDeliveredWhenNoteWas, status };
  }, [nrr.url, events.slice(0, BACKLOG), note]);

  assert.equal(seen.record.priority, "high");
  assert.equal(seen.record.lane, "default");
  const attemptAt = seen.log.findIndex(([kind, id]) => kind === "attempt" && id === note.id);
  const deliveredAt = seen.log.findIndex(([kind, id]) => kind === "delivered" && id === note.id);
  assert.ok(attemptAt >= seen.enqueuedAt, "attempted after its enqueue");
  const before = seen.log.slice(seen.enqueuedAt, attemptAt).filter(([kind]) => kind === "attempt");
  t.diagnostic(`backlog attempts between the note's enqueue and its attempt: ${before.length}; backlog delivered when the note was: ${seen.backlogDeliveredWhenNoteWas} of ${BACKLOG}`);
  assert.ok(before.length <= BATCH, `${before.length} backlog attempts started between the note's enqueue and its attempt (at most the batch already claimed)`);
  const attemptedAfter = new Set(seen.log.slice(attemptAt + 1).filter(([kind]) => kind === "attempt").map(([, id]) => id));
  const deliveredBefore = seen.log.slice(0, deliveredAt).filter(([kind, id]) => kind === "delivered" && attemptedAfter.has(id));
  assert.deepEqual(deliveredBefore, [], "no record claimed after the note was delivered before it");
  assert.ok(seen.backlogDeliveredWhenNoteWas < BACKLOG / 2, `the note waited for ${seen.backlogDeliveredWhenNoteWas} backlog records`);
  assert.equal(seen.status.total, BACKLOG, "status by lane counts the backlog");
  assert.ok(seen.status.satisfied < BACKLOG);
  const stored = await queryRelay(nrr.url, [note.id]);
  assert.equal(stored.length, 1);
  assert.equal(stored[0].sig, note.sig);
});
