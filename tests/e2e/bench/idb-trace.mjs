// Where the browser process spends a flush's IndexedDB work: a Chrome trace (categories
// IndexedDB, leveldb, toplevel, mojom) of the outbox's `flush()` and of the floor's
// (bench/floor.mjs), N events to one local nostr-rs-relay each, the two sides alternating
// round by round in one page. Prints, per 1 000 publishes and per trace event name of
// the browser process, the thread CPU time, the wall time and the count on each side, and
// the outbox ÷ floor ratio of the CPU. Events nest (`Transaction::RunTasks` holds the
// operations it runs), so the rows do not add up. A diagnostic behind docs/BENCHMARKS.md
// ("Goals missed, and why"), not part of `make bench`; asserts nothing.
//
//   node tests/e2e/bench/idb-trace.mjs [N=2000] [ROUNDS=2] [--pkg=DIR]
import { cp, rm } from "node:fs/promises";
import { join } from "node:path";
import { ROOT, startServer, launch, relay } from "../harness.mjs";
import { benchEvents } from "./events.mjs";

const args = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const N = Number(args[0] || 2000);
const ROUNDS = Number(args[1] || 2);
const PKG = (process.argv.find((a) => a.startsWith("--pkg=")) || "--pkg=pkg").slice(6);
const BASE = "/target/bench/pkg-trace";
const CATEGORIES = ["IndexedDB", "leveldb", "toplevel", "mojom"];

await rm(join(ROOT, BASE), { recursive: true, force: true });
await cp(PKG, join(ROOT, BASE), { recursive: true });
const server = await startServer();
const browser = await launch();
const relays = new Set();
try {
  const events = await benchEvents(N * 2 * ROUNDS);
  const page = await browser.context.newPage();
  await page.goto(`${server.url}/tests/e2e/bench/page.html`);
  await page.waitForFunction(() => window.benchReady === true, null, { timeout: 60_000 });
  await page.evaluate((base) => window.bench.setup({ base }), BASE);
  await page.evaluate((ev) => window.bench.load(ev), events);
  const call = (fn, arg) => page.evaluate(([fn, arg]) => window.bench[fn](arg), [fn, arg]);
  const session = await page.context().newCDPSession(page);
  const totals = { outbox: new Map(), floor: new Map() };
  const times = { outbox: [], floor: [] };
  let offset = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 ? ["floor", "outbox"] : ["outbox", "floor"]) {
      const r = await relay();
      relays.add(r);
      await r.start();
      const prepare = side === "outbox" ? "flushPrepare" : "floorPrepare";
      await call(prepare, { n: N, offset, relays: [r.url] });
      offset += N;
      const chunks = [];
      const collect = (e) => chunks.push(...e.value);
      session.on("Tracing.dataCollected", collect);
      await session.send("Tracing.start", {
        traceConfig: { includedCategories: CATEGORIES, recordMode: "recordAsMuchAsPossible" },
        transferMode: "ReportEvents",
      });
      const result = side === "outbox" ? await call("flushRun") : await call("floorRun", {});
      const done = new Promise((ok) => session.once("Tracing.tracingComplete", ok));
      await session.send("Tracing.end");
      await done;
      session.off("Tracing.dataCollected", collect);
      relays.delete(r);
      await r.destroy();
      times[side].push(Math.round(result.ms));
      const browserPid = chunks.find((e) => e.ph === "M" && e.name === "process_name" && e.args?.name === "Browser")?.pid;
      for (const e of chunks) {
        if (e.pid !== browserPid || !(e.ph === "X" && e.dur)) continue;
        const s = totals[side].get(e.name) || { cpu: 0, wall: 0, n: 0 };
        s.cpu += e.tdur || 0;
        s.wall += e.dur;
        s.n += 1;
        totals[side].set(e.name, s);
      }
    }
  }
  const per = 1000 / (N * ROUNDS);
  const f = (x, w = 7) => String(Math.round(x)).padStart(w);
  console.log(`IndexedDB in the browser process during flush(), ${N} events to one relay, ${ROUNDS} rounds; per 1000 publishes`);
  console.log(`flush ms: outbox ${times.outbox.join(", ")}; floor ${times.floor.join(", ")}`);
  console.log(`${"outbox cpu".padStart(10)} ${"wall".padStart(7)} ${"count".padStart(7)} | ${"floor cpu".padStart(9)} ${"wall".padStart(7)} ${"count".padStart(7)} | ÷   event`);
  const names = [...totals.outbox.keys()].sort((a, b) => totals.outbox.get(b).cpu - totals.outbox.get(a).cpu).slice(0, 30);
  for (const name of names) {
    const o = totals.outbox.get(name);
    const fl = totals.floor.get(name) || { cpu: 0, wall: 0, n: 0 };
    const ratio = fl.cpu > 0 ? (o.cpu / fl.cpu).toFixed(1) : "-";
    console.log(`${f((o.cpu * per) / 1000, 10)} ${f((o.wall * per) / 1000)} ${f(o.n * per)} | ${f((fl.cpu * per) / 1000, 9)} ${f((fl.wall * per) / 1000)} ${f(fl.n * per)} | ${ratio.padStart(4)}  ${name}`);
  }
} finally {
  for (const r of relays) await r.destroy();
  await browser.close();
  await server.close();
  await rm(join(ROOT, BASE), { recursive: true, force: true });
}
