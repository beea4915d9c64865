#!/usr/bin/env bash
# Catalogue runs on this machine (issue 26; tests/python/bench_catalogue.py says what is measured):
# files/s and GB/s of `bitlens.catalogue` with 1 and 2 workers on Ray and on a process pool, over
# the real weights (20 MiniLM files, 1.09 GB) and the format fixtures (many small files), a rerun's
# speed, and the CLI called once per file beside it. The corpus is hard links under
# .cache/bench-catalogue. Builds the CLI and the package first. Extra arguments go to
# bench_catalogue.py (--rounds N, --json).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh >/dev/null
scripts/python-package.sh
cargo build --release --locked -p bitlens-cli >/dev/null 2>&1
echo "bench-catalogue: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
RAY_DEDUP_LOGS=0 .venv/bin/python -W ignore tests/python/bench_catalogue.py target/release/bitlens \
  .cache/bench-catalogue "$@"
echo "bench-catalogue: done $(date -u '+%H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
