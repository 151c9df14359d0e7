#!/usr/bin/env bash
# Builds the npm package into pkg/ with wasm-pack (web target), post-processes it into
# the `nostr-outbox` npm package (scripts/package.mjs) and prints the size of the .wasm,
# raw and gzipped.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
wasm-pack build --release --target web --out-dir pkg --out-name nostr_outbox 2>&1 | grep -vE '^\s*$' | tail -n 5
# The npm package: entry with OutboxError, exports map, types without `any`.
node scripts/package.mjs pkg
wasm="pkg/nostr_outbox_bg.wasm"
raw=$(stat -c %s "$wasm")
gz=$(gzip -9 -c "$wasm" | wc -c)
js=$(stat -c %s pkg/nostr_outbox.js)
jsgz=$(gzip -9 -c pkg/nostr_outbox.js | wc -c)
awk -v r="$raw" -v g="$gz" 'BEGIN { printf "wasm size: %d bytes raw, %d bytes gzipped (%.1f KiB)\n", r, g, g / 1024 }'
printf 'js glue:   %d bytes raw, %d bytes gzipped\n' "$js" "$jsgz"
