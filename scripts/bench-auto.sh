#!/usr/bin/env bash
# `--codec auto` against the exhaustive best codec per tensor (issue 17): every file of the test set
# (MiniLM bf16 / f16 / f32; the digits run's model and optimizer files, fp32 and bf16, each step
# against the one before; the page demo's consecutive steps) compressed with every candidate codec
# forced and with auto; prints how often auto's choice is the best, the size lost against the best,
# auto vs LMC per file, predicted vs achieved, and CPU time (perf stat task-clock, min of --runs).
# Options go to tests/python/bench_auto.py (e.g. --runs 5 --only minilm --json out.json).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --release --locked -p bitlens-cli >/dev/null 2>&1
.venv/bin/python tests/python/bench_auto.py target/release/bitlens "$@"
