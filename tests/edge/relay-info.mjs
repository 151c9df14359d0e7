// NIP-11 on the edge: the edge build (pkg/edge) in Deno and Bun, each with its own
// `fetch`, against the fault relay's `/info/<document>` paths (tests/fault-relay). In each
// runtime: an event a relay's document says it cannot take is not sent there (evidence
// `rejected` / `limit`, the relay's EVENT count stays 0) and is delivered to another relay;
// an event within the limit is sent; a hostile document (4 MiB, no content-length) means
// no checks and the event is delivered. Needs the built package and the fault relay.
// Prints `test … ok|FAILED`.
import { writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { generateSecretKey, finalizeEvent } from "../e2e/node_modules/nostr-tools/lib/esm/pure.js";
import { startFaultRelay } from "../e2e/torture/fault-relay.mjs";
import { execFile } from "node:child_process";
import { tally } from "./contract.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, "node_modules", ".bin");
const t = tally((line) => console.log(line));
// Runs the agent; its `@{json}` report lines and output.
const runAgent = (cmd, args) =>
  new Promise((resolve) => {
    execFile(cmd, args, { timeout: 60_000, maxBuffer: 1 << 24 }, (err, stdout, stderr) => {
      const lines = stdout.split("\n");
      resolve({
        code: err ? (err.code ?? 1) : 0,
        reports: lines.filter((l) => l.startsWith("@")).map((l) => JSON.parse(l.slice(1))),
        output: stdout + stderr,
      });
    });
  });
const expect = (cond, what) => {
  if (!cond) throw new Error(what);
};

const fault = await startFaultRelay();
if (!fault) {
  t.bad("relay_info::fault_relay", "tests/fault-relay is not built (scripts/setup.sh builds it)");
  process.exit(1);
}
const dir = mkdtempSync(join(tmpdir(), "outbox-nip11-"));
const key = generateSecretKey();
const now = Math.floor(Date.now() / 1000);
const sign = (content) => finalizeEvent({ kind: 1, created_at: now, tags: [], content }, key);
const events = join(dir, "events.json");
writeFileSync(events, JSON.stringify([sign("z".repeat(1200)), sign("fits"), sign("through a hostile document")]));

// (Node is left out: the Node the tiers run, 20, has no WebSocket, which the relay
// transport needs; Node 22 has one.)
const runtimes = {
  deno: [join(bin, "deno"), ["run", "--no-prompt", "--allow-read", "--allow-net", "--allow-env"]],
  bun: [join(bin, "bun"), ["run"]],
};
try {
  for (const [name, [cmd, flags]] of Object.entries(runtimes)) {
    await t.check(`relay_info::${name}::limits_checked_before_sending`, async () => {
      const config = JSON.stringify({ fault: fault.url, events });
      const { reports, code, output } = await runAgent(cmd, [...flags, join(here, "relay-info-agent.mjs"), config]);
      expect(code === 0 && reports.length === 1, `exit ${code}: ${output.slice(-2000)}`);
      const [r] = reports;
      console.log(`  ${name}: ${r.caches ? "Cache API" : "memory"} keeps the documents`);
      const [big, small, other] = r.evidence;
      const limited = big.find((e) => e.relay.includes("/info/max_message_length"));
      expect(limited?.outcome === "rejected" && limited.rejectReason === "limit", `oversized: ${JSON.stringify(big)}`);
      expect(/max_message_length 1000; the EVENT message is \d+ bytes$/.test(limited.message), limited.message);
      // (Accepted, or `duplicate` when an earlier runtime sent the same event to the fault
      // relay, whose paths share one store.)
      const taken = (e) => e?.outcome === "accepted" || e?.outcome === "duplicate";
      expect(taken(big.find((e) => e.relay.includes("nip11"))), `the other relay: ${JSON.stringify(big)}`);
      expect(taken(small[0]), `within the limit: ${JSON.stringify(small)}`);
      expect(taken(other[0]), `hostile document: ${JSON.stringify(other)}`);
      expect(r.hostile.status === "invalid" && /larger than/.test(r.hostile.notes[0]), JSON.stringify(r.hostile));
      expect(JSON.stringify(r.info) === JSON.stringify({ status: "ok", limits: { max_message_length: 1000 } }), JSON.stringify(r.info));
      const stats = await fault.control(["STATS"]);
      const path = `/info/max_message_length=1000?t=${name}`;
      expect(stats.events[path] === 1, `only the small event reached the limited relay: ${JSON.stringify(stats.events)}`);
      expect(stats.info[path] === 1, `one document fetch for three sends: ${JSON.stringify(stats.info)}`);
    });
  }
} finally {
  await fault.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(t.failed === 0 ? 0 : 1);
