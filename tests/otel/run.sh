#!/usr/bin/env bash
# OpenTelemetry traces of the real `hands` binary (`hands run` with the scripted model, `hands mcp`
# over stdio) received by a real OTLP receiver (receiver.py: OTLP/HTTP protobuf and OTLP/gRPC).
#
# Expects python3 with tests/otel/requirements.txt installed (opentelemetry-proto, grpcio, pytest;
# this script installs nothing) and a built binary: $HANDS_BIN, else $CARGO_TARGET_DIR/debug/hands,
# else <repo>/target/debug/hands. Extra arguments go to pytest. Env: HANDS_OTEL_PYTHON (default
# python3). Under CI=true missing packages or binary fail; locally they skip, loudly. pytest's
# "no tests ran" (exit 5) is a failure here.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PY="${HANDS_OTEL_PYTHON:-python3}"

missing() {
  if [ "${CI:-}" = "true" ]; then
    printf 'tests/otel/run.sh: %s\n' "$*" >&2
    exit 1
  fi
  printf 'tests/otel/run.sh: SKIPPED: %s\n' "$*" >&2
  exit 0
}

command -v "$PY" >/dev/null || missing "$PY is not installed"
"$PY" -c 'import pytest, httpx, grpc, opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc' 2>/dev/null ||
  missing "opentelemetry-proto, grpcio, httpx or pytest is missing: $PY -m pip install -r tests/otel/requirements.txt (in a venv)"

HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/hands}"
case "$HANDS_BIN" in /*) ;; *) HANDS_BIN="$REPO/$HANDS_BIN" ;; esac
export HANDS_BIN
[ -x "$HANDS_BIN" ] || missing "no hands binary at $HANDS_BIN: run \`cargo build -p hands\` (or set HANDS_BIN)"
echo "hands: $HANDS_BIN"

set +e
(cd "$HERE" && "$PY" -m pytest --durations=10 -p no:cacheprovider "$@")
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "tests/otel/run.sh: pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$rc"
