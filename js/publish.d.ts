import type { Outcome, Policy, SignedEvent } from "./nostr_outbox.js";

/** Options of `outbox.publish` (nostr-tools' `SimplePool.publish` params, plus enqueue's). */
export interface PublishOptions {
  /** How long each relay's promise waits for that relay's answer, in ms (default 10 000). The event stays queued after it. */
  maxWait?: number;
  /**
   * Accepted for nostr-tools' signature. NIP-42 challenges are answered by the outbox's
   * `signer` option (`Outbox.open({ signer })`), whichever context runs the flusher.
   */
  onauth?: (template: { kind: number; created_at: number; tags: string[][]; content: string }) => Promise<SignedEvent>;
  /** Accepted for nostr-tools' signature and ignored: the outbox owns connections (`outbox.cancel(id)` stops a delivery). */
  abort?: AbortSignal;
  /** The record's policy (default: the outbox's). With `"all"`, a relay refusing for good ends delivery to the others. */
  policy?: Policy;
  /** Item id (default the event id). */
  id?: string;
  /** Unix ms after which the record stops as `expired`. */
  deadline?: number;
  /** Attempt budget (1..=1000). */
  maxAttempts?: number;
}

/**
 * A relay's promise from `outbox.publish` rejected. The message starts as nostr-tools' does:
 * the relay's own (`blocked: …`, `invalid: …`), `publish timed out`, `connection failure: …`,
 * or `duplicate url`.
 */
export class PublishError extends Error {
  readonly name: "PublishError";
  /** The relay as given to `publish`. */
  readonly relay: string;
  /** The outbox record's id (`null` for `duplicate url`). */
  readonly id: string | null;
  /** `true`: `maxWait` passed and the outbox still delivers the event; `false`: it will not be sent to this relay. */
  readonly queued: boolean;
  /** The relay's latest outcome in the record's evidence, `null` before any. */
  readonly outcome: Outcome | null;
}

/** The relay URL as the outbox stores it in `targets[].relay`. */
export function normalizeRelayUrl(url: string): string;

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
     * refused for good, the record stopped, or `maxWait` passed (then `err.queued`).
     */
    publish(relays: string[], event: SignedEvent | string, options?: PublishOptions): Promise<string>[];
  }
}
