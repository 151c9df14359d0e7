// The contract suite in Node on js/memory-storage.js (the reference implementation), plus
// its emulated limits.
import { runContract, tally } from "./contract.mjs";
import { memoryStorage } from "../../js/memory-storage.js";

const print = (line) => console.log(line);
const t = tally(print);
const { add, check } = t;

const map = new Map();
add(await runContract((space) => memoryStorage({ map, prefix: `${space}/` }), print, { name: "node::memory" }));
// With Deno KV's limits emulated: the suite fills them exactly.
const limited = new Map();
const limits = { maxMutations: 1000, maxChecks: 100, maxValueBytes: 65536, maxCommitBytes: 716800, maxKeyBytes: 64920, maxKeyLength: 2031 };
add(await runContract((space) => memoryStorage({ map: limited, prefix: `${space}/`, limits }), print, { name: "node::memory-limited" }));

// Over the emulated limits: rejects, writes nothing.
await check("node::memory-limited::over_limits_reject", async () => {
  const a = memoryStorage({ limits: { maxMutations: 2, maxChecks: 1, maxValueBytes: 4, maxCommitBytes: 10 } });
  const cases = [
    { checks: [], puts: [{ key: "a", value: "" }, { key: "b", value: "" }], deletes: ["c"] },
    { checks: [{ key: "a", version: null }, { key: "b", version: null }], puts: [], deletes: [] },
    { checks: [], puts: [{ key: "a", value: "ééé" }], deletes: [] },
    { checks: [], puts: [{ key: "aaaaaa", value: "bbbbb" }], deletes: [] },
  ];
  for (const c of cases) {
    let threw = false;
    try {
      await a.commit(c);
    } catch (err) {
      threw = err instanceof Error;
    }
    if (!threw) throw new Error(`not rejected: ${JSON.stringify(c)}`);
  }
  const listed = await a.list({ start: "", end: "~", limit: 10, reverse: false });
  if (listed.length) throw new Error("something was written");
  if (!(await a.commit({ checks: [{ key: "a", version: null }], puts: [{ key: "a", value: "éé" }, { key: "bb", value: "" }], deletes: [] }))) throw new Error("at the limits: not applied");
});
// An adapter holding what the build before priorities wrote (key layout 1, claim order
// under `d/`; tests/data/kv_v1_entries.json) is migrated when the edge build opens it:
// nothing is left under `d/`, and every record that is not terminal is flushed.
await check("node::layout_1_adapter_is_migrated_at_open", async () => {
  const { readFile } = await import("node:fs/promises");
  const { default: init, Outbox } = await import("../../pkg/edge/index.js");
  await init();
  const entries = JSON.parse(await readFile(new URL("../data/kv_v1_entries.json", import.meta.url), "utf8"));
  const map = new Map(entries.map(([key, value], i) => [`old/${key}`, { value, version: `v${i}` }]));
  const sent = [];
  const transport = { publish: async (relay, event) => (sent.push([relay, JSON.parse(event).id]), { ok: true, message: "" }) };
  const outbox = await Outbox.open({ storage: memoryStorage({ map, prefix: "old/" }), transport });
  const left = [...map.keys()].filter((k) => k.startsWith("old/d/"));
  if (left.length) throw new Error(`layout-1 keys left: ${left.length}`);
  if ([...map.keys()].filter((k) => k.startsWith("old/p/1/")).length !== 5) throw new Error("not filed under normal priority");
  const before = await outbox.status();
  if (before.total !== 8) throw new Error(`status ${JSON.stringify(before)}`);
  const result = await outbox.flush();
  const after = await outbox.status();
  await outbox.close();
  if (result.claimed !== 5 || after.satisfied !== 6 || after.exhausted !== 1 || after.cancelled !== 1) {
    throw new Error(`flush ${JSON.stringify(result)} → ${JSON.stringify(after)}`);
  }
  // #2 to b (a accepted before), #4 and #6 to a and b, #7 and #8 to their three relays.
  if (sent.length !== 11) throw new Error(`sent ${JSON.stringify(sent)}`);
});
console.log(`node: ${t.passed} passed; ${t.failed} failed`);
process.exit(t.failed ? 1 : 0);
