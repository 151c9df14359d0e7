// A module Worker for tests/edge/workerd.mjs (miniflare): a Durable Object class whose
// fetch runs the contract suite against durableObjectStorage(this.ctx.storage), writes and
// reads keys across a restart, and checks syncAlarm. `?object=kv|sql` picks the binding
// (a KV-backed or a SQLite-backed class); `?name=` the object.
import { runContract } from "./contract.mjs";
import { durableObjectStorage, syncAlarm, DURABLE_OBJECT_LIMITS } from "../../js/durable-object.js";

const json = (value, status = 200) => new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });
const PERSISTED = Array.from({ length: 300 }, (_, i) => ({ key: `p/${String(i).padStart(3, "0")}`, value: JSON.stringify({ i, s: "é😀".repeat(i % 5) }) }));

export class TestObject {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }

  async fetch(request) {
    const url = new URL(request.url);
    const storage = this.ctx.storage;
    switch (url.pathname) {
      case "/contract": {
        const lines = [];
        const started = Date.now();
        const result = await runContract((space) => durableObjectStorage(storage, { prefix: `${space}/` }), (l) => lines.push(l), {
          name: url.searchParams.get("label") ?? "workerd",
          only: url.searchParams.get("only") ?? undefined,
        });
        // The object's own keys (no prefix) never show through an adapter.
        return json({ ...result, lines, ms: Date.now() - started });
      }
      case "/write": {
        const a = durableObjectStorage(storage, { prefix: "persist/" });
        const ok = await a.commit({ checks: [], puts: PERSISTED, deletes: [] });
        await storage.put("own-key", "not the adapter's");
        return json({ ok, entries: await a.list({ start: "", end: "~", limit: 1000, reverse: false }) });
      }
      case "/read": {
        const a = durableObjectStorage(storage, { prefix: "persist/" });
        const entries = await a.list({ start: "", end: "~", limit: 1000, reverse: false });
        const got = await a.getMany(PERSISTED.map((p) => p.key));
        const same = got.every((e, i) => e && e.value === PERSISTED[i].value && e.version === entries[i].version);
        return json({ entries, same });
      }
      case "/alarm": {
        const problems = [];
        const expect = (cond, what) => cond || problems.push(what);
        await storage.deleteAlarm();
        const now = Date.now();
        expect((await storage.getAlarm()) === null, "no alarm at first");
        await syncAlarm(storage, null);
        expect((await storage.getAlarm()) === null, "null sets nothing");
        await syncAlarm(storage, now + 3600_000);
        expect((await storage.getAlarm()) === now + 3600_000, "set when there is none");
        await syncAlarm(storage, now + 7200_000);
        expect((await storage.getAlarm()) === now + 3600_000, "a later time keeps the earlier alarm");
        await syncAlarm(storage, now + 1800_000);
        expect((await storage.getAlarm()) === now + 1800_000, "an earlier time moves it");
        await syncAlarm(storage, null);
        expect((await storage.getAlarm()) === now + 1800_000, "null keeps it");
        // One that fires: alarm() records it, as an outbox's alarm would flush.
        await storage.delete("alarm-fired");
        await syncAlarm(storage, Date.now() + 50);
        return json({ problems });
      }
      case "/alarm-fired":
        return json({ fired: (await this.ctx.storage.get("alarm-fired")) ?? null, alarm: await storage.getAlarm() });
      case "/backend":
        // Only SQLite-backed objects can run SQL (ctx.storage.sql exists on both).
        try {
          storage.sql.exec("SELECT 1").toArray();
          return json({ sql: true });
        } catch (err) {
          return json({ sql: false, error: String(err) });
        }
      case "/rollback": {
        // A write the runtime refuses in the middle of a commit (the second chunk of puts,
        // after the first was issued) rolls the whole commit back.
        const failing = {
          get: (keys) => storage.get(keys),
          list: (o) => storage.list(o),
          transaction: (fn) =>
            storage.transaction((txn) =>
              fn({
                get: (keys) => txn.get(keys),
                delete: (keys) => txn.delete(keys),
                put: (entries) => (Object.keys(entries).some((k) => k.includes("boom")) ? Promise.reject(new Error("refused")) : txn.put(entries)),
              }),
            ),
        };
        const a = durableObjectStorage(failing, { prefix: "rb/" });
        await a.commit({ checks: [], puts: [{ key: "keep", value: "1" }], deletes: [] });
        const [keep] = await a.getMany(["keep"]);
        const puts = Array.from({ length: 200 }, (_, i) => ({ key: i === 150 ? "boom" : `n/${i}`, value: "" }));
        let error = null;
        try {
          await a.commit({ checks: [{ key: "keep", version: keep.version }], puts, deletes: ["keep"] });
        } catch (err) {
          error = String(err);
        }
        const after = await a.list({ start: "", end: "~", limit: 1000, reverse: false });
        const next = await a.commit({ checks: [{ key: "keep", version: keep.version }], puts: [{ key: "n/after", value: "" }], deletes: [] });
        return json({ error, after: after.map((e) => [e.key, e.version === keep.version]), next });
      }
      case "/limits":
        return json(DURABLE_OBJECT_LIMITS);
      case "/raw-value": {
        // What the runtime itself accepts per value (to keep the declared limit honest).
        const n = Number(url.searchParams.get("bytes"));
        try {
          await storage.put("raw", new Uint8Array(n));
          return json({ ok: true });
        } catch (err) {
          return json({ ok: false, error: String(err) });
        }
      }
      default:
        return new Response("not found", { status: 404 });
    }
  }

  async alarm() {
    // An outbox would: const r = await outbox.flush(); await syncAlarm(this.ctx.storage, r.nextDueAt);
    await this.ctx.storage.put("alarm-fired", Date.now());
    await syncAlarm(this.ctx.storage, null);
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const ns = url.searchParams.get("object") === "sql" ? env.SQL_OBJECT : env.KV_OBJECT;
    return ns.get(ns.idFromName(url.searchParams.get("name") ?? "test")).fetch(request);
  },
};

// One class per storage backend (two bindings of one class would be one namespace).
export class KvObject extends TestObject {}
export class SqlObject extends TestObject {}
