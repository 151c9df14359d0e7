// What the NIP-11 check before each send costs a flush, in one Chromium page on the built
// package against a local nostr-rs-relay: `flush()` of N kind-1 events to that relay with
// the check (`relayInfoTtlMs` default: the document is fetched once, then each send is
// checked against it) and without it (`relayInfoTtlMs: 0`), the two sides alternating
// round by round in the same page. Prints medians and the ratio; asserts nothing.
// Usage: node tests/e2e/bench/nip11-cost.mjs [N=1000] [ROUNDS=5]
import { packagePage } from "../harness.mjs";
import { signedEvents } from "../events.mjs";

const N = Number(process.argv[2] || 1000);
const ROUNDS = Number(process.argv[3] || 5);
const { page, nrr, close } = await packagePage({ relay: true });
const sides = { "with the check": {}, "without (relayInfoTtlMs: 0)": { relayInfoTtlMs: 0 } };
const times = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 ? Object.entries(sides).reverse() : Object.entries(sides);
  for (const [name, options] of order) {
    const events = signedEvents(N, { content: (i) => `nip11 cost ${round} ${name} ${i}` });
    const ms = await page.evaluate(async ([options, events, url]) => {
      const o = await window.m.Outbox.open({ name: `nip11-cost-${Math.random()}`, storage: "memory", autoFlush: false, ...options });
      await o.enqueueMany(events.map((event) => ({ event, relays: [url] })));
      const t0 = performance.now();
      const run = await o.flush();
      const ms = performance.now() - t0;
      await o.close();
      if (run.delivered !== events.length) throw new Error(`delivered ${run.delivered} of ${events.length}`);
      return ms;
    }, [options, events, nrr.url]);
    times[name].push(ms);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const [withCheck, without] = Object.values(times);
console.log(`NIP-11 check: flush() of ${N} kind-1 events to one local relay, ${ROUNDS} rounds each, alternating`);
for (const [name, t] of Object.entries(times)) {
  console.log(`  ${name.padEnd(28)} median ${median(t).toFixed(0)} ms   runs [${t.map((x) => x.toFixed(0)).join(", ")}]`);
}
console.log(`BENCH NIP-11 check: flush of ${N} without ÷ with the check ${(median(without) / median(withCheck)).toFixed(2)} (median ${median(withCheck).toFixed(0)} against ${median(without).toFixed(0)} ms)`);
await close();
