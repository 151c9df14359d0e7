#!/usr/bin/env bash
# Runs the benchmarks. Each prints raw figures and the ratio against a baseline measured
# in the same run (this machine is shared and noisy: absolute times drift, ratios less).
# Output is also kept in target/bench.log.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
private_tmpdir
mkdir -p target
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# Every figure is about the package as built now from src/: build it first. The cdylib's
# uplifted .wasm has no hash in its name, so another checkout of this crate sharing the
# same CARGO_TARGET_DIR can leave its own build there while cargo calls ours fresh:
# remove it so this build links its own.
rm -f "${CARGO_TARGET_DIR:-target}"/wasm32-unknown-unknown/release/nostr_outbox.wasm \
  "${CARGO_TARGET_DIR:-target}"/wasm32-unknown-unknown/release/deps/nostr_outbox.wasm
bash scripts/build.sh
log=target/bench.log
: > "$log"
# How long each part took (where the run's time goes), printed as it ends.
part=0
took() { echo "   (part $1: $((SECONDS - part)) s)" | tee -a "$log"; part=$SECONDS; }
took build
wasm=pkg/nostr_outbox_bg.wasm
echo "BENCH size: .wasm $(wc -c < "$wasm") B raw, $(gzip -9 -c "$wasm" | wc -c) B gzip -9 (as make build counts it)" | tee -a "$log"
echo "== IndexedDB store vs raw IndexedDB (headless Chromium, release build)" | tee -a "$log"
# Only this test binary is built (wasm-pack test would build every test target first:
# ~90 s more after a change to src/).
# BENCH_ARGS=--quick: a tenth of the counts here too (read when the test is compiled).
quick=()
case " ${BENCH_ARGS:-} " in *" --quick "*) quick=(env NOSTR_OUTBOX_BENCH_QUICK=1) ;; esac
${quick[@]+"${quick[@]}"} bash scripts/browser-test.sh chrome --release --test bench_store -- --nocapture 2>&1 \
  | grep -E '^BENCH' | sort -u | tee -a "$log"
took store
echo "== Event verification, native (release)" | tee -a "$log"
cargo run -q --release --example bench_verify 2>&1 | tee -a "$log"
took verify-native
echo "== Event verification in Chromium: Rust/wasm vs nostr-tools verifyEvent" | tee -a "$log"
# The wasm half: benches/verify_wasm.rs (release profile as shipped, no wasm-opt).
cargo build -q --release --example bench_verify_wasm --target wasm32-unknown-unknown
wasm-bindgen --target web --out-dir target/bench-wasm \
  "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/examples/bench_verify_wasm.wasm"
[ -d scripts/vectors/node_modules ] || (cd scripts/vectors && npm ci --silent --no-audit --no-fund)
node scripts/vectors/bench-browser.mjs target/bench-wasm 2>&1 | tee -a "$log"
took verify-browser
echo "== Outbox API benchmarks in Chromium (figures 1, 3-7)" | tee -a "$log"
[ -d tests/e2e/node_modules ] || (cd tests/e2e && npm ci --silent --no-audit --no-fund)
# BENCH_ARGS: extra arguments for bench.mjs, e.g. BENCH_ARGS=--quick make bench
# shellcheck disable=SC2086
node tests/e2e/bench.mjs ${BENCH_ARGS:-} 2>&1 | tee -a "$log"
took api
echo "== What the Nostr rules cost an enqueue (notes vs replaceable events, Chromium)" | tee -a "$log"
node tests/e2e/bench/rules-cost.mjs 1000 3 2>&1 | tee -a "$log"
took rules
echo "== What the check for a newer version on a relay costs a kind-3's delivery (Chromium, nostr-rs-relay)" | tee -a "$log"
node tests/e2e/bench/newer-cost.mjs 40 3 2>&1 | tee -a "$log"
took newer
echo "== What the NIP-11 check before each send costs a flush (Chromium, nostr-rs-relay)" | tee -a "$log"
node tests/e2e/bench/nip11-cost.mjs 1000 5 2>&1 | tee -a "$log"
took nip11
echo "== Edge runtimes: durable storage adapter vs the memory store (Deno, Bun, workerd)" | tee -a "$log"
[ -x tests/edge/node_modules/.bin/deno ] || (cd tests/edge && npm ci --silent --no-audit --no-fund)
edge=()
case " ${BENCH_ARGS:-} " in *" --quick "*) edge=(--events 100 --reps 1) ;; esac
node tests/edge/bench.mjs ${edge[@]+"${edge[@]}"} 2>&1 | tee -a "$log"
took edge
node scripts/bench-summary.mjs "$log" | tee -a "$log"
echo "bench: started $started, finished $(date -u +%Y-%m-%dT%H:%M:%SZ); results in $log" | tee -a "$log"
