#!/usr/bin/env bash
# Serves the demo: the repository root over HTTP on 127.0.0.1 so that www/ can load
# pkg/. Stops with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
port="${1:-8080}"
echo "demo: open http://127.0.0.1:${port}/www/  (Ctrl-C to stop)"
exec python3 -m http.server "$port" --bind 127.0.0.1
