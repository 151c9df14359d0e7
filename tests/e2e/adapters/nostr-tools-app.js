// A nostr-tools app (README's SimplePool way), publishing through the outbox.
import { SimplePool } from "nostr-tools/pool";
import { finalizeEvent, generateSecretKey } from "nostr-tools/pure";
import { outboxPool } from "nostr-outbox/nostr-tools";
import { openOutbox, SLOW } from "./outbox.js";

const sk = generateSecretKey();
const outbox = await openOutbox("app-nostr-tools");
const pool = outboxPool(outbox, new SimplePool()); // where the app passed its pool

window.app = {
  outbox,
  async post(relays, content) {
    const event = finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content }, sk);
    const settled = await Promise.allSettled(pool.publish(relays, event, { maxWait: SLOW }));
    return {
      event,
      report: settled.map((s) =>
        s.status === "fulfilled"
          ? { ok: true, message: s.value }
          : { ok: false, isError: s.reason instanceof Error, message: s.reason.message, queued: s.reason.queued, outcome: s.reason.outcome, detail: s.reason.detail },
      ),
    };
  },
};
