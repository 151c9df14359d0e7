// Figure 7: what a user downloads. Our package as built in pkg/ (the .wasm and its JS
// glue), next to peers measured from the npm registry: nostr-tools and NDK bundled by
// esbuild (minified, browser, ESM, tree-shaken to what publishing needs), and
// @rust-nostr/nostr-sdk as published (its wasm ships gzipped and base64-encoded inside a
// JS file). Peers live in tests/e2e/bench/sizes/ (own package.json and lock, `npm ci` on
// first use) so the end-to-end tests do not install NDK's 100+ MiB of dependencies.
import { readFile, readdir, writeFile, mkdtemp, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join, dirname } from "node:path";
import { tmpdir } from "node:os";
import { gzipSync, gunzipSync, brotliCompressSync, constants } from "node:zlib";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { ROOT } from "../harness.mjs";

const HERE = join(dirname(fileURLToPath(import.meta.url)), "sizes");
const gz = (buf) => gzipSync(buf, { level: 9 }).length;
const br = (buf) => brotliCompressSync(buf, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length;

async function filesUnder(dir, ext) {
  const out = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p, ext)));
    else if (e.name.endsWith(ext)) out.push(p);
  }
  return out;
}

function row(what, buf, note) {
  return { what, raw: buf.length, gzip: gz(buf), brotli: br(buf), note };
}

/** Every JS file a browser loads from pkg/: index.js, the glue, the snippets. */
async function ourGlue(pkg) {
  const files = [join(pkg, "index.js"), join(pkg, "nostr_outbox.js"), ...(await filesUnder(join(pkg, "snippets"), ".js"))];
  const bufs = await Promise.all(files.map((f) => readFile(f)));
  // Gzipped one by one (each is its own HTTP response), summed.
  return { files: files.length, raw: bufs.reduce((a, b) => a + b.length, 0), gzip: bufs.reduce((a, b) => a + gz(b), 0), brotli: bufs.reduce((a, b) => a + br(b), 0) };
}

async function bundle(esbuild, source, name) {
  const dir = await mkdtemp(join(tmpdir(), "outbox-size-"));
  try {
    const entry = join(HERE, `.entry-${name}.mjs`);
    await writeFile(entry, source);
    const out = join(dir, `${name}.js`);
    await esbuild.build({ entryPoints: [entry], bundle: true, minify: true, format: "esm", platform: "browser", outfile: out, logLevel: "silent", absWorkingDir: HERE });
    await rm(entry);
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `pkg`: the built package directory to measure (default pkg/). */
export async function sizes(pkg = join(ROOT, "pkg")) {
  const rows = [];
  const wasm = await readFile(join(pkg, "nostr_outbox_bg.wasm"));
  rows.push(row("nostr-outbox: nostr_outbox_bg.wasm (as built, wasm-opt -Oz)", wasm));
  const glue = await ourGlue(pkg);
  rows.push({ what: `nostr-outbox: JS (index.js + glue + ${glue.files - 2} snippets, unminified)`, ...glue });
  rows.push({ what: "nostr-outbox: total", raw: rows[0].raw + glue.raw, gzip: rows[0].gzip + glue.gzip, brotli: rows[0].brotli + glue.brotli });

  if (!existsSync(join(HERE, "node_modules"))) {
    console.log("   (installing peers for the size comparison: npm ci in tests/e2e/bench/sizes)");
    execFileSync("npm", ["ci", "--silent", "--no-audit", "--no-fund"], { cwd: HERE, stdio: "inherit" });
  }
  const lock = JSON.parse(await readFile(join(HERE, "package-lock.json"), "utf8"));
  const version = (name) => lock.packages?.[`node_modules/${name}`]?.version ?? "?";
  const { default: esbuild } = await import(join(HERE, "node_modules", "esbuild", "lib", "main.js"));

  const ntPublish = await bundle(esbuild, 'export { verifyEvent } from "nostr-tools/pure";\nexport { Relay } from "nostr-tools/relay";\n', "nt-relay");
  rows.push(row(`nostr-tools ${version("nostr-tools")}: pure + relay (esbuild, minified)`, ntPublish, "verifyEvent + Relay"));
  const ntPool = await bundle(esbuild, 'export { finalizeEvent, verifyEvent } from "nostr-tools/pure";\nexport { Relay } from "nostr-tools/relay";\nexport { SimplePool } from "nostr-tools/pool";\n', "nt-pool");
  rows.push(row(`nostr-tools ${version("nostr-tools")}: pure + relay + pool (esbuild, minified)`, ntPool, "+ finalizeEvent, SimplePool"));
  const ndk = await bundle(esbuild, 'export { default as NDK, NDKEvent, NDKRelaySet } from "@nostr-dev-kit/ndk";\n', "ndk");
  rows.push(row(`@nostr-dev-kit/ndk ${version("@nostr-dev-kit/ndk")}: NDK + NDKEvent + NDKRelaySet (esbuild, minified)`, ndk));

  const sdkDir = join(HERE, "node_modules", "@rust-nostr", "nostr-sdk", "pkg");
  const sdkGlue = await readFile(join(sdkDir, "nostr_sdk_js.js"));
  const sdkWasmJs = await readFile(join(sdkDir, "nostr_sdk_js_bg.wasm.js"));
  rows.push(row(`@rust-nostr/nostr-sdk ${version("@rust-nostr/nostr-sdk")}: nostr_sdk_js.js (JS glue, as published)`, sdkGlue));
  rows.push(row(`@rust-nostr/nostr-sdk ${version("@rust-nostr/nostr-sdk")}: nostr_sdk_js_bg.wasm.js (base64 gzip wasm)`, sdkWasmJs, "as published"));
  const b64 = /`([A-Za-z0-9+/=\s]+)`/.exec(sdkWasmJs.toString("latin1"));
  if (b64) {
    const inner = Buffer.from(b64[1].replace(/\s+/g, ""), "base64");
    const sdkWasm = inner[0] === 0x1f && inner[1] === 0x8b ? gunzipSync(inner) : inner;
    rows.push(row(`@rust-nostr/nostr-sdk ${version("@rust-nostr/nostr-sdk")}: the wasm inside, decoded`, sdkWasm));
  }
  return { rows };
}
