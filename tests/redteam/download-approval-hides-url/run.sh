#!/bin/bash
# download_to_repo with overwrite=true: the approval shows only the path (no URL, no "replaces existing file");
# after "yes" an existing file is replaced by whatever the URL serves.
. "$(dirname "$0")/../lib/common.sh"
PORT=$(free_port)
start_rec $PORT
# A web project: download_to_repo is offered there.
echo "<h1>app</h1>" > "$P/index.html"
echo precious > "$P/keep.txt"
echo "{\"name\":\"download_to_repo\",\"arguments\":{\"url\":\"http://127.0.0.1:$PORT/payload-from-elsewhere.js\",\"path\":\"keep.txt\",\"overwrite\":true}}" > "$T/calls"
mcp --answer accept --content '{"approve":true}' --timeout 60 --calls "$T/calls" -- "$HANDS" mcp --root "$P" -c approval=ask -c 'net.allow_hosts=["127.0.0.1"]'
grep -E '"message"|"text"' "$T/out"; cat "$P/keep.txt"; echo
if ! grep '"message"' "$T/out" | grep -q 'payload-from-elsewhere' && ! grep -q precious "$P/keep.txt"; then
  echo "HOLE: approval text had no URL (and no overwrite notice), file was replaced"; exit 1; fi
# Not vacuous: the call was offered and asked, showing the URL.
if ! grep '"message"' "$T/out" | grep -q 'payload-from-elsewhere'; then
  echo "BROKEN: no approval showing the URL was asked (is download_to_repo offered?)"; exit 1; fi
echo "fixed"; exit 0
