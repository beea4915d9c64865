#!/usr/bin/env bash
# Web app speed and memory (a benchmark, not a test; BENCHMARKS.md records its output): in headless
# Chromium, the time from giving the page a 1.09 GB bf16 file to its tensor table on the page,
# the statistics throughput of the whole in-page pass (2 workers on this machine), and the wasm
# memory of the workers and the page while processing it and a 2.2 GB file. RUNS=3 by default.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup-web.sh >/dev/null
w=.cache/weights
[ -s $w/big-bf16.safetensors ] || .venv/bin/python tests/python/make_big_bf16.py $w/minilm-bf16.safetensors $w/big-bf16.safetensors
[ -s $w/big2-bf16.safetensors ] || .venv/bin/python tests/python/make_big_bf16.py $w/minilm-bf16.safetensors $w/big2-bf16.safetensors $((2 << 30))
CARGO_TARGET_DIR="$root/target/web" trunk build --release >/dev/null 2>&1
cat $w/big-bf16.safetensors $w/big2-bf16.safetensors > /dev/null  # warm page cache, as the native benchmark
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
node tests/e2e/bench.mjs $w/big-bf16.safetensors $w/big2-bf16.safetensors
