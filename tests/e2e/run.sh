#!/usr/bin/env bash
# The end-to-end session scenarios: the real `hands serve` driven over its HTTP session API, with a
# scripted model server (tests/agent/scripted_model.py) in both wire formats as the only stand-in.
#
# Expects python3 with tests/e2e/requirements.txt installed (pytest, httpx; this script installs
# nothing) and a built binary: $HANDS_BIN, else $CARGO_TARGET_DIR/debug/hands, else
# <repo>/target/debug/hands (`cargo build -p hands`). Extra arguments go to pytest (e.g. -k abort).
# Env: HANDS_E2E_PYTHON (default python3). Under CI a missing binary fails instead of skipping, and
# pytest's "no tests ran" (exit 5) is a failure here.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PY="${HANDS_E2E_PYTHON:-python3}"

die() { printf 'tests/e2e/run.sh: %s\n' "$*" >&2; exit 1; }

command -v "$PY" >/dev/null || die "$PY is not installed"
"$PY" -c 'import pytest, httpx' 2>/dev/null ||
  die "pytest and httpx are missing: $PY -m pip install -r tests/e2e/requirements.txt (in a venv)"

HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/hands}"
case "$HANDS_BIN" in /*) ;; *) HANDS_BIN="$REPO/$HANDS_BIN" ;; esac
export HANDS_BIN
[ -x "$HANDS_BIN" ] || die "no hands binary at $HANDS_BIN: run \`cargo build -p hands\` (or set HANDS_BIN)"
echo "hands: $HANDS_BIN"

set +e
(cd "$HERE" && "$PY" -m pytest --durations=10 "$@")
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "tests/e2e/run.sh: pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$rc"
