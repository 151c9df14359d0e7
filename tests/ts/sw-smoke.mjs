// The built package (pkg/, from `make build`) in a module service worker, in headless
// Chromium: the worker imports the package statically, registers its handlers during
// evaluation and flushes with handleSync on a Background Sync event and on a message;
// the page enqueues with its own Outbox and sees `delivered` relayed from the worker
// (BroadcastChannel). Also: flush is skipped while offline and the \`online\` event
// resumes auto-flush. Run: node tests/ts/sw-smoke.mjs  (needs tests/ts/node_modules)
import { createServer } from "node:http";
import { readFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, extname, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import assert from "node:assert/strict";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const require = createRequire(join(ROOT, "tests/ts/package.json"));
const { chromium } = require("playwright-core");

const vectors = JSON.parse(await readFile(join(ROOT, "tests/data/event_vectors.json"), "utf8"));
const events = vectors.vectors
  .filter((v) => v.valid_sig && !v.json.includes("expiration"))
  .map((v) => JSON.parse(v.json))
  .filter((e) => e.created_at * 1000 <= Date.now()) // not waiting for their created_at
  .slice(0, 2);

const SW = `
import init, { handleSync, OutboxError } from "/pkg/index.js";
const ready = init();
// Accepts everything: the smoke test is about the worker, not relays.
const transport = { publish: async () => ({ ok: true, message: "" }) };
const options = { name: "sw-smoke", transport };
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("sync", (e) => e.waitUntil(ready.then(() => handleSync(e, options))));
self.addEventListener("message", (e) => {
  e.waitUntil(
    ready
      .then(() => handleSync(e, options))
      .then((stats) => e.source.postMessage({ ok: true, stats }))
      .catch((err) => e.source.postMessage({ ok: false, code: err.code, isOutboxError: err instanceof OutboxError })),
  );
});
`;

const PAGE = `<!doctype html><meta charset="utf-8"><script type="module">
import init, { Outbox, registerBackgroundSync } from "/pkg/index.js";
window.run = async (events) => {
  await init();
  const reg = await navigator.serviceWorker.register("/sw.js", { type: "module", scope: "/" });
  await navigator.serviceWorker.ready;
  if (!navigator.serviceWorker.controller) {
    await new Promise((r) => navigator.serviceWorker.addEventListener("controllerchange", r, { once: true }));
  }
  const outbox = await Outbox.open({ name: "sw-smoke" });
  const delivered = [];
  outbox.addEventListener("delivered", (e) => delivered.push(e.detail.id));
  const waitDelivered = (n, ms) => new Promise((resolve) => {
    const end = Date.now() + ms;
    const tick = () => (delivered.length >= n || Date.now() > end ? resolve(delivered.length) : setTimeout(tick, 20));
    tick();
  });
  // 1. Background Sync: the worker's sync handler flushes.
  await outbox.enqueue(events[0], ["wss://a.example"]);
  const registered = await registerBackgroundSync(reg);
  const afterSync = registered ? await waitDelivered(1, 10000) : 0;
  // 2. A message: the worker flushes and answers with its stats.
  await outbox.enqueue(events[1], ["wss://a.example"]);
  const reply = await new Promise((resolve) => {
    navigator.serviceWorker.addEventListener("message", (e) => resolve(e.data), { once: true });
    navigator.serviceWorker.controller.postMessage("flush");
  });
  const afterMessage = await waitDelivered(2, 5000);
  const status = await outbox.status();
  await outbox.close();
  return { registered, afterSync, reply, afterMessage, status, delivered };
};
// Offline pause and the \`online\` trigger (the test toggles the network).
window.offlineStart = async (event) => {
  await init();
  const transport = { publish: async () => ({ ok: true }) };
  const o = await Outbox.open({ storage: "memory", transport, autoFlush: true });
  window.offlineOutbox = o;
  window.offlineDelivered = 0;
  o.addEventListener("delivered", () => { window.offlineDelivered += 1; });
  await o.enqueue(event, ["wss://a.example"]);
  const stats = await o.flush();
  await new Promise((r) => setTimeout(r, 200));
  return { onLine: navigator.onLine, stats, delivered: window.offlineDelivered };
};
window.offlineEnd = async () => {
  const end = Date.now() + 5000;
  while (window.offlineDelivered < 1 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  const status = await window.offlineOutbox.status();
  await window.offlineOutbox.close();
  return { delivered: window.offlineDelivered, status };
};
window.ready = true;
</script>`;

const MIME = { ".js": "text/javascript", ".wasm": "application/wasm", ".json": "application/json" };
const server = createServer(async (req, res) => {
  const path = new URL(req.url, "http://x").pathname;
  try {
    let body;
    let type = "text/html";
    if (path === "/") body = PAGE;
    else if (path === "/sw.js") [body, type] = [SW, "text/javascript"];
    else if (path.startsWith("/pkg/")) {
      const file = resolve(ROOT, "." + path);
      if (!file.startsWith(join(ROOT, "pkg"))) throw new Error("outside pkg");
      body = await readFile(file);
      type = MIME[extname(file)] || "application/octet-stream";
    } else throw new Error("not found");
    res.writeHead(200, { "content-type": type, "cache-control": "no-store" });
    res.end(body);
  } catch {
    res.writeHead(404);
    res.end();
  }
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const url = `http://127.0.0.1:${server.address().port}/`;

const profile = await mkdtemp(join(tmpdir(), "outbox-sw-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const errors = [];
try {
  context.on("weberror", (e) => errors.push(String(e.error())));
  const page = await context.newPage();
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForFunction(() => window.ready === true);
  const out = await page.evaluate((evs) => window.run(evs), events);
  console.log(JSON.stringify(out));
  assert.equal(out.reply.ok, true, `handleSync from a message: ${JSON.stringify(out.reply)}`);
  assert.equal(out.reply.stats.ran, true);
  assert.equal(out.afterMessage, 2, "both records delivered, seen by the page through the worker");
  assert.equal(out.status.satisfied, 2);
  assert.deepEqual([...out.delivered].sort(), events.map((e) => e.id).sort());
  if (out.registered) {
    assert.equal(out.afterSync, 1, "the sync event flushed the first record");
    assert.equal(out.reply.stats.delivered, 1, "the message flushed only the second");
  }
  // Offline: flush is skipped and auto-flush waits; \`online\` delivers.
  await context.setOffline(true);
  const off = await page.evaluate((ev) => window.offlineStart(ev), events[0]);
  assert.equal(off.onLine, false);
  assert.equal(off.stats.skipped, "offline");
  assert.equal(off.delivered, 0, "nothing published while offline");
  await context.setOffline(false);
  const on = await page.evaluate(() => window.offlineEnd());
  assert.equal(on.delivered, 1, "the online event triggered the flush");
  assert.equal(on.status.satisfied, 1);
  assert.deepEqual(errors, []);
  console.log(`module service worker smoke: ok (background sync ${out.registered ? "registered and fired" : "unavailable"})`);
} finally {
  await context.close();
  server.close();
  await rm(profile, { recursive: true, force: true });
}
