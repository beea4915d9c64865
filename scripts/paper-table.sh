#!/usr/bin/env bash
# Paper fidelity (issue 17): regenerates docs/PAPERS.md — each claim of the four papers (LMC,
# NeuZip, BitSnap, Inshrinkerator) beside bitlens's measurement on real weights, with the command
# behind each row and a verdict. Trains scripts/train_digits.py's run into .cache/runs/ when
# missing (deterministic), works in .cache/paper-table/, prints the Markdown as well.
# Options are passed to tests/python/paper_table.py (e.g. --table7-every 1, --only lmc_bzip2,
# --json .cache/paper-table/report.json). About 10 minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[[ -x .venv/bin/python && -f .cache/data/digits.csv.gz ]] || scripts/setup.sh >/dev/null
for what in "-p bitlens-cli" "-p bitlens-inshrink --example fidelity" "-p bitlens-codecs --example lmc_speed"; do
  cargo build --release --locked $what >/dev/null 2>&1  # one at a time: the CLI's features as built alone
done
target="${CARGO_TARGET_DIR:-target}"
mkdir -p .cache/paper-table
PAPER_TABLE_COMMAND="scripts/paper-table.sh${*:+ $*}" .venv/bin/python tests/python/paper_table.py \
  "$target/release/bitlens" --fidelity "$target/release/examples/fidelity" \
  --lmc-speed "$target/release/examples/lmc_speed" --out docs/PAPERS.md \
  --json .cache/paper-table/report.json "$@"
