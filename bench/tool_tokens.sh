#!/usr/bin/env bash
# The tokens the model sees of hands' tool list over MCP — each tool's name, description and input
# schema as `hands tools --json` gives them (what `tools/list` sends) — for three projects: a plain
# repository (a five-line Python script), a Vite app and a Supabase app. Counted with tiktoken's
# cl100k_base; the encoding file comes from litellm's wheel (which bundles it), unpacked into the
# bench's venv, so no tokenizer download is needed. Prints each project's total, its tools, and
# the ten largest, and for the plain repository a per-tool table (description and schema apart). Builds the release binary first.
# Env: PROFILE (release; `dev` for a debug build), BENCH_VENV.
# Usage: bash bench/tool_tokens.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
PROFILE="${PROFILE:-release}"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
VENV="${BENCH_VENV:-$HOME/.cache/hands-bench-tokens}"
flag=(); [ "$PROFILE" = release ] && flag=(--release)
(cd "$REPO" && cargo build --quiet "${flag[@]}" -p hands)
dir="$TARGET/$PROFILE"; [ "$PROFILE" = dev ] && dir="$TARGET/debug"
HANDS="$dir/hands"
if [ ! -d "$VENV/tiktoken-cache" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q tiktoken
  "$VENV/bin/pip" download -q --no-deps -d "$VENV/wheel" litellm
  mkdir -p "$VENV/tiktoken-cache"
  (cd "$VENV/tiktoken-cache" && "$VENV/bin/python" -c '
import sys, zipfile, glob, os
wheel = glob.glob(os.path.join(sys.argv[1], "litellm-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if "/tokenizers/" in name and os.path.basename(name) and "." not in os.path.basename(name):
            open(os.path.basename(name), "wb").write(z.read(name))
' "$VENV/wheel")
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

mkdir -p "$WORK/plain" "$WORK/vite/src" "$WORK/supabase/supabase" "$WORK/supabase/src"
printf 'def main():\n    print("hello")\n\nif __name__ == "__main__":\n    main()\n' > "$WORK/plain/main.py"
printf '{"name":"app","private":true,"type":"module","scripts":{"dev":"vite"},"devDependencies":{"vite":"^7.0.0"}}\n' > "$WORK/vite/package.json"
printf '<!doctype html><div id="app"></div><script type="module" src="/src/main.js"></script>\n' > "$WORK/vite/index.html"
printf 'document.querySelector("#app").textContent = "hi";\n' > "$WORK/vite/src/main.js"
cp "$WORK/vite/package.json" "$WORK/vite/index.html" "$WORK/supabase/"
cp "$WORK/vite/src/main.js" "$WORK/supabase/src/"
printf 'project_id = "app"\n' > "$WORK/supabase/supabase/config.toml"
printf 'VITE_SUPABASE_URL=\nSUPABASE_URL=\n' > "$WORK/supabase/.env.example"

for project in plain vite supabase; do
  HOME="$WORK/home" "$HANDS" tools --json --root "$WORK/$project" > "$WORK/$project.json"
done
TIKTOKEN_CACHE_DIR="$VENV/tiktoken-cache" "$VENV/bin/python" - "$WORK" <<'PY'
import json, os, sys
import tiktoken
work = sys.argv[1]
enc = tiktoken.get_encoding("cl100k_base")
print(f"load: {open('/proc/loadavg').read().split()[0]} (1 min); cl100k_base tokens of name + description + input schema")
for project in ("plain", "vite", "supabase"):
    tools = json.load(open(os.path.join(work, f"{project}.json")))["tools"]
    sizes = sorted(((len(enc.encode(json.dumps({"name": t["name"], "description": t.get("description", ""), "input_schema": t.get("inputSchema")}))), t["name"]) for t in tools), reverse=True)
    total = sum(n for n, _ in sizes)
    print(f"\n{project}: {total} tokens, {len(tools)} tools")
    print("  " + " ".join(name for _, name in sorted(sizes, key=lambda s: s[1])))
    print("  largest: " + ", ".join(f"{name} {n}" for n, name in sizes[:10]))
    if project == "plain":
        print(f"  {'tool':<18} {'total':>5} {'descr':>5} {'schema':>6}")
        for t in sorted(tools, key=lambda t: t["name"]):
            d = len(enc.encode(t.get("description", "")))
            s = len(enc.encode(json.dumps(t.get("inputSchema"))))
            n = next(n for n, name in sizes if name == t["name"])
            print(f"  {t['name']:<18} {n:>5} {d:>5} {s:>6}")
PY
