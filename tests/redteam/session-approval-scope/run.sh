#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# Session-wide approval ("Allow bash for this session", scope "session" of /v1 approvals) must stay
# with that tool in that session: not terminal_start/spawn_process/write_file, not exit_plan_mode,
# not another session; an exit_plan_mode approved "for the session" is still asked the next time;
# write_file allowed for the session does not let edit_file/apply_patch through. exit 1 while it leaks.
source "$RT_LIB/round3/common.sh"
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
C="$(cd "$(dirname "$0")" && pwd)"
D=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX"); MP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
setup_home $D $MP; echo 'approval = "ask"' | cat - $D/home/.config/hands/config.toml > $D/c && mv $D/c $D/home/.config/hands/config.toml
cd $D/proj && git init -q . && cd - >/dev/null
cat > $D/s.json <<'J'
[[{"tool":"bash","input":{"command":"touch s1"}}],[{"text":"ok"}],
 [{"tool":"bash","input":{"command":"touch s2"}}],
 [{"tool":"terminal_start","input":{"command":"touch t1"}}],
 [{"tool":"spawn_process","input":{"command":"touch sp1; sleep 5","type":"long-run"}}],
 [{"tool":"write_file","input":{"path":"w1","content":"x"}}],[{"text":"ok"}],
 [{"tool":"exit_plan_mode","input":{"plan":"PLAN-X"}}],[{"text":"ok"}],
 [{"tool":"bash","input":{"command":"touch s3"}}],[{"text":"ok"}],
 [{"tool":"bash","input":{"command":"touch b1"}}],[{"text":"ok"}]]
J
start_fake $MP $D/s.json $D/log
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
( cd $D/proj && exec timeout 90 "$HANDS_BIN" serve --listen 127.0.0.1:$PORT --token TOKrt4 > $D/serve.log 2>&1 ) & SP=$!
trap "kill $SP 2>/dev/null; stop_fake; [ -n \"${KEEP:-}\" ] || rm -rf $D" EXIT
for i in $(seq 50); do curl -s -o /dev/null 127.0.0.1:$PORT/healthz && break; sleep 0.1; done
timeout 80 python3 $C/client.py http://127.0.0.1:$PORT TOKrt4 $D/proj > $D/out 2>&1
cat $D/out | cut -c1-250
ls $D/proj
bad=""
[ -e $D/proj/s1 ] || { echo "setup failed: s1 not made"; exit 2; }
for f in t1 sp1 w1 b1; do [ -e $D/proj/$f ] && bad="$bad $f"; done
grep -q 'exit_plan_mode' $D/out || bad="$bad exit_plan_mode-unasked"
S2=$([ -e $D/proj/s2 ] && echo yes || echo no); S3=$([ -e $D/proj/s3 ] && echo yes || echo no)
# phase 2: plan approvals and look-alike write tools (client2.py), on a fresh serve
kill $SP 2>/dev/null; stop_fake; rm -rf $D/proj/* ; : > $D/log
cat > $D/s.json <<'J'
[[{"tool":"exit_plan_mode","input":{"plan":"PLAN-1"}}],[{"text":"ok"}],
 [{"tool":"exit_plan_mode","input":{"plan":"PLAN-2"}}],[{"text":"ok"}],
 [{"tool":"write","input":{"path":"w1","content":"a\n"}}],
 [{"tool":"write_file","input":{"path":"w2","content":"b\n"}}],
 [{"tool":"edit_file","input":{"path":"w1","old_string":"a","new_string":"EDITED"}}],
 [{"tool":"apply_patch","input":{"input":"*** Begin Patch\n*** Add File: w3\n+c\n*** End Patch\n"}}],[{"text":"ok"}]]
J
start_fake $MP $D/s.json $D/log
( cd $D/proj && exec timeout 60 "$HANDS_BIN" serve --listen 127.0.0.1:$PORT --token TOKrt4 > $D/serve2.log 2>&1 ) & SP=$!
for i in $(seq 50); do curl -s -o /dev/null 127.0.0.1:$PORT/healthz && break; sleep 0.1; done
timeout 60 python3 $C/client2.py http://127.0.0.1:$PORT TOKrt4 $D/proj > $D/out2 2>&1; cut -c1-200 $D/out2
grep -q 'PLAN-2' $D/out2 || bad="$bad second-exit_plan_mode-unasked"
grep -q 'EDITED' $D/proj/w1 && bad="$bad edit_file"
[ -e $D/proj/w3 ] && bad="$bad apply_patch"
if [ -n "$bad" ]; then echo "HOLE: the session-wide allow of bash also let through:$bad"; exit 1; fi
echo "held (s2 made: $S2, s3 after plan->build: $S3)"; exit 0
