// The tiny app every bundler builds: init, an OutboxError, enqueue + flush to a relay,
// outbox.publish. The test calls window.outboxApp.run(event, relay) once the page loaded.
import { Outbox, OutboxError } from "nostr-outbox";

export function start(ready) {
  window.outboxApp = {
    async run(event, relay) {
      window.step = "init";
      await ready;
      window.step = "open";
      const outbox = await Outbox.open({ name: "bundled" });
      const codes = [];
      for (const [e, relays] of [[{ kind: 1 }, [relay]], [event, ["https://not-a-relay.example"]]]) {
        try {
          await outbox.enqueue(e, relays);
        } catch (err) {
          codes.push(err instanceof OutboxError ? err.code : `not an OutboxError: ${err}`);
        }
      }
      window.step = "enqueue";
      const { disposition } = await outbox.enqueue(event, [relay]);
      window.step = "flush";
      const flushed = await outbox.flush();
      const record = await outbox.get(event.id);
      window.step = "publish";
      const replay = await Promise.all(outbox.publish([relay], event));
      window.step = "close";
      await outbox.close();
      window.step = "done";
      return { codes, disposition, delivered: flushed.delivered, stage: record.stage, replay };
    },
  };
}
