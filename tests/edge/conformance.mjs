// The store conformance suite (src/store/conformance.rs, compiled to wasm by
// tests/edge/conformance_wasm.rs) on a real storage adapter, in whatever runtime imports
// this module: every case on a fresh, empty adapter from `makeAdapter(i)` (a new
// prefix or table on one backend). Prints `test <label>::conformance::<case> ... ok|FAILED`
// lines; returns the counts. Runtime-agnostic (no node: imports).

/**
 * @param {{ cases(): string[], runCase(name: string, adapter: object): Promise<void>, lastPanic(): string }} mod
 * @param {(i: number) => object | Promise<object>} makeAdapter
 * @param {(line: string) => void} print
 * @param {string} label
 */
export async function runConformance(mod, makeAdapter, print, label) {
  let passed = 0;
  let failed = 0;
  const names = mod.cases();
  if (names.length < 20) throw new Error(`only ${names.length} conformance cases`);
  for (const [i, name] of names.entries()) {
    const test = `${label}::conformance::${name}`;
    try {
      await mod.runCase(name, await makeAdapter(i));
      passed++;
      print(`test ${test} ... ok`);
    } catch (err) {
      failed++;
      print(`test ${test} ... FAILED`);
      print(`  ${mod.lastPanic() || (err && err.stack) || err}`);
    }
  }
  return { passed, failed };
}
