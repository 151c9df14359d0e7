// The package through real bundlers: a tiny app (tests/bundlers) built by Vite, webpack 5
// and esbuild with the configs a user would write, served from its output directory and
// run in Chromium against nostr-rs-relay: init (the .wasm found by each bundler's output),
// OutboxError codes, enqueue + flush delivered, outbox.publish (index.js' side effect kept);
// and a module service worker bundled by Vite delivering on a Background Sync event with
// no page of the origin open.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, rm, symlink, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { build as esbuild } from "esbuild";
import { build as vite } from "vite";
import webpack from "webpack";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname } from "node:path";
import { launch, relay, queryRelay, ROOT } from "./harness.mjs";
import { signedEvents } from "./events.mjs";

const APP = join(ROOT, "tests/bundlers");
const OUT = join(ROOT, "target/e2e-bundlers");
let browser, nrr;

before(async () => {
  // The app's node_modules/nostr-outbox is the built package (as `npm install` would give).
  await mkdir(join(APP, "node_modules"), { recursive: true });
  const link = join(APP, "node_modules/nostr-outbox");
  if (!(await lstat(link).catch(() => null))) await symlink(join(ROOT, "pkg"), link);
  await rm(OUT, { recursive: true, force: true });
  browser = await launch();
  nrr = await relay();
  await nrr.start();
});
after(async () => {
  await browser?.close();
  await nrr?.destroy();
});

/**
 * Serves a build's output directory at / (where a user deploys it). Unlike the harness's
 * server it drops kept-alive connections on close: Chromium keeps one open after a page
 * that loaded a classic script, and `close()` would wait for it (about 110 s).
 */
