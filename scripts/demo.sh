#!/usr/bin/env bash
# Runs the demo: two local nostr-rs-relay instances (switchable from the page) and the
# page on http://127.0.0.1:PORT/www/. Stops with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
port="${1:-8080}"
exec node www/server.mjs --port "$port"
