// Bad input for the torture suite: every field of a signed event wrong in turn, wrong id,
// wrong sig, huge content, deep tags, bad relay URLs and bad options. Each case names the
// call, its arguments and the OutboxError code (and details.reason / field) it must get.
// Built in Node from one valid event signed by nostr-tools; the page runs them
// (runBadInput below is evaluated in the page).
import { generateSecretKey, finalizeEvent } from "nostr-tools/pure";

const RELAY = "ws://127.0.0.1:9";

export function badInputCases() {
  const sk = generateSecretKey();
  const valid = finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [["t", "bad"]], content: "valid" }, sk);
  const ev = { ...valid };
  const without = (f) => { const e = { ...ev }; delete e[f]; return e; };
  const withField = (f, v) => ({ ...ev, [f]: v });
  const flip = (hex, i = 10) => hex.slice(0, i) + (hex[i] === "0" ? "1" : "0") + hex.slice(i + 1);
  const cases = [];
  const enq = (name, event, expect, relays = [RELAY], options) => cases.push({ name, call: "enqueue", args: [event, relays, options], expect });
  const E = (reason, field) => ({ code: "invalid_event", reason, field });

  // The event as a whole.
  enq("event null", null, E("not_object"));
  enq("event number", 42, E("not_object"));
  enq("event array", [valid], E("not_object"));
  enq("event text not JSON", "{not json", E("not_json"));
  enq("event text array", "[]", { code: "invalid_event" });
  enq("event empty object", {}, E("missing_field"));
  // Every field missing, then of the wrong type, then with a bad value.
  for (const f of ["id", "pubkey", "created_at", "kind", "tags", "content", "sig"]) enq(`missing ${f}`, without(f), E("missing_field", f));
  const wrongTypes = { id: 5, pubkey: null, created_at: String(ev.created_at), kind: "1", tags: "t", content: 5, sig: [ev.sig] };
  for (const [f, v] of Object.entries(wrongTypes)) enq(`wrong type ${f}`, withField(f, v), E("wrong_type", f));
  enq("tags not arrays", withField("tags", [1, 2]), E("wrong_type", "tags"));
  enq("tag item not a string", withField("tags", [["t", 1]]), E("wrong_type", "tags"));
  enq("deep tags (object)", withField("tags", [[["nested"]]]), E("wrong_type", "tags"));
  const badValues = {
    id: "zz".repeat(32),
    pubkey: ev.pubkey.slice(2),
    created_at: -1,
    kind: 70_000,
    sig: ev.sig.slice(4),
  };
  for (const [f, v] of Object.entries(badValues)) enq(`bad value ${f}`, withField(f, v), { code: "invalid_event", field: f });
  enq("created_at fraction", withField("created_at", 1.5), { code: "invalid_event", field: "created_at" });
  enq("upper-case id", withField("id", ev.id.toUpperCase()), { code: "invalid_event" });
  enq("wrong id", withField("id", flip(ev.id)), E("id_mismatch"));
  enq("content changed (id no longer matches)", withField("content", "other"), E("id_mismatch"));
  enq("tags changed", withField("tags", [["t", "other"]]), E("id_mismatch"));
  enq("wrong sig", withField("sig", flip(ev.sig, 70)), E("bad_signature"));
  enq("sig of another event", withField("sig", finalizeEvent({ kind: 1, created_at: 1, tags: [], content: "x" }, sk).sig), E("bad_signature"));
  enq("other pubkey", withField("pubkey", flip(ev.pubkey, 5)), { code: "invalid_event" });
  enq("huge content (8 MB, id mismatch)", withField("content", "x".repeat(8 * 1024 * 1024)), E("id_mismatch"));
  const text = JSON.stringify(ev);
  enq("text with a duplicate field", text.replace("{", `{"kind":${ev.kind},`), E("duplicate_field"));
  enq("text with trailing garbage", text + " x", E("not_json"));
  cases.push({ name: "deep tags (text, 100000 levels)", call: "enqueue", deepText: 100_000, args: [null, [RELAY]], expect: { code: "invalid_event" } });
  cases.push({ name: "deep tags (object, 200000 levels)", call: "enqueue", deepObject: 200_000, args: [null, [RELAY]], expect: { code: "invalid_event" } });

  // Relays.
  enq("no relays", valid, { code: "invalid_targets" }, []);
  enq("65 relays", valid, { code: "invalid_targets" }, Array.from({ length: 65 }, (_, i) => `ws://127.0.0.1:${1000 + i}`));
  for (const [i, url] of ["http://127.0.0.1:9", "ws://", "127.0.0.1:9", "wss://exa mple.com", "ws://127.0.0.1:99999", "ws://127.0.0.1:1:2", "", "ws://user@/x"].entries()) {
    enq(`bad relay URL ${JSON.stringify(url)}`, valid, { code: "invalid_relay_url", index: 1 }, [RELAY, url]);
    void i;
  }
  enq("relay not a string", valid, { codes: ["invalid_relay_url", "invalid_argument"] }, [RELAY, 5]);
  enq("relays not an array", valid, { code: "invalid_argument" }, RELAY);
  enq("relays null", valid, { code: "invalid_argument" }, null);

  // Options.
  const opt = (name, options, expect) => enq(name, valid, expect, [RELAY], options);
  opt("options not an object", 5, { code: "invalid_options" });
  opt("unknown option", { priority: 1 }, { code: "invalid_options", option: "priority" });
  opt("unknown policy", { policy: "most" }, { code: "invalid_policy" });
  opt("atLeast 0", { policy: { atLeast: 0 } }, { code: "invalid_policy" });
  opt("atLeast above targets", { policy: { atLeast: 2 } }, { code: "invalid_policy" });
  opt("required not a target", { policy: { required: ["ws://127.0.0.1:10"] } }, { code: "invalid_policy" });
  opt("required bad URL", { policy: { required: ["http://x"] } }, { code: "invalid_relay_url" });
  opt("policy object with two kinds", { policy: { atLeast: 1, required: [RELAY] } }, { code: "invalid_policy" });
  opt("maxAttempts 0", { maxAttempts: 0 }, { code: "invalid_argument" });
  opt("maxAttempts 1001", { maxAttempts: 1001 }, { code: "invalid_argument" });
  opt("maxAttempts text", { maxAttempts: "3" }, { codes: ["invalid_options", "invalid_argument"] });
  opt("deadline text", { deadline: "soon" }, { codes: ["invalid_options", "invalid_argument"] });
  opt("id empty", { id: "" }, { code: "invalid_item_id" });
  opt("id with a space", { id: "a b" }, { code: "invalid_item_id" });
  opt("id too long", { id: "x".repeat(129) }, { code: "invalid_item_id" });
  opt("id not a string", { id: 7 }, { codes: ["invalid_options", "invalid_argument"] });

  // A batch with one bad item writes nothing, not even the good ones.
  const other = finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content: "good item in a bad batch" }, sk);
  cases.push({ name: "enqueueMany with a bad second item", call: "enqueueMany", args: [[{ event: other, relays: [RELAY] }, { event: withField("sig", flip(ev.sig, 70)), relays: [RELAY] }]], expect: { code: "invalid_event", index: 1 } });
  cases.push({ name: "enqueueMany with a bad relay in the first item", call: "enqueueMany", args: [[{ event: other, relays: ["http://x"] }, { event: valid, relays: [RELAY] }]], expect: { code: "invalid_relay_url" } });
  cases.push({ name: "enqueueMany not an array", call: "enqueueMany", args: [{ event: other, relays: [RELAY] }], expect: { codes: ["invalid_argument", "invalid_options"] } });
  cases.push({ name: "enqueueMany item with unknown key", call: "enqueueMany", args: [[{ event: other, relays: [RELAY], colour: "red" }]], expect: { code: "invalid_options" } });

  // Other methods.
  cases.push({ name: "get with a number", call: "get", args: [5], expect: { code: "invalid_argument" } });
  cases.push({ name: "cancel unknown id", call: "cancel", args: ["nope"], expect: { code: "not_found" } });
  cases.push({ name: "retry a pending record", call: "retry", args: ["__SEEDED__"], expect: { code: "not_retryable" } });
  cases.push({ name: "list limit 0", call: "list", args: [{ limit: 0 }], expect: { code: "invalid_argument" } });
  cases.push({ name: "list unknown stage", call: "list", args: [{ stage: "lost" }], expect: { codes: ["invalid_argument", "invalid_options"] } });
  cases.push({ name: "list after unknown id", call: "list", args: [{ after: "nope" }], expect: { code: "not_found" } });
  cases.push({ name: "purge before text", call: "purge", args: [{ before: "yesterday" }], expect: { codes: ["invalid_options", "invalid_argument"] } });

  // Outbox.open with bad options (on the same database: must not touch it).
  const open = (name, options, expect) => cases.push({ name: `open: ${name}`, call: "open", args: [options], expect });
  open("batchSize 0", { batchSize: 0 }, { code: "invalid_config", field: "batchSize" });
  open("concurrency 1000", { concurrency: 1000 }, { code: "invalid_config" });
  open("leaseMs 0", { leaseMs: 0 }, { code: "invalid_config" });
  open("publishTimeoutMs 0", { publishTimeoutMs: 0 }, { code: "invalid_config" });
  open("maxDelayMs below baseDelayMs", { baseDelayMs: 5000, maxDelayMs: 10 }, { code: "invalid_config" });
  open("maxAttempts 0", { maxAttempts: 0 }, { code: "invalid_config" });
  open("storage disk", { storage: "disk" }, { code: "invalid_options" });
  open("durability eventually", { durability: "eventually" }, { code: "invalid_options" });
  open("unknown option", { relays: [RELAY] }, { code: "invalid_options" });
  open("policy most", { policy: "most" }, { code: "invalid_policy" });
  open("signer without signEvent", { signer: {} }, { code: "invalid_options" });
  open("transport without publish", { transport: {} }, { code: "invalid_options" });
  open("options a string", "fast", { code: "invalid_options" });
  return { cases, seed: [valid, finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000) - 5, tags: [], content: "seed 2" }, sk)] };
}

