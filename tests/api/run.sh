#!/usr/bin/env bash
# Fuzz the session API of the real `hands serve` from its own OpenAPI document (/v1/openapi.json)
# with schemathesis: no response may be a server error (5xx), every response must match the
# schema the document gives it, and the server must still be alive at the end.
#
# Needs `schemathesis` on PATH (tests/api/requirements.txt; this script installs nothing) and
# python3. Uses $HANDS_BIN, else $CARGO_TARGET_DIR/debug/hands (built with `cargo build -p hands`
# when missing). Everything the server writes (its session store, process records) goes to a
# temporary folder that is removed at the end.
# Env: HANDS_API_MAX_EXAMPLES (default 50 per operation), HANDS_API_SEED (a fixed seed by default,
# so that a failure reproduces; `random` for a new one each run).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
MAX_EXAMPLES="${HANDS_API_MAX_EXAMPLES:-50}"
SEED="${HANDS_API_SEED:-20261130}"

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'tests/api/run.sh: %s\n' "$*" >&2; exit 1; }

command -v schemathesis >/dev/null ||
  die "schemathesis is not on PATH: pip install -r tests/api/requirements.txt (in a venv)"
command -v python3 >/dev/null || die "python3 is not installed"
schemathesis --version

HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/hands}"
case "$HANDS_BIN" in /*) ;; *) HANDS_BIN="$REPO/$HANDS_BIN" ;; esac
if [ ! -x "$HANDS_BIN" ]; then
  say "cargo build -p hands"
  (cd "$REPO" && cargo build -p hands --locked)
fi
[ -x "$HANDS_BIN" ] || die "no hands binary at $HANDS_BIN"

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

ROOT="$WORK/project"
mkdir -p "$ROOT/src" "$WORK/home" "$WORK/state"
printf 'hello world\n' >"$ROOT/hello.txt"
printf 'fn main() {\n    println!("needle");\n}\n' >"$ROOT/src/main.rs"
TOKEN="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
# A model is configured, so that messages start turns (202) rather than get 503 "no model"; it
# points at a loopback port where nothing listens, so each turn ends quickly with an error event.
MODEL_URL="http://127.0.0.1:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')/v1"

say "hands serve (root $ROOT)"
# The log exists before the server starts: a background command's redirections happen in the
# child after the fork, so on a busy machine the loop below could otherwise read it first.
: >"$WORK/serve.log"
HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/.config" XDG_DATA_HOME="$WORK/home/.local/share" \
  XDG_STATE_HOME="$WORK/state" HANDS_STATE_DIR="$WORK/state" \
  "$HANDS_BIN" serve --listen 127.0.0.1:0 --token "$TOKEN" --root "$ROOT" \
  -c model.provider=openai -c model.model=fuzz -c "model.base_url=$MODEL_URL" \
  -c model.max_retries=0 -c model.request_timeout_ms=2000 \
  </dev/null >"$WORK/serve.out" 2>"$WORK/serve.log" &
SERVER_PID=$!
PORT=""
for _ in $(seq 200); do
  PORT="$(sed -n 's|.*serving MCP at http://127\.0\.0\.1:\([0-9]*\)/mcp.*|\1|p' "$WORK/serve.log" | head -1)"
  [ -n "$PORT" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; die "hands serve exited"; }
  sleep 0.1
done
[ -n "$PORT" ] || { cat "$WORK/serve.log" >&2; die "hands serve did not report its port"; }
BASE="http://127.0.0.1:$PORT"
echo "listening on $BASE"

# One session the fuzzer's path parameters often point at, so that the operations under
# /v1/sessions/{id} are exercised on a real session and not only answered 404; and one background
# process of it, for the stop operation.
SESSION="fuzz-session"
python3 - "$BASE" "$TOKEN" "$ROOT" "$SESSION" "$WORK/process-id" <<'PY'
import json, sys, urllib.error, urllib.request
base, token, root, session = sys.argv[1:5]
def call(method, path, body=None):
    req = urllib.request.Request(
        f"{base}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method=method,
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as err:
        sys.exit(f"{method} {path} failed: HTTP {err.code}: {err.read().decode(errors='replace')}")

print("created session", call("POST", "/v1/sessions", {"root": root, "id": session, "project_id": "fuzz"})["id"])
spawn = {"args": {"command": "sleep 600", "type": "long-run", "name": "fuzz-sleeper"}}
result = call("POST", f"/v1/sessions/{session}/tools/spawn_process", spawn)
assert not result["isError"], result
processes = call("GET", f"/v1/sessions/{session}/processes")["processes"]
print("started process", processes[0]["id"])
with open(sys.argv[5], "w") as out:
    out.write(processes[0]["id"])
PY

# Dictionaries steer some generated values to real ones: the project root (so that sessions get
# created), the session above, and read-only tools (random arguments for them are harmless).
cat >"$WORK/schemathesis.toml" <<TOML
[dictionaries.roots]
values = ["$ROOT"]
[dictionaries.sessions]
values = ["$SESSION"]
[dictionaries.tools]
values = ["read_file", "list_files", "glob", "grep", "list_processes", "no_such_tool"]
[dictionaries.projects]
values = ["fuzz"]
[dictionaries.processes]
values = ["$(cat "$WORK/process-id")"]

[parameters]
"body.root" = { dictionary = "roots", probability = 0.6 }
"path.id" = { dictionary = "sessions", probability = 0.6 }
"path.name" = { dictionary = "tools", probability = 0.9 }
"path.projectId" = { dictionary = "projects", probability = 0.5 }
"path.process_id" = { dictionary = "processes", probability = 0.7 }

# The event stream never ends by itself: read a few events, at most 3 s, and fewer cases.
[[operations]]
include-operation-id = "streamEvents"
request-timeout = 3
max-stream-events = 3
generation.max-examples = 5
TOML

say "schemathesis: not_a_server_error, response_schema_conformance (max $MAX_EXAMPLES examples per operation)"
seed_args=(--seed "$SEED")
[ "$SEED" = "random" ] && seed_args=()
set +e
# One worker: with two, hypothesis parses lambdas' source in two threads at once, which Python
# 3.11's ast module does not survive ("AST constructor recursion depth mismatch").
# From the temporary folder: schemathesis keeps its example database and crash cache in the
# working directory.
cd "$WORK"
schemathesis --config-file "$WORK/schemathesis.toml" run "$BASE/v1/openapi.json" \
  --header "Authorization: Bearer $TOKEN" \
  --checks not_a_server_error,response_schema_conformance \
  --max-examples "$MAX_EXAMPLES" \
  --request-timeout 30 \
  --workers 1 \
  --no-color \
  "${seed_args[@]}"
rc=$?
set -e

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  echo "hands serve died during the run:" >&2
  tail -50 "$WORK/serve.log" >&2
  rc=1
elif grep -q "panicked" "$WORK/serve.log"; then
  echo "hands serve panicked during the run:" >&2
  grep -A5 "panicked" "$WORK/serve.log" | head -40 >&2
  rc=1
fi
if [ "$rc" -ne 0 ]; then
  echo "tests/api/run.sh: FAILED (schemathesis exit $rc)" >&2
else
  echo "tests/api/run.sh: passed"
fi
exit "$rc"
