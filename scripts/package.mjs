#!/usr/bin/env node
// Turns wasm-pack's pkg/ (web target) into the npm package `nostr-outbox`:
// - index.js / index.d.ts: the entry. Re-exports the generated module and the
//   OutboxError class from its snippet, so `err instanceof OutboxError` works.
// - package.json: ESM `exports` for browsers, workers and bundlers (one ES module that
//   loads the .wasm with `new URL(..., import.meta.url)`), `types`, `files`,
//   `sideEffects` (only index.js and publish.js have any), and the .wasm exported for precaching.
// - the low-level `InitOutput` declarations use `unknown` instead of `any`.
// - js/*.js and js/*.d.ts are copied next to it: transfer.js (installs `outbox.export` and
//   `outbox.import`; imported by index.js, and the entry `nostr-outbox/transfer`), groups.js
//   (installs `outbox.cancelGroup` and `outbox.retryGroup`; imported by index.js), publish.js (installs `outbox.publish`,
//   nostr-tools' per-relay promises; imported by index.js) and one entry per adapter
//   (`nostr-outbox/nostr-tools`, `/applesauce`, `/ndk`, `/welshman`, and the storage adapters
//   `/memory-storage`, `/durable-object`, `/deno-kv`, `/sqlite`), and the UI entries
//   (`/store`: a store with `subscribe`/`getSnapshot`; `/react`: `useOutbox`, react a peer;
//   `/svelte`: a readable store; `/inspector`: the <nostr-outbox-inspector> element; `/stages`:
//   the record stages as lists, which groups.js, publish.js and inspector.js import), each in `exports`; a lone .d.ts (storage-adapter.d.ts) is a
//   types-only entry.
// - edge/ (when scripts/build.sh built it): the edge build (storage adapters, no
//   IndexedDB) with its own entry, whose `init()` reads the .wasm file where `fetch`
//   cannot (Node, Bun, Deno) and says what to pass where there is no module URL
//   (workerd). `exports` send the `workerd`, `deno`, `bun` and `node` conditions there;
//   `nostr-outbox/browser` and `nostr-outbox/edge` name a build explicitly.
// Usage: node scripts/package.mjs [pkgDir]   (default: pkg)
import { readFileSync, writeFileSync, readdirSync, existsSync, copyFileSync } from "node:fs";
import { join, relative, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const dir = process.argv[2] || "pkg";
const base = "nostr_outbox";
const fail = (msg) => {
  console.error(`package.mjs: ${msg}`);
  process.exit(1);
};

for (const f of [`${base}.js`, `${base}.d.ts`, `${base}_bg.wasm`, "package.json"]) {
  if (!existsSync(join(dir, f))) fail(`${join(dir, f)} is missing; run wasm-pack build first`);
}

// The snippet that defines OutboxError (its directory name carries a hash).
function find(root, suffix) {
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    const p = join(root, entry.name);
    if (entry.isDirectory()) {
      const hit = find(p, suffix);
      if (hit) return hit;
    } else if (p.endsWith(suffix)) {
      return p;
    }
  }
  return null;
}
const errorSnippet = existsSync(join(dir, "snippets"))
  ? find(join(dir, "snippets"), join("src", "js", "error.js"))
  : null;
