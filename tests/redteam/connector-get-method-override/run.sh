#!/bin/bash
# connector_call GET under approval=ask with X-HTTP-Method-Override: DELETE and a JSON body: sent with no
# approval (and although the connector allows GET only). A server honouring the override performs a DELETE.
. "$(dirname "$0")/../lib/common.sh"
PORT=$(free_port)
printf '[net]\nallow_hosts = ["127.0.0.1"]\n' > "$HOME/.config/hands/config.toml"
"$HANDS" connectors add svc --root "$P" --base-url http://127.0.0.1:$PORT/api --auth bearer --secret SVC_API_KEY --method GET --path '/items/*' >/dev/null 2>&1
printf 'CANARY_9f3b1c77_KEY\n' | "$HANDS" secrets set SVC_API_KEY --root "$P" --host http://127.0.0.1:$PORT >/dev/null 2>&1
start_rec $PORT
echo '{"name":"connector_call","arguments":{"connector":"svc","method":"GET","path":"/items/42","headers":{"X-HTTP-Method-Override":"DELETE"},"json":{"confirm":true}}}' > "$T/calls"
mcp --answer decline --timeout 60 --calls "$T/calls" -- "$HANDS" mcp --root "$P" -c approval=ask
cat "$T/rec.log"
if grep -q '"x-http-method-override": "DELETE"' "$T/rec.log" && ! grep -q ELICIT "$T/out"; then
  echo "HOLE: GET carrying X-HTTP-Method-Override: DELETE + body sent without asking"; exit 1; fi
echo "fixed"; exit 0
