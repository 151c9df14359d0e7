// Signed kind-1 notes for the benchmarks, made by nostr-tools (another implementation than
// ours) with its nostr-wasm signer, and cached in target/bench/ so a run does not spend a
// minute signing on a loaded 2-core machine. Every event is checked again by the outbox
// (it verifies on enqueue) and by nostr-rs-relay, so a bad cache cannot go unnoticed.
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { generateSecretKey } from "nostr-tools/pure";
import { setNostrWasm, finalizeEvent } from "nostr-tools/wasm";
import { initNostrWasm } from "nostr-wasm";
import { ROOT } from "../harness.mjs";

const CACHE_DIR = join(ROOT, "target", "bench");
const CACHE = join(CACHE_DIR, "events-v1.json");

/** About 150 characters of content, like a short post. */
const content = (i) => `benchmark note ${i}: a short text note of the size people usually post, `.padEnd(150, "~");

/** `count` distinct signed events (cached; signed once per machine). */
export async function benchEvents(count) {
  let cached = [];
  try {
    cached = JSON.parse(await readFile(CACHE, "utf8"));
  } catch {
    cached = [];
  }
  if (cached.length >= count) return cached.slice(0, count);
  setNostrWasm(await initNostrWasm());
  const sk = generateSecretKey();
  // Old enough to be stable, recent enough for every relay's created_at limits.
  const base = Math.floor(Date.now() / 1000) - 3600;
  const t = performance.now();
  const events = cached.slice();
  for (let i = events.length; i < count; i++) {
    events.push(finalizeEvent({ kind: 1, created_at: base - i, tags: [["t", "bench"]], content: content(i) }, sk));
  }
  await mkdir(CACHE_DIR, { recursive: true });
  await writeFile(CACHE, JSON.stringify(events));
  console.log(`(signed ${count - cached.length} events with nostr-tools/nostr-wasm in ${((performance.now() - t) / 1000).toFixed(1)} s; cached in ${CACHE})`);
  return events;
}
