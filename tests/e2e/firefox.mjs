// Firefox for the end-to-end tests: Firefox ESR (Debian's firefox-esr) headless through
// geckodriver (scripts/setup.sh builds it from its crate into ~/.cargo/bin, as the
// browser-firefox tier uses it), driven with a small W3C WebDriver client (plain fetch), the
// same shape as webkit.mjs: playwright-core drives only its own patched Firefox builds.
//
//   const ff = await launchFirefox();          // geckodriver + a headless session
//   await ff.goto(url);
//   const r = await ff.run("pageFunction", [args]);   // { ok, value } or { ok: false, error }
//   await ff.close();                          // session and driver gone
//
// Paths: GECKODRIVER (default ~/.cargo/bin/geckodriver), FIREFOX (default /usr/bin/firefox-esr).
import { spawn, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { freePort } from "./harness.mjs";

export const GECKODRIVER = process.env.GECKODRIVER || join(homedir(), ".cargo/bin/geckodriver");
export const FIREFOX = process.env.FIREFOX || "/usr/bin/firefox-esr";

export function firefoxAvailable() {
  return existsSync(GECKODRIVER) && existsSync(FIREFOX);
}

/** Firefox's version ("Mozilla Firefox 140.5.0esr"), for the logs. */
export function firefoxVersion() {
  try {
    return execFileSync(FIREFOX, ["--version"], { encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts geckodriver and one headless Firefox session. Returns { goto, execute, run, close, log }. */
export async function launchFirefox({ timeoutMs = 60_000 } = {}) {
  if (!firefoxAvailable()) {
    throw new Error(`firefox: ${GECKODRIVER} or ${FIREFOX} missing (scripts/setup.sh installs firefox-esr and geckodriver)`);
  }
  const port = await freePort();
  const driverLog = [];
  const driver = spawn(GECKODRIVER, [`--port=${port}`, "--host=127.0.0.1"], {
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group: close() takes Firefox along
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
  };
  try {
    for (let i = 0; ; i++) {
      try {
        await call("GET", "/status", undefined, 2000);
        break;
      } catch (e) {
        if (i > 100) throw new Error(`firefox: geckodriver did not answer: ${e.message}\n${driverLog.join("")}`);
        await sleep(100);
      }
    }
    const session = await call("POST", "/session", {
      capabilities: { alwaysMatch: { browserName: "firefox", "moz:firefoxOptions": { binary: FIREFOX, args: ["-headless"] } } },
    });
    sessionId = session.sessionId;
    await call("POST", `/session/${sessionId}/timeouts`, { script: timeoutMs, pageLoad: timeoutMs });
  } catch (e) {
    stopAll();
    throw e;
  }
  const s = (p) => `/session/${sessionId}${p}`;
  return {
    log: () => driverLog.join(""),
    goto: (url) => call("POST", s("/url"), { url }),
    execute: (script, args = []) => call("POST", s("/execute/sync"), { script, args }),
    /** Awaits the page's `window[name](...args)`; `{ ok, value }` or `{ ok: false, error }`. */
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
}
