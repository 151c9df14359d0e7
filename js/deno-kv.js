// nostr-outbox/deno-kv: a storage adapter (see storage-adapter.d.ts) on a `Deno.Kv`. Deno KV
// never evicts; every atomic commit is durable when its promise resolves (SQLite on disk
// for `Deno.openKv(path)`, replicated FoundationDB on Deno Deploy), so a crash loses nothing
// committed and a redeploy keeps the database. `Deno.openKv()` without a path uses a file
// in Deno's cache dir (per script); `Deno.openKv(":memory:")` keeps nothing.
//
// Keys are `[prefix, key]` (one string part: the order is the string order); values are
// stored as their UTF-8 bytes (a Uint8Array, so a value's size is its UTF-8 length, not
// V8's serialization, which takes 2 bytes per character for any string with a character
// past U+00FF); the version is the entry's versionstamp.

const GET_MANY_CHUNK = 10; // Deno KV: at most 10 keys per getMany
const VERSIONSTAMP = /^[0-9a-f]{20}$/;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Deno KV's limits per atomic operation, as this adapter declares them: 1000 mutations,
 * 100 checks, 64 KiB per value; the keys an operation writes or deletes may total 80 KiB,
 * each key counted as `prefix` + key + 4 bytes, so `maxKeyBytes` is 80 KiB − 1000 ×
 * (UTF-8 bytes of `prefix` + 4); the payload (keys twice, plus values) may total 800 KiB,
 * so `maxCommitBytes` (keys once, plus values) is 800 KiB − 80 KiB − 1000 × that overhead;
 * one key may have 2048 bytes with that overhead (`maxKeyLength`).
 * @param {string} prefix
 */
export function denoKvLimits(prefix) {
  const overhead = encoder.encode(prefix).length + 4;
  return {
    maxMutations: 1000,
    maxChecks: 100,
    maxValueBytes: 64 * 1024,
    maxCommitBytes: 720 * 1024 - 1000 * overhead,
    maxKeyBytes: 80 * 1024 - 1000 * overhead,
    maxKeyLength: 2048 - overhead,
  };
}

/**
 * A storage adapter on a `Deno.Kv` (`await Deno.openKv(path)`; `--unstable-kv` is needed on
 * the command line outside Deno Deploy).
 * @param {object} kv a `Deno.Kv`
 * @param {{ prefix?: string }} [options] `prefix` (default "nostr-outbox/"): the first key
 *   part of every key, so several adapters (and the app's own keys) share one database.
 */
export function denoKvStorage(kv, options = {}) {
  const prefix = options.prefix ?? "nostr-outbox/";
  return {
    limits: denoKvLimits(prefix),
    async getMany(keys) {
      const out = [];
      for (let i = 0; i < keys.length; i += GET_MANY_CHUNK) {
        const chunk = keys.slice(i, i + GET_MANY_CHUNK).map((k) => [prefix, k]);
        for (const e of await kv.getMany(chunk)) {
          out.push(e.versionstamp === null ? null : { value: decode(e.value), version: e.versionstamp });
        }
      }
      return out;
    },
    async list({ start, end, limit, reverse }) {
      const out = [];
      if (limit <= 0 || !(start < end)) return out;
      const iter = kv.list({ start: [prefix, start], end: [prefix, end] }, { limit, reverse, batchSize: Math.min(limit, 500) });
      for await (const e of iter) {
        out.push({ key: e.key[1], value: decode(e.value), version: e.versionstamp });
      }
      return out;
    },
    async commit({ checks, puts, deletes }) {
      for (const { key, value } of puts) {
        if (typeof value !== "string") throw new TypeError(`denoKvStorage: the value of ${key} is not a string`);
      }
      const op = kv.atomic();
      for (const { key, version } of checks) {
        // Deno KV throws "Invalid check" on a versionstamp that is not 20 hex digits; no
        // entry has one, so the check fails.
        if (version !== null && !VERSIONSTAMP.test(version)) return false;
        op.check({ key: [prefix, key], versionstamp: version });
      }
      for (const { key, value } of puts) op.set([prefix, key], encoder.encode(value));
      for (const key of deletes) op.delete([prefix, key]);
      const result = await op.commit();
      return result.ok === true;
    },
  };
}

function decode(value) {
  if (value instanceof Uint8Array) return decoder.decode(value);
  if (typeof value === "string") return value; // written by hand
  throw new TypeError("denoKvStorage: a value that is neither bytes nor a string");
}
