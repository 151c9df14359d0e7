// An applesauce app: actions run by an ActionRunner whose publish method is the outbox;
// the relay pool's publish(relays, event) → PublishResponse[] for direct publishes.
import { EventStore } from "applesauce-core";
import { ActionRunner } from "applesauce-actions";
import { finalizeEvent, generateSecretKey, getPublicKey } from "nostr-tools/pure";
import { outboxPublishMethod, outboxRelayPool } from "nostr-outbox/applesauce";
import { openOutbox, SLOW } from "./outbox.js";

const sk = generateSecretKey();
const signer = { getPublicKey: async () => getPublicKey(sk), signEvent: async (draft) => finalizeEvent(draft, sk) };
const outbox = await openOutbox("app-applesauce");
const eventStore = new EventStore();
const actions = new ActionRunner(eventStore, signer, outboxPublishMethod(outbox, { maxWait: SLOW }));
const pool = outboxRelayPool(outbox, { maxWait: SLOW });

// An action as applesauce-actions writes them: build, sign, publish.
const PostNote = (content, relays) => async ({ sign, publish }) => {
  const event = await sign({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content });
  window.lastEvent = event;
  await publish(event, relays);
};

window.app = {
  outbox,
  /** Runs the action; `error` is what `actions.run` threw, if it did. */
  async post(relays, content) {
    let error = null;
    try {
      await actions.run(PostNote, content, relays);
    } catch (e) {
      error = {
        isAggregateError: e instanceof AggregateError,
        message: e.message,
        queued: e.queued,
        id: e.id,
        responses: e.responses,
        errors: (e.errors ?? []).map((x) => ({ name: x.name, message: x.message, queued: x.queued, outcome: x.outcome })),
      };
    }
    return { event: window.lastEvent, inStore: eventStore.hasEvent(window.lastEvent.id), error };
  },
  async poolPublish(relays, content) {
    const event = await signer.signEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content });
    return { event, responses: await pool.publish(relays, event) };
  },
};
