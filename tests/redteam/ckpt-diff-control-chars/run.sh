#!/bin/bash
# `hands checkpoints diff` / `list` print file names' control characters raw: ESC sequences reach the
# terminal and a newline in a name forges extra "added ..." lines. exit 1 while open.
source "$(dirname "$0")/../lib/round3/common.sh"
D=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt3.XXXXXX"); setup_home $D 18644
cat > $D/s.json <<'J'
[[{"tool":"bash","input":{"command":"printf x > \"$(printf 'n\\x1b[2K\\x1b[1Ahidden\\nadded         +1     -0  FORGED.txt')\""}}],[{"text":"ok"}]]
J
start_fake 18644 $D/s.json $D/log
cd $D/proj; timeout 30 $HANDS_BIN run -c approval=auto "go" > $D/run.out 2>&1
stop_fake
timeout 10 $HANDS_BIN checkpoints diff 2 --stat > $D/diff.out 2>&1
fail=0
if grep -q $'\x1b' $D/diff.out; then echo "HOLE: raw ESC from a file name in checkpoints diff output"; fail=1; fi
if grep -q '^added         +1     -0  FORGED.txt$' $D/diff.out; then echo "HOLE: a newline in a file name forges a line of the diff"; fail=1; fi
[ $fail = 0 ] && echo held
cat -A $D/diff.out | head -5
exit $fail
