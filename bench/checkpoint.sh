#!/usr/bin/env bash
# Checkpoint benchmark: a 20,000-file, 200 MB tree; the first checkpoint against
# `git add -A && git commit` on a copy of the same tree, a checkpoint with 10 files changed,
# a restore of 100 changed files, and the store's growth. Prints the figures and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p hands-checkpoint --example bench
bin="${CARGO_TARGET_DIR:-target}/release/examples/bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree"
python3 - "$tmp/tree" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(200):
    os.makedirs(f"{root}/d{d:03}", exist_ok=True)
    for f in range(100):
        # 10 KB of text a file, different in each file: 20,000 files, 200 MB.
        line = f"line of file {d}/{f} " * 4 + "\n"
        with open(f"{root}/d{d:03}/f{f:03}.txt", "w") as fh:
            fh.write((line * (10240 // len(line) + 1))[:10240])
PY
cp -a "$tmp/tree" "$tmp/git"
cd "$tmp/git"
git init -q && git config user.email b@b && git config user.name b
start=$(date +%s%N)
git add -A && git commit -qm bench
git_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cd - >/dev/null
sync
"$bin" "$tmp/tree" "$tmp/state" "$git_ms"
