// The crash scenario of the edge runtimes, driven from Node, against a real nostr-rs-relay
// (tests/e2e/harness.mjs) that is DOWN first and started later:
//   1. 200 signed events are enqueued (enqueueMany, chunks of 100: Deno KV allows 100
//      checks per commit) while the relay is down; a flush records it unreachable;
//   2. the relay is started; a runtime process flushes and is SIGKILLed in the middle of
//      the flush (some records delivered, others leased);
//   3. a new process on the same storage flushes until nothing waits, with the default
//      lease (120 s): the dead flusher's leases are taken over once its heartbeat lapses;
//   4. checks: every event is on the relay (REQ by ids), every record `satisfied`, none
//      lost, attempts >= 1 with evidence; bad input gives typed OutboxError codes and
//      writes nothing.
// Deno (deno-kv) and Bun (bun:sqlite) run tests/edge/scenario-agent.mjs, one process per
// phase. workerd runs examples/worker-durable-object (its Durable Object on
// durableObjectStorage) in miniflare in a child Node process (tests/edge/scenario-workerd.mjs)
// whose process group is SIGKILLed. Also in workerd: an outbox kept across two requests
// (module scope, and the example's object) flushes in both.
// Needs the built package (pkg/, `make build`) and nostr-rs-relay. Prints `test … ok|FAILED`.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { relay as makeRelay, queryRelay } from "../e2e/harness.mjs";
import { signedEvents } from "../e2e/events.mjs";
import { tally } from "./contract.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const bin = join(here, "node_modules", ".bin");
const COUNT = 200;
const t = tally((line) => console.log(line));
const { ok, bad } = t;
const expect = (cond, what) => {
  if (!cond) throw new Error(what);
};

/**
 * Runs `cmd args`, collecting its `@{json}` lines; `onReport(value, child)` sees each as it
 * comes. Resolves with { reports, code, signal, output } when the process ends.
 */
export function runAgent(cmd, args, { onReport = () => {}, timeoutMs = 60000, detached = false, env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"], detached, env: env ?? process.env });
    const reports = [];
    let output = "";
    const timer = setTimeout(() => {
      kill(child, detached);
      reject(new Error(`${cmd} ${args[0]}: no end within ${timeoutMs} ms; output:\n${output.slice(-3000)}`));
    }, timeoutMs);
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.startsWith("@")) {
        const value = JSON.parse(line.slice(1));
        reports.push(value);
        onReport(value, child);
      } else output += line + "\n";
    });
    child.stderr.on("data", (d) => (output = (output + d).slice(-20000)));
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      // Let readline deliver the last lines.
      setImmediate(() => resolve({ reports, code, signal, output, child }));
    });
    runAgent.last = child;
  });
}

/** SIGKILL a child (and its process group when it leads one: miniflare's workerd). */
export function kill(child, group) {
  try {
    if (group) process.kill(-child.pid, "SIGKILL");
    else child.kill("SIGKILL");
  } catch {
    /* already gone */
  }
}

/** Every id on the relay (REQ by ids, 100 at a time). */
export async function onRelay(url, ids) {
  const found = new Set();
  for (let i = 0; i < ids.length; i += 100) {
    for (const e of await queryRelay(url, ids.slice(i, i + 100))) found.add(e.id);
  }
  return found;
}

/** The checks shared by every runtime on what the relaunched outbox reports. */
export function checkRecovered(r, ids, totalBefore) {
  expect(r.records.length === ids.length, `${r.records.length} records, not ${ids.length}`);
  const byId = new Map(r.records.map((x) => [x.id, x]));
  const lost = ids.filter((id) => !byId.has(id));
  expect(lost.length === 0, `records lost: ${lost.slice(0, 5)}`);
  const unsatisfied = r.records.filter((x) => x.stage !== "satisfied");
  expect(unsatisfied.length === 0, `not satisfied: ${JSON.stringify(unsatisfied.slice(0, 3))}`);
  const noAttempt = r.records.filter((x) => !(x.attempts >= 1) || !(x.evidence >= 1) || !(x.accepted >= 1));
  expect(noAttempt.length === 0, `without an attempt or accepted evidence: ${JSON.stringify(noAttempt.slice(0, 3))}`);
  expect(r.status.satisfied === ids.length && r.status.total === ids.length, `status ${JSON.stringify(r.status)}`);
  const want = { tampered: "invalid_event", tamperedMany: "invalid_event", unknownOption: "invalid_options", badRelayUrl: "invalid_relay_url" };
  for (const [k, code] of Object.entries(want)) expect(r.bad[k] === code, `${k}: ${r.bad[k]}, expected ${code}`);
  expect(r.totalAfterBad === totalBefore, `status().total ${r.totalAfterBad} after bad input, ${totalBefore} before`);
}

// enqueueMany chunks: Deno KV allows 80 KiB of keys per atomic operation (the adapter's
// `maxKeyBytes`), about 74 new records' row and index keys; 100 notes are refused with
// `invalid_argument` ("the batch does not fit in one commit of this storage"), 50 fit.
export const CHUNK = { deno: 50, bun: 100 };