if (!errorSnippet) fail("snippets/**/src/js/error.js not found");
const errorPath = "./" + relative(dir, errorSnippet).split("\\").join("/");
// src/js/relay_info.js (NIP-11, imported by the .wasm's glue): its `relayInformation`
// is part of the entry, from the same module instance the transport uses.
const infoPath = errorPath.replace(/error\.js$/, "relay_info.js");
if (!existsSync(join(dir, infoPath))) fail("snippets/**/src/js/relay_info.js not found");
const RELAY_INFO_DTS = `
/** What the outbox knows of a relay's NIP-11 information document (see docs/API.md). */
export interface RelayInformation {
  /** The relay, as \`normalizeRelayUrl\` returns it. */
  url: string;
  /** When it was fetched (unix ms). */
  fetchedAt: number;
  /** \`ok\`; \`missing\` (not served); \`invalid\` (too large, not JSON, not an object); \`failed\` (unreachable, timed out). Only \`ok\` is checked against. */
  status: "ok" | "missing" | "invalid" | "failed";
  /** The document as served, when \`ok\`. */
  document: Record<string, unknown> | null;
  /** The limits taken from \`limitation\` (a non-negative integer or a boolean each; 0 is none). */
  limits: {
    max_message_length?: number;
    max_event_tags?: number;
    max_content_length?: number;
    min_pow_difficulty?: number;
    created_at_lower_limit?: number;
    created_at_upper_limit?: number;
    auth_required?: boolean;
    payment_required?: boolean;
    restricted_writes?: boolean;
  };
  /** What was ignored, and why. */
  notes: string[];
}
/**
 * A relay's NIP-11 information document as the outbox keeps it (the Cache API where the
 * runtime has one, else memory), fetched when none is kept younger than \`maxAgeMs\`
 * (default one hour) within \`timeoutMs\` (default 5000). Never rejects for the relay's
 * sake; a URL that is not ws:// or wss://, or a bound that is not a non-negative number,
 * is a \`TypeError\`.
 */
export function relayInformation(url: string, options?: { maxAgeMs?: number; timeoutMs?: number }): Promise<RelayInformation>;
/** Where the outbox keeps relays' information documents, instead of the Cache API or memory. */
export interface RelayInformationStore {
  get(url: string): string | undefined | null | Promise<string | undefined | null>;
  set(url: string, text: string): void | Promise<void>;
}
/**
 * Keeps relays' NIP-11 documents in the app's store (a Deno KV, a SQLite table, a Durable
 * Object's storage), shared by every process of the app; \`null\` goes back to the Cache API
 * (or memory). What is read back is checked again; a store that throws means memory only.
 * Anything else is a \`TypeError\`.
 */
export function setRelayInformationStore(store: RelayInformationStore | null): void;
`;

// The JavaScript parts: publish.js and the adapters (js/ of the repository).
const jsDir = join(dirname(fileURLToPath(import.meta.url)), "..", "js");
const jsFiles = readdirSync(jsDir).filter((f) => f.endsWith(".js") || f.endsWith(".d.ts")).sort();
for (const f of jsFiles) copyFileSync(join(jsDir, f), join(dir, f));
const adapters = jsFiles
  .filter((f) => f.endsWith(".js") && f !== "publish.js")
  .map((f) => f.slice(0, -3));
for (const a of adapters) {
  if (!jsFiles.includes(`${a}.d.ts`)) fail(`js/${a}.js has no js/${a}.d.ts`);
}
// A .d.ts with no .js beside it is types only: storage-adapter.d.ts (the storage adapter
// contract) becomes the types-only entry `nostr-outbox/storage-adapter`; wasm-url.d.ts
// types the .wasm entry below. Both are copied and listed in `files` like the others.
const typesOnly = jsFiles
  .filter((f) => f.endsWith(".d.ts") && !jsFiles.includes(f.slice(0, -5) + ".js") && f !== "wasm-url.d.ts")
  .map((f) => f.slice(0, -5));

writeFileSync(
  join(dir, "index.js"),
  `// nostr-outbox: call \`await init()\` once, then use Outbox (see docs/API.md).
export * from "./${base}.js";
export { default } from "./${base}.js";
export { OutboxError } from "${errorPath}";
export { relayInformation, setRelayInformationStore } from "${infoPath}";
export * from "./publish.js"; // PublishError; also adds Outbox.prototype.publish
import "./transfer.js"; // adds Outbox.prototype.export and .import
import "./groups.js"; // adds Outbox.prototype.cancelGroup and .retryGroup
`,
);
writeFileSync(
  join(dir, "index.d.ts"),
  `export * from "./${base}.js";
export { default } from "./${base}.js";
export * from "./publish.js";
${RELAY_INFO_DTS}`,
);

// The edge build: the same entry over its own generated module, and the files that
// import the generated module (publish.js and the publishing adapters) beside it.
const edgeDir = join(dir, "edge");
const hasEdge = existsSync(join(edgeDir, `${base}_bg.wasm`));
const importsWasm = (f) =>
  f.endsWith(".js") && /from "\.\/(publish|nostr_outbox)\.js"/.test(readFileSync(join(jsDir, f), "utf8"));
