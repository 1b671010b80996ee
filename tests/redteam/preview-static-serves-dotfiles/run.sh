#!/bin/bash
# The preview's built-in static server (a static project: index.html) serves the whole project root to anyone
# who can connect to 127.0.0.1:PORT: any other local user (here uid 65534), without hands' token, reads the
# project's .env, .git/config (with its credential) and key files. (Vite denies .env/*.pem by default; the page
# itself needs none of them.) The port is in /proc/net/tcp for every user.
. "$(dirname "$0")/../lib/common.sh"
[ "$(id -u)" = 0 ] || { echo "needs root to run the reader as another uid (setpriv)"; exit 2; }
chmod 755 "$T"
echo '<!doctype html><html><body><h1>app</h1></body></html>' > "$P/index.html"
printf 'DB_PASSWORD=hunter2_dotenv_77\n' > "$P/.env"; chmod 600 "$P/.env"
mkdir -p "$P/.git"; printf '[remote "origin"]\n\turl = https://user:ghp_TOKEN_in_gitconfig_55@example.invalid/x/y\n' > "$P/.git/config"; chmod 700 "$P/.git"
printf -- '-----BEGIN PRIVATE KEY-----\nKEYMATERIAL_88\n-----END PRIVATE KEY-----\n' > "$P/deploy.pem"; chmod 600 "$P/deploy.pem"
cat > "$T/hook.sh" <<H
PP=\$(python3 -c "import json,sys,re;print(re.search(r':(\d+)/', json.load(open(sys.argv[1]))['previewUrl']).group(1))" "$P/.hands/devtools.json")
for u in /.env /.git/config /deploy.pem; do
  printf '%s -> ' "\$u"; setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -m3 "http://127.0.0.1:\$PP\$u" | head -c 200 | tr '\n' ' '; echo
done > "$T/res" 2>&1
H
printf '%s\n' '{"name":"preview_open","arguments":{}}' '{"name":"ask_user","arguments":{"question":"go on?"}}' > "$T/calls"
mcp --answer decline --timeout 90 --on-elicit "bash '$T/hook.sh'" --calls "$T/calls" -- "$HANDS" mcp --root "$P"
grep -o '"text": "Preview ready[^"]*' "$T/out" | cut -c1-80
setpriv --reuid=65534 --regid=65534 --clear-groups cat "$P/.env" >/dev/null 2>&1 && { echo "BROKEN: uid 65534 can read .env directly"; exit 2; }
cat "$T/res" 2>/dev/null
if grep -q 'hunter2_dotenv_77\|ghp_TOKEN_in_gitconfig_55\|KEYMATERIAL_88' "$T/res" 2>/dev/null; then
  echo "HOLE: another local user read the project's .env/.git/config/key through the preview's static server"; exit 1; fi
echo "fixed"; exit 0
