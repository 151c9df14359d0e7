import type { Outcome, Policy, SignedEvent, Stage, StopReason } from "./nostr_outbox.js";

/** Options of `outbox.publish` (nostr-tools' `SimplePool.publish` params, plus enqueue's). */
export interface PublishOptions {
  /**
   * How long each relay's promise waits for an answer from that relay, in ms (default 10 000);
   * the event stays queued after it. A relay known to be unreachable (connection refused, its
   * circuit open) rejects at once instead (`queued: true`).
   */
  maxWait?: number;
  /**
   * Accepted for nostr-tools' signature. NIP-42 challenges are answered by the outbox's
   * `signer` option (`Outbox.open({ signer })`), whichever context runs the flusher.
   */
  onauth?: (template: { kind: number; created_at: number; tags: string[][]; content: string }) => Promise<SignedEvent>;
  /** Accepted for nostr-tools' signature and ignored: the outbox owns connections (`outbox.cancel(id)` stops a delivery). */
  abort?: AbortSignal;
  /** The record's policy (default: the outbox's): what counts as delivered; every relay still gets the event when it can. */
  policy?: Policy;
  /** Item id (default the event id). */
  id?: string;
  /** Unix ms after which the record stops as `expired`. */
  deadline?: number;
  /** Attempt budget (1..=1000). */
  maxAttempts?: number;
}

/**
 * A relay's promise from `outbox.publish` rejected. The message reads as nostr-tools' does:
 * the relay's own (`blocked: …`, `invalid: …`), `publish timed out`, `connection failure:
 * connection failed` (or `… connection timed out`), `relay connection closed`, `duplicate url`,
 * or `not sent: <reason>` for a record that stopped before trying this relay. The outbox's
 * details are in the properties.
 */
export class PublishError extends Error {
  readonly name: "PublishError";
  /** The relay as given to `publish`. */
  readonly relay: string;
  /** The outbox record's id (`null` for `duplicate url`). */
  readonly id: string | null;
  /**
   * `true`: the outbox still delivers the event to this relay (it is unreachable now, or
   * `maxWait` passed); `false`: it will not be sent to this relay (refused for good, or the
   * record stopped).
   */
  readonly queued: boolean;
  /** The relay's latest outcome in the record's evidence, `null` before any. */
  readonly outcome: Outcome | null;
  /** The relay's or the transport's full message behind `message` (the latest evidence's), `null` before any. */
  readonly detail: string | null;
  /** The record's stage when the promise settled (`null` for `duplicate url`). */
  readonly stage: Stage | null;
  /** Why the record stopped, when it did (`null` while it is delivered). */
  readonly reason: StopReason | null;
}

/** `outbox.publish(relays, event, options)` as a function of the outbox. */
export function publishThrough(
  outbox: import("./nostr_outbox.js").Outbox,
  relays: string[],
  event: SignedEvent | string,
  options?: PublishOptions,
): Promise<string>[];

declare module "./nostr_outbox.js" {
  interface Outbox {
    /**
     * nostr-tools' `SimplePool.publish` contract, durable: enqueues the event (idempotent by
     * id), then returns one promise per relay that resolves with the relay's `OK` message
     * once it accepted (`duplicate:` included) and rejects with a `PublishError` when it
     * refused for good or the record stopped (`err.queued` false), or when it is unreachable
     * or `maxWait` passed (`err.queued` true: the outbox delivers it when it can).
     */
    publish(relays: string[], event: SignedEvent | string, options?: PublishOptions): Promise<string>[];
  }
}
