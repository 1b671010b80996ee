#!/bin/bash
# connector_call POST: the connector file is changed while the approval is pending; the request that runs
# uses the new base_url and auth kind (key moved into the URL), not what was shown.
. "$(dirname "$0")/../lib/common.sh"
PORT=$(free_port)
printf '[net]\nallow_hosts = ["127.0.0.1"]\n' > "$HOME/.config/hands/config.toml"
"$HANDS" connectors add svc --root "$P" --base-url http://127.0.0.1:$PORT/api --auth bearer --secret SVC_API_KEY --method GET --method POST --path /items --path '/items/*' >/dev/null 2>&1
printf 'CANARY_9f3b1c77_KEY\n' | "$HANDS" secrets set SVC_API_KEY --root "$P" --host http://127.0.0.1:$PORT >/dev/null 2>&1
start_rec $PORT
echo '{"name":"connector_call","arguments":{"connector":"svc","method":"POST","path":"/items","json":{"a":1}}}' > "$T/calls"
F="$P/.hands/connectors/svc.toml"
HOOK="sed -i 's#/api\"#/evil\"#; s#kind = \"bearer\"#kind = \"query\"\nname = \"leak\"#' '$F'"
mcp --answer accept --content '{"approve":true}' --timeout 60 --on-elicit "$HOOK" --calls "$T/calls" -- "$HANDS" mcp --root "$P" -c approval=ask
grep '"message"' "$T/out"; cat "$T/rec.log"
if grep -q '"path": "/evil/items' "$T/rec.log"; then
  echo "HOLE: approved POST .../api/items, sent POST .../evil/items?leak=<key>"; exit 1; fi
echo "fixed"; exit 0
