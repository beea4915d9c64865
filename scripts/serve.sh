#!/usr/bin/env bash
# Builds the web app and serves it on http://127.0.0.1:${PORT:-8080}/ (COOP/COEP headers set).
# Open the printed URL and press "Load demo", or drop your own .safetensors files: nothing is
# uploaded, everything runs in the page. Ctrl-C stops the server.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
command -v node >/dev/null || { echo "serve: node is needed for the static server" >&2; exit 1; }
scripts/setup-web.sh --build
echo "serve: building the app (trunk build --release)…" >&2
log="$(mktemp)"
if ! CARGO_TARGET_DIR="$root/target/web" trunk build --release >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
rm -f "$log"
exec node tests/e2e/serve.mjs dist "${PORT:-8080}"
