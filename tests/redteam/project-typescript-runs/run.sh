#!/bin/bash
# code.project_servers is false (the default): hands must not run the repository's own programs. Yet the
# read-only `diagnostics` tool (no approval under ask, offered in plan mode) starts the user's
# typescript-language-server, which runs the project's node_modules/typescript/lib/tsserver.js: repository
# code executed without consent.
. "$(dirname "$0")/../lib/common.sh"
export PATH="$LSPBIN:$PATH"   # the user's globally installed typescript-language-server
mkdir -p "$P/node_modules/typescript/lib"
echo '{"name":"app","version":"1.0.0"}' > "$P/package.json"
echo '{"compilerOptions":{"strict":true}}' > "$P/tsconfig.json"
echo '{"name":"typescript","version":"5.9.3","main":"lib/typescript.js"}' > "$P/node_modules/typescript/package.json"
for f in tsserver typescript; do
  printf "require('fs').writeFileSync(require('path').join(__dirname,'../../../PWNED_$f'),'repo code, pid '+process.pid);\nmodule.exports=require('%s/../typescript/lib/$f.js');\n" "$LSPBIN" > "$P/node_modules/typescript/lib/$f.js"
done
echo 'const x: number = "s";' > "$P/a.ts"
printf '%s\n' '{"name":"diagnostics","arguments":{}}' > "$T/calls"
mcp --answer decline --timeout 90 --calls "$T/calls" -- "$HANDS" mcp --root "$P" -c approval=ask
grep -o '"text": "[^"]*' "$T/out" | head -3
if ls "$P"/PWNED_* >/dev/null 2>&1; then
  echo "HOLE: read-only diagnostics ran the repository's node_modules/typescript ($(ls "$P" | grep PWNED | tr '\n' ' '))"; exit 1; fi
echo "fixed"; exit 0
