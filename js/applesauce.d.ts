import type { Outbox, SignedEvent } from "./nostr_outbox.js";

/** applesauce-relay's `PublishResponse`. */
export interface PublishResponse {
  ok: boolean;
  message?: string;
  from: string;
}

/** Options of both publishers. */
export interface ApplesauceOutboxOptions {
  /** How long to wait for each relay's answer before reporting it (`ok: false`); the event stays queued. Default 10 000 ms. */
  maxWait?: number;
}

/** An applesauce-actions `PublishMethod`: `new ActionRunner(events, signer, outboxPublishMethod(outbox, { relays }))`. */
export function outboxPublishMethod(
  outbox: Outbox,
  options?: ApplesauceOutboxOptions & { relays?: string[] | ((event: SignedEvent) => string[]) },
): (event: SignedEvent, relays?: string[]) => Promise<PublishResponse[]>;

/** The publishing half of applesauce-relay's `RelayPool`; `opts.timeout` (ms) is the wait. */
export function outboxRelayPool(
  outbox: Outbox,
  options?: ApplesauceOutboxOptions,
): { publish(relays: string[], event: SignedEvent, opts?: { timeout?: number | boolean }): Promise<PublishResponse[]> };
