#!/usr/bin/env bash
# MCP round trips over stdio, one compiled raw JSON-RPC client driving three servers in the same
# run: hands (`hands mcp`, read_file), the reference filesystem server
# (@modelcontextprotocol/server-filesystem, read_text_file) and a do-nothing responder that
# answers each line at once (the floor of this machine's pipes and scheduler), also in a variant
# that does the file system calls of the read (open, fstat, read, close) with no protocol library,
# and an rmcp server that answers each call at once (the floor of the protocol library + runtime).
# Targets: hands' median within 1.2x of the rmcp floor's, in both placements; >= 5x the
# reference's calls per second; start-up to initialize-answered <= 20 ms. Then, counted rather
# than timed (bench/mcp_cost.py, strace and perf): system calls, context switches and CPU time per
# call of hands and of the rmcp floor, which the machine's load and placement barely move.
# Usage: bash bench/mcp.sh [N calls, default 2000]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-2000}"
for tool in node npm cargo taskset; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 1; }
done
target="${CARGO_TARGET_DIR:-target}"
cargo build --quiet --release -p hands
cargo build --quiet --release -p hands-mcp --example bench_roundtrip --example mcp_floor --example mcp_rmcp_floor --example bench_http
node_dir="bench/node"
ref="$node_dir/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
if [[ ! -f "$ref" ]]; then
    mkdir -p "$node_dir"
    (cd "$node_dir" && npm install --silent --no-audit --no-fund @modelcontextprotocol/server-filesystem)
fi
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
echo "hello from a small file" >"$root/small.txt"
client="$target/release/examples/bench_roundtrip"
# The scheduler puts client and server on one core (wake-ups ~4 µs) or on two (~20 µs) as it
# pleases, and a run mixes both; so each placement is pinned and measured on its own: "same" (both
# on CPU 0) and "cross" (client on CPU 0, server on CPU 1).
for placement in same cross; do
    client_cpu=0
    server_cpu=0
    [[ $placement == cross ]] && server_cpu=1
    run() { # NAME TOOL PATH N -- COMMAND…
        local name=$1
        shift
        taskset -c "$client_cpu" "$client" "$name" "$1" "$2" "$3" -- taskset -c "$server_cpu" "${@:5}" |
            tee "$root/$placement-$name"
    }
    echo "== $placement core"
    run floor read_file small.txt "$n" -- "$target/release/examples/mcp_floor"
    run floor_read read_file small.txt "$n" -- "$target/release/examples/mcp_floor" --read "$root"
    run rmcp_floor read_file small.txt "$n" -- "$target/release/examples/mcp_rmcp_floor"
    run hands read_file small.txt "$n" -- "$target/release/hands" mcp --root "$root"
    run reference read_text_file "$root/small.txt" "$((n / 4))" -- node "$ref" "$root"
done
python3 - "$root" <<'PY'
import sys, re
def read(name):
    text = open(f"{sys.argv[1]}/{name}").read()
    return {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", text)}
for placement in ("same", "cross"):
    r = {k: read(f"{placement}-{k}") for k in ("floor", "floor_read", "rmcp_floor", "hands", "reference")}
    floor, hands, ref = r["floor"], r["hands"], r["reference"]
    print(f"-- {placement} core")
    print(f"hands median / floor median : {hands['median_us'] / floor['median_us']:.2f}x")
    print(f"floor+read / floor          : {r['floor_read']['median_us'] / floor['median_us']:.2f}x (the floor that also opens, stats, reads and closes the file)")
    print(f"rmcp-floor / floor          : {r['rmcp_floor']['median_us'] / floor['median_us']:.2f}x (an rmcp server answering at once: the protocol library and runtime)")
    print(f"hands / rmcp-floor          : {hands['median_us'] / r['rmcp_floor']['median_us']:.2f}x (target <= 1.2x; what hands adds on top of rmcp: registry, middleware, the read)")
    print(f"hands calls/s / reference   : {hands['calls_per_s'] / ref['calls_per_s']:.1f}x (target >= 5x; floor/reference = {floor['calls_per_s'] / ref['calls_per_s']:.1f}x)")
    print(f"hands start-up              : {hands['startup_ms']:.1f} ms (target <= 20 ms; reference {ref['startup_ms']:.0f} ms)")
PY

if command -v strace >/dev/null && command -v perf >/dev/null; then
    echo "== per call, counted (client and server unpinned)"
    python3 bench/mcp_cost.py "$n" rmcp_floor read_file small.txt -- "$target/release/examples/mcp_rmcp_floor"
    python3 bench/mcp_cost.py "$n" hands read_file small.txt -- "$target/release/hands" mcp --root "$root"
else
    echo "(strace or perf missing: no per-call counts)"
fi

echo "== HTTP: 64 concurrent clients x ${HTTP_CALLS:-1000} calls against hands serve"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
"$target/release/hands" serve --listen "127.0.0.1:$port" --root "$root" --token "$token" 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$root"' EXIT
for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
HANDS_TOKEN="$token" "$target/release/examples/bench_http" "http://127.0.0.1:$port/mcp" 64 "${HTTP_CALLS:-1000}"
