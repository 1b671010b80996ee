#!/bin/bash
# ACP: edit_file's diff (permission request + tool_call_update) carries a stored secret's value unredacted.
# exit 1 while the hole is open.
source "$(dirname "$0")/../lib/round3/common.sh"
D=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt3.XXXXXX"); setup_home $D 18621
CAN=CANARYv4lue9X7q2Z
printf '%s\n' "$CAN" | $HANDS_BIN secrets set ACME_TOKEN --root $D/proj >/dev/null
for f in s p w; do printf 'token=%s\nline2\n' "$CAN" > $D/proj/$f.txt; done
cat > $D/s.json <<'J'
[[{"tool":"edit_file","input":{"path":"s.txt","old_string":"line2","new_string":"line3"}}],
 [{"tool":"apply_patch","input":{"input":"*** Begin Patch\n*** Update File: p.txt\n@@\n-line2\n+line3\n*** End Patch\n"}}],
 [{"tool":"read_file","input":{"path":"w.txt"}}],
 [{"tool":"write_file","input":{"path":"w.txt","content":"replaced\n"}}],[{"text":"ok"}]]
J
start_fake 18621 $D/s.json $D/log
python3 - "$HANDS_BIN" "$D" <<'P' > $D/out
import sys,json; sys.path.insert(0,__import__("os").environ["LIB"]); from acp import ACP
HB,D=sys.argv[1:3]; a=ACP(HB,D+'/err'); a.perm=lambda o:"allow_once"
sid=a.new(D+'/proj')['result']['sessionId']; a.prompt(sid,'go'); a.close()
P
stop_fake
n=$(grep -c "$CAN" $D/out)
if [ "$n" -gt 0 ]; then echo "HOLE: secret value in $n ACP messages:"; for t in toolu_0_0:edit_file toolu_1_0:apply_patch toolu_3_0:write_file; do echo "  ${t#*:}: $(grep ${t%%:*} $D/out | grep -c "$CAN") message(s)"; done; exit 1; fi
echo held; exit 0
