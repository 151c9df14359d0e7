#!/usr/bin/env node
// WebKitWebDriver as wasm-bindgen-test-runner's "safaridriver" (SAFARIDRIVER, set by
// scripts/browser-test.sh webkit):
//   scripts/webkit-driver.mjs --port=N
// The runner asks its Safari driver for a session with empty capabilities, so
// WebKitWebDriver would start MiniBrowser with its defaults. This is a small HTTP proxy on
// 127.0.0.1:N in front of WebKitWebDriver (on a port of its own) that rewrites only the
// new-session request: W3C capabilities naming MiniBrowser and the runtime features Safari
// (17+) has on and WebKitGTK leaves off (navigator.storage: persist(), persisted(),
// estimate()), the same ones tests/e2e/webkit.mjs asks for. Every other request and
// every answer passes through unchanged.
//
// WebKitWebDriver runs under `setpriv --pdeathsig KILL`, so it goes when this process
// goes (the runner ends its driver with SIGKILL). Paths: WEBKITWEBDRIVER (default
// /usr/bin/WebKitWebDriver), WEBKIT_BROWSER (default Debian's MiniBrowser);
// WEBKIT_FEATURES (comma-separated, default "+StorageAPI,+StorageAPIEstimate"; "" for
// MiniBrowser's own defaults).
import { spawn } from "node:child_process";
import { createServer, request } from "node:http";
import { createServer as createNetServer } from "node:net";

const DRIVER = process.env.WEBKITWEBDRIVER || "/usr/bin/WebKitWebDriver";
const BROWSER = process.env.WEBKIT_BROWSER || "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";
const FEATURES = process.env.WEBKIT_FEATURES ?? "+StorageAPI,+StorageAPIEstimate";

const portArg = process.argv.slice(2).find((a) => a.startsWith("--port="));
if (!portArg) {
  console.error("usage: webkit-driver.mjs --port=N");
  process.exit(2);
}
const port = Number(portArg.slice("--port=".length));

const inner = await new Promise((ok) => {
  const s = createNetServer();
  s.listen(0, "127.0.0.1", () => {
    const p = s.address().port;
    s.close(() => ok(p));
  });
});
const driver = spawn("setpriv", ["--pdeathsig", "KILL", "--", DRIVER, `--port=${inner}`], {
  stdio: ["ignore", "inherit", "inherit"],
});
driver.on("exit", (code, signal) => {
  console.error(`webkit-driver: WebKitWebDriver exited (${signal || code})`);
  process.exit(1);
});
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => {
    driver.kill("SIGKILL");
    process.exit(0);
  });
}

function newSessionBody() {
  const args = ["--automation"];
  if (FEATURES) args.push(`--features=${FEATURES}`);
  return JSON.stringify({
    capabilities: { alwaysMatch: { "webkitgtk:browserOptions": { binary: BROWSER, args } } },
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Forwards one request, retrying while WebKitWebDriver is still starting (connection refused).
async function forward(method, path, headers, body, res) {
  for (let attempt = 0; ; attempt++) {
    try {
      await new Promise((ok, fail) => {
        const req = request(
          { host: "127.0.0.1", port: inner, method, path, headers: { ...headers, host: `127.0.0.1:${inner}`, "content-length": Buffer.byteLength(body) } },
          (up) => {
            res.writeHead(up.statusCode, up.headers);
            up.pipe(res);
            up.on("end", ok);
            up.on("error", fail);
          },
        );
        req.on("error", fail);
        req.end(body);
      });
      return;
    } catch (e) {
      if (e.code !== "ECONNREFUSED" || attempt >= 200 || res.headersSent) {
        if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
        res.end(JSON.stringify({ value: { error: "unknown error", message: `webkit-driver: ${e.message}` } }));
        return;
      }
      await sleep(50);
    }
  }
}

createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    let body = Buffer.concat(chunks).toString();
    const path = req.url;
    if (req.method === "POST" && /^\/session\/?$/.test(path)) body = newSessionBody();
    forward(req.method, path, { "content-type": "application/json" }, body, res);
  });
}).listen(port, "127.0.0.1");
