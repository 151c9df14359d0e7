// A private web root for the torture suite: a copy of the built package (pkg/ is shared
// build output that other work may rebuild at any moment, and a run spans many browser
// restarts that must all load the same build) and of the pages and service worker the
// suite serves (tests/e2e/pages/, tests/e2e/torture/).
import { cp, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../harness.mjs";

const FILES = ["package.json", "index.js", "nostr_outbox.js", "nostr_outbox_bg.wasm"];

async function complete(dir) {
  try {
    for (const f of FILES) if (!(await stat(join(dir, f))).size) return false;
    // package.json is written last by scripts/build.sh.
    return (await stat(join(dir, "package.json"))).mtimeMs >= (await stat(join(dir, "nostr_outbox_bg.wasm"))).mtimeMs;
  } catch {
    return false;
  }
}

/** Copies pkg/ (waiting up to 10 minutes for a build in progress) into a temp root. */
export async function snapshotRoot() {
  const until = Date.now() + 10 * 60_000;
  const root = await mkdtemp(join(tmpdir(), "outbox-torture-root-"));
  for (;;) {
    if (await complete(join(ROOT, "pkg"))) {
      await rm(join(root, "pkg"), { recursive: true, force: true });
      await cp(join(ROOT, "pkg"), join(root, "pkg"), { recursive: true, preserveTimestamps: true });
      if (await complete(join(root, "pkg"))) break;
    }
    if (Date.now() > until) throw new Error("pkg/ is missing or incomplete: build it with `. scripts/env.sh && bash scripts/build.sh`");
    await new Promise((r) => setTimeout(r, 2000));
  }
  for (const dir of ["tests/e2e/pages", "tests/e2e/torture"]) {
    await cp(join(ROOT, dir), join(root, dir), { recursive: true });
  }
  return { root, remove: () => rm(root, { recursive: true, force: true }) };
}
