// A Worker for tests/edge/bench.mjs (bundled like the example): a Durable Object whose
// outbox is on its own storage (durableObjectStorage, SQLite-backed) or in memory, per
// object name. The driver times each request from Node (inside workerd, Date.now() stands
// still while code runs).
import { DurableObject } from "cloudflare:workers";
import init, { Outbox } from "nostr-outbox";
import { durableObjectStorage } from "nostr-outbox/durable-object";
import wasm from "nostr-outbox/edge/nostr_outbox_bg.wasm";

let ready;

export class BenchObject extends DurableObject {
  async fetch(request) {
    const url = new URL(request.url);
    const input = request.method === "POST" ? await request.json() : {};
    switch (url.pathname) {
      case "/open":
        await (ready ??= init({ module_or_path: wasm }));
        this.outbox = await Outbox.open({
          storage: input.storage === "memory" ? "memory" : durableObjectStorage(this.ctx.storage),
          autoFlush: false,
          ...input.options,
        });
        return Response.json({ ok: true });
      case "/enqueue":
        await this.outbox.enqueueMany(input.items);
        return Response.json({ ok: true });
      case "/flush": {
        // Until nothing waits (as the agent's flushAll).
        for (let i = 0; i < 1000; i++) {
          const s = await this.outbox.status();
          if (s.pending + s.leased + s.retryable + (s.delivering ?? 0) === 0) return Response.json(s);
          const r = await this.outbox.flush();
          if (r.claimed === 0) await new Promise((f) => setTimeout(f, 20));
        }
        return Response.json(await this.outbox.status());
      }
      default:
        return new Response("not found", { status: 404 });
    }
  }
}

export default {
  fetch(request, env) {
    const name = new URL(request.url).searchParams.get("name") ?? "bench";
    return env.BENCH.get(env.BENCH.idFromName(name)).fetch(request);
  },
};
