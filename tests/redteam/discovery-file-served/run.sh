#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# A repository sets `[preview] discovery_file = "public-info.json"` (a project key) in its
# .hands/config.toml. The discovery file (0600, holding the DevTools URL with its 256-bit secret)
# is then written into the folder the built-in static server serves, which hands it to anyone on
# loopback: another local user (nobody) fetches it, connects to the preview's DevTools and has the
# user's Chromium read a file of the user's (file://). Variant: `[preview] static_dir = ".hands"`
# (also a project key) serves the default .hands/devtools.json as /devtools.json. exit 1 while either is served.
set -u
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
C="$(cd "$(dirname "$0")" && pwd)"
id nobody >/dev/null 2>&1 || { echo "no nobody user"; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX"); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/home/.config/hands" "$T/proj/.hands"; export HOME="$T/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME HANDS_STATE_DIR
echo "user-private-$RANDOM$RANDOM" > "$HOME/private.txt"; chmod 600 "$HOME/private.txt"
echo '<h1>app</h1>' > "$T/proj/index.html"
printf '[preview]\ndiscovery_file = "public-info.json"\n' > "$T/proj/.hands/config.toml"
cp "$C/cdp.py" "$T/cdp.py"; chmod 755 "$T"; chmod 644 "$T/cdp.py"
printf '{"name":"preview_open","arguments":{}}\n{"name":"bash","arguments":{"command":"sleep 10"}}\n' > "$T/calls"
cd "$T/proj"
timeout 50 python3 $RT_LIB/mcpc.py --answer accept --calls "$T/calls" --timeout 30 -- "$HANDS_BIN" --root "$T/proj" mcp > "$T/out" 2>&1 & MP=$!
for i in $(seq 80); do grep -q 'Preview ready' "$T/out" && break; sleep 0.25; done
URL=$(grep -o 'Preview ready at http://127.0.0.1:[0-9]*/' "$T/out" | head -1 | awk '{print $4}')
[ -n "$URL" ] || { head -20 "$T/out"; echo "setup: no preview"; exit 2; }
body=$(su nobody -s /bin/sh -c "curl -s -m 3 ${URL}public-info.json")
echo "nobody GET ${URL}public-info.json -> $(echo "$body" | head -c 160 | tr '\n' ' ')"
ws=$(echo "$body" | python3 -c 'import json,sys; print(json.load(sys.stdin)["browserWsEndpoint"])' 2>/dev/null)
if [ -n "$ws" ]; then
  su nobody -s /bin/sh -c "timeout 15 /usr/bin/python3 $T/cdp.py '$ws' '$HOME/private.txt'" 2>&1 | tee "$T/cdp.out" | cut -c1-200
fi
wait $MP
# variant 2: static_dir = ".hands", default discovery file
printf '[preview]\nstatic_dir = ".hands"\n' > "$T/proj/.hands/config.toml"; : > "$T/out"
timeout 50 python3 $RT_LIB/mcpc.py --answer accept --calls "$T/calls" --timeout 30 -- "$HANDS_BIN" --root "$T/proj" mcp > "$T/out" 2>&1 & MP=$!
for i in $(seq 80); do grep -q 'Preview ready' "$T/out" && break; sleep 0.25; done
URL2=$(grep -o 'Preview ready at http://127.0.0.1:[0-9]*/' "$T/out" | head -1 | awk '{print $4}')
body2=$(su nobody -s /bin/sh -c "curl -s -m 3 ${URL2}devtools.json")
echo "static_dir=.hands: nobody GET ${URL2}devtools.json -> $(echo "$body2" | head -c 100 | tr '\n' ' ')"
kill $MP 2>/dev/null; wait $MP 2>/dev/null
echo "$body2" | grep -q browserWsEndpoint && ws="${ws:-x}"
if [ -n "$ws" ]; then
  grep -q "$(cat "$HOME/private.txt")" "$T/cdp.out" && echo "nobody read the user's 0600 file through the preview's browser"
  echo "HOLE: the project-chosen discovery file was served to another local user with the DevTools secret"; exit 1
fi
echo held; exit 0
