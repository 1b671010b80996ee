#!/bin/bash
# bash's MCP elicitation shows only the first ~300 chars of the command; the hidden tail runs after "yes".
. "$(dirname "$0")/../lib/common.sh"
python3 - > "$T/calls" <<'PY'
import json
cmd='echo building the project ' + 'and running the tests '*14 + '; touch PWNED_HIDDEN'
print(json.dumps({'name':'bash','arguments':{'command':cmd}}))
PY
mcp --answer accept --content '{"approve":true}' --timeout 60 --calls "$T/calls" -- "$HANDS" mcp --root "$P" -c approval=ask
grep '"message"' "$T/out"
if ! grep '"message"' "$T/out" | grep -q PWNED_HIDDEN && [ -e "$P/PWNED_HIDDEN" ]; then
  echo "HOLE: approval did not show 'touch PWNED_HIDDEN' but it ran"; exit 1; fi
echo "fixed"; exit 0
