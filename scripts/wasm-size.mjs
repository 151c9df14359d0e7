// Which crates the .wasm's bytes come from: `node scripts/wasm-size.mjs NAMED [SHIPPED]`.
//
// NAMED is the package's .wasm with its `name` section: wasm-opt runs with `--debuginfo`
// (Cargo.toml), and scripts/build.sh calls `node scripts/wasm-size.mjs --strip PKG_WASM
// NAMED`, which copies the module to NAMED and rewrites pkg/'s without the name section
// (and any DWARF), byte for byte what `--strip-debug` would have shipped. SHIPPED, when
// given, is pkg/'s .wasm: the script checks that the two have the same bytes once custom
// sections are set aside, so the table describes exactly what ships. It reads the binary
// itself (sections, the code section's function bodies, the name section's function
// names; no dependency), prints a markdown table and cross-checks it with twiggy.
//
// Rule: which crate a function counts to, from its name (wasm-bindgen writes the name
// section demangled; the `::h0123…` hash is dropped):
// - A path counts to its first segment, the outermost path: `k256::arithmetic::…` →
//   k256, `nostr_outbox::sort::sort_by::{{closure}}` → nostr_outbox. So a generic of std
//   instantiated with another crate's types counts to std:
//   `core::ptr::drop_in_place<nostr_outbox::Record>`, `alloc::vec::Vec<T,A>::push`.
// - `core`, `alloc`, `std`, `compiler_builtins`, `dlmalloc`, … and the runtime's and
//   libm's symbols (`memcpy`, `__rust_alloc`, `fmin`) are one bucket: std.
// - The adapters wasm-bindgen writes (`… externref shim`, `… multivalue shim`) and its
//   own exports (`__wbindgen_*`, `__wbg_*`, `__externref_*`): wasm_bindgen.
// - A name without a path is one of this crate's `#[wasm_bindgen]` exports
//   (`outbox_enqueue`, `version`; LTO usually inlines the method into it): nostr_outbox.
// - A trait impl named `<Type as Trait>::f` sits beside its type or its trait (that is
//   when rustc names it so): it counts to the type's crate unless the type is std's or
//   generic, then to the trait's. `<serde_json::de::MapAccess as serde::de::MapAccess>` →
//   serde_json, `<k256::Scalar as core::ops::Mul>` → k256, `<alloc::string::String as
//   serde::Deserialize>` → serde, `<T as alloc::string::ToString>` → std,
//   `<nostr_outbox::Error as core::fmt::Display>` → nostr_outbox.
// - Derives: serde's derives and `#[wasm_bindgen]` write their impls inside an anonymous
//   `const _: () = { … }`, so their names read `nostr_outbox::core::_::<impl
//   serde::de::Deserialize for nostr_outbox::core::Record>::deserialize` (and the
//   visitors inside them `<nostr_outbox::…::_::<impl …>::deserialize::__Visitor as
//   serde::de::Visitor>::visit_map`). Such an impl in this crate counts to the trait's
//   crate: serde, wasm_bindgen. On purpose: that code exists because the dependency was
//   chosen, and the table is for weighing dependencies (STYLE.md §11: a hand-written
//   replacement needs a measured figure). std's derives (`Debug`, `Clone`) and
//   thiserror's `Display` impls (std traits) stay with nostr_outbox, as do impls written
//   by hand (`<nostr_outbox::X as serde::Serialize>`, beside the type).
// - Functions without a name, or whose name does not parse, count to "unknown".
// `WASM_SIZE_LIST=crate node scripts/wasm-size.mjs TWIN` lists a crate's functions and
// `--self-test` checks the rule on examples of each kind (the crates to come included).
//
// Columns: `code` is the bytes of the crate's function bodies (each with its size
// prefix) and `share` its part of the code section. `gzip cost` is what gzip -9 (node's
// zlib, which writes about 1 % more than GNU gzip) of the whole module loses when the
// crate's function bodies are cut out and everything else stays: the crate's marginal
// cost in the download. `gzip alone` is its bodies concatenated and gzipped on their
// own. The truth lies between the two: cut out, the crate's repeats of code elsewhere
// cost nothing; alone, it pays for patterns it shares with the rest. Marginal costs add
// up to less than the whole. Limits: removing a crate would also remove its callers'
// calls, its data (string constants and tables are in the data section, which has no
// per-crate names after linking; it is one row) and its imports, none of which is
// modelled; wasm-opt merges identical functions and inlines small ones into callers,
// so inlined code counts to the caller and a merged body to the name that survived.
import { copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { spawnSync } from "node:child_process";

const TOP = Number(process.env.WASM_SIZE_TOP || 10);
const STD = new Set(["__rustc", "core", "alloc", "std", "compiler_builtins", "dlmalloc", "panic_abort", "panic_unwind", "rustc_demangle", "std_detect", "hashbrown", "miniz_oxide", "addr2line", "gimli", "object", "adler2", "memchr"]);
const RUNTIME = /^(memcpy|memmove|memset|memcmp|bcmp|__rust_|__rdl_|__rg_|__rustc|rust_begin_unwind|rust_panic|__multi3|__udivti3|__umodti3|__divti3|__modti3|__ashlti3|__lshrti3|__ashrti3|__mul|__div|__float|__fix|__extend|__trunc)/;
const BINDGEN = /^(__wbindgen_|__wbg_|__externref_|__wbg_adapter|wasm_bindgen__)|( externref shim| multivalue shim)$|-> Externref/;
const LIBM = /^(fmin|fmax|fmod|sqrt|pow|exp|exp2|log|log2|log10|floor|ceil|round|trunc|sin|cos|tan|hypot|cbrt)f?$/;
const PRIMITIVES = new Set(["u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "bool", "char", "str", "!", "()"]);
const GENERIC = Symbol("generic");

// --- reading the binary ----------------------------------------------------------------
function reader(buf, pos = 0) {
  return {
    get pos() { return pos; },
    set pos(p) { pos = p; },
    byte() { return buf[pos++]; },
    u32() {
      let result = 0, shift = 0, b;
      do { b = buf[pos++]; result += (b & 0x7f) * 2 ** shift; shift += 7; } while (b & 0x80);
      return result;
    },
    name() { const n = this.u32(); const s = buf.toString("utf8", pos, pos + n); pos += n; return s; },
  };
}

function parse(buf) {
  if (buf.readUInt32LE(0) !== 0x6d736100) throw new Error("not a wasm module");
  const r = reader(buf, 8);
  const sections = [];
  let imported = 0;
  const bodies = []; // { start, end } of each defined function's entry (size prefix + body)
  const names = new Map();
  while (r.pos < buf.length) {
    const start = r.pos;
    const id = r.byte();
    const size = r.u32();
    const contentStart = r.pos;
    const end = contentStart + size;
    if (end > buf.length) throw new Error(`section ${id} runs past the end of the file`);
    let custom = null;
    if (id === 0) custom = r.name();
    sections.push({ id, custom, start, end });
    if (id === 2) {
      r.pos = contentStart;
      for (let n = r.u32(); n > 0; n--) {
        r.name(); r.name();
        const kind = r.byte();
        if (kind === 0) { r.u32(); imported++; }
        else if (kind === 1) { r.byte(); limits(r); }
        else if (kind === 2) limits(r);
        else if (kind === 3) { r.byte(); r.byte(); }
        else if (kind === 4) { r.byte(); r.u32(); }
        else throw new Error(`import kind ${kind}`);
      }
    } else if (id === 10) {
      r.pos = contentStart;
      for (let n = r.u32(); n > 0; n--) {
        const s = r.pos;
        const len = r.u32();
        r.pos += len;
        bodies.push({ start: s, end: r.pos });
      }
    } else if (custom === "name") {
      while (r.pos < end) {
        const sub = r.byte();
        const len = r.u32();
        const subEnd = r.pos + len;
        if (sub === 1) for (let n = r.u32(); n > 0; n--) { const i = r.u32(); names.set(i, r.name()); }
        r.pos = subEnd;
      }
    }
    r.pos = end;
  }
  return { sections, imported, bodies, names };
}

function limits(r) { const flags = r.byte(); r.u32(); if (flags & 1) r.u32(); }

// What `wasm-opt --strip-debug` removes: the names and DWARF. The rest ships.
const isDebug = (s) => s.id === 0 && (s.custom === "name" || s.custom.startsWith(".debug_") || s.custom === "sourceMappingURL" || s.custom === "external_debug_info");
function shippedBytes(buf, sections) {
  return Buffer.concat([buf.subarray(0, 8), ...sections.filter((s) => !isDebug(s)).map((s) => buf.subarray(s.start, s.end))]);
}

// --- attribution -----------------------------------------------------------------------
// Index of the ` as ` that separates `<Type as Trait>` at bracket depth 1, and the index
// of the matching `>`.
function splitQualified(s) {
  let depth = 0, as = -1;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "<" || c === "(" || c === "[") depth++;
    else if (c === ">" && s[i - 1] !== "-") { depth--; if (depth === 0) return { as, close: i }; }
    else if (c === ")" || c === "]") depth--;
    else if (depth === 1 && as < 0 && s.startsWith(" as ", i)) as = i;
  }
  return null;
}

function crateOfPath(p) {
  p = p.trim();
  for (;;) {
    const before = p;
    p = p.replace(/^&(mut )?/, "").replace(/^\*(const|mut) /, "").replace(/^(dyn|impl) /, "").replace(/^'[a-z_]+ /, "").trim();
    if (p === before) break;
  }
  if (p.startsWith("<")) return crateOfName(p);
  if (p.startsWith("[") || p.startsWith("(") || p.startsWith("fn(") || p.startsWith("unsafe ") || p.startsWith("extern ")) return GENERIC;
  const m = /^([A-Za-z_][A-Za-z0-9_]*)(::)?/.exec(p);
  if (!m) return null;
  if (!m[2]) return GENERIC; // `T`, `u8`, `str`: no crate
  if (m[1] === SELF) {
    // `nostr_outbox::core::_::<impl serde::de::Deserialize for nostr_outbox::core::Record>::…`:
    // an impl in an anonymous `const _: () = { … }`, which is how derive and attribute
    // macros (serde's, wasm-bindgen's) write theirs. It counts to the trait's crate.
    const at = p.indexOf("::_::<impl ");
    if (at >= 0) {
      const seg = p.slice(at + "::_::".length);
      const q = splitQualified(seg);
      const inner = q ? seg.slice(1, q.close) : "";
      const forAt = topLevelIndex(inner, " for ");
      if (forAt > 0) {
        const trait = crateOfPath(inner.slice("impl ".length, forAt));
        if (trait && trait !== GENERIC && trait !== "std" && trait !== SELF) return trait;
      }
    }
  }
  return STD.has(m[1]) ? "std" : m[1];
}

// Index of `needle` outside any brackets of `s`, or -1.
function topLevelIndex(s, needle) {
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "<" || c === "(" || c === "[") depth++;
    else if ((c === ">" && s[i - 1] !== "-") || c === ")" || c === "]") depth--;
    else if (depth === 0 && s.startsWith(needle, i)) return i;
  }
  return -1;
}

