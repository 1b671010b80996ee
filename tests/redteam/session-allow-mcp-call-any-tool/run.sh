#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# Session API, approval = "ask", a user-configured MCP server `a` with tools harmless_read and
# delete_everything. "Allow for this session" given to mcp_call {server a, tool harmless_read}
# makes every later mcp_call unasked: delete_everything (any tool of any server) then runs with
# no question (the per-tool proxies hold: mcp__a__harmless_read allowed for the session still asks
# for mcp__a__delete_everything). exit 1 while it does.
source "$RT_LIB"/round3/common.sh
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
C="$(cd "$(dirname "$0")" && pwd)"
D=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX"); MP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
setup_home $D $MP
{ echo 'approval = "ask"'; cat $D/home/.config/hands/config.toml; printf '[mcp_servers.a]\ncommand = "python3"\nargs = ["%s/mcpsrv.py", "%s/mark"]\n' "$C" "$D"; } > $D/c && mv $D/c $D/home/.config/hands/config.toml
cat > $D/s.json <<'J'
[[{"tool":"mcp_call","input":{"server":"a","tool":"harmless_read","arguments":{}}}],[{"text":"ok"}],
 [{"tool":"mcp_call","input":{"server":"a","tool":"delete_everything","arguments":{}}}],[{"text":"ok"}]]
J
start_fake $MP $D/s.json $D/log
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
( cd $D/proj && exec timeout 60 "$HANDS_BIN" serve --listen 127.0.0.1:$PORT --token TOKrt4 > $D/serve.log 2>&1 ) & SP=$!
trap 'kill $SP 2>/dev/null; stop_fake; rm -rf $D' EXIT
for i in $(seq 50); do curl -s -o /dev/null 127.0.0.1:$PORT/healthz && break; sleep 0.1; done
timeout 55 python3 $C/client.py http://127.0.0.1:$PORT TOKrt4 $D/proj > $D/out 2>&1; cut -c1-250 $D/out
[ -e $D/mark.harmless_read ] || { echo "setup: harmless_read was not called"; tail -5 $D/serve.log; exit 2; }
if [ -e $D/mark.delete_everything ]; then echo "HOLE: delete_everything ran unasked after mcp_call{harmless_read} was allowed for the session"; exit 1; fi
echo held; exit 0
