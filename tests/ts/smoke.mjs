// Loads the built package (pkg/, from `make build`) in Node.js the way an application
// imports it, and checks the entry's exports, `instanceof OutboxError`, and a memory
// outbox end to end through a custom transport; then the edge build, as Node's `node`
// condition resolves it: `init()` with no argument (reads the file), typed errors for
// IndexedDB and for a missing WebSocket, an outbox on the memory storage adapter end to
// end, and reopened over the same data; then groups through both entries.
// Run: node tests/ts/smoke.mjs
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
// Not dated ahead of the clock: such an event waits for its created_at.
const event = vectors.vectors
  .filter((v) => v.valid_sig && !v.json.includes("expiration"))
  .map((v) => JSON.parse(v.json))
  .find((e) => e.created_at * 1000 <= Date.now());

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
// The browser build has no adapters: a typed refusal that names the edge entry.
await assert.rejects(
  Outbox.open({ storage: { getMany() {}, list() {}, commit() {} } }),
  (e) => e instanceof OutboxError && e.code === "storage_unavailable" && e.message.includes("nostr-outbox/edge"),
);

// The edge build: what `import "nostr-outbox"` gives Node (the `node` condition).
assert.equal(pkg.exports["."].node, "./edge/index.js");
const edge = await import(new URL(pkg.exports["."].node, pkgDir));
const { memoryStorage } = await import(new URL(pkg.exports["./memory-storage"].default, pkgDir));
await edge.default(); // no argument: reads edge/nostr_outbox_bg.wasm (Node's fetch cannot read file: URLs)
assert.equal(edge.version(), pkg.version);
assert.notEqual(edge.Outbox, Outbox, "its own module");
await assert.rejects(edge.Outbox.open(), (e) => {
  assert.ok(e instanceof edge.OutboxError);
  assert.equal(e.code, "storage_unavailable");
  assert.match(e.message, /edge build/);
  return true;
});
// Node 20 has no global WebSocket: refused at open, not retried forever.
if (typeof globalThis.WebSocket !== "function") {
  await assert.rejects(edge.Outbox.open({ storage: "memory" }), (e) => e.code === "unsupported" && /WebSocket/.test(e.message));
}
await assert.rejects(edge.Outbox.open({ storage: { getMany() {} } }), (e) => e.code === "invalid_options" && /list, commit/.test(e.message));
await assert.rejects(edge.Outbox.open({ storage: 42 }), (e) => e.code === "invalid_options" && /got a number/.test(e.message));
// The release .wasm is built with -Zfmt-debug=none (Debug writes nothing): the messages
// that quote what the app gave quote it themselves.
for (const open of [(o) => Outbox.open(o), (o) => edge.Outbox.open(o)]) {
  await assert.rejects(open({ storage: "disk\t1" }), (e) => e.code === "invalid_options" && e.message.endsWith("got `disk\t1`"));
}
const map = new Map();
const transport = { publish: async () => ({ ok: true, message: "" }) };
const first = await edge.Outbox.open({ storage: memoryStorage({ map }), transport });
assert.equal(first.storage, "adapter");
await assert.rejects(first.enqueue(bad, ["wss://a.example"]), (e) => e instanceof edge.OutboxError && e.code === "invalid_event");
for (const [url, literal] of [["wss://a.example/x\ty", "U+0009"], ["wss://a.example/é", "U+00E9"], ["wss://a.example/a\\b", "'\\\\'"], ["wss://a.example/x y", "' '"]]) {
  await assert.rejects(
    first.enqueue(event, [url]),
    (e) => e.code === "invalid_relay_url" && e.message.includes(`character ${literal} is not allowed`),
    url,
  );
}
assert.equal(map.size, 0, "bad input writes nothing");
assert.equal((await first.enqueue(event, ["wss://a.example"])).disposition, "created");
assert.ok(map.size > 1, "a row and its index keys");
await first.close();
const second = await edge.Outbox.open({ storage: memoryStorage({ map }), transport });
assert.equal((await second.status()).pending, 1, "the record is in the storage, not the instance");
assert.equal((await second.flush()).delivered, 1);
assert.equal((await second.get(event.id)).stage, "satisfied");
await second.close();

