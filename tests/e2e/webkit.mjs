// WebKit for the end-to-end tests: WebKitGTK's WebKitWebDriver (Debian's webkit2gtk-driver)
// driving MiniBrowser, Safari's engine, through a small W3C WebDriver client (plain fetch).
// playwright-core drives only its own patched WebKit builds, so the WebKit tests use this.
//
//   const wk = await launchWebKit();          // Xvfb (when there is no $DISPLAY) + driver + session
//   await wk.goto(url);
//   const v = await wk.executeAsync("const done = arguments[arguments.length - 1]; …", [args]);
//   await wk.close();                         // session, driver and Xvfb gone
//
// Paths: WEBKITWEBDRIVER (default /usr/bin/WebKitWebDriver), WEBKIT_BROWSER (default
// Debian's MiniBrowser). `webkitAvailable()` says whether they are installed.
import { spawn, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";

export const WEBKIT_DRIVER = process.env.WEBKITWEBDRIVER || "/usr/bin/WebKitWebDriver";
export const WEBKIT_BROWSER =
  process.env.WEBKIT_BROWSER || "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";

// MiniBrowser's runtime features that Safari (17+) turns on and WebKitGTK leaves off:
// navigator.storage (persist(), persisted(), estimate()).
export const WEBKIT_FEATURES = ["+StorageAPI", "+StorageAPIEstimate"];

export function webkitAvailable() {
  return existsSync(WEBKIT_DRIVER) && existsSync(WEBKIT_BROWSER);
}

/** The WebKitGTK package version (Debian), for the logs and the README's table. */
export function webkitVersion() {
  try {
    return execFileSync("dpkg-query", ["-W", "-f=${Version}", "libwebkit2gtk-4.1-0"]).toString();
  } catch {
    return "unknown";
  }
}

async function freePort() {
  const srv = createServer();
  await new Promise((ok) => srv.listen(0, "127.0.0.1", ok));
  const { port } = srv.address();
  await new Promise((ok) => srv.close(ok));
  return port;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Xvfb on the first free display from :90, or none when $DISPLAY is set.
async function startXvfb() {
  if (process.env.DISPLAY) return { display: process.env.DISPLAY, stop() {} };
  for (let n = 90; n < 140; n++) {
    if (existsSync(`/tmp/.X${n}-lock`) || existsSync(`/tmp/.X11-unix/X${n}`)) continue;
    const proc = spawn("Xvfb", [`:${n}`, "-screen", "0", "1280x1024x24", "-nolisten", "tcp"], {
      stdio: "ignore",
    });
    let exited = false;
    proc.on("exit", () => (exited = true));
    for (let i = 0; i < 100 && !exited; i++) {
      if (existsSync(`/tmp/.X11-unix/X${n}`)) {
        return { display: `:${n}`, stop: () => proc.kill("SIGTERM") };
      }
      await sleep(50);
    }
    proc.kill("SIGKILL");
  }
  throw new Error("webkit: could not start Xvfb (apt: xvfb)");
}

/**
 * Starts Xvfb (without $DISPLAY), WebKitWebDriver and one session with MiniBrowser.
 * Returns { goto, execute, executeAsync, userAgent, close, log }.
 */
export async function launchWebKit({ timeoutMs = 60_000, features = WEBKIT_FEATURES } = {}) {
  if (!webkitAvailable()) {
    throw new Error(`webkit: ${WEBKIT_DRIVER} or ${WEBKIT_BROWSER} missing (scripts/setup.sh installs webkit2gtk-driver)`);
  }
  const xvfb = await startXvfb();
  const port = await freePort();
  const driverLog = [];
  const driver = spawn(WEBKIT_DRIVER, [`--port=${port}`], {
    env: { ...process.env, DISPLAY: xvfb.display },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group: close() takes MiniBrowser and its helpers along
  });
  driver.stdout.on("data", (d) => driverLog.push(d.toString()));
  driver.stderr.on("data", (d) => driverLog.push(d.toString()));
  const base = `http://127.0.0.1:${port}`;
  let sessionId = null;

  async function call(method, path, body, ms = timeoutMs) {
    const res = await fetch(base + path, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(ms),
    });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) {
      const v = json.value || {};
      throw new Error(`webdriver ${method} ${path}: ${res.status} ${v.error || ""} ${v.message || ""}`);
    }
    return json.value;
  }

  const stopAll = () => {
    try {
      process.kill(-driver.pid, "SIGKILL");
    } catch {}
    xvfb.stop();
  };
  try {
    for (let i = 0; ; i++) {
      try {
        await call("GET", "/status", undefined, 2000);
        break;
      } catch (e) {
        if (i > 100) throw new Error(`webkit: WebKitWebDriver did not answer: ${e.message}\n${driverLog.join("")}`);
        await sleep(100);
      }
    }
    const session = await call("POST", "/session", {
      capabilities: {
        alwaysMatch: {
          "webkitgtk:browserOptions": {
            binary: WEBKIT_BROWSER,
            args: ["--automation", ...(features.length ? [`--features=${features.join(",")}`] : [])],
          },
        },
      },
    });
    sessionId = session.sessionId;
    await call("POST", `/session/${sessionId}/timeouts`, { script: timeoutMs, pageLoad: timeoutMs });
  } catch (e) {
    stopAll();
    throw e;
  }
  const s = (p) => `/session/${sessionId}${p}`;
  const wk = {
    capabilities: null,
    log: () => driverLog.join(""),
    goto: (url) => call("POST", s("/url"), { url }),
    /** Runs `script` (a function body; `arguments` are `args`) and returns its value. */
    execute: (script, args = []) => call("POST", s("/execute/sync"), { script, args }),
    /** As execute, but the script calls `arguments[arguments.length - 1](value)` when done. */
    executeAsync: (script, args = [], ms = timeoutMs) =>
      call("POST", s("/execute/async"), { script, args }, ms + 5000),
    /**
     * Awaits the page's `window[name]` promise-returning function called with `args`;
     * returns `{ ok, value }` or `{ ok: false, error }` (the error's name, message, code).
     */
    run: (name, args = [], ms = timeoutMs) =>
      call(
        "POST",
        s("/execute/async"),
        {
          script: `const done = arguments[arguments.length - 1];
            Promise.resolve().then(() => window[${JSON.stringify(name)}](...arguments[0])).then(
              (value) => done({ ok: true, value: value === undefined ? null : value }),
              (e) => done({ ok: false, error: { name: e && e.name, message: String(e && e.message || e), code: e && e.code } }));`,
          args: [args],
        },
        ms + 5000,
      ),
    userAgent: () => call("POST", s("/execute/sync"), { script: "return navigator.userAgent", args: [] }),
    async close() {
      if (sessionId) {
        await call("DELETE", s(""), undefined, 10_000).catch(() => {});
        sessionId = null;
      }
      stopAll();
    },
  };
  return wk;
}
