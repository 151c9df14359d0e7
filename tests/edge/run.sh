#!/usr/bin/env bash
# The storage adapters (js/memory-storage.js, durable-object.js, deno-kv.js, sqlite.js)
# against the contract suite (tests/edge/contract.mjs) in each runtime, pinned in
# tests/edge/package.json:
#   1. Node: memory-storage (plain and with Deno KV's limits emulated);
#   2. Deno: deno-kv on Deno.openKv(<temp file>), sqlite on node:sqlite;
#   3. Bun: sqlite on bun:sqlite (a temp file), memory-storage;
#   4. workerd (miniflare): durable-object on a KV-backed and a SQLite-backed Durable
#      Object, persisted to a temp dir, read back after a miniflare restart; syncAlarm.
#   5. tsc -p tests/edge: the adapters' .d.ts with lib ES2023 only (tsc from tests/ts);
#   5b. the Rust store conformance suite, compiled to wasm (tests/edge/conformance_wasm.rs),
#      on Deno KV and node:sqlite (Deno), bun:sqlite (Bun) and KV- and SQLite-backed
#      Durable Objects (workerd): every case on a fresh prefix or table;
#   6. scenario.mjs: the crash scenario on the built package (pkg/) in Deno (deno-kv), Bun
#      (bun:sqlite) and workerd (examples/worker-durable-object in miniflare) against a
#      nostr-rs-relay started down then up, the runtime SIGKILLed mid-flush; and an outbox
#      used by two requests in a row in workerd. Uses tests/e2e's packages (relay harness,
#      nostr-tools, ws, esbuild).
#   6b. schedule-workerd.mjs: the example's Durable Object in workerd: a scheduled post
#      sent by its alarm alone at its time, an undo (cancel) and a reschedule; with the relay
#      down, 50 records wake the object at most 10 times in 10 s.
#   6c. relay-info.mjs: NIP-11 limits checked before sending, with Deno's and Bun's own
#      fetch, against the fault relay's documents (a stated limit, a hostile document).
#   7. transfer.mjs: export and import on Deno KV (Deno) and bun:sqlite (Bun) against an
#      export the browser build wrote from IndexedDB.
# Prints every test line and one libtest-style summary line. 1-5 need no package (5b builds
# its wasm module with cargo and wasm-bindgen: run with scripts/env.sh sourced).
set -uo pipefail
cd "$(dirname "$0")"
if [ ! -x node_modules/.bin/deno ] || [ ! -x node_modules/.bin/bun ] || [ ! -d node_modules/miniflare ] \
   || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund >/dev/null || {
    echo "npm ci in tests/edge failed" >&2
    echo "test result: FAILED. 0 passed; 1 failed"
    exit 1
  }
fi
bin="$PWD/node_modules/.bin"
passed=0
failed=0
# runner NAME CMD…: runs CMD (a script printing "test … ok|FAILED" lines), counts its lines;
# a runner that exits non-zero without a FAILED line counts as one failure.
runner() {
  local name="$1"; shift
  local out rc p f
  out="$(mktemp)"
  timeout 120 "$@" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  p=$(grep -acE '^test .* \.\.\. ok$' "$out")
  f=$(grep -acE '^test .* \.\.\. FAILED$' "$out")
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
    echo "test $name ... FAILED"
    echo "  $name exited with $rc"
    f=1
  fi
  passed=$((passed + p))
  failed=$((failed + f))
  rm -f "$out"
}
runner node node node.mjs
runner deno "$bin/deno" run --no-prompt --unstable-kv --allow-read --allow-write --allow-env deno.mjs
runner bun "$bin/bun" run bun.mjs
runner workerd node workerd.mjs
# The Rust store conformance suite (tests/edge/conformance_wasm.rs) on each real adapter.
target="${CARGO_TARGET_DIR:-$PWD/../../target}"
conf="$target/conformance-wasm"
if (cd ../.. && cargo build -q --locked --example conformance_wasm --target wasm32-unknown-unknown --all-features) \
   && wasm-bindgen --target web --out-dir "$conf" "$target/wasm32-unknown-unknown/debug/examples/conformance_wasm.wasm"; then
  runner conformance-deno "$bin/deno" run --no-prompt --unstable-kv --allow-read --allow-write --allow-env conformance-deno.mjs "$conf"
  runner conformance-bun "$bin/bun" run conformance-bun.mjs "$conf"
  runner conformance-workerd node conformance-workerd.mjs
else
  echo "test conformance::build ... FAILED"; failed=$((failed + 1))
fi
if [ ! -x ../ts/node_modules/.bin/tsc ]; then
  (cd ../ts && npm ci --no-audit --no-fund >/dev/null) || echo "npm ci in tests/ts failed" >&2
fi
if ../ts/node_modules/.bin/tsc -p .; then
  echo "test types::adapters_declarations ... ok"; passed=$((passed + 1))
else
  echo "test types::adapters_declarations ... FAILED"; failed=$((failed + 1))
fi
if [ ! -d ../e2e/node_modules/nostr-tools ] || [ ! -d ../e2e/node_modules/esbuild ]; then
  (cd ../e2e && npm ci --no-audit --no-fund >/dev/null) || echo "npm ci in tests/e2e failed" >&2
fi
runner scenario node scenario.mjs
runner schedule-workerd node schedule-workerd.mjs
runner relay-info node relay-info.mjs
# 7. transfer.mjs: an export written from IndexedDB imported into Deno KV and bun:sqlite and
#    exported back the same (tests/data/export_v1.ndjson; needs pkg/).
runner transfer-deno "$bin/deno" run --no-prompt --unstable-kv --allow-read --allow-write --allow-env transfer.mjs
runner transfer-bun "$bin/bun" run transfer.mjs
if [ "$failed" = 0 ]; then
  echo "test result: ok. $passed passed; $failed failed"
else
  echo "test result: FAILED. $passed passed; $failed failed"
  exit 1
fi
