#!/bin/bash
# code_navigation (read-only: no approval, plan mode too) answers `definition` with "path:line:col: the line
# there" for any file the language server resolves, outside the project root included. A TypeScript file
# that imports an absolute-path JSON (resolveJsonModule) lets the model read, key by key, a file outside the
# root (here a credentials JSON) that read_file refuses.
. "$(dirname "$0")/../lib/common.sh"
export PATH="$LSPBIN:$PATH"
O="$T/outside"; mkdir -p "$O"
printf '{\n  "client_id": "x",\n  "refresh_token": "1//OUTSIDE_REFRESH_TOKEN_abc123"\n}\n' > "$O/creds.json"
echo '{"name":"app","version":"1.0.0"}' > "$P/package.json"
echo '{"compilerOptions":{"resolveJsonModule":true,"esModuleInterop":true,"module":"commonjs","strict":true}}' > "$P/tsconfig.json"
printf 'import cfg from "%s/creds.json";\nexport const t = cfg.refresh_token;\n' "$O" > "$P/a.ts"
cat > "$T/calls" <<J
{"name":"read_file","arguments":{"path":"$O/creds.json"}}
{"name":"code_navigation","arguments":{"action":"definition","path":"a.ts","line":2,"column":22}}
J
mcp --answer decline --timeout 90 --calls "$T/calls" -- "$HANDS" mcp --root "$P" -c approval=ask
grep -o '"text": "[^"]*' "$T/out" | cut -c1-200
if grep -q 'OUTSIDE_REFRESH_TOKEN_abc123' "$T/out"; then
  echo "HOLE: code_navigation showed a line of $O/creds.json (outside the root; read_file refuses it)"; exit 1; fi
echo "fixed"; exit 0
