// nostr-outbox/memory-storage: a storage adapter (see storage-adapter.d.ts) over a Map, for
// tests and as the reference implementation of the contract. Nothing survives the process:
// a restart, a crash or a redeploy loses every key. Adapters made with the same `map` share
// it, separated by their `prefix`. `limits` emulates a backend's: a commit over them rejects
// with an Error (as a real backend would), writing nothing.

let sessionCounter = 0;
const sorted = new WeakMap(); // map → its keys in ascending order, or absent when stale

/**
 * A storage adapter over a Map.
 * @param {{ map?: Map<string, {value: string, version: string}>, prefix?: string, limits?: object }} [options]
 */
export function memoryStorage(options = {}) {
  const map = options.map ?? new Map();
  const prefix = options.prefix ?? "nostr-outbox/";
  const limits = options.limits ? { ...options.limits } : undefined;
  const session = `${(++sessionCounter).toString(36)}.${Math.random().toString(36).slice(2, 10)}`;
  let writes = 0;

  const keysOf = () => {
    let keys = sorted.get(map);
    if (!keys) {
      keys = [...map.keys()].sort(compare);
      sorted.set(map, keys);
    }
    return keys;
  };

  return {
    limits,
    async getMany(keys) {
      return keys.map((key) => {
        const hit = map.get(prefix + key);
        return hit ? { value: hit.value, version: hit.version } : null;
      });
    },
    async list({ start, end, limit, reverse }) {
      const keys = keysOf();
      const from = lowerBound(keys, prefix + start);
      const to = lowerBound(keys, prefix + end);
      const out = [];
      if (reverse) {
        for (let i = to - 1; i >= from && out.length < limit; i--) out.push(entry(keys[i]));
      } else {
        for (let i = from; i < to && out.length < limit; i++) out.push(entry(keys[i]));
      }
      return out;
    },
    async commit({ checks, puts, deletes }) {
      if (limits) {
        const why = overLimits(limits, checks, puts, deletes);
        if (why) throw new Error(`memoryStorage: commit over the limits: ${why}`);
      }
      for (const { key, value } of puts) {
        if (typeof value !== "string") throw new TypeError(`memoryStorage: the value of ${key} is not a string`);
      }
      for (const { key, version } of checks) {
        const hit = map.get(prefix + key);
        if (version === null ? hit !== undefined : hit?.version !== version) return false;
      }
      for (const { key, value } of puts) {
        const k = prefix + key;
        if (!map.has(k)) sorted.delete(map);
        map.set(k, { value, version: `${session}.${(++writes).toString(36)}` });
      }
      for (const key of deletes) {
        if (map.delete(prefix + key)) sorted.delete(map);
      }
      return true;
    },
  };

  function entry(k) {
    const { value, version } = map.get(k);
    return { key: k.slice(prefix.length), value, version };
  }
}

function compare(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The index of the first key >= `key`. */
function lowerBound(keys, key) {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function utf8Length(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

function overLimits(limits, checks, puts, deletes) {
  const { maxMutations, maxChecks, maxValueBytes, maxCommitBytes, maxKeyBytes, maxKeyLength } = limits;
  for (const key of [...puts.map((p) => p.key), ...deletes]) {
    const k = utf8Length(key);
    if (maxKeyLength !== undefined && k > maxKeyLength) return `a key of ${k} bytes (at most ${maxKeyLength})`;
  }
  const mutations = puts.length + deletes.length;
  if (maxMutations !== undefined && mutations > maxMutations) return `${mutations} mutations (at most ${maxMutations})`;
  if (maxChecks !== undefined && checks.length > maxChecks) return `${checks.length} checks (at most ${maxChecks})`;
  let bytes = 0;
  let keyBytes = 0;
  for (const { key, value } of puts) {
    const v = utf8Length(value);
    if (maxValueBytes !== undefined && v > maxValueBytes) return `a value of ${v} bytes under ${key} (at most ${maxValueBytes})`;
    bytes += utf8Length(key) + v;
    keyBytes += utf8Length(key);
  }
  for (const key of deletes) {
    bytes += utf8Length(key);
    keyBytes += utf8Length(key);
  }
  if (maxKeyBytes !== undefined && keyBytes > maxKeyBytes) return `${keyBytes} bytes of keys (at most ${maxKeyBytes})`;
  if (maxCommitBytes !== undefined && bytes > maxCommitBytes) return `${bytes} bytes (at most ${maxCommitBytes})`;
  return null;
}
