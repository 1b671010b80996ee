#!/bin/bash
# repo_map cuts long signatures (`…`) before redacting: a stored secret that straddles the cut is no longer
# the whole value, so the redaction step misses it and all but its last characters reach the result.
. "$(dirname "$0")/../lib/common.sh"
SECRET=CANARY_77aa11bb_VAL
printf '%s\n' "$SECRET" | "$HANDS" secrets set MY_KEY --root "$P" >/dev/null 2>&1
mkdir -p "$P/src"
python3 - "$P/src/a.ts" <<'PY'
import sys
with open(sys.argv[1], 'w') as f:
    for n in range(60, 200):
        f.write('export function fn%d(a%s = 1, t = "CANARY_77aa11bb_VAL") { return t }\n' % (n, 'x' * n))
PY
"$HANDS" call repo_map '{"max_tokens":32000}' --root "$P" > "$T/out" 2>&1
python3 - "$T/out" "$SECRET" <<'PY' > "$T/leak"
import sys, re
out = open(sys.argv[1]).read(); s = sys.argv[2]; best = ''
for k in range(6, len(s)):
    if s[:k] in out: best = s[:k]
print(best)
PY
L="$(cat "$T/leak")"
[ -n "$L" ] && grep -o ".\{12\}$L.\{0,3\}" "$T/out" | sort -u | head -3
if [ ${#L} -ge 10 ]; then echo "HOLE: repo_map showed ${#L} of the ${#SECRET} characters of a stored secret ('$L…')"; exit 1; fi
echo "fixed"; exit 0
