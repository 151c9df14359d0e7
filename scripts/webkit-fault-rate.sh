#!/usr/bin/env bash
# How often WebKitGTK's wasm engine miscomputes in a test binary: runs one wasm test
# binary N times, each in a fresh MiniBrowser session (wasm-bindgen-test-runner straight,
# no retries), and prints how many sessions failed.
#   scripts/webkit-fault-rate.sh N TEST [filter...]
# e.g. scripts/webkit-fault-rate.sh 50 nostr_vectors
# The binary is built first (cargo test --no-run, the same build browser-test.sh makes);
# extra JSC_* variables in the environment reach the web process (e.g. JSC_useBBQJIT=false).
# Prints one line per failed session (its first panic line) and a summary line
#   webkit-fault-rate: TEST: F of N sessions failed (M s per session)
# See the header of scripts/browser-test.sh for the fault and the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
n="${1:?usage: $0 N TEST [filter...]}"
test="${2:?usage: $0 N TEST [filter...]}"
shift 2
if [ -z "${DISPLAY:-}" ]; then
  exec xvfb-run -a -s "-screen 0 1280x1024x24 -nolisten tcp" env DISPLAY_FROM_XVFB=1 "$0" "$n" "$test" "$@"
fi
bin="$(cargo test --target wasm32-unknown-unknown --locked --all-features --no-run --test "$test" --message-format=json 2>/dev/null |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{for(const l of s.split("\n")){try{const m=JSON.parse(l);if(m.executable)console.log(m.executable)}catch{}}})' | tail -1)"
[ -n "$bin" ] || { echo "webkit-fault-rate: no test binary for $test" >&2; exit 2; }
export WASM_BINDGEN_TEST_ONLY_WEB=1
failed=0
start=$SECONDS
for ((i = 1; i <= n; i++)); do
  out="$(mktemp)"
  if ! webkit_env WEBKITWEBDRIVER="${WEBKITWEBDRIVER:-/usr/bin/WebKitWebDriver}" \
    wasm-bindgen-test-runner "$bin" "$@" >"$out" 2>&1; then
    failed=$((failed + 1))
    echo "session $i failed: $(grep -m1 -A1 -E 'panicked at|RuntimeError' "$out" | tr -s ' \n' ' ' || tail -1 "$out")"
  fi
  rm -f "$out"
done
echo "webkit-fault-rate: $test: $failed of $n sessions failed ($(((SECONDS - start) / n)) s per session)"
