#!/bin/bash
# Issue 29 targets: every budget against lossless LMC on the transformer fixture and MiniLM f32.
cd "$(dirname "$0")/.."
B=$PWD/target/release/bitlens
for f in .cache/runs/transformer/model.safetensors .cache/weights/minilm-f32.safetensors; do
  n=$(basename $(dirname $f))-$(basename $f .safetensors)
  $B compress $f --codec lmc -o /tmp/ib-$n-lmc.bls 2>/dev/null
  L=$(stat -c %s /tmp/ib-$n-lmc.bls)
  for e in 0.1 0.05 0.01 0.005 0.001; do
    $B compress $f --codec inshrink --max-error $e -o /tmp/ib-$n-$e.bls --json > /tmp/ib-$n-$e.json
    .venv/bin/python - "$f" "$e" "$L" /tmp/ib-$n-$e.json <<'PY'
import json, sys
f, e, L, j = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
r = json.load(open(j))
own = r["search"]["own_settings"] if "search" in r else r.get("own_settings", [])
lossless = sum(o["setting"]["exact"] for o in own)
mx = max(t["error"] for t in r["tensors"])
bins = max((t["setting"].get("bins") or 0) for t in r["tensors"])
print(f"| {f} | {e} | {r['input_bytes']:,} | {r['output_bytes']:,} | {r['ratio']:.4f} | {L:,} ({L / r['input_bytes']:.4f}) | {mx:.4f} | {len(own) - lossless} / {lossless} | {bins} | {r['lossless_file']} | {r['times']['search_seconds']:.1f} |")
assert mx <= e and r["output_bytes"] <= L
PY
  done
done