const SELF = "nostr_outbox";
function crateOfName(name) {
  if (BINDGEN.test(name)) return "wasm_bindgen";
  // `std[a543996e6e7dbf1e]::…`: a prebuilt std's v0-mangled names keep the crate's hash;
  // walrus appends `[1]` to a repeated name.
  const n = name.replace(/\[\d+\]$/, "").replace(/::h[0-9a-f]{16}$/, "").replace(/\.llvm\.\d+$/, "").replace(/\[[0-9a-f]{16}\]/g, "");
  if (RUNTIME.test(n) || LIBM.test(n)) return "std";
  // A plain symbol: one of this crate's `#[wasm_bindgen]` exports (`outbox_enqueue`,
  // `version`); the method's body is usually inlined into it.
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(n)) return SELF;
  if (n.startsWith("<")) {
    const q = splitQualified(n);
    if (!q) return null;
    const type = q.as < 0 ? n.slice(1, q.close) : n.slice(1, q.as);
    const typeCrate = crateOfPath(type);
    if (q.as < 0) return typeCrate === GENERIC ? "std" : typeCrate; // `<[T]>::sort`, `<dyn Any>::is`
    const traitCrate = crateOfPath(n.slice(q.as + 4, q.close));
    if (typeCrate && typeCrate !== GENERIC && typeCrate !== "std") return typeCrate;
    if (traitCrate && traitCrate !== GENERIC) return traitCrate;
    return typeCrate === GENERIC ? null : typeCrate;
  }
  const c = crateOfPath(n);
  return c === GENERIC ? null : c;
}

