// WebKit for the end-to-end tests: WebKitGTK's WebKitWebDriver (Debian's webkit2gtk-driver)
// driving MiniBrowser, Safari's engine, through webdriver.mjs (a small W3C WebDriver client).
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
import { startSession } from "./webdriver.mjs";

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
  return startSession({
    name: "webkit",
    command: WEBKIT_DRIVER,
    env: { ...process.env, DISPLAY: xvfb.display },
    capabilities: {
      "webkitgtk:browserOptions": {
        binary: WEBKIT_BROWSER,
        args: ["--automation", ...(features.length ? [`--features=${features.join(",")}`] : [])],
      },
    },
    timeoutMs,
    onStop: () => xvfb.stop(),
  });
}
