#!/usr/bin/env bash
# cargo's runner for the wasm32 test binaries (CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER,
# set by scripts/browser-test.sh): wasm-bindgen-test-runner, retried only when the browser
# never started the tests.
#
# Why: wasm-bindgen-test-runner 0.2.130's service-worker mode sometimes never gets its
# worker going (seen here in about 1 run in 3 to 1 in 5 on a loaded machine, in Chromium
# and Firefox alike: the page stays at "Loading Wasm module...", Firefox logs
# "ServiceWorker script ... threw an exception during script evaluation", and the runner
# waits WASM_BINDGEN_TEST_TIMEOUT, then prints "Failed to detect test as having been
# run"). No test of ours has run at that point, so it is a harness start-up failure, not
# a verdict. This wrapper watches the output: when the runner has not printed
# "running N tests" within OUTBOX_HARNESS_START_S seconds (default 90), it stops the
# runner with its driver and browser (their own process group) and starts it again, at
# most OUTBOX_HARNESS_ATTEMPTS times (default 5). A run that printed "running N tests" is
# never retried: a test that fails or hangs fails the tier.
set -uo pipefail
runner="${WASM_BINDGEN_TEST_RUNNER_BIN:-wasm-bindgen-test-runner}"
attempts="${OUTBOX_HARNESS_ATTEMPTS:-5}"
start_deadline="${OUTBOX_HARNESS_START_S:-90}"
started_re='^running [0-9]+ tests?$'
rc=1
for ((i = 1; i <= attempts; i++)); do
  out="$(mktemp)"
  # Its own session and process group, so a stop takes the driver and browser along.
  setsid "$runner" "$@" >"$out" 2>&1 &
  pid=$!
  tail -n +1 -f --pid="$pid" "$out" &
  tail_pid=$!
  started=0
  stopped=0
  waited=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$started" = 0 ] && grep -qE "$started_re" "$out"; then started=1; fi
    if [ "$started" = 0 ] && [ "$waited" -ge "$start_deadline" ]; then
      kill -TERM -- "-$pid" 2>/dev/null
      sleep 3
      kill -KILL -- "-$pid" 2>/dev/null
      stopped=1
      break
    fi
    sleep 1
    waited=$((waited + 1))
  done
  wait "$pid"
  rc=$?
  wait "$tail_pid" 2>/dev/null
  grep -qE "$started_re" "$out" && started=1
  never_started=0
  if [ "$started" = 0 ] && { [ "$stopped" = 1 ] || grep -q 'Failed to detect test as having been run' "$out"; }; then
    never_started=1
  fi
  rm -f "$out"
  if [ "$rc" = 0 ] || [ "$never_started" = 0 ]; then
    exit "$rc"
  fi
  echo "wasm-test-runner: harness start-up failure in $(basename "${1:-?}"): the browser never started the tests (attempt $i of $attempts)"
  rc=1
done
exit "$rc"
