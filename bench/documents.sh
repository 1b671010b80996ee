#!/usr/bin/env bash
# Benchmark parse_document and run_security_scan against the reference tools, side by side.
#
# - parse_document of a 100-page PDF (reportlab) vs poppler's `pdftotext` (target: at most 1 s);
# - parse_document of a 10,000-row sheet (openpyxl) (target: at most 500 ms);
# - run_security_scan's secrets check on bench/run.sh's >= 200 MB corpus of Rust sources vs `rg`
#   with the same rules (target: at most 2x rg).
# Every hands figure includes starting hands and its parse child. Results (hyperfine JSON) go to
# bench/results/; the table prints medians and ratios.
#
# Usage: bash bench/documents.sh      (env: RUNS=10 WARMUP=2 PROFILE=release|debug HANDS_DOC_PYTHON=…; the corpus is
#        made by bash bench/run.sh, or here if missing)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
results="$here/results"
runs="${RUNS:-10}"
warmup="${WARMUP:-2}"
python="${HANDS_DOC_PYTHON:-$HOME/.cache/hands-docs-venv/bin/python}"
target="${CARGO_TARGET_DIR:-$repo/target}"

for tool in hyperfine rg pdftotext cargo; do
    command -v "$tool" >/dev/null 2>&1 || { echo "missing: $tool (apt-get install hyperfine ripgrep poppler-utils)" >&2; exit 1; }
done
[[ -x "$python" ]] || { echo "missing: $python (python3 -m venv ~/.cache/hands-docs-venv && ~/.cache/hands-docs-venv/bin/pip install -r tests/documents/requirements.txt)" >&2; exit 1; }

profile="${PROFILE:-release}"
echo "== building hands ($profile)"
if [[ $profile == release ]]; then
    (cd "$repo" && cargo build --release --quiet -p hands)
else
    (cd "$repo" && cargo build --quiet -p hands)
fi
hands="$target/$([[ $profile == release ]] && echo release || echo debug)/hands"

docs="$results/documents"
mkdir -p "$docs"
[[ -f "$docs/rows.xlsx" ]] || "$python" "$repo/tests/documents/make_fixtures.py" "$docs" --rows 10000
corpus="$here/corpus"
if [[ ! -d "$corpus" ]]; then
    echo "no corpus: run bash bench/run.sh once (it builds bench/corpus)" >&2
    exit 1
fi
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT

hf() {
    local name="$1"
    shift
    HOME="$home" hyperfine -N --warmup "$warmup" --runs "$runs" --output=pipe --style basic \
        --export-json "$results/$name.json" "$@" >/dev/null
    echo "   done: $name"
}

# The rules of hands-secrets, as ripgrep regexes (service_role JWTs: their shape; hands also decodes them).
rules=(
    -e '\b[sr]k_(live|test)_[A-Za-z0-9]{16,}'
    -e '\bsk-ant-[A-Za-z0-9_-]{20,}'
    -e '\bsk-proj-[A-Za-z0-9_-]{20,}'
    -e '\bghp_[A-Za-z0-9]{30,}'
    -e '\bgithub_pat_[A-Za-z0-9_]{30,}'
    -e '\bAKIA[A-Z0-9]{16}\b'
    -e '-----BEGIN [A-Z ]*PRIVATE KEY-----'
    -e '\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+'
)
rg_rules="rg -n --no-require-git --hidden -g !node_modules -g !.git ${rules[*]@Q} $corpus"

echo "== running (each: $warmup warm-up + $runs runs)"
hf pdf-100-pages -n hands "$hands call parse_document path=hundred.pdf --root $docs" \
    -n pdftotext "pdftotext -layout $docs/hundred.pdf -"
hf sheet-10000-rows -n hands "$hands call parse_document path=rows.xlsx --root $docs"
hf scan-secrets -n hands "$hands call run_security_scan '{"checks":["secrets"]}' --root $corpus" \
    -n rg "$rg_rules"

echo "== same work?"
echo "   pdf: hands $("$hands" call parse_document path=hundred.pdf --root "$docs" | grep -c '^--- page ') pages, pdftotext $(pdftotext "$docs/hundred.pdf" - | tr -cd '\f' | wc -c) pages"
HOME="$home" "$hands" call --json run_security_scan '{"checks":["secrets"]}' --root "$corpus" \
    | python3 -c 'import json,sys; s=json.load(sys.stdin)["structuredContent"]; print("   scan: hands", len(s["findings"]), "findings;", s["checks"][0]["detail"])'
echo "   rg: $(eval "$rg_rules" | wc -l) matching lines"

python3 "$here/table.py" "$results" pdf-100-pages sheet-10000-rows scan-secrets
