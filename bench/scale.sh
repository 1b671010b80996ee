#!/usr/bin/env bash
# Scale-out figures: event appends across 3 processes on PostgreSQL, SSE delivery latency through
# 3 `hands serve` nodes to 500 subscribers, lease takeover after a SIGKILL, RSS with 10,000 idle
# sessions and the first request to an evicted one, and SQLite on one node as the reference.
# Needs PostgreSQL (/usr/lib/postgresql/*/bin), python3 with httpx (tests/e2e/requirements.txt)
# and runs as root (initdb as the postgres user). Builds the release binary and the load example.
# Env: SCALE_SECONDS (10), SCALE_SUBSCRIBERS (500), SCALE_IDLE_SESSIONS (10000), PROFILE (release).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
PROFILE="${PROFILE:-release}"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
flag=(); [ "$PROFILE" = release ] && flag=(--release)
(cd "$REPO" && cargo build "${flag[@]}" -p hands -p hands-store --example append_load)
dir="$TARGET/$PROFILE"; [ "$PROFILE" = dev ] && dir="$TARGET/debug"
export HANDS_BIN="$dir/hands" APPEND_LOAD="$dir/examples/append_load"
PY="${SCALE_PYTHON:-python3}"
exec timeout 1200 "$PY" "$HERE/scale.py"
