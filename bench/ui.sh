#!/usr/bin/env bash
# Benchmark of the web UI in Debian's Chromium against the real `hands serve` and the scripted model:
# first load to interactive, a 5,000-event session opened and scrolled, and the frame rate while
# 2,000 text deltas a second stream in (see bench/ui.py). Needs /usr/bin/chromium and Playwright for
# Python (tests/ui/requirements.txt; installed into a venv under ~/.cache when missing).
# Usage: bash bench/ui.sh [--runs N] [--events N] [--rate N] [--seconds N]
# Env: HANDS_BIN (default: a release build, made here), HANDS_UI_PYTHON (a python with Playwright).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/chromium ] || { echo "bench/ui.sh: /usr/bin/chromium is missing (apt-get install chromium)" >&2; exit 1; }
if [ -z "${HANDS_BIN:-}" ]; then
  cargo build --quiet --release -p hands
  HANDS_BIN="${CARGO_TARGET_DIR:-target}/release/hands"
fi
export HANDS_BIN
PY="${HANDS_UI_PYTHON:-}"
if [ -z "$PY" ]; then
  venv="$HOME/.cache/hands-ui-venv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -c 'import playwright, httpx' 2>/dev/null ||
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r tests/ui/requirements.txt
  PY="$venv/bin/python"
fi
/usr/bin/chromium --version 2>/dev/null || true
exec "$PY" bench/ui.py "$@"
