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
const limits = { maxMutations: 1000, maxChecks: 100, maxValueBytes: 65536, maxCommitBytes: 716800, maxKeyBytes: 64920 };
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
console.log(`node: ${t.passed} passed; ${t.failed} failed`);
process.exit(t.failed ? 1 : 0);
