# source me. needs HANDS_BIN
HANDS_BIN="${HANDS_BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/hands-target}/debug/hands}"
LIB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"; export LIB
setup_home() { # $1 dir ; $2 port
  mkdir -p "$1/home/.config/hands" "$1/proj"
  cat > "$1/home/.config/hands/config.toml" <<EOT
[model]
provider = "anthropic"
model = "claude-sonnet-4-5"
base_url = "http://127.0.0.1:$2"
max_retries = 0
EOT
  export HOME="$1/home" ANTHROPIC_API_KEY=x HANDS_STATE_DIR="$1/home/state"
}
start_fake() { # port script log
  timeout 120 python3 $LIB/fakeanth.py "$1" "$2" "$3" & FAKEPID=$!
  for i in $(seq 50); do python3 -c "import socket;socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null && break; sleep 0.1; done
}
stop_fake() { kill $FAKEPID 2>/dev/null; wait $FAKEPID 2>/dev/null; }
