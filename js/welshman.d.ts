import type { Outbox, SignedEvent } from "./nostr_outbox.js";

/** @welshman/net's `PublishStatus` values. */
export type PublishStatus = "sending" | "pending" | "success" | "failure" | "timeout" | "aborted";

/** @welshman/net's `PublishResult`. */
export interface PublishResult {
  status: PublishStatus;
  detail: string;
  relay: string;
}

/** @welshman/net's `PublishOptions` (its `context` is not used: the outbox owns the sockets). */
export interface PublishOptions {
  event: SignedEvent;
  relays: string[];
  signal?: AbortSignal;
  /** Ignored: the outbox owns the sockets. */
  context?: unknown;
  /**
   * ms to wait for each relay's answer (default 10 000); after it the status is "timeout" and
   * the event stays queued. A relay that is down is "timeout" at once (still queued).
   */
  timeout?: number;
  onSuccess?: (result: PublishResult) => void;
  onFailure?: (result: PublishResult) => void;
  onPending?: (result: PublishResult) => void;
  onTimeout?: (result: PublishResult) => void;
  onAborted?: (result: PublishResult) => void;
  onComplete?: (result: PublishResult) => void;
}

/** A drop-in for @welshman/net's `publish(options)` that delivers through the outbox. */
export function outboxPublish(outbox: Outbox): (options: PublishOptions) => Promise<Record<string, PublishResult>>;

/** Routing intents: this library's relay lists as the outbox's `resolver` (see routers.d.ts). */
export { welshmanResolver } from "./routers.js";
