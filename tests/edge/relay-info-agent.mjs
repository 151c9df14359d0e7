// The runtime half of tests/edge/relay-info.mjs, run in Deno or Bun: the edge build's
// NIP-11 checks with this runtime's own `fetch` (and its Cache API where it has one).
// Usage: `<runtime> relay-info-agent.mjs '<json config>'`, config `{ fault, events }`:
// the fault relay's ws:// URL and a JSON file of three signed events from the driver
// (an oversized one, a small one, one more). Reports one `@{json}` line.
import init, { Outbox, relayInformation } from "../../pkg/edge/index.js";

const isDeno = typeof Deno !== "undefined";
const argv = isDeno ? Deno.args : process.argv.slice(2);
const config = JSON.parse(argv[0]);
const report = (value) => console.log("@" + JSON.stringify(value));

async function readText(path) {
  if (isDeno) return Deno.readTextFile(path);
  const { readFile } = await import("node:fs/promises");
  return readFile(path, "utf8");
}

await init();
const [big, small, other] = JSON.parse(await readText(config.events));
const runtime = isDeno ? "deno" : typeof Bun !== "undefined" ? "bun" : "node";
// Paths tagged per runtime: the fault relay counts EVENTs and documents per path.
const limited = `${config.fault}/info/max_message_length=1000?t=${runtime}`;
const plain = `${config.fault}/?t=nip11-${runtime}`;
const hostile = `${config.fault}/info/huge-unsized?t=${runtime}`;
const outbox = await Outbox.open({ storage: "memory", autoFlush: false, connectTimeoutMs: 2000, publishTimeoutMs: 3000 });
await outbox.enqueue(big, [limited, plain]);
await outbox.enqueue(small, [limited]);
await outbox.enqueue(other, [hostile]);
await outbox.flush();
const records = await Promise.all([big, small, other].map((e) => outbox.get(e.id)));
const info = await relayInformation(limited);
const hostileInfo = await relayInformation(hostile);
await outbox.close();
report({
  runtime,
  evidence: records.map((r) => r.evidence.map(({ relay, outcome, rejectReason, message }) => ({ relay, outcome, rejectReason, message }))),
  info: { status: info.status, limits: info.limits },
  hostile: { status: hostileInfo.status, notes: hostileInfo.notes },
  caches: typeof caches === "object",
});
