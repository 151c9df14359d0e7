// Diagnostics for `bench.mjs --profile=<section>`: a summary of a V8 CPU profile (self
// time per function) and page-side counters of IndexedDB transactions and requests,
// WebSocket sends, BroadcastChannel messages and dispatched DOM events. The counters wrap
// prototype methods only for the one instrumented round, never for measured rounds.

/** The `k` functions with the most self time in a CDP `Profiler.stop` profile. */
export function topSelfTimes(profile, k = 20) {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const { samples = [], timeDeltas = [] } = profile;
  let total = 0;
  for (let i = 0; i < samples.length; i++) {
    const dt = timeDeltas[i] || 0;
    total += dt;
    const node = byNode.get(samples[i]);
    if (!node) continue;
    const f = node.callFrame;
    const file = (f.url || "").split("/").pop();
    const key = `${f.functionName || "(anonymous)"} ${file ? `${file}:${f.lineNumber + 1}` : ""}`.trim();
    self.set(key, (self.get(key) || 0) + dt);
  }
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([key, us]) => `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / total).toFixed(1).padStart(5)} %  ${key}`);
}

/** Runs in the page: starts counting. */
export function INSTRUMENT() {
  const c = { transactions: {}, requests: {}, webSocketSends: 0, broadcasts: 0, dispatchedEvents: 0 };
  const saved = [];
  const wrap = (proto, name, count) => {
    const orig = proto[name];
    if (typeof orig !== "function") return;
    saved.push([proto, name, orig]);
    proto[name] = function (...args) {
      count(args);
      return orig.apply(this, args);
    };
  };
  wrap(IDBDatabase.prototype, "transaction", (a) => {
    const k = `${a[1] || "readonly"}/${(a[2] && a[2].durability) || "default"}`;
    c.transactions[k] = (c.transactions[k] || 0) + 1;
  });
  for (const [proto, prefix] of [[IDBObjectStore.prototype, "store"], [IDBIndex.prototype, "index"]]) {
    for (const m of ["put", "add", "get", "getAll", "getAllKeys", "delete", "openCursor", "count"]) {
      wrap(proto, m, () => {
        c.requests[`${prefix}.${m}`] = (c.requests[`${prefix}.${m}`] || 0) + 1;
      });
    }
  }
  wrap(WebSocket.prototype, "send", () => (c.webSocketSends += 1));
  wrap(BroadcastChannel.prototype, "postMessage", () => (c.broadcasts += 1));
  wrap(EventTarget.prototype, "dispatchEvent", () => (c.dispatchedEvents += 1));
  window.__benchCounters = { c, saved };
}

/** Runs in the page: stops counting and returns the counts. */
export function UNINSTRUMENT() {
  const { c, saved } = window.__benchCounters;
  for (const [proto, name, orig] of saved.reverse()) proto[name] = orig;
  delete window.__benchCounters;
  return c;
}
