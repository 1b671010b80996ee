#!/usr/bin/env bash
# apply_patch against `git apply`: the same change (20 hunks across 5 files of 2,000 lines each)
# applied by `hands call apply_patch` (a V4A patch) and by `git apply` (the unified diff git makes
# of it), each on a fresh copy of the files, RUNS times; prints the median and mean wall time of
# each and their ratio, after checking that both produce the same files.
# Builds the release binary first. Env: RUNS (30), PROFILE (release; `dev` for a debug build).
# Usage: bash bench/apply_patch.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
PROFILE="${PROFILE:-release}"
RUNS="${RUNS:-30}"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
flag=(); [ "$PROFILE" = release ] && flag=(--release)
(cd "$REPO" && cargo build --quiet "${flag[@]}" -p hands)
dir="$TARGET/$PROFILE"; [ "$PROFILE" = dev ] && dir="$TARGET/debug"
HANDS="$dir/hands"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# The files, the V4A patch and the git diff of the same change.
python3 - "$WORK" <<'PY'
import os, sys
work = sys.argv[1]
os.makedirs(f"{work}/orig/src", exist_ok=True)
os.makedirs(f"{work}/want/src", exist_ok=True)
patch = ["*** Begin Patch"]
for f in range(5):
    lines = [f"    let value_{f}_{i} = compute({i}, \"file {f}\");" for i in range(2000)]
    new = list(lines)
    name = f"src/file{f}.rs"
    patch.append(f"*** Update File: {name}")
    for h in range(4):
        at = 200 + h * 450
        new[at] = lines[at].replace("compute(", "compute_fast(")
        patch.append("@@")
        patch += [" " + l for l in lines[at - 3:at]]
        patch.append("-" + lines[at])
        patch.append("+" + new[at])
        patch += [" " + l for l in lines[at + 1:at + 4]]
    open(f"{work}/orig/{name}", "w").write("\n".join(lines) + "\n")
    open(f"{work}/want/{name}", "w").write("\n".join(new) + "\n")
patch.append("*** End Patch")
import json
open(f"{work}/patch.json", "w").write(json.dumps({"input": "\n".join(patch) + "\n"}))
PY
(cd "$WORK" && git diff --no-index orig want > change.diff || true)
# git's paths are a/orig/… and b/want/…: applied inside a copy of orig with -p2.

fresh() { rm -rf "$WORK/run"; cp -r "$WORK/orig" "$WORK/run"; }
time_ns() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N); echo $((t1 - t0)); }

hands_run() { (cd "$WORK/run" && "$HANDS" call apply_patch - < "$WORK/patch.json"); }
git_run() { (cd "$WORK/run" && git apply -p2 "$WORK/change.diff"); }

# Both must produce exactly the wanted files.
fresh; hands_run >/dev/null; diff -r "$WORK/run" "$WORK/want" >/dev/null || { echo "apply_patch result differs" >&2; exit 1; }
fresh; git_run; diff -r "$WORK/run" "$WORK/want" >/dev/null || { echo "git apply result differs" >&2; exit 1; }

measure() {
  local name=$1 fn=$2 samples=()
  for _ in $(seq "$RUNS"); do fresh; samples+=("$(time_ns "$fn")"); done
  printf '%s\n' "${samples[@]}" | python3 -c '
import sys, statistics
xs = [int(l) / 1e6 for l in sys.stdin if l.strip()]
print(f"{sys.argv[1]:<22} median {statistics.median(xs):8.2f} ms   mean {statistics.mean(xs):8.2f} ms   (n={len(xs)})")
open(sys.argv[2], "w").write(str(statistics.median(xs)))' "$name" "$WORK/median.$fn"
}
echo "20 hunks across 5 files of 2,000 lines ($PROFILE build, $RUNS runs each, each on a fresh copy):"
measure "hands call apply_patch" hands_run
measure "git apply" git_run
python3 -c 'import sys; a, b = (float(open(p).read()) for p in sys.argv[1:]); print(f"ratio (apply_patch / git apply, medians): {a / b:.2f}")' \
  "$WORK/median.hands_run" "$WORK/median.git_run"