// Groups through both entries (index.js and edge/index.js add cancelGroup, retryGroup and
// the `group` event): a refusing relay for member 1 makes the group partial.
for (const [m, storage] of [[mod, "memory"], [edge, memoryStorage()]]) {
  const refuse = { publish: async (relay) => (relay === "wss://b.example" ? { ok: false, message: "blocked: no" } : { ok: true, message: "" }) };
  const o = await m.Outbox.open({ storage, transport: refuse });
  const told = [];
  o.addEventListener("group", (e) => told.push(e.detail));
  await assert.rejects(o.cancelGroup("g"), (e) => e instanceof m.OutboxError && e.code === "not_found");
  assert.equal(await o.group("g"), null);
  const made = await o.enqueueGroup([{ event, relays: ["wss://a.example"] }, { event, relays: ["wss://b.example"], maxAttempts: 1 }], { group: "g" });
  await new Promise((r) => setTimeout(r, 20)); // the `group` event comes a task later
  assert.deepEqual(told.map((t) => [t.id, t.state, t.open]), [["g", "sending", 2]]);
  assert.deepEqual(made.results.map((r) => r.id), ["g:0", "g:1"]);
  assert.deepEqual(made.results[1].record.group, { id: "g", index: 1, size: 2 });
  assert.deepEqual([made.group.id, made.group.size, made.group.state, made.group.open], ["g", 2, "sending", 2]);
  assert.deepEqual(made.group.members.map((r) => r.id), ["g:0", "g:1"]);
  await assert.rejects(o.group(7), (e) => e instanceof m.OutboxError && e.code === "invalid_argument");
  await assert.rejects(o.group("bad id"), (e) => e instanceof m.OutboxError && e.code === "invalid_item_id");
  await o.flush();
  const g = await o.group("g");
  assert.deepEqual([g.state, g.delivered, g.failed, g.open], ["partial", 1, 1, 0]);
  assert.equal((await o.retryGroup("g")).open, 1);
  assert.deepEqual((await o.cancelGroup("g")).members.map((r) => r.stage), ["satisfied", "cancelled"]);
  await new Promise((r) => setTimeout(r, 20));
  // What changed within one task makes one event: the flush, the retry and the cancel.
  assert.deepEqual(told.map((t) => t.state), ["sending", "partial"]);
  assert.equal(told[1].members[1].stage, "cancelled");
  // A purged member is missing; the group is found from the others until all are gone.
  await o.purge({ before: Date.now() + 1 }); // both terminal now
  assert.equal(await o.group("g"), null);
  await o.close();
}

// Routing intents through the glue (resolveRoute): the evidence's words and why a record
// cannot be sent, in both builds.
const signedEvents = vectors.vectors
  .filter((v) => v.valid_sig && !v.json.includes("expiration"))
  .map((v) => JSON.parse(v.json))
  .filter((e) => e.created_at * 1000 <= Date.now());
const tagging = signedEvents.find((e) => e.tags.some((t) => t[0] === "p" && /^[0-9a-f]{64}$/.test(t[1])));
const untagged = signedEvents.find((e) => !e.tags.some((t) => t[0] === "p") && e.id !== tagging.id);
const recipient = tagging.tags.find((t) => t[0] === "p")[1];
for (const [m, storage] of [[mod, "memory"], [edge, memoryStorage()]]) {
  const asked = [];
  const resolver = async ({ intent, pubkeys }) => {
    asked.push([intent, pubkeys.length]);
    return intent === "outbox" ? ["wss://w.example", { relay: "wss://v.example", reason: "write\trelay" }] : [];
  };
  const o = await m.Outbox.open({ storage, transport, resolver });
  await o.enqueue(untagged, [], { route: ["outbox"], id: "out" });
  await o.enqueue(untagged, [], { route: ["outbox", "dm"], id: "nobody" });
  await o.enqueue(tagging, [], { route: ["dm", "outbox"], id: "dm" });
  await o.flush();
  const out = await o.get("out");
  assert.equal(out.stage, "satisfied");
  assert.deepEqual(
    out.evidence.filter((e) => e.relay === "resolver").map((e) => e.message),
    ["wss://w.example outbox", "wss://v.example outbox: write relay"], // a URL alone: the intent alone
  );
  const nobody = await o.get("nobody");
  assert.deepEqual([nobody.stage, nobody.reason, nobody.lastError], ["exhausted", "recipientNotReady", "no recipient (no p tag)"]);
  const dm = await o.get("dm");
  assert.deepEqual([dm.stage, dm.reason, dm.lastError], ["exhausted", "recipientNotReady", `${recipient} has no DM relays (kind 10050)`]);
  // The intents after a recipient that is not ready are not asked.
  assert.deepEqual(asked.filter(([i]) => i === "dm"), [["dm", 1]]);
  await o.close();
}

// How a group is summed up (js/groups.js `groupOf`): delivered = satisfied; failed =
// terminal or exhausted; missing = nothing stored, or a record that is not that member.
const { groupOf } = await import(new URL("groups.js", pkgDir));
const member = (i, size, stage, satisfaction = "pending", id = "dm") => ({ id: `${id}:${i}`, stage, satisfaction, group: { id, index: i, size } });
const sum = (g) => g && [g.state, g.delivered, g.failed, g.open, g.missing];
assert.deepEqual(sum(groupOf("dm", [member(0, 2, "satisfied", "satisfied"), member(1, 2, "delivering", "satisfied")])), ["delivered", 2, 0, 0, 0]);
assert.deepEqual(sum(groupOf("dm", [member(0, 2, "cancelled"), member(1, 2, "retryable", "exhausted")])), ["failed", 0, 2, 0, 0]);
assert.deepEqual(sum(groupOf("dm", [member(0, 3, "satisfied", "satisfied"), null, member(2, 3, "exhausted", "exhausted")])), ["partial", 1, 1, 0, 1]);
assert.deepEqual(sum(groupOf("dm", [member(0, 2, "pending"), member(1, 2, "exhausted", "exhausted")])), ["sending", 0, 1, 1, 0]);
// Records under the member ids that are another group's, or of another size, or out of place.
assert.equal(groupOf("dm", [member(0, 2, "pending", "pending", "dx"), member(0, 2, "pending")]), null);
assert.deepEqual(sum(groupOf("dm", [member(0, 2, "pending"), member(1, 3, "pending")])), ["sending", 0, 0, 1, 1]);
assert.equal(groupOf("dm", [null, null]), null);
console.log("package smoke: ok");
