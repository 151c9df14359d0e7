#!/usr/bin/env bash
# How often WebKitGTK's wasm engine miscomputes in a test binary: runs one wasm test
# binary N times through scripts/browser-test.sh webkit (each run a fresh MiniBrowser
# session), with the runner's engine-fault retries off (OUTBOX_WEBKIT_FAULT_RETRIES=0; a
# harness start-up failure is still retried, it is not a verdict), and prints how many
# sessions failed.
#   scripts/webkit-fault-rate.sh N TEST [filter...]
# e.g. scripts/webkit-fault-rate.sh 50 nostr
# Tests that need relays: run it under scripts/with-relays.sh. Extra JSC_* variables in
# the environment reach the web process (e.g. JSC_useBBQJIT=false).
# Prints one line per failed session (its first panic line) and a summary line
#   webkit-fault-rate: TEST: F of N sessions failed (M s per session)
# See the header of scripts/browser-test.sh for the fault and the figures.
set -uo pipefail
cd "$(dirname "$0")/.."
n="${1:?usage: $0 N TEST [filter...]}"
test="${2:?usage: $0 N TEST [filter...]}"
shift 2
failed=0
start=$SECONDS
for ((i = 1; i <= n; i++)); do
  out="$(mktemp)"
  if ! OUTBOX_WEBKIT_FAULT_RETRIES=0 bash scripts/browser-test.sh webkit --test "$test" ${1+-- "$@"} >"$out" 2>&1; then
    failed=$((failed + 1))
    echo "session $i failed: $(grep -m1 -A1 -E 'panicked at|RuntimeError|^error' "$out" | tr -s ' \n' ' ')"
  fi
  rm -f "$out"
done
echo "webkit-fault-rate: $test: $failed of $n sessions failed ($(((SECONDS - start) / n)) s per session)"
