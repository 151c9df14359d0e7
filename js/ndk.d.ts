import type { Outbox } from "./nostr_outbox.js";

// Structural stand-ins for NDK's classes (NDK 3's own .d.mts does not type-check with
// `skipLibCheck: false`): an `NDKEvent`, `NDKRelay` or `NDKRelaySet` is assignable to them.

/** The parts of an `NDKRelay` the adapter uses. */
export interface NDKRelayLike {
  readonly url: string;
}
/** The parts of an `NDKRelaySet` the adapter uses. */
export interface NDKRelaySetLike<R extends NDKRelayLike = NDKRelayLike> {
  readonly relays: Set<R>;
  readonly size: number;
  readonly relayUrls: string[];
}
/** The parts of an `NDKEvent` the adapter uses. */
export interface NDKEventLike {
  ndk?: unknown;
  sig?: string;
  id: string;
  sign(...args: never[]): Promise<unknown>;
  rawEvent(): object;
}

/**
 * `event.publish(relaySet?, timeoutMs?, requiredRelayCount?)` through the outbox: resolves
 * with the relays that accepted within `timeoutMs`, throws NDK's `NDKPublishError` when fewer
 * than `requiredRelayCount` did (its `errors` are `PublishError`s; a relay that is down fails
 * at once with `queued: true`). Every relay of the set gets the event when it can.
 */
export function outboxPublish(
  outbox: Outbox,
): <R extends NDKRelayLike = NDKRelayLike>(
  event: NDKEventLike,
  relaySet?: NDKRelaySetLike<R>,
  timeoutMs?: number,
  requiredRelayCount?: number,
) => Promise<Set<R>>;

/** Makes `NDKEvent.prototype.publish` go through the outbox; returns a function that undoes it. */
export function installOutbox(outbox: Outbox): () => void;

/** Routing intents: this library's relay lists as the outbox's `resolver` (see routers.d.ts). */
export { ndkResolver } from "./routers.js";
