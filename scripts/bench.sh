#!/usr/bin/env bash
# Runs the benchmarks. Each prints raw figures and the ratio against a baseline measured
# in the same run (this machine is shared and noisy: absolute times drift, ratios less).
# Output is also kept in target/bench.log.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
mkdir -p target
log=target/bench.log
: > "$log"
echo "== IndexedDB store vs raw IndexedDB (headless Chromium, release build)" | tee -a "$log"
chrome_env wasm-pack test --release --headless --chrome -- --test bench_store -- --nocapture 2>&1 \
  | grep -E '^BENCH' | sort -u | tee -a "$log"
echo "== Event verification, native (release)" | tee -a "$log"
cargo run -q --release --example bench_verify 2>&1 | tee -a "$log"
if [ -f scripts/vectors/bench-browser.mjs ]; then
  echo "== Event verification in Chromium: Rust/wasm vs nostr-tools verifyEvent" | tee -a "$log"
  [ -d scripts/vectors/node_modules ] || (cd scripts/vectors && npm ci --silent --no-audit --no-fund)
  node scripts/vectors/bench-browser.mjs 2>&1 | tee -a "$log"
fi
if [ -f tests/e2e/bench.mjs ]; then
  echo "== Outbox API benchmarks in Chromium" | tee -a "$log"
  node tests/e2e/bench.mjs 2>&1 | tee -a "$log"
fi
echo "bench: results in $log"
