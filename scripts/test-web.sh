#!/usr/bin/env bash
# Every test of the web app: sets up what is missing, then format and clippy of the web crates for
# wasm32, the wasm API's tests compiled to WebAssembly (run in node), the Trunk build of the app,
# and the end-to-end tests in headless Chromium against the built app (checked against the CLI:
# statistics, and the codec features — page snapshots restored by `bitlens decompress`, CLI
# snapshots restored in the page, byte for byte).
# Idempotent. Wasm builds use target/web so they never wait on the native build's lock.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
step() { echo; echo "== $*" >&2; }
export CARGO_TARGET_DIR="$root/target/web"

step "setup (web)"
scripts/setup-web.sh

step "cargo fmt --check (web crates)"
cargo fmt -p bitlens-web -p bitlens-wasm -- --check

step "cargo clippy for wasm32 (web crates, warnings are errors)"
cargo clippy --locked --release --target wasm32-unknown-unknown -p bitlens-web -p bitlens-wasm \
  --all-targets -- -D warnings

step "wasm API tests as WebAssembly (node)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test --locked --release --target wasm32-unknown-unknown -p bitlens-wasm

step "trunk build --release"
trunk build --release

step "native CLI (reference numbers for the e2e tests)"
CARGO_TARGET_DIR="$root/target" cargo build --locked --release -p bitlens-cli

step "end-to-end tests in headless Chromium"
BITLENS_BIN="$root/target/release/bitlens" node --test tests/e2e/
