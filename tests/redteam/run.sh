#!/usr/bin/env bash
# The attacker's reproductions, kept as tests: each folder holds a run.sh that drives the real
# `hands` binary (raw MCP over stdio, loopback servers only) and exits 1 while its hole is open.
# Every case must exit 0. Env: HANDS_BIN (default $CARGO_TARGET_DIR/debug/hands).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
failed=0
for case in "$HERE"/*/run.sh; do
  name="$(basename "$(dirname "$case")")"
  start=$(date +%s)
  if out="$(bash "$case" 2>&1)"; then
    echo "ok    $name ($(( $(date +%s) - start )) s)"
  else
    echo "FAIL  $name"
    printf '%s\n' "$out" | tail -20 | sed 's/^/      /'
    failed=1
  fi
done
exit "$failed"
