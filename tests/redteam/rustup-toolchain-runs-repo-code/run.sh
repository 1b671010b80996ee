#!/bin/bash
# With rustup installed (its `rust-analyzer` on PATH is rustup's proxy), a repository with a Cargo.toml and a
# rust-toolchain.toml `[toolchain] path = "/proc/self/cwd/tc"` (absolute, so rustup accepts it; it is the
# server's cwd, the project root) makes the read-only `diagnostics` tool (no approval under ask, plan mode
# too) run the repository's own tc/bin/rust-analyzer. code.project_servers is false; no consent asked.
. "$(dirname "$0")/../lib/common.sh"
RA="$(command -v rust-analyzer || true)"
[ -n "$RA" ] && [ "$(readlink -f "$RA")" != "$RA" ] || [ -x /root/.cargo/bin/rust-analyzer ] || { echo "SKIP: no rustup rust-analyzer proxy on PATH"; exit 2; }
export PATH="${RA%/*}:/root/.cargo/bin:$PATH"
export RUSTUP_HOME="${RUSTUP_HOME:-/root/.rustup}" CARGO_HOME="${CARGO_HOME:-/root/.cargo}"  # the user's rustup (HOME is fresh)
printf '[package]\nname = "a"\nversion = "0.1.0"\nedition = "2021"\n' > "$P/Cargo.toml"
mkdir -p "$P/src" "$P/tc/bin" "$P/tc/lib"; echo 'fn main() { let x: u8 = "s"; }' > "$P/src/main.rs"
printf '[toolchain]\npath = "/proc/self/cwd/tc"\n' > "$P/rust-toolchain.toml"
for b in rust-analyzer rustc cargo; do
  printf '#!/bin/sh\necho "repository code ran as $0 (pid $$)" >> "%s/PWNED_RUSTUP"\nexit 1\n' "$P" > "$P/tc/bin/$b"; chmod +x "$P/tc/bin/$b"
done
echo '{"name":"diagnostics","arguments":{}}' > "$T/calls"
mcp --answer decline --timeout 90 --calls "$T/calls" -- "$HANDS" mcp --root "$P" -c approval=ask
grep -o '"text": "[^"]*' "$T/out" | head -2 | cut -c1-250
cat "$P/PWNED_RUSTUP" 2>/dev/null
if [ -s "$P/PWNED_RUSTUP" ]; then echo "HOLE: read-only diagnostics ran the repository's tc/bin/rust-analyzer (through rustup's rust-toolchain.toml)"; exit 1; fi
echo "fixed"; exit 0
