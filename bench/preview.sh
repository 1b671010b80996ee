#!/usr/bin/env bash
# Benchmark of the preview on the Vite fixture: preview_open → ready (cold, then warm, by stage),
# preview_open on a running preview, an error thrown in the page → read_runtime_errors, and the
# memory of the browser's (and the server's) processes. Needs /usr/bin/chromium and the fixture's
# npm packages (installed here with npm ci when missing).
# Usage: bash bench/preview.sh [RUNS, default 5] [ERRORS, default 30] [--screenshot FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
fixture=tests/preview/fixtures/vite-app
[ -x "$fixture/node_modules/.bin/vite" ] || (cd "$fixture" && npm ci --no-audit --no-fund --loglevel=error)
/usr/bin/chromium --version 2>/dev/null
cargo run --quiet --release -p hands-preview --example bench_preview -- "$@"
