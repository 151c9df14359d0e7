import type { Outbox, SignedEvent } from "./nostr_outbox.js";
import type { PublishOptions } from "./publish.js";

/** The publishing half of nostr-tools' `SimplePool` (`AbstractSimplePool.publish`). */
export interface OutboxPublisher {
  publish(relays: string[], event: SignedEvent, params?: PublishOptions): Promise<string>[];
}

/** `{ publish }` through the outbox. */
export function outboxPool(outbox: Outbox): OutboxPublisher;
/** The pool itself, except that `publish` goes through the outbox. */
export function outboxPool<P extends object>(outbox: Outbox, pool: P): Omit<P, "publish"> & OutboxPublisher;
