#!/usr/bin/env bash
# Benchmark hands' search and read tools against the reference command-line tools, side by side.
#
# Flow: build the release binary, build a corpus of >= 200 MB of real Rust source (copies of the
# cargo registry's sources) under bench/corpus, then run hyperfine on each pair and print a table
# of medians with the ratio hands/reference. Results (hyperfine JSON) go to bench/results/.
#
# Usage: bash bench/run.sh        (env: CORPUS_MB=200 RUNS=10 WARMUP=2)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
corpus="$here/corpus"
results="$here/results"
corpus_mb="${CORPUS_MB:-200}"
runs="${RUNS:-10}"
warmup="${WARMUP:-2}"
needle="HANDS_BENCH_RARE_NEEDLE_7f3a"

missing=0
for tool in hyperfine rg fdfind python3 cargo; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "missing: $tool" >&2
        missing=1
    fi
done
if [[ $missing == 1 ]]; then
    echo "install with: sudo apt-get install hyperfine ripgrep fd-find python3 (and rustup for cargo)" >&2
    exit 1
fi

echo "== building hands (release)"
(cd "$repo" && cargo build --release --quiet)
hands="$repo/target/release/hands"

# ---- corpus: copies of the cargo registry's sources until it is big enough ----
size_mb() { du -sm "$1" 2>/dev/null | cut -f1; }
mkdir -p "$corpus"
src_dirs=(~/.cargo/registry/src/*/)
if [[ ! -d "${src_dirs[0]}" ]]; then
    echo "no ~/.cargo/registry/src/*/ to copy; run cargo fetch in some project first" >&2
    exit 1
fi
n=0
while [[ "$(size_mb "$corpus")" -lt "$corpus_mb" ]]; do
    n=$((n + 1))
    if [[ ! -d "$corpus/$n" ]]; then
        echo "== copying the registry sources into corpus/$n"
        mkdir -p "$corpus/$n"
        for d in "${src_dirs[@]}"; do cp -r "$d". "$corpus/$n/"; done
        # One rare needle per copy, so that the rare-literal search has a few hits.
        echo "const X: &str = \"$needle\";" >"$corpus/$n/needle.rs"
    fi
done
# A 1 MB text file for read_file (just under read_file's whole-file limit).
big="$corpus/big.txt"
if [[ ! -f "$big" ]]; then
    python3 -c "
import sys
line = 'the quick brown fox jumps over the lazy dog 0123456789 abcdefghij\n'
sys.stdout.write(line * (1_000_000 // len(line)))" >"$big"
fi
files=$(find "$corpus" -type f | wc -l)
echo "== corpus: $(size_mb "$corpus") MB, $files files, in $corpus"

mkdir -p "$results"
# -N: no shell in between (measures the programs, not sh). --output=pipe: rg stops at the first match when its stdout is /dev/null, which would flatter it.
hf() {
    local name="$1"
    shift
    hyperfine -N --warmup "$warmup" --runs "$runs" --output=pipe --style basic \
        --export-json "$results/$name.json" "$@" >/dev/null
    echo "   done: $name"
}

cd "$here"
echo "== running (each: $warmup warm-up + $runs runs)"
hf grep-literal -n hands "$hands call grep pattern=$needle --root corpus" \
    -n rg "rg -n --hidden --no-require-git $needle corpus"
hf grep-regex -n hands "$hands call grep 'pattern=fn\\s+\\w+_mut\\(' --root corpus" \
    -n rg "rg -n --hidden --no-require-git 'fn\\s+\\w+_mut\\(' corpus"
hf grep-files -n hands "$hands call grep 'pattern=fn\\s+\\w+_mut\\(' output_mode=files --root corpus" \
    -n rg "rg -l --hidden --no-require-git 'fn\\s+\\w+_mut\\(' corpus"
hf glob -n hands "$hands call glob 'pattern=**/*.rs' --root corpus" \
    -n rg "rg --files --hidden --no-require-git -g '*.rs' corpus" \
    -n fdfind "fdfind -e rs --hidden . corpus"
hf read-file -n hands "$hands call read_file path=big.txt --root corpus" \
    -n cat "cat corpus/big.txt"
hf startup -n hands "$hands tools" -n true "true"  # "true": the cost of starting any process

echo "== same work? (hands' totals vs the reference's counts)"
total() { "$hands" call --json "$@" --root corpus | python3 -c 'import json,sys; s=json.load(sys.stdin)["structuredContent"]; print(s.get("total", s.get("total_matches")))'; }
echo "   rare literal: hands $(total grep pattern=$needle) lines, rg $(rg -n --hidden --no-require-git $needle corpus | wc -l)"
echo "   regex:        hands $(total grep 'pattern=fn\s+\w+_mut\(') lines, rg $(rg -n --hidden --no-require-git 'fn\s+\w+_mut\(' corpus | wc -l)"
echo "   glob *.rs:    hands $(total glob 'pattern=**/*.rs') files, rg $(rg --files --hidden --no-require-git -g '*.rs' corpus | wc -l), fd $(fdfind -e rs --hidden . corpus | wc -l)"

python3 "$here/table.py" "$results" grep-literal grep-regex grep-files glob read-file startup
