// The tiny app every bundler builds: init, an OutboxError, enqueue + flush to a relay,
// outbox.publish. The test calls window.outboxApp.run(event, relay) once the page loaded.
import { Outbox, OutboxError } from "nostr-outbox";

export function start(ready) {
  window.outboxApp = {
    async run(event, relay) {
      await ready;
      const outbox = await Outbox.open({ name: "bundled" });
      const codes = [];
      for (const [e, relays] of [[{ kind: 1 }, [relay]], [event, ["https://not-a-relay.example"]]]) {
        try {
          await outbox.enqueue(e, relays);
        } catch (err) {
          codes.push(err instanceof OutboxError ? err.code : `not an OutboxError: ${err}`);
        }
      }
      const { disposition } = await outbox.enqueue(event, [relay]);
      const flushed = await outbox.flush();
      const record = await outbox.get(event.id);
      const replay = await Promise.all(outbox.publish([relay], event));
      await outbox.close();
      return { codes, disposition, delivered: flushed.delivered, stage: record.stage, replay };
    },
  };
}
