#!/usr/bin/env bash
# Edit-to-diagnostic latency of hands-code with a warm typescript-language-server, against
# `tsc --noEmit --incremental` on the same generated project (a chain of FILES modules), release
# build. Needs tests/lsp's npm packages (installed here with npm ci when missing).
# Usage: bash bench/lsp.sh [RUNS, default 10] [FILES, default 500]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x tests/lsp/node_modules/.bin/typescript-language-server ] || (cd tests/lsp && npm ci --no-audit --no-fund --loglevel=error)
cargo run --quiet --release -p hands-code --example bench_lsp -- "$@"
