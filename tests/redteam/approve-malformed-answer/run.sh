#!/bin/bash
# An elicitation answer {"action":"accept","content":{"approve":"false"}} (or 0) is taken as a yes: fail-open
# on a value that does not match the requested boolean schema.
. "$(dirname "$0")/../lib/common.sh"
echo '{"name":"write_file","arguments":{"path":"a.txt","content":"hello"}}' > "$T/calls"
mcp --answer accept --content '{"approve":"false"}' --timeout 60 --calls "$T/calls" -- "$HANDS" mcp --root "$P" -c approval=ask
grep '"text"' "$T/out"
if [ -e "$P/a.txt" ]; then echo 'HOLE: approve:"false" ran the write'; exit 1; fi
echo "fixed"; exit 0
