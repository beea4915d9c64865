#!/usr/bin/env bash
# The bitlens Python package beside the CLI and ZipNN's Python API, same files, same rounds
# (issue 26; tests/python/bench_python.py says what is measured): compress_file, decompress_file,
# save_file and load_file against `bitlens compress` / `decompress`, on MiniLM in bf16, fp16 and
# fp32 (.cache/weights, scripts/fetch-weights.sh) and the fp32 AdamW moments of the digits run
# bench-peers.sh uses (scripts/train_digits.py, made when missing).
# Builds the CLI and the package (scripts/python-package.sh) first. Installs zipnn 0.5.4 into
# .venv without its dependencies when it is missing (its byte API needs none of torch; the
# benchmark stands a module in for torch when torch is absent); without zipnn its rows are left out.
# Extra arguments go to bench_python.py (--rounds N, --json).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh >/dev/null
scripts/python-package.sh
cargo build --release --locked -p bitlens-cli >/dev/null 2>&1
if ! .venv/bin/python -c "import zipnn_core" 2>/dev/null; then
  echo "bench-python: installing zipnn into .venv (without its dependencies)" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r tests/python/requirements-bench.txt ||
    echo "bench-python: zipnn did not install: its rows are left out" >&2
fi
run=.cache/runs/digits-big
moments="$run/step-000100/optimizer.safetensors"
if [ ! -f "$moments" ]; then
  echo "bench-python: training the digits MLP (hidden 2048, 100 steps) for its AdamW moments" >&2
  .venv/bin/python scripts/train_digits.py train --out "$run" --hidden 2048 --steps 100 --every 100 >&2
fi
w=.cache/weights
echo "bench-python: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
.venv/bin/python -W ignore tests/python/bench_python.py target/release/bitlens \
  "$w/minilm-bf16.safetensors" "$w/minilm-f16.safetensors" "$w/minilm-f32.safetensors" "$moments" "$@"
echo "bench-python: done $(date -u '+%H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
