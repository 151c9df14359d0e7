// The workerd half of tests/edge/scenario.mjs: examples/worker-durable-object as a user
// deploys it (bundled as wrangler does: esbuild with the workerd condition, the package
// resolved from node_modules/nostr-outbox → pkg/, its .wasm a CompiledWasm module), run by
// miniflare in a child Node process (`node scenario-workerd.mjs child '<json>'`) whose
// process group (Node + workerd) is SIGKILLed mid-flush, then started again on the same
// persisted Durable Object storage.
import { spawn } from "node:child_process";
import { mkdirSync, symlinkSync, copyFileSync, readFileSync, existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join, dirname, basename } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const example = join(root, "examples", "worker-durable-object");
const requireE2e = createRequire(join(root, "tests", "e2e", "package.json"));

/** The example's compatibility date, from its wrangler.toml. */
export function compatibilityDate() {
  const toml = readFileSync(join(example, "wrangler.toml"), "utf8");
  return /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)[1];
}

/**
 * Bundles `entry` into `out/index.js` as wrangler would (esbuild, conditions workerd/worker/
 * browser, `nostr-outbox` from `<dir>/node_modules` → pkg/), the .wasm it imports copied
 * beside it as an external module.
 */
export async function bundle(entry, dir, out) {
  const esbuild = requireE2e("esbuild");
  const nm = join(dir, "node_modules");
  if (!existsSync(join(nm, "nostr-outbox"))) {
    mkdirSync(nm, { recursive: true });
    symlinkSync(join(root, "pkg"), join(nm, "nostr-outbox"), "dir");
  }
  mkdirSync(out, { recursive: true });
  const wasmModules = {
    name: "wasm-modules",
    setup(build) {
      build.onResolve({ filter: /\.wasm$/ }, async (args) => {
        if (args.pluginData === "wasm") return undefined;
        const r = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: "wasm" });
        if (r.errors.length) return { errors: r.errors };
        copyFileSync(r.path, join(out, basename(r.path)));
        return { path: `./${basename(r.path)}`, external: true };
      });
    },
  };
  await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    nodePaths: [nm],
    external: ["cloudflare:*", "node:*"],
    plugins: [wasmModules],
    outfile: join(out, "index.js"),
    logLevel: "error",
  });
  return join(out, "index.js");
}

/**
 * Miniflare options for a bundled worker (`out/index.js` + the .wasm beside it), its modules
 * listed as wrangler lists them: miniflare's own module walker (`scriptPath` + `modules:
 * true`) refuses the package's `import(variable)` (ERR_MODULE_DYNAMIC_SPEC: edge/index.js
 * reads the .wasm with node:fs where there is a file: URL, which never runs in workerd).
 */
export function workerOptions(script, extra = {}) {
  const dir = dirname(script);
  const modules = [{ type: "ESModule", path: script }];
  for (const f of readdirSync(dir)) if (f.endsWith(".wasm")) modules.push({ type: "CompiledWasm", path: join(dir, f) });
  return { modules, modulesRoot: dir, compatibilityDate: compatibilityDate(), ...extra };
}

// --- child: miniflare serving the example on a port until killed --------------------------
if (process.argv[2] === "child") {
  const cfg = JSON.parse(process.argv[3]);
  const { Miniflare } = await import("miniflare");
  const mf = new Miniflare(
    workerOptions(cfg.script, {
      host: "127.0.0.1",
      port: 0,
      // As wrangler.toml binds it: a SQLite-backed class.
      durableObjects: { OUTBOX: { className: "OutboxObject", useSQLite: true } },
      durableObjectsPersist: cfg.persist,
      bindings: { OUTBOX_OPTIONS: JSON.stringify(cfg.options ?? {}) },
    }),
  );
  const url = await mf.ready;
  console.log("@" + JSON.stringify({ url: String(url) }));
  process.on("SIGTERM", () => mf.dispose().then(() => process.exit(0)));
}

// --- driver ----------------------------------------------------------------------------------
/** Starts the child; resolves with { url, child, stop() } once it serves. */
export async function startChild(cfg) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "child", JSON.stringify(cfg)], {
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group: SIGKILL reaches workerd too
  });
  let output = "";
  child.stderr.on("data", (d) => (output = (output + d).slice(-20000)));
  const exited = new Promise((f) => child.once("exit", (code, signal) => f({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`miniflare did not start in 30 s:\n${output}`)), 30000);
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.startsWith("@")) {
        clearTimeout(timer);
        resolve(JSON.parse(line.slice(1)).url);
      } else output = (output + line + "\n").slice(-20000);
    });
    exited.then(({ code, signal }) => reject(new Error(`miniflare exited (${code ?? signal}):\n${output}`)));
  });
  const kill = async () => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      /* gone */
    }
    return exited;
  };
  return { url: url.replace(/\/$/, ""), child, kill, output: () => output };
}

