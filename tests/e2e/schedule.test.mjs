// Scheduled and undoable sends, in Chromium against a real nostr-rs-relay, with auto-flush
// on in two tabs of one outbox: a note scheduled in 3 s reaches the relay at its time and
// not before; one scheduled in a minute and rescheduled to 1.5 s goes then; one cancelled
// before its time after a reload of the page (the undo) never reaches the relay, though the
// other tab flushes too; refusals are typed and change nothing.
// Run: cd tests/e2e && node --test schedule.test.mjs   (needs pkg/ from `make build`)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, relay, queryRelay, IMPORT_PACKAGE } from "./harness.mjs";
import { signedEvents } from "./events.mjs";

let server, browser, nrr;
before(async () => {
  server = await startServer();
  browser = await launch();
  nrr = await relay();
  await nrr.start();
});
after(async () => {
  await browser?.close();
  await nrr?.destroy();
  await server?.close();
});

/** A tab with the package loaded and `window.outbox` open on `name` (auto-flush on). */
async function tab(name) {
  const page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  await page.evaluate(async ([IMPORT_PACKAGE, name]) => {
    window.m = await eval(IMPORT_PACKAGE);
    window.outbox = await window.m.Outbox.open({ name, autoFlush: true });
  }, [IMPORT_PACKAGE, name]);
  return page;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test("scheduled notes go at their time, a rescheduled one at its new time, an undone one never, across a reload and two tabs", async () => {
  const name = `schedule-${Math.random()}`;
  const [soon, later, undone] = signedEvents(3, { content: (i) => `scheduled ${i}` });
  const url = nrr.url;
  let a = await tab(name);
  const b = await tab(name); // another tab flushing the same outbox
  const t0 = Date.now();
  const enq = await a.evaluate(async ([soon, later, undone, url, t0]) => {
    const at = (r) => r.nextAttemptAt;
    const s = await outbox.enqueue(soon, [url], { notBefore: t0 + 3000 });
    const l = await outbox.enqueue(later, [url], { notBefore: t0 + 60_000 });
    const u = await outbox.enqueue(undone, [url], { notBefore: t0 + 6000 });
    const moved = await outbox.reschedule(later.id, t0 + 1500);
    const again = await outbox.enqueue(soon, [url], { notBefore: t0 + 99_000 });
    const code = (p) => p.then(() => null, (e) => e.code);
    const bad = {
      type: await code(outbox.reschedule(later.id, "soon")),
      negative: await code(outbox.enqueue(soon, [url], { notBefore: -1 })),
      unknown: await code(outbox.reschedule("nope", t0)),
    };
    return {
      stages: [s.record.stage, l.record.stage, u.record.stage],
      times: [at(s.record), at(l.record), at(u.record), at(moved)],
      again: again.disposition,
      againAt: at(again.record),
      bad,
    };
  }, [soon, later, undone, url, t0]);
  assert.deepEqual(enq.stages, ["pending", "pending", "pending"]);
  assert.deepEqual(enq.times.slice(0, 3), [t0 + 3000, t0 + 60_000, t0 + 6000]);
  assert.equal(enq.times[3], t0 + 1500, "rescheduled");
  assert.equal(enq.again, "replay", "the same plan at another time replays");
  assert.equal(enq.againAt, t0 + 3000, "and keeps its time");
  assert.deepEqual(enq.bad, { type: "invalid_argument", negative: "invalid_options", unknown: "not_found" });

  // The undo, across a reload: the page comes back and cancels before the time.
  await a.reload();
  await a.evaluate(async ([IMPORT_PACKAGE, name]) => {
    window.m = await eval(IMPORT_PACKAGE);
    window.outbox = await window.m.Outbox.open({ name, autoFlush: true });
  }, [IMPORT_PACKAGE, name]);
  const cancelled = await a.evaluate(async (id) => (await outbox.cancel(id)).stage, undone.id);
  assert.equal(cancelled, "cancelled");
  assert.ok(Date.now() < t0 + 6000, `the undo came in time (${Date.now() - t0} ms)`);

  // Nothing before its time.
  const early = await queryRelay(url, [soon.id, later.id, undone.id]);
  assert.deepEqual(early.map((e) => e.id), [], `nothing is sent early (${Date.now() - t0} ms)`);

  // Each at its time: `later` (moved to 1.5 s), then `soon` (3 s).
  const delivered = await a.evaluate(async (ids) => {
    const until = Date.now() + 15_000;
    for (;;) {
      const records = await Promise.all(ids.map((id) => outbox.get(id)));
      if (records.every((r) => r.stage === "satisfied") || Date.now() > until) {
        return records.map((r) => ({ stage: r.stage, firstAt: Math.min(...r.evidence.map((e) => e.firstAt ?? e.at)) }));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }, [later.id, soon.id]);
  assert.deepEqual(delivered.map((d) => d.stage), ["satisfied", "satisfied"]);
  assert.ok(delivered[0].firstAt >= t0 + 1500, `rescheduled: sent at +${delivered[0].firstAt - t0} ms`);
  assert.ok(delivered[1].firstAt >= t0 + 3000, `scheduled: sent at +${delivered[1].firstAt - t0} ms`);
  assert.ok(delivered[1].firstAt < t0 + 10_000, `scheduled: not late (+${delivered[1].firstAt - t0} ms)`);

  // Past the undone one's time, with both tabs flushing: never sent.
  while (Date.now() < t0 + 7000) await sleep(100);
  const on = (await queryRelay(url, [soon.id, later.id, undone.id])).map((e) => e.id).sort();
  assert.deepEqual(on, [soon.id, later.id].sort());
  const rest = await b.evaluate(async (id) => (await outbox.get(id)).stage, undone.id);
  assert.equal(rest, "cancelled", "the other tab sees the undo");
  const late = await a.evaluate(async (id) => outbox.reschedule(id, 0).then(() => null, (e) => [e.code, e.details?.stage]), undone.id);
  assert.deepEqual(late, ["already_terminal", "cancelled"]);
  await a.evaluate(() => outbox.close());
  await b.evaluate(() => outbox.close());
});

test("an undo window that ends with no page open: the service worker's one-off sync sends the note at its time, not the undone one", async () => {
  const name = `schedule-sw-${Math.random()}`;
  const [note, undone] = signedEvents(2, { content: (i) => `sent by the worker ${i}` });
  const url = nrr.url;
  const page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  // The torture suite's module service worker (handleSync on `sync`), on this outbox.
  await page.evaluate(async (name) => {
    const sw = `/tests/e2e/torture/sw.js?options=${encodeURIComponent(JSON.stringify({ name }))}`;
    await navigator.serviceWorker.register(sw, { type: "module", scope: "/" });
    await navigator.serviceWorker.ready;
  }, name);
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send("ServiceWorker.enable");
  const registrations = [];
  cdp.on("ServiceWorker.workerRegistrationUpdated", (m) => registrations.push(...m.registrations));
  const t0 = Date.now();
  const stages = await page.evaluate(async ([IMPORT_PACKAGE, name, note, undone, url, t0]) => {
    const m = await eval(IMPORT_PACKAGE);
    const outbox = await m.Outbox.open({ name, autoFlush: false });
    const a = await outbox.enqueue(note, [url], { notBefore: t0 + 4000 });
    const b = await outbox.enqueue(undone, [url], { notBefore: t0 + 4000 });
    const c = await outbox.cancel(undone.id); // the undo
    await outbox.close();
    return [a.record.stage, b.record.stage, c.stage];
  }, [IMPORT_PACKAGE, name, note, undone, url, t0]);
  assert.deepEqual(stages, ["pending", "pending", "cancelled"]);
  while (!registrations.some((r) => r.scopeURL.startsWith(server.url)) && Date.now() < t0 + 10_000) await sleep(50);
  const registration = registrations.find((r) => r.scopeURL.startsWith(server.url));
  assert.ok(registration, "the worker is registered");
  // No page of the origin open; the browser's one-off sync comes (as Chromium dispatches it
  // when a page registered one while online) long before the note's time.
  const blank = await browser.context.newPage();
  const control = await browser.context.newCDPSession(blank);
  await control.send("ServiceWorker.enable");
  await page.close();
  await control.send("ServiceWorker.dispatchSyncEvent", {
    origin: server.url,
    registrationId: registration.registrationId,
    tag: name,
    lastChance: false,
  });
  assert.ok(Date.now() < t0 + 4000, `the sync came before the note's time (+${Date.now() - t0} ms)`);
  // The sync event stays open until the note is due and flushes it then.
  let on = [];
  while (on.length === 0 && Date.now() < t0 + 15_000) {
    await sleep(200);
    on = await queryRelay(url, [note.id, undone.id]);
  }
  const sentAt = Date.now() - t0;
  assert.deepEqual(on.map((e) => e.id), [note.id], `the note is on the relay (+${sentAt} ms), the undone one not`);
  assert.ok(sentAt >= 4000, `not before its time (+${sentAt} ms)`);
  await sleep(500);
  assert.deepEqual((await queryRelay(url, [undone.id])).map((e) => e.id), [], "the undone note is never sent");
  await blank.close();
});
