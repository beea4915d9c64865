#!/usr/bin/env bash
# Runs every cargo-fuzz target. `--smoke` runs each for a few seconds (the test suite does this);
# otherwise each runs for FUZZ_SECONDS (default 300). Needs a nightly toolchain (libFuzzer's
# sanitizer flags are nightly-only); without one it says so and exits 0 (the machines promise only
# one toolchain).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz"
seconds="${FUZZ_SECONDS:-300}"
[ "${1:-}" = "--smoke" ] && seconds=10
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz: no nightly toolchain here; fuzz targets skipped" >&2
  exit 0
fi
"$root/scripts/setup.sh" --fuzz >/dev/null
for target in $(cargo +nightly fuzz list); do
  echo "fuzz: $target for ${seconds}s" >&2
  mkdir -p "corpus/$target"
  # Committed seeds (real snapshots made by the CLI: random bytes never pass the checksummed
  # index, so without them the snapshot decoder's frames would not be reached).
  seeds=()
  [ -d "seeds/$target" ] && seeds=("seeds/$target")
  cargo +nightly fuzz run "$target" "corpus/$target" "${seeds[@]}" -- -max_total_time="$seconds" -rss_limit_mb=2048 2>&1 | tail -n 3
done
