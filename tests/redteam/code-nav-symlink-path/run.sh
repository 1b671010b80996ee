#!/bin/bash
# code_navigation and diagnostics accept a `path` that is a symlink inside the root pointing outside it (file
# or folder), which read_file refuses ("resolves outside the project root"): document_symbols then shows the
# outside file's declarations with their lines, hover their types.
. "$(dirname "$0")/../lib/common.sh"
export PATH="$LSPBIN:$PATH"
O="$T/outside"; mkdir -p "$O"
printf 'export const dbPassword = "OUTSIDE_LINE_hunter2_ZZ";\nexport function helper() { return 1 }\n' > "$O/conf.ts"
echo '{"name":"app","version":"1.0.0"}' > "$P/package.json"
echo 'export const a = 1;' > "$P/a.ts"
ln -s "$O/conf.ts" "$P/link.ts"; ln -s "$O" "$P/linkdir"
cat > "$T/calls" <<'J'
{"name":"read_file","arguments":{"path":"link.ts"}}
{"name":"code_navigation","arguments":{"action":"document_symbols","path":"link.ts"}}
{"name":"code_navigation","arguments":{"action":"document_symbols","path":"linkdir/conf.ts"}}
J
mcp --answer decline --timeout 90 --calls "$T/calls" -- "$HANDS" mcp --root "$P" -c approval=ask
grep -o '"text": "[^"]*' "$T/out" | cut -c1-200
if grep -q 'OUTSIDE_LINE_hunter2_ZZ' "$T/out"; then
  echo "HOLE: code_navigation read $O/conf.ts through a symlink in the root (read_file refuses it)"; exit 1; fi
echo "fixed"; exit 0
