#!/usr/bin/env bash
# Every test of the web app: sets up what is missing, then format and clippy of the web crates for
# wasm32 (and of the threaded codec module, where nightly exists), a type check of the workers'
# JavaScript (tsc), the wasm API's and the worker job loop's tests compiled to WebAssembly (run in
# node), the app's build (scripts/build-web.sh: Trunk, plus the threaded module
# when nightly with rust-src exists — said clearly when skipped), and the end-to-end tests in
# headless Chromium against the built app (checked against the CLI: statistics, and the codec
# features — page snapshots, single files and shard sets, restored by `bitlens decompress`, CLI
# snapshots restored in the page, byte for byte; the threaded build on a cross-origin isolated page,
# the single-threaded fallback without isolation; a 1.09 GB file compressed in bounded wasm memory,
# made here from the MiniLM weights in a few seconds).
# Idempotent. Wasm builds use target/web so they never wait on the native build's lock.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
step() { echo; echo "== $*" >&2; }
export CARGO_TARGET_DIR="$root/target/web"

step "setup (web)"
scripts/setup-web.sh

step "cargo fmt --check (web crates)"
cargo fmt -p bitlens-web -p bitlens-wasm -p bitlens-protocol -- --check

step "cargo clippy for wasm32 (web crates, warnings are errors)"
cargo clippy --locked --release --target wasm32-unknown-unknown -p bitlens-web -p bitlens-wasm \
  -p bitlens-protocol --all-targets -- -D warnings

step "type-check the workers' and the embed's JavaScript (tsc: // @ts-check with JSDoc, web/tsconfig.json, web/embed/tsconfig.json)"
npx --no-install tsc -p web
npx --no-install tsc -p web/embed

step "clippy of the threaded codec module (nightly, feature threads)"
scripts/build-web.sh --clippy

step "protocol round trips (host)"
CARGO_TARGET_DIR="$root/target" cargo test --locked -p bitlens-protocol

step "wasm API and worker job loop tests as WebAssembly (node)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test --locked --release --target wasm32-unknown-unknown -p bitlens-wasm

step "build the app (trunk build --release, then the threaded codec module)"
scripts/build-web.sh
if [ -f dist/threads/bitlens-wasm_bg.wasm ]; then
  echo "test-web: threaded build made: the e2e tests check it on a cross-origin isolated page" >&2
else
  echo "test-web: threaded build SKIPPED (no nightly with rust-src): only the single-threaded app is tested" >&2
fi

step "native CLI (reference numbers for the e2e tests)"
CARGO_TARGET_DIR="$root/target" cargo build --locked --release -p bitlens-cli

step "end-to-end tests in headless Chromium"
BITLENS_BIN="$root/target/release/bitlens" node --test tests/e2e/
