// An NDK 3 app: NDKEvent.publish() as NDK's docs show it, made to go through the outbox.
import NDK, { NDKEvent, NDKPrivateKeySigner, NDKPublishError, NDKRelaySet } from "@nostr-dev-kit/ndk";
import { installOutbox } from "nostr-outbox/ndk";
import { openOutbox, SLOW } from "./outbox.js";

const outbox = await openOutbox("app-ndk");
installOutbox(outbox);
const ndk = new NDK({ signer: NDKPrivateKeySigner.generate() });
const failures = [];
ndk.on("event:publish-failed", (event, error) => failures.push(event.id));

window.app = {
  outbox,
  async post(relays, content, requiredRelayCount) {
    const event = new NDKEvent(ndk, { kind: 1, content });
    try {
      const published = await event.publish(NDKRelaySet.fromRelayUrls(relays, ndk, false), SLOW, requiredRelayCount);
      return { event: event.rawEvent(), published: [...published].map((r) => r.url), status: event.publishStatus };
    } catch (e) {
      return {
        event: event.rawEvent(),
        isNDKPublishError: e instanceof NDKPublishError,
        message: e.message,
        errors: [...e.errors].map(([relay, err]) => [relay.url, err.message, err.queued ?? null]),
        publishedToRelays: [...e.publishedToRelays].map((r) => r.url),
        status: event.publishStatus,
        failedEvent: failures.includes(event.id),
      };
    }
  },
};
