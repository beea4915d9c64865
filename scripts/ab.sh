#!/usr/bin/env bash
# A/B of builds on one command line, alternating: ROUNDS rounds, each running `perf stat -r 5 -e
# task-clock BIN ARGS` once per binary in turn, so both see the same machine state (the machine is
# shared: only alternated runs compare). Prints per binary the min and median over the rounds of
# the CPU time (task-clock) and the wall time, in ms. How BENCHMARKS.md's A/B tables were made.
# Usage: scripts/ab.sh ROUNDS "ARGS" BIN1 BIN2 ...   (e.g. 6 "--threads 1 decompress F.bls -o /dev/null")
set -euo pipefail
rounds=$1 args=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  for i in $(seq $#); do
    b=${!i}
    # shellcheck disable=SC2086
    perf stat -r 5 -e task-clock "$b" $args 2>&1 >/dev/null |
      awk '/task-clock/{c=$1} /elapsed/{w=$1*1000} END{print c, w}' >>"$tmp/$i"
  done
done
for i in $(seq $#); do
  b=${!i}
  sort -n -k1,1 "$tmp/$i" | awk -v n="$b" '{c[NR]=$1} END{m=int((NR+1)/2); printf "%s\n  cpu ms  min %.2f  median %.2f\n", n, c[1], c[m]}'
  sort -n -k2,2 "$tmp/$i" | awk '{w[NR]=$2} END{m=int((NR+1)/2); printf "  wall ms min %.2f  median %.2f\n", w[1], w[m]}'
done
