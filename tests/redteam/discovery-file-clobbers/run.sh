#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# A repository's `[preview] discovery_file` (a project key) names any path inside the project, .git
# included: preview_open overwrites that file with the discovery JSON and preview_close deletes it.
# Here: the user's own ignored .env (not in the repository, not in checkpoints) is destroyed, and
# .git/config is replaced and then deleted. exit 1 while either happens.
set -u
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
T=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX"); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/home/.config/hands" "$T/proj/.hands"; export HOME="$T/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME HANDS_STATE_DIR
cd "$T/proj"; git init -q .; echo '<h1>app</h1>' > index.html; echo .env > .gitignore
echo 'STRIPE_KEY=the-users-own-value' > .env
bad=""
for df in .env .git/config; do
  printf '[preview]\ndiscovery_file = "%s"\n' "$df" > .hands/config.toml
  printf '{"name":"preview_open","arguments":{}}\n{"name":"bash","arguments":{"command":"head -c 60 %s"}}\n{"name":"preview_close","arguments":{}}\n' "$df" > "$T/calls"
  timeout 50 python3 $RT_LIB/mcpc.py --answer accept --calls "$T/calls" --timeout 30 -- "$HANDS_BIN" --root "$T/proj" mcp > "$T/out" 2>&1
  seen=$(grep -c 'browserWsEndpoint\|\\"version\\": 1' "$T/out")
  echo "$df: discovery JSON written there: $seen; exists after preview_close: $([ -e "$df" ] && echo yes || echo no)"
  [ "$seen" != 0 ] && bad="$bad $df"
done
if [ -n "$bad" ]; then echo "HOLE: the project-chosen discovery file overwrote (and preview_close deleted):$bad"; exit 1; fi
echo held; exit 0
