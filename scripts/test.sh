#!/usr/bin/env bash
# Every test: sets up what is missing, then formatting, lints, unit + property tests, the wasm32
# build of the core crates, the Python cross-checks, Miri over the unsafe code and a short fuzz
# smoke run when nightly exists.
# Idempotent; CI (.ci/run) runs exactly this.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# A /dev/null that is a regular file (a bitlens before 5a4d9ad, run as root with `-o /dev/null`,
# renamed its output over it) collects what every tool writes there and feeds it back to
# whatever reads it: cargo's rustc probe then fails in ways that name nothing.
[ -c /dev/null ] || {
  echo "test.sh: /dev/null is not a character device; restore it: rm /dev/null && mknod -m 666 /dev/null c 1 3" >&2
  exit 1
}
step() { echo; echo "== $*" >&2; }

step "setup"
scripts/setup.sh

step "cargo fmt --check; docs/FORMAT.md matches the codec docs"
cargo fmt --all -- --check
python3 scripts/format-doc.py --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked --release -- -D warnings

step "unit and property tests"
# setup fetched the weights: a test that would skip for want of them fails here instead.
BITLENS_REQUIRE_WEIGHTS=1 cargo test --workspace --locked --release
# The lossy lesson's bins are a feature only the workers' module turns on (wasm32): test them here.
BITLENS_REQUIRE_WEIGHTS=1 cargo test --locked --release -p bitlens-lessons --features bins

step "codec tests again on the portable kernels (no AVX2 dispatch)"
BITLENS_CPU=baseline cargo test --locked --release -p bitlens-codecs -p bitlens-snapshot

step "core crates build for wasm32-unknown-unknown"
cargo build --locked --release --target wasm32-unknown-unknown \
  -p bitlens-tensors -p bitlens-stats -p bitlens-codecs -p bitlens-snapshot -p bitlens-remote --no-default-features

step "the bitlens Python package (maturin wheel into .venv; its tests run with the cross-checks)"
scripts/python-package.sh
export BITLENS_REQUIRE_PACKAGE=1

step "Python cross-checks (safetensors, numpy) against the CLI"
cargo build --locked --release -p bitlens-cli
BITLENS_BIN="$root/target/release/bitlens" .venv/bin/python -m pytest -q tests/python

step "web app (wasm32 lints, wasm tests, trunk build, e2e in Chromium)"
scripts/test-web.sh

step "Miri over the unsafe code (nightly with miri; skipped with the reason otherwise)"
scripts/miri.sh

step "fuzz smoke run"
scripts/fuzz.sh --smoke
