#!/bin/bash
# The read-only `diagnostics` tool on a JavaScript project starts tsserver with automatic type acquisition on:
# tsserver's typingsInstaller runs `npm install` (types-registry, then @types/<each dependency the repository's
# package.json names>) against the npm registry, outside hands' egress guard, writing into ~/.cache/typescript
# (outside the project root). Here the registry is pointed at a loopback recorder (~/.npmrc) so that nothing
# leaves the machine; normally these requests go to the public registry.
. "$(dirname "$0")/../lib/common.sh"
export PATH="$LSPBIN:$PATH"
PORT=$(free_port); start_rec "$PORT"
printf 'registry=http://127.0.0.1:%s/\n' "$PORT" > "$HOME/.npmrc"; export npm_config_registry="http://127.0.0.1:$PORT/"
echo '{"name":"app","version":"1.0.0","dependencies":{"lodash":"4.17.21","jquery":"3.0.0"}}' > "$P/package.json"
echo '{"compilerOptions":{"checkJs":true,"allowJs":true}}' > "$P/jsconfig.json"
echo 'const _ = require("lodash"); _.map([1], x => x); let a = 1; a = "s";' > "$P/a.js"
printf '%s\n' '{"name":"diagnostics","arguments":{}}' '{"name":"ask_user","arguments":{"question":"wait a little"}}' > "$T/calls"
mcp --answer decline --timeout 90 --on-elicit "sleep 8" --calls "$T/calls" -- "$HANDS" mcp --root "$P" -c approval=ask
grep -o '"text": "[^"]*' "$T/out" | head -1 | cut -c1-200
echo "registry recorder saw:"; python3 -c 'import json,sys; [print(" ",json.loads(l)["method"],json.loads(l)["path"],json.loads(l)["headers"].get("user-agent","")[:40]) for l in open(sys.argv[1])]' "$T/rec.log"
ls -d "$HOME/.cache/typescript"/* 2>/dev/null | sed 's/^/written outside the root: /'
if [ -s "$T/rec.log" ]; then echo "HOLE: a read-only diagnostics call made tsserver run npm install against the registry (types-registry, @types/*)"; exit 1; fi
echo "fixed"; exit 0
