#!/usr/bin/env bash
# Installs what the web app needs on a fresh machine of this kind and skips what is already there.
# Idempotent and safe to re-run. Network use: crates.io, Debian apt, npm, PyPI (nothing else).
#
#   scripts/setup-web.sh           everything: build tools, Chromium, npm packages, test weights
#   scripts/setup-web.sh --build   only what building the app needs (wasm32 target, wasm-bindgen, trunk,
#                                  nightly's rust-src for the threaded build)
#
# What and why:
# - the wasm32-unknown-unknown target of the stable toolchain;
# - where a nightly toolchain is installed: its rust-src component and wasm32 target, which the
#   threaded build of the codec module needs (`-Z build-std`, scripts/build-web.sh). Nightly itself
#   is never installed (RUSTUP_AUTO_INSTALL=0 on these machines); without it, or when rustup cannot
#   add them, this goes on quietly and scripts/build-web.sh builds the app single-threaded only;
# - wasm-bindgen-cli at exactly the `wasm-bindgen` version in Cargo.lock (the CLI and the crate must
#   match; Trunk.toml `[tools] wasm_bindgen` names the same version and trunk runs offline);
# - trunk (any installed version is used; else 0.21.14, the newest that stable rustc builds);
# - Debian's chromium + chromium-driver (the e2e tests drive /usr/bin/chromium);
# - the npm packages of package.json (playwright-core, no browser download) via `npm ci`;
# - the Python env and real weights of scripts/setup.sh (the e2e tests check the page against the
#   CLI on them and make perturbed copies with Python).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
say() { echo "setup-web: $*" >&2; }
build_only=0
[ "${1:-}" = "--build" ] && build_only=1

command -v cargo >/dev/null || { say "cargo not found: install Rust with rustup first"; exit 1; }
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'; then
    say "adding rust-src to nightly (threaded build of the codec module)"
    timeout 600 rustup component add rust-src --toolchain nightly >/dev/null 2>&1 ||
      say "could not add rust-src to nightly: the threaded build will be skipped"
  fi
  if ! rustup target list --toolchain nightly --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    say "adding target wasm32-unknown-unknown to nightly (threaded build of the codec module)"
    timeout 600 rustup target add wasm32-unknown-unknown --toolchain nightly >/dev/null 2>&1 ||
      say "could not add wasm32 to nightly: the threaded build will be skipped"
  fi
fi

want_bindgen="$(awk '/^name = "wasm-bindgen"$/ { getline; print; exit }' Cargo.lock | sed 's/[^0-9.]//g')"
[ -n "$want_bindgen" ] || { say "no wasm-bindgen in Cargo.lock"; exit 1; }
trunk_bindgen="$(sed -n 's/^wasm_bindgen *= *"\(.*\)"/\1/p' Trunk.toml)"
if [ "$trunk_bindgen" != "$want_bindgen" ]; then
  say "Trunk.toml [tools] wasm_bindgen = \"$trunk_bindgen\" but Cargo.lock has wasm-bindgen $want_bindgen: make them equal"
  exit 1
fi
have_bindgen="$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)"
if [ "$have_bindgen" != "$want_bindgen" ]; then
  say "installing wasm-bindgen-cli $want_bindgen (have: ${have_bindgen:-none}; several minutes)"
  cargo install wasm-bindgen-cli --version "$want_bindgen" --force
fi

if ! trunk --version >/dev/null 2>&1; then
  say "installing trunk 0.21.14 (15-35 minutes on 2 cores)"
  cargo install trunk --version 0.21.14 --locked
fi

[ "$build_only" = 1 ] && exit 0

apt_install() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  # A transient dpkg "cannot access archive" error has been seen: retry once.
  $sudo apt-get install -y -qq "$@" || { sleep 5; $sudo apt-get install -y -qq "$@"; }
}
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  say "installing chromium and chromium-driver (apt)"
  apt_install chromium chromium-driver
fi

command -v node >/dev/null && command -v npm >/dev/null || apt_install nodejs npm
stamp="node_modules/.package-lock.sha"
want_lock="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want_lock" ]; then
  say "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want_lock" > "$stamp"
fi

"$root/scripts/python-env.sh"
"$root/scripts/fetch-weights.sh"
