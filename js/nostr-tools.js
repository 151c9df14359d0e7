// nostr-outbox/nostr-tools: a `SimplePool`-shaped publisher, to pass where an app passes its
// pool for publishing. `publish(relays, event, { maxWait, onauth })` returns one promise per
// relay (see publish.js); with a pool given, every other member is the pool's own
// (subscriptions, queries), so the object can stand in for the pool. Imports nothing from
// nostr-tools.
import { publishThrough } from "./publish.js";

export function outboxPool(outbox, pool) {
  const publish = (relays, event, params) => publishThrough(outbox, relays, event, params);
  if (!pool) return { publish };
  return new Proxy(pool, {
    get(target, key) {
      if (key === "publish") return publish;
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
