#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# approval = "ask" over MCP: the elicitation message hands writes for a bash call carries the
# command's ESC/CR sequences and bidi overrides raw (hands run escapes them: \e, \r, \u{202e}), so
# a terminal MCP client that prints the message shows "echo safe" while "touch HIDDEN" runs.
# Blank runs and empty lines are not folded (⟨N spaces⟩) either. exit 1 while raw controls reach the client.
set -u
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
T=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX"); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/home/.config/hands" "$T/proj"; export HOME="$T/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME HANDS_STATE_DIR HANDS_APPROVAL
echo 'approval = "ask"' > "$HOME/.config/hands/config.toml"
python3 - > "$T/calls" <<'P'
import json
print(json.dumps({"name":"bash","arguments":{"command":"touch HIDDEN\u001b[2K\r\u001b[1Aecho safe"}}))
print(json.dumps({"name":"bash","arguments":{"command":"echo safe #\u202e NEDDIH hcuot ;\u202c"}}))
P
cd "$T/proj"
timeout 40 python3 $RT_LIB/mcpc.py --answer decline --calls "$T/calls" --timeout 15 -- "$HANDS_BIN" --root "$T/proj" mcp > "$T/out" 2>&1
python3 - "$T/out" <<'P'
import sys,re,json
txt=open(sys.argv[1]).read(); bad=0
for m in re.finditer(r'"message": ("(?:[^"\\]|\\.)*")',txt):
    s=json.loads(m.group(1)); raw=[c for c in s if c in '\x1b\r\u202e\u202c']
    print(repr(s)[:160], "raw controls:", len(raw)); bad|=bool(raw)
sys.exit(1 if bad else 0)
P
if [ $? = 1 ]; then echo "HOLE: the MCP approval message carries raw ESC/CR/bidi controls of the command"; exit 1; fi
echo held; exit 0