// twiggy (installed by scripts/setup.sh) reads the same binary with its own parser: its
// size of each function, matched by name, must be this script's plus the function's
// type index in the function section (one byte while the module has < 128 types), which
// twiggy counts with it and this script counts with "other sections". A line saying so.
function twiggyCheck(path, names, imported, bodies) {
  const version = spawnSync("twiggy", ["--version"], { encoding: "utf8" });
  if (version.error || version.status !== 0) return "twiggy not installed (scripts/setup.sh installs it): sizes not cross-checked";
  const top = spawnSync("twiggy", ["top", "-f", "json", path], { encoding: "utf8", maxBuffer: 1 << 28 });
  if (top.status !== 0) return `twiggy failed (${(top.stderr || "").trim().split("\n")[0]}): sizes not cross-checked`;
  const mine = new Map();
  bodies.forEach((b, i) => {
    const name = names.get(imported + i);
    if (name) mine.set(name, mine.has(name) ? -1 : b.end - b.start); // -1: the name repeats
  });
  let same = 0, differ = 0;
  for (const item of JSON.parse(top.stdout)) {
    const size = mine.get(item.name);
    if (size === undefined || size < 0) continue;
    const extra = item.shallow_size - size;
    if (extra === 1 || extra === 2) same++; else differ++;
  }
  const v = version.stdout.trim().split(/\s+/).pop();
  return differ === 0 && same > 0
    ? `checked: twiggy ${v} gives the same size for all ${fmt(same)} functions it names (plus each one's type index)`
    : `WARNING: twiggy ${v} differs on ${fmt(differ)} of ${fmt(same + differ)} functions' sizes`;
}

