#!/usr/bin/env bash
# The statistics pass over block-quantized GGUF files, per value, against the BF16 GGUF of the same
# weights in the same run (issue 28; a benchmark, not a test: BENCHMARKS.md records its output).
# Makes the files under .cache/gguf-bench when missing (tests/python/make_gguf_bench.py: MiniLM's
# real weights ×4, 91 M values, one file per block type the reader dequantizes), builds the CLI
# unless BITLENS_BIN is given, and times `bitlens --threads 2 inspect F` and `--threads 1` on each
# (tests/python/bench_gguf_stats.py: best of ROUNDS, default 5). PAGE=1 adds the page's statistics
# pass on the same files (tests/e2e/bench.mjs, RUNS=3 by default; builds the page first).
# TYPES=q4_0,q8_0 limits the types (BF16 always runs).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dir=.cache/gguf-bench
.venv/bin/python tests/python/make_gguf_bench.py "$dir"
if [ -z "${BITLENS_BIN:-}" ]; then
  cargo build --locked --release -p bitlens-cli >/dev/null 2>&1
  BITLENS_BIN=target/release/bitlens
fi
page=()
if [ "${PAGE:-}" = 1 ]; then
  scripts/setup-web.sh >/dev/null
  CARGO_TARGET_DIR="$root/target/web" scripts/build-web.sh
  page=(--page)
fi
echo "bench-gguf-stats: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
RUNS=${RUNS:-3} .venv/bin/python tests/python/bench_gguf_stats.py "$BITLENS_BIN" "$dir" \
  --rounds "${ROUNDS:-5}" --types "${TYPES:-}" "${page[@]}"
echo "bench-gguf-stats: done $(date -u '+%H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
