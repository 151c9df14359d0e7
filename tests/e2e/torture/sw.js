// The torture run's module service worker: shares the tabs' outbox (same database). It
// enqueues what a tab asks it to (so the worker is an enqueuing context too), flushes
// through handleSync on Background Sync and on a tab's "flush" message, and answers on
// the message's port with { ok, value } or { ok: false, error }.
import init, { Outbox, OutboxError, handleSync } from "/pkg/index.js";
import { recordWire } from "./wire.js";

// The worker's sockets, posted to one tab, which prints them for the driver.
recordWire("sw", (entry) => {
  self.clients.matchAll({ includeUncontrolled: true }).then((cs) => cs[0]?.postMessage({ wire: entry })).catch(() => {});
});

const options = JSON.parse(new URL(self.location.href).searchParams.get("options") || "{}");
const ready = init();
let outbox = null;
const open = () => (outbox ??= ready.then(() => Outbox.open(options)).catch((err) => { outbox = null; throw err; }));

function describe(err) {
  return {
    code: err?.code ?? null,
    name: err?.name ?? null,
    message: String(err?.message ?? err),
    isOutboxError: err instanceof OutboxError,
    isError: err instanceof Error,
    details: err?.details ?? null,
  };
}

// How many handleSync calls are running here now (messages and Background Sync).
let flushing = 0;
async function flushHere(event) {
  flushing += 1;
  try {
    await ready;
    return await handleSync(event, { ...options, tag: options.name });
  } finally {
    flushing -= 1;
  }
}

const ops = {
  async enqueue(event, relays, opts) {
    const r = await (await open()).enqueue(event, relays, opts);
    return { id: r.id, disposition: r.disposition };
  },
  async enqueueMany(items) {
    return (await (await open()).enqueueMany(items)).map((r) => ({ id: r.id, disposition: r.disposition }));
  },
  async lockClientId() {
    const probe = `probe-${Math.random()}`;
    let id = null;
    await navigator.locks.request(probe, async () => {
      id = (await navigator.locks.query()).held.find((l) => l.name === probe)?.clientId ?? null;
    });
    return { id, flushing };
  },
  flush: (event) => flushHere(event),
};

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("sync", (e) => e.waitUntil(flushHere(e)));
self.addEventListener("message", (e) => {
  const port = e.ports[0];
  const { op, args } = e.data || {};
  const f = ops[op];
  e.waitUntil(
    (async () => {
      try {
        if (!f) throw new Error(`unknown op ${op}`);
        const value = op === "flush" ? await f(e) : await f(...args);
        port?.postMessage({ ok: true, value });
      } catch (err) {
        port?.postMessage({ ok: false, error: describe(err) });
      }
    })(),
  );
});
