# Sourced by each case's run.sh: a fresh HOME and project in a temp folder, the hands binary, a
# loopback recorder and a raw MCP client. A case exits 1 while its hole is open, 0 once closed.
set -u
D="$(cd "$(dirname "$0")" && pwd)"
L="$D/../lib"
HANDS="${HANDS_BIN:-${CARGO_TARGET_DIR:-$D/../../../target}/debug/hands}"
[ -x "$HANDS" ] || { echo "no hands binary at $HANDS (set HANDS_BIN)" >&2; exit 2; }
T="$(mktemp -d "${TMPDIR:-/tmp}/hands-redteam.XXXXXX")"
mkdir -p "$T/home/.config/hands" "$T/proj"
export HOME="$T/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME HANDS_STATE_DIR HANDS_SECRETS_DIR HANDS_APPROVAL
P="$T/proj"
# The language servers CI installs (tests/lsp): they stand in for the user's installed ones.
LSPBIN="$D/../../lsp/node_modules/.bin"
REC_PID=""
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_rec() { # $1 port: a loopback server logging every request to $T/rec.log
  : > "$T/rec.log"
  python3 "$L/rec.py" "$1" "$T/rec.log" >/dev/null 2>&1 & REC_PID=$!
  python3 - "$1" <<'PY'
import socket, sys, time
for _ in range(50):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close(); break
    except OSError:
        time.sleep(0.1)
PY
  : > "$T/rec.log"
}
cleanup() { [ -n "$REC_PID" ] && kill "$REC_PID" 2>/dev/null; rm -rf "$T"; true; }
trap cleanup EXIT
mcp() { # mcpc args...; output in $T/out
  timeout 120 python3 "$L/mcpc.py" "$@" > "$T/out" 2>&1
}
