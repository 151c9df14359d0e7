// What `npm pack` would publish from pkg/: every file package.json points at (main, types,
// every `exports` target), every file a shipped module imports relatively, the licence
// texts and the README; and no placeholder `repository`. Exits non-zero with the reason.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, dirname, posix } from "node:path";
import { fileURLToPath } from "node:url";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "../../pkg");
const [packed] = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: pkgDir, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
const files = new Set(packed.files.map((f) => f.path));
const manifest = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const problems = [];
const need = (path, why) => {
  const p = posix.normalize(path.replace(/^\.\//, ""));
  if (!files.has(p)) problems.push(`${p} (${why}) is not in the tarball`);
};

need(manifest.main, "main");
need(manifest.types, "types");
const targets = (value) => (typeof value === "string" ? [value] : Object.values(value).flatMap(targets));
for (const [subpath, value] of Object.entries(manifest.exports)) for (const t of targets(value)) need(t, `exports["${subpath}"]`);
for (const f of ["README.md", "LICENSE-MIT", "LICENSE-APACHE", "package.json"]) need(f, "needed by users");
for (const f of files) {
  if (!/\.(m?js|d\.ts)$/.test(f)) continue;
  const text = readFileSync(join(pkgDir, f), "utf8");
  for (const [, spec] of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    need(posix.join(posix.dirname(f), spec), `imported by ${f}`);
  }
  for (const [, spec] of text.matchAll(/new URL\(\s*["']([^"']+)["']\s*,\s*import\.meta\.url/g)) {
    need(posix.join(posix.dirname(f), spec), `fetched by ${f}`);
  }
}
const repo = manifest.repository?.url ?? manifest.repository;
if (repo !== undefined && (typeof repo !== "string" || /\.invalid\b|example\./.test(repo))) problems.push(`repository is a placeholder: ${JSON.stringify(repo)}`);
if (manifest.license !== "MIT OR Apache-2.0") problems.push(`license is ${manifest.license}`);

if (problems.length) {
  console.error(`npm pack: ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log(`npm pack: ${files.size} files, ${packed.size} bytes packed, ${packed.unpackedSize} unpacked; every entry, import and licence present`);
