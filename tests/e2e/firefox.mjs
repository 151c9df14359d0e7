// Firefox for the end-to-end tests: Firefox ESR (Debian's firefox-esr) headless through
// geckodriver (scripts/setup.sh builds it from its crate into ~/.cargo/bin, as the
// browser-firefox tier uses it), driven by webdriver.mjs, as webkit.mjs: playwright-core
// drives only its own patched Firefox builds.
//
//   const ff = await launchFirefox();          // geckodriver + a headless session
//   await ff.goto(url);
//   const r = await ff.run("pageFunction", [args]);   // { ok, value } or { ok: false, error }
//   await ff.close();                          // session and driver gone
//
// Paths: GECKODRIVER (default ~/.cargo/bin/geckodriver), FIREFOX (default /usr/bin/firefox-esr).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { startSession } from "./webdriver.mjs";

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

/** Starts geckodriver and one headless Firefox session. Returns { goto, execute, run, close, log }. */
export async function launchFirefox({ timeoutMs = 60_000 } = {}) {
  if (!firefoxAvailable()) {
    throw new Error(`firefox: ${GECKODRIVER} or ${FIREFOX} missing (scripts/setup.sh installs firefox-esr and geckodriver)`);
  }
  return startSession({
    name: "firefox",
    command: GECKODRIVER,
    args: ["--host=127.0.0.1"],
    capabilities: { browserName: "firefox", "moz:firefoxOptions": { binary: FIREFOX, args: ["-headless"] } },
    timeoutMs,
  });
}
