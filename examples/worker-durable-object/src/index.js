// A durable outbox for Nostr events on Cloudflare: the Worker takes signed events over
// HTTP and hands them to a Durable Object, which keeps them in its own storage (they survive
// eviction, restarts and redeploys) and delivers them to their relays from its alarm,
// retrying with backoff until every relay has answered for good.
//
//   POST /enqueue   { "event": <signed event>, "relays": ["wss://…"], "options"?: { policy, id, deadline, maxAttempts, notBefore } }
//                   or { "items": [{ event, relays, policy?, id?, deadline?, maxAttempts?, notBefore? }, …] } (all or nothing)
//                   → 202 { id, disposition, stage, notBefore } (or { results: […] })
//                   notBefore (unix ms): a scheduled post, sent by the alarm at its time
//                   with no device online.
//   POST /reschedule { "id", "at" } → { id, stage, nextAttemptAt }   (a scheduled post moved)
//   POST /cancel    { "id" }         → { id, stage }                  (before its time: an undo)
//   GET  /status    → { pending, leased, retryable, satisfied, exhausted, … , total }
//   GET  /records?stage=&limit=&after=   → { records: [OutboxRecord, …] } (with per-relay evidence)
//   GET  /record?id=                      → OutboxRecord, or 404
//   POST /flush     → FlushResult (flushes now; the alarm does this by itself)
// `?outbox=NAME` picks the object (default "default"): one outbox per object.
// Bad input → 400 { error: <OutboxError code>, message, details }.
import { DurableObject } from "cloudflare:workers";
import init, { Outbox, OutboxError } from "nostr-outbox";
import { durableObjectStorage, syncAlarm } from "nostr-outbox/durable-object";
import wasm from "nostr-outbox/edge/nostr_outbox_bg.wasm";

let ready; // the .wasm is instantiated once per isolate, by the first object that needs it

const json = (value, status = 200) =>
  new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });

const STATUS_OF = { not_found: 404, plan_conflict: 409, already_terminal: 409, in_flight: 409 };
function failure(err) {
  if (err instanceof OutboxError) {
    const input = err.code.startsWith("invalid_") || err.code === "event_expired";
    const status = STATUS_OF[err.code] ?? (input ? 400 : 500);
    return json({ error: err.code, message: err.message, details: err.details ?? null }, status);
  }
  return json({ error: "internal", message: String(err && err.message ? err.message : err) }, 500);
}

async function body(request) {
  try {
    return await request.json();
  } catch {
    throw new OutboxErrorLike("invalid_json", "the request body is not JSON");
  }
}
class OutboxErrorLike extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

export class OutboxObject extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    // Nothing else runs in this object until the outbox is open.
    ctx.blockConcurrencyWhile(async () => {
      try {
        await (ready ??= init({ module_or_path: wasm }));
        this.outbox = await Outbox.open({
          ...JSON.parse(env.OUTBOX_OPTIONS || "{}"),
          storage: durableObjectStorage(ctx.storage),
          autoFlush: false, // the alarm flushes
        });
      } catch (err) {
        this.broken = err; // e.g. invalid_options in OUTBOX_OPTIONS: every request says so
      }
    });
  }

  async fetch(request) {
    if (this.broken) {
      // A configuration error (OUTBOX_OPTIONS), not the client's: 500 with the code.
      const err = this.broken;
      return json({ error: err instanceof OutboxError ? err.code : "internal", message: String(err?.message ?? err) }, 500);
    }
    const url = new URL(request.url);
    const route = `${request.method} ${url.pathname}`;
    try {
      switch (route) {
        case "POST /enqueue": {
          const input = await body(request);
          let reply;
          if (Array.isArray(input?.items)) {
            const results = await this.outbox.enqueueMany(input.items);
            reply = { results: results.map(({ id, disposition, record }) => ({ id, disposition, stage: record.stage, notBefore: record.nextAttemptAt })) };
          } else {
            const { id, disposition, record } = await this.outbox.enqueue(input?.event, input?.relays, input?.options);
            reply = { id, disposition, stage: record.stage, notBefore: record.nextAttemptAt };
          }
          // Durable now; deliver as soon as possible (the alarm's flush sets the alarm
          // again for the next record due: a scheduled one's time).
          await syncAlarm(this.ctx.storage, Date.now());
          return json(reply, 202);
        }
        case "POST /reschedule": {
          const input = await body(request);
          const record = await this.outbox.reschedule(input?.id, input?.at);
          await syncAlarm(this.ctx.storage, Date.now()); // the alarm follows the new time
          return json({ id: record.id, stage: record.stage, nextAttemptAt: record.nextAttemptAt });
        }
        case "POST /cancel": {
          const input = await body(request);
          const record = await this.outbox.cancel(input?.id);
          return json({ id: record.id, stage: record.stage });
        }
        case "GET /status":
          return json(await this.outbox.status());
        case "GET /records": {
          const q = url.searchParams;
          const options = {};
          if (q.has("stage")) options.stage = q.get("stage");
          if (q.has("limit")) options.limit = Number(q.get("limit"));
          if (q.has("after")) options.after = q.get("after");
          return json({ records: await this.outbox.list(options) });
        }
        case "GET /record": {
          const record = await this.outbox.get(url.searchParams.get("id") ?? "");
          return record ? json(record) : json({ error: "not_found" }, 404);
        }
        case "GET /export":
          // Every record with its event and evidence, as NDJSON (a backup, or a move).
          return new Response(this.outbox.export(), { headers: { "content-type": "application/x-ndjson" } });
        case "POST /import": {
          // An export (of this object, another one, or a browser's IndexedDB) taken back:
          // idempotent; a bad line is 400 with its number in `details.line`, nothing stored.
          const result = await this.outbox.import(request.body ?? "");
          await syncAlarm(this.ctx.storage, Date.now());
          return json(result);
        }
        case "POST /flush": {
          const result = await this.outbox.flush();
          await syncAlarm(this.ctx.storage, result.nextDueAt);
          return json(result);
        }
        default:
          return json({ error: "not_found", message: `no route ${route}` }, 404);
      }
    } catch (err) {
      if (err instanceof OutboxErrorLike) return json({ error: err.code, message: err.message }, 400);
      return failure(err);
    }
  }

  // Delivers what is due, then sets the alarm for the next record due (a retry's backoff,
  // a lease left by a flush that was cut off). An alarm that throws is retried by the
  // runtime; here a failed flush is tried again in 30 s.
  async alarm() {
    if (this.broken) return;
    let result;
    try {
      result = await this.outbox.flush();
    } catch (err) {
      console.error("nostr-outbox: flush failed", err);
      await syncAlarm(this.ctx.storage, Date.now() + 30_000);
      return;
    }
    await syncAlarm(this.ctx.storage, result.nextDueAt);
  }
}

export default {
  async fetch(request, env) {
    if (env.AUTH_TOKEN && request.headers.get("authorization") !== `Bearer ${env.AUTH_TOKEN}`) {
      return json({ error: "unauthorized" }, 401);
    }
    const name = new URL(request.url).searchParams.get("outbox") || "default";
    return env.OUTBOX.get(env.OUTBOX.idFromName(name)).fetch(request);
  },
};
