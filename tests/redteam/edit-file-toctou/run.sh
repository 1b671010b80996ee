#!/bin/bash
# edit_file replace_all: approval diff shows 1 replacement; file changes while the approval is pending;
# after "yes" hands applies the edit to the new content (3 replacements), no staleness check.
. "$(dirname "$0")/../lib/common.sh"
printf 'debug = true\n' > "$P/e.txt"
echo '{"name":"edit_file","arguments":{"path":"e.txt","old_string":"true","new_string":"false","replace_all":true}}' > "$T/calls"
mcp --answer accept --content '{"approve":true}' --timeout 60 --on-elicit "printf 'debug = true\nrequire_auth = true\nverify_tls = true\n' > '$P/e.txt'" --calls "$T/calls" -- "$HANDS" mcp --root "$P" -c approval=ask
grep -E '"message"|"text"' "$T/out"; cat "$P/e.txt"
if grep -q 'require_auth = false' "$P/e.txt"; then
  echo "HOLE: approved diff changed only debug; run also flipped require_auth and verify_tls"; exit 1; fi
echo "fixed"; exit 0
