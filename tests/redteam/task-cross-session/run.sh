#!/bin/bash
# hands serve: tasks are not bound to the MCP session that created them. A second MCP session (another client)
# reads the first session's task result (its command output) with tasks/get and cancels its running task
# with tasks/cancel, knowing only the taskId.
. "$(dirname "$0")/../lib/common.sh"
PORT=$(free_port)
"$HANDS" serve --listen 127.0.0.1:$PORT --root "$P" --token TOK_rt2_123 > "$T/serve.log" 2>&1 & SP=$!
trap 'kill $SP 2>/dev/null; cleanup' EXIT
python3 - "$PORT" <<'PY'
import socket, sys, time
for _ in range(100):
    try: socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close(); break
    except OSError: time.sleep(0.1)
PY
timeout 60 python3 "$D/client.py" "http://127.0.0.1:$PORT" TOK_rt2_123 > "$T/out" 2>&1
cat "$T/out" | cut -c1-300
if grep -q '^READ\|CANCELLED$' "$T/out"; then
  echo "HOLE: another MCP session $(grep -q '^READ' "$T/out" && echo 'read the output of') $(grep -q 'CANCELLED$' "$T/out" && echo '/ cancelled') a task of the first session"; exit 1; fi
echo "fixed"; exit 0
