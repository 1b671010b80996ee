#!/usr/bin/env bash
# Benchmark of redaction with many stored secrets (default 1,000): the throughput of a process
# output stream through hands_core::redact::Scrubber in 64 KiB chunks with the engine installed
# and without (and their ratio), and the cost of hands_core::redact::text on a 32 KiB result.
# Usage: bash bench/redact.sh [SECRETS, default 1000] [MiB, default 1024]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release -p hands-secrets --example redact_bench -- "${1:-1000}" "${2:-1024}"
