// What the queue's Nostr rules cost an enqueue, in one Chromium page on the built
// package: `enqueueMany` of N regular notes (the write-only path) against N profiles of
// N authors (each read against its slot) and N versions of one profile (each supersedes
// the one before it in the batch), and a single `enqueue` of each kind. Prints ratios to
// the notes measured in the same rounds (interleaved); asserts nothing.
// Usage: node tests/e2e/bench/rules-cost.mjs [N=1000] [ROUNDS=3]
import { packagePage } from "../harness.mjs";
import { generateSecretKey, finalizeEvent } from "nostr-tools/pure";

const N = Number(process.argv[2] || 1000);
const ROUNDS = Number(process.argv[3] || 3);
const now = Math.floor(Date.now() / 1000);
const one = generateSecretKey();
const sides = {
  notes: () => Array.from({ length: N }, (_, i) => finalizeEvent({ kind: 1, created_at: now - i, tags: [], content: `note ${i} ${Math.random()}` }, one)),
  "profiles, N authors": () => Array.from({ length: N }, (_, i) => finalizeEvent({ kind: 0, created_at: now, tags: [], content: `{"name":"${i}"}` }, generateSecretKey())),
  "versions of one profile": () => { const sk = generateSecretKey(); return Array.from({ length: N }, (_, i) => finalizeEvent({ kind: 0, created_at: now - N + i, tags: [], content: `{"name":"v${i}"}` }, sk)); },
};
const { page, close } = await packagePage();
const times = Object.fromEntries(Object.keys(sides).map((k) => [k, { many: [], single: [] }]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, make] of Object.entries(sides)) {
    const events = make();
    const singles = make().slice(0, 100);
    const t = await page.evaluate(async ([events, singles]) => {
      const { Outbox } = window.m;
      const o = await Outbox.open({ name: `rules-cost-${Math.random()}`, autoFlush: false });
      const relays = ["wss://relay.example"];
      let t0 = performance.now();
      await o.enqueueMany(events.map((event) => ({ event, relays })));
      const many = performance.now() - t0;
      t0 = performance.now();
      for (const event of singles) await o.enqueue(event, relays);
      const single = (performance.now() - t0) / singles.length;
      await o.close();
      return { many, single };
    }, [events, singles]);
    times[name].many.push(t.many);
    times[name].single.push(t.single);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = times.notes;
console.log(`rules cost: enqueueMany of ${N} and single enqueues (median of ${ROUNDS} interleaved rounds), ratio = notes' time / this side's time`);
for (const [name, t] of Object.entries(times)) {
  console.log(`  ${name.padEnd(24)} enqueueMany ${median(t.many).toFixed(0).padStart(6)} ms (${(median(base.many) / median(t.many)).toFixed(2)})   enqueue ${median(t.single).toFixed(2)} ms (${(median(base.single) / median(t.single)).toFixed(2)})`);
}
await close();
