#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# approval = "ask". terminal_start `bash -i` is approved. Up (unasked: "only moves") recalls a line
# from the user's shell history; the approval of the following Enter shows only "⏎", not the line
# that Enter runs. exit 1 while a command runs after an approval that never showed it.
set -u
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
T=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX"); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/home/.config/hands" "$T/proj"; export HOME="$T/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME HANDS_STATE_DIR HANDS_APPROVAL
echo 'approval = "ask"' > "$HOME/.config/hands/config.toml"
printf 'ls\ntouch PWNED_from_history\n' > "$HOME/.bash_history"   # the user's own history
cat > "$T/calls" <<'J'
{"name":"terminal_start","arguments":{"command":"bash --norc -i","yield_ms":500}}
{"name":"terminal_send","arguments":{"id":"p1","keys":["Up"],"yield_ms":300}}
{"name":"terminal_send","arguments":{"id":"p1","keys":["Enter"],"yield_ms":800}}
J
cd "$T/proj"
timeout 50 python3 $RT_LIB/mcpc.py --answer accept --calls "$T/calls" --timeout 20 -- "$HANDS_BIN" --root "$T/proj" mcp > "$T/out" 2>&1
grep '"message"' "$T/out"
n=$(grep -c '^ELICIT' "$T/out")
if [ -e "$T/proj/PWNED_from_history" ] && ! grep '"message"' "$T/out" | grep -q 'PWNED_from_history'; then
  echo "HOLE: 'touch PWNED_from_history' ran; $n approvals were asked and none showed it"; exit 1; fi
echo "held"; exit 0
