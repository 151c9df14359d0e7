import type { Outbox, SignedEvent } from "./nostr_outbox.js";

/** applesauce-relay's `PublishResponse`. */
export interface PublishResponse {
  ok: boolean;
  message?: string;
  from: string;
}

/** Options of both publishers. */
export interface ApplesauceOutboxOptions {
  /**
   * How long to wait for each relay's answer before reporting it (`ok: false`); the event stays
   * queued. A relay that is down is reported at once. Default 10 000 ms.
   */
  maxWait?: number;
}

/**
 * The rejection of `outboxPublishMethod`'s method when no relay accepted the event: an
 * `AggregateError` of the relays' `PublishError`s (in the order of the relays), as
 * `Promise.any(pool.publish(…))` rejects in nostr-tools.
 */
export interface OutboxPublishMethodError extends AggregateError {
  /** Every relay's answer, as the pool's `publish` would have resolved them. */
  responses: PublishResponse[];
  /** The outbox record's id. */
  id: string | null;
  /** True when the outbox still delivers the event to a relay that is down or silent now. */
  queued: boolean;
}

/**
 * An applesauce-actions `PublishMethod`: `new ActionRunner(events, signer, outboxPublishMethod(outbox, { relays }))`.
 * Resolves with every relay's response when at least one relay accepted; otherwise rejects
 * with an {@link OutboxPublishMethodError} (or enqueue's `OutboxError` for a refused input), so
 * `await actions.run(…)` throws.
 */
export function outboxPublishMethod(
  outbox: Outbox,
  options?: ApplesauceOutboxOptions & { relays?: string[] | ((event: SignedEvent) => string[]) },
): (event: SignedEvent, relays?: string[]) => Promise<PublishResponse[]>;

/** The publishing half of applesauce-relay's `RelayPool`; `opts.timeout` (ms) is the wait. */
export function outboxRelayPool(
  outbox: Outbox,
  options?: ApplesauceOutboxOptions,
): { publish(relays: string[], event: SignedEvent, opts?: { timeout?: number | boolean }): Promise<PublishResponse[]> };

/** Routing intents: this library's relay lists as the outbox's `resolver` (see routers.d.ts). */
export { applesauceResolver } from "./routers.js";
