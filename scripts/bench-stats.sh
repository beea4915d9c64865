#!/usr/bin/env bash
# Statistics-pass benchmark (issue 2): a 1.09 GB bf16 file made of real MiniLM weights, inspected
# with 1 and 2 threads, beside a plain read of the same file (`cat > /dev/null`, the memory-bandwidth
# floor) in the same run. Prints GB/s and peak RSS. Warm page cache: every run reads the file once
# before timing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh >/dev/null
big=.cache/weights/big-bf16.safetensors
[ -s "$big" ] || .venv/bin/python tests/python/make_big_bf16.py .cache/weights/minilm-bf16.safetensors "$big"
cargo build --release --locked -p bitlens-cli >/dev/null 2>&1
bin=target/release/bitlens
size=$(stat -c %s "$big")
cat "$big" > /dev/null
best() { sort -g | tail -n 1; }
echo "file: $big ($size bytes)"
gbs=$( for _ in 1 2 3; do dd if="$big" of=/dev/null bs=4M 2>&1 | awk '/copied/ {print $(NF-1), $NF}'; done | awk '{v=$1; if ($2=="MB/s") v/=1000; print v}' | best )
printf "dd (plain read)             %6.2f GB/s\n" "$gbs"
for threads in 1 2; do
  rss=0; gbs=0
  for _ in 1 2 3; do
    out=$( { /usr/bin/time -f "rss %M" "$bin" --threads "$threads" inspect "$big" >/dev/null; } 2>&1 )
    g=$(echo "$out" | sed -n 's/.*(\([0-9.]*\) GB\/s.*/\1/p')
    r=$(echo "$out" | awk '/^rss/ {print $2}')
    gbs=$(printf "%s\n%s\n" "$gbs" "$g" | best)
    [ "$r" -gt "$rss" ] && rss=$r
  done
  printf "bitlens inspect, %d thread(s) %6.2f GB/s  peak RSS %d MB\n" "$threads" "$gbs" "$((rss / 1024))"
done
