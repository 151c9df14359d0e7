#!/usr/bin/env bash
# Runs wasm test binaries headless in one browser, as `wasm-pack test --headless` does, but
# with every binary run (--no-fail-fast) and cargo's runner set to scripts/wasm-test-runner.sh
# (wasm-bindgen-test-runner, retried only on a harness start-up failure).
#   scripts/browser-test.sh chrome|firefox [cargo test args...]
# e.g. scripts/with-relays.sh scripts/browser-test.sh chrome --test transport_ws
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
browser="${1:-}"
shift || true
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER="$PWD/scripts/wasm-test-runner.sh"
export WASM_BINDGEN_TEST_ONLY_WEB=1
case "$browser" in
  chrome) run=chrome_env ;;
  firefox) run=firefox_env ;;
  *) echo "usage: $0 chrome|firefox [cargo test args...]" >&2; exit 2 ;;
esac
"$run" cargo test --target wasm32-unknown-unknown --locked --no-fail-fast "$@"
