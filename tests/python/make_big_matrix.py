"""Writes a safetensors file of one large bf16 matrix of the real MiniLM bf16 weights tiled
(`big.weight`, ROWS x 384) between two small tensors, for the weight map's tests and benchmark: a
map of it must read only its bytes. ROWS = 262144 gives 100.7 M values (201 MB), 1398101 a 1 GiB
tensor. Written with `safetensors` (serialize_file over raw bf16 patterns: numpy has no bf16).
DTYPE bf16 (the default), f16 or f32: the same values widened to f32 exactly, or rounded to f16.
Usage: make_big_matrix.py SRC_BF16.safetensors OUT.safetensors ROWS [DTYPE]
"""
import json
import sys

import numpy as np
from safetensors import TensorSpec, serialize_file

src, dst, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
dtype = sys.argv[4] if len(sys.argv) > 4 else "bf16"


def stored(bits):
    """The bf16 patterns `bits` as DTYPE: (safetensors dtype name, contiguous array)."""
    if dtype == "bf16":
        return "bfloat16", np.ascontiguousarray(bits)
    wide = (bits.astype(np.uint32) << 16).view(np.float32)
    if dtype == "f32":
        return "float32", np.ascontiguousarray(wide)
    if dtype == "f16":
        return "float16", np.ascontiguousarray(wide.astype(np.float16))
    raise SystemExit(f"unknown DTYPE {dtype}: bf16, f16 or f32")


raw = open(src, "rb").read()
n = int.from_bytes(raw[:8], "little")
header = json.loads(raw[8 : 8 + n])
data = raw[8 + n :]
parts = [
    np.frombuffer(data[info["data_offsets"][0] : info["data_offsets"][1]], dtype=np.uint16)
    for name, info in header.items()
    if name != "__metadata__" and info["dtype"] == "BF16"
]
weights = np.concatenate(parts)
cols = 384
usable = weights.size // cols * cols
tile = weights[:usable].reshape(-1, cols)
big = np.empty((rows, cols), dtype=np.uint16)
for start in range(0, rows, tile.shape[0]):
    end = min(rows, start + tile.shape[0])
    big[start:end] = tile[: end - start]
small_a = stored(weights[:cols])
small_b = stored(weights[cols : 2 * cols])
big = stored(big)


def spec(shape, arr):
    name, a = arr
    return TensorSpec(dtype=name, shape=shape, data_ptr=a.ctypes.data, data_len=a.nbytes)


specs = {
    "z.bias": spec([cols], small_b),
    "a.bias": spec([cols], small_a),
    "big.weight": spec([rows, cols], big),
}
source = "all-MiniLM-L6-v2 bf16, tiled into one matrix"
serialize_file(specs, dst, metadata={"source": source if dtype == "bf16" else f"{source}, as {dtype}"})
