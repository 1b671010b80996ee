#!/usr/bin/env bash
# The web UI of `hands serve` in a real browser: Playwright for Python driving Debian's Chromium
# against the real server and the scripted model (the e2e suite's fixtures), plus axe-core for
# accessibility (from web/node_modules, installed by `npm ci` in web/).
#
# Expects python3 with tests/ui/requirements.txt installed (this script installs nothing), a built
# binary ($HANDS_BIN, else $CARGO_TARGET_DIR/debug/hands, else <repo>/target/debug/hands) and
# /usr/bin/chromium (or $HANDS_UI_CHROMIUM). Extra arguments go to pytest (e.g. -k approval).
# Env: HANDS_UI_PYTHON (default python3). Under CI a missing prerequisite fails instead of skipping,
# and pytest's "no tests ran" (exit 5) is a failure here.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PY="${HANDS_UI_PYTHON:-python3}"

die() { printf 'tests/ui/run.sh: %s\n' "$*" >&2; exit 1; }

command -v "$PY" >/dev/null || die "$PY is not installed"
"$PY" -c 'import pytest, httpx, playwright' 2>/dev/null ||
  die "pytest, httpx or playwright is missing: $PY -m pip install -r tests/ui/requirements.txt (in a venv)"

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
  echo "tests/ui/run.sh: pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$rc"
