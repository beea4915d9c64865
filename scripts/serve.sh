#!/usr/bin/env bash
# Builds the web app (scripts/build-web.sh: the app, and the threaded codec module where nightly
# exists) and serves it on http://127.0.0.1:${PORT:-8080}/ with the cross-origin isolation headers
# (COOP/COEP) the threaded build needs. Open the printed URL and press "Load demo", or drop your own
# .safetensors files: nothing is uploaded, everything runs in the page. Ctrl-C stops the server.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
command -v node >/dev/null || { echo "serve: node is needed for the static server" >&2; exit 1; }
scripts/setup-web.sh --build
CARGO_TARGET_DIR="$root/target/web" scripts/build-web.sh
exec node tests/e2e/serve.mjs dist "${PORT:-8080}"
