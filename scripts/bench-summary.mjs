// The end of `make bench`: one table of every figure, its ratio, the issue's goal and
// whether this run met it, read from the `BENCH` lines the run printed (target/bench.log).
// A figure whose line is missing (a part that failed or was skipped) is shown as such.
//
//   node scripts/bench-summary.mjs [target/bench.log]
import { readFileSync } from "node:fs";

const log = readFileSync(process.argv[2] || "target/bench.log", "utf8");
const find = (re) => log.match(re);
const num = (x) => Number(x);

// [figure, measured text, ratio or value, goal text, met?] per row; null when absent.
const rows = [];
function row(figure, re, read) {
  const m = find(re);
  rows.push(m ? [figure, ...read(m)] : [figure, "(no BENCH line in this run)", "", "", ""]);
}
const atLeast = (x, goal) => (x >= goal ? "yes" : "no");

row("1a enqueueMany, public API (incl. verification)", /BENCH enqueueMany (\d+): raw\/API incl\. verification ([\d.]+)/, (m) => [
  `${m[1]} events vs raw puts`, m[2], ">= 0.7", atLeast(num(m[2]), 0.7)]);
row("1a'' enqueue_many, store only", /BENCH enqueue_many (\d+) \(strict\): outbox (\d+) ms.*?raw puts (\d+) ms.*?throughput ratio ([\d.]+)/, (m) => [
  `${m[2]} vs ${m[3]} ms (${m[1]} events)`, m[4], ">= 0.7", atLeast(num(m[4]), 0.7)]);
row("1a* enqueueMany vs the events' JSON alone (no index)", /BENCH enqueueMany (\d+) vs the events alone: raw event puts\/API incl\. verification ([\d.]+)/, (m) => [
  `${m[1]} events vs raw puts of their JSON`, m[2], ">= 0.5", atLeast(num(m[2]), 0.5)]);
row("1b single enqueue, public API (incl. verification)", /BENCH single enqueue: raw\/API incl\. verification ([\d.]+)/, (m) => [
  "vs one raw put", m[1], ">= 0.8", atLeast(num(m[1]), 0.8)]);
row("1b* single enqueue vs one put of the event's JSON alone", /BENCH single enqueue vs the event alone: raw event put\/API incl\. verification ([\d.]+)/, (m) => [
  "vs one raw put, no index", m[1], ">= 0.8", atLeast(num(m[1]), 0.8)]);
row("1b'' single enqueue, store only", /BENCH single enqueue \(strict\): outbox median ([\d.]+) ms, raw put median ([\d.]+) ms, ratio raw\/outbox ([\d.]+)/, (m) => [
  `${m[1]} vs ${m[2]} ms`, m[3], ">= 0.8", atLeast(num(m[3]), 0.8)]);
row("2 claim(64) scaling", /BENCH claim\(64\) ratio (\S+): ([\d.]+)/, (m) => [
  `time ${m[1]}`, m[2], "<= 2 (100k/1k)", num(m[2]) <= 2 ? (m[1] === "100k/1k" ? "yes" : "yes (not at 100k)") : "no"]);
row("3 flush, 1 relay, vs nostr-tools", /BENCH 3\. flush: .*?faster complete one: ([\d.]+)\)/, (m) => [
  "the faster nostr-tools width", m[1], ">= 0.8", atLeast(num(m[1]), 0.8)]);
row("3 flush, 1 relay, outbox ÷ floor (time)", /BENCH 3\. flush: outbox ÷ floor: time ([\d.]+|n\/a)/, (m) => [
  "floor time / outbox time", m[1], ">= 0.9", atLeast(num(m[1]), 0.9)]);
row("3 flush, 1 relay, outbox ÷ floor (CPU)", /BENCH 3\. flush: outbox ÷ floor: time \S+, CPU ([\d.]+|n\/a)/, (m) => [
  "floor CPU / outbox CPU, all processes", m[1], ">= 0.9", atLeast(num(m[1]), 0.9)]);
row("3 flush, 1 relay, floor ÷ nostr-tools", /BENCH 3\. flush: floor ÷ nostr-tools \(\d+ in flight\): time ([\d.]+), CPU ([\d.]+|n\/a)/, (m) => [
  `time; CPU ${m[2]}`, m[1], "none", "-"]);
row("3 flush, outbox OK-to-commit", /BENCH 3\. flush: outbox OK-to-commit median ([\d.]+) ms, p99 ([\d.]+) ms/, (m) => [
  `median ${m[1]} ms`, `p99 ${m[2]} ms`, "p99 <= 100 ms", num(m[2]) <= 100 ? "yes" : "no"]);
row("4 fan-out, outbox OK-to-commit", /BENCH 4\. fan-out: outbox OK-to-commit median ([\d.]+) ms, p99 ([\d.]+) ms/, (m) => [
  `median ${m[1]} ms`, `p99 ${m[2]} ms`, "p99 <= 100 ms", num(m[2]) <= 100 ? "yes" : "no"]);
