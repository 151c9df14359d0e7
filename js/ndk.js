// nostr-outbox/ndk: `NDKEvent.publish()` through the outbox. NDK 3 has no transport seam
// for publishing (its cache adapter's `addUnpublishedEvent` only records; NDK itself never
// re-sends), so this wraps the publish:
// - `outboxPublish(outbox)(event, relaySet?, timeoutMs?, requiredRelayCount?)` does what
//   `event.publish(...)` does (signs an unsigned event once, picks NDK's relays when no set
//   is given, echoes the event to local subscriptions) and then enqueues it; it resolves
//   with the `Set<NDKRelay>` that accepted within `timeoutMs` (default 10 000 ms) and throws
//   NDK's `NDKPublishError` (`errors: Map<NDKRelay, Error>`, `publishedToRelays`,
//   `intendedRelaySet`; `ndk` emits "event:publish-failed") when fewer than
//   `requiredRelayCount` (default 1) did. A relay that is down counts as failed at once
//   (its error: `connection failure: …`, `queued: true`), not after `timeoutMs`.
//   `requiredRelayCount` is the record's policy (`{ atLeast: n }`): it decides the success
//   reported, not where the event goes: every relay in the set gets it when it can.
// - `installOutbox(outbox)` makes `NDKEvent.prototype.publish` do that (returns the undo).
// Imports from @nostr-dev-kit/ndk only what the app already has (NDK itself).
import { NDKEvent, NDKPublishError, calculateRelaySetFromEvent } from "@nostr-dev-kit/ndk";
import { normalizeRelayUrl } from "./nostr_outbox.js";
import { publishThrough } from "./publish.js";

// The URL as the outbox keys it; an invalid one as given (enqueue refuses it with its error).
const relayKey = (url) => {
  try {
    return normalizeRelayUrl(url);
  } catch {
    return url;
  }
};

export function outboxPublish(outbox) {
  return async function publish(event, relaySet, timeoutMs, requiredRelayCount) {
    requiredRelayCount ||= 1;
    const ndk = event.ndk;
    if (!ndk) throw new Error("NDKEvent must be associated with an NDK instance to publish");
    if (!event.sig) await event.sign();
    if (!relaySet || relaySet.size === 0) {
      relaySet = ndk.devWriteRelaySet || (await calculateRelaySetFromEvent(ndk, event, requiredRelayCount));
    }
    const relays = Array.from(relaySet.relays);
    const urls = relays.map((r) => r.url);
    const rawEvent = event.rawEvent();
    ndk.subManager?.dispatchEvent(rawEvent, undefined, true);
    event.publishStatus = "pending";
    const answers = await Promise.allSettled(
      publishThrough(outbox, urls, rawEvent, {
        maxWait: timeoutMs || 10_000,
        policy: { atLeast: Math.min(requiredRelayCount, new Set(urls.map(relayKey)).size) },
      }),
    );
    const published = new Set();
    const errors = new Map();
    answers.forEach((a, i) => {
      if (a.status === "fulfilled") {
        published.add(relays[i]);
        ndk.subManager?.seenEvent?.(event.id, relays[i]);
      } else errors.set(relays[i], a.reason);
    });
    if (published.size < requiredRelayCount) {
      const error = new NDKPublishError(
        `Not enough relays received the event (${published.size} published, ${requiredRelayCount} required)`,
        errors,
        published,
        relaySet,
      );
      event.publishStatus = "error";
      event.publishError = error;
      ndk.emit?.("event:publish-failed", event, error, relaySet.relayUrls);
      throw error;
    }
    event.publishStatus = "success";
    event.emit?.("published", { relaySet, publishedToRelays: published });
    return published;
  };
}

export function installOutbox(outbox) {
  const original = NDKEvent.prototype.publish;
  const publish = outboxPublish(outbox);
  NDKEvent.prototype.publish = function (relaySet, timeoutMs, requiredRelayCount) {
    return publish(this, relaySet, timeoutMs, requiredRelayCount);
  };
  return () => {
    NDKEvent.prototype.publish = original;
  };
}

// Routing intents: this library's relay lists as the outbox's `resolver` (js/routers.js).
export { ndkResolver } from "./routers.js";
