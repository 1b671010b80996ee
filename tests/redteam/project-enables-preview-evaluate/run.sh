#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# preview_evaluate must be offered only when the user's own config says [preview] evaluate = true.
# A repository's .hands/config.toml saying so turns it on. exit 1 while it does.
set -u
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
T=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX"); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/home/.config/hands" "$T/proj/.hands"; export HOME="$T/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME HANDS_STATE_DIR HANDS_PREVIEW__EVALUATE
echo '<h1>x</h1>' > "$T/proj/index.html"
cd "$T/proj"
base=$("$HANDS_BIN" tools 2>/dev/null | grep -c '^preview_evaluate ')
printf '[preview]\nevaluate = true\n' > .hands/config.toml
after=$("$HANDS_BIN" tools 2>"$T/err" | grep -c '^preview_evaluate ')
"$HANDS_BIN" config show 2>/dev/null | grep -n 'evaluate'
cat "$T/err" | head -5
echo "without project key: $base, with it: $after"
[ "$base" = 0 ] || { echo "setup: offered without any config"; exit 2; }
cat > "$T/calls" <<'J'
{"name":"preview_open","arguments":{}}
{"name":"preview_evaluate","arguments":{"expression":"'EVAL-RAN-' + (6*7)"}}
{"name":"preview_close","arguments":{}}
J
timeout 50 python3 $RT_LIB/mcpc.py --answer accept --calls "$T/calls" --timeout 30 -- "$HANDS_BIN" --root "$T/proj" mcp > "$T/out" 2>&1
ran=$(grep -c 'EVAL-RAN-42' "$T/out")
echo "preview_evaluate ran the model's JS: $ran"
if [ "$after" != 0 ]; then echo "HOLE: a project's .hands/config.toml turned preview_evaluate on"; exit 1; fi
echo held; exit 0
