#!/bin/bash
RT_LIB="$(cd "$(dirname "$0")/../lib" && pwd)"
# hands' own runtime files are left out of checkpoints. A turn writes look-alikes of them (other
# names, other folders); undo (`hands checkpoints restore` to before the turn) must remove every
# look-alike. exit 1 while one survives the restore.
source "$RT_LIB"/round3/common.sh
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/target}/debug/hands}"
D=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt4.XXXXXX"); MP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
setup_home $D $MP; echo 'approval = "auto"' | cat - $D/home/.config/hands/config.toml > $D/c && mv $D/c $D/home/.config/hands/config.toml
trap 'stop_fake; rm -rf $D' EXIT
cd $D/proj && git init -q . && echo base > a.txt
FILES='.hands/sessions.db-x .hands/sessions.dbx .hands/devtools.json.bak .hands/.devtools.json.tmp-x .hands/outputs.txt sub/.hands/outputs/x sub/.hands/processes/x.log sub/.hands/devtools.json sub/.hands/sessions.db .hands/outputs/x .hands/processes/x.log .hands/devtools.json .hands/sessions.db .hands/.gitignore'
CMD="mkdir -p .hands/outputs .hands/processes sub/.hands/outputs sub/.hands/processes; for f in $FILES; do echo PAYLOAD > \$f; done; echo changed > a.txt"
python3 - "$CMD" > $D/s.json <<'P'
import json,sys; print(json.dumps([[{"tool":"bash","input":{"command":sys.argv[1]}}],[{"text":"ok"}]]))
P
start_fake $MP $D/s.json $D/log
timeout 40 "$HANDS_BIN" run "go" > $D/run.out 2> $D/run.err
grep -o 'restore [0-9]*' $D/run.err | tail -1
N=$(grep -o 'hands checkpoints restore [0-9]*' $D/run.err | tail -1 | awk '{print $4}')
[ -n "$N" ] || { tail -5 $D/run.err; echo "setup: no checkpoint"; exit 2; }
timeout 30 "$HANDS_BIN" checkpoints restore $N > $D/rs.out 2>&1; head -5 $D/rs.out
[ "$(cat a.txt)" = base ] || { echo "setup: a.txt not restored"; exit 2; }
left=""; for f in $FILES; do [ -e "$f" ] && grep -q PAYLOAD "$f" 2>/dev/null && left="$left $f"; done
echo "left after undo:$left"
# hands' own names (exact) are expected to stay; anything else is a hidden change
bad=""; for f in $left; do case "$f" in .hands/outputs/x|.hands/processes/x.log|.hands/devtools.json|.hands/sessions.db) ;; *) bad="$bad $f";; esac; done
if [ -n "$bad" ]; then echo "HOLE: a change undo does not take back:$bad"; exit 1; fi
echo held; exit 0
