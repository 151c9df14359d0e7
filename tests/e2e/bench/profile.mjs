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

// Self time grouped by what it is spent on (wasm names need a build with a name section,
// e.g. wasm-bindgen without wasm-opt; an optimized build shows wasm-function[N]).
const CATEGORIES = [
  ["signature and id check (k256, sha2)", /k256|sha2|elliptic_curve|subtle::|primeorder|crypto_bigint|schnorr|ecdsa|FieldElement|ProjectivePoint|Scalar/],
  ["JSON (nostr_outbox::json, serde)", /nostr_outbox::json::|serde_json|serde_core|serde::|Deserialize|Serialize/],
  ["wasm<->JS conversion and glue", /serde_wasm_bindgen|wasm_bindgen|js_sys|web_sys|getStringFromWasm|passStringToWasm|getArrayU8|__wbg_|__wbindgen|wasm-to-js|js-to-wasm|^decode |^encode|^encodeInto|^stringify|^parse /],
  ["IndexedDB calls", /^(put|add|get|getAll|getAllKeys|transaction|commit|count|openCursor|delete|objectStore|index|bound|upperBound|lowerBound) |glue\.js/],
  ["events (BroadcastChannel, CustomEvent)", /^postMessage|^dispatchEvent|^CustomEvent|^fire /],
  ["allocation and copies (dlmalloc, memcpy)", /dlmalloc|memcpy|memmove|memset|alloc::|__rust_alloc|__rust_dealloc|__rust_realloc|RawVec/],
  ["other Rust (nostr_outbox and std)", /nostr_outbox::|core::|std::|hashbrown|futures/],
  ["benchmark counters (instrumentation)", /^proto\.<computed>/],
  ["wasm, unnamed (profile a build without wasm-opt to see names)", /^wasm-function\[/],
  ["(idle)", /^\(idle\)/],
  ["(program)", /^\(program\)/],
  ["(garbage collector)", /^\(garbage collector\)/],
];

/** Self time per category (see CATEGORIES); unmatched functions count as "other JS". */
export function categories(profile) {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map();
  let total = 0;
  const { samples = [], timeDeltas = [] } = profile;
  for (let i = 0; i < samples.length; i++) {
    const dt = timeDeltas[i] || 0;
    total += dt;
    const f = byNode.get(samples[i])?.callFrame;
    if (!f) continue;
    const file = (f.url || "").split("/").pop();
    const key = `${f.functionName || "(anonymous)"} ${file}`;
    const cat = (CATEGORIES.find(([, re]) => re.test(key)) || ["other JS"])[0];
    totals.set(cat, (totals.get(cat) || 0) + dt);
  }
  return [...totals.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([cat, us]) => ({ category: cat, ms: us / 1000, percent: (100 * us) / total }));
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