row("3 flush, floor OK-to-commit", /BENCH 3\. flush: floor OK-to-commit median ([\d.]+) ms, p99 ([\d.]+) ms/, (m) => [
  `median ${m[1]} ms`, `p99 ${m[2]} ms`, "none (outbox: p99 <= 100 ms)", "-"]);
row("4 fan-out, 5 relays, vs nostr-tools", /BENCH 4\. fan-out: .*?faster complete one: ([\d.]+)\)/, (m) => [
  "the faster nostr-tools width", m[1], ">= 0.8", atLeast(num(m[1]), 0.8)]);
row("4 fan-out, outbox ÷ floor (time)", /BENCH 4\. fan-out: outbox ÷ floor: time ([\d.]+|n\/a)/, (m) => [
  "floor time / outbox time", m[1], ">= 0.9", atLeast(num(m[1]), 0.9)]);
row("4 fan-out, outbox ÷ floor (CPU)", /BENCH 4\. fan-out: outbox ÷ floor: time \S+, CPU ([\d.]+|n\/a)/, (m) => [
  "floor CPU / outbox CPU, all processes", m[1], ">= 0.9", atLeast(num(m[1]), 0.9)]);
row("4 fan-out, floor ÷ nostr-tools", /BENCH 4\. fan-out: floor ÷ nostr-tools \(\d+ in flight\): time ([\d.]+), CPU ([\d.]+|n\/a)/, (m) => [
  `time; CPU ${m[2]}`, m[1], "none", "-"]);
row("5 recovery: relay up -> last accepted", /BENCH recovery (\d+): relay up -> last accepted median ([\d.]+) ms/, (m) => [
  `${m[1]} events`, `${m[2]} ms`, "none", "-"]);
row("6 memory, cycle 2 - cycle 1 after flush", /BENCH memory (\d+): .*?heap ([+-]?[\d.]+) MiB, wasm ([+-]?[\d.]+) MiB/, (m) => [
  `${m[1]} events`, `heap ${m[2]}, wasm ${m[3]} MiB`, "flat", Math.abs(num(m[2])) < 1 && Math.abs(num(m[3])) < 1 ? "yes" : "no"]);
row("8 priority: high note behind a backlog ÷ empty queue", /BENCH priority: behind (\d+): median ([\d.]+) ms, p99 ([\d.]+) ms; empty queue: median ([\d.]+) ms, p99 ([\d.]+) ms; behind\/empty ([\d.]+)x median, ([\d.]+)x p99/, (m) => [
  `enqueue -> delivered, median ${m[2]} vs ${m[4]} ms (${m[1]} low events)`, `${m[6]}x median, ${m[7]}x p99`, "<= 2x",
  num(m[6]) <= 2 && num(m[7]) <= 2 ? "yes" : "no"]);
row("7 .wasm size (gzip -9)", /BENCH size: \.wasm (\d+) B raw, (\d+) B gzip/, (m) => [
  `${m[1]} B raw`, `${m[2]} B`, "<= 232 KiB (issue 39; limit 256 KiB)",
  num(m[2]) <= 232 * 1024 ? "yes" : num(m[2]) <= 256 * 1024 ? "no (under the limit)" : "NO: over the limit"]);
row("8 verification vs nostr-tools verifyEvent", /BENCH verify: .*?throughput ([\d.]+)x/, (m) => [
  "events/s, one call per event", `${m[1]}x`, "none", "-"]);
row("8 (new keys) a new key per event, vs verifyEvent", /BENCH verify new keys: .*?event ([\d.]+)x/, (m) => [
  "events/s, one call per event", `${m[1]}x`, "none", "-"]);
row("8 (one author) one key for every event, vs verifyEvent", /BENCH verify one author: .*?event ([\d.]+)x/, (m) => [
  "events/s, one call per event", `${m[1]}x`, "none", "-"]);
row("8b batch verification (as enqueueMany) vs verifyEvent", /BENCH verify batch: .*?throughput ([\d.]+)x/, (m) => [
  "events/s, parse + id each, one batch check", `${m[1]}x`, "none", "-"]);
for (const rt of ["deno", "bun", "bun-wal", "workerd"]) {
  row(`9 edge ${rt}: durable adapter / memory store`, new RegExp(`BENCH edge ${rt} \\(([^)]*?) vs memory.*?: (\\d+) events.*?total durable/memory ([\\d.]+)`), (m) => [
    `${m[1]}, enqueueMany + flush of ${m[2]}`, `${m[3]}x the time`, "<= 1.5x", Number(m[3]) <= 1.5 ? "yes" : "no"]);
}

const scaled = /counts x ([\d.]+): not the issue's counts/.exec(log);
console.log(`\n== Summary${scaled ? ` (counts x ${scaled[1]} in bench.mjs: NOT the issue's counts)` : ""}`);
const head = ["figure", "measured", "ratio / value", "goal", "met"];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
const fmt = (r) => `| ${r.map((c, i) => String(c).padEnd(widths[i])).join(" | ")} |`;
console.log(fmt(head));
console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
for (const r of rows) console.log(fmt(r));
