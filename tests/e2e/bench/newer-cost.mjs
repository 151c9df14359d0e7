// What the check for a newer version on a relay costs a replaceable event's delivery, in
// one Chromium page on the built package against a local nostr-rs-relay: enqueue →
// `delivered` of a contact list (kind 3, a new author each time, so the relay holds no
// version) with the check (`newerKinds` default) and without it (`newerKinds: []`),
// interleaved one by one. Prints medians and the ratio; asserts nothing.
// Usage: node tests/e2e/bench/newer-cost.mjs [N=40] [ROUNDS=3]
import { packagePage } from "../harness.mjs";
import { generateSecretKey, finalizeEvent } from "nostr-tools/pure";

const N = Number(process.argv[2] || 40);
const ROUNDS = Number(process.argv[3] || 3);
const { page, nrr, close } = await packagePage({ relay: true });
const sides = { "with the check": undefined, "without (newerKinds: [])": [] };
const times = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
const outboxes = await page.evaluate(async ([sides]) => {
  window.o = {};
  for (const [name, newerKinds] of sides) {
    window.o[name] = await window.m.Outbox.open({ name: `newer-cost-${Math.random()}`, storage: "memory", autoFlush: true, ...(newerKinds ? { newerKinds } : {}) });
  }
  return Object.keys(window.o);
}, [Object.entries(sides)]);
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < N; i++) {
    for (const name of outboxes) {
      const now = Math.floor(Date.now() / 1000);
      const event = finalizeEvent({ kind: 3, created_at: now, tags: [["p", "a".repeat(64)]], content: "" }, generateSecretKey());
      const ms = await page.evaluate(async ([name, event, url]) => {
        const o = window.o[name];
        const t0 = performance.now();
        const done = new Promise((ok) => {
          const on = (e) => { if (e.detail.id === event.id) { o.removeEventListener("delivered", on); ok(); } };
          o.addEventListener("delivered", on);
        });
        await o.enqueue(event, [url]);
        await done;
        return performance.now() - t0;
      }, [name, event, nrr.url]);
      times[name].push(ms);
    }
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
const [withCheck, without] = Object.values(times);
console.log(`newer-version check: enqueue → delivered of a kind-3 to one local relay, ${N * ROUNDS} each, interleaved`);
for (const [name, t] of Object.entries(times)) {
  console.log(`  ${name.padEnd(26)} median ${median(t).toFixed(1)} ms, p90 ${p90(t).toFixed(1)} ms`);
}
console.log(`BENCH newer check: enqueue → OK of a kind-3 without ÷ with the check ${(median(without) / median(withCheck)).toFixed(2)} (median ${median(withCheck).toFixed(1)} against ${median(without).toFixed(1)} ms)`);
await page.evaluate(async () => { for (const o of Object.values(window.o)) await o.close(); });
await close();
