// A Chromium the torture suite can crash: started with child_process in its own process
// group (so SIGKILL reaches the browser and every helper process at once, like a crash),
// driven through the DevTools protocol (playwright-core connectOverCDP), restarted on the
// same --user-data-dir.
import { spawn } from "node:child_process";
import { chromium } from "playwright-core";
import { CHROMIUM_ARGS } from "../harness.mjs";

const EXECUTABLE = process.env.CHROMIUM || "/usr/bin/chromium";

/**
 * Starts Chromium on `userDataDir` and connects to it. Returns
 * `{ browser, context, pid, kill(), close(), exited }`.
 */
export async function startChromium(userDataDir, { timeoutMs = 60_000 } = {}) {
  const child = spawn(
    EXECUTABLE,
    [
      ...CHROMIUM_ARGS,
      "--headless",
      "--remote-debugging-port=0",
      "--remote-debugging-address=127.0.0.1",
      `--user-data-dir=${userDataDir}`,
      "--no-default-browser-check",
      "--disable-features=Translate,MediaRouter,OptimizationHints",
      "--password-store=basic",
      "about:blank",
    ],
    { detached: true, stdio: ["ignore", "ignore", "pipe"] },
  );
  const exited = new Promise((ok) => child.once("exit", (code, signal) => ok({ code, signal })));
  let stderr = "";
  const endpoint = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`Chromium did not print its DevTools endpoint in ${timeoutMs} ms:\n${stderr}`)), timeoutMs);
    child.stderr.on("data", (d) => {
      stderr = (stderr + d).slice(-20_000);
      const m = stderr.match(/DevTools listening on (ws:\/\/\S+)/);
      if (m) { clearTimeout(timer); ok(m[1]); }
    });
    child.once("exit", (code, signal) => { clearTimeout(timer); fail(new Error(`Chromium exited (${code ?? signal}) before listening:\n${stderr}`)); });
  });
  // Keep draining stderr so the pipe never fills.
  child.stderr.on("data", () => {});
  const browser = await chromium.connectOverCDP(endpoint, { timeout: timeoutMs });
  const context = browser.contexts()[0];
  const pid = child.pid;
  let dead = false;
  const killGroup = (signal) => {
    try { process.kill(-pid, signal); } catch {}
  };
  const groupAlive = () => {
    try { process.kill(-pid, 0); return true; } catch { return false; }
  };
  const groupGone = async (ms) => {
    const until = Date.now() + ms;
    while (groupAlive() && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  };
  return {
    browser,
    context,
    pid,
    exited,
    /** SIGKILL the browser's process group: a crash, nothing flushed or closed cleanly. */
    async kill() {
      if (dead) return;
      dead = true;
      killGroup("SIGKILL");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      // Helpers that outlived the group leader (they share its group) are gone too.
      killGroup("SIGKILL");
      await groupGone(10_000);
    },
    /** A clean shutdown (used only at the very end); falls back to SIGKILL. */
    async close() {
      if (dead) return;
      dead = true;
      await Promise.race([browser.close().catch(() => {}), new Promise((r) => setTimeout(r, 10_000))]);
      killGroup("SIGTERM");
      const done = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 5_000))]);
      killGroup("SIGKILL");
      if (!done) await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      await groupGone(10_000);
    },
  };
}
