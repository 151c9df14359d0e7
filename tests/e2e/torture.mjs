#!/usr/bin/env node
// The reliability torture run (issue 9): several tabs and the module service worker of
// one origin share one outbox and enqueue signed events at random, while the relays flap
// (stopped and started) and answer at random `rate-limited:`, `error:`, `blocked:`,
// nothing, or close mid-publish; the browser process group is SIGKILLed several times at
// random moments (some right after a relay's OK, before the outbox could record it) and
// restarted on the same profile. At the end, with every relay healthy, the outbox is
// flushed to quiescence and checked against the relays' own SQLite databases and every
// EVENT frame the recording proxies saw (tests/e2e/torture/check.mjs). Prints a table.
//
//   node tests/e2e/torture.mjs            the long run (`make torture`)
//   node tests/e2e/torture.mjs --short    the short run (inside `make test`)
//   options: --seed N  --chaos-seconds S  --kills K  --tabs T  --json FILE [--timeline]
//            --keep (keep the Chromium profile)
// Exit status 0 only when no check failed. docs/RELIABILITY.md explains the checks.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { generateSecretKey, finalizeEvent } from "nostr-tools/pure";
import { startServer, relay, queryRelay } from "./harness.mjs";
import { startChromium } from "./torture/browser.mjs";
import { faultProxy } from "./torture/proxy.mjs";
import { snapshotRoot } from "./torture/snapshot.mjs";
import { checkTotalQueue, relayName } from "./torture/check.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A small seeded PRNG (mulberry32), so a run's choices can be replayed. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, fail) => { timer = setTimeout(() => fail(Object.assign(new Error(`${what}: no answer in ${ms} ms`), { hang: true })), ms); }),
  ]);
}

export const PROFILES = {
  short: { tabs: 2, chaosMs: 50_000, kills: 3, relays: 3, quiesceMs: 100_000, opGapMs: [20, 120], rateLimited: 0.15 },
  long: { tabs: 3, chaosMs: 300_000, kills: 8, relays: 3, quiesceMs: 240_000, opGapMs: [15, 100], rateLimited: 0.4 },
};

// Fault mixes a relay switches between during the chaos phase.
function faultMix(kind, rateLimited) {
  switch (kind) {
    case "calm": return { forward: 1 };
    case "flaky": return { forward: 8, rateLimited: rateLimited / 2, error: 1, blocked: 0.15, silent: 0.5, close: 0.5, forwardClose: 0.5, drop: 0.4 };
    default: return { forward: 4, rateLimited, error: 1.5, blocked: 0.25, silent: 0.8, close: 0.8, forwardClose: 1, drop: 0.6 };
  }
}

const CONTENTS = [
  (i) => `torture note ${i}`,
  (i) => `quotes "${i}" back\\slash\nnew line\ttab \u2028 \u0000-free ünïcödé 🎉`,
  (i) => `${i} `.padEnd(2000, "long "),
  (i) => `</script><b>${i}</b> & ' " \u007f`,
];

