#!/usr/bin/env bash
# Validate every manifest of deploy/kubernetes against the Kubernetes JSON schemas, strictly
# (unknown fields refused), with kubernetes-validate (its schemas ship in the package: no
# network). Expects it on PATH or at $K8S_VALIDATE.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="${K8S_VALIDATE:-kubernetes-validate}"
command -v "$BIN" >/dev/null || { echo "kubernetes-validate is not installed" >&2; exit 1; }
"$BIN" --strict -k "${K8S_VERSION:-1.30.0}" "$HERE"/*.yaml
echo "deploy/kubernetes: $(ls "$HERE"/*.yaml | wc -l) manifests valid"
