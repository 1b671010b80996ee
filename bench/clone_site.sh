#!/usr/bin/env bash
# Benchmark of clone_site on a local page of 40 assets (6 stylesheets, 2 web fonts, 26 images,
# 6 srcset candidates of which the browser loads 2), served by python3's http.server on
# 127.0.0.1: the time from the call to manifest.json (target ≤ 3 s), beside two references on
# the same page — Chromium alone loading it and taking a screenshot (the floor: what a browser
# costs), and `wget -p -k` (a mirror of the page's requisites, with no browser and no
# screenshot).
# Usage: bash bench/clone_site.sh [RUNS, default 5]     (HANDS_BIN: a built hands to use)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
if [ -z "${HANDS_BIN:-}" ]; then
  cargo build --quiet --release -p hands
  HANDS_BIN=${CARGO_TARGET_DIR:-target}/release/hands
fi
chromium=/usr/bin/chromium
"$chromium" --version 2>/dev/null
work=$(mktemp -d)
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/site" "$work/home/.config/hands" "$work/project"
cp crates/clone/tests/fixtures/source-code-pro-500.woff2 "$work/site/brand.woff2"
cp crates/clone/tests/fixtures/source-code-pro-500.woff2 "$work/site/brand-bold.woff2"
python3 - "$work/site" <<'PY'
import struct, sys, zlib, pathlib
site = pathlib.Path(sys.argv[1])
def png(size, rgb):
    raw = b"".join(b"\x00" + bytes(rgb) * size for _ in range(size))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
imgs = []
for i in range(26):
    (site / f"img{i}.png").write_bytes(png(64 + i, (i * 9 % 256, 120, 255 - i * 9 % 256)))
    imgs.append(f'<img src="img{i}.png" width="64" height="64" alt="{i}">')
for i in range(2):
    (site / f"hi{i}.png").write_bytes(png(128, (200, i * 90, 40)))
    (site / f"lo{i}.png").write_bytes(png(64, (200, i * 90, 40)))
    (site / f"xl{i}.png").write_bytes(png(192, (200, i * 90, 40)))
    imgs.append(f'<img src="lo{i}.png" srcset="lo{i}.png 1x, hi{i}.png 2x, xl{i}.png 3x" width="64" height="64" alt="s{i}">')
css = []
for i in range(6):
    rules = f".c{i}{{color:#{i}{i}3355;background:url(img{i}.png) no-repeat}}"
    if i == 0:
        rules = ("@font-face{font-family:'Brand';src:url(brand.woff2) format('woff2')}"
                 "@font-face{font-family:'Brand';font-weight:700;src:url(brand-bold.woff2) format('woff2')}"
                 "body{font-family:'Brand',serif;background:#f4f1ea}" + rules)
    (site / f"s{i}.css").write_text(rules)
    css.append(f'<link rel="stylesheet" href="s{i}.css">')
body = "".join(f'<p class="c{i % 6}">Paragraph {i} of the benchmark page.</p>' for i in range(30))
(site / "index.html").write_text(
    "<!doctype html><html><head>" + "".join(css) + "</head><body><h1>Forty assets</h1><b>bold</b>"
    + body + "".join(imgs) + "</body></html>")
PY
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$work/site" && exec python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.1; done
url="http://127.0.0.1:$port/"
printf '[net]\nallow_hosts = ["127.0.0.1"]\n' >"$work/home/.config/hands/config.toml"
export HOME="$work/home" XDG_STATE_HOME="$work/state"
python3 - "$HANDS_BIN" "$url" "$work" "$runs" "$chromium" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time
hands, url, work, runs, chromium = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
project = os.path.join(work, "project")
def clone(i):
    dest = f"clone-{i}"
    start = time.time()
    out = subprocess.run([hands, "call", "clone_site", f"url={url}", f"dest={dest}", "--root", project],
                         capture_output=True, text=True)
    done = time.time()
    if out.returncode != 0:
        sys.exit(f"clone_site failed: {out.stdout}{out.stderr}")
    manifest = os.path.join(project, dest, "manifest.json")
    return os.stat(manifest).st_mtime - start, done - start, json.load(open(manifest))
def browser_alone():
    profile = os.path.join(work, "profile")
    shutil.rmtree(profile, ignore_errors=True)
    start = time.time()
    subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                    "--window-size=1280,800", f"--screenshot={os.path.join(work, 'shot.png')}", url],
                   capture_output=True)
    return time.time() - start
def wget():
    dest = os.path.join(work, "wget")
    shutil.rmtree(dest, ignore_errors=True)
    start = time.time()
    subprocess.run(["wget", "-q", "-p", "-k", "-P", dest, url], capture_output=True)
    return time.time() - start
clone(0)  # warm the page cache and the binary
firsts = [clone(i + 1) for i in range(runs)]
to_manifest = [f[0] for f in firsts]
whole = [f[1] for f in firsts]
manifest = firsts[-1][2]
alone = [browser_alone() for _ in range(runs)]
mirror = [wget() for _ in range(runs)] if shutil.which("wget") else []
med = statistics.median
print(f"page: {url} — {len(manifest['assets'])} assets saved, {len(manifest['blocked'])} blocked, runs: {runs}")
print(f"clone_site → manifest.json   median {med(to_manifest):.2f} s (min {min(to_manifest):.2f}, max {max(to_manifest):.2f}); target ≤ 3 s")
print(f"clone_site, whole call        median {med(whole):.2f} s")
print(f"chromium --screenshot alone   median {med(alone):.2f} s   → clone_site / browser alone = {med(to_manifest) / med(alone):.2f}×")
if mirror:
    print(f"wget -p -k                    median {med(mirror):.2f} s   → clone_site / wget = {med(to_manifest) / med(mirror):.1f}×")
PY