export async function runTorture(opts = {}) {
  const profile = { ...(opts.short ? PROFILES.short : PROFILES.long) };
  if (opts.chaosSeconds) profile.chaosMs = opts.chaosSeconds * 1000;
  if (opts.kills != null) profile.kills = opts.kills;
  if (opts.tabs) profile.tabs = opts.tabs;
  const seed = opts.seed ?? Math.floor(Math.random() * 2 ** 31);
  const random = prng(seed);
  const rand = (a, b) => a + random() * (b - a);
  const chance = (p) => random() < p;
  const choose = (xs) => xs[Math.floor(random() * xs.length)];
  const say = opts.log || ((...a) => console.error("[torture]", ...a));
  const started = Date.now();

  const outboxOptions = {
    name: "torture",
    publishTimeoutMs: 3000,
    connectTimeoutMs: 2000,
    baseDelayMs: 250,
    maxDelayMs: 3000,
    // Longer than the whole run: a lease left by a killed browser, a reloaded tab or a
    // stopped worker can only end by the Web Lock holder's takeover, never by expiring,
    // so a record that waited for a dead lease is still leased at the end
    // ("waited-for-dead-lease" below).
    leaseMs: 600_000,
    maxAttempts: 1000,
  };
  const keys = [generateSecretKey(), generateSecretKey(), generateSecretKey()];

  const plans = new Map(); // id -> plan
  const kills = [];
  const killReasons = [];
  const reloads = [];
  const doubles = { asked: 0, oneCreated: 0, wrong: [] };
  let snapshots = 0;
  let retries = 0;
  let swPhase = false;
  const swPhases = [];
  const restarts = [];
  const opStats = {};
  const swFlushes = { ran: 0, locked: 0, failed: 0, errors: [], holders: {} };
  const flaps = [];
  const hangs = [];
  const pageErrors = [];
  const consoleErrors = [];
  // What each browser context sent and heard on its sockets (tests/e2e/torture/wire.js).
  const wireLog = [];
  const tabDeaths = [];
  const opErrors = {};
  const replays = { asked: 0, replay: 0, other: [] };
  let cancels = 0;
  let session = null;
  let armedKill = null; // { mode, resolve }
  let profileDir = null;
  let server = null;
  const relays = [];
  const proxies = [];
  const cleanup = [];

  try {
    const web = await snapshotRoot();
    cleanup.push(web.remove);
    server = await startServer(web.root);
    profileDir = await mkdtemp(join(tmpdir(), "outbox-torture-profile-"));
    for (let i = 0; i < profile.relays; i++) {
      const r = await relay();
      await r.start();
      relays.push(r);
      const name = `R${i}`;
      const p = await faultProxy({
        name,
        backend: r.url,
        random,
        onOk: (ok) => { if (ok.accepted && armedKill?.mode === "ok") fireKill(`after ${name}'s OK for ${ok.id.slice(0, 8)} on connection ${ok.conn}`); },
        onEvent: (e) => { if (armedKill?.mode === "event" && e.fault === "forward") fireKill(`mid-publish of ${e.id.slice(0, 8)} to ${name} on connection ${e.conn}`); },
      });
      proxies.push(p);
    }
    const relayNames = Object.fromEntries(proxies.map((p) => [p.url, p.name]));
    say(`seed ${seed}; relays ${proxies.map((p) => `${p.name}=${p.url}`).join(" ")}; profile ${profileDir}`);

    // --- the browser session --------------------------------------------------------
    const pageUrl = `${server.url}/tests/e2e/torture/page.html?options=${encodeURIComponent(JSON.stringify(outboxOptions))}&sw=${encodeURIComponent(JSON.stringify(outboxOptions))}`;

    async function openSession() {
      const b = await startChromium(profileDir);
      const s = { b, tabs: [], alive: true, startedAt: Date.now() };
      b.browser.on("disconnected", () => { s.alive = false; });
      for (let i = 0; i < profile.tabs; i++) {
        const page = await b.context.newPage();
        page.on("pageerror", (e) => pageErrors.push({ tab: i, error: String(e) }));
        // A tab whose renderer dies (or that the browser closes) while the browser lives.
        page.on("crash", () => { tabDeaths.push({ tab: i, t: Date.now(), why: "renderer crash" }); say(`tab${i}: renderer crashed`); });
        page.on("close", () => { if (s.alive) { tabDeaths.push({ tab: i, t: Date.now(), why: "closed" }); say(`tab${i}: closed`); } });
        page.on("console", (m) => {
          const text = m.text();
          if (text.startsWith("torture-wire ")) {
            try { wireLog.push(JSON.parse(text.slice(13))); } catch {}
            return;
          }
          if (m.type() === "error" && /panicked|unreachable|RuntimeError/.test(text)) consoleErrors.push({ tab: i, text });
        });
        await page.goto(pageUrl);
        await page.waitForSelector("body[data-ready]", { timeout: 60_000 });
        const ready = await page.evaluate(() => document.body.dataset.ready);
        if (ready !== "true") throw new Error(`tab ${i} failed to start: ${JSON.stringify(await page.evaluate(() => window.startError))}`);
        s.tabs.push(page);
      }
      b.context.on("weberror", (e) => pageErrors.push({ tab: "context", error: String(e.error()) }));
      return s;
    }

    async function call(page, method, ...args) {
      const t0 = Date.now();
      try {
        return await withTimeout(page.evaluate(([m, a]) => window.api[m](...a), [method, args]), 90_000, `api.${method}`);
      } finally {
        const o = (opStats[method] ??= { n: 0, ms: 0, max: 0 });
        o.n += 1;
        o.ms += Date.now() - t0;
        o.max = Math.max(o.max, Date.now() - t0);
      }
    }

    // Who holds the outbox's Web Lock: "tab N", "worker" (with whether a handleSync is
    // running in it), or "other".
    async function lockHolder(s) {
      const holders = await call(s.tabs[0], "lockHolders");
      if (!holders.length) return "nobody (released meanwhile)";
      const tabIds = [];
      for (const t of s.tabs) tabIds.push(await call(t, "lockClientId"));
      const worker = await call(s.tabs[0], "swLockClientId");
      return holders.map((h) => {
        const i = tabIds.indexOf(h);
        if (i >= 0) return `tab ${i}`;
        if (worker?.ok && worker.value.id === h) return `worker (handleSync running: ${worker.value.flushing})`;
        return "other";
      }).join(",");
    }

    function countSwFlush(res) {
      if (res?.ok && res.value.ran) swFlushes.ran += 1;
      else if (res?.ok && res.value.skipped === "locked") swFlushes.locked += 1;
      else {
        swFlushes.failed += 1;
        swFlushes.errors.push(res?.error ?? "no answer (page gone)");
      }
    }

    function fireKill(why) {
      const armed = armedKill;
      armedKill = null;
      if (!armed || !session?.alive) return;
      // Synchronously, so nothing else runs in between: the crash lands right here.
      const at = Date.now();
      try { process.kill(-session.b.pid, "SIGKILL"); } catch {}
      armed.resolve({ why, at });
    }

    async function crashAndRestart(mode) {
      let fired = { why: "at a random moment", at: null };
      if (mode !== "now") {
        fired = await new Promise((resolve) => {
          armedKill = { mode, resolve };
          setTimeout(() => { if (armedKill) { armedKill = null; resolve({ why: `at a random moment (no ${mode} within 8 s)`, at: null }); } }, 8000);
        });
      }
      const { why } = fired;
      const s = session;
      const start = fired.at ?? Date.now();
      s.alive = false;
      await s.b.kill();
      // The crash spans from the signal until every process of the browser is gone (its
      // sockets may still take an OK in between, which it can no longer record).
      kills.push({ start, end: Date.now(), why });
      killReasons.push(why);
      say(`crash ${kills.length}: SIGKILL ${why}`);
      await sleep(rand(200, 2500));
      const t1 = Date.now();
      session = await openSession();
      restarts.push(Date.now() - t1);
    }

    // --- what the tabs and the worker do ----------------------------------------------
    let n = 0;
    function newPlan(ctx) {
      n += 1;
      const event = finalizeEvent(
        {
          kind: 1,
          created_at: Math.floor(Date.now() / 1000) - Math.floor(rand(0, 600)),
          tags: chance(0.3) ? [["t", "torture"], ["n", String(n)], ["e", "0".repeat(64), "", "root"]] : [["t", "torture"]],
          content: choose(CONTENTS)(n),
        },
        choose(keys),
      );
      const k = 1 + Math.floor(random() * proxies.length);
      const targets = [...proxies].sort(() => random() - 0.5).slice(0, k).map((p) => p.url);
      const relaysArg = targets.map((u) => (chance(0.2) ? `${u.replace("ws:", "WS:")}/` : u));
      const options = {};
      const r = random();
      if (r < 0.2) options.policy = "any";
      else if (r < 0.35 && k >= 2) options.policy = { atLeast: 2 };
      else if (r < 0.5) options.policy = { required: [targets[0]] };
      else if (r < 0.6) options.policy = "all";
      if (chance(0.12)) options.maxAttempts = 1 + Math.floor(random() * 3);
      if (chance(0.05)) options.deadline = Date.now() + Math.floor(rand(2000, 20_000));
      const plan = { event, relays: relaysArg, options, ctx, state: "pending", cancelRequested: false };
      plans.set(event.id, plan);
      return plan;
    }

    function settle(plan, result) {
      if (result?.ok) {
        plan.state = "confirmed";
        plan.confirmedAt = Date.now();
      } else if (result?.error?.isOutboxError) {
        plan.state = "refused";
        plan.error = result.error;
        opErrors[result.error.code] = (opErrors[result.error.code] || 0) + 1;
      } else {
        plan.state = "uncertain";
        plan.error = result?.error;
      }
    }

    async function oneOp() {
      const s = session;
      if (!s?.alive) return;
      const tabIndex = Math.floor(random() * s.tabs.length);
      const page = s.tabs[tabIndex];
      const r = random();
      try {
        if (r < 0.03) {
          // The same new event enqueued at once by a tab and the worker: one record,
          // exactly one `created`.
          const plan = newPlan(`tab${tabIndex}+sw`);
          plan.state = "inflight";
          const [a, b] = await Promise.all([
            call(page, "enqueue", plan.event, plan.relays, plan.options).catch((e) => ({ ok: false, error: { message: String(e) } })),
            call(page, "swEnqueue", plan.event, plan.relays, plan.options).catch((e) => ({ ok: false, error: { message: String(e) } })),
          ]);
          settle(plan, a.ok ? a : b.ok ? b : a.error?.isOutboxError ? a : b);
          doubles.asked += 1;
          if (a.ok && b.ok) {
            const created = [a, b].filter((x) => x.value.disposition === "created").length;
            if (created === 1) doubles.oneCreated += 1;
            else doubles.wrong.push({ id: plan.event.id, a: a.value, b: b.value });
          }
        } else if (r < 0.06) {
          // Remember a record as it is now: its history may only grow.
          const confirmed = [...plans.values()].filter((p) => p.state === "confirmed");
          if (!confirmed.length) return;
          const plan = choose(confirmed);
          const res = await call(page, "get", plan.event.id).catch(() => null);
          if (res?.ok && res.value) {
            (plan.snapshots ??= []).push({ t: Date.now(), stage: res.value.stage, revision: res.value.revision, evidence: JSON.stringify(res.value.evidence) });
            snapshots += 1;
          }
        } else if (r < 0.62) {
          const plan = newPlan(`tab${tabIndex}`);
          plan.state = "inflight";
          settle(plan, await call(page, "enqueue", plan.event, plan.relays, plan.options).catch((e) => ({ ok: false, error: { message: String(e) }, hang: e.hang })));
        } else if (r < 0.8) {
          const viaSw = r >= 0.72;
          const batch = Array.from({ length: 1 + Math.floor(random() * 4) }, () => newPlan(viaSw ? "sw" : `tab${tabIndex}`));
          for (const p of batch) p.state = "inflight";
          const items = batch.map((p) => ({ event: p.event, relays: p.relays, ...p.options }));
          const res = await call(page, viaSw ? "swEnqueueMany" : "enqueueMany", items).catch((e) => ({ ok: false, error: { message: String(e) } }));
          for (const p of batch) settle(p, res);
        } else if (r < 0.88) {
          const plan = newPlan("sw");
          plan.state = "inflight";
          settle(plan, await call(page, "swEnqueue", plan.event, plan.relays, plan.options).catch((e) => ({ ok: false, error: { message: String(e) } })));
        } else if (r < 0.89) {
          // Reload a tab (a navigation in the middle of whatever it was doing).
          // The old document is gone from the start: its leases may be taken over from
          // then on. Recorded even when the reload fails, e.g. cut short by a crash (then
          // the crash itself may come after another tab took those leases over and sent
          // their events again).
          const t = Date.now();
          try {
            await withTimeout(page.reload(), 60_000, "reload");
            await page.waitForSelector("body[data-ready]", { timeout: 60_000 });
          } finally {
            reloads.push({ start: t, end: Date.now(), why: `reload of tab${tabIndex}` });
          }
          if (swPhase) await call(page, "autoFlush", false).catch(() => {});
        } else if (r < 0.915) {
          // Retry an exhausted record (the others answer not_retryable).
          const listed = await call(page, "list", { stage: "exhausted", limit: 50 }).catch(() => null);
          const ids = (listed?.ok ? listed.value : []).map((rec) => rec.id).filter((id) => plans.has(id));
          if (!ids.length) return;
          const plan = plans.get(choose(ids));
          const t = Date.now();
          const res = await call(page, "retry", plan.event.id).catch(() => null);
          if (res?.ok) {
            retries += 1;
            (plan.retries ??= []).push(t);
          } else if (res && !res.ok && res.error?.code !== "not_retryable") {
            opErrors[`retry:${res.error?.code}`] = (opErrors[`retry:${res.error?.code}`] || 0) + 1;
          }
        } else if (r < 0.94) {
          // Replay a confirmed event with the same plan, from any context: "replay".
          const confirmed = [...plans.values()].filter((p) => p.state === "confirmed");
          if (!confirmed.length) return;
          const plan = choose(confirmed);
          replays.asked += 1;
          const res = await call(page, chance(0.5) ? "swEnqueue" : "enqueue", plan.event, plan.relays, plan.options).catch((e) => ({ ok: false, error: { message: String(e) } }));
          if (res.ok && res.value.disposition === "replay") replays.replay += 1;
          else if (res.ok || res.error?.isOutboxError) replays.other.push({ id: plan.event.id, res });
        } else if (r < 0.97) {
          const candidates = [...plans.values()].filter((p) => p.state === "confirmed" && !p.cancelRequested);
          if (!candidates.length) return;
          const plan = choose(candidates);
          plan.cancelRequested = true;
          cancels += 1;
          await call(page, "cancel", plan.event.id).catch(() => {});
        } else {
          const res = await call(page, "swFlush").catch((e) => ({ ok: false, error: String(e.message || e).slice(0, 160) }));
          countSwFlush(res);
          if (chance(0.5)) await call(page, "registerSync").catch(() => {});
        }
      } catch (err) {
        if (err.hang) hangs.push(String(err.message));
      }
    }

    // --- chaos --------------------------------------------------------------------------
    session = await openSession();
    const chaosEnd = Date.now() + profile.chaosMs;
    const killAt = Array.from({ length: profile.kills }, (_, i) =>
      Date.now() + ((i + 0.25 + random() * 0.5) * profile.chaosMs) / profile.kills);
    const inflight = new Set();
    const track = (p) => { inflight.add(p); p.finally(() => inflight.delete(p)); };

    const flapper = (async () => {
      while (Date.now() < chaosEnd - 3000) {
        await sleep(rand(2000, 7000));
        if (Date.now() >= chaosEnd - 3000) break;
        const i = Math.floor(random() * proxies.length);
        const whole = chance(0.7);
        const down = rand(800, 5000);
        const t = Date.now();
        if (whole) await proxies[i].stop();
        await relays[i].stop();
        await sleep(down);
        await relays[i].start();
        if (whole) await proxies[i].start();
        flaps.push({ relay: proxies[i].name, t, downMs: Date.now() - t, whole });
      }
    })();
    // Now and then the tabs stop flushing for a while and the service worker is the
    // flusher (a tab asks it to flush through handleSync every ~0.5 s).
    const swPhaser = (async () => {
      while (Date.now() < chaosEnd - 15_000) {
        await sleep(rand(5000, 15_000));
        if (!chance(0.6) || Date.now() >= chaosEnd - 15_000) continue;
        const until = Date.now() + rand(5000, 12_000);
        swPhase = true;
        swPhases.push(Date.now());
        while (Date.now() < until) {
          const s = session;
          if (s?.alive) {
            for (const t of s.tabs) await call(t, "autoFlush", false).catch(() => {});
            const tab = choose(s.tabs);
            const res = await call(tab, "swFlush").catch((e) => ({ ok: false, error: String(e.message || e).slice(0, 160) }));
            countSwFlush(res);
            if (res?.ok && res.value.skipped === "locked") {
              const key = await lockHolder(s).catch((e) => `unknown (${e.message})`);
              swFlushes.holders[key] = (swFlushes.holders[key] || 0) + 1;
            }
          }
          await sleep(500);
        }
        swPhase = false;
        const s = session;
        if (s?.alive) for (const t of s.tabs) await call(t, "autoFlush", true).catch(() => {});
      }
    })();
    const mixer = (async () => {
      while (Date.now() < chaosEnd) {
        for (const p of proxies) {
          p.setFaults(faultMix(choose(["calm", "flaky", "flaky", "stormy"]), profile.rateLimited));
          p.setHostile(chance(0.2) ? { noticeFlood: 5, authEveryMessage: true, binary: true } : null);
        }
        await sleep(rand(3000, 10_000));
      }
    })();

    // Every run crashes right after a relay's OK (before the outbox can record it),
    // mid-publish, and at a random moment, in a shuffled rotation, while the tabs and
    // the worker keep enqueueing.
    const modes = ["ok", "event", "now"].sort(() => random() - 0.5);
    const killer = (async () => {
      for (let i = 0; i < killAt.length; i++) {
        await sleep(Math.max(0, killAt[i] - Date.now()));
        if (Date.now() >= chaosEnd - 2000) break;
        await crashAndRestart(modes[i % modes.length]);
      }
    })();
    while (Date.now() < chaosEnd) {
      if (session?.alive && inflight.size < 8) track(oneOp());
      await sleep(rand(...profile.opGapMs));
    }
    await killer;
    await Promise.allSettled([...inflight]);
    await Promise.allSettled([flapper, mixer, swPhaser]);
    for (const plan of plans.values()) if (plan.state === "inflight" || plan.state === "pending") plan.state = "uncertain";

    // --- heal and flush to quiescence -------------------------------------------------------
    if (session?.alive) for (const t of session.tabs) await call(t, "autoFlush", true).catch(() => {});
    for (let i = 0; i < proxies.length; i++) {
      await relays[i].start();
      await proxies[i].start();
      proxies[i].setFaults({ forward: 1 });
      proxies[i].setHostile(null);
    }
    say(`chaos over after ${Math.round((Date.now() - started) / 1000)} s: ${plans.size} events, ${kills.length} crashes, ${flaps.length} flaps; flushing to quiescence`);
    const quiesceStart = Date.now();
    let status = null;
    let quiet = false;
    // The stages that may still change without anyone asking: quiet when none is left.
    const WAITING = ["pending", "leased", "retryable", "delivering"];
    while (Date.now() - quiesceStart < profile.quiesceMs) {
      if (!session.alive) session = await openSession();
      const res = await call(session.tabs[0], "status").catch((e) => ({ ok: false, error: String(e) }));
      if (res.ok) {
        status = res.value;
        if (WAITING.every((stage) => !status[stage])) { quiet = true; break; }
      }
      await call(choose(session.tabs), chance(0.3) ? "swFlush" : "flush").catch(() => {});
      await sleep(1500);
    }
    const quiesceMs = Date.now() - quiesceStart;

    // --- collect ---------------------------------------------------------------------------
    const records = [];
    let after;
    for (let i = 0; i < 10_000; i++) {
      const page = await call(session.tabs[0], "list", after ? { limit: 100, after } : { limit: 100 });
      if (!page.ok) throw new Error(`list failed: ${JSON.stringify(page.error)}`);
      records.push(...page.value);
      if (page.value.length < 100) break;
      after = page.value[page.value.length - 1].id;
    }
    const finalStatus = (await call(session.tabs[0], "status")).value;
    const tabCounts = [];
    for (const t of session.tabs) tabCounts.push(await call(t, "counts").catch(() => null));
    session.alive = false;
    await session.b.close();
    session = null;

    // The relays' own databases (SQLite, read after the relay stopped), REQ by ids as a fallback.
    const relayDbs = {};
    for (let i = 0; i < relays.length; i++) {
      relayDbs[proxies[i].name] = await readRelayDb(relays[i], [...plans.keys()]);
    }
    const relayStored = Object.values(relayDbs).reduce((n, m) => n + m.size, 0);
    // Every window in which the browser (or a tab's document) was gone: crashes, reloads.
    const windows = [...kills, ...reloads];
    const { failures, counts } = checkTotalQueue({
      plans, records, relayDbs, relayNames,
      proxyLogs: Object.fromEntries(proxies.map((p) => [p.name, p.log])),
      kills: windows, wire: wireLog, publishTimeoutMs: outboxOptions.publishTimeoutMs, leaseMs: outboxOptions.leaseMs,
    });
    if (!quiet) {
      // What each record still waits for, to explain it.
      const waiting = records.filter((r) => WAITING.includes(r.stage)).slice(0, 5).map((r) => ({
        id: r.id, stage: r.stage, attempts: r.attempts, attemptLimit: r.attemptLimit, nextAttemptAt: r.nextAttemptAt, deadline: r.deadline, lease: r.lease,
        targets: (r.targets || []).map((t) => ({ relay: relayName(relayNames, t.relay), state: t.state, latest: t.latest && { outcome: t.latest.outcome, message: t.latest.message, attempt: t.latest.attempt } })),
      }));
      failures.push({ kind: "no-quiescence", status, afterMs: quiesceMs, now: Date.now(), waiting });
    }
    const stillLeased = records.filter((r) => r.stage === "leased").map((r) => ({ id: r.id, takeovers: r.takeovers, lease: r.lease }));
    if (stillLeased.length > 0) failures.push({ kind: "waited-for-dead-lease", count: stillLeased.length, records: stillLeased.slice(0, 5) });
    if (finalStatus.total !== records.length) failures.push({ kind: "status-list-mismatch", status: finalStatus, listed: records.length });
    for (const h of hangs) failures.push({ kind: "hang", what: h });
    for (const e of pageErrors) failures.push({ kind: "page-error", ...e });
    for (const e of consoleErrors) failures.push({ kind: "panic", ...e });
    for (const d of tabDeaths) failures.push({ kind: "tab-died", ...d, t: d.t - started });
    for (const o of replays.other) failures.push({ kind: "replay-not-replay", ...o });
    for (const o of doubles.wrong) failures.push({ kind: "concurrent-enqueue-not-one-created", ...o });

    // Liveness during the chaos: the longest stretch without any relay accepting anything.
    const accepts = proxies.flatMap((p) => p.log.oks.filter((o) => o.accepted).map((o) => o.t)).sort((a, b) => a - b);
    let longestGap = { ms: 0, from: null };
    for (let i = 1; i < accepts.length; i++) {
      if (accepts[i] - accepts[i - 1] > longestGap.ms) longestGap = { ms: accepts[i] - accepts[i - 1], from: accepts[i - 1] - started };
    }
    const timeline = opts.timeline ? {
      started,
      kills: kills.map((k) => ({ start: k.start - started, end: k.end - started })),
      flaps: flaps.map((f) => ({ ...f, t: f.t - started })),
      oks: proxies.flatMap((p) => p.log.oks.map((o) => ({ r: p.name, t: o.t - started, a: o.accepted, c: o.conn, f: o.fault, id: o.id.slice(0, 8) }))),
      events: proxies.flatMap((p) => p.log.events.map((e) => ({ r: p.name, t: e.t - started, c: e.conn, f: e.fault, id: e.id.slice(0, 8) }))),
      closes: proxies.flatMap((p) => p.log.closes.map((c) => ({ ...c, t: c.t - started }))),
      confirmed: [...plans.values()].map((p) => ({ id: p.event.id.slice(0, 8), ctx: p.ctx, state: p.state, t: (p.confirmedAt ?? 0) - started })),
    } : undefined;
    const summary = {
      seed,
      longestGap,
      timeline,
      mode: opts.short ? "short" : "long",
      seconds: Math.round((Date.now() - started) / 1000),
      tabs: profile.tabs,
      relays: proxies.length,
      ...counts,
      relayStored,
      relayDbSource: [...new Set(Object.values(relayDbs).map((m) => m.source))].join("+"),
      crashes: kills.length,
      takeovers: records.reduce((n, r) => n + (r.takeovers || 0), 0),
      reloads: reloads.length,
      retries,
      doubles: { asked: doubles.asked, oneCreated: doubles.oneCreated },
      snapshots,
      swPhases: swPhases.length,
      killReasons,
      restartMs: restarts,
      swFlushes,
      opStats: Object.fromEntries(Object.entries(opStats).map(([k, v]) => [k, { n: v.n, avgMs: Math.round(v.ms / v.n), maxMs: v.max }])),
      flaps: flaps.length,
      replays: replays.asked,
      replayed: replays.replay,
      cancels,
      wire: ["event", "ok", "close"].map((w) => wireLog.filter((x) => x.what === w && x.ctx === "sw").length + "+" + wireLog.filter((x) => x.what === w && x.ctx !== "sw").length),
      refusedCodes: opErrors,
      quiesceMs,
      finalStatus,
      tabCounts,
      failures,
      // A failed run keeps everything seen on both sides of the sockets (ms from the start)
      // for the --json file: what it takes to explain a failure after the fact.
      trace: failures.length ? {
        started,
        wire: wireLog.map((w) => ({ ...w, t: w.t - started })),
        proxies: Object.fromEntries(proxies.map((p) => [p.name, {
          events: p.log.events.map(({ raw, ...e }) => ({ ...e, t: e.t - started })),
          oks: p.log.oks.map((o) => ({ ...o, t: o.t - started })),
          closes: p.log.closes.map((c) => ({ ...c, t: c.t - started })),
        }])),
        kills: windows.map((k) => ({ ...k, start: k.start - started, end: k.end - started })),
        tabDeaths: tabDeaths.map((d) => ({ ...d, t: d.t - started })),
      } : undefined,
    };
    return summary;
  } finally {
    armedKill = null;
    if (session) await session.b.kill().catch(() => {});
    for (const p of proxies) await p.stop().catch(() => {});
    for (const r of relays) await r.destroy().catch(() => {});
    await server?.close().catch(() => {});
    if (profileDir && !opts.keep) await rm(profileDir, { recursive: true, force: true }).catch(() => {});
    for (const c of cleanup) await c().catch(() => {});
  }
}

