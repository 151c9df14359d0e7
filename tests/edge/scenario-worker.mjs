// A stateless Worker for tests/edge/scenario-workerd.mjs (bundled like the example): one
// outbox at module scope (memory store), used by every request. Each POST enqueues the
// event it is given and flushes. The second request must deliver too: a socket opened in
// one request's flush used in another's fails in workerd ("Cannot perform I/O on behalf of
// a different request") and used to hang there.
import init, { Outbox } from "nostr-outbox";
import wasm from "nostr-outbox/edge/nostr_outbox_bg.wasm";

let opened;

export default {
  async fetch(request) {
    const { event, relay } = await request.json();
    const outbox = await (opened ??= init({ module_or_path: wasm }).then(() =>
      Outbox.open({ storage: "memory", autoFlush: false, connectTimeoutMs: 2000, publishTimeoutMs: 3000 }),
    ));
    await outbox.enqueue(event, [relay]);
    const result = await outbox.flush();
    const record = await outbox.get(event.id);
    return Response.json({ delivered: result.delivered, stage: record.stage, evidence: record.evidence, status: await outbox.status() });
  },
};
