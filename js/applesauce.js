// nostr-outbox/applesauce: publishing for applesauce through the outbox. Imports nothing
// from applesauce.
// - `outboxPublishMethod(outbox, { relays })`: a `PublishMethod` for `new ActionRunner(events,
//   signer, publishMethod)`, called as `(event, relays?)`; without relays it uses `relays`
//   (an array, or a function of the event). It resolves with the `PublishResponse[]` once
//   every relay answered (a relay that is down answers at once: `ok: false`, still queued)
//   when at least one relay accepted, and rejects otherwise, so that `await actions.run(…)`
//   throws for a note no relay took: an `AggregateError` of the relays' `PublishError`s, as
//   `Promise.any(pool.publish(…))` rejects in nostr-tools, with `responses`, `id` and `queued`
//   (true when the outbox still delivers it to a relay that is down now); a refused input
//   rejects with enqueue's `OutboxError`. applesauce's
//   `ActionRunner` awaits the method's promise but ignores its value, so a method that
//   resolved for a refused note would let the action succeed silently.
// - `outboxRelayPool(outbox)`: the relay pool's `publish(relays, event, opts?)` →
//   `Promise<PublishResponse[]>`, `{ ok, message, from }` per relay, as applesauce-relay
//   resolves it (a refusal is `ok: false` with the relay's message, never a throw).
import { PublishError, publishThrough } from "./publish.js";

async function settled(outbox, relays, event, maxWait) {
  const answers = await Promise.allSettled(publishThrough(outbox, relays, event, { maxWait }));
  const responses = answers.map((a, i) =>
    a.status === "fulfilled"
      ? { ok: true, message: a.value, from: relays[i] }
      : { ok: false, message: a.reason?.message ?? String(a.reason), from: relays[i] },
  );
  return { answers, responses };
}

export function outboxRelayPool(outbox, { maxWait } = {}) {
  return {
    publish: async (relays, event, opts) =>
      (await settled(outbox, relays, event, typeof opts?.timeout === "number" ? opts.timeout : maxWait)).responses,
  };
}

export function outboxPublishMethod(outbox, { relays: fallback, maxWait } = {}) {
  return async (event, relays) => {
    const list = relays?.length ? relays : typeof fallback === "function" ? fallback(event) : fallback;
    if (!list?.length) throw new Error("nostr-outbox/applesauce: no relays to publish to");
    const { answers, responses } = await settled(outbox, list, event, maxWait);
    if (responses.some((r) => r.ok)) return responses;
    const errors = answers.map((a) => a.reason);
    // The input was refused (enqueue's `OutboxError`, the same for every relay): that error.
    if (!(errors[0] instanceof PublishError) && errors.every((e) => e === errors[0])) throw errors[0];
    const error = new AggregateError(
      errors,
      `no relay accepted the event: ${responses.map((r) => `${r.from}: ${r.message}`).join("; ")}`,
    );
    error.responses = responses;
    error.id = errors.find((e) => typeof e?.id === "string")?.id ?? null;
    error.queued = errors.some((e) => e?.queued === true);
    throw error;
  };
}

// Routing intents: this library's relay lists as the outbox's `resolver` (js/routers.js).
export { applesauceResolver } from "./routers.js";