/**
 * Runs in the page (page.evaluate): seeds an outbox with two records, runs every case,
 * and compares status() and list() before and after. Returns the results.
 */
export async function runBadInput([cases, seed, IMPORT_PACKAGE, name]) {
  const { Outbox, OutboxError } = await eval(IMPORT_PACKAGE);
  const outbox = await Outbox.open({ name });
  await outbox.enqueue(seed[0], ["ws://127.0.0.1:9"]);
  await outbox.enqueue(seed[1], ["ws://127.0.0.1:9", "ws://127.0.0.1:10"], { policy: "any" });
  const snapshot = async () => JSON.stringify([await outbox.status(), await outbox.list({ limit: 1000 })]);
  const before = await snapshot();
  const results = [];
  for (const c of cases) {
    let args = c.args;
    if (c.deepText) {
      const text = JSON.stringify(seed[0]).replace('"tags":[', `"tags":[${"[".repeat(c.deepText)}${"]".repeat(c.deepText)},`);
      args = [text, ...c.args.slice(1)];
    }
    if (c.deepObject) {
      let deep = ["x"];
      for (let i = 0; i < c.deepObject; i++) deep = [deep];
      args = [{ ...seed[0], tags: [deep] }, ...c.args.slice(1)];
    }
    if (c.call === "retry") args = [seed[0].id];
    const t0 = performance.now();
    try {
      let value;
      if (c.call === "open") {
        const o = await Outbox.open(args[0] && typeof args[0] === "object" ? { name, ...args[0] } : args[0]);
        await o.close();
        value = "opened";
      } else {
        value = await outbox[c.call](...args);
      }
      results.push({ name: c.name, ok: true, value: typeof value === "object" ? "object" : value, ms: performance.now() - t0 });
    } catch (err) {
      results.push({
        name: c.name,
        ok: false,
        isOutboxError: err instanceof OutboxError,
        isError: err instanceof Error,
        errName: err?.name,
        code: err?.code,
        details: err?.details ?? null,
        message: String(err?.message ?? err).slice(0, 200),
        ms: performance.now() - t0,
      });
    }
  }
  const after = await snapshot();
  await outbox.close();
  return { results, unchanged: before === after, before: before.slice(0, 300), after: after.slice(0, 300) };
}
