// A small W3C WebDriver client (plain fetch) for the browsers playwright-core does not drive
// (it drives only its own patched Firefox and WebKit builds): firefox.mjs (geckodriver) and
// webkit.mjs (WebKitWebDriver) start their driver and session through it.
import { spawn } from "node:child_process";
import { freePort } from "./harness.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Spawns `command` with `--port=<free port>` and `args` (its own process group), waits for
 * its `/status`, opens a session with `capabilities` and returns { goto, execute,
 * executeAsync, run, userAgent, close, log }. `onStop` runs after the driver is killed
 * (close(), or a failed start). `name` prefixes errors.
 */
export async function startSession({ name, command, args = [], env = process.env, capabilities, timeoutMs, onStop = () => {} }) {
  const port = await freePort();
  const driverLog = [];
  const driver = spawn(command, [`--port=${port}`, ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group: close() takes the browser and its helpers along
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
    onStop();
  };
  try {
    for (let i = 0; ; i++) {
      try {
        await call("GET", "/status", undefined, 2000);
        break;
      } catch (e) {
        if (i > 100) throw new Error(`${name}: ${command} did not answer: ${e.message}\n${driverLog.join("")}`);
        await sleep(100);
      }
    }
    const session = await call("POST", "/session", { capabilities: { alwaysMatch: capabilities } });
    sessionId = session.sessionId;
    await call("POST", `/session/${sessionId}/timeouts`, { script: timeoutMs, pageLoad: timeoutMs });
  } catch (e) {
    stopAll();
    throw e;
  }
  const s = (p) => `/session/${sessionId}${p}`;
  return {
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
    run: (fn, args = [], ms = timeoutMs) =>
      call(
        "POST",
        s("/execute/async"),
        {
          script: `const done = arguments[arguments.length - 1];
            Promise.resolve().then(() => window[${JSON.stringify(fn)}](...arguments[0])).then(
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
