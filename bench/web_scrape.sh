#!/usr/bin/env bash
# web_scrape's built-in backend on a 1 MB article page served from this machine: hands' own time
# (parse + readability + Markdown, target ≤ 60 ms) is the tool's median minus the median of the
# same fetch through the egress guard alone; curl fetching the same page is the outside reference.
#   bash bench/web_scrape.sh [N] [MB]      (N runs, default 30; page size, default 1 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-30}"
mb="${2:-1}"
target="${CARGO_TARGET_DIR:-target}"
cargo build -q --release -p hands-web --example bench_scrape
bin="$target/release/examples/bench_scrape"

work="$(mktemp -d)"
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$bin" page "$work/article.html" "$mb"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work" >/dev/null 2>&1 &
server=$!
url="http://127.0.0.1:$port/article.html"
for _ in $(seq 50); do curl -sf -o /dev/null "$url" && break; sleep 0.1; done

# curl: the page fetched and thrown away, N times; the median of its total time.
curl_ms="$(for _ in $(seq "$n"); do curl -s -o /dev/null -w '%{time_total}\n' "$url"; done \
  | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]*1000}')"

"$bin" run "$url" "$n"
echo "curl fetching the same page, median of $n: $curl_ms ms"
