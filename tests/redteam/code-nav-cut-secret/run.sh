#!/bin/bash
# code_navigation cuts its text before redacting: a stored secret straddling the cut is not the whole value any
# more, so all but its last character reaches the result. references/definition lines are cut at 500
# characters; hover text at 4,000 (a doc comment holding the secret).
. "$(dirname "$0")/../lib/common.sh"
export PATH="$LSPBIN:$PATH"
SECRET=CANARY_77aa11bb_VAL
printf '%s\n' "$SECRET" | "$HANDS" secrets set MY_KEY --root "$P" >/dev/null 2>&1
echo '{"name":"app","version":"1.0.0"}' > "$P/package.json"
python3 - "$P" "$T/calls" <<'PY'
import sys, json
P, calls = sys.argv[1], sys.argv[2]
with open(P + '/a.ts', 'w') as f:
    f.write('export function target(a: string) { return a }\n')
    for n in range(440, 500):
        f.write('target("%s" + "CANARY_77aa11bb_VAL");\n' % ('x' * n))
with open(P + '/h.ts', 'w') as f, open(calls, 'w') as c:
    c.write(json.dumps({"name": "code_navigation", "arguments": {"action": "references", "path": "a.ts", "symbol": "target", "limit": 500}}) + "\n")
    for i, n in enumerate(range(3930, 3975)):
        f.write('/** %s CANARY_77aa11bb_VAL */\nexport const v%d = 1;\n' % ('d' * n, i))
        c.write(json.dumps({"name": "code_navigation", "arguments": {"action": "hover", "path": "h.ts", "line": 2 * i + 2, "column": 15}}) + "\n")
PY
mcp --answer decline --timeout 60 --calls "$T/calls" -- "$HANDS" mcp --root "$P"
python3 - "$T/out" "$SECRET" > "$T/leak" <<'PY'
import sys, re
out = open(sys.argv[1]).read(); s = sys.argv[2]
for name, part in (("references", out.split("RESULT 2:")[0]), ("hover", "RESULT 2:".join(out.split("RESULT 2:")[1:]))):
    best = ''
    for k in range(6, len(s)):
        if s[:k] in part: best = s[:k]
    print(name, best)
PY
cat "$T/leak"
grep -q 'a.ts:2:1' "$T/out" || echo "note: no references came back (is typescript-language-server at $LSPBIN?)"
if awk 'length($2) >= 10 {f=1} END {exit !f}' "$T/leak"; then
  echo "HOLE: code_navigation showed a stored secret cut short, unredacted: $(awk 'length($2)>=10{printf "%s %d/19 chars; ", $1, length($2)}' "$T/leak")"; exit 1; fi
echo "fixed"; exit 0
