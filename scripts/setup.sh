#!/usr/bin/env bash
# Installs everything `make test` and `make demo` need, idempotently: each step is
# skipped when its result is already present. Prints what it installed and what it
# found. Works offline except for the package registries (crates, npm, Debian).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
. scripts/env.sh

installed=()
found=()
note_found() { found+=("$1"); printf '  found      %s\n' "$1"; }
note_installed() { installed+=("$1"); printf '  installed  %s\n' "$1"; }
step() { printf '\n== %s\n' "$1"; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
APT_UPDATED=0
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then return 0; fi
  if [ "$APT_UPDATED" = 0 ]; then
    $SUDO apt-get update -qq
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  note_installed "apt: ${missing[*]}"
}

# The wasm-bindgen version pinned in Cargo.toml (`=x.y.z`), which the CLI must match.
WB_VERSION="$(sed -n 's/^wasm-bindgen = "=\(.*\)"/\1/p' Cargo.toml)"
[ -n "$WB_VERSION" ] || { echo "setup: cannot read the pinned wasm-bindgen version from Cargo.toml" >&2; exit 1; }

step "Rust wasm32 target"
have_wasm_std() {
  ls "$(rustc --print sysroot)"/lib/rustlib/wasm32-unknown-unknown/lib/libstd-*.rlib >/dev/null 2>&1
}
force_debian=0
[ "${NOSTR_OUTBOX_WASM_ROUTE:-}" = debian ] && force_debian=1
if [ $force_debian = 0 ] && have_wasm_std; then
  note_found "wasm32-unknown-unknown std ($NOSTR_OUTBOX_WASM_TOOLCHAIN: $(rustc --version))"
elif [ $force_debian = 0 ] && timeout 60 rustup target add wasm32-unknown-unknown >/dev/null 2>&1 && have_wasm_std; then
  note_installed "wasm32-unknown-unknown via rustup"
else
  echo "  rustup cannot download the wasm32 std here; building it from Debian's rust-web-src"
  apt_install rustc-web cargo-web rust-web-src rust-web-clippy lld-22
  SYSROOT_LIB="$(/usr/bin/rustc --print sysroot)/lib/rustlib/wasm32-unknown-unknown/lib"
  if ! ls "$SYSROOT_LIB"/libstd-*.rlib >/dev/null 2>&1; then
    scratch="$(mktemp -d)"
    (
      cd "$scratch"
      PATH="/usr/bin:$PATH" /usr/bin/cargo init -q --lib --name sysroot_scratch .
      PATH="/usr/bin:$PATH" RUSTC_BOOTSTRAP=1 /usr/bin/cargo build -q --release \
        --target wasm32-unknown-unknown -Z build-std=std,panic_abort,test,proc_macro
    )
    $SUDO mkdir -p "$SYSROOT_LIB"
    find "$scratch/target/wasm32-unknown-unknown/release/deps" -name 'lib*.rlib' \
      ! -name 'libsysroot_scratch*' -exec $SUDO cp {} "$SYSROOT_LIB/" \;
    rm -rf "$scratch"
    note_installed "wasm32 sysroot built from rust-web-src into $SYSROOT_LIB"
  else
    note_found "wasm32 sysroot in $SYSROOT_LIB"
  fi
  . scripts/env.sh
fi

# rustc links wasm32 with `rust-lld`; Debian's rustc-web 1.96 ships none, and lld-22 is
# one (rustc passes `-flavor wasm`): a link to it in the tools' bin/, on PATH by env.sh.
if [ "$NOSTR_OUTBOX_WASM_TOOLCHAIN" = debian ] && ! command -v rust-lld >/dev/null 2>&1; then
  apt_install lld-22
  mkdir -p "$TOOLS_DIR/bin"
  ln -sf "$(command -v lld-22)" "$TOOLS_DIR/bin/rust-lld"
  note_installed "rust-lld (a link to lld-22) in $TOOLS_DIR/bin"
fi

step "Rust standard library source (scripts/build.sh builds std with the package)"
std_src="$(std_source_dir)"
if [ -f "$std_src/Cargo.lock" ]; then
  note_found "std source in $std_src"
elif [ "$NOSTR_OUTBOX_WASM_TOOLCHAIN" = rustup ] && timeout 120 rustup component add rust-src >/dev/null 2>&1 && [ -f "$std_src/Cargo.lock" ]; then
  note_installed "rust-src via rustup"
elif [ "$NOSTR_OUTBOX_WASM_TOOLCHAIN" = debian ] && apt_install rust-web-src && [ -f "$std_src/Cargo.lock" ]; then
  note_installed "std source from Debian's rust-web-src"
else
  echo "  no std source for $(rustc --version): scripts/build.sh builds the .wasm without build-std (about 19.6 KB larger gzipped)"
fi

