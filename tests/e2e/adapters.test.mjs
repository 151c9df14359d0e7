// The adapters against the real libraries from npm (versions in tests/e2e/package.json),
// in Chromium: a small app per library, written the way its docs show and bundled with
// esbuild, publishes through the outbox while its nostr-rs-relay is down; the library
// reports the failure its own way; the relay comes back and the outbox delivers the same
// signed event (no re-sign, no re-publish by the app); a `blocked:` refusal from the fault
// relay reaches the app the way that library reports refusals.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile, symlink, rm } from "node:fs/promises";
import { join } from "node:path";
import { build } from "esbuild";
import { startServer, launch, relay, queryRelay, ROOT } from "./harness.mjs";
import { startFaultRelay } from "./torture/fault-relay.mjs";

const OUT = join(ROOT, "target/e2e-adapters");
let server, browser, nrr, fault;

before(async () => {
  // `nostr-outbox` resolves to pkg/ through a node_modules of its own (as if installed).
  await rm(OUT, { recursive: true, force: true });
  await mkdir(join(OUT, "node_modules"), { recursive: true });
  await symlink(join(ROOT, "pkg"), join(OUT, "node_modules/nostr-outbox"));
  for (const lib of ["nostr-tools", "applesauce", "ndk", "welshman"]) {
    await build({
      entryPoints: [join(ROOT, `tests/e2e/adapters/${lib}-app.js`)],
      bundle: true,
      format: "esm",
      target: "es2022",
      outfile: join(OUT, `${lib}.js`),
      nodePaths: [join(OUT, "node_modules"), join(ROOT, "tests/e2e/node_modules")],
      logLevel: "error",
    });
    await writeFile(join(OUT, `${lib}.html`), `<!doctype html><meta charset="utf-8"><script type="module" src="./${lib}.js"></script>\n`);
  }
  server = await startServer();
  browser = await launch();
  nrr = await relay();
  fault = await startFaultRelay();
  if (!fault) throw new Error("tests/fault-relay is not built (scripts/setup.sh builds it)");
});
after(async () => {
  await browser?.close();
  await fault?.stop();
  await nrr?.destroy();
  await server?.close();
});

async function openApp(lib) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}/target/e2e-adapters/${lib}.html`);
  await page.waitForFunction(() => window.app, null, { timeout: 20_000 }).catch(() => {
    throw new Error(`${lib} app did not start: ${errors.join("; ")}`);
  });
  return page;
}

/** Brings the relay back and waits for the outbox's own delivery of `id`; checks the relay holds the signed event. */
async function deliveredOnceBack(page, event) {
  await nrr.start();
  const record = await page.evaluate(async (id) => {
    const r = await app.outbox.get(id);
    if (r.stage === "satisfied") return r;
    return new Promise((ok) => app.outbox.addEventListener("delivered", (e) => e.detail.id === id && ok(e.detail)));
  }, event.id);
  assert.equal(record.stage, "satisfied");
  assert.equal(record.evidence.filter((e) => e.outcome === "accepted").length, 1, "sent once after it came back");
  const stored = await queryRelay(nrr.url, [event.id]);
  assert.equal(stored.length, 1);
  assert.equal(stored[0].sig, event.sig, "the signed event, not re-signed");
  await nrr.stop();
}

test("nostr-tools: pool.publish through the outbox", async () => {
  const page = await openApp("nostr-tools");
  const down = await page.evaluate((url) => app.post([url], "nostr-tools, relay down"), nrr.url);
  assert.equal(down.report.length, 1);
  assert.equal(down.report[0].ok, false);
  assert.equal(down.report[0].isError, true);
  assert.match(down.report[0].message, /^connection failure: .*still queued/);
  assert.equal(down.report[0].queued, true);
  await deliveredOnceBack(page, down.event);

  const refused = await page.evaluate((url) => app.post([url], "nostr-tools, blocked"), `${fault.url}/reply/blocked`);
  assert.equal(refused.report[0].ok, false);
  assert.match(refused.report[0].message, /^blocked: /);
  assert.equal(refused.report[0].queued, false);
  await page.close();
});

test("applesauce: ActionRunner's publish method and the pool's PublishResponse[]", async () => {
  const page = await openApp("applesauce");
  const down = await page.evaluate((url) => app.post([url], "applesauce, relay down"), nrr.url);
  assert.equal(down.inStore, true, "the action ran and saved its event");
  await deliveredOnceBack(page, down.event);

  const refused = await page.evaluate((url) => app.poolPublish([url], "applesauce, blocked"), `${fault.url}/reply/blocked`);
  assert.equal(refused.responses.length, 1);
  assert.equal(refused.responses[0].ok, false);
  assert.match(refused.responses[0].message, /^blocked: /);
  assert.equal(refused.responses[0].from, `${fault.url}/reply/blocked`);
  await page.close();
});

test("ndk: NDKEvent.publish() through the outbox, NDKPublishError on failure", async () => {
  const page = await openApp("ndk");
  const down = await page.evaluate((url) => app.post([url], "ndk, relay down"), nrr.url);
  assert.equal(down.isNDKPublishError, true, JSON.stringify(down));
  assert.match(down.message, /^Not enough relays received the event \(0 published, 1 required\)/);
  assert.equal(down.errors.length, 1);
  assert.match(down.errors[0][1], /^connection failure: .*still queued/);
  assert.equal(down.status, "error");
  assert.equal(down.failedEvent, true, "ndk emitted event:publish-failed");
  await deliveredOnceBack(page, down.event);

  await nrr.start();
  const refused = await page.evaluate(
    ([ok, blocked]) => app.post([ok, blocked], "ndk, one relay blocks", 2),
    [nrr.url, `${fault.url}/reply/blocked`],
  );
  assert.equal(refused.isNDKPublishError, true, JSON.stringify(refused));
  assert.match(refused.message, /\(1 published, 2 required\)/);
  assert.deepEqual(refused.publishedToRelays, [`${nrr.url}/`]);
  assert.match(refused.errors[0][1], /^blocked: /);

  const fine = await page.evaluate((url) => app.post([url], "ndk, relay up"), nrr.url);
  assert.deepEqual(fine.published, [`${nrr.url}/`]);
  assert.equal(fine.status, "success");
  await nrr.stop();
  await page.close();
});

test("welshman: publish({ event, relays, timeout }) statuses through the outbox", async () => {
  const page = await openApp("welshman");
  const down = await page.evaluate((url) => app.post([url], "welshman, relay down"), nrr.url);
  const r = down.results[nrr.url];
  assert.equal(r.status, down.statuses.timeout, JSON.stringify(down));
  assert.match(r.detail, /still queued/);
  assert.deepEqual(down.seen, ["pending", "timeout", "complete"]);
  await deliveredOnceBack(page, down.event);

  const url = `${fault.url}/reply/blocked`;
  const refused = await page.evaluate((url) => app.post([url], "welshman, blocked"), url);
  assert.equal(refused.results[url].status, refused.statuses.failure);
  assert.match(refused.results[url].detail, /^blocked: /);
  await page.close();
});
