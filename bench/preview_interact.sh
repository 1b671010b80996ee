#!/usr/bin/env bash
# Benchmark of using the app in the preview (issue 32), release build: click-to-result (a
# preview_act call: action, settle, delta) on the interact fixture, a snapshot of a 5,000-node
# page, and hands' snapshot sizes against Playwright MCP 0.0.83's on the same two pages (the
# fixture's login page and the 5,000-node page), driving the same Debian Chromium.
# Playwright MCP is installed with npm into a scratch folder (PW_DIR, default
# $HOME/.cache/hands-bench-playwright-mcp); SKIP_PLAYWRIGHT=1 leaves the comparison out.
# Usage: bash bench/preview_interact.sh [RUNS, default 30]
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/chromium --version 2>/dev/null
pages="$(mktemp -d)"
trap 'rm -rf "$pages"; [ -n "${server:-}" ] && kill "$server" 2>/dev/null || true' EXIT
out="$(cargo run --quiet --release -p hands-preview --example bench_interact -- "${1:-30}" --pages "$pages")"
echo "$out" | grep -v '^HANDS_'
[ -n "${SKIP_PLAYWRIGHT:-}" ] && exit 0
pw="${PW_DIR:-$HOME/.cache/hands-bench-playwright-mcp}"
if [ ! -x "$pw/node_modules/.bin/playwright-mcp" ]; then
  mkdir -p "$pw"
  (cd "$pw" && npm install --no-audit --no-fund --loglevel=error @playwright/mcp@0.0.83 >/dev/null)
fi
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$pages" >/dev/null 2>&1 &
server=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
pwout="$(node bench/playwright_snapshot.mjs "$pw/node_modules/.bin/playwright-mcp" \
  "http://127.0.0.1:$port/index.html" "http://127.0.0.1:$port/big.html")"
read -r _ hands_app hands_big_whole <<<"$(echo "$out" | grep '^HANDS_WHOLE' | sed 's/app //; s/big //')"
read -r _ shown_app _ <<<"$(echo "$out" | grep '^HANDS_SHOWN' | sed 's/app //; s/big //')"
pw_app="$(echo "$pwout" | awk '/index.html/ {print $3}')"
pw_big="$(echo "$pwout" | awk '/big.html/ {print $3}')"
pw_app_yaml="$(echo "$pwout" | awk '/index.html/ {print $4}')"
pw_big_yaml="$(echo "$pwout" | awk '/big.html/ {print $4}')"
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
# Three ways to compare, each reported: hands' outline (the file) against Playwright MCP's whole
# answer (the issue's figure); outline against outline (Playwright's yaml block, without its
# page header); and what the model reads of each first snapshot (hands' header included).
echo "login page: hands outline $hands_app bytes, Playwright MCP answer $pw_app bytes: ratio $(ratio "$hands_app" "$pw_app")"
echo "login page, outline against outline: hands $hands_app, Playwright MCP $pw_app_yaml bytes: ratio $(ratio "$hands_app" "$pw_app_yaml")"
echo "login page, what the model reads: hands $shown_app, Playwright MCP $pw_app bytes: ratio $(ratio "$shown_app" "$pw_app")"
echo "5,000-node page, whole: hands $hands_big_whole bytes, Playwright MCP $pw_big bytes: ratio $(ratio "$hands_big_whole" "$pw_big")"
echo "5,000-node page, outline against outline: hands $hands_big_whole, Playwright MCP $pw_big_yaml bytes: ratio $(ratio "$hands_big_whole" "$pw_big_yaml")"
echo "5,000-node page within hands' default budget (12000 bytes) vs Playwright MCP: ratio $(ratio 12000 "$pw_big")"
