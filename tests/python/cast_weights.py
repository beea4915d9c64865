"""Casts every F32 tensor of a safetensors file to BF16 or F16 and writes it with `safetensors`.

Other tensors (e.g. int64 position ids) are copied unchanged. BF16 uses round-to-nearest-even on
the f32 bit pattern (NaN stays NaN), which is what torch does.
Usage: cast_weights.py IN.safetensors {bf16|f16} OUT.safetensors
"""
import sys

import numpy as np
from safetensors import TensorSpec, safe_open, serialize_file


def f32_to_bf16_bits(a: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = bits + (0x7FFF + ((bits >> 16) & 1))
    out = (rounded >> 16).astype(np.uint16)
    nan = np.isnan(a)
    out[nan] = ((bits[nan] >> 16) | 0x0040).astype(np.uint16)
    return out


def main() -> None:
    src, dtype, dst = sys.argv[1], sys.argv[2], sys.argv[3]
    specs, keep_alive = {}, []
    with safe_open(src, framework="numpy") as f:
        metadata = f.metadata()
        for name in f.keys():
            a = f.get_tensor(name)
            st_dtype = a.dtype.name
            if a.dtype == np.float32 and dtype == "bf16":
                a, st_dtype = f32_to_bf16_bits(a), "bfloat16"
            elif a.dtype == np.float32 and dtype == "f16":
                a, st_dtype = a.astype(np.float16), "float16"
            elif a.dtype == np.float32:
                raise SystemExit(f"unknown target dtype {dtype}")
            a = np.ascontiguousarray(a)
            keep_alive.append(a)
            specs[name] = TensorSpec(
                dtype=st_dtype, shape=list(a.shape), data_ptr=a.ctypes.data, data_len=a.nbytes
            )
        serialize_file(specs, dst, metadata=metadata)


if __name__ == "__main__":
    main()
