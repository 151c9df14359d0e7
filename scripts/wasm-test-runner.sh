#!/usr/bin/env bash
# cargo's runner for the wasm32 test binaries (CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER,
# set by scripts/browser-test.sh): wasm-bindgen-test-runner, retried only when the browser
# never started the tests.
#
# Why: wasm-bindgen-test-runner 0.2.130's service-worker mode sometimes never gets its
# worker going (seen here about 1 run in 5, in Chromium and Firefox alike: the page stays at
# "Loading Wasm module...", Firefox logs "ServiceWorker script ... threw an exception during
# script evaluation", the runner waits WASM_BINDGEN_TEST_TIMEOUT and prints "Failed to
# detect test as having been run"). No test of ours has run at that point, so it is a
# harness start-up failure, not a verdict. A run that printed "running N tests" is never
# retried: a test that fails or hangs fails the tier.
set -uo pipefail
runner="${WASM_BINDGEN_TEST_RUNNER_BIN:-wasm-bindgen-test-runner}"
attempts="${OUTBOX_HARNESS_ATTEMPTS:-3}"
rc=1
for ((i = 1; i <= attempts; i++)); do
  out="$(mktemp)"
  "$runner" "$@" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ] || grep -qE '^running [0-9]+ tests?$' "$out" \
     || ! grep -q 'Failed to detect test as having been run' "$out"; then
    rm -f "$out"
    exit "$rc"
  fi
  rm -f "$out"
  echo "wasm-test-runner: harness start-up failure in $(basename "${1:-?}"): the browser never started the tests (attempt $i of $attempts)"
done
exit "$rc"
