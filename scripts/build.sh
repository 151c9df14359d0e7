#!/usr/bin/env bash
# Builds the npm package into pkg/ with wasm-pack (web target), twice: the browser build
# (default features: IndexedDB) into pkg/ and the edge build (`--features adapter`:
# storage adapters, no IndexedDB) into pkg/edge/; post-processes both into the
# `nostr-outbox` npm package (scripts/package.mjs, whose `exports` pick the build per
# runtime) and prints the size of each .wasm, raw and gzipped, then the browser build's
# largest contributors by crate (scripts/wasm-size.mjs).
# Fails (after printing the table) when either .wasm is over its budget: 256 KiB gzipped
# (GNU gzip -9), the limit the project holds itself to; it prints the distance to the
# goal of 232 KiB.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
# Panic locations name their source files, and a crate from crates.io is named by its
# whole path under $CARGO_HOME: remapped to `crates/<name>-<version>/…`, the .wasm is
# smaller (docs/BENCHMARKS.md, size section). Only the release .wasm builds run with these flags
# (a target is given, so build scripts and proc macros keep theirs).
for dir in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/; do
  [ -d "$dir" ] && RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=${dir%/}=crates"
done
# The standard library is built with the package (cargo's build-std) when its source is
# here (scripts/setup.sh installs it: rustup's rust-src, or Debian's rust-web-src), so that
# a panic aborts at once (`-Cpanic=immediate-abort`) instead of first formatting its
# message and location. On wasm32-unknown-unknown that text went nowhere (std has no
# stderr there, and the outbox installs no panic hook): JavaScript sees the same
# `RuntimeError: unreachable` either way, without the formatting's code (17.1 KB less
# gzipped in the browser build), and std's `optimize_for_size` (2.5 KB less). These are
# the compiler's unstable options, unlocked on the stable toolchain with RUSTC_BOOTSTRAP,
# as setup.sh's offline route already does to build the wasm32 sysroot; only the release
# .wasm builds here use them. That also makes rustc mangle names as a nightly does (v0),
# whose longer names of the closures' exports cost the glue 131 B gzipped: the stable
# toolchain's legacy mangling is asked for. Two more change no behaviour, only one of
# serde's messages (below): panics' source locations are not kept
# (`-Zlocation-detail=none`: nothing printed them), and `Debug` formatting writes nothing
# (`-Zfmt-debug=none`): no message of the outbox uses it (the few that quote what the
# app gave quote it themselves; tests/ts/smoke.mjs checks them on this build), and with
# it goes std's escaping of strings and its Unicode tables of printable characters,
# which only serde's "invalid type: string {:?}" still reached (such a message now says
# `string ,` without the string). 1 261 B and 3 127 B less gzipped in the browser
# build, 958 B and 3 168 B in the edge one.
# NOSTR_OUTBOX_BUILD_STD=0 builds without any of them.
std_src="$(std_source_dir)"
if [ "${NOSTR_OUTBOX_BUILD_STD:-1}" != 0 ] && [ -f "$std_src/Cargo.lock" ]; then
  export RUSTC_BOOTSTRAP=1
  # std's source paths as `rust/…`, not the builder's home, should a location ever be
  # kept (with `-Zlocation-detail=none` the .wasm names no source file).
  RUSTFLAGS="${RUSTFLAGS:-} -Zunstable-options -Cpanic=immediate-abort -Csymbol-mangling-version=legacy -Zlocation-detail=none -Zfmt-debug=none --remap-path-prefix=${std_src%/library}=rust"
  export CARGO_UNSTABLE_BUILD_STD=std,panic_abort CARGO_UNSTABLE_BUILD_STD_FEATURES=optimize_for_size
  echo "build.sh: std built with the package (build-std: immediate-abort panics, optimize_for_size, no panic locations, no Debug formatting)"
else
  echo "build.sh: std as shipped with the toolchain (no build-std: ${std_src} is missing or NOSTR_OUTBOX_BUILD_STD=0): the .wasm is about 24 KB larger gzipped"
fi
export RUSTFLAGS="${RUSTFLAGS:-}"
wasm-pack build --release --target web --out-dir pkg --out-name nostr_outbox 2>&1 | grep -vE '^\s*$' | tail -n 5
# wasm-opt kept the function names (`--debuginfo`, Cargo.toml): they go to a copy in
# target/ for the table below, and out of the shipped .wasm.
named="${CARGO_TARGET_DIR:-target}/nostr_outbox_bg.names.wasm"
node scripts/wasm-size.mjs --strip pkg/nostr_outbox_bg.wasm "$named"
# The edge build: its own target dir would rebuild every dependency; the features differ
# only in this crate, so it shares target/ (cargo keeps both feature sets' artifacts).
edge_out="${CARGO_TARGET_DIR:-target}/pkg-edge"
rm -rf "$edge_out"
wasm-pack build --release --target web --out-dir "$edge_out" --out-name nostr_outbox -- \
  --no-default-features --features adapter 2>&1 | grep -vE '^\s*$' | tail -n 2
