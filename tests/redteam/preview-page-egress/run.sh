#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# The preview's page tries to reach another loopback port (fetch 127.0.0.1/localhost/[::1]/127.1.2.3,
# img, WebSocket, EventSource, beacon, prefetch, iframe, STUN, navigation), and preview_act navigate
# tries other origins and file:. Nothing may reach the recorder. exit 1 if anything does.
set -u
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
T=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX")
mkdir -p "$T/home/.config/hands" "$T/proj"; export HOME="$T/home"; unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME HANDS_STATE_DIR
RP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 $RT_LIB/rec.py $RP "$T/rec.log" >/dev/null 2>&1 & RPID=$!
trap 'kill $RPID 2>/dev/null; rm -rf "$T"' EXIT
for i in $(seq 30); do curl -s -o /dev/null 127.0.0.1:$RP/ && break; sleep 0.1; done; rm -f "$T/rec.log"
cat > "$T/proj/index.html" <<H
<h1>x</h1><script>
fetch('http://127.0.0.1:$RP/fetch').catch(e=>0); fetch('http://localhost:$RP/lh',{mode:'no-cors'}).catch(e=>0);
fetch('http://[::1]:$RP/v6',{mode:'no-cors'}).catch(e=>0); fetch('http://127.1.2.3:$RP/127',{mode:'no-cors'}).catch(e=>0);
fetch('http://0.0.0.0:$RP/zero',{mode:'no-cors'}).catch(e=>0); new Image().src='http://127.0.0.1:$RP/img';
try{new WebSocket('ws://127.0.0.1:$RP/ws')}catch(e){} try{new EventSource('http://127.0.0.1:$RP/es')}catch(e){}
navigator.sendBeacon('http://127.0.0.1:$RP/beacon','x');
var l=document.createElement('link');l.rel='prefetch';l.href='http://127.0.0.1:$RP/prefetch';document.head.appendChild(l);
var i=document.createElement('iframe');i.src='http://127.0.0.1:$RP/iframe';document.body.appendChild(i);
try{var pc=new RTCPeerConnection({iceServers:[{urls:'stun:127.0.0.1:$RP'}]});pc.createDataChannel('x');pc.createOffer().then(o=>pc.setLocalDescription(o));}catch(e){}
setTimeout(()=>{location.href='http://127.0.0.1:$RP/nav'},1000);
</script>
H
python3 - $RP > "$T/calls" <<'P'
import json,sys
rp=sys.argv[1]
print(json.dumps({"name":"preview_open","arguments":{}}))
print(json.dumps({"name":"bash","arguments":{"command":"sleep 3"}}))
for u in [f"//127.0.0.1:{rp}/a", f"http://localhost:{rp}/i", f"http://[::1]:{rp}/j", "file:///etc/hostname", f"view-source:http://127.0.0.1:{rp}/e", f"/\\127.0.0.1:{rp}/f", f"http://u@127.0.0.1:{rp}/r"]:
    print(json.dumps({"name":"preview_act","arguments":{"actions":[{"action":"navigate","url":u}]}}))
print(json.dumps({"name":"preview_close","arguments":{}}))
P
cd "$T/proj"
timeout 55 python3 $RT_LIB/mcpc.py --answer accept --calls "$T/calls" --timeout 20 -- "$HANDS_BIN" --root "$T/proj" mcp > "$T/out" 2>&1
grep -q 'Preview ready' "$T/out" || { echo "setup: no preview"; exit 2; }
if [ -s "$T/rec.log" ]; then cut -c1-120 "$T/rec.log"; echo "HOLE: the preview reached another loopback port"; exit 1; fi
echo held; exit 0
