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
#
# Root cause of that start-up failure (measured with gdb, ss and a Chrome net-log on a
# stuck page): the runner's HTTP server (rouille on tiny_http 0.12) serves each TCP
# connection on one pool thread for the connection's whole keep-alive life, and its pool
# only adds a thread when its count of idle threads is 0 — a count that still includes
# threads already handed a connection but not yet woken. The service worker's module
# graph opens several connections at once (the test's JS plus its snippets), on top of
# the page's keep-alive ones; in that burst a connection can be queued with every
# thread pinned by an idle keep-alive connection Chrome never closes, so one import
# (e.g. snippets/.../glue.js) is never read, the worker never finishes evaluating,
# register() never settles and the page stays at "Loading Wasm module...". It hangs for
# good: Chrome keeps those idle connections open longer than any deadline here. (About 1
# start in 3 hit it here on 2 cores, idle or loaded; how often depends on thread timing.)
# The cure here: once a second, if a connection to the runner's server has had a request
# unread (Recv-Q > 0) since the previous look, send the server one short request with
# "Connection: close" (a "kick"): the pool has no idle thread, so it starts one, which
# answers the kick and then takes the queued connection. Needs `ss` (iproute2); without
# it there are no kicks, only the retries.
#
# WebKit only (SAFARIDRIVER set, see scripts/browser-test.sh): a binary whose tests ran
# and failed is run again, at most OUTBOX_WEBKIT_FAULT_RETRIES times (default 3), because
# WebKitGTK 2.50.6's wasm engine now and then miscomputes in the debug test binaries
# (scripts/browser-test.sh has the figures; never the same test twice here, never in
# Chromium or Firefox; a CI run saw one binary fault three times in a row). A failure of
# ours is deterministic and fails every try: so a test that fails in two tries of a
# binary ends the retries and fails the binary, whatever the budget left (a try that
# failed without naming a failed test, e.g. a hang, counts as the test `unnamed:<binary>`). The
# discarded try's output is printed with its libtest summary and FAIL lines renamed
# (`test result (discarded …)`, `... FAIL (discarded, WebKit retry)`), so the tier counts
# only the last try; each retry prints a `webkit engine fault retry` line naming the
# tests that failed, then one `discarded failure: NAME` line per test (scripts/test.sh
# lists them above its table and fails the tier if a name comes back).
set -uo pipefail
runner="${WASM_BINDGEN_TEST_RUNNER_BIN:-wasm-bindgen-test-runner}"
attempts="${OUTBOX_HARNESS_ATTEMPTS:-5}"
start_deadline="${OUTBOX_HARNESS_START_S:-90}"
started_re='^running [0-9]+ tests?$'
have_ss=0
command -v ss >/dev/null 2>&1 && have_ss=1
# stuck_server_conns PORT: "peer" of each connection to the server on 127.0.0.1:PORT with
# bytes the server has not read.
stuck_server_conns() {
  ss -tnH "( sport = :$1 )" 2>/dev/null | awk '$2 > 0 { print $NF }' | sort
}
# kick PORT: one short request that closes its connection (see above); in the background
# with a time limit, so it never blocks this loop.
kick() {
  timeout 10 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 0
    printf "GET /__outbox_harness_kick HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n" "$1" >&3
    cat <&3 >/dev/null' _ "$1" >/dev/null 2>&1 &
}
# failed_tests FILE: the tests a try's output says failed, one name a line, sorted: its
# `test NAME ... FAIL` (wasm-bindgen-test) or `... FAILED` (libtest) lines and the names
# under its last `failures:` header.
failed_tests() {
  {
    sed -nE 's/^test ([^ ]+) \.\.\. FAIL(ED)?$/\1/p' "$1"
    awk '/^failures:$/ { list = ""; inlist = 1; next }
         inlist && /^    [^ ]/ { sub(/^ +/, ""); list = list $0 "\n"; next }
         inlist && NF { inlist = 0 }
         END { printf "%s", list }' "$1"
  } | sort -u
}
webkit=0
[ -n "${SAFARIDRIVER:-}" ] && webkit=1
fault_retries="${OUTBOX_WEBKIT_FAULT_RETRIES:-3}"
fault_try=0
failed_before=
bin="$(basename "${1:-?}")"
rc=1
for ((i = 1; i <= attempts; i++)); do
  out="$(mktemp)"
  # Its own session and process group, so a stop takes the driver and browser along.
  setsid "$runner" "$@" >"$out" 2>&1 &
  pid=$!
  # In WebKit the output is shown once the try is over (it may be discarded, above).
  tail_pid=
  if [ "$webkit" = 0 ]; then
    tail -n +1 -f --pid="$pid" "$out" &
    tail_pid=$!
  fi
  started=0
  stopped=0
  waited=0
  port=
  prev_stuck=
  kicks=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$started" = 0 ] && grep -qE "$started_re" "$out"; then started=1; fi
    if [ "$have_ss" = 1 ]; then
      # The runner's own listening socket is its test server (taken only while it is the
      # runner's one listening socket: it also binds a port for a moment to pick the
      # driver's).
      if [ -z "$port" ]; then
        port="$(ss -ltnpH 2>/dev/null | awk -v p="pid=$pid," 'index($0, p) { n = split($4, a, ":"); print a[n] }')"
        case "$port" in *[!0-9]*) port= ;; esac
      fi
      if [ -n "$port" ]; then
        stuck="$(stuck_server_conns "$port")"
        if [ -n "$stuck" ] && [ -n "$prev_stuck" ] && [ -n "$(comm -12 <(echo "$stuck") <(echo "$prev_stuck"))" ]; then
          kick "$port"
          kicks=$((kicks + 1))
          stuck=
        fi
        prev_stuck="$stuck"
      fi
    fi
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
  [ -n "$tail_pid" ] && wait "$tail_pid" 2>/dev/null
  grep -qE "$started_re" "$out" && started=1
  if [ "$webkit" = 1 ]; then
    if [ "$rc" != 0 ] && [ "$started" = 1 ]; then
      fault_try=$((fault_try + 1))
      failed_now="$(failed_tests "$out")"
      [ -n "$failed_now" ] || failed_now="unnamed:$bin"
      again=
      [ -n "$failed_before" ] && again="$(comm -12 <(echo "$failed_now") <(echo "$failed_before"))"
      if [ -n "$again" ]; then
        cat "$out"
        rm -f "$out"
        echo "wasm-test-runner: failed twice in $bin (try $fault_try): $(paste -sd" " <<<"$again"): a failure of ours, not a WebKit engine fault; not run again"
        [ "$rc" = 0 ] && rc=1
        exit "$rc"
      fi
      if [ "$fault_retries" -gt 0 ]; then
        sed -E 's/test result: /test result (discarded, WebKit retry): /; s/^(test [^ ]+ \.\.\. FAIL(ED)?)$/\1 (discarded, WebKit retry)/' "$out"
        rm -f "$out"
        fault_retries=$((fault_retries - 1))
        echo "wasm-test-runner: webkit engine fault retry: $bin failed in WebKit (try $fault_try): $(paste -sd" " <<<"$failed_now"); running it again (see the header; a real failure fails again)"
        while IFS= read -r name; do
          echo "wasm-test-runner: discarded failure: $name ($bin, try $fault_try)"
        done <<<"$failed_now"
        failed_before="$(printf '%s\n%s\n' "$failed_before" "$failed_now" | sed '/^$/d' | sort -u)"
        i=$((i - 1))
        continue
      fi
    fi
    cat "$out"
  fi
  never_started=0
  if [ "$started" = 0 ] && { [ "$stopped" = 1 ] || grep -q 'Failed to detect test as having been run' "$out"; }; then
    never_started=1
  fi
  rm -f "$out"
  if [ "$kicks" != 0 ]; then
    echo "wasm-test-runner: $kicks kick(s) of the test server in $bin for a request it had left unread (tiny_http pool starvation)"
  fi
  if [ "$rc" = 0 ] || [ "$never_started" = 0 ]; then
    exit "$rc"
  fi
  echo "wasm-test-runner: harness start-up failure in $bin: the browser never started the tests (attempt $i of $attempts)"
  rc=1
done
exit "$rc"
