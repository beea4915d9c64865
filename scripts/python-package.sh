#!/usr/bin/env bash
# Builds the bitlens Python package (crates/python: an abi3 wheel for CPython >= 3.9, PyO3 over
# the same crates as the CLI) with maturin into target/wheels and installs it into .venv.
# Idempotent and cheap when nothing changed: maturin reuses cargo's build in target/ (seconds),
# the wheel is reproducible (SOURCE_DATE_EPOCH fixes its zip times; symbols stripped) and is
# reinstalled only when its bytes changed or the package is missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/python-env.sh
SOURCE_DATE_EPOCH=315532800 .venv/bin/maturin build --release --locked --strip \
  -m crates/python/Cargo.toml -o target/wheels >&2
wheel="$(ls -t target/wheels/bitlens-*.whl | head -n 1)"
stamp=".venv/.bitlens-wheel.sha"
want="$(sha256sum "$wheel" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! .venv/bin/python -c "import bitlens" 2>/dev/null; then
  echo "python-package: installing $wheel into .venv" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
  echo "$want" > "$stamp"
fi
