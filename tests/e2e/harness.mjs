// Shared pieces of the end-to-end tests and benchmarks: a static file server for the
// repository (so pages can import pkg/), Debian's Chromium through playwright-core,
// and a real nostr-rs-relay on 127.0.0.1 that a test can stop and start.
import { createServer } from "node:http";
import { createServer as createNetServer, connect } from "node:net";
import { readFile, mkdtemp, writeFile, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir, homedir } from "node:os";
import { join, extname, resolve, dirname } from "node:path";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import WebSocket from "ws";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

const MIME = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".css": "text/css",
  ".png": "image/png",
};

/**
 * Serves `root` (the repository root by default) on 127.0.0.1, a secure context for
 * workers and IDB, on a free port. `headers` are added to every response (the benchmarks
 * send COOP/COEP: a cross-origin isolated page gets `performance.now()` at 5 µs instead
 * of 100 µs).
 */
export async function startServer(root = ROOT, headers = {}) {
  const server = createServer(async (req, res) => {
    try {
      const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
      const file = resolve(root, "." + path);
      if (!file.startsWith(root)) throw new Error("outside root");
      const body = await readFile(file.endsWith("/") ? join(file, "index.html") : file);
      res.writeHead(200, {
        "content-type": MIME[extname(file)] || "application/octet-stream",
        "cache-control": "no-store",
        "service-worker-allowed": "/",
        ...headers,
      });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end("not found");
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((ok) => server.close(ok)) };
}

export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
];

/**
 * Launches headless Chromium with a fresh (or the given) profile directory. `close()`
 * removes a fresh profile (a given one is the caller's, kept for a relaunch).
 */
export async function launch({ userDataDir } = {}) {
  const dir = userDataDir || (await mkdtemp(join(tmpdir(), "outbox-profile-")));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: CHROMIUM_ARGS,
  });
  const close = async () => {
    await context.close();
    if (!userDataDir) await rm(dir, { recursive: true, force: true });
  };
  return { context, dir, close };
}

/** A free TCP port on 127.0.0.1. */
export async function freePort() {
  const srv = createNetServer();
  await new Promise((ok) => srv.listen(0, "127.0.0.1", ok));
  const { port } = srv.address();
  await new Promise((ok) => srv.close(ok));
  return port;
}

async function waitForPort(port, timeoutMs = 15000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const ok = await new Promise((done) => {
      const s = connect(port, "127.0.0.1");
      s.once("connect", () => { s.destroy(); done(true); });
      s.once("error", () => done(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
}

function relayBinary() {
  const candidates = [process.env.NOSTR_RS_RELAY, join(homedir(), ".cargo/bin/nostr-rs-relay")];
  for (const c of candidates) if (c && existsSync(c)) return c;
  return "nostr-rs-relay";
}

/**
 * A real nostr-rs-relay on 127.0.0.1 with a temporary database. `stop()` and `start()`
 * keep the same port and data, so a test can take the relay down and bring it back.
 */
export async function relay({ port, maxEventBytes = 1048576 } = {}) {
  const dataDir = await mkdtemp(join(tmpdir(), "outbox-relay-"));
  port = port || (await freePort());
  const config = join(dataDir, "config.toml");
  await writeFile(
    config,
    [
      "[info]",
      `relay_url = "ws://127.0.0.1:${port}/"`,
      'name = "nostr-outbox test relay"',
      "[database]",
      `data_directory = "${dataDir}"`,
      "[network]",
      'address = "127.0.0.1"',
      `port = ${port}`,
      "[limits]",
      "messages_per_sec = 100000",
      `max_event_bytes = ${maxEventBytes}`,
      "max_ws_message_bytes = 4194304",
      "max_ws_frame_bytes = 4194304",
      "broadcast_buffer = 65536",
      "event_persist_buffer = 65536",
      "[options]",
      "reject_future_seconds = 1800",
      "",
    ].join("\n"),
  );
  let child = null;
  let stderr = "";
  const handle = {
    url: `ws://127.0.0.1:${port}`,
    port,
    dataDir,
    running: () => child !== null,
    /** The last 4 000 characters the relay wrote to stderr (its log, RUST_LOG=warn). */
    stderr: () => stderr,
    async start() {
      if (child) return;
      child = spawn(relayBinary(), ["--config", config, "--db", dataDir], {
        stdio: ["ignore", "ignore", "pipe"],
        env: { ...process.env, RUST_LOG: "warn" },
      });
      child.stderr.on("data", (d) => { stderr = (stderr + d).slice(-4000); });
      child.once("exit", () => { child = null; });
      try {
        await waitForPort(port);
      } catch (err) {
        throw new Error(`${err.message}\nnostr-rs-relay stderr:\n${stderr}`);
      }
    },
    async stop() {
      if (!child) return;
      const c = child;
      const gone = new Promise((ok) => c.once("exit", ok));
      c.kill("SIGKILL");
      await gone;
      child = null;
    },
    async destroy() {
      await handle.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return handle;
}

/** Sends a REQ for `ids` to `url` and collects the events until EOSE. */
export async function queryRelay(url, ids, timeoutMs = 5000) {
  const ws = new WebSocket(url);
  const events = [];
  await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error("REQ timed out")), timeoutMs);
    ws.onopen = () => ws.send(JSON.stringify(["REQ", "q", { ids }]));
    ws.onmessage = (m) => {
      const msg = JSON.parse(String(m.data));
      if (msg[0] === "EVENT") events.push(msg[2]);
      if (msg[0] === "EOSE") { clearTimeout(timer); ok(); }
    };
    ws.onerror = () => { clearTimeout(timer); fail(new Error(`cannot reach ${url}`)); };
  });
  ws.close();
  return events;
}

/**
 * A page-side snippet (string) that imports the built package the way a user would:
 * through the entry its package.json names, then runs init(). Use inside page.evaluate:
 * `const m = await eval(IMPORT_PACKAGE)`.
 */
export const IMPORT_PACKAGE = `(async () => {
  const pkg = await (await fetch("/pkg/package.json")).json();
  const entry = (pkg.exports && pkg.exports["."] && (pkg.exports["."].browser || pkg.exports["."].import || pkg.exports["."].default)) || pkg.module || pkg.main;
  const m = await import("/pkg/" + String(entry).replace(/^\\.\\//, ""));
  await m.default();
  return m;
})()`;

/**
 * A Chromium page with the built package imported as `window.m`, for the benches of one
 * cost (tests/e2e/bench/*-cost.mjs); with `relay`, a local nostr-rs-relay started too.
 * Resolves with { page, nrr, close }.
 */
export async function packagePage({ relay: withRelay = false } = {}) {
  const server = await startServer();
  const nrr = withRelay ? await relay() : null;
  await nrr?.start();
  const browser = await launch();
  const page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  await page.evaluate(async (IMPORT_PACKAGE) => { window.m = await eval(IMPORT_PACKAGE); }, IMPORT_PACKAGE);
  const close = async () => {
    await browser.close();
    await nrr?.destroy();
    await server.close();
  };
  return { page, nrr, close };
}