edge_named="${CARGO_TARGET_DIR:-target}/nostr_outbox_bg.edge.names.wasm"
node scripts/wasm-size.mjs --strip "$edge_out/nostr_outbox_bg.wasm" "$edge_named"
rm -rf pkg/edge
mkdir -p pkg/edge
cp -r "$edge_out"/nostr_outbox.js "$edge_out"/nostr_outbox.d.ts "$edge_out"/nostr_outbox_bg.wasm \
  "$edge_out"/nostr_outbox_bg.wasm.d.ts "$edge_out"/snippets pkg/edge/
# The npm package: entry with OutboxError, exports map, types without `any`.
node scripts/package.mjs pkg
wasm="pkg/nostr_outbox_bg.wasm"
raw=$(stat -c %s "$wasm")
gz=$(gzip -9 -c "$wasm" | wc -c)
js=$(stat -c %s pkg/nostr_outbox.js)
jsgz=$(gzip -9 -c pkg/nostr_outbox.js | wc -c)
awk -v r="$raw" -v g="$gz" 'BEGIN { printf "wasm size: %d bytes raw, %d bytes gzipped (%.1f KiB)\n", r, g, g / 1024 }'
edge_raw=$(stat -c %s pkg/edge/nostr_outbox_bg.wasm)
edge_gz=$(gzip -9 -c pkg/edge/nostr_outbox_bg.wasm | wc -c)
awk -v r="$edge_raw" -v g="$edge_gz" 'BEGIN { printf "edge wasm: %d bytes raw, %d bytes gzipped (%.1f KiB)\n", r, g, g / 1024 }'
printf 'js glue:   %d bytes raw, %d bytes gzipped\n' "$js" "$jsgz"
# The UI entries (nostr-outbox/store, /react, /svelte, /inspector), each with the store it imports.
for entry in store react svelte inspector; do
  files="pkg/$entry.js" with=""
  [ "$entry" = store ] || { files="$files pkg/store.js"; with=" (with store.js)"; }
  printf '%-10s %d bytes gzipped%s\n' "$entry:" "$(cat $files | gzip -9 | wc -c)" "$with"
done
# Export and import (nostr-outbox/transfer; index.js imports it): the JavaScript around the
# .wasm's exportPage and importLines.
printf '%-10s %d bytes gzipped\n' "transfer:" "$(gzip -9 -c pkg/transfer.js | wc -c)"
# Groups' cancelGroup, retryGroup and `group` event (index.js imports it too).
printf '%-10s %d bytes gzipped\n' "groups:" "$(gzip -9 -c pkg/groups.js | wc -c)"
# Routing intents' resolvers: the built-in one (nostr-outbox/relay-lists) and the libraries'
# routers (nostr-outbox/routers), each loaded only by an app that imports it.
printf '%-10s %d bytes gzipped\n' "relay-lists:" "$(gzip -9 -c pkg/relay-lists.js | wc -c)"
printf '%-10s %d bytes gzipped\n' "routers:" "$(gzip -9 -c pkg/routers.js | wc -c)"
# Size by crate, from the names kept above; the table is markdown for docs/BENCHMARKS.md.
# It never fails the build: a problem is one line. NOSTR_OUTBOX_SIZE_BY_CRATE=0 skips it.
if [ "${NOSTR_OUTBOX_SIZE_BY_CRATE:-1}" != 0 ] && [ -f "$named" ]; then
  t0=$(date +%s%N)
  echo
  node scripts/wasm-size.mjs "$named" "$wasm" || echo "size by crate: scripts/wasm-size.mjs failed (the package is built)"
  echo "(size by crate took $(( ($(date +%s%N) - t0) / 1000000 )) ms)"
fi
limit=$((256 * 1024))
over=0
for build in "browser:$gz" "edge:$edge_gz"; do
  size="${build#*:}"
  if [ "$size" -gt "$limit" ]; then
    echo "build.sh: the ${build%%:*} .wasm is $size bytes gzipped, over its $limit-byte (256 KiB) budget" >&2
    over=1
  else
    goal=$((232 * 1024))
    if [ "$size" -le "$goal" ]; then to_goal="$((goal - size)) bytes under"; else to_goal="$((size - goal)) bytes over"; fi
    echo "size budget (${build%%:*}): $((limit - size)) bytes under 256 KiB gzipped; ${to_goal} the 232 KiB goal (issue 39)"
  fi
done
[ "$over" = 0 ]
