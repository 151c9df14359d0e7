#!/usr/bin/env bash
# The JavaScript-side checks of the built package (pkg/, from `make build`):
#   1. tsc --noEmit on tests/ts/consumer.ts (every API typed, wrong usages rejected);
#   2. Node.js: import the package entry, OutboxError, a memory outbox end to end;
#   3. headless Chromium: the package in a module service worker (sync + message);
#   4. npm pack --dry-run: every entry, import and licence is in the tarball (pack.mjs).
# Prints a libtest-style summary line. Needs tests/ts/node_modules (npm ci in tests/ts).
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ ! -f pkg/index.js ]; then
  echo "pkg/index.js missing: run 'make build' (scripts/build.sh) first" >&2
  echo "test result: FAILED. 0 passed; 1 failed"
  exit 1
fi
if [ ! -x tests/ts/node_modules/.bin/tsc ]; then
  (cd tests/ts && npm ci --no-audit --no-fund >/dev/null) || {
    echo "npm ci in tests/ts failed" >&2
    echo "test result: FAILED. 0 passed; 1 failed"
    exit 1
  }
fi
passed=0
failed=0
check() {
  local name="$1"; shift
  if "$@"; then
    echo "test $name ... ok"; passed=$((passed + 1))
  else
    echo "test $name ... FAILED"; failed=$((failed + 1))
  fi
}
check tsc-consumer tests/ts/node_modules/.bin/tsc -p tests/ts
check tsc-edge-no-dom tests/ts/node_modules/.bin/tsc -p tests/ts/tsconfig.edge.json
check node-package-smoke node tests/ts/smoke.mjs
check service-worker-smoke timeout 180 node tests/ts/sw-smoke.mjs
check npm-pack-files node tests/ts/pack.mjs
if [ "$failed" = 0 ]; then
  echo "test result: ok. $passed passed; $failed failed"
else
  echo "test result: FAILED. $passed passed; $failed failed"
  exit 1
fi
