#!/bin/bash
# A stored secret's value passed in an MCP client's _meta.tracestate is exported to the OTLP
# collector unredacted (span context tracestate). exit 1 while open.
source "$(dirname "$0")/../lib/round3/common.sh"
D=$(mktemp -d "${TMPDIR:-/tmp}/hands-rt3.XXXXXX"); setup_home $D 18699
CAN=CANARYv4lue9X7q2Z
printf '%s\n' "$CAN" | $HANDS_BIN secrets set ACME_TOKEN --root $D/proj >/dev/null
echo hi > $D/proj/a.txt
timeout 60 python3 $LIB/otlp.py 18641 $D/otlp.bin & OP=$!; sleep 0.5
cd $D/proj
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:18641 timeout 30 python3 - "$HANDS_BIN" "$CAN" <<'P' >/dev/null
import json,subprocess,sys
p=subprocess.Popen([sys.argv[1],'mcp'],stdin=subprocess.PIPE,stdout=subprocess.PIPE,stderr=subprocess.DEVNULL)
def send(o): p.stdin.write((json.dumps(o)+"\n").encode()); p.stdin.flush()
send({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}); p.stdout.readline()
send({"jsonrpc":"2.0","method":"notifications/initialized"})
send({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"},
  "_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"k="+sys.argv[2]}}}); p.stdout.readline()
p.stdin.close(); p.wait(20)
P
sleep 1; kill $OP 2>/dev/null; wait $OP 2>/dev/null
if grep -a -q "$CAN" $D/otlp.bin; then echo "HOLE: secret value exported in tracestate"; exit 1; fi
echo held; exit 0