step "wasm-bindgen-cli $WB_VERSION"
if command -v wasm-bindgen >/dev/null && [ "$(wasm-bindgen --version | awk '{print $2}')" = "$WB_VERSION" ] \
   && command -v wasm-bindgen-test-runner >/dev/null; then
  note_found "wasm-bindgen $WB_VERSION"
else
  # --locked is tried first; the registry may lack a locked transitive version.
  cargo install -q wasm-bindgen-cli --version "$WB_VERSION" --locked 2>/dev/null \
    || cargo install -q wasm-bindgen-cli --version "$WB_VERSION"
  note_installed "wasm-bindgen-cli $WB_VERSION"
fi

step "wasm-pack"
if command -v wasm-pack >/dev/null; then
  note_found "$(wasm-pack --version)"
else
  cargo install -q wasm-pack --locked 2>/dev/null || cargo install -q wasm-pack
  note_installed "$(wasm-pack --version)"
fi

step "wasm-opt (npm binaryen)"
if command -v wasm-opt >/dev/null && wasm-opt --version | grep -qE 'version (1[2-9][0-9])'; then
  note_found "$(wasm-opt --version)"
else
  mkdir -p "$NOSTR_OUTBOX_TOOLS"
  npm install --silent --no-audit --no-fund --prefix "$NOSTR_OUTBOX_TOOLS" binaryen@132 >/dev/null
  note_installed "$(wasm-opt --version)"
fi

step "twiggy (make build cross-checks its size-by-crate table with it)"
if command -v twiggy >/dev/null; then
  note_found "$(twiggy --version)"
elif cargo install -q twiggy --locked 2>/dev/null || cargo install -q twiggy; then
  note_installed "$(twiggy --version)"
else
  # Optional: without it `make build` prints the table unchecked, with a note.
  echo "  twiggy did not build; make build's size-by-crate table will say it is unchecked"
fi

step "Browsers and drivers"
apt_install chromium chromium-driver firefox-esr
note_found "$(chromium --version 2>/dev/null | head -1) / $(chromedriver --version | head -1)"
if command -v geckodriver >/dev/null; then
  note_found "$(geckodriver --version 2>/dev/null | sed -n 1p) / $(firefox-esr --version 2>/dev/null)"
else
  # npm's geckodriver downloads a binary (fails offline); the crate builds from source.
  cargo install -q geckodriver --locked 2>/dev/null || cargo install -q geckodriver
  note_installed "$(geckodriver --version 2>/dev/null | sed -n 1p)"
fi

step "WebKit (WebKitGTK: WebKitWebDriver + MiniBrowser, under Xvfb)"
# Safari's engine for the browser-webkit and e2e-webkit tiers. Debian's package, no
# download of its own; xvfb + xauth give it a display (xvfb-run) on a headless machine.
apt_install webkit2gtk-driver xvfb xauth
if [ -x /usr/bin/WebKitWebDriver ] && [ -x /usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser ]; then
  note_found "WebKitGTK $(dpkg-query -W -f='${Version}' libwebkit2gtk-4.1-0 2>/dev/null) (WebKitWebDriver, MiniBrowser)"
else
  echo "setup: webkit2gtk-driver installed but WebKitWebDriver or MiniBrowser is missing" >&2
  exit 1
fi

step "Local Nostr relay (nostr-rs-relay)"
if command -v nostr-rs-relay >/dev/null; then
  note_found "nostr-rs-relay $(nostr-rs-relay --version 2>/dev/null | awk '{print $2}')"
else
  apt_install protobuf-compiler pkg-config libssl-dev
  # Its Cargo.lock pins `time` 0.3.25, which no longer builds with current rustc:
  # install unlocked.
  cargo install -q nostr-rs-relay
  note_installed "nostr-rs-relay"
fi

step "Fault-injecting relay (tests/fault-relay)"
fr_target="$NOSTR_OUTBOX_TOOLS/fault-relay-target"
if [ -x "$fr_target/release/fault-relay" ] && [ "$fr_target/release/fault-relay" -nt tests/fault-relay/Cargo.lock ]; then
  note_found "fault-relay (rebuilt by scripts/with-relays.sh only when its sources change)"
else
  CARGO_TARGET_DIR="$fr_target" cargo build --release --locked --quiet --manifest-path tests/fault-relay/Cargo.toml
  note_installed "fault-relay into $fr_target"
fi

step "Node packages for JS tests"
for dir in tests/ts tests/e2e tests/edge www; do
  [ -f "$dir/package.json" ] || continue
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    (cd "$dir" && npm ci --silent --no-audit --no-fund >/dev/null)
    note_installed "$dir/node_modules"
  else
    note_found "$dir/node_modules"
  fi
done

printf '\nsetup: %d installed, %d found already\n' "${#installed[@]}" "${#found[@]}"
