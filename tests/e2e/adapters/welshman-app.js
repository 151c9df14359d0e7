// A welshman app: @welshman/net's publish({ event, relays, timeout, on… }), through the outbox.
import { PublishStatus } from "@welshman/net";
import { finalizeEvent, generateSecretKey } from "nostr-tools/pure";
import { outboxPublish } from "nostr-outbox/welshman";
import { openOutbox, SLOW } from "./outbox.js";

const sk = generateSecretKey();
const outbox = await openOutbox("app-welshman");
const publish = outboxPublish(outbox);

window.app = {
  outbox,
  async post(relays, content) {
    const event = finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content }, sk);
    const seen = [];
    const results = await publish({
      event,
      relays,
      timeout: SLOW,
      onPending: (r) => seen.push(`${r.status}`),
      onSuccess: (r) => seen.push(`${r.status}`),
      onFailure: (r) => seen.push(`${r.status}`),
      onTimeout: (r) => seen.push(`${r.status}`),
      onComplete: () => seen.push("complete"),
    });
    return { event, results, seen, statuses: { success: PublishStatus.Success, failure: PublishStatus.Failure, timeout: PublishStatus.Timeout } };
  },
};
