#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# The built-in static server refuses dotfiles (/.hands/devtools.json, /.env are 404), but a
# symlink the repository ships (public/h -> ../.hands, public/e -> ../.env: inside the project)
# serves them: another local user (nobody) reads the DevTools URL with its secret, and the .env.
# No project setting needed. exit 1 while either is served.
set -u
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
id nobody >/dev/null 2>&1 || { echo "no nobody user"; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX"); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/home/.config/hands" "$T/proj/public"; export HOME="$T/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME HANDS_STATE_DIR
cd "$T/proj"; echo '<h1>app</h1>' > index.html; echo 'STRIPE_KEY=users-own-value-123' > .env
ln -s ../.hands public/h; ln -s ../.env public/e
printf '{"name":"preview_open","arguments":{}}\n{"name":"bash","arguments":{"command":"sleep 8"}}\n' > "$T/calls"
timeout 50 python3 $RT_LIB/mcpc.py --answer accept --calls "$T/calls" --timeout 30 -- "$HANDS_BIN" --root "$T/proj" mcp > "$T/out" 2>&1 & MP=$!
for i in $(seq 80); do grep -q 'Preview ready' "$T/out" && break; sleep 0.25; done
U=$(grep -o 'Preview ready at http://127.0.0.1:[0-9]*' "$T/out" | head -1 | awk '{print $4}')
[ -n "$U" ] || { head -20 "$T/out"; echo "setup: no preview"; exit 2; }
direct=$(curl -s -o /dev/null -w '%{http_code}' "$U/.hands/devtools.json")
a=$(su nobody -s /bin/sh -c "curl -s -m 3 $U/public/h/devtools.json"); b=$(su nobody -s /bin/sh -c "curl -s -m 3 $U/public/e")
wait $MP
echo "/.hands/devtools.json: $direct"
echo "nobody /public/h/devtools.json: $(echo "$a" | tr '\n' ' ' | head -c 150)"
echo "nobody /public/e: $b"
bad=""; echo "$a" | grep -q browserWsEndpoint && bad="$bad devtools.json"; echo "$b" | grep -q users-own-value && bad="$bad .env"
if [ -n "$bad" ]; then echo "HOLE: through an in-project symlink the static server served:$bad"; exit 1; fi
echo held; exit 0