const sleep = (ms) => new Promise((f) => setTimeout(f, ms));
const expect = (cond, what) => {
  if (!cond) throw new Error(what);
};
async function call(base, method, path, value) {
  const res = await fetch(base + path, {
    method,
    headers: value === undefined ? {} : { "content-type": "application/json" },
    body: value === undefined ? undefined : JSON.stringify(value),
    signal: AbortSignal.timeout(20000),
  });
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body };
}
async function until(what, fn, timeoutMs) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last.done) return last;
    await sleep(100);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms (last: ${JSON.stringify(last).slice(0, 500)})`);
}

/** Counts the author's events the relay broadcasts; `onCount(n)` after each. */
function watchRelay(url, pubkey, onCount) {
  const WebSocket = requireE2e("ws");
  const ws = new WebSocket(url);
  let n = 0;
  const ready = new Promise((ok, fail) => {
    setTimeout(() => fail(new Error("no EOSE from the relay in 5 s")), 5000);
    ws.onopen = () => ws.send(JSON.stringify(["REQ", "watch", { authors: [pubkey] }]));
    ws.onerror = () => fail(new Error(`cannot reach ${url}`));
    ws.onmessage = (m) => {
      const msg = JSON.parse(String(m.data));
      if (msg[0] === "EOSE") ok();
      if (msg[0] === "EVENT") onCount(++n);
    };
  });
  return { ready, close: () => ws.close(), count: () => n };
}

/**
 * The crash scenario on the example's Durable Object, and an outbox kept across two
 * requests (the example's object; a module-scope outbox in a stateless Worker). Helpers come
 * from scenario.mjs; each test is reported through `ok` and `bad`.
 */
export async function workerdScenario({ dir, count, makeRelay, signedEvents, onRelay, checkRecovered, ok, bad }) {
  const label = "workerd-crash-scenario";
  const t0 = Date.now();
  const relay = await makeRelay();
  const events = signedEvents(count, { content: (i) => `workerd crash scenario ${i}` });
  const ids = events.map((e) => e.id);
  const script = await bundle(join(example, "src", "index.js"), dir, join(dir, "workerd-example"));
  const cfg = {
    script,
    persist: join(dir, "workerd-persist"),
    // The default lease (120 s with these timeouts): the killed incarnation's records come
    // back because the adapter is `exclusive` (the new incarnation takes its leases over),
    // not because their leases ran out. Small batches, so the kill lands mid-flush.
    options: { connectTimeoutMs: 500, publishTimeoutMs: 1000, baseDelayMs: 100, maxDelayMs: 1000, batchSize: 16, concurrency: 4 },
  };
  const sub = async (name, fn) => {
    try {
      await fn();
      console.log(`  ${label}::${name} ok`);
    } catch (err) {
      throw new Error(`${name}: ${err.message}`, { cause: err });
    }
  };
  let mf;
  let watch;
  try {
    mf = await startChild(cfg);
    await sub("enqueue_while_down", async () => {
      let created = 0;
      for (let i = 0; i < events.length; i += 100) {
        const r = await call(mf.url, "POST", "/enqueue", { items: events.slice(i, i + 100).map((event) => ({ event, relays: [relay.url] })) });
        expect(r.status === 202, `POST /enqueue: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
        created += r.body.results.filter((x) => x.disposition === "created").length;
      }
      expect(created === count, `created ${created}`);
      // The alarm flushes at once and records the relay unreachable.
      await until("every record retryable", async () => {
        const s = (await call(mf.url, "GET", "/status")).body;
        return { done: s.retryable === count, s };
      }, 10000);
      const rec = (await call(mf.url, "GET", `/record?id=${ids[0]}`)).body;
      expect(rec.attempts === 0 && rec.evidence.length >= 1 && rec.evidence.every((e) => e.outcome === "unreachable"), `record ${JSON.stringify(rec).slice(0, 400)}`);
    });
    let atKill;
    await sub("sigkill_mid_flush", async () => {
      await relay.start();
      let killed;
      const done = new Promise((f) => (killed = f));
      watch = watchRelay(relay.url, events[0].pubkey, (n) => {
        if (n === 40) mf.kill().then(killed);
      });
      await watch.ready;
      // The alarm's next flush (its backoff is at most 1 s) delivers; killed at the 40th.
      await Promise.race([done, sleep(15000).then(() => Promise.reject(new Error("no delivery within 15 s")))]);
      await sleep(300);
      atKill = (await onRelay(relay.url, ids)).size;
      watch.close();
      expect(atKill < count, `all ${count} events reached the relay before the kill: not mid-flush`);
    });
    await sub("relaunch_recovers", async () => {
      const started = Date.now();
      mf = await startChild(cfg);
      // The persisted alarm fires again and takes the dead flush's leases over (their
      // lease has 2 minutes to run).
      const s = await until("every record satisfied", async () => {
        const st = (await call(mf.url, "GET", "/status")).body;
        return { done: st.satisfied === count, st };
      }, 30000);
      const records = [];
      for (let after; ; ) {
        const page = (await call(mf.url, "GET", `/records?limit=100${after ? `&after=${after}` : ""}`)).body.records;
        records.push(...page);
        if (page.length < 100) break;
        after = page[page.length - 1].id;
      }
      const tampered = { ...events[0], content: events[0].content + "!" };
      const code = async (value) => {
        const r = await call(mf.url, "POST", "/enqueue", value);
        return r.status === 400 ? r.body.error : `HTTP ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`;
      };
      const bad = {
        tampered: await code({ event: tampered, relays: [relay.url] }),
        tamperedMany: await code({ items: [{ event: events[1], relays: [relay.url] }, { event: tampered, relays: [relay.url] }] }),
        unknownOption: await code({ event: events[0], relays: [relay.url], options: { bogus: 1 } }),
        badRelayUrl: await code({ event: events[0], relays: ["http://127.0.0.1:1"] }),
      };
      const status = s.st;
      const totalAfterBad = (await call(mf.url, "GET", "/status")).body.total;
      checkRecovered({
        status,
        bad,
        totalAfterBad,
        records: records.map((r) => ({
          id: r.id,
          stage: r.stage,
          attempts: r.attempts,
          evidence: r.evidence.length,
          accepted: r.evidence.filter((e) => e.outcome === "accepted" || e.outcome === "duplicate").length,
          duplicate: r.evidence.some((e) => e.outcome === "duplicate"),
        })),
      }, ids, count);
      const dup = records.filter((r) => r.evidence.some((e) => e.outcome === "duplicate")).length;
      console.log(`  ${label}: ${atKill} of ${count} on the relay at the kill; relaunch delivered the rest in ${Date.now() - started} ms (miniflare start included); ${dup} records answered duplicate (sent by the killed flush, not recorded)`);
    });
    await sub("all_on_relay", async () => {
      const found = await onRelay(relay.url, ids);
      const missing = ids.filter((id) => !found.has(id));
      expect(missing.length === 0, `${missing.length} of ${count} events missing on the relay`);
    });
    ok(label);
  } catch (err) {
    bad(label, err.stack);
  }
  // An outbox used by two requests in a row: the example object's (the alarm flushes after
  // each enqueue), and a module-scope one in a stateless Worker (each request flushes).
  const two = signedEvents(4, { content: (i) => `workerd two requests ${i}` });
  const name2 = "workerd-instance-outbox-two-requests";
  try {
    expect(mf && relay.running(), "the scenario left no miniflare or relay");
    for (const event of two.slice(0, 2)) {
      const r = await call(mf.url, "POST", "/enqueue", { event, relays: [relay.url] });
      expect(r.status === 202, `POST /enqueue: ${r.status}`);
      await until(`${event.id} satisfied`, async () => {
        const rec = (await call(mf.url, "GET", `/record?id=${event.id}`)).body;
        return { done: rec.stage === "satisfied", stage: rec.stage, evidence: rec.evidence };
      }, 10000);
    }
    ok(name2);
  } catch (err) {
    bad(name2, err.stack);
  }
  // The example's /export and /import: an export the browser build wrote from IndexedDB
  // (tests/data/export_v1.ndjson) taken into the Durable Object, its delivered and
  // cancelled records exported back as they were, a second import all replays, a bad line
  // refused with its number and nothing stored.
  const name5 = "workerd-example-export-import";
  try {
    expect(mf, "the scenario left no miniflare");
    const fixture = readFileSync(join(root, "tests", "data", "export_v1.ndjson"), "utf8");
    const n = fixture.trimEnd().split("\n").length - 1;
    const post = async (text) => {
      const res = await fetch(mf.url + "/import", { method: "POST", body: text, signal: AbortSignal.timeout(20000) });
      return { status: res.status, body: await res.json() };
    };
    const before = (await call(mf.url, "GET", "/status")).body.total;
    const broken = fixture.replace('"attempts":', '"attempts":9');
    const refused = await post(broken);
    expect(refused.status === 400 && refused.body.error === "invalid_import" && refused.body.details?.line === 2, `bad file: ${JSON.stringify(refused)}`);
    expect((await call(mf.url, "GET", "/status")).body.total === before, "a refused import stored records");
    const first = await post(fixture);
    expect(first.status === 200 && first.body.created === n, `import: ${JSON.stringify(first)}`);
    const exported = (await call(mf.url, "GET", "/export")).body;
    const lines = new Set(String(exported).split("\n"));
    const settled = fixture.split("\n").filter((l) => /"stage":"(satisfied|cancelled)"/.test(l));
    expect(settled.length > 0 && settled.every((l) => lines.has(l)), "settled records exported as imported");
    expect(lines.size >= before + n + 1, `export of ${lines.size} lines`);
    const again = await post(fixture);
    expect(again.status === 200 && again.body.replayed === n, `import again: ${JSON.stringify(again)}`);
    ok(name5);
  } catch (err) {
    bad(name5, err.stack);
  }
  if (mf) await mf.kill();
  const name3 = "workerd-module-scope-outbox-two-requests";
  let local;
  try {
    const { Miniflare } = await import("miniflare");
    const s = await bundle(join(here, "scenario-worker.mjs"), dir, join(dir, "workerd-module-scope"));
    local = new Miniflare(workerOptions(s));
    await local.ready;
    for (const [i, event] of two.slice(2).entries()) {
      const res = await Promise.race([
        local.dispatchFetch("http://localhost/", { method: "POST", body: JSON.stringify({ event, relay: relay.url }) }),
        sleep(15000).then(() => Promise.reject(new Error(`request ${i + 1} hung (15 s)`))),
      ]);
      const text = await res.text();
      expect(res.ok, `request ${i + 1}: HTTP ${res.status} ${text.slice(0, 500)}`);
      const r = JSON.parse(text);
      expect(r.delivered === 1 && r.stage === "satisfied", `request ${i + 1}: ${text.slice(0, 500)}`);
    }
    const found = await onRelay(relay.url, two.map((e) => e.id));
    expect(found.size === 4, `${found.size} of 4 on the relay`);
    ok(name3);
  } catch (err) {
    bad(name3, err.stack);
  } finally {
    if (local) await local.dispose();
  }
  // The example with a bad OUTBOX_OPTIONS: every request says so (500, the code).
  const name4 = "workerd-example-bad-options";
  let badMf;
  try {
    const { Miniflare } = await import("miniflare");
    badMf = new Miniflare(
      workerOptions(script, {
        durableObjects: { OUTBOX: { className: "OutboxObject", useSQLite: true } },
        bindings: { OUTBOX_OPTIONS: JSON.stringify({ leaseMs: 3000, bogus: 1 }) },
      }),
    );
    const res = await badMf.dispatchFetch("http://localhost/status");
    const body = await res.json();
    expect(res.status === 500 && body.error === "invalid_options", `HTTP ${res.status} ${JSON.stringify(body)}`);
    ok(name4);
  } catch (err) {
    bad(name4, err.stack);
  } finally {
    if (badMf) await badMf.dispose();
    await relay.destroy();
  }
  // An addressable event's `d` tag makes its keys: a KV-backed (legacy) object takes keys
  // of at most 2 KiB on Cloudflare (local workerd does not enforce it), so its adapter
  // declares that and a `d` tag too long for it is refused, typed, with nothing written;
  // a SQLite-backed object stores all three (d tags of 800, 1 500 and 60 000 bytes).
  for (const sqlite of [false, true]) {
    const name6 = `workerd-example-long-d-tags-${sqlite ? "sqlite" : "kv"}-backed`;
    let dMf;
    try {
      const { Miniflare } = await import("miniflare");
      dMf = new Miniflare(
        workerOptions(script, {
          durableObjects: { OUTBOX: { className: "OutboxObject", useSQLite: sqlite } },
          bindings: { OUTBOX_OPTIONS: JSON.stringify({ connectTimeoutMs: 500 }) },
        }),
      );
      const events = JSON.parse(readFileSync(join(root, "tests", "data", "long_d_tags.json"), "utf8"));
      const seen = [];
      for (const event of events) {
        const res = await dMf.dispatchFetch("http://localhost/enqueue", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ event, relays: ["ws://127.0.0.1:9"] }),
        });
        const body = await res.json();
        seen.push(res.status === 202 ? body.disposition : `${res.status}:${body.error}:${body.details?.field}`);
      }
      const total = (await (await dMf.dispatchFetch("http://localhost/status")).json()).total;
      const expected = sqlite ? ["created", "created", "created"] : ["created", "created", "400:invalid_argument:event"];
      expect(JSON.stringify(seen) === JSON.stringify(expected), `d tags of 800, 1500, 60000 bytes: ${seen}`);
      expect(total === (sqlite ? 3 : 2), `stored: ${total}`);
      ok(name6);
    } catch (err) {
      bad(name6, err.stack);
    } finally {
      if (dMf) await dMf.dispose();
    }
  }
  console.log(`  workerd: ${Date.now() - t0} ms`);
}
