// Loads the built package (pkg/, from `make build`) in Node.js the way an application
// imports it, and checks the entry's exports, `instanceof OutboxError`, and a memory
// outbox end to end through a custom transport. Run: node tests/ts/smoke.mjs
import { readFile } from "node:fs/promises";
import assert from "node:assert/strict";

const pkgDir = new URL("../../pkg/", import.meta.url);
const pkg = JSON.parse(await readFile(new URL("package.json", pkgDir), "utf8"));
assert.equal(pkg.name, "nostr-outbox");
assert.equal(pkg.exports["."].default, "./index.js");
const mod = await import(new URL(pkg.exports["."].import, pkgDir));
const { default: init, Outbox, OutboxError, handleSync, registerBackgroundSync, version } = mod;
for (const [k, v] of Object.entries({ init, Outbox, OutboxError, handleSync, registerBackgroundSync, version })) {
  assert.equal(typeof v, "function", `export ${k}`);
}
await init({ module_or_path: await readFile(new URL("nostr_outbox_bg.wasm", pkgDir)) });
assert.equal(version(), pkg.version);

const vectors = JSON.parse(await readFile(new URL("../data/event_vectors.json", import.meta.url), "utf8"));
const event = JSON.parse(vectors.vectors.find((v) => v.valid_sig && !v.json.includes("expiration")).json);

// No IndexedDB in Node: a typed error, then the memory store.
await assert.rejects(Outbox.open(), (e) => e instanceof OutboxError && e.code === "storage_unavailable");
const published = [];
const outbox = await Outbox.open({
  storage: "memory",
  transport: { publish: async (relay, text) => (published.push([relay, JSON.parse(text).id]), { ok: true, message: "" }) },
});
const seen = [];
outbox.addEventListener("delivered", (e) => seen.push(e.detail.id));

const bad = { ...event, sig: event.sig.replace(/.$/, (c) => (c === "0" ? "1" : "0")) };
await assert.rejects(outbox.enqueue(bad, ["wss://a.example"]), (e) => {
  assert.ok(e instanceof OutboxError, "instanceof OutboxError");
  assert.ok(e instanceof Error, "instanceof Error");
  assert.equal(e.name, "OutboxError");
  assert.equal(e.code, "invalid_event");
  assert.equal(e.details.reason, "bad_signature");
  return true;
});
assert.equal((await outbox.status()).total, 0);

const r = await outbox.enqueue(event, ["wss://a.example", "WSS://A.EXAMPLE/"]);
assert.equal(r.disposition, "created");
assert.equal(r.record.targets.length, 1);
const stats = await outbox.flush();
assert.equal(stats.delivered, 1);
assert.deepEqual(seen, [event.id]);
assert.deepEqual(published, [["wss://a.example", event.id]]);
assert.equal((await outbox.get(event.id)).stage, "satisfied");
await outbox.close();
await assert.rejects(outbox.status(), (e) => e instanceof OutboxError && e.code === "closed");
assert.equal(await registerBackgroundSync({}), false);
console.log("package smoke: ok");
