#!/usr/bin/env bash
# Runs every test tier, keeps going after a failure, prints a table of tiers and ends
# with one summary line: "summary: N passed, M failed" where N and M count tests
# (lint tiers count as one check each). Exit 0 only if every tier passed.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
private_tmpdir
LOG_DIR="${TEST_LOG_DIR:-target/test-logs}"
mkdir -p "$LOG_DIR"

declare -a TIER_NAMES TIER_STATUS TIER_DETAIL
total_passed=0
total_failed=0

# run_tier NAME CMD...: runs CMD, logs to $LOG_DIR/NAME.log, counts libtest results.
run_tier() {
  local name="$1"; shift
  # TIERS="native browser-chrome" make test runs only the named tiers.
  if [ -n "${TIERS:-}" ] && [[ " $TIERS " != *" $name "* ]]; then return 0; fi
  local log="$LOG_DIR/$name.log"
  local start end rc passed failed
  printf '\n=== %s: %s\n' "$name" "$*"
  start=$(date +%s)
  "$@" > >(tee "$log") 2>&1
  rc=$?
  wait
  end=$(date +%s)
  passed=$(grep -aoE 'test result: [A-Za-z]+\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}')
  failed=$(grep -aoE 'test result: [A-Za-z]+\. [0-9]+ passed; [0-9]+ failed' "$log" | awk '{s+=$6} END {print s+0}')
  # node --test (TAP): "# pass N" / "# fail N"
  passed=$((passed + $(grep -aoE '^# pass [0-9]+' "$log" | awk '{s+=$3} END {print s+0}')))
  failed=$((failed + $(grep -aoE '^# fail [0-9]+' "$log" | awk '{s+=$3} END {print s+0}')))
  if [ "$passed" = 0 ] && [ "$failed" = 0 ]; then
    # A check without a test count (fmt, clippy, docs): one check.
    if [ $rc = 0 ]; then passed=1; else failed=1; fi
  elif [ $rc != 0 ] && [ "$failed" = 0 ]; then
    failed=1
  fi
  # A test that failed in a discarded try (scripts/wasm-test-runner.sh's WebKit retries)
  # and fails again in this tier, in another try or in the kept one, fails the tier: a
  # failure of ours must not hide behind an engine fault. A test is named by its binary
  # (cargo's "Running … (…/NAME-HASH.wasm)" line before its output) and its name.
  local twice=
  if grep -aq '^wasm-test-runner: discarded failure: ' "$log"; then
    twice=$(awk '
      /^ *Running .*\)$/ { bin = $NF; gsub(/^\(|\)$/, "", bin); n = split(bin, p, "/"); bin = p[n] }
      /^wasm-test-runner: discarded failure: / { b = $5; sub(/^\(/, "", b); sub(/,$/, "", b); print b "::" $4; next }
      /^test [^ ]+ \.\.\. FAIL(ED)?$/ { if (!seen[bin "::" $2]++) print bin "::" $2 }
    ' "$log" | sort | uniq -d | paste -sd' ')
  fi
  if [ -n "$twice" ]; then
    echo "test.sh: failed twice in tier $name (a discarded try and another): $twice" | tee -a "$log"
    rc=1
    [ "$failed" != 0 ] || failed=1
  fi
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  TIER_NAMES+=("$name")
  if [ $rc = 0 ]; then TIER_STATUS+=("ok"); else TIER_STATUS+=("FAILED"); fi
  local detail="$passed passed, $failed failed, $((end - start)) s"
  local retries discarded
  retries=$(grep -ac 'wasm-test-runner: harness start-up failure' "$log")
  [ "$retries" = 0 ] || detail="$detail, $retries harness start-up retries"
  retries=$(grep -ac 'wasm-test-runner: webkit engine fault retry' "$log")
  discarded=$(grep -ac 'wasm-test-runner: discarded failure' "$log")
  [ "$retries" = 0 ] || detail="$detail, $retries WebKit engine-fault retries of $discarded failed tests (named above)"
  TIER_DETAIL+=("$detail")
}

# in_browser Chrome|Firefox|Safari CMD…: runs CMD and fails unless every wasm test binary
# ran in that browser (wasm-bindgen-test-runner prints "Running headless tests in
# <Browser>"; WebKitGTK runs as its "Safari" driver, see scripts/browser-test.sh).
in_browser() {
  local want="$1"; shift
  local out rc
  out="$(mktemp)"
  "$@" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  if ! grep -q "Running headless tests in $want" "$out" \
     || grep "Running headless tests in" "$out" | grep -vq "in $want"; then
    echo "test.sh: expected every browser test to run in $want" >&2
    rc=1
  fi
  rm -f "$out"
  return "$rc"
}

# some_tests CMD…: runs CMD and fails when it ran no test at all (a browser that loaded
# nothing must not pass quietly): it needs a libtest "test result: … N passed" or a
# node --test "# pass N" with N > 0.
some_tests() {
  local out rc
  out="$(mktemp)"
  "$@" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  if ! grep -aqE 'test result: [A-Za-z]+\. [1-9][0-9]* passed|^# pass [1-9]' "$out"; then
    echo "test.sh: no test ran" >&2
    rc=1
  fi
  rm -f "$out"
  return "$rc"
}

# Test targets that carry browser tests (they use wasm_bindgen_test), and the library's
# own (src/js has wasm-only units tested in the browser).
# A test target is a file tests/NAME.rs or a directory tests/NAME/ with a main.rs (its
# modules beside it); benchmarks live in benches/ and run in `make bench`.
browser_tests=(--lib)
for f in tests/*.rs tests/*/main.rs; do
  [ -e "$f" ] || continue
  name="$(basename "$f" .rs)"
  files=("$f")
  if [ "$name" = main ]; then
    name="$(basename "$(dirname "$f")")"
    files=("$(dirname "$f")"/*.rs)
  fi
  if grep -q 'wasm_bindgen_test' "${files[@]}"; then browser_tests+=(--test "$name"); fi
done

run_tier fmt cargo fmt --all -- --check
run_tier clippy-native cargo clippy --all-targets --locked -- -D warnings
run_tier clippy-wasm32 cargo clippy --target wasm32-unknown-unknown --lib --tests --examples --all-features --locked -- -D warnings
run_tier clippy-wasm32-builds bash -c "cargo clippy --target wasm32-unknown-unknown --lib --locked -- -D warnings && cargo clippy --target wasm32-unknown-unknown --lib --no-default-features --features adapter --locked -- -D warnings"
run_tier rustdoc env RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --lib --locked -q
run_tier native cargo test --locked --no-fail-fast
# Browser tiers run with real relays on 127.0.0.1 (nostr-rs-relay and tests/fault-relay).
run_tier browser-chrome in_browser Chrome scripts/with-relays.sh scripts/browser-test.sh chrome "${browser_tests[@]}"
run_tier browser-firefox in_browser Firefox scripts/with-relays.sh scripts/browser-test.sh firefox "${browser_tests[@]}"
# WebKit (Safari's engine): WebKitGTK's MiniBrowser through WebKitWebDriver, under Xvfb.
run_tier browser-webkit some_tests in_browser Safari scripts/with-relays.sh scripts/browser-test.sh webkit "${browser_tests[@]}"
# End-to-end in real Chromium (playwright-core + /usr/bin/chromium) on the built package.
run_tier package bash scripts/build.sh
run_tier js-package bash tests/ts/run.sh
# The storage adapters for edge runtimes (js/*-storage, deno-kv, durable-object, sqlite) in
# Node, Deno, Bun and workerd (miniflare), pinned in tests/edge/package.json.
run_tier edge bash tests/edge/run.sh
# The files are listed (not globbed) so a test lands in CI only once it is reviewed.
# inspector.test.mjs also drives Firefox ESR (geckodriver) and WebKit (WebKitWebDriver).
E2E_TESTS="${E2E_TESTS:-quota.test.mjs demo.test.mjs recovery.test.mjs takeover.test.mjs nostr-rules.test.mjs priority.test.mjs publish.test.mjs relay-info.test.mjs adapters.test.mjs subscribe.test.mjs transfer.test.mjs inspector.test.mjs schedule.test.mjs drafts.test.mjs groups.test.mjs routes.test.mjs relay-lists.test.mjs routers.test.mjs bundlers.test.mjs torture.test.mjs}"
run_tier e2e bash -c "cd tests/e2e && node --test --test-concurrency=1 $E2E_TESTS"
# The package's API in WebKit, driven through WebKitWebDriver (playwright-core drives only
# its own WebKit builds).
run_tier e2e-webkit some_tests bash -c "cd tests/e2e && node --test --test-concurrency=1 webkit.test.mjs"


# The lines that say why a tier failed, just above the table, so the end of the output
# (often all a CI page shows) names the failing tests.
for i in "${!TIER_NAMES[@]}"; do
  [ "${TIER_STATUS[$i]}" = ok ] && continue
  printf '\n--- why %s failed (from %s/%s.log):\n' "${TIER_NAMES[$i]}" "$LOG_DIR" "${TIER_NAMES[$i]}"
  grep -aE "^test .* FAIL(ED)?$|panicked at|^not ok|Failed to detect|^error(\[|:)|^failures:$|AssertionError|Error: |rerun pass|expected every browser|no test ran|failed twice" \
    "$LOG_DIR/${TIER_NAMES[$i]}.log" | grep -av '# TODO' | head -n 30
done

# Every rerun of a test binary (scripts/wasm-test-runner.sh), with the tests that failed
# in the discarded try, just above the table too: a rerun is never silent.
for i in "${!TIER_NAMES[@]}"; do
  reruns=$(grep -aE '^wasm-test-runner: (harness start-up failure|webkit engine fault retry|discarded failure|failed twice)' \
    "$LOG_DIR/${TIER_NAMES[$i]}.log")
  [ -n "$reruns" ] || continue
  printf '\n--- reruns in %s (from %s/%s.log):\n%s\n' "${TIER_NAMES[$i]}" "$LOG_DIR" "${TIER_NAMES[$i]}" "$reruns"
done

printf '\n%-16s %-7s %s\n' tier status detail
for i in "${!TIER_NAMES[@]}"; do
  printf '%-16s %-7s %s\n' "${TIER_NAMES[$i]}" "${TIER_STATUS[$i]}" "${TIER_DETAIL[$i]}"
done
failed_tiers=0
for s in "${TIER_STATUS[@]}"; do [ "$s" = ok ] || failed_tiers=$((failed_tiers + 1)); done
printf '\n'
if [ $failed_tiers = 0 ]; then
  echo "make test: all ${#TIER_NAMES[@]} tiers passed"
else
  echo "make test: $failed_tiers of ${#TIER_NAMES[@]} tiers FAILED (logs in $LOG_DIR)"
fi
echo "temporary files of this run: $(du -sm "$TMPDIR" 2>/dev/null | cut -f1) MB in $TMPDIR (removed now)"
echo "summary: $total_passed passed, $total_failed failed"
[ $failed_tiers = 0 ]
