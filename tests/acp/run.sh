#!/usr/bin/env bash
# The ACP suite, for CI or by hand: the ACP TypeScript SDK (tests/acp/package-lock.json, `npm ci`
# here) as the client of the real `hands acp`, with the scripted model server (python3).
#   1. npm ci in tests/acp when node_modules is missing (.ci/run does it before),
#   2. `cargo build -p hands` (honours CARGO_TARGET_DIR),
#   3. node test_acp.mjs (exit 1 on any failure).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'tests/acp/run.sh: %s\n' "$*" >&2; exit 1; }

command -v node >/dev/null || die "node is not installed (the ACP SDK runs on Node 20 or later)"
command -v python3 >/dev/null || die "python3 is not installed (the scripted model server)"

if [ ! -d "$HERE/node_modules/@agentclientprotocol/sdk" ]; then
  say "npm ci in tests/acp"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
fi

say "cargo build -p hands"
(cd "$REPO" && cargo build -p hands --locked)
export HANDS_BIN="${CARGO_TARGET_DIR:-$REPO/target}/debug/hands"
case "$HANDS_BIN" in /*) ;; *) HANDS_BIN="$REPO/$HANDS_BIN" ;; esac
[ -x "$HANDS_BIN" ] || die "no hands binary at $HANDS_BIN"

say "node tests/acp/test_acp.mjs"
(cd "$HERE" && node test_acp.mjs)
