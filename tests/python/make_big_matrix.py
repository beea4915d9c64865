"""Writes a safetensors file of one large bf16 matrix of the real MiniLM bf16 weights tiled
(`big.weight`, ROWS x 384) between two small tensors, for the weight map's tests and benchmark: a
map of it must read only its bytes. ROWS = 262144 gives 100.7 M values (201 MB), 1398101 a 1 GiB
tensor. Written with `safetensors` (serialize_file over raw bf16 patterns: numpy has no bf16).
Usage: make_big_matrix.py SRC_BF16.safetensors OUT.safetensors ROWS
"""
import json
import sys

import numpy as np
from safetensors import TensorSpec, serialize_file

src, dst, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
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
small_a = np.ascontiguousarray(weights[:cols])
small_b = np.ascontiguousarray(weights[cols : 2 * cols])
specs = {
    "z.bias": TensorSpec(dtype="bfloat16", shape=[cols], data_ptr=small_b.ctypes.data, data_len=small_b.nbytes),
    "a.bias": TensorSpec(dtype="bfloat16", shape=[cols], data_ptr=small_a.ctypes.data, data_len=small_a.nbytes),
    "big.weight": TensorSpec(dtype="bfloat16", shape=[rows, cols], data_ptr=big.ctypes.data, data_len=big.nbytes),
}
serialize_file(specs, dst, metadata={"source": "all-MiniLM-L6-v2 bf16, tiled into one matrix"})
