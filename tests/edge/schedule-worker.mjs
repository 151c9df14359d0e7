// examples/worker-durable-object as deployed, with one thing added for
// tests/edge/schedule-workerd.mjs: the object counts its alarm runs (in its storage, beside
// the outbox's keys) and answers GET /alarm-runs. Everything else is the example's code.
import worker, { OutboxObject as Example } from "../../examples/worker-durable-object/src/index.js";

export class OutboxObject extends Example {
  async alarm() {
    const runs = (await this.ctx.storage.get("test/alarm-runs")) ?? [];
    runs.push(Date.now());
    await this.ctx.storage.put("test/alarm-runs", runs);
    return super.alarm();
  }

  async fetch(request) {
    if (new URL(request.url).pathname === "/alarm-runs") {
      return Response.json((await this.ctx.storage.get("test/alarm-runs")) ?? []);
    }
    return super.fetch(request);
  }
}

export default worker;
