#!/usr/bin/env bash
# Runs every cargo-fuzz target in turn (fuzz/fuzz_targets; the corpus grows in fuzz/corpus, seeded
# from fuzz/seeds).
#
#   scripts/fuzz.sh --smoke            each target for 10 s (the test suite does this)
#   scripts/fuzz.sh --minutes N        each target for N minutes (FUZZING.md records a run of N ≥ 5)
#   scripts/fuzz.sh --report FILE ...  also appends one Markdown table row per target to FILE
#   scripts/fuzz.sh ... TARGET...      only these targets
#   FUZZ_SECONDS=S scripts/fuzz.sh     each target for S seconds (default 300)
#
# The targets build against fuzz/Cargo.lock as committed: a lock that would have to change is an
# error, not a silent update. Needs a nightly toolchain (libFuzzer's sanitizer flags are
# nightly-only); without one it says so and exits 0 (the machines promise only one toolchain).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz"
seconds="${FUZZ_SECONDS:-300}"
report=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) seconds=10 ;;
    --minutes) seconds=$(( ${2:?--minutes takes a number} * 60 )); shift ;;
    --report) report="$(realpath -m "${2:?--report takes a file}")"; shift ;;
    -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz: no nightly toolchain here; fuzz targets skipped" >&2
  exit 0
fi
"$root/scripts/setup.sh" --fuzz >/dev/null
# cargo-fuzz has no --locked: check the lock first, so a stale fuzz/Cargo.lock fails here.
cargo +nightly metadata --locked --format-version 1 >/dev/null
failed=0
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
for target in "${targets[@]}"; do
  echo "fuzz: $target for ${seconds}s" >&2
  mkdir -p "corpus/$target"
  # Committed seeds (real snapshots made by the CLI: random bytes never pass the checksummed
  # index, so without them the snapshot decoder's frames would not be reached).
  seeds=()
  [ -d "seeds/$target" ] && seeds=("seeds/$target")
  log="$(mktemp)"
  status=ok
  cargo +nightly fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1 || status=FAILED
  tail -n 3 "$log"
  if [ "$status" != ok ]; then
    failed=1
    grep -E "ERROR|panicked|Test unit written" "$log" | head -n 5 >&2 || true
  fi
  if [ -n "$report" ]; then
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    speed="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
    cov="$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 | cut -d' ' -f2)"
    ft="$(grep -oE 'ft: [0-9]+' "$log" | tail -n 1 | cut -d' ' -f2)"
    corpus="$(find "corpus/$target" -type f | wc -l)"
    echo "| $target | ${seconds} | ${runs:-?} | ${speed:-?} | ${cov:-?} | ${ft:-?} | $corpus | $status |" >>"$report"
  fi
  rm -f "$log"
done
exit "$failed"
