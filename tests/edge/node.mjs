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
// An adapter holding what an older build wrote is migrated when the edge build opens
// it: no key of the old layouts is left (lowercase prefixes but `o/`), and every record
// that is not terminal is flushed. Key layout 1 (before priorities, claim order under
// `d/`; tests/data/kv_v1_entries.json) and key layout 2 (ids in hex;
// tests/data/kv_v2_entries.json, 11 records of which 6 can be sent now and 1 is a draft).
async function openOld(fixture) {
  const { readFile } = await import("node:fs/promises");
  const { default: init, Outbox } = await import("../../pkg/edge/index.js");
  await init();
  const entries = JSON.parse(await readFile(new URL(`../data/${fixture}`, import.meta.url), "utf8"));
  const map = new Map(entries.map(([key, value], i) => [`old/${key}`, { value, version: `v${i}` }]));
  const sent = [];
  const transport = { publish: async (relay, event) => (sent.push([relay, JSON.parse(event).id]), { ok: true, message: "" }) };
  const outbox = await Outbox.open({ storage: memoryStorage({ map, prefix: "old/" }), transport });
  const left = [...map.keys()].filter((k) => /^old\/[a-z]\//.test(k) && !k.startsWith("old/o/"));
  if (left.length) throw new Error(`keys of the old layouts left: ${left.length}`);
  return { outbox, map, sent };
}
await check("node::layout_1_adapter_is_migrated_at_open", async () => {
  const { outbox, map, sent } = await openOld("kv_v1_entries.json");
  if ([...map.keys()].filter((k) => k.startsWith("old/P/1/")).length !== 5) throw new Error("not filed under normal priority");
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
await check("node::layout_2_adapter_is_migrated_at_open", async () => {
  const { outbox, map } = await openOld("kv_v2_entries.json");
  if (![...map.keys()].some((k) => k.startsWith("old/S/30023:"))) throw new Error("slot keys not moved");
  const before = await outbox.status();
  if (before.total !== 11 || before.corrupt !== 0) throw new Error(`status ${JSON.stringify(before)}`);
  const result = await outbox.flush();
  const after = await outbox.status();
  const dm = await outbox.list({ lane: "dm", limit: 10 });
  await outbox.close();
  if (result.claimed !== 6 || after.draft !== 1 || dm.length !== 1) {
    throw new Error(`flush ${JSON.stringify(result)} → ${JSON.stringify(after)}; dm ${dm.length}`);
  }
});
console.log(`node: ${t.passed} passed; ${t.failed} failed`);
process.exit(t.failed ? 1 : 0);
