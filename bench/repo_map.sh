#!/usr/bin/env bash
# repo_map against Aider's repository map on the same 2,000 Rust files (the first 2,000 by path of
# pinned crates' sources from the cargo registry: the versions Cargo.lock names), both with a
# 2,000-token budget:
#   cold  a fresh `hands call repo_map` process (nothing cached; process start included) vs Aider's
#         RepoMap with its tags cache deleted;
#   warm  repeated calls in one `hands mcp` session (tools/call over stdio) vs Aider's second call in
#         the same process (its tags cache on disk, its map cache in memory);
#   size  each map's tokens counted with tiktoken's cl100k_base (the encoding litellm bundles).
# Prints medians and the ratios hands/Aider. Builds the release binary first; installs aider-chat
# into a venv of its own (BENCH_VENV) when it is absent.
# Env: RUNS (10), PROFILE (release; `dev` for a debug build), FILES (2000), BENCH_VENV, HANDS_BIN (a
# binary built already: no build here).
# Usage: bash bench/repo_map.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
PROFILE="${PROFILE:-release}"
RUNS="${RUNS:-10}"
FILES="${FILES:-2000}"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
VENV="${BENCH_VENV:-$HOME/.cache/hands-bench-aider}"
flag=(); [ "$PROFILE" = release ] && flag=(--release)
dir="$TARGET/$PROFILE"; [ "$PROFILE" = dev ] && dir="$TARGET/debug"
HANDS="${HANDS_BIN:-$dir/hands}"
[ -n "${HANDS_BIN:-}" ] || (cd "$REPO" && cargo build --quiet "${flag[@]}" -p hands)
[ -x "$VENV/bin/aider" ] || { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q aider-chat; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# The tree: crates Cargo.lock pins, as the registry unpacked them.
REGISTRY="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ | head -1)"
python3 - "$REPO/Cargo.lock" "$REGISTRY" "$WORK/tree" "$FILES" <<'PY'
import os, re, shutil, sys
lock, registry, tree, files = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
pinned = dict(re.findall(r'name = "([^"]+)"\nversion = "([^"]+)"', open(lock).read()))
crates = ["tokio", "rustix", "rmcp", "tower", "rustls", "regex-automata", "syn", "tokio-util",
          "tracing-subscriber", "hyper", "axum", "serde_json", "ring", "clap_builder"]
found = []
for name in crates:
    root = os.path.join(registry, f"{name}-{pinned[name]}")
    for dirpath, _, names in os.walk(root):
        found += [os.path.join(dirpath, n) for n in names if n.endswith(".rs")]
found.sort()
if len(found) < files:
    sys.exit(f"only {len(found)} files in the pinned crates")
for path in found[:files]:
    rel = os.path.relpath(path, registry)
    os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
    shutil.copyfile(path, os.path.join(tree, rel))
print(f"tree: {files} .rs files, {sum(os.path.getsize(p) for p in found[:files]) >> 20} MiB, from {len(crates)} pinned crates")
PY

export TIKTOKEN_CACHE_DIR
TIKTOKEN_CACHE_DIR="$("$VENV/bin/python" -c 'import litellm, os; print(os.path.join(os.path.dirname(litellm.__file__), "litellm_core_utils", "tokenizers"))' 2>/dev/null)"

"$VENV/bin/python" - "$HANDS" "$WORK/tree" "$RUNS" <<'PY'
import contextlib, io, json, os, shutil, statistics, subprocess, sys, time
import tiktoken
hands, tree, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
enc = tiktoken.get_encoding("cl100k_base")
args = {"max_tokens": 2000}

def hands_cold():
    t = time.perf_counter()
    out = subprocess.run([hands, "call", "repo_map", json.dumps(args), "--root", tree],
                         capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - t, out

def hands_warm():
    p = subprocess.Popen([hands, "mcp", "--root", tree], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, bufsize=1)
    def send(msg):
        p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
    def answer(id):
        while True:
            msg = json.loads(p.stdout.readline())
            if msg.get("id") == id:
                return msg
    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    answer(0)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    times = []
    for i in range(runs + 1):
        t = time.perf_counter()
        send({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "repo_map", "arguments": args}})
        msg = answer(i + 1)
        times.append(time.perf_counter() - t)
    p.stdin.close(); p.wait(timeout=30)
    return times[1:], times[0]

from aider.io import InputOutput
from aider.repomap import RepoMap

class Model:
    """Aider asks its model to count tokens; the same cl100k count as for hands."""
    def token_count(self, text):
        return len(enc.encode(text))

files = sorted(os.path.join(d, n) for d, _, ns in os.walk(tree) for n in ns if n.endswith(".rs"))

def aider_map():
    rm = RepoMap(map_tokens=2000, root=tree, main_model=Model(), io=InputOutput(yes=True, pretty=False), refresh="auto")
    return rm

def quiet(f):
    """Aider draws progress bars on stderr."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return f()

def aider_cold():
    shutil.rmtree(os.path.join(tree, ".aider.tags.cache.v4"), ignore_errors=True)
    t = time.perf_counter()
    text = quiet(lambda: aider_map().get_repo_map([], files))
    return time.perf_counter() - t, text

cold = [hands_cold() for _ in range(runs)]
warm, first = hands_warm()
h_text = cold[0][1]
a_cold = [aider_cold() for _ in range(max(3, runs // 3))]
rm = aider_map()
quiet(lambda: rm.get_repo_map([], files))
a_warm = []
for _ in range(runs):
    t = time.perf_counter(); quiet(lambda: rm.get_repo_map([], files)); a_warm.append(time.perf_counter() - t)
a_text = a_cold[0][1] or ""
med = statistics.median
hc, aw, ac, hw = med(t for t, _ in cold), med(a_warm), med(t for t, _ in a_cold), med(warm)
ht, at = len(enc.encode(h_text)), len(enc.encode(a_text))
print(f"load: {open('/proc/loadavg').read().split()[0]} (1 min), {os.cpu_count()} cores")
print(f"cold  hands {hc*1000:8.1f} ms   aider {ac*1000:8.1f} ms   ratio {hc/ac:.3f}")
print(f"warm  hands {hw*1000:8.1f} ms   aider {aw*1000:8.1f} ms   ratio {hw/aw:.3f}   (hands' first call in the session: {first*1000:.1f} ms)")
print(f"size  hands {ht:8d} tok  aider {at:8d} tok  (budget 2000, cl100k_base); hands {len(h_text)} bytes")
PY
