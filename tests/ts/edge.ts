// A consumer in an edge project (tsconfig.edge.json: `lib: ["ES2023"]`, no DOM): the
// package's declarations must check there, with a storage adapter and a SyncEvent.
import init, {
  Outbox,
  OutboxError,
  handleSync,
  type FlushResult,
  type ImportResult,
  type StorageAdapter,
  type StorageEntry,
  type SyncEvent,
} from "nostr-outbox";
import { createOutboxStore } from "nostr-outbox/store";

const rows = new Map<string, StorageEntry>();
let writes = 0;
const adapter: StorageAdapter = {
  async getMany(keys) {
    return keys.map((k) => rows.get(k) ?? null);
  },
  async list({ start, end, limit, reverse }) {
    const keys = [...rows.keys()].filter((k) => k >= start && k < end).sort();
    if (reverse) keys.reverse();
    return keys.slice(0, limit).map((key) => ({ key, ...rows.get(key)! }));
  },
  async commit({ checks, puts, deletes }) {
    if (checks.some((c) => (rows.get(c.key)?.version ?? null) !== c.version)) return false;
    for (const p of puts) rows.set(p.key, { value: p.value, version: String(++writes) });
    for (const d of deletes) rows.delete(d);
    return true;
  },
};

export async function run(wasm: ArrayBuffer): Promise<FlushResult> {
  await init({ module_or_path: wasm });
  const outbox = await Outbox.open({ storage: adapter, autoFlush: false });
  const storage: "indexeddb" | "memory" | "adapter" = outbox.storage;
  const delivered: string[] = [];
  outbox.addEventListener("delivered", (e) => delivered.push(`${e.detail.id} ${storage}`));
  // The UI store takes the edge build's outbox too (no DOM types needed).
  const stop = createOutboxStore(outbox, { limit: 10 }).subscribe((s) => delivered.push(String(s.status?.total)));
  stop();
  // A queue moved in and out without the DOM library: the export is iterable bytes here.
  const moved: ImportResult = await outbox.import("{}\n");
  for await (const chunk of outbox.export()) delivered.push(String(chunk.byteLength + moved.total));
  await outbox.import([new Uint8Array([123, 125])]);
  try {
    return await outbox.flush();
  } catch (e) {
    if (e instanceof OutboxError && e.code === "storage_unavailable") throw e;
    throw e;
  }
}

export function onSync(event: SyncEvent): void {
  event.waitUntil(handleSync(event, { storage: adapter }));
  // @ts-expect-error: a storage is a string choice or an adapter object
  void Outbox.open({ storage: "sqlite" });
}