const wasmBound = jsFiles.filter((f) => importsWasm(f)).map((f) => f.slice(0, -3));
if (hasEdge) {
  const edgeSnippet = find(join(edgeDir, "snippets"), join("src", "js", "error.js"));
  if (!edgeSnippet) fail("edge/snippets/**/src/js/error.js not found");
  const edgeErrorPath = "./" + relative(edgeDir, edgeSnippet).split("\\").join("/");
  const edgeInfoPath = edgeErrorPath.replace(/error\.js$/, "relay_info.js");
  // And what they import from beside them that does not import the generated module
  // (routers.js, re-exported by the library adapters), so edge/ resolves every import.
  const besides = new Set(wasmBound);
  for (const a of wasmBound) {
    for (const [, dep] of readFileSync(join(jsDir, `${a}.js`), "utf8").matchAll(/from "\.\/([a-z-]+)\.js"/g)) {
      if (dep !== base && jsFiles.includes(`${dep}.js`)) besides.add(dep);
    }
  }
  for (const a of besides) {
    copyFileSync(join(jsDir, `${a}.js`), join(edgeDir, `${a}.js`));
    copyFileSync(join(jsDir, `${a}.d.ts`), join(edgeDir, `${a}.d.ts`));
  }
  writeFileSync(
    join(edgeDir, "index.js"),
    `// nostr-outbox, edge build (Cloudflare Workers, Deno, Bun, Node): storage adapters and
// memory, no IndexedDB. Call \`await init()\` once (in workerd: \`init({ module_or_path })\`
// with the imported .wasm module), then use Outbox (see docs/API.md).
import initWasm from "./${base}.js";
import { OutboxError } from "${edgeErrorPath}";
export * from "./${base}.js";
export { OutboxError };
export { relayInformation, setRelayInformationStore } from "${edgeInfoPath}";
export * from "./publish.js"; // PublishError; also adds Outbox.prototype.publish
import "./transfer.js"; // adds Outbox.prototype.export and .import
import "./groups.js"; // adds Outbox.prototype.cancelGroup and .retryGroup

/** Loads the .wasm: given a module, bytes, a URL or a response, that; else the file
 * beside this module (read from disk where \`fetch\` cannot read \`file:\` URLs). */
export default async function init(input) {
  if (input === undefined || input === null) {
    const url = import.meta.url;
    if (typeof url !== "string" || !/^(file|https?):/.test(url)) {
      throw new OutboxError(
        "init_failed",
        "this runtime gives modules no URL (Cloudflare Workers): import the .wasm " +
          "(import wasm from 'nostr-outbox/edge/${base}_bg.wasm') and call init({ module_or_path: wasm })",
      );
    }
    // Node and Bun cannot fetch a file: URL: read the file (no import of node:fs, which
    // bundlers and workerd's module loader would try to resolve). Deno fetches it.
    const builtin = globalThis.process?.getBuiltinModule;
    if (url.startsWith("file:") && typeof builtin === "function") {
      const { readFileSync } = builtin("node:fs");
      input = { module_or_path: readFileSync(new URL("./${base}_bg.wasm", url)) };
    }
  }
  return initWasm(input);
}
`,
  );
  writeFileSync(join(edgeDir, "index.d.ts"), readFileSync(join(dir, "index.d.ts"), "utf8"));
}

// No `any` in the published declarations: the raw wasm exports become `unknown`.
for (const d of hasEdge ? [dir, edgeDir] : [dir]) {
  const dtsPath = join(d, `${base}.d.ts`);
  let dts = readFileSync(dtsPath, "utf8");
  dts = dts.replace(/export interface InitOutput \{[\s\S]*?\n\}/, (block) =>
    block.replace(/\bany\b/g, "unknown"),
  );
  // Without lib.dom: `RequestInfo` and `BufferSource` are DOM type aliases (which
  // cannot be stood in for); spelled out, the rest merges (types.rs, `declare global`).
  dts = dts
    .replace(/\bRequestInfo\b/g, "Request | string")
    .replace(/\bBufferSource\b/g, "ArrayBufferView | ArrayBuffer");
  if (/:\s*any\b|<any>|\bany\[\]/.test(dts)) fail(`${dtsPath} still mentions \`any\``);
  writeFileSync(dtsPath, dts);
  const bgDts = join(d, `${base}_bg.wasm.d.ts`);
  if (existsSync(bgDts)) {
    writeFileSync(bgDts, readFileSync(bgDts, "utf8").replace(/\bany\b/g, "unknown"));
  }
}

