#!/usr/bin/env bash
# ZipNN vs bitlens LMC on the real MiniLM weights (fp32, bf16, fp16), same files, same run.
# Installs zipnn into the project's .venv if missing (it pulls torch: a large one-time download).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh >/dev/null
if ! .venv/bin/python -c "import zipnn" 2>/dev/null; then
  echo "bench-peers: installing zipnn into .venv" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/python/requirements-bench.txt
fi
cargo build --release --locked -p bitlens-cli >/dev/null 2>&1
w=.cache/weights
.venv/bin/python -W ignore tests/python/bench_peers.py target/release/bitlens \
  "$w/minilm-f32.safetensors" "$w/minilm-bf16.safetensors" "$w/minilm-f16.safetensors" "$@"