/** Every event a nostr-rs-relay stored: its SQLite database, or REQ by ids when sqlite3 is missing. */
async function readRelayDb(r, ids) {
  await r.stop();
  const db = join(r.dataDir, "nostr.db");
  const rows = await new Promise((ok) => {
    execFile("sqlite3", ["-json", db, "SELECT content FROM event"], { maxBuffer: 1 << 30 }, (err, out) => ok(err ? null : out));
  });
  const map = new Map();
  map.source = rows === null ? "REQ by ids" : "SQLite";
  if (rows !== null) {
    for (const row of rows.trim() ? JSON.parse(rows) : []) {
      const ev = JSON.parse(row.content);
      map.set(ev.id, ev);
    }
    return map;
  }
  await r.start();
  for (let i = 0; i < ids.length; i += 200) {
    for (const ev of await queryRelay(r.url, ids.slice(i, i + 200), 15_000)) map.set(ev.id, ev);
  }
  await r.stop();
  return map;
}

/** The table the issue asks for, plus the fault counts. */
export function formatTable(s) {
  const rows = [
    ["enqueued (enqueue resolved)", s.enqueued],
    ["in flight at a crash or reload (present / absent)", `${s.uncertainPresent} / ${s.uncertain - s.uncertainPresent}`],
    ["refused with a typed error", s.refused],
    ["satisfied", s.satisfied],
    ["exhausted (rejected / maxAttempts / expired)", `${s.exhausted} (${s.exhaustedBy.rejected || 0} / ${s.exhaustedBy.maxAttempts || 0} / ${s.exhaustedBy.expired || 0})`],
    ["cancelled", s.cancelled],
    ["lost (must be 0)", s.lost],
    ["not terminal at the end (must be 0)", s.stuck],
    ["duplicates re-sent after acceptance", s.duplicates],
    ["  after a crash / late OK / cut connection / unexplained", `${s.dupAfterCrash} / ${s.dupLateOk} / ${s.dupCut} / ${s.dupUnexplained}`],
    ["accepted by read-back (asked by id after an unclear answer, sent back; no OK)", s.readBack ?? 0],
    ["re-sent after a terminal rejection (crash / retry() / cut connection / unexplained)", `${s.resendAfterRejectCrash} / ${s.resendAfterRejectRetry} / ${s.resendAfterRejectCut} / ${s.resendAfterRejectUnexplained}`],
    ["sent again while an earlier send was unanswered (must be 0)", s.concurrentSends],
    ["crashes survived (SIGKILL)", s.crashes],
    ["leases taken over from dead flushers (none waited to expire)", s.takeovers],
    ["tab reloads mid-flight", s.reloads],
    ["relay flaps (stopped and started)", s.flaps],
    ["EVENT frames received by the relays", s.eventFrames],
    ["  browser's own log: EVENTs sent / OKs heard / closes (worker + tabs)", s.wire.join(" / ")],
    [`events stored by the relays (${s.relayDbSource})`, s.relayStored],
    ["  forwarded / rate-limited / error / blocked", `${s.faults.forward || 0} / ${s.faults.rateLimited || 0} / ${s.faults.error || 0} / ${s.faults.blocked || 0}`],
    ["  silent / close / forward+close / drop", `${s.faults.silent || 0} / ${s.faults.close || 0} / ${s.faults.forwardClose || 0} / ${s.faults.drop || 0}`],
    ["replays asked / answered replay", `${s.replays} / ${s.replayed}`],
    ["same event enqueued at once by a tab and the worker / exactly one created", `${s.doubles.asked} / ${s.doubles.oneCreated}`],
    ["records snapshotted mid-run whose history only grew", `${s.snapshots - s.historyViolations} / ${s.snapshots}`],
    ["cancels asked", s.cancels],
    ["retries of exhausted records", s.retries],
    [`service-worker flushes (${s.swPhases} phases without tab flushers): ran / lock held / failed`, `${s.swFlushes.ran} / ${s.swFlushes.locked} / ${s.swFlushes.failed}`],
    ["longest time without any relay accepting, in the chaos (s)", (s.longestGap.ms / 1000).toFixed(1)],
    ["quiescence after healing (s)", (s.quiesceMs / 1000).toFixed(1)],
    ["failed checks", s.failures.length],
  ];
  const w = Math.max(...rows.map((r) => r[0].length));
  const lines = [`torture (${s.mode}, seed ${s.seed}, ${s.tabs} tabs + service worker, ${s.relays} relays, ${s.seconds} s)`];
  lines.push(`| ${"".padEnd(w)} | value |`, `|${"-".repeat(w + 2)}|-------|`);
  for (const [k, v] of rows) lines.push(`| ${k.padEnd(w)} | ${v} |`);
  return lines.join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const arg = (name) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const opts = {
    short: args.includes("--short"),
    keep: args.includes("--keep"),
    seed: arg("--seed") != null ? Number(arg("--seed")) : undefined,
    chaosSeconds: arg("--chaos-seconds") != null ? Number(arg("--chaos-seconds")) : undefined,
    kills: arg("--kills") != null ? Number(arg("--kills")) : undefined,
    tabs: arg("--tabs") != null ? Number(arg("--tabs")) : undefined,
    timeline: args.includes("--timeline"),
  };
  let code = 1;
  // Everything stops by itself: a hard bound on the whole run.
  const guard = setTimeout(() => { console.error("[torture] overall time limit reached"); process.exit(3); }, (opts.short ? 8 : 30) * 60_000);
  guard.unref();
  try {
    const summary = await runTorture(opts);
    console.log(formatTable(summary));
    console.log(`calls: ${JSON.stringify(summary.opStats)}`);
    console.log(`tab counters: ${JSON.stringify(summary.tabCounts)}`);
    if (Object.keys(summary.swFlushes.holders).length) console.log(`Web Lock holders when the worker found it held: ${JSON.stringify(summary.swFlushes.holders)}`);
    if (summary.swFlushes.errors.length) console.log(`service-worker flush failures: ${JSON.stringify(summary.swFlushes.errors.slice(0, 10))}`);
    if (Object.keys(summary.refusedCodes).length) console.log(`typed refusals: ${JSON.stringify(summary.refusedCodes)}`);
    console.log(`crashes: ${summary.killReasons.map((r, i) => `${i + 1}. ${r} (restart ${summary.restartMs[i]} ms)`).join("; ")}`);
    if (summary.failures.length) {
      console.log("\nfailed checks:");
      for (const f of summary.failures.slice(0, 50)) console.log("  " + JSON.stringify(f));
      if (summary.failures.length > 50) console.log(`  … ${summary.failures.length - 50} more`);
    }
    if (arg("--json")) await writeFile(arg("--json"), JSON.stringify(summary, null, 2));
    code = summary.failures.length ? 1 : 0;
  } catch (err) {
    console.error("[torture] run failed:", err);
    code = 2;
  }
  process.exit(code);
}