const generated = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
// The licence texts (Cargo.toml: MIT OR Apache-2.0) travel in the tarball.
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const licenses = ["LICENSE-MIT", "LICENSE-APACHE"];
for (const f of licenses) {
  if (!existsSync(join(root, f))) fail(`${f} is missing at the repository root`);
  copyFileSync(join(root, f), join(dir, f));
}
// No placeholder repository in the published metadata: a real URL or none.
const repoUrl = generated.repository?.url ?? generated.repository;
const repository = typeof repoUrl === "string" && !/\.invalid\b|example\./.test(repoUrl) ? generated.repository : undefined;
// The runtimes that get the edge build (their resolvers set these conditions).
function edgeConditions(target) {
  return hasEdge ? { workerd: target, deno: target, bun: target, node: target } : {};
}
const pkg = {
  name: "nostr-outbox",
  version: generated.version,
  description: generated.description,
  license: generated.license,
  repository,
  keywords: generated.keywords,
  type: "module",
  main: "./index.js",
  module: "./index.js",
  types: "./index.d.ts",
  exports: {
    ".": {
      types: "./index.d.ts",
      ...edgeConditions("./edge/index.js"),
      browser: "./index.js",
      worker: "./index.js",
      import: "./index.js",
      default: "./index.js",
    },
    "./browser": { types: "./index.d.ts", default: "./index.js" },
    ...(hasEdge ? { "./edge": { types: "./edge/index.d.ts", default: "./edge/index.js" } } : {}),
    ...Object.fromEntries(
      adapters.map((a) => [
        `./${a}`,
        {
          types: `./${a}.d.ts`,
          ...(wasmBound.includes(a) ? edgeConditions(`./edge/${a}.js`) : {}),
          default: `./${a}.js`,
        },
      ]),
    ),
    ...Object.fromEntries(typesOnly.map((t) => [`./${t}`, { types: `./${t}.d.ts` }])),
    // The .wasm itself (precaching, esbuild's file loader); its types: a URL string.
    [`./${base}_bg.wasm`]: { types: "./wasm-url.d.ts", default: `./${base}_bg.wasm` },
    ...(hasEdge
      ? { [`./edge/${base}_bg.wasm`]: { types: "./wasm-url.d.ts", default: `./edge/${base}_bg.wasm` } }
      : {}),
    "./package.json": "./package.json",
  },
  files: [
    "index.js",
    "index.d.ts",
    `${base}.js`,
    `${base}.d.ts`,
    `${base}_bg.wasm`,
    `${base}_bg.wasm.d.ts`,
    "snippets/",
    ...(hasEdge ? ["edge/"] : []),
    ...jsFiles,
    "README.md",
    ...licenses,
  ],
  // index.js and publish.js add `publish` to Outbox.prototype, transfer.js `export` and
  // `import`, groups.js `cancelGroup` and `retryGroup`; inspector.js defines the
  // <nostr-outbox-inspector> element; everything else is pure.
  sideEffects: ["./index.js", "./publish.js", "./transfer.js", "./groups.js", "./inspector.js", "./edge/index.js", "./edge/publish.js", "./edge/transfer.js", "./edge/groups.js"],
  // Only nostr-outbox/ndk imports its library (NDKPublishError, calculateRelaySetFromEvent)
  // and nostr-outbox/react React (useSyncExternalStore, React 18 or later), which an app
  // using them already has; the other entries import nothing of theirs (svelte included).
  peerDependencies: { "@nostr-dev-kit/ndk": ">=3 <4", react: ">=18" },
  peerDependenciesMeta: { "@nostr-dev-kit/ndk": { optional: true }, react: { optional: true } },
};
writeFileSync(join(dir, "package.json"), JSON.stringify(pkg, null, 2) + "\n");
console.log(`package: ${pkg.name}@${pkg.version} (${dir}/index.js, exports, types)`);
