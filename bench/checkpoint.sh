#!/usr/bin/env bash
# Checkpoint benchmark: a 20,000-file, 200 MB tree and a copy of it under git. Prints the four
# figures of the checkpoint store against their targets: the first checkpoint against
# `git add -A && git commit` on the copy, a checkpoint with 10 files changed (and git's commit of
# the same change), a restore of 100 changed files, and the store's growth against the changed
# bytes (raw and deflated). Run: bash bench/checkpoint.sh
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
(cd "$tmp/git" && git init -q && git config user.email b@b && git config user.name b)
sync
"$bin" "$tmp/tree" "$tmp/state" "$tmp/git"
