#!/usr/bin/env bash
# Web app speed and memory (a benchmark, not a test; BENCHMARKS.md records its output): in headless
# Chromium, the time from giving the page a 1.09 GB bf16 file to its tensor table on the page,
# the statistics throughput of the whole in-page pass (2 workers on this machine), and the wasm
# memory of the workers and the page while processing it and a 2.2 GB file, and the embed's first
# render from a remote 1.09 GB file and download size (tests/e2e/bench-embed.mjs). RUNS=3 by default.
# Then LMC compression and decompression in the page vs the native CLI on MiniLM bf16 / f16 / f32 and
# the AdamW moments (.cache/runs/digits-big, made by scripts/bench-peers.sh; left out when missing)
# in the same run: the whole in-page path (codec worker, File → .bls Blob → safetensors Blob, both
# checked byte for byte) with the single-threaded build (page not cross-origin isolated) and with the
# threaded build (isolated page, when scripts/build-web.sh made it) vs `bitlens --threads 1
# compress` / `decompress`, and codec only on bf16 (every tensor in memory, as `bitlens --threads 1
# bench --codecs lmc`); with the statistics part, also one compression of the 2.2 GB file per build
# (speed, codec worker wasm memory). ONLY=codecs skips the statistics part and the 2.2 GB file.
# (scripts/bench-peers.sh prints the page beside ZipNN and the CLI, round by round.)
# The statistics part also opens the 1.09 GB file by URL from a local Range + CORS server
# (tests/e2e/bench-remote.mjs: URL to tensor table, whole-file statistics throughput; JSON lines),
# and times the weight map of a 100.7 M-value matrix in bf16, f16 and f32 (tests/e2e/bench-values.mjs;
# ONLY=values runs just that part).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup-web.sh >/dev/null
w=.cache/weights
# The weight map of a 100.7 M-value matrix in bf16, f16 and f32 (the same real values).
values_bench() {
  for d in bf16 f16 f32; do
    [ -s $w/big-matrix-$d.safetensors ] ||
      .venv/bin/python tests/python/make_big_matrix.py $w/minilm-bf16.safetensors $w/big-matrix-$d.safetensors 262144 $d
    cat $w/big-matrix-$d.safetensors > /dev/null
    echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    RUNS=${RUNS:-3} node tests/e2e/bench-values.mjs $w/big-matrix-$d.safetensors big.weight
  done
}
if [ "${ONLY:-}" = values ]; then
  CARGO_TARGET_DIR="$root/target/web" scripts/build-web.sh
  values_bench
  exit 0
fi
if [ "${ONLY:-}" != codecs ]; then
[ -s $w/big-bf16.safetensors ] || .venv/bin/python tests/python/make_big_bf16.py $w/minilm-bf16.safetensors $w/big-bf16.safetensors
[ -s $w/big2-bf16.safetensors ] || .venv/bin/python tests/python/make_big_bf16.py $w/minilm-bf16.safetensors $w/big2-bf16.safetensors $((2 << 30))
CARGO_TARGET_DIR="$root/target/web" scripts/build-web.sh
cat $w/big-bf16.safetensors $w/big2-bf16.safetensors > /dev/null  # warm page cache, as the native benchmark
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
node tests/e2e/bench.mjs $w/big-bf16.safetensors $w/big2-bf16.safetensors
echo
echo "== remote: $w/big-bf16.safetensors by URL (Range requests to a local server)"
RUNS=${RUNS:-3} node tests/e2e/bench-remote.mjs $w/big-bf16.safetensors
echo
echo "== the embed: first render (script load to table) with a cold cache, download size"
node tests/e2e/bench-embed.mjs $w/big-bf16.safetensors
echo
echo "== the weight map (Values) of a 100.7 M-value matrix (bf16, f16, f32): on screen, zoom steps, beside the page reading its bytes"
values_bench
fi

echo
echo "== LMC compression and decompression: page vs native (single thread)"
CARGO_TARGET_DIR="$root/target" cargo build --locked --release -p bitlens-cli >/dev/null 2>&1
CARGO_TARGET_DIR="$root/target/web" scripts/build-web.sh
files=($w/minilm-bf16.safetensors $w/minilm-f16.safetensors $w/minilm-f32.safetensors)
moments=.cache/runs/digits-big/step-000100/optimizer.safetensors
[ -f $moments ] && files+=($moments)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for f in "${files[@]}"; do
  cat $f > /dev/null
  for i in 1 2 3; do
    echo "native $(basename $f): $(target/release/bitlens --threads 1 compress $f -o "$out/n.bls" 2>&1 | tail -1)"
  done
  for i in 1 2 3; do
    echo "native $(basename $f): $(target/release/bitlens --threads 1 decompress "$out/n.bls" -o /dev/null 2>&1 | tail -1)"
  done
done
f=${files[0]}
for i in 1 2 3; do
  echo "native bench: $(target/release/bitlens --threads 1 bench $f --codecs lmc --json 2>/dev/null | grep -o '"compress_mb_s":[0-9.]*,"decompress_mb_s":[0-9.]*')"
done
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
big=""
[ "${ONLY:-}" = codecs ] || big=$w/big2-bf16.safetensors
RUNS=${RUNS:-5} BIG=$big node tests/e2e/bench-codecs.mjs "${files[@]}"