async function serveDir(dir) {
  const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
  const server = createServer(async (req, res) => {
    const path = join(dir, new URL(req.url, "http://x").pathname);
    try {
      if (!path.startsWith(dir)) throw new Error("outside");
      const body = await readFile(path);
      res.writeHead(200, { "content-type": types[extname(path)] || "application/octet-stream", "cache-control": "no-store" });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((ok) => { server.close(ok); server.closeAllConnections(); }),
  };
}

async function runBuilt(dir) {
  const server = await serveDir(dir);
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  try {
    await page.goto(`${server.url}/index.html`);
    await page.waitForFunction(() => window.outboxApp, null, { timeout: 20_000 });
    const [event] = signedEvents(1, { content: () => `bundled ${dir}` });
    // A hang fails with the step it hung in (window.step), not the test runner's timeout.
    let timer;
    const hung = new Promise((_, fail) => {
      timer = setTimeout(async () => {
        const step = await page.evaluate(() => window.step).catch(() => "?");
        fail(new Error(`the app hung in step "${step}"; page errors: ${errors.join("\n")}`));
      }, 60_000);
    });
    const result = await Promise.race([page.evaluate(([e, url]) => outboxApp.run(e, url), [event, nrr.url]), hung])
      .catch((err) => {
        throw new Error(`${err.message}\npage errors: ${errors.join("\n")}`);
      })
      .finally(() => clearTimeout(timer));
    assert.deepEqual(result.codes, ["invalid_event", "invalid_relay_url"]);
    assert.equal(result.disposition, "created");
    assert.equal(result.delivered, 1);
    assert.equal(result.stage, "satisfied");
    assert.equal(result.replay.length, 1, "outbox.publish exists in the bundle");
    assert.equal((await queryRelay(nrr.url, [event.id]))[0]?.sig, event.sig);
  } finally {
    await page.close();
    await server.close();
  }
}

test("Vite", async () => {
  const { default: config } = await import(join(APP, "vite.config.js"));
  const outDir = join(OUT, "vite");
  await vite({ ...config, configFile: false, root: APP, logLevel: "error", build: { ...config.build, outDir, emptyOutDir: true } });
  assert.ok((await readdir(join(outDir, "assets"))).some((f) => f.endsWith(".wasm")), "the .wasm is emitted");
  await runBuilt(outDir);
});

test("webpack 5: no warning with the README's performance.assetFilter", async () => {
  const { default: config } = await import(join(APP, "webpack.config.js"));
  const path = join(OUT, "webpack");
  const stats = await new Promise((ok, fail) =>
    webpack({ ...config, output: { ...config.output, path } }, (err, s) => (err ? fail(err) : ok(s))),
  );
  const info = stats.toJson({ all: false, errors: true, warnings: true });
  assert.deepEqual(info.errors, [], JSON.stringify(info.errors));
  assert.deepEqual(info.warnings.map((w) => w.message), []);
  assert.ok((await readdir(path)).some((f) => f.endsWith(".wasm")), "the .wasm is emitted");
  await runBuilt(path);
});

test("esbuild: --loader:.wasm=file and the exported .wasm path", async () => {
  const { default: config } = await import(join(APP, "esbuild.config.mjs"));
  const outdir = join(OUT, "esbuild");
  await esbuild({ ...config, outdir });
  const { writeFile } = await import("node:fs/promises");
  await writeFile(join(outdir, "index.html"), '<!doctype html><meta charset="utf-8"><script type="module" src="./main-esbuild.js"></script>\n');
  await runBuilt(outdir);
});

test("Vite: a module service worker delivers on a sync event with no page open", async () => {
  const { default: config } = await import(join(APP, "vite.config.js"));
  const outDir = join(OUT, "vite-sw");
  await vite({
    ...config,
    configFile: false,
    root: APP,
    logLevel: "error",
    build: {
      ...config.build,
      outDir,
      emptyOutDir: true,
      rollupOptions: {
        input: { page: join(APP, "sw-page.html"), sw: join(APP, "sw.js") },
        // The worker at /sw.js (its scope is the site), the rest hashed under assets/.
        output: { entryFileNames: (chunk) => (chunk.name === "sw" ? "sw.js" : "assets/[name]-[hash].js") },
      },
    },
  });
  const server = await serveDir(outDir);
  const down = await relay();
  const [event] = signedEvents(1, { content: () => "delivered by the bundled service worker" });
  const context = browser.context;
  let blank;
  try {
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${server.url}/sw-page.html`);
    await page.waitForFunction(() => window.swApp, null, { timeout: 20_000 });
    // The relay is down while the page enqueues: the sync that fires now cannot deliver.
    const queued = await page.evaluate(([e, url]) => swApp.enqueue(e, url), [event, down.url]);
    assert.equal(queued.disposition, "created", errors.join("\n"));
    assert.equal(queued.registered, true, "Background Sync is registered");
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("ServiceWorker.enable");
    const registrations = [];
    cdp.on("ServiceWorker.workerRegistrationUpdated", (m) => registrations.push(...m.registrations));
    const until = Date.now() + 10_000;
    while (!registrations.some((r) => r.scopeURL.startsWith(server.url)) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const registration = registrations.find((r) => r.scopeURL.startsWith(server.url));
    assert.ok(registration, "the worker is registered");
    // No page of the origin open: a blank page keeps the DevTools session, the relay comes
    // back, and the browser's sync event (dispatched as Chromium would) reaches the worker.
    blank = await context.newPage();
    const control = await context.newCDPSession(blank);
    await control.send("ServiceWorker.enable");
    await page.close();
    await down.start();
    let stored = [];
    for (let i = 0; i < 10 && stored.length === 0; i++) {
      await control.send("ServiceWorker.dispatchSyncEvent", {
        origin: server.url,
        registrationId: registration.registrationId,
        tag: "nostr-outbox",
        lastChance: false,
      });
      await new Promise((r) => setTimeout(r, 1000));
      stored = await queryRelay(down.url, [event.id]).catch(() => []);
    }
    assert.equal(stored[0]?.sig, event.sig, "the worker delivered the event as signed");
  } finally {
    await blank?.close();
    await server.close();
    await down.destroy();
  }
});
