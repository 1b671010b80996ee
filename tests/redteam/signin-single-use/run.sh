#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# hands serve --open: the sign-in code is traded once. Six concurrent POST /v1/signin with the same
# code: exactly one 200; a later reuse, a wrong-case or truncated code, a text/plain body (a simple
# CORS request), Origin: null and a foreign Host are refused. exit 1 if any of that is accepted.
set -u
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
C="$(cd "$(dirname "$0")" && pwd)"
T=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX")
mkdir -p "$T/home" "$T/proj"; export HOME="$T/home"; unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME HANDS_STATE_DIR
# The browser is given a page only the user can read (since round 4): the link is read from it.
cat > "$T/br.sh" <<BR
#!/bin/sh
sed -n 's/.*id="signin" href="\\([^"]*\\)".*/\\1/p' "\${1#file://}" >> "$T/brlog"
BR
chmod 755 "$T/br.sh"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
( cd "$T/proj" && BROWSER="$T/br.sh" exec timeout 40 "$HANDS_BIN" serve --listen 127.0.0.1:$PORT --open > "$T/serve.log" 2>&1 ) & SP=$!
trap 'kill $SP 2>/dev/null; rm -rf "$T"' EXIT
for i in $(seq 50); do [ -s "$T/brlog" ] && break; sleep 0.1; done
CODE=$(sed 's/.*signin=//' "$T/brlog" | head -1); [ -n "$CODE" ] || { echo "setup: no link"; exit 2; }
p() { curl -s -o /dev/null -w '%{http_code}' -X POST "$@" 127.0.0.1:$PORT/v1/signin; }
bad=""
[ "$(p -H 'Origin: null' -H 'content-type: application/json' -d "{\"code\":\"$CODE\"}")" = 200 ] && bad="$bad origin-null"
[ "$(p -H 'Host: evil.example' -H 'content-type: application/json' -d "{\"code\":\"$CODE\"}")" = 200 ] && bad="$bad foreign-host"
[ "$(p -H 'content-type: text/plain' -d "{\"code\":\"$CODE\"}")" = 200 ] && bad="$bad text-plain"
[ "$(p -H 'content-type: application/json' -d "{\"code\":\"${CODE^^}\"}")" = 200 ] && bad="$bad upper"
[ "$(p -H 'content-type: application/json' -d "{\"code\":\"${CODE:0:63}\"}")" = 200 ] && bad="$bad truncated"
out=$(python3 "$C/race.py" $PORT "$CODE"); echo "$out" | cut -c1-80
n=$(echo "$out" | grep -c '^(200'); [ "$n" = 1 ] || bad="$bad concurrent-uses:$n"
[ "$(p -H 'content-type: application/json' -d "{\"code\":\"$CODE\"}")" = 200 ] && bad="$bad reuse"
grep -q "$CODE" "$T/serve.log" && bad="$bad code-in-stderr"
tok=$(cat "$HOME/.local/state/hands/server-token"); grep -q "$tok" "$T/serve.log" && bad="$bad token-in-stderr"
if [ -n "$bad" ]; then echo "HOLE: accepted:$bad"; exit 1; fi
echo held; exit 0
