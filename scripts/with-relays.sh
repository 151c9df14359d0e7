#!/usr/bin/env bash
# Runs a command with real Nostr relays on 127.0.0.1, then stops them:
#   scripts/with-relays.sh wasm-pack test --headless --chrome -- --test transport_ws
#
# Starts, on free ports:
#   - nostr-rs-relay with a temporary config and SQLite directory;
#   - tests/fault-relay (built here when missing) with its switchable second listener.
# Exports for the command (the browser tests read them at compile time, option_env!):
#   OUTBOX_TEST_RELAY_URL   ws://127.0.0.1:P  nostr-rs-relay
#   OUTBOX_TEST_FAULT_URL   ws://127.0.0.1:Q  fault relay (behaviour by path, see its docs)
#   OUTBOX_TEST_SWITCH_URL  ws://127.0.0.1:R  fault relay listener that /control stops/starts
#   OUTBOX_TEST_CLOSED_URL  ws://127.0.0.1:S  a port where nothing listens
# Exits with the command's status. The relays are stopped on any exit (trap), and the fault
# relay also exits by itself once this script's process is gone.
#
# Tools: NOSTR_RS_RELAY (default: nostr-rs-relay on PATH); FAULT_RELAY_BIN (default: built
# here from tests/fault-relay into ${FAULT_RELAY_TARGET_DIR:-$NOSTR_OUTBOX_TOOLS/fault-relay-target};
# about 5-10 minutes the first time on 2 cores, a no-op afterwards).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

if [ $# = 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi

log() { printf 'with-relays: %s\n' "$*" >&2; }

# --- tools ------------------------------------------------------------------------
NOSTR_RS_RELAY="${NOSTR_RS_RELAY:-$(command -v nostr-rs-relay || true)}"
if [ -z "$NOSTR_RS_RELAY" ] || [ ! -x "$NOSTR_RS_RELAY" ]; then
  log "nostr-rs-relay not found (install it: cargo install nostr-rs-relay; needs protoc)"
  exit 2
fi
if [ -z "${FAULT_RELAY_BIN:-}" ]; then
  # Built from this checkout every time (cargo makes an unchanged build a no-op), into a
  # target dir outside the work tree so fresh clones (CI) reuse it.
  fr_target="${FAULT_RELAY_TARGET_DIR:-$NOSTR_OUTBOX_TOOLS/fault-relay-target}"
  FAULT_RELAY_BIN="$fr_target/release/fault-relay"
  log "building tests/fault-relay (target dir $fr_target)"
  CARGO_TARGET_DIR="$fr_target" cargo build --release --locked --quiet \
    --manifest-path tests/fault-relay/Cargo.toml >&2
fi

# --- lifecycle --------------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/with-relays.XXXXXX")"
PIDS=()
CMD_PID=
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$CMD_PID" ]; then
    kill -TERM "$CMD_PID" 2>/dev/null || true
    wait "$CMD_PID" 2>/dev/null || true
  fi
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    # Give each a moment, then insist.
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() { # wait_port PORT NAME PID LOG
  for _ in $(seq 1 200); do
    if port_open "$1"; then return 0; fi
    if ! kill -0 "$3" 2>/dev/null; then
      log "$2 exited before listening; its log:"
      tail -n 30 "$4" >&2 || true
      return 1
    fi
    sleep 0.05
  done
  log "$2 did not listen on port $1 within 10 s; its log:"
  tail -n 30 "$4" >&2 || true
  return 1
}

# --- nostr-rs-relay ---------------------------------------------------------------
nrr_port="$("$FAULT_RELAY_BIN" free-port)"
mkdir -p "$WORK/nrr-db"
cat >"$WORK/nrr.toml" <<EOF
[info]
relay_url = "ws://127.0.0.1:$nrr_port/"
name = "nostr-outbox test relay"
description = "Temporary relay started by scripts/with-relays.sh"

[database]
engine = "sqlite"
data_directory = "$WORK/nrr-db"

[network]
address = "127.0.0.1"
port = $nrr_port

[options]
reject_future_seconds = 1800

[limits]
max_event_bytes = 131072
max_ws_message_bytes = 131072
max_ws_frame_bytes = 131072
EOF
RUST_LOG="${NRR_LOG:-warn}" "$NOSTR_RS_RELAY" --config "$WORK/nrr.toml" --db "$WORK/nrr-db" \
  >"$WORK/nostr-rs-relay.log" 2>&1 &
nrr_pid=$!
PIDS+=("$nrr_pid")

# --- fault relay ------------------------------------------------------------------
# It also watches this script: if the script dies without running its trap (SIGKILL), the
# fault relay stops nostr-rs-relay and itself.
"$FAULT_RELAY_BIN" --switch --ready-file "$WORK/fault.env" --parent-pid $$ \
  --also-kill "$nrr_pid" >"$WORK/fault-relay.log" 2>&1 &
PIDS+=($!)
fault_pid=$!
for _ in $(seq 1 200); do
  [ -s "$WORK/fault.env" ] && break
  if ! kill -0 "$fault_pid" 2>/dev/null; then break; fi
  sleep 0.05
done
if [ ! -s "$WORK/fault.env" ]; then
  log "fault-relay did not start; its log:"
  tail -n 30 "$WORK/fault-relay.log" >&2 || true
  exit 1
fi
set -a
. "$WORK/fault.env"
set +a

wait_port "$nrr_port" nostr-rs-relay "$nrr_pid" "$WORK/nostr-rs-relay.log"

export OUTBOX_TEST_RELAY_URL="ws://127.0.0.1:$nrr_port"
export OUTBOX_TEST_CLOSED_URL="ws://127.0.0.1:$("$FAULT_RELAY_BIN" free-port)"
log "nostr-rs-relay $OUTBOX_TEST_RELAY_URL, fault relay $OUTBOX_TEST_FAULT_URL (switch $OUTBOX_TEST_SWITCH_URL), closed $OUTBOX_TEST_CLOSED_URL"

# Not exec: the trap must run after the command. In the background plus `wait`, so a
# signal to this script is handled at once (bash defers traps until a foreground child
# exits) and forwarded to the command.
set +e
"$@" &
CMD_PID=$!
wait "$CMD_PID"
rc=$?
CMD_PID=
set -e
if [ "$rc" != 0 ] && [ -n "${WITH_RELAYS_SHOW_LOGS:-1}" ]; then
  log "command failed ($rc); last relay log lines:"
  tail -n 15 "$WORK/nostr-rs-relay.log" >&2 || true
  tail -n 15 "$WORK/fault-relay.log" >&2 || true
fi
exit "$rc"
