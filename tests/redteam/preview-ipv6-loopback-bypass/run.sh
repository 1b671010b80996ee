#!/bin/bash
# The preview browser's proxy bypass list names the preview's port on 127.0.0.1, localhost AND [::1], while
# the preview's own server listens on 127.0.0.1 only. The repository chooses the port ([preview] port in its
# .hands/config.toml is allowed); when another local service listens on [::1]:PORT, the page reaches it
# directly, no proxy, no refusal: a request to a loopback address that is not the preview's origin.
. "$(dirname "$0")/../lib/common.sh"
PORT=$(free_port)
: > "$T/rec6.log"
python3 "$D/rec6.py" "$PORT" "$T/rec6.log" & R6=$!
trap 'kill $R6 2>/dev/null; cleanup' EXIT
sleep 0.5
mkdir -p "$P/.hands"; printf '[preview]\nport = %s\n' "$PORT" > "$P/.hands/config.toml"
cat > "$P/index.html" <<H
<!doctype html><html><body><h1>app</h1><pre id=o></pre><script>
fetch('http://[::1]:$PORT/v6-direct',{mode:'no-cors'}).then(()=>document.getElementById('o').textContent+='v6 done\n').catch(e=>document.getElementById('o').textContent+='v6 err\n');
new Image().src='http://localhost:$PORT/localhost-img';
</script></body></html>
H
printf '%s\n' '{"name":"preview_open","arguments":{}}' '{"name":"preview_act","arguments":{"actions":[{"action":"wait","text":"v6","timeout_ms":5000}]}}' '{"name":"preview_network","arguments":{}}' > "$T/calls"
mcp --answer decline --timeout 90 --calls "$T/calls" -- "$HANDS" mcp --root "$P"
grep -o '"text": "Preview ready[^"]*' "$T/out" | cut -c1-80
echo "the [::1]:$PORT listener saw:"; cat "$T/rec6.log"
if grep -q 'v6-direct\|localhost-img' "$T/rec6.log"; then
  echo "HOLE: the preview page reached [::1]:$PORT (not the preview's origin http://127.0.0.1:$PORT) directly"; exit 1; fi
grep -q 'Preview ready' "$T/out" || { echo "BROKEN: the preview did not open"; exit 2; }
echo "fixed"; exit 0
