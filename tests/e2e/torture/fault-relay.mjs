// The project's fault relay (tests/fault-relay, built by scripts/setup.sh and
// scripts/with-relays.sh) started from Node: behaviours by URL path (`/hostile`,
// `/reply/<prefix>`, `/silent`, `/close`, `/drop`, …) and a `/control` channel (`STATS`).
// Returns null when the binary is not built.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";

export function faultRelayBinary() {
  const tools = process.env.NOSTR_OUTBOX_TOOLS || join(homedir(), ".cache/nostr-outbox-tools");
  const candidates = [
    process.env.FAULT_RELAY_BIN,
    join(process.env.FAULT_RELAY_TARGET_DIR || join(tools, "fault-relay-target"), "release/fault-relay"),
  ];
  return candidates.find((c) => c && existsSync(c)) || null;
}

export async function startFaultRelay() {
  const bin = faultRelayBinary();
  if (!bin) return null;
  const dir = await mkdtemp(join(tmpdir(), "outbox-fault-relay-"));
  const ready = join(dir, "ready.env");
  const child = spawn(bin, ["--ready-file", ready, "--parent-pid", String(process.pid)], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr = (stderr + d).slice(-4000); });
  const gone = new Promise((ok) => child.once("exit", ok));
  let url = null;
  for (let i = 0; i < 300 && !url; i++) {
    url = (await readFile(ready, "utf8").catch(() => "")).match(/OUTBOX_TEST_FAULT_URL=(\S+)/)?.[1] ?? null;
    if (!url) await new Promise((r) => setTimeout(r, 50));
    if (child.exitCode !== null) break;
  }
  if (!url) {
    child.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
    throw new Error(`fault-relay did not start: ${stderr}`);
  }
  return {
    url,
    /** Sends one `/control` command and returns its answer. */
    async control(cmd) {
      const ws = new WebSocket(`${url}/control`);
      try {
        return await new Promise((ok, fail) => {
          const timer = setTimeout(() => fail(new Error("control timed out")), 5000);
          ws.onopen = () => ws.send(JSON.stringify(cmd));
          ws.onmessage = (m) => { clearTimeout(timer); ok(JSON.parse(String(m.data))[1]); };
          ws.onerror = () => { clearTimeout(timer); fail(new Error("control unreachable")); };
        });
      } finally {
        ws.close();
      }
    },
    async stop() {
      if (child.exitCode === null) child.kill("SIGKILL");
      await gone;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
