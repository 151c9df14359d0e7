// CPU accounting for the flush benchmarks (`bench.mjs --cpu`): how much processor time each
// kind of process (the page's renderer, Chromium's storage and network services, the
// browser process, the relays, this node process) spent while one side of a round ran,
// and how busy the whole machine was. On 2 shared cores this says whether a side is slower
// because it waits (idle CPU left) or because it does more work (and where).
// Linux only: reads /proc.
import { readFileSync, readdirSync } from "node:fs";

const TICK_MS = 10; // USER_HZ is 100 on Linux
// NOSTR_OUTBOX_BENCH_THREADS=1: the browser's and the renderer's CPU also split by thread
// name (/proc/<pid>/task/<tid>/comm), printed apart by `threadLine` (a diagnosis: which
// thread of Chromium does the work).
const THREADS = process.env.NOSTR_OUTBOX_BENCH_THREADS === "1";

/** utime + stime of a /proc `stat` text (fields 14 and 15; the command, field 2, may hold spaces). */
function ticksOf(stat) {
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(f[11]) + Number(f[12]);
}

/** CPU ms between two snapshots of one kind's ticks (`id` → ticks); an id new in `b` counts from 0. */
function deltaMs(a, b) {
  let sum = 0;
  for (const [id, ticks] of b) sum += ticks - (a?.get(id) ?? 0);
  return sum * TICK_MS;
}

/** Adds each named figure of `from` into `into`. */
function addEach(into, from) {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] || 0) + v;
}

/** The kind of a process from its command line, or null for processes not ours. */
function kindOf(pid, cmd) {
  if (/nostr-rs-relay/.test(cmd)) return "relay";
  if (/chrom/i.test(cmd)) {
    if (/--type=renderer/.test(cmd)) return "renderer";
    if (/StorageService/.test(cmd)) return "storage";
    if (/NetworkService/.test(cmd)) return "network";
    if (/--type=gpu/.test(cmd)) return "gpu";
    if (/--type=/.test(cmd)) return "other-chromium";
    return "browser";
  }
  if (pid === process.pid) return "node";
  return null;
}

/** CPU ticks by kind of process, and the machine's busy and total ticks. */
export function cpuSnapshot() {
  const byKind = {};
  const byThread = {};
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, "latin1").replace(/\0/g, " ");
      const kind = kindOf(pid, cmd);
      if (!kind) continue;
      (byKind[kind] ||= new Map()).set(pid, ticksOf(readFileSync(`/proc/${name}/stat`, "latin1")));
      if (THREADS && (kind === "browser" || kind === "renderer")) {
        for (const tid of readdirSync(`/proc/${name}/task`)) {
          try {
            const comm = readFileSync(`/proc/${name}/task/${tid}/comm`, "latin1").trim().replace(/\d+$/, "N");
            const ticks = ticksOf(readFileSync(`/proc/${name}/task/${tid}/stat`, "latin1"));
            (byThread[`${kind}/${comm}`] ||= new Map()).set(`${pid}/${tid}`, ticks);
          } catch {
            // the thread ended while we read it
          }
        }
      }
    } catch {
      // the process ended while we read it
    }
  }
  const cpu = readFileSync("/proc/stat", "latin1").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = cpu[3] + cpu[4];
  const total = cpu.slice(0, 8).reduce((a, b) => a + b, 0);
  return { byKind, byThread, busy: total - idle, total, at: Date.now() };
}

/**
 * CPU milliseconds by kind between two snapshots (a process that ended in between is
 * counted up to the first snapshot only: its last ticks are lost, which undercounts
 * relays stopped before `b`, so take `b` before stopping them), and the machine's busy
 * share of all its cores.
 */
export function cpuDelta(a, b) {
  const ms = {};
  for (const [kind, pids] of Object.entries(b.byKind)) ms[kind] = deltaMs(a.byKind[kind], pids);
  const busyShare = (b.busy - a.busy) / Math.max(1, b.total - a.total);
  const threads = {};
  for (const [name, tids] of Object.entries(b.byThread)) {
    const spent = deltaMs(a.byThread[name], tids);
    if (spent > 0) threads[name] = spent;
  }
  return { ms, threads, wallMs: b.at - a.at, busyShare };
}

/** Adds CPU deltas kind by kind (wall time and busy time too). */
export function addCpu(into, d) {
  into.wallMs = (into.wallMs || 0) + d.wallMs;
  into.busyWallMs = (into.busyWallMs || 0) + d.busyShare * d.wallMs;
  into.ms ||= {};
  addEach(into.ms, d.ms);
  addEach((into.threads ||= {}), d.threads);
  return into;
}

/** One line: CPU ms per 1000 publishes by kind, and the machine's average busy share. */
export function cpuLine(acc, publishes) {
  const per = (x) => ((x / publishes) * 1000).toFixed(0);
  const kinds = Object.entries(acc.ms)
    .filter(([, v]) => v > 0)
    .sort((x, y) => y[1] - x[1]);
  const total = kinds.reduce((s, [, v]) => s + v, 0);
  const busy = ((acc.busyWallMs / Math.max(1, acc.wallMs)) * 100).toFixed(0);
  return `CPU ms per 1000 publishes: ${kinds.map(([k, v]) => `${k} ${per(v)}`).join(", ")}; ours ${per(total)}; wall ${per(acc.wallMs)}; machine busy ${busy} %`;
}

/** With NOSTR_OUTBOX_BENCH_THREADS=1: the browser's and renderer's busiest threads, CPU ms per 1000 publishes; else null. */
export function threadLine(acc, publishes) {
  const rows = Object.entries(acc.threads ?? {}).sort((x, y) => y[1] - x[1]).slice(0, 12);
  if (!rows.length) return null;
  return `threads, CPU ms per 1000 publishes: ${rows.map(([k, v]) => `${k} ${((v / publishes) * 1000).toFixed(0)}`).join(", ")}`;
}
