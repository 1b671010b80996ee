#!/usr/bin/env bash
# The scale-out scenarios: several real `hands serve` nodes on a throwaway PostgreSQL server
# (started by the tests: initdb as the `postgres` user, a free loopback port), driven over the
# session API and SSE with tests/agent/scripted_model.py as the model. See tests/README.md.
#
# Expects python3 with tests/e2e/requirements.txt installed (pytest, httpx), PostgreSQL
# (/usr/lib/postgresql/*/bin) and a built binary ($HANDS_BIN, else $CARGO_TARGET_DIR/debug/hands).
# Under CI a missing PostgreSQL or binary fails; pytest's "no tests ran" (exit 5) is a failure.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PY="${HANDS_SCALE_PYTHON:-${HANDS_E2E_PYTHON:-python3}}"

die() { printf 'tests/scale/run.sh: %s\n' "$*" >&2; exit 1; }

"$PY" -c 'import pytest, httpx' 2>/dev/null ||
  die "pytest and httpx are missing: $PY -m pip install -r tests/e2e/requirements.txt (in a venv)"
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/hands}"
case "$HANDS_BIN" in /*) ;; *) HANDS_BIN="$REPO/$HANDS_BIN" ;; esac
export HANDS_BIN
[ -x "$HANDS_BIN" ] || die "no hands binary at $HANDS_BIN: run \`cargo build -p hands\`"

set +e
(cd "$HERE" && timeout 900 "$PY" -m pytest -p no:cacheprovider --durations=10 "$@")
rc=$?
set -e
[ "$rc" -eq 5 ] && die "pytest collected no tests: that is a failure here"
exit "$rc"