const RUNTIMES = {
  deno: (cfg) => [join(bin, "deno"), ["run", "--no-prompt", "--unstable-kv", "--allow-read", "--allow-write", "--allow-env", "--allow-net", join(here, "scenario-agent.mjs"), JSON.stringify(cfg)]],
  bun: (cfg) => [join(bin, "bun"), ["run", join(here, "scenario-agent.mjs"), JSON.stringify(cfg)]],
};

async function agentScenario(runtime, dir) {
  const label = `${runtime}-crash-scenario`;
  const relay = await makeRelay();
  const events = signedEvents(COUNT, { content: (i) => `${runtime} crash scenario ${i}` });
  const ids = events.map((e) => e.id);
  const eventsFile = join(dir, `${runtime}-events.json`);
  writeFileSync(eventsFile, JSON.stringify(events));
  const base = { db: join(dir, `${runtime}.db`), relay: relay.url, events: eventsFile, chunk: CHUNK[runtime] };
  const phase = async (mode, extra = {}, opts = {}) => {
    const [cmd, args] = RUNTIMES[runtime]({ ...base, ...extra, mode });
    const r = await runAgent(cmd, args, opts);
    return r;
  };
  const sub = async (name, fn) => {
    try {
      await fn();
      console.log(`  ${label}::${name} ok`);
    } catch (err) {
      throw new Error(`${name}: ${err.message}`);
    }
  };
  const t0 = Date.now();
  try {
    await sub("enqueue_while_down", async () => {
      const r = await phase("down");
      expect(r.code === 0, `exit ${r.code}: ${r.output}`);
      const [d] = r.reports;
      expect(d.created === COUNT, `created ${d.created}`);
      expect(d.flush.delivered === 0 && d.flush.retrying >= COUNT, `flush ${JSON.stringify(d.flush)}`);
      expect(d.status.retryable === COUNT, `status ${JSON.stringify(d.status)}`);
      expect(d.sample.evidence.length >= 1 && d.sample.evidence.every((e) => e.outcome === "unreachable"), `evidence ${JSON.stringify(d.sample.evidence)}`);
      const onIt = await relay.start().then(() => onRelay(relay.url, ids));
      expect(onIt.size === 0, `${onIt.size} events on the relay before any flush reached it`);
    });
    let killedAt;
    await sub("sigkill_mid_flush", async () => {
      const r = await phase("flush", { holdAfter: 40 }, {
        onReport: (v, child) => {
          if (v.holding) child.kill("SIGKILL");
        },
      });
      expect(r.signal === "SIGKILL", `the flush was not killed (exit ${r.code}, ${JSON.stringify(r.reports)}): ${r.output.slice(-2000)}`);
      const i = await phase("inspect");
      killedAt = i.reports[0].status;
      expect(killedAt.leased > 0 && killedAt.satisfied >= 40 && killedAt.satisfied < COUNT, `after the kill: ${JSON.stringify(killedAt)}`);
    });
    await sub("relaunch_recovers", async () => {
      const r = await phase("recover");
      expect(r.code === 0, `exit ${r.code}: ${r.output.slice(-2000)}`);
      const rec = r.reports[0];
      checkRecovered(rec, ids, COUNT);
      const dup = rec.records.filter((x) => x.outcomes.includes("duplicate")).length;
      console.log(`  ${label}: killed with ${JSON.stringify(killedAt)}; relaunch flushed the rest in ${rec.recoverMs} ms (${rec.runs} flushes); ${dup} records answered duplicate (sent by the killed flush, not recorded)`);
    });
    await sub("all_on_relay", async () => {
      const found = await onRelay(relay.url, ids);
      const missing = ids.filter((id) => !found.has(id));
      expect(missing.length === 0, `${missing.length} of ${COUNT} events missing on the relay`);
    });
    ok(label);
  } catch (err) {
    bad(label, err.stack);
  } finally {
    await relay.destroy();
    console.log(`  ${label}: ${Date.now() - t0} ms`);
  }
}

if (!existsSync(join(root, "pkg", "edge", "index.js"))) {
  bad("edge-scenario::package_built", "pkg/edge/index.js is missing: build the package first (make build)");
} else {
  const only = process.argv[2] ? process.argv[2].split(",") : ["deno", "bun", "workerd"];
  const dir = mkdtempSync(join(tmpdir(), "nostr-outbox-scenario-"));
  try {
    for (const runtime of only) {
      if (runtime === "workerd") {
        const { workerdScenario } = await import("./scenario-workerd.mjs");
        await workerdScenario({ dir, count: COUNT, makeRelay, signedEvents, onRelay, checkRecovered, ok, bad });
      } else await agentScenario(runtime, dir);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
console.log(`scenario: ${t.passed} passed; ${t.failed} failed`);
process.exit(t.failed ? 1 : 0);
