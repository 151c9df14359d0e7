// The storage adapter contract (js/storage-adapter.d.ts) as a test suite that runs in any
// runtime: plain ES module, no runtime imports. `runContract(makeAdapter, report)` calls
// `makeAdapter(space)` (space: [a-z0-9]+, possibly async) for an adapter in its own
// namespace (a prefix, a table) of ONE shared backend, runs every test, prints libtest-style
// lines `test NAME ... ok|FAILED` through `report(line)`, and returns { passed, failed }.

class Failure extends Error {}
function assert(cond, msg) {
  if (!cond) throw new Failure(msg);
}
function eq(actual, expected, msg) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Failure(`${msg}: got ${a.slice(0, 300)}, want ${e.slice(0, 300)}`);
}
const put = (key, value = "") => ({ key, value });
const commit = (a, { checks = [], puts = [], deletes = [] }) => a.commit({ checks, puts, deletes });
const versionOf = async (a, key) => (await a.getMany([key]))[0]?.version ?? null;
const utf8 = (s) => new TextEncoder().encode(s).length;

// A value of exactly `bytes` UTF-8 bytes, mixing ASCII, 2-, 3- and 4-byte characters, JSON.
function valueOf(bytes) {
  const head = '{"content":"';
  const tail = '"}';
  let body = "";
  let n = utf8(head) + utf8(tail);
  const parts = ["a", "é", "€", "😀", "\\n", "z"];
  let i = 0;
  while (n + 4 <= bytes) {
    const p = parts[i++ % parts.length];
    body += p;
    n += utf8(p);
  }
  while (n < bytes) {
    body += "x";
    n += 1;
  }
  return head + body + tail;
}

/** Puts `entries` in commits of at most `per` mutations. */
async function putAll(a, entries, per) {
  for (let i = 0; i < entries.length; i += per) {
    assert(await commit(a, { puts: entries.slice(i, i + per) }), "a commit without checks applies");
  }
}

