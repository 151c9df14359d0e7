# Sourced by every script and Makefile recipe: puts the project's tools on PATH.
# - The wasm32 standard library: rustup's (when `rustup target add` worked) or the
#   offline Debian toolchain in /usr/bin (rustc-web + a sysroot built by setup.sh).
# - Tools installed by setup.sh: ~/.cargo/bin (wasm-bindgen, wasm-pack, geckodriver,
#   nostr-rs-relay) and the npm-installed binaryen (wasm-opt).
TOOLS_DIR="${NOSTR_OUTBOX_TOOLS:-$HOME/.cache/nostr-outbox-tools}"
export NOSTR_OUTBOX_TOOLS="$TOOLS_DIR"
case ":$PATH:" in *":$HOME/.cargo/bin:"*) ;; *) PATH="$HOME/.cargo/bin:$PATH" ;; esac
PATH="$TOOLS_DIR/node_modules/.bin:$PATH"
# setup.sh's links (rust-lld for Debian's toolchain) come after every other tool.
PATH="$PATH:$TOOLS_DIR/bin"
_rustup_wasm=0
if [ "${NOSTR_OUTBOX_WASM_ROUTE:-}" = debian ]; then
  : # forced: use Debian's toolchain even where rustup has the wasm32 std
elif command -v rustc >/dev/null 2>&1; then
  _sysroot="$(rustc --print sysroot 2>/dev/null)"
  if ls "$_sysroot"/lib/rustlib/wasm32-unknown-unknown/lib/libstd-*.rlib >/dev/null 2>&1; then
    _rustup_wasm=1
  fi
fi
if [ "$_rustup_wasm" = 0 ] && ls /usr/lib/rustlib/wasm32-unknown-unknown/lib/libstd-*.rlib >/dev/null 2>&1; then
  # Offline route: Debian's rustc-web owns the wasm32 sysroot; it must come first.
  PATH="/usr/bin:$PATH"
  export NOSTR_OUTBOX_WASM_TOOLCHAIN=debian
else
  export NOSTR_OUTBOX_WASM_TOOLCHAIN=rustup
fi
export PATH
# Browser drivers are chosen per command, never exported here: wasm-bindgen-test-runner
# picks Firefox whenever GECKODRIVER is set, even under `wasm-pack test --chrome`.
# Use `chrome_env CMD…` / `firefox_env CMD…` / `webkit_env CMD…` to run a command with
# exactly one driver. WebKit (WebKitGTK's WebKitWebDriver, behind scripts/webkit-driver.mjs
# which names MiniBrowser and its features) goes in as the runner's SAFARIDRIVER; it needs
# an X display (scripts/browser-test.sh webkit brings an Xvfb).
chrome_env() { env -u GECKODRIVER -u SAFARIDRIVER CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}" "$@"; }
firefox_env() { env -u CHROMEDRIVER -u SAFARIDRIVER GECKODRIVER="${GECKODRIVER:-$HOME/.cargo/bin/geckodriver}" "$@"; }
_outbox_scripts="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
webkit_env() { env -u CHROMEDRIVER -u GECKODRIVER SAFARIDRIVER="$_outbox_scripts/webkit-driver.mjs" "$@"; }
# The standard library source of the toolchain on PATH: setup.sh installs it, build.sh
# builds std from it (build-std) when it is there.
std_source_dir() { echo "$(rustc --print sysroot)/lib/rustlib/src/rust/library"; }
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-180}"
unset _rustup_wasm _sysroot
# private_tmpdir: points TMPDIR at a directory of this run's own and removes it when the
# calling script exits. Browsers, drivers (Chromium's scoped_dir profiles, geckodriver's),
# relays and the tests' mkdtemp all write there; what a killed process leaves behind is
# removed with it, so repeated runs on one machine do not fill its disk (a full disk
# failed a CI run: leftover profiles and clones).
private_tmpdir() {
  local base="${TMPDIR:-/tmp}"
  TMPDIR="$(mktemp -d "$base/outbox-run.XXXXXX")" || return 1
  export TMPDIR
  _outbox_private_tmp="$TMPDIR"
  trap 'rm -rf "$_outbox_private_tmp"' EXIT
}
