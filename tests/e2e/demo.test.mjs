// Drives the demo (`make demo`'s page and server) in real Chromium: a note posted while
// relay A is down is queued with evidence; when relay A comes back it is delivered, and
// relay A really has the event. The queue is the page's <nostr-outbox-inspector>
// (nostr-outbox/inspector; playwright's CSS locators pierce its open shadow root). Saves a
// screenshot to tests/e2e/out/demo.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { ROOT, launch, freePort, queryRelay } from "./harness.mjs";

let demo, browser, base, relayA;
before(async () => {
  const [port, r1, r2] = [await freePort(), await freePort(), await freePort()];
  relayA = `ws://127.0.0.1:${r1}`;
  demo = spawn("node", [join(ROOT, "www/server.mjs"), "--port", port, "--relay-port", r1, "--relay2-port", r2], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  base = await new Promise((ok, fail) => {
    let out = "";
    demo.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/open (http:\/\/\S+)/);
      if (m) ok(m[1]);
    });
    demo.once("exit", (code) => fail(new Error(`demo server exited (${code}): ${out}`)));
  });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  if (demo && demo.exitCode === null) {
    const gone = new Promise((ok) => demo.once("exit", ok));
    demo.kill("SIGTERM");
    await gone;
  }
});

test("demo: queued while relay A is down, delivered when it is back", async () => {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(base);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });

  await page.click("#relay-A");
  await page.waitForSelector("#relay-A:text('Start relay A')");
  await page.fill("#content", "hello from the nostr-outbox demo e2e test");
  await page.click("#post");

  // Relay B accepts, relay A is unreachable: the record waits for a retry.
  const rows = page.locator('#inspector tr[part~="row"]');
  const row = rows.first();
  await page.waitForFunction(() => {
    const tr = document.querySelector("#inspector")?.shadowRoot?.querySelector('tr[part~="row"]');
    return tr && ["retryable", "pending", "leased"].includes(tr.dataset.stage) && /unreachable|timeout/.test(tr.textContent);
  }, null, { timeout: 30_000 });
  const id = await row.getAttribute("data-id");
  assert.match(id, /^[0-9a-f]{64}$/);
  assert.equal(await rows.count(), 1);
  assert.deepEqual(await queryRelay(relayA, [id]).catch(() => "down"), "down", "relay A is down");

  await page.click("#relay-A");
  await page.waitForSelector('#inspector tr[part~="row"][data-stage="satisfied"]', { timeout: 60_000 });
  const text = await row.textContent();
  assert.match(text, /accepted/);
  const stored = await queryRelay(relayA, [id]);
  assert.equal(stored.length, 1, "relay A stored the event");
  assert.equal(stored[0].id, id);

  await mkdir(join(ROOT, "tests/e2e/out"), { recursive: true });
  await page.screenshot({ path: join(ROOT, "tests/e2e/out/demo.png"), fullPage: true });
  assert.deepEqual(errors, [], "no uncaught page errors");
});
