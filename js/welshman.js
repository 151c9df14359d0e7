// nostr-outbox/welshman: `publish(options)` with the shape and per-relay statuses of
// @welshman/net's `publish` ("pending", then "success" | "failure" | "timeout" |
// "aborted"; `detail` is the relay's message), through the outbox. A "timeout" means the
// relay has not accepted and the event is still queued: it did not answer within `timeout`,
// or it is down (reported at once, detail `connection failure: …`, as welshman would after
// its whole timeout); the outbox keeps delivering the same signed event to it (never
// re-signed). "failure" means it will not get it (refused for good). Aborting stops waiting, not the
// delivery (cancel it with `outbox.cancel(event.id)`). Imports nothing from welshman.
import { publishThrough } from "./publish.js";

export function outboxPublish(outbox) {
  return async (options) => {
    const { event, relays, timeout = 10_000, signal } = options;
    const promises = publishThrough(outbox, relays, event, { maxWait: timeout });
    const completed = new Set();
    const results = await Promise.all(
      relays.map(async (relay, i) => {
        const result = { relay, status: "pending", detail: "" };
        options.onPending?.(result);
        const aborted = new Promise((ok) => {
          if (signal?.aborted) ok("aborted");
          signal?.addEventListener("abort", () => ok("aborted"), { once: true });
        });
        const answer = await Promise.race([
          promises[i].then((detail) => ({ detail }), (error) => ({ error })),
          aborted,
        ]);
        if (answer === "aborted") {
          result.status = "aborted";
          result.detail = "aborted";
          options.onAborted?.(result);
        } else if (answer.error === undefined) {
          result.status = "success";
          result.detail = answer.detail;
          options.onSuccess?.(result);
        } else if (answer.error?.queued) {
          result.status = "timeout";
          result.detail = answer.error.message;
          options.onTimeout?.(result);
        } else {
          result.status = "failure";
          result.detail = answer.error?.message ?? String(answer.error);
          options.onFailure?.(result);
        }
        completed.add(relay);
        if (completed.size === new Set(relays).size) options.onComplete?.(result);
        return [relay, result];
      }),
    );
    return Object.fromEntries(results);
  };
}

// Routing intents: this library's relay lists as the outbox's `resolver` (js/routers.js).
export { welshmanResolver } from "./routers.js";