// --- report ----------------------------------------------------------------------------
const gz = (b) => gzipSync(b, { level: 9 }).length;
const fmt = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, " ");

// The rule on names of each kind, the crates to come included: `--self-test`.
const EXAMPLES = [
  ["k256::arithmetic::field::FieldElement::to_bytes::h2e3344cf1a9f7bba", "k256"],
  ["nostr_outbox::js::runtime::Runtime<S,T>::stop_auto::he59f74b587ee1704", "nostr_outbox"],
  ["nostr_outbox::sort::sort_by::{{closure}}::ha316ae0dd9600848", "nostr_outbox"],
  ["core::ptr::drop_in_place<nostr_outbox::js::backend::JsTransport>::hebca51ff701506e1", "std"],
  ["alloc::vec::Vec<T,A>::push::h5621eefaef3831c4", "std"],
  ["__rustc[b7974e8690430dd9]::__rust_alloc_zeroed", "std"],
  ["<std[a543996e6e7dbf1e]::panicking::panic_handler::StaticStrPayload as core[c5930c85a12de822]::fmt::Display>::fmt", "std"],
  ["memcpy", "std"], ["fmin", "std"],
  ["<nostr_outbox::js::runtime::LockGuard as core::ops::drop::Drop>::drop::hc8162b3c757888fd", "nostr_outbox"],
  ["<core::iter::adapters::enumerate::Enumerate<I> as core::iter::traits::iterator::Iterator>::next::h40b3c9bc9153b432", "std"],
  ["<&T as core::fmt::Display>::fmt::h0123456789abcdef", "std"],
  ["<T as alloc::string::ToString>::to_string::h0123456789abcdef", "std"],
  ["<[T] as core::fmt::Debug>::fmt::h0123456789abcdef", "std"],
  ["<k256::arithmetic::scalar::Scalar as core::ops::arith::Mul>::mul::h0123456789abcdef", "k256"],
  ["crypto_bigint::ct_choice::<impl core::convert::From<crypto_bigint::ct_choice::CtChoice> for subtle::Choice>::from::h0dce86e9c08d9030", "crypto_bigint"],
  ["js_sys::_::<impl wasm_bindgen::cast::JsCast for js_sys::Promise<T,E>>::instanceof::__wbg_instanceof_Promise_59148c6049d0e3a0::h982521ea954506b2", "js_sys"],
  ["<D as digest::digest::Digest>::chain_update::hd6687aae04fa662b", "digest"],
  ["<nostr_outbox::core::Record as serde::de::Deserialize>::deserialize::h0123456789abcdef", "nostr_outbox"],
  ["<nostr_outbox::core::_::<impl serde::de::Deserialize for nostr_outbox::core::Record>::deserialize::__FieldVisitor as serde::de::Visitor>::visit_str::h0123456789abcdef", "serde"],
  ["nostr_outbox::core::_::<impl serde::ser::Serialize for nostr_outbox::core::Record>::serialize::h0123456789abcdef", "serde"],
  ["nostr_outbox::core::_::<impl serde::de::Deserialize for nostr_outbox::core::Record>::deserialize::{{closure}}::h0123456789abcdef", "serde"],
  ["nostr_outbox::js::_::<impl core::fmt::Display for nostr_outbox::js::Error>::fmt::h0123456789abcdef", "nostr_outbox"],
  ["nostr_outbox::js::outbox::<impl core::convert::From<nostr_outbox::js::outbox::Outbox> for wasm_bindgen::JsValue>::from::h0123456789abcdef", "nostr_outbox"],
  ["nostr_outbox::js::outbox::_::<impl wasm_bindgen::convert::traits::FromWasmAbi for nostr_outbox::js::outbox::Outbox>::from_abi::h0123456789abcdef", "wasm_bindgen"],
  ["<T as alloc::slice::<impl [T]>::to_vec_in::ConvertVec>::to_vec::h0123456789abcdef", "std"],
  ["wasm_bindgen::convert::slices::<impl wasm_bindgen::convert::traits::FromWasmAbi for alloc::string::String>::from_abi::he9150d3ec350bfc4[1]", "wasm_bindgen"],
  ["js_sys::_::<impl wasm_bindgen::cast::JsCast for js_sys::Error>::instanceof::h0123456789abcdef", "js_sys"],
  ["<alloc::vec::Vec<T> as serde::ser::Serialize>::serialize::h0123456789abcdef", "serde"],
  ["<&mut serde_json::de::Deserializer<R> as serde::de::Deserializer>::deserialize_map::h0123456789abcdef", "serde_json"],
  ["serde_json::de::Deserializer<R>::parse_whitespace::h0123456789abcdef", "serde_json"],
  ["<serde_wasm_bindgen::de::Deserializer as serde::de::Deserializer>::deserialize_any::h0123456789abcdef", "serde_wasm_bindgen"],
  ["serde_wasm_bindgen::ser::Serializer::serialize_maps_as_objects::h0123456789abcdef", "serde_wasm_bindgen"],
  ["indexed_db_futures::database::Database::open::{{closure}}::h0123456789abcdef", "indexed_db_futures"],
  ["<indexed_db_futures::future::request::RequestFuture<T> as core::future::future::Future>::poll::h0123456789abcdef", "indexed_db_futures"],
  ["getrandom::backends::wasm_js::fill_inner::h0123456789abcdef", "getrandom"],
  ["hex::encode::h0123456789abcdef", "hex"],
  ["<nostr_outbox::js::outbox::Outbox as wasm_bindgen::convert::traits::FromWasmAbi>::from_abi::h0123456789abcdef", "nostr_outbox"],
  ["<alloc::string::String as serde::de::Deserialize>::deserialize::h0123456789abcdef", "serde"],
  ["<serde_json::value::Value as core::fmt::Debug>::fmt::h0123456789abcdef", "serde_json"],
  ["outbox_enqueue", "nostr_outbox"], ["outbox_enqueue externref shim", "wasm_bindgen"],
  ["F64 -> Externref externref shim", "wasm_bindgen"], ["__wbindgen_malloc", "wasm_bindgen"],
];

