#!/usr/bin/env bash
# How long a user's install of hands takes: `cargo install --locked --path crates/cli` from nothing
# (a fresh target dir; the crates' sources downloaded already, as after one `cargo fetch`), with
# the install profile (quick-release) and, with ALSO_RELEASE=1, with the full release profile
# beside it. Prints wall time, CPU time (user + sys) and the load average before and after: on a
# shared machine the wall time is only as good as the load it ran under, and CPU time / cores is
# the wall time an idle machine would approach.
# Env: PROFILES (default "quick-release"; e.g. "quick-release release"), JOBS (cargo's -j, default
# the cores).
# Usage: bash bench/install.sh
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
PROFILES="${PROFILES:-quick-release}"
cores="$(nproc)"
(cd "$REPO" && cargo fetch --locked --quiet)
for profile in $PROFILES; do
  work="$(mktemp -d)"
  echo "== cargo install --locked --profile $profile --path crates/cli ($cores cores)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  start=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$work/cpu" \
    env CARGO_TARGET_DIR="$work/target" CARGO_INCREMENTAL=0 \
    cargo install --quiet --locked --profile "$profile" ${JOBS:+-j "$JOBS"} \
    --path "$REPO/crates/cli" --root "$work/root"
  end=$(date +%s.%N)
  echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
  read -r user sys <"$work/cpu"
  python3 - "$start" "$end" "$user" "$sys" "$cores" <<'EOF'
import sys
start, end, user, sys_, cores = map(float, sys.argv[1:])
wall, cpu = end - start, user + sys_
print(f"wall {wall / 60:.1f} min; CPU {cpu / 60:.1f} min (user + sys), {cpu / cores / 60:.1f} min per core")
EOF
  ls -l "$work/root/bin/hands" | awk '{printf "binary: %.1f MB\n", $5 / 1e6}'
  "$work/root/bin/hands" --version
  rm -rf "$work"
done
