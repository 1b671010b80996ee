#!/bin/bash
# A stored secret's value in an unknown tool's name comes back verbatim in the JSON-RPC error (MCP) and on
# hands call's stderr; every other refusal (bad argument, bad path, bad header) shows [secret:NAME].
. "$(dirname "$0")/../lib/common.sh"
printf 'CANARY_9f3b1c77_KEY\n' | "$HANDS" secrets set SVC_API_KEY --root "$P" >/dev/null 2>&1
printf '%s\n' '{"name":"nonexistent_CANARY_9f3b1c77_KEY","arguments":{}}' '{"name":"supabase_setup","arguments":{"action":"CANARY_9f3b1c77_KEY"}}' > "$T/calls"
mcp --answer decline --timeout 60 --calls "$T/calls" -- "$HANDS" mcp --root "$P"
"$HANDS" call nonexistent_CANARY_9f3b1c77_KEY --root "$P" </dev/null >> "$T/out" 2>&1
grep -o '.\{30\}CANARY_9f3b1c77_KEY.\{10\}\|.\{30\}\[secret:SVC_API_KEY\].\{10\}' "$T/out"
if grep -v '"name"' "$T/out" | grep -q 'CANARY_9f3b1c77_KEY'; then echo "HOLE: stored value echoed unredacted"; exit 1; fi
echo "fixed"; exit 0
