// nostr-outbox/durable-object: a storage adapter (see storage-adapter.d.ts) on a Cloudflare
// Durable Object's `ctx.storage` (the key-value API: KV-backed and SQLite-backed objects).
// A Durable Object's storage is never evicted; a write is durable once confirmed (the
// object's output gate holds its responses until then), so a crash, an eviction from memory
// or a redeploy loses nothing confirmed, and a failed write resets the object. Storage is
// per object: one object is one outbox (or several, by `prefix`).
//
// Each key holds `[version, bytes]`: a unique version per write and the value's UTF-8 bytes
// (so a value's stored size is its UTF-8 length). A commit is one `storage.transaction`: it
// reads its checked keys, then puts and deletes (128 keys per call); a failed check writes
// nothing, a throw rolls back. Commits of one storage are also queued (a commit waits for
// the previous one). workerd already runs one transaction at a time; the queue keeps that
// true whatever the runtime does (with plain reads and coalesced writes instead of a
// transaction, two commits in flight both read one version and both applied in workerd).

const CHUNK = 128; // keys per get/put/delete call
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const queues = new WeakMap(); // storage → the promise of its last commit

/**
 * What the adapter declares: 128 KiB per stored value (Cloudflare's limit, the version
 * and the serialization's framing included) leaves 130 048 bytes of UTF-8 per value.
 * No limit per commit: the puts and deletes are issued in chunks of 128 keys. A
 * KV-backed (legacy) object also takes keys of at most 2 KiB, `KV_BACKED_KEY_BYTES`
 * (SQLite-backed: key and value together up to 2 MB): its adapter declares
 * `maxKeyLength` as that less the prefix, so an event whose NIP-01 address would need a
 * longer key is refused, typed, with nothing written (local workerd does not enforce
 * the 2 KiB; Cloudflare does).
 */
export const DURABLE_OBJECT_LIMITS = Object.freeze({ maxValueBytes: 128 * 1024 - 1024 });

/** The longest key of a KV-backed Durable Object, in UTF-8 bytes (Cloudflare's limit). */
export const KV_BACKED_KEY_BYTES = 2048;

// True when `storage` is a SQLite-backed object's (only those run SQL; `storage.sql`
// exists on both kinds, and throws on a KV-backed one's use).
function sqliteBacked(storage) {
  try {
    storage.sql.exec("SELECT 1");
    return true;
  } catch {
    return false;
  }
}

/**
 * A storage adapter on a Durable Object's storage.
 * @param {object} storage `this.ctx.storage` (`DurableObjectStorage`)
 * @param {{ prefix?: string, exclusive?: boolean }} [options] `prefix` (default
 *   "nostr-outbox/"): prepended to every key, so several adapters and the object's own keys
 *   share one storage. `exclusive` (default true): the adapter says no other live context
 *   reaches this storage (Cloudflare runs one instance of an object at a time), so the
 *   outbox's flusher takes over at once the records a killed incarnation left leased,
 *   instead of waiting out their lease. Open one outbox per object and prefix.
 */
export function durableObjectStorage(storage, options = {}) {
  const prefix = options.prefix ?? "nostr-outbox/";
  const exclusive = options.exclusive ?? true;
  const session = randomId();
  let writes = 0;

  // The value and version of each key, read through `from` (the storage or a transaction).
  async function read(from, keys) {
    const out = [];
    for (let i = 0; i < keys.length; i += CHUNK) {
      const chunk = keys.slice(i, i + CHUNK);
      const got = await from.get(chunk.map((k) => prefix + k));
      for (const k of chunk) out.push(unpack(got.get(prefix + k)));
    }
    return out;
  }

  const limits = sqliteBacked(storage)
    ? DURABLE_OBJECT_LIMITS
    : Object.freeze({ ...DURABLE_OBJECT_LIMITS, maxKeyLength: KV_BACKED_KEY_BYTES - encoder.encode(prefix).length });

  return {
    limits,
    exclusive,
    getMany: (keys) => read(storage, keys),
    async list({ start, end, limit, reverse }) {
      if (limit <= 0 || !(start < end)) return [];
      const got = await storage.list({ start: prefix + start, end: prefix + end, limit, reverse });
      const out = [];
      for (const [k, stored] of got) {
        const e = unpack(stored);
        if (e) out.push({ key: k.slice(prefix.length), value: e.value, version: e.version });
      }
      return out;
    },
    commit(commit) {
      const previous = queues.get(storage) ?? Promise.resolve();
      const run = previous.then(() => apply(commit));
      queues.set(storage, run.then(noop, noop));
      return run;
    },
  };

  async function apply({ checks, puts, deletes }) {
    for (const { key, value } of puts) {
      if (typeof value !== "string") throw new TypeError(`durableObjectStorage: the value of ${key} is not a string`);
    }
    // One transaction: a throw anywhere in it (a write the runtime refuses) rolls every
    // write of the commit back.
    return storage.transaction(async (txn) => {
      if (checks.length) {
        const current = await read(txn, checks.map((c) => c.key));
        for (let i = 0; i < checks.length; i++) {
          const want = checks[i].version;
          if (want === null ? current[i] !== null : current[i]?.version !== want) return false;
        }
      }
      const pending = [];
      for (let i = 0; i < puts.length; i += CHUNK) {
        const entries = {};
        for (const { key, value } of puts.slice(i, i + CHUNK)) {
          entries[prefix + key] = [`${session}.${(++writes).toString(36)}`, encoder.encode(value)];
        }
        pending.push(txn.put(entries));
      }
      for (let i = 0; i < deletes.length; i += CHUNK) {
        pending.push(txn.delete(deletes.slice(i, i + CHUNK).map((k) => prefix + k)));
      }
      await Promise.all(pending);
      return true;
    });
  }
}

/**
 * Keeps the object's alarm at or before `dueAt` (ms since the epoch; null: nothing due):
 * sets it when there is none or `dueAt` is earlier. Call it after every enqueue with the
 * outbox's next due time, and in the object's `alarm()` handler:
 * `const result = await outbox.flush(); await syncAlarm(this.ctx.storage, result.nextDueAt);`
 * (an alarm that fires early just flushes nothing and sets the next one).
 * @param {object} storage `this.ctx.storage`
 * @param {number | null | undefined} dueAt
 */
export async function syncAlarm(storage, dueAt) {
  if (dueAt === null || dueAt === undefined) return;
  const current = await storage.getAlarm();
  if (current === null || current === undefined || dueAt < current) await storage.setAlarm(dueAt);
}

function unpack(stored) {
  if (stored === undefined) return null;
  if (!Array.isArray(stored) || stored.length !== 2) throw new TypeError("durableObjectStorage: a stored value that is not [version, bytes]");
  const [version, bytes] = stored;
  return { value: typeof bytes === "string" ? bytes : decoder.decode(bytes), version };
}

function randomId() {
  const bytes = new Uint8Array(9);
  crypto.getRandomValues(bytes);
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

function noop() {}
