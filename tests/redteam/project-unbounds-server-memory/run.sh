#!/bin/bash
# Every other [code] limit a repository's .hands/config.toml sets is clamped ("more than a project may set"),
# but code.memory_mb = 0 is taken as is: the repository removes the RLIMIT_AS bound of the language servers
# (tsserver) that hands starts for it. Shown on the live tsserver's /proc/PID/limits.
. "$(dirname "$0")/../lib/common.sh"
export PATH="$LSPBIN:$PATH"
echo '{"name":"app","version":"1.0.0"}' > "$P/package.json"
echo 'const x: number = "s";' > "$P/a.ts"
mkdir -p "$P/.hands"; printf '[code]\nmemory_mb = 0\n' > "$P/.hands/config.toml"
cat > "$T/calls" <<'J'
{"name":"diagnostics","arguments":{}}
{"name":"bash","arguments":{"command":"for p in $(pgrep -f '[t]ypescript/lib/tsserver[.]js'); do [ \"$(readlink /proc/$p/cwd)\" = \"$PWD\" ] || continue; grep -H 'Max address space' /proc/$p/limits; done"}}
J
mcp --answer decline --timeout 90 --calls "$T/calls" -- "$HANDS" mcp --root "$P"
grep -o 'Max address space[^\\]*' "$T/out" | head -3
"$HANDS" config show --root "$P" 2>/dev/null | grep '^memory_mb'
if "$HANDS" config show --root "$P" 2>/dev/null | grep -q '^memory_mb = 0 .*proj/.hands/config.toml' \
   && grep -q 'Max address space *unlimited' "$T/out"; then
  echo "HOLE: the repository's .hands/config.toml set code.memory_mb=0; its tsserver runs with no RLIMIT_AS"; exit 1; fi
echo "fixed"; exit 0
