// An applesauce app: actions run by an ActionRunner whose publish method is the outbox;
// the relay pool's publish(relays, event) → PublishResponse[] for direct publishes.
import { EventStore } from "applesauce-core";
import { ActionRunner } from "applesauce-actions";
import { finalizeEvent, generateSecretKey, getPublicKey } from "nostr-tools/pure";
import { outboxPublishMethod, outboxRelayPool } from "nostr-outbox/applesauce";
import { openOutbox } from "./outbox.js";

const sk = generateSecretKey();
const signer = { getPublicKey: async () => getPublicKey(sk), signEvent: async (draft) => finalizeEvent(draft, sk) };
const outbox = await openOutbox("app-applesauce");
const eventStore = new EventStore();
const actions = new ActionRunner(eventStore, signer, outboxPublishMethod(outbox, { maxWait: 1500 }));
const pool = outboxRelayPool(outbox, { maxWait: 1500 });

// An action as applesauce-actions writes them: build, sign, publish.
const PostNote = (content, relays) => async ({ sign, publish }) => {
  const event = await sign({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content });
  window.lastEvent = event;
  await publish(event, relays);
};

window.app = {
  outbox,
  async post(relays, content) {
    await actions.run(PostNote, content, relays);
    return { event: window.lastEvent, inStore: eventStore.hasEvent(window.lastEvent.id) };
  },
  async poolPublish(relays, content) {
    const event = await signer.signEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content });
    return { event, responses: await pool.publish(relays, event) };
  },
};
