// nostr-outbox/applesauce: publishing for applesauce through the outbox. Imports nothing
// from applesauce.
// - `outboxPublishMethod(outbox, { relays })`: a `PublishMethod` for `new ActionRunner(events,
//   signer, publishMethod)`, called as `(event, relays?)`; without relays it uses `relays`
//   (an array, or a function of the event).
// - `outboxRelayPool(outbox)`: the relay pool's `publish(relays, event, opts?)` →
//   `Promise<PublishResponse[]>`, `{ ok, message, from }` per relay, as applesauce-relay
//   resolves it (a refusal is `ok: false` with the relay's message, never a throw).
import { publishThrough } from "./publish.js";

async function responses(outbox, relays, event, maxWait) {
  const answers = await Promise.allSettled(publishThrough(outbox, relays, event, { maxWait }));
  return answers.map((a, i) =>
    a.status === "fulfilled"
      ? { ok: true, message: a.value, from: relays[i] }
      : { ok: false, message: a.reason?.message ?? String(a.reason), from: relays[i] },
  );
}

export function outboxRelayPool(outbox, { maxWait } = {}) {
  return {
    publish: (relays, event, opts) =>
      responses(outbox, relays, event, typeof opts?.timeout === "number" ? opts.timeout : maxWait),
  };
}

export function outboxPublishMethod(outbox, { relays: fallback, maxWait } = {}) {
  return (event, relays) => {
    const list = relays?.length ? relays : typeof fallback === "function" ? fallback(event) : fallback;
    if (!list?.length) return Promise.reject(new Error("nostr-outbox/applesauce: no relays to publish to"));
    return responses(outbox, list, event, maxWait);
  };
}
