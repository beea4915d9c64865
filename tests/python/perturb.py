"""Writes a copy of a bf16/f16/f32 safetensors file in which a given fraction of the elements of every
float tensor is changed (a stand-in for a later training checkpoint). Written with `safetensors`.
Usage: perturb.py IN.safetensors FRACTION OUT.safetensors [SEED]
"""
import json
import sys

import numpy as np
from safetensors import TensorSpec, serialize_file

NUMPY = {"BF16": np.uint16, "F16": np.uint16, "F32": np.uint32, "I64": np.int64}
NAMES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32", "I64": "int64"}


def main() -> None:
    src, fraction, dst = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    rng = np.random.default_rng(int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    raw = open(src, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    specs, keep = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        s, e = info["data_offsets"]
        a = np.frombuffer(data[s:e], dtype=NUMPY[info["dtype"]]).copy()
        if info["dtype"] != "I64":
            mask = rng.random(a.size) < fraction
            # flip low mantissa bits: what a small optimizer step does to most weights
            a[mask] ^= rng.integers(1, 16, mask.sum()).astype(a.dtype)
        keep.append(a)
        specs[name] = TensorSpec(dtype=NAMES[info["dtype"]], shape=info["shape"], data_ptr=a.ctypes.data, data_len=a.nbytes)
    serialize_file(specs, dst, metadata=header.get("__metadata__"))


if __name__ == "__main__":
    main()
