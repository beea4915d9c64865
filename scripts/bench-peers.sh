#!/usr/bin/env bash
# ZipNN vs bitlens on real weights of four kinds, same files, same run (issue 16): the LMC codec
# alone, the container in memory, and the CLI as a user runs it (file -> /dev/null, file -> file on
# tmpfs), compress and decompress, one and two threads; fastest and median of several rounds.
# Kinds: MiniLM in bf16, fp16 and fp32 (.cache/weights, scripts/fetch-weights.sh) and the fp32
# AdamW moments of a real training run made here (scripts/train_digits.py, made when missing).
# Extra arguments go to tests/python/bench_peers.py (--rounds N, --json).
# Installs zipnn into the project's .venv if missing (it pulls torch: a large one-time download).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if ! .venv/bin/python -c "import zipnn" 2>/dev/null; then
  scripts/setup.sh >/dev/null
  echo "bench-peers: installing zipnn into .venv" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/python/requirements-bench.txt
fi
run=.cache/runs/digits-big
moments="$run/step-000100/optimizer.safetensors"
if [ ! -f "$moments" ]; then
  echo "bench-peers: training the digits MLP (hidden 2048, 100 steps) for its AdamW moments" >&2
  .venv/bin/python scripts/train_digits.py train --out "$run" --hidden 2048 --steps 100 --every 100 >&2
fi
cargo build --release --locked -p bitlens-cli >/dev/null 2>&1
w=.cache/weights
.venv/bin/python -W ignore tests/python/bench_peers.py target/release/bitlens \
  "$w/minilm-bf16.safetensors" "$w/minilm-f16.safetensors" "$w/minilm-f32.safetensors" "$moments" "$@"
