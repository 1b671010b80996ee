#!/usr/bin/env bash
# Benchmark of the process tools: per-call overhead of bash inside one process vs spawning
# `bash -c true` directly, and the drain throughput and peak RSS of a 1 GiB output flood.
# With SECRETS (e.g. 1000), the drain again with that many stored secrets' redaction engine
# installed, against none (yes | head -c, and output-like text).
# Usage: bash bench/exec.sh [N calls, default 300] [MiB, default 1024] [SECRETS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release -p hands-exec --example bench_exec -- "${1:-300}" "${2:-1024}"
if [ -n "${3:-}" ]; then
  cargo run --quiet --release -p hands-secrets --example exec_drain -- "$3" "${2:-1024}"
fi
