#!/bin/bash
# A language server shortens what it prints: TypeScript's type printer cuts a long string literal type
# in a diagnostic at `...`. A stored secret in such a literal is then not whole in the message, so the
# result's redaction (which looks for whole values) let its first part through: the first ~130 of 150
# characters of the secret reached the model in the write's own result and in `diagnostics`.
. "$(dirname "$0")/../lib/common.sh"
export PATH="$LSPBIN:$PATH"
SECRET="hx_CANARY_$(python3 -c 'import secrets,string; print("".join(secrets.choice(string.ascii_letters+string.digits) for _ in range(140)))')"
printf '%s\n' "$SECRET" | "$HANDS" secrets set MY_KEY --root "$P" >/dev/null 2>&1
echo '{"name":"app","version":"1.0.0"}' > "$P/package.json"
echo '{"compilerOptions":{"strict":true,"noEmit":true}}' > "$P/tsconfig.json"
echo 'export const ok = 1;' > "$P/a.ts"
python3 - "$P" "$T/calls" "$SECRET" <<'PY'
import sys, json
P, calls, s = sys.argv[1], sys.argv[2], sys.argv[3]
# A key committed to the repository, as a literal type; the model's new file misuses it (the model never
# sees the value: read_file redacts it), and the error prints the type.
with open(P + '/keys.ts', 'w') as f:
    f.write('export const keys = { a: "%s", b: "%s", c: "%s" } as const;\n' % (s, s, s))
bad = 'import { keys } from "./keys";\nexport const n: number = keys;\n'
with open(calls, 'w') as c:
    c.write(json.dumps({"name": "write_file", "arguments": {"path": "b.ts", "content": bad}}) + "\n")
    c.write(json.dumps({"name": "diagnostics", "arguments": {"path": "b.ts"}}) + "\n")
PY
mcp --answer accept --timeout 90 --calls "$T/calls" -- "$HANDS" mcp --root "$P"
grep -q 'TS2322\|not assignable' "$T/out" || { echo "no diagnostic came back (is typescript-language-server at $LSPBIN?)"; tail -5 "$T/out"; exit 2; }
python3 - "$T/out" "$SECRET" > "$T/leak" <<'PY'
import sys
out = open(sys.argv[1]).read(); s = sys.argv[2]
best = ''
for k in range(6, len(s) + 1):
    if s[:k] in out: best = s[:k]
print(len(best))
PY
if [ "$(cat "$T/leak")" -ge 10 ]; then
  echo "HOLE: a diagnostic showed $(cat "$T/leak") of ${#SECRET} characters of a stored secret"; exit 1; fi
echo "fixed"; exit 0
