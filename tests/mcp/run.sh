#!/usr/bin/env bash
# Everything the independent MCP suite needs, for CI or by hand, on a fresh machine as root with only
# the package registries reachable:
#   1. a venv (default $HOME/.cache/hands-mcp-venv) with tests/mcp/requirements.txt,
#   2. `cargo build -p hands` (honours CARGO_TARGET_DIR),
#   3. pytest tests/mcp (any failure fails; pytest's exit 5, "no tests ran", fails too),
#   4. run_conformance.sh: Node 22 + MCP Inspector CLI + the MCP conformance suite against hands serve.
# Env: HANDS_MCP_VENV, HANDS_MCP_NODE_DIR, HANDS_MCP_SKIP_CONFORMANCE=1 (local use only; refused with CI set).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="${HANDS_MCP_VENV:-$HOME/.cache/hands-mcp-venv}"

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'tests/mcp/run.sh: %s\n' "$*" >&2; exit 1; }

PY="$(command -v python3 || true)"
if [ -z "$PY" ]; then
  if [ -n "${CI:-}" ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null || true
    PY="$(command -v python3 || true)"
  fi
  [ -n "$PY" ] || die "python3 is not installed"
fi

say "python venv at $VENV"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
fi
REQ_STAMP="$VENV/.requirements.sha"
REQ_SHA="$(sha256sum "$HERE/requirements.txt" | cut -d' ' -f1)"
if [ "$(cat "$REQ_STAMP" 2>/dev/null)" != "$REQ_SHA" ]; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$HERE/requirements.txt"
  echo "$REQ_SHA" >"$REQ_STAMP"
fi
"$VENV/bin/python" -c 'import mcp, pytest, anyio; from importlib.metadata import version; print("mcp", version("mcp"), "pytest", pytest.__version__)'

say "cargo build -p hands"
(cd "$REPO" && cargo build -p hands --locked)
export HANDS_BIN="${CARGO_TARGET_DIR:-$REPO/target}/debug/hands"
case "$HANDS_BIN" in /*) ;; *) HANDS_BIN="$REPO/$HANDS_BIN" ;; esac
[ -x "$HANDS_BIN" ] || die "no hands binary at $HANDS_BIN"

status=0
say "pytest tests/mcp"
set +e
(cd "$HERE" && "$VENV/bin/python" -m pytest --durations=5 "$@")
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  status=1
elif [ "$rc" -ne 0 ]; then
  status=1
fi

if [ -n "${HANDS_MCP_SKIP_CONFORMANCE:-}" ] && [ -z "${CI:-}" ]; then
  say "conformance skipped (HANDS_MCP_SKIP_CONFORMANCE)"
else
  say "MCP Inspector CLI and conformance suite"
  bash "$HERE/run_conformance.sh" || status=1
fi
exit "$status"