function perCommit(a) {
  return Math.min(a.limits?.maxMutations ?? 100, 100);
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test("empty_answers", async (space) => {
  const a = await space("a");
  eq(await a.getMany([]), [], "getMany([])");
  eq(await a.getMany(["nothing"]), [null], "an absent key");
  eq(await a.list({ start: "", end: "~", limit: 10, reverse: false }), [], "an empty list");
  assert((await commit(a, {})) === true, "an empty commit resolves true");
});

test("get_many_in_order", async (space) => {
  const a = await space("a");
  assert(await commit(a, { puts: [put("k/a", '{"a":1}'), put("k/c", "")] }), "commit");
  const got = await a.getMany(["k/c", "k/b", "k/a", "k/c"]);
  eq(got.map((e) => e && e.value), ["", null, '{"a":1}', ""], "values in the order asked, null for the absent");
  assert(got.every((e) => e === null || typeof e.version === "string"), "versions are strings");
  eq(got[0].version, got[3].version, "one key, one version");
});

test("get_many_many_keys", async (space) => {
  const a = await space("a");
  const entries = [];
  for (let i = 0; i < 300; i++) entries.push(put(`m/${String(i).padStart(4, "0")}`, `{"i":${i}}`));
  await putAll(a, entries, perCommit(a));
  const ask = [];
  for (let i = 349; i >= 0; i -= 1) ask.push(`m/${String((i * 7) % 350).padStart(4, "0")}`);
  const got = await a.getMany(ask);
  eq(got.length, ask.length, "one answer per key");
  for (let j = 0; j < ask.length; j++) {
    const i = Number(ask[j].slice(2));
    eq(got[j] && got[j].value, i < 300 ? `{"i":${i}}` : null, `getMany answer ${j} (${ask[j]})`);
  }
});

test("list_ranges_and_limits", async (space) => {
  const a = await space("a");
  const keys = [];
  for (let i = 0; i < 20; i++) keys.push(`l/${String(i).padStart(2, "0")}`);
  assert(await commit(a, { puts: keys.map((k) => put(k, JSON.stringify(k))) }), "commit");
  assert(await commit(a, { puts: [put("k/x"), put("m/x")] }), "neighbours outside the range");
  const list = (start, end, limit, reverse = false) => a.list({ start, end, limit, reverse }).then((r) => r.map((e) => e.key));
  eq(await list("l/05", "l/10", 100), keys.slice(5, 10), "ascending, end exclusive");
  eq(await list("l/05", "l/10", 3), keys.slice(5, 8), "ascending, limit: the first ones");
  eq(await list("l/05", "l/10", 3, true), ["l/09", "l/08", "l/07"], "descending, limit: the ones nearest end");
  eq(await list("l/05", "l/10", 100, true), keys.slice(5, 10).reverse(), "descending, whole range");
  eq(await list("l/", "l0", 100), keys, "a prefix range ('/' + 1 is '0')");
  eq(await list("l/05", "l/05", 10), [], "start == end is empty");
  eq(await list("l/050", "l/06", 10), [], "between two keys");
  eq(await list("l/1", "l/2", 1), ["l/10"], "limit 1");
  eq(await list("", "~", 1000), ["k/x", ...keys, "m/x"], "the whole namespace");
  const full = await a.list({ start: "l/00", end: "l/02", limit: 10, reverse: false });
  const got = await a.getMany(["l/00", "l/01"]);
  eq(full.map((e) => [e.key, e.value, e.version]), [["l/00", '"l/00"', got[0].version], ["l/01", '"l/01"', got[1].version]], "list answers key, value and version");
});

test("list_long_range", async (space) => {
  const a = await space("a");
  const entries = [];
  for (let i = 0; i < 250; i++) entries.push(put(`r/${String(i).padStart(4, "0")}`, ""));
  await putAll(a, entries, perCommit(a));
  eq((await a.list({ start: "r/", end: "r0", limit: 1000, reverse: false })).length, 250, "every key of a long range");
  const back = await a.list({ start: "r/", end: "r0", limit: 120, reverse: true });
  eq(back.length, 120, "a limit over one page");
  eq([back[0].key, back[119].key], ["r/0249", "r/0130"], "descending order across pages");
});

test("string_order_of_ascii_keys", async (space) => {
  const a = await space("a");
  const keys = ["a", "a/", "a/b", "a0", "A", "0", "~", "a//", "_", "z-", "Z", " ", "!"];
  assert(await commit(a, { puts: keys.map((k) => put(k)) }), "commit");
  eq((await a.list({ start: " ", end: "~~", limit: 100, reverse: false })).map((e) => e.key), [...keys].sort(), "the string order");
});

test("versions_change_on_every_write", async (space) => {
  const a = await space("a");
  const seen = new Set();
  assert(await commit(a, { puts: [put("v", "1")] }), "first write");
  seen.add(await versionOf(a, "v"));
  assert(await commit(a, { puts: [put("v", "1")] }), "same value again");
  const v2 = await versionOf(a, "v");
  assert(!seen.has(v2), "a rewrite with the same value changes the version");
  seen.add(v2);
  assert(await commit(a, { deletes: ["v"] }), "delete");
  eq(await versionOf(a, "v"), null, "deleted");
  assert(await commit(a, { puts: [put("v", "1")] }), "put again after a delete");
  const v3 = await versionOf(a, "v");
  assert(!seen.has(v3), "a key put again after a delete has a version it never had");
  seen.add(v3);
  assert(await commit(a, { puts: [put("w", "1"), put("v", "2")] }), "two keys in one commit");
  assert(!seen.has(await versionOf(a, "v")), "each write, a new version");
});

test("commit_applies_when_checks_hold", async (space) => {
  const a = await space("a");
  assert(await commit(a, { puts: [put("x", "1"), put("y", "1"), put("gone", "1")] }), "setup");
  const vx = await versionOf(a, "x");
  const ok = await commit(a, {
    checks: [{ key: "x", version: vx }, { key: "new", version: null }],
    puts: [put("x", "2"), put("new", "n")],
    deletes: ["gone", "never-was"],
  });
  eq(ok, true, "commit with satisfied checks");
  eq((await a.getMany(["x", "y", "new", "gone", "never-was"])).map((e) => e && e.value), ["2", "1", "n", null, null], "puts and deletes applied");
  assert((await versionOf(a, "x")) !== vx, "x has a new version");
  eq(await commit(a, { checks: [{ key: "y", version: await versionOf(a, "y") }] }), true, "a commit of checks only");
});

test("failed_check_writes_nothing", async (space) => {
  const a = await space("a");
  assert(await commit(a, { puts: [put("x", "1"), put("y", "1")] }), "setup");
  const before = await a.list({ start: "", end: "~", limit: 100, reverse: false });
  const vx = await versionOf(a, "x");
  const vy = await versionOf(a, "y");
  const attempts = [
    ["a stale version", [{ key: "x", version: vx }, { key: "y", version: vx === vy ? "other" : vx }]],
    ["a made-up version", [{ key: "x", version: "00000000000000000000" }]],
    ["present but must be absent", [{ key: "x", version: null }]],
    ["absent but must have a version", [{ key: "z", version: vx }]],
    ["the last of many checks fails", [{ key: "z", version: null }, { key: "x", version: vx }, { key: "y", version: null }]],
  ];
  for (const [what, checks] of attempts) {
    const r = await commit(a, { checks, puts: [put("x", "2"), put("z", "2")], deletes: ["y"] });
    eq(r, false, `${what}: resolves false`);
    eq(await a.list({ start: "", end: "~", limit: 100, reverse: false }), before, `${what}: nothing written`);
  }
});

test("concurrent_commits_one_wins", async (space) => {
  const a = await space("a");
  assert(await commit(a, { puts: [put("c", "0")] }), "setup");
  const v = await versionOf(a, "c");
  const results = await Promise.all(
    [1, 2, 3, 4, 5].map((i) => commit(a, { checks: [{ key: "c", version: v }], puts: [put("c", String(i)), put(`by/${i}`, "")] })),
  );
  eq(results.filter((r) => r === true).length, 1, `exactly one of five applies (${results})`);
  const winner = results.indexOf(true) + 1;
  eq((await a.getMany(["c"]))[0].value, String(winner), "the winner's value");
  eq((await a.list({ start: "by/", end: "by0", limit: 10, reverse: false })).map((e) => e.key), [`by/${winner}`], "only the winner's puts");
  const absent = await Promise.all([1, 2, 3].map((i) => commit(a, { checks: [{ key: "first", version: null }], puts: [put("first", String(i))] })));
  eq(absent.filter((r) => r === true).length, 1, `exactly one of three creates a key that must be absent (${absent})`);
});

test("concurrent_commits_two_adapters", async (space) => {
  // Two adapters on the same namespace (two outboxes in one process) are one store.
  const a = await space("a");
  const b = await space("a");
  assert(await commit(a, { puts: [put("c", "0")] }), "setup");
  const v = await versionOf(b, "c");
  eq(v, await versionOf(a, "c"), "both see one version");
  const results = await Promise.all([a, b, a, b].map((x, i) => commit(x, { checks: [{ key: "c", version: v }], puts: [put("c", String(i))] })));
  eq(results.filter((r) => r === true).length, 1, `exactly one applies (${results})`);
});

test("namespaces_isolate", async (space) => {
  const a = await space("a");
  const b = await space("b");
  assert(await commit(a, { puts: [put("same", "A"), put("only-a", "A")] }), "a");
  assert(await commit(b, { puts: [put("same", "B"), put("only-b", "B")] }), "b");
  eq((await a.getMany(["same", "only-a", "only-b"])).map((e) => e && e.value), ["A", "A", null], "a sees its own");
  eq((await b.getMany(["same", "only-a", "only-b"])).map((e) => e && e.value), ["B", null, "B"], "b sees its own");
  eq((await a.list({ start: "", end: "~", limit: 100, reverse: false })).map((e) => [e.key, e.value]), [["only-a", "A"], ["same", "A"]], "a lists its own, unprefixed");
  eq((await b.list({ start: "", end: "~", limit: 100, reverse: true })).map((e) => [e.key, e.value]), [["same", "B"], ["only-b", "B"]], "b lists its own");
  eq(await commit(a, { checks: [{ key: "only-b", version: null }], deletes: ["same"] }), true, "a's check ignores b's keys");
  eq((await b.getMany(["same"]))[0].value, "B", "a's delete left b's key");
});

test("limits_declared", async (space) => {
  const a = await space("a");
  const limits = a.limits;
  if (limits === undefined) return;
  assert(typeof limits === "object" && limits !== null, "limits is an object");
  for (const [k, v] of Object.entries(limits)) {
    assert(["maxMutations", "maxChecks", "maxValueBytes", "maxCommitBytes", "maxKeyBytes", "maxKeyLength"].includes(k), `unknown limit ${k}`);
    assert(v === undefined || (Number.isInteger(v) && v > 0), `${k} = ${v}: a positive integer`);
  }
});

test("commit_at_the_limits", async (space) => {
  // A commit that fills every declared limit (or 1000 mutations, 100 checks, 64 KiB of
  // keys when undeclared) applies.
  const a = await space("a");
  const limits = a.limits ?? {};
  const n = Math.min(limits.maxMutations ?? 1000, 1000);
  const bytes = Math.min(limits.maxCommitBytes ?? 64 * 1024, limits.maxKeyBytes ?? Infinity);
  const per = Math.floor(bytes / n);
  assert(per >= 12, `${bytes} bytes for ${n} mutations leaves room for keys`);
  const puts = [];
  let total = 0;
  for (let i = 0; i < n; i++) {
    const len = i === n - 1 ? bytes - total : per;
    const key = `e/${String(i).padStart(6, "0")}/`.padEnd(len, "k");
    puts.push(put(key, ""));
    total += key.length;
  }
  eq(total, bytes, "the commit's bytes");
  const nChecks = Math.min(limits.maxChecks ?? 100, n);
  const checks = puts.slice(0, nChecks).map((p) => ({ key: p.key, version: null }));
  eq(await commit(a, { checks, puts }), true, `${n} puts (keys only, ${bytes} bytes) and ${nChecks} checks`);
  eq((await a.list({ start: "e/", end: "e0", limit: n + 1, reverse: false })).length, n, "every key written");
  const deleted = await commit(a, { checks: puts.slice(0, nChecks).map((p) => ({ key: p.key, version: "no" })), deletes: puts.map((p) => p.key) });
  eq(deleted, false, "a failing check at the limits writes nothing");
  eq(await commit(a, { deletes: puts.map((p) => p.key) }), true, `${n} deletes`);
  eq((await a.list({ start: "e/", end: "e0", limit: 10, reverse: false })).length, 0, "every key deleted");
});

test("value_at_the_limit", async (space) => {
  const a = await space("a");
  const limits = a.limits ?? {};
  const max = Math.min(limits.maxValueBytes ?? 256 * 1024, limits.maxCommitBytes ? limits.maxCommitBytes - 16 : Infinity);
  const value = valueOf(max);
  eq(utf8(value), max, "the value's size");
  eq(await commit(a, { puts: [put("big", value)] }), true, `a value of ${max} bytes`);
  eq((await a.getMany(["big"]))[0].value === value, true, "it reads back whole");
  eq((await a.list({ start: "big", end: "big0", limit: 1, reverse: false }))[0].value === value, true, "and lists whole");
});

test("values_round_trip", async (space) => {
  const a = await space("a");
  const values = [
    "",
    "{}",
    JSON.stringify({ content: "héllo wörld – 日本語 – 😀🚀 – \u0301e\u200d – \"quoted\" \\ back\nslash\ttab", tags: [["p", "ab".repeat(32)]] }),
    JSON.stringify({ content: "\u0000\u0001\u001f", n: 1e21, f: -0.5 }),
    JSON.stringify({ list: Array.from({ length: 400 }, (_, i) => ({ i, s: "✓".repeat(i % 7) })) }),
  ];
  assert(await commit(a, { puts: values.map((v, i) => put(`val/${i}`, v)) }), "commit");
  const got = await a.getMany(values.map((_, i) => `val/${i}`));
  for (let i = 0; i < values.length; i++) assert(got[i] && got[i].value === values[i], `value ${i} round-trips (${utf8(values[i])} bytes)`);
  const listed = await a.list({ start: "val/", end: "val0", limit: 10, reverse: false });
  for (let i = 0; i < values.length; i++) assert(listed[i].value === values[i], `value ${i} lists whole`);
});

/**
 * Runs every test; `makeAdapter(space)` gives an adapter in namespace `space` of one
 * shared backend (each test gets fresh namespaces). `report(line)` prints a line.
 * Options: `name` (prepended to test names, e.g. "deno-kv"), `only` (a test name filter).
 */
export async function runContract(makeAdapter, report, options = {}) {
  const label = options.name ? `${options.name}::` : "";
  let passed = 0;
  let failed = 0;
  let n = 0;
  for (const t of tests) {
    if (options.only && !t.name.includes(options.only)) continue;
    const id = `t${String(++n).padStart(2, "0")}`;
    const space = (s) => makeAdapter(`${id}${s}`);
    const started = Date.now();
    try {
      await t.fn(space);
      passed++;
      report(`test ${label}${t.name} ... ok${options.timing ? ` (${Date.now() - started} ms)` : ""}`);
    } catch (err) {
      failed++;
      report(`test ${label}${t.name} ... FAILED`);
      report(`  ${err instanceof Failure ? err.message : (err && err.stack) || String(err)}`);
    }
  }
  return { passed, failed };
}

/**
 * A runner's counts and libtest-style lines, shared by the runners of every runtime:
 * `ok(name)` / `bad(name, why)` report one test (the why indented under it), `check(name,
 * fn)` runs one, `add(counts)` adds a suite's (`runContract`, `runConformance`).
 */
export function tally(print) {
  const t = {
    passed: 0,
    failed: 0,
    ok(name) {
      t.passed++;
      print(`test ${name} ... ok`);
    },
    bad(name, why) {
      t.failed++;
      print(`test ${name} ... FAILED\n  ${String(why).split("\n").join("\n  ")}`);
    },
    add(counts) {
      t.passed += counts.passed;
      t.failed += counts.failed;
    },
    async check(name, fn) {
      try {
        await fn();
        t.ok(name);
      } catch (err) {
        t.bad(name, (err && err.stack) || err);
      }
    },
  };
  return t;
}

/** The names of the tests, in order. */
export const contractTests = tests.map((t) => t.name);
