// The page side of tests/e2e/webkit.test.mjs: what the WebKit tests call through WebDriver
// (`window[name](...args)`, each returning a promise of plain JSON). It imports the built
// package the way a user would: through the entry pkg/package.json names, then init().
const pkgJson = await (await fetch("/pkg/package.json")).json();
const exp = pkgJson.exports && pkgJson.exports["."];
const entry = (exp && (exp.browser || exp.import || exp.default)) || pkgJson.module || pkgJson.main;
const m = await import("/pkg/" + String(entry).replace(/^\.\//, ""));
await m.default();
const { Outbox, OutboxError, registerBackgroundSync } = m;

const outboxes = new Map();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// { code, isOutboxError, isError, message } of what `f` threw, or null if it did not.
async function refusal(f) {
  try {
    await f();
    return null;
  } catch (e) {
    return { code: e && e.code, isOutboxError: e instanceof OutboxError, isError: e instanceof Error, message: String(e && e.message) };
  }
}

window.webkitFacts = async () => ({
  userAgent: navigator.userAgent,
  indexedDB: typeof indexedDB === "object",
  locks: typeof navigator.locks?.request === "function",
  broadcastChannel: typeof BroadcastChannel === "function",
  storage: typeof navigator.storage?.persist === "function",
  serviceWorker: typeof navigator.serviceWorker?.register === "function",
  backgroundSync: typeof ServiceWorkerRegistration === "function" && "sync" in ServiceWorkerRegistration.prototype,
  version: m.version(),
});

// Opens an IndexedDB outbox with persistence requested; the answer and the estimate.
window.openPersistent = async (name) => {
  const o = await Outbox.open({ name, requestPersistence: true });
  outboxes.set(name, o);
  return { persisted: o.persisted, estimate: await o.storageEstimate(), status: await o.status() };
};

window.enqueueAndFlush = async (name, event, relays) => {
  const o = outboxes.get(name);
  const enq = await o.enqueue(event, relays);
  const stats = await o.flush();
  const record = await o.get(enq.id);
  return { enqueued: enq, stats, record, status: await o.status() };
};

// Every way the API refuses bad input: typed errors, nothing stored.
window.refusals = async (name, valid, relay) => {
  const o = outboxes.get(name);
  const before = (await o.status()).total;
  const tampered = { ...valid, content: valid.content + " (tampered)" };
  const out = {
    tampered: await refusal(() => o.enqueue(tampered, [relay])),
    badRelay: await refusal(() => o.enqueue(valid, ["http://not-a-relay.example"])),
    badOptions: await refusal(() => Outbox.open({ name: name + "-bad", storage: "floppy" })),
    badConfig: await refusal(() => Outbox.open({ name: name + "-bad", maxAttempts: 0 })),
    batch: await refusal(() => o.enqueueMany([{ event: valid, relays: [relay] }, { event: tampered, relays: [relay] }])),
  };
  out.storedAfter = (await o.status()).total - before;
  await o.close();
  out.closed = await refusal(() => o.status());
  outboxes.delete(name);
  return out;
};

// One attempt with the relay down, retried after 100 ms: the record waits, due again by
// the time the service worker flushes.
window.enqueueWithRelayDown = async (name, event, relays) => {
  const o = await Outbox.open({ name, connectTimeoutMs: 1000, baseDelayMs: 100, maxDelayMs: 100 });
  await o.enqueue(event, relays);
  await o.flush();
  const r = await o.get(event.id);
  await o.close();
  await sleep(300);
  return { stage: r.stage, evidence: r.evidence };
};

// Background Sync is missing: registerBackgroundSync says so (false), never throws.
window.backgroundSync = async () => {
  const reg = await navigator.serviceWorker.register("/tests/e2e/pages/webkit-sw.js", { type: "module", scope: "/tests/e2e/pages/" });
  await navigator.serviceWorker.ready;
  return { registered: await registerBackgroundSync(reg, "nostr-outbox-webkit"), hasSync: "sync" in reg };
};

// The service worker flushes an outbox on a message (handleSync), as a page without
// Background Sync asks it to; resolves with what the worker posted back.
window.flushInServiceWorker = async (name, timeoutMs) => {
  const reg = await navigator.serviceWorker.ready;
  const channel = new MessageChannel();
  const answer = new Promise((ok) => (channel.port1.onmessage = (e) => ok(e.data)));
  reg.active.postMessage({ flush: name }, [channel.port2]);
  return Promise.race([answer, sleep(timeoutMs).then(() => ({ error: "no answer from the service worker" }))]);
};

// Auto-flush without Background Sync: the record waits while the relay is down.
window.openAuto = async (name, event, relays) => {
  const o = await Outbox.open({ name, autoFlush: true, connectTimeoutMs: 1000, baseDelayMs: 600_000, maxDelayMs: 600_000 });
  outboxes.set(name, o);
  const enq = await o.enqueue(event, relays);
  for (let i = 0; i < 200; i++) {
    const r = await o.get(event.id);
    if (r && r.stage === "retryable") return { record: r };
    await sleep(50);
  }
  return { record: await o.get(event.id), enqueued: enq };
};

// The relay is back: the page says `online` (what the browser fires); the outbox delivers
// without a flush() call.
window.onlineDelivers = async (name, id, timeoutMs) => {
  const o = outboxes.get(name);
  window.dispatchEvent(new Event("online"));
  const t0 = Date.now();
  let r;
  while (Date.now() - t0 < timeoutMs) {
    r = await o.get(id);
    if (r && r.stage === "satisfied") break;
    await sleep(100);
  }
  await o.close();
  outboxes.delete(name);
  return { record: r };
};

document.body.dataset.ready = "true";
