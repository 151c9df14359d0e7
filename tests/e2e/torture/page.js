// One tab of the torture run: opens the shared outbox (options from the query string),
// auto-flushes, registers the module service worker and exposes `window.api` for the
// driver (tests/e2e/torture.mjs). Every api call resolves with { ok, value } or
// { ok: false, error: { code, name, message, isOutboxError } } so typed errors cross
// page.evaluate intact.
import init, { Outbox, OutboxError, registerBackgroundSync } from "/pkg/index.js";
import { recordWire } from "./wire.js";

const params = new URLSearchParams(location.search);
const options = JSON.parse(params.get("options") || "{}");
const swOptions = params.get("sw");
const counts = { delivered: 0, exhausted: 0, retrying: 0, attempt: 0, errors: [] };

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

/** This context's client id as the Web Locks API reports it. */
export async function lockClientId() {
  const probe = `probe-${Math.random()}`;
  let id = null;
  await navigator.locks.request(probe, async () => {
    id = (await navigator.locks.query()).held.find((l) => l.name === probe)?.clientId ?? null;
  });
  return id;
}

async function wrap(f) {
  try {
    return { ok: true, value: await f() };
  } catch (err) {
    return { ok: false, error: describe(err) };
  }
}

// This tab's sockets, and the worker's (posted here), go to the driver on the console.
const tabName = `tab-${Math.random().toString(36).slice(2, 8)}`;
const wire = (entry) => console.debug(`torture-wire ${JSON.stringify(entry)}`);
recordWire(tabName, wire);
for (const what of ["freeze", "resume", "pagehide"]) {
  (what === "pagehide" ? window : document).addEventListener(what, () => wire({ ctx: tabName, t: Date.now(), what }));
}

async function start() {
  navigator.serviceWorker?.addEventListener("message", (e) => { if (e.data?.wire) wire(e.data.wire); });
  navigator.serviceWorker?.startMessages();
  await init();
  const outbox = await Outbox.open(options);
  for (const kind of ["delivered", "exhausted", "retrying", "attempt"]) {
    outbox.addEventListener(kind, () => { counts[kind] += 1; });
  }
  outbox.addEventListener("error", (e) => {
    counts.errors.push(describe(e.detail));
    wire({ ctx: tabName, t: Date.now(), what: "error", code: e.detail?.code ?? null, message: String(e.detail?.message ?? e.detail) });
  });
  if (params.get("autoFlush") !== "0") outbox.startAutoFlush();

  let registration = null;
  if (swOptions && "serviceWorker" in navigator) {
    registration = await navigator.serviceWorker.register(
      `./sw.js?options=${encodeURIComponent(swOptions)}`,
      { type: "module", scope: "./" },
    );
    await navigator.serviceWorker.ready;
  }

  // Asks the service worker to do `op` and waits for its answer on a MessageChannel.
  async function sw(op, args, timeoutMs = 30_000) {
    const reg = await navigator.serviceWorker.ready;
    const worker = navigator.serviceWorker.controller || reg.active;
    if (!worker) throw new Error("no active service worker");
    const channel = new MessageChannel();
    const answer = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`service worker did not answer ${op} in ${timeoutMs} ms`)), timeoutMs);
      channel.port1.onmessage = (e) => { clearTimeout(timer); resolve(e.data); };
    });
    worker.postMessage({ op, args }, [channel.port2]);
    return answer;
  }

  window.api = {
    enqueue: (event, relays, opts) => wrap(async () => {
      const r = await outbox.enqueue(event, relays, opts);
      return { id: r.id, disposition: r.disposition };
    }),
    enqueueMany: (items) => wrap(async () => (await outbox.enqueueMany(items)).map((r) => ({ id: r.id, disposition: r.disposition }))),
    cancel: (id) => wrap(async () => (await outbox.cancel(id)).stage),
    retry: (id) => wrap(async () => (await outbox.retry(id)).stage),
    autoFlush: (on) => {
      if (on) outbox.startAutoFlush();
      else outbox.stopAutoFlush();
      return outbox.autoFlush;
    },
    get: (id) => wrap(() => outbox.get(id)),
    status: () => wrap(() => outbox.status()),
    list: (query) => wrap(() => outbox.list(query)),
    flush: () => wrap(() => outbox.flush()),
    counts: () => ({ ...counts, errors: counts.errors.slice(-5), errorCount: counts.errors.length }),
    registerSync: () => wrap(() => (registration ? registerBackgroundSync(registration, options.name) : false)),
    // The service worker's own outbox (same database): enqueue there, or flush through handleSync.
    swEnqueue: (event, relays, opts) => sw("enqueue", [event, relays, opts]).catch((err) => ({ ok: false, error: describe(err) })),
    swEnqueueMany: (items) => sw("enqueueMany", [items]).catch((err) => ({ ok: false, error: describe(err) })),
    swFlush: () => sw("flush", []).catch((err) => ({ ok: false, error: describe(err) })),
    // The Web Lock client id of this tab, of the worker, and of whoever holds the
    // outbox's lock now (Web Locks ids are not Client.id, so each context learns its own
    // by holding a probe lock).
    lockClientId: () => lockClientId(),
    swLockClientId: () => sw("lockClientId", []),
    lockHolders: async () => (await navigator.locks.query()).held.filter((l) => l.name === `nostr-outbox:${options.name}`).map((l) => l.clientId),
  };
  document.body.dataset.ready = "true";
}

start().catch((err) => {
  window.startError = describe(err);
  document.body.dataset.ready = "error";
});
