#!/usr/bin/env bash
# Delta snapshots vs change rate: BitSnap delta, LMC XOR delta and zstd -3 on the same XOR, on the
# real MiniLM weights (bf16 and fp32). See tests/python/bench_delta.py.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh >/dev/null
cargo build --release --locked -p bitlens-cli >/dev/null 2>&1
for dtype in bf16 f32; do
  .venv/bin/python tests/python/bench_delta.py target/release/bitlens ".cache/weights/minilm-$dtype.safetensors" "$@"
done
