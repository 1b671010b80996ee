#!/usr/bin/env bash
# Benchmark of db_schema on 500 tables with 5,000 columns (target: at most 300 ms, release build)
# against references on the same database: psql running db_schema's own catalog queries, and
# pg_dump --schema-only.
#
# Flow: start a throwaway PostgreSQL (initdb and pg_ctl as the `postgres` user, 127.0.0.1, a free
# port), create the 500 tables, then time
#   1. db_schema through the registry in one process (crates/connect/examples/db_schema_bench.rs,
#      release): connect, read, render, truncate and spill, as a tool call does;
#   2. `hands call db_schema` end to end, when a release hands is built (BUILD_HANDS=1 builds it):
#      process start, settings, registry and the call;
#   3. psql -f with the same catalog queries (process start and connection included);
#   4. pg_dump --schema-only;
# and print the medians and the ratios. As root (initdb refuses root: it runs as `postgres`).
# Usage: bash bench/db_schema.sh        (env: RUNS=20, BUILD_HANDS=0)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-20}"
target="${CARGO_TARGET_DIR:-target}"

bin=""
for v in 17 16 15 14; do
  [ -x "/usr/lib/postgresql/$v/bin/initdb" ] && bin="/usr/lib/postgresql/$v/bin" && break
done
[ -n "$bin" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
command -v psql >/dev/null && command -v pg_dump >/dev/null || { echo "psql and pg_dump are needed" >&2; exit 1; }

echo "== building the benchmark (release)"
cargo build --release --quiet -p hands-connect --example db_schema_bench
bench="$target/release/examples/db_schema_bench"
hands="$target/release/hands"
if [ "${BUILD_HANDS:-0}" = 1 ]; then cargo build --release --quiet -p hands; fi

dir="$(mktemp -d /tmp/hands-db-bench.XXXXXX)"
pw="bench-pass-1234"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cleanup() {
  runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
printf '%s\n' "$pw" >"$dir/pw"
chown -R postgres:postgres "$dir"
runuser -u postgres -- "$bin/initdb" -D "$dir/data" -U bench --auth=scram-sha-256 --no-sync -E UTF8 \
  --pwfile="$dir/pw" >/dev/null
runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off" start >/dev/null
export PGPASSWORD="$pw" PGHOST=127.0.0.1 PGPORT="$port" PGUSER=bench PGDATABASE=postgres
url="postgresql://bench:$pw@127.0.0.1:$port/postgres?sslmode=disable"

echo "== 500 tables, 10 columns each"
python3 - >"$dir/schema.sql" <<'EOF'
for t in range(500):
    cols = ", ".join(f"c{c} text not null default 'x'" for c in range(9))
    print(f"create table t{t} (id int primary key, {cols});")
EOF
psql -X -q -v ON_ERROR_STOP=1 -f "$dir/schema.sql"
psql -X -qAt -c "select count(*) from pg_attribute a join pg_class c on c.oid = a.attrelid
  join pg_namespace n on n.oid = c.relnamespace
  where n.nspname = 'public' and c.relkind = 'r' and a.attnum > 0" | sed 's/^/columns: /'
"$bench" --print-sql >"$dir/queries.sql"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_ms() { # command… → milliseconds of one run
  local start end
  start=$(date +%s%N); "$@" >/dev/null 2>&1; end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
repeat() { for _ in $(seq "$runs"); do time_ms "$@"; done | median; }

echo "== timing ($runs runs each, medians)"
root="$dir/project"
mkdir -p "$root"
ours=$("$bench" --url "$url" --runs "$runs" --root "$root" | awk '/^median/ {print $2}')
psql_ms=$(repeat psql -X -q -o /dev/null -f "$dir/queries.sql")
dump_ms=$(repeat pg_dump --schema-only -f /dev/null)
call_ms=""
if [ -x "$hands" ]; then
  export HOME="$dir/home" XDG_STATE_HOME="$dir/state"
  mkdir -p "$HOME"
  export SUPABASE_DB_URL="$url"
  call_ms=$(repeat "$hands" -c 'net.allow_hosts=["127.0.0.1"]' call db_schema '{}' --root "$root")
fi

printf '\n%-52s %10s %8s\n' "what" "median ms" "ratio"
printf '%-52s %10s %8s\n' "db_schema in process (release, through the registry)" "$ours" "1.00"
ratio() { python3 -c "print(f'{$1 / max($2, 0.001):.2f}')"; }
[ -n "$call_ms" ] && printf '%-52s %10s %8s\n' "hands call db_schema (release, process start incl.)" "$call_ms" "$(ratio "$call_ms" "$ours")"
printf '%-52s %10s %8s\n' "psql -f the same catalog queries" "$psql_ms" "$(ratio "$psql_ms" "$ours")"
printf '%-52s %10s %8s\n' "pg_dump --schema-only" "$dump_ms" "$(ratio "$dump_ms" "$ours")"
echo
python3 -c "import sys; ours=float('$ours'); print('target (<= 300 ms):', 'met' if ours <= 300 else 'MISSED')"
