"""Writes the web app's demo: a few tensors of the real all-MiniLM-L6-v2 bf16 weights (Apache-2.0)
as "step 0", and two later "steps" made by small optimizer-like updates (a fraction of the values
moved by relative Gaussian noise, rounded back to bf16), written with `safetensors`.
Deterministic (fixed seeds). The three files stay under 2 MB in total so they can be committed.
Usage: make_demo.py MINILM_BF16.safetensors OUT_DIR
"""
import json
import os
import sys

import numpy as np
from safetensors import TensorSpec, serialize_file

KEEP = [
    "embeddings.position_ids",
    "embeddings.LayerNorm.weight",
    "embeddings.LayerNorm.bias",
    "encoder.layer.0.attention.self.query.weight",
    "encoder.layer.0.attention.self.query.bias",
    "encoder.layer.0.attention.self.key.weight",
    "encoder.layer.0.attention.self.key.bias",
    "encoder.layer.0.attention.output.LayerNorm.weight",
    "encoder.layer.0.attention.output.LayerNorm.bias",
    "encoder.layer.0.output.LayerNorm.weight",
    "encoder.layer.0.output.LayerNorm.bias",
]
NUMPY = {"BF16": np.uint16, "I64": np.int64}
NAMES = {"BF16": "bfloat16", "I64": "int64"}
# (fraction of values updated, relative step size, seed) for steps 1 and 2.
STEPS = [(0.5, 2e-2, 1), (0.35, 1e-2, 2)]


def step(bits: np.ndarray, fraction: float, size: float, rng) -> np.ndarray:
    """Moves `fraction` of the bf16 values by relative noise of scale `size` (round to nearest even)."""
    f = (bits.astype(np.uint32) << 16).view(np.float32)
    mask = rng.random(bits.size) < fraction
    moved = f * (1 + size * rng.standard_normal(bits.size).astype(np.float32))
    f = np.where(mask, moved, f).astype(np.float32)
    u = f.view(np.uint32)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def write(path: str, tensors: dict, meta: dict) -> None:
    specs = {
        name: TensorSpec(dtype=NAMES[dt], shape=shape, data_ptr=a.ctypes.data, data_len=a.nbytes)
        for name, (dt, shape, a) in tensors.items()
    }
    serialize_file(specs, path, metadata=meta)


def main() -> None:
    src, out = sys.argv[1], sys.argv[2]
    raw = open(src, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    tensors = {}
    for name in KEEP:
        info = header[name]
        s, e = info["data_offsets"]
        a = np.frombuffer(data[s:e], dtype=NUMPY[info["dtype"]]).copy()
        tensors[name] = (info["dtype"], info["shape"], a)
    os.makedirs(out, exist_ok=True)
    # One metadata key only: safetensors writes metadata maps in hash order.
    meta = "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), bf16 cast, 11 tensors, step {}"
    write(os.path.join(out, "minilm-demo-step0.safetensors"), tensors, {"source": meta.format(0)})
    for i, (fraction, size, seed) in enumerate(STEPS, start=1):
        rng = np.random.default_rng(seed)
        tensors = {
            name: (dt, shape, step(a, fraction, size, rng) if dt == "BF16" else a)
            for name, (dt, shape, a) in tensors.items()
        }
        write(os.path.join(out, f"minilm-demo-step{i}.safetensors"), tensors, {"source": meta.format(i)})


if __name__ == "__main__":
    main()
