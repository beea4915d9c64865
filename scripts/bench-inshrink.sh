#!/usr/bin/env bash
# Inshrinkerator's fidelity on a real training run (issue 15, paper 002 §9): trains
# scripts/train_digits.py (cached under .cache/runs/), compresses every checkpoint with
# `bitlens compress --codec inshrink` under the L2 proxy and under --eval-cmd/--max-degradation
# (ratio with and without the delta, restored loss vs original), resumes training from compressed
# checkpoints (the fault-tolerance experiment), and, through crates/inshrink/examples/fidelity.rs,
# Table 7 (non-uniform vs uniform bins), the delta with and without rearrangement, and the speed on
# one core. Prints Markdown tables; the JSON report goes to .cache/bench-inshrink/report.json.
# Options are passed to tests/python/bench_inshrink.py (e.g. --hidden 512 --steps 300 --every 25
# --max-degradation 0.01 --max-error 0.05).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [[ ! -x .venv/bin/python || ! -f .cache/data/digits.csv.gz ]]; then
  scripts/setup.sh >/dev/null
fi
cargo build --release --locked -p bitlens-cli >/dev/null 2>&1
cargo build --release --locked -p bitlens-inshrink --example fidelity >/dev/null 2>&1
target="${CARGO_TARGET_DIR:-target}"
mkdir -p .cache/bench-inshrink
.venv/bin/python tests/python/bench_inshrink.py "$target/release/bitlens" "$target/release/examples/fidelity" \
  --report .cache/bench-inshrink/report.json "$@"
