#!/usr/bin/env bash
# ZipNN and the hub's own scheme (bg4-lz4, issue 28) vs bitlens on real weights of four kinds, same
# files, same run (issue 16): the LMC codec alone, the container in memory, and the CLI as a user
# runs it (file on disk, in the page cache ->
# /dev/null, and -> file on tmpfs; and from a file on tmpfs), compress and decompress, one and two threads, and the page (the app in headless Chromium:
# whole in-page compression and decompression, single-threaded and threaded builds); fastest and
# median of several rounds.
# Kinds: MiniLM in bf16, fp16 and fp32 (.cache/weights, scripts/fetch-weights.sh) and the fp32
# AdamW moments of a real training run made here (scripts/train_digits.py, made when missing).
# Then the same table for one large file (BIG=0 leaves it out): the 1.09 GB bf16 checkpoint made
# from MiniLM's tensors (tests/python/make_big_bf16.py, made when missing), 3 rounds, no page: where
# the process start and first-touch costs of a 45 MB file no longer hide how the threads scale
# (BIG_ROUNDS=N for more rounds).
# SET=28: issue 28's eleven files instead (MiniLM in three dtypes, a transformer's weights and AdamW
# moments in fp32 and bf16, the MLP's moments in both, the MLP's XOR deltas in both); made when missing.
# Extra arguments go to tests/python/bench_peers.py (--rounds N, --json).
# The page rows need the web toolchain (trunk, node_modules, Chromium: scripts/setup-web.sh); the
# app is built first (CARGO_TARGET_DIR=target/web scripts/build-web.sh, quick when it is fresh) so
# the page runs the same sources as the CLI. PAGE=0 leaves the page out; without the toolchain it
# is left out with a note. With the page, the page's codec alone is then set beside the native
# codec alone on the same files (tests/e2e/bench-codec-alone.mjs, CODEC_ROUNDS=N alternated rounds,
# 7 by default).
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
# Issue 28's set (SET=28): a transformer's weights and AdamW moments in fp32 and bf16 beside the
# MLP's, and the XOR deltas of the MLP between steps 0 and 100 (every weight changed).
tr=.cache/runs/transformer
if [ "${SET:-}" = 28 ] && [ ! -f "$tr/optimizer-bf16.safetensors" ]; then
  echo "bench-peers: training the transformer (6.65 M parameters, 300 AdamW steps)" >&2
  .venv/bin/python scripts/train_transformer.py --out "$tr" >&2
fi
xor=.cache/runs/xor
if [ "${SET:-}" = 28 ]; then
  mkdir -p "$xor"
  for d in "" -bf16; do
    [ -s "$xor/digits-0-100$d.safetensors" ] || .venv/bin/python tests/python/make_xor_delta.py \
      "$run/step-000000/model$d.safetensors" "$run/step-000100/model$d.safetensors" "$xor/digits-0-100$d.safetensors"
  done
fi
cargo build --release --locked -p bitlens-cli >/dev/null 2>&1
page=()
if [ "${PAGE:-1}" != 0 ]; then
  if command -v trunk >/dev/null && command -v node >/dev/null && [ -d node_modules/playwright-core ] &&
    [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
    CARGO_TARGET_DIR="$root/target/web" scripts/build-web.sh
    page=(--page)
  else
    echo "bench-peers: no web toolchain (trunk, node_modules, Chromium; scripts/setup-web.sh): the page rows are left out" >&2
  fi
fi
w=.cache/weights
echo "bench-peers: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
files=("$w/minilm-bf16.safetensors" "$w/minilm-f16.safetensors" "$w/minilm-f32.safetensors" "$moments")
if [ "${SET:-}" = 28 ]; then
  files=("$w/minilm-bf16.safetensors" "$w/minilm-f16.safetensors" "$w/minilm-f32.safetensors"
    "$tr/model.safetensors" "$tr/model-bf16.safetensors" "$tr/optimizer.safetensors" "$tr/optimizer-bf16.safetensors"
    "$moments" "$run/step-000100/optimizer-bf16.safetensors"
    "$xor/digits-0-100.safetensors" "$xor/digits-0-100-bf16.safetensors")
fi
.venv/bin/python -W ignore tests/python/bench_peers.py target/release/bitlens "${files[@]}" "${page[@]}" "$@"
if [ ${#page[@]} -gt 0 ]; then
  # The page's codec alone against the native codec alone, in alternated rounds (issue 28).
  echo
  RUNS="${CODEC_ROUNDS:-7}" node tests/e2e/bench-codec-alone.mjs "${files[@]}"
fi
if [ "${BIG:-1}" != 0 ]; then
  [ -s "$w/big-bf16.safetensors" ] ||
    .venv/bin/python tests/python/make_big_bf16.py "$w/minilm-bf16.safetensors" "$w/big-bf16.safetensors"
  echo
  echo "bench-peers: the large file, $(date -u '+%H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  .venv/bin/python -W ignore tests/python/bench_peers.py target/release/bitlens \
    "$w/big-bf16.safetensors" "$@" --rounds "${BIG_ROUNDS:-3}"
fi
echo "bench-peers: done $(date -u '+%H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
