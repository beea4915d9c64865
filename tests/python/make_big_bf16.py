"""Writes a >= 1 GB bf16 safetensors file made of the real MiniLM bf16 weights repeated (each copy a
separate tensor), for the statistics and codec speed benchmarks. Written with `safetensors`.
Usage: make_big_bf16.py SRC_BF16.safetensors OUT.safetensors [MIN_BYTES]
"""
import sys

import numpy as np
from safetensors import TensorSpec, safe_open, serialize_file

src, dst = sys.argv[1], sys.argv[2]
min_bytes = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 30
with safe_open(src, framework="numpy") as f:
    # numpy has no bf16: read the raw u16 patterns through the header instead.
    names = [n for n in f.keys()]
raw = open(src, "rb").read()
n = int.from_bytes(raw[:8], "little")
import json

header = json.loads(raw[8 : 8 + n])
data = raw[8 + n :]
parts = []
for name, info in header.items():
    if name == "__metadata__" or info["dtype"] != "BF16":
        continue
    s, e = info["data_offsets"]
    parts.append(np.frombuffer(data[s:e], dtype=np.uint16))
weights = np.concatenate(parts)
copies = -(-min_bytes // weights.nbytes)
specs, keep = {}, []
for i in range(copies):
    a = np.ascontiguousarray(weights)
    keep.append(a)
    specs[f"copy.{i:03d}.weight"] = TensorSpec(
        dtype="bfloat16", shape=[a.size], data_ptr=a.ctypes.data, data_len=a.nbytes
    )
serialize_file(specs, dst, metadata={"source": "all-MiniLM-L6-v2 bf16, repeated"})
