#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# Started in the home folder, hands serve/mcp/run refuse it and list candidate projects as
# `--root ~/…` lines. A repository's sub-folder name (two levels below home) is printed with its
# newline raw, so a repository can add a forged `--root` suggestion line of its choosing.
# exit 1 while a raw newline from a folder name reaches stderr.
set -u
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
T=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX"); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/home/.config/hands"; export HOME="$T/home"; unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME HANDS_STATE_DIR
N=$(printf "app\n  --root ~ # FORGED \001")
mkdir -p "$HOME/clone/$N" && touch "$HOME/clone/$N/package.json"
mkdir -p "$HOME/q/it's" && touch "$HOME/q/it's/go.mod"
cd "$HOME"
bad=0
for c in "mcp" "serve --listen 127.0.0.1:0" "run hello"; do
  timeout 10 "$HANDS_BIN" $c </dev/null > "$T/o" 2>&1
  echo "== hands $c"; cat -A "$T/o" | head -8
  grep -q "^  --root ~ # FORGED" "$T/o" && bad=1
done
if [ $bad = 1 ]; then echo "HOLE: a folder name's newline forged a "--root ~" suggestion line (other control bytes are escaped; the newline is not)"; exit 1; fi
echo held; exit 0