function selfTest() {
  let pass = 0, fail = 0;
  for (const [name, want] of EXAMPLES) {
    const got = crateOfName(name) || "unknown";
    if (got === want) pass++;
    else { fail++; console.log(`FAIL ${name}: ${got}, want ${want}`); }
  }
  console.log(`wasm-size: ${pass} passed, ${fail} failed`);
  process.exit(fail ? 1 : 0);
}

// `--strip WASM NAMED`: WASM as it is goes to NAMED; WASM loses its debug sections.
function strip(path, namedPath) {
  const buf = readFileSync(path);
  const { sections } = parse(buf);
  if (!sections.some(isDebug)) {
    console.log(`size by crate: ${path} has no name section (Cargo.toml's wasm-opt flags should keep it with --debuginfo)`);
    rmSync(namedPath, { force: true });
    return;
  }
  copyFileSync(path, namedPath);
  writeFileSync(path, shippedBytes(buf, sections));
}

function main() {
  if (process.argv[2] === "--self-test") return selfTest();
  if (process.argv[2] === "--strip") return strip(process.argv[3], process.argv[4]);
  // The table is a report: a problem with it is one line, and the build goes on.
  try { table(); } catch (e) { console.log(`size by crate: failed, ${e.message}`); }
}

function table() {
  const [twinPath, shippedPath] = process.argv.slice(2);
  if (!twinPath) { console.error("usage: node scripts/wasm-size.mjs NAMED.wasm [SHIPPED.wasm] | --strip WASM NAMED | --self-test"); process.exit(2); }
  const buf = readFileSync(twinPath);
  const { sections, imported, bodies, names } = parse(buf);
  if (names.size === 0) { console.log(`size by crate: ${twinPath} has no function names; nothing to attribute`); return; }
  const ship = shippedBytes(buf, sections);
  let check = "";
  if (shippedPath) {
    const other = readFileSync(shippedPath);
    const same = shippedBytes(other, parse(other).sections).equals(ship);
    check = same ? `without them byte for byte ${shippedPath}` : `WARNING: without them it differs from ${shippedPath}; the table is approximate`;
  }

  // Per crate: the body ranges, in module order.
  const crates = new Map();
  const codeSection = sections.find((s) => s.id === 10);
  bodies.forEach((b, i) => {
    const name = names.get(imported + i);
    const crate = (name && crateOfName(name)) || "unknown";
    if (!crates.has(crate)) crates.set(crate, { crate, fns: 0, bytes: 0, ranges: [] });
    const c = crates.get(crate);
    c.fns++; c.bytes += b.end - b.start; c.ranges.push(b);
  });
  // WASM_SIZE_LIST=crate prints that crate's functions, largest first (to check the rule).
  const list = process.env.WASM_SIZE_LIST;
  if (list) {
    const c = crates.get(list);
    if (!c) { console.log(`no functions count to ${list}; crates: ${[...crates.keys()].join(", ")}`); return; }
    const rows = c.ranges.map((b) => [b.end - b.start, names.get(imported + bodies.indexOf(b)) ?? "(no name)"]);
    for (const [size, name] of rows.sort((a, b) => b[0] - a[0])) console.log(`${String(size).padStart(7)}  ${name}`);
    return;
  }
  const codeBytes = bodies.reduce((a, b) => a + b.end - b.start, 0);
  const gzAll = gz(ship);
  // The module without some function bodies (their ranges cut from the shipped bytes).
  const without = (ranges) => {
    const cut = new Set(ranges);
    const parts = [buf.subarray(0, 8)];
    for (const s of sections) {
      if (isDebug(s)) continue;
      if (s.id !== 10) { parts.push(buf.subarray(s.start, s.end)); continue; }
      let at = s.start;
      for (const b of bodies) if (cut.has(b)) { parts.push(buf.subarray(at, b.start)); at = b.end; }
      parts.push(buf.subarray(at, s.end));
    }
    return Buffer.concat(parts);
  };
  const alone = (ranges) => gz(Buffer.concat(ranges.map((b) => buf.subarray(b.start, b.end))));

  const sorted = [...crates.values()].sort((a, b) => b.bytes - a.bytes);
  const shown = sorted.slice(0, TOP);
  const rest = sorted.slice(TOP);
  const rows = shown.map((c) => ({ label: c.crate === "unknown" ? "unknown (no name, or one the rule cannot read)" : `\`${c.crate}\``, ...c }));
  if (rest.length) rows.push({
    label: `${rest.length} other crates (${rest.map((c) => c.crate).join(", ")})`,
    fns: rest.reduce((a, c) => a + c.fns, 0), bytes: rest.reduce((a, c) => a + c.bytes, 0),
    ranges: rest.flatMap((c) => c.ranges),
  });
  const pct = (n, d) => `${(100 * n / d).toFixed(1)} %`;
  const twiggy = twiggyCheck(twinPath, names, imported, bodies);
  console.log(`size by crate (${twinPath}: names kept${check ? `, ${check}` : ""}):`);
  console.log("");
  console.log("| crate | functions | code bytes | share of code | gzip cost | gzip alone |");
  console.log("|---|--:|--:|--:|--:|--:|");
  for (const r of rows) {
    console.log(`| ${r.label} | ${fmt(r.fns)} | ${fmt(r.bytes)} | ${pct(r.bytes, codeBytes)} | ${fmt(gzAll - gz(without(r.ranges)))} | ${fmt(alone(r.ranges))} |`);
  }
  const other = (pred) => sections.filter(pred).reduce((a, s) => a + s.end - s.start, 0);
  const dataBytes = other((s) => s.id === 11);
  const restBytes = ship.length - codeBytes - dataBytes;
  const codeGz = gzAll - gz(Buffer.concat(sections.filter((s) => !isDebug(s) && s.id !== 10).map((s) => buf.subarray(s.start, s.end))));
  const dataGz = gzAll - gz(Buffer.concat(sections.filter((s) => !isDebug(s) && s.id !== 11).map((s) => buf.subarray(s.start, s.end))));
  console.log(`| all code (${fmt(bodies.length)} functions) | ${fmt(bodies.length)} | ${fmt(codeBytes)} | 100 % | ${fmt(codeGz)} | ${fmt(gz(buf.subarray(codeSection.start, codeSection.end)))} |`);
  console.log(`| data section (constants, tables; no per-crate names) | — | ${fmt(dataBytes)} | — | ${fmt(dataGz)} | ${fmt(gz(Buffer.concat(sections.filter((s) => s.id === 11).map((s) => buf.subarray(s.start, s.end)))))} |`);
  console.log(`| header, types, imports, exports, tables, other sections | — | ${fmt(restBytes)} | — | — | — |`);
  console.log(`| **module as shipped** | | **${fmt(ship.length)}** | | **${fmt(gzAll)}** (node zlib -9) | |`);
  console.log("");
  console.log(twiggy);
}

main();
