#!/usr/bin/env bash
# Builds the web app into dist/: the Trunk build (the Yew app and the single-threaded module of the
# workers), then the threaded build of the worker module into dist/threads/, which the codec worker
# (web/worker.js) loads when the page is cross-origin isolated, then the embed (dist/embed/: the
# <bitlens-view> element with the app's module, the workers and the styles, as an npm package
# folder that can be published as is; docs/EMBED.md). The threaded build needs a nightly
# toolchain with rust-src and the wasm32 target (scripts/setup-web.sh adds them when nightly
# exists); without one the app is built single-threaded only and this says so — it never fails
# the build for it.
#
#   scripts/build-web.sh             both builds
#   scripts/build-web.sh --threads   only the threaded one (dist/ must exist)
#   scripts/build-web.sh --embed     only dist/embed/ from what dist/ holds
#   scripts/build-web.sh --clippy    clippy (warnings are errors) of bitlens-wasm with feature
#                                    `threads`, under the threaded build's flags
#   scripts/build-web.sh --check     whether the threaded build can be made (exit 0 / 1)
#
# The threaded build's flags live here, not in a rust-toolchain.toml (which would switch every
# cargo command of the workspace to nightly). RUSTFLAGS replaces `.cargo/config.toml`'s wasm32
# rustflags, so +simd128 is repeated. `--shared-memory` and `--import-memory` make the memory
# shared (without them it comes out unshared and the pool cannot start); the TLS exports let
# wasm-bindgen set up each thread.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
say() { echo "build-web: $*" >&2; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/web}"
threads_target="$root/target/web-threads"
threads_flags=(
  -C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128
  -C link-arg=--shared-memory -C link-arg=--max-memory=1073741824 -C link-arg=--import-memory
  -C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size
  -C link-arg=--export=__tls_align -C link-arg=--export=__tls_base
)

# True when a nightly toolchain with rust-src and the wasm32 target is installed (never installs).
nightly_ready() {
  rustup toolchain list 2>/dev/null | grep -q '^nightly' &&
    rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src' &&
    rustup target list --toolchain nightly --installed 2>/dev/null | grep -qx wasm32-unknown-unknown
}

skipped() {
  say "threaded build SKIPPED: no nightly toolchain with rust-src and the wasm32 target" \
    "(rustup toolchain list; scripts/setup-web.sh adds them when nightly exists)." \
    "The app runs single-threaded everywhere."
}

# cargo +nightly <command> for the threaded module (build or clippy), quiet unless it fails.
threads_cargo() {
  local cmd="$1"
  shift
  local log
  log="$(mktemp)"
  if ! RUSTFLAGS="${threads_flags[*]}" CARGO_TARGET_DIR="$threads_target" \
    cargo +nightly "$cmd" --locked --release --target wasm32-unknown-unknown \
    -Z build-std=panic_abort,std -p bitlens-wasm --features threads "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

# dist/builds.json tells the codec worker whether dist/threads/ exists (so it never asks for a file
# that is not there).
build_threads() {
  rm -rf dist/threads
  echo '{"threads": false}' > dist/builds.json
  if ! nightly_ready; then
    skipped
    return 0
  fi
  say "threaded build of the worker module (nightly, -Z build-std, wasm threads) → dist/threads/"
  threads_cargo build
  wasm-bindgen --target web --out-dir "$threads_target/pkg" --out-name bitlens-wasm \
    "$threads_target/wasm32-unknown-unknown/release/bitlens_wasm.wasm"
  cp -r "$threads_target/pkg" dist/threads
  echo '{"threads": true}' > dist/builds.json
}

# dist/embed/: everything <bitlens-view> loads, found relative to bitlens-embed.js (docs/EMBED.md),
# plus package.json and README.md; its wasm modules without their name sections
# (scripts/strip-wasm-names.mjs). The stylesheet is the app's as it is: its variables and base
# text styles are on `:root` and on `.bitlens-root`, the element's node in its shadow root.
build_embed() {
  local out=dist/embed version
  rm -rf "$out"
  mkdir -p "$out"
  cp web/embed/bitlens-embed.js dist/bitlens-web.js dist/bitlens-web_bg.wasm dist/bitlens-wasm.js \
    dist/bitlens-wasm_bg.wasm dist/worker.js dist/reader.js dist/build-choice.js dist/builds.json "$out/"
  cp web/style.css "$out/style.css"
  grep -q '^:root, .bitlens-root {' "$out/style.css" || { say "web/style.css has no ':root, .bitlens-root {' rule for the element"; exit 1; }
  [ -d dist/threads ] && cp -r dist/threads "$out/threads"
  # What a hub ships goes without the wasm name sections (function names for stack traces, ~0.5 MB
  # raw); the app's own build in dist/ keeps them.
  node scripts/strip-wasm-names.mjs "$out"/bitlens-web_bg.wasm "$out"/bitlens-wasm_bg.wasm \
    $([ -f "$out/threads/bitlens-wasm_bg.wasm" ] && echo "$out/threads/bitlens-wasm_bg.wasm")
  version="$(sed -n 's/^version = "\(.*\)"$/\1/p' web/Cargo.toml | head -1)"
  cp docs/EMBED.md "$out/README.md"
  cat > "$out/package.json" <<JSON
{
  "name": "@bitlens/embed",
  "version": "$version",
  "description": "<bitlens-view>: look inside model checkpoints (safetensors, GGUF, PyTorch, NumPy) and bitlens snapshots by URL, in any page (WebAssembly, range reads)",
  "license": "MIT OR Apache-2.0",
  "type": "module",
  "main": "./bitlens-embed.js",
  "module": "./bitlens-embed.js",
  "exports": {
    ".": "./bitlens-embed.js",
    "./bitlens-embed.js": "./bitlens-embed.js",
    "./style.css": "./style.css",
    "./package.json": "./package.json"
  },
  "files": [
    "bitlens-embed.js",
    "bitlens-web.js",
    "bitlens-web_bg.wasm",
    "bitlens-wasm.js",
    "bitlens-wasm_bg.wasm",
    "worker.js",
    "reader.js",
    "build-choice.js",
    "builds.json",
    "style.css",
    "threads/",
    "README.md"
  ],
  "sideEffects": true,
  "keywords": ["safetensors", "webassembly", "custom-element", "checkpoint", "model-hub"]
}
JSON
  local gz=0 f
  for f in bitlens-embed.js bitlens-web.js bitlens-web_bg.wasm; do
    gz=$((gz + $(gzip -9c "$out/$f" | wc -c)))
  done
  say "embed → $out/ (page: bitlens-embed.js + bitlens-web.js + wasm = $gz bytes gzip)"
}

case "${1:-}" in
  --check) nightly_ready; exit ;;
  --threads) build_threads; exit ;;
  --embed) build_embed; exit ;;
  --clippy)
    if nightly_ready; then threads_cargo clippy --all-targets -- -D warnings; else skipped; fi
    exit ;;
esac
say "trunk build --release (the app and the single-threaded worker module) → dist/"
log="$(mktemp)"
if ! trunk build --release >"$log" 2>&1; then
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
build_threads
build_embed
