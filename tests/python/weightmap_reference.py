"""NumPy reference of the page's weight map: block aggregates and exact values of one tensor of a
safetensors file (F32, F16, BF16), computed here from the file's bytes with NumPy alone, for the
e2e test to compare the page's pixels and hover readouts with.

Usage: weightmap_reference.py QUERY_JSON, with QUERY = {
  "file": path, "tensor": name, "other": path | null   (changes: other's tensor minus file's)
  "layer": "values" | "bits:N" | "changes",
  "regions": [[row0, row1, col0, col1], ...],          (lanes of the map's grid)
  "lanes": [index, ...]                                 (exact values and bit patterns)
}
Prints {"grid": [rows, cols], "regions": [{mean, absmax, range, zeros, count}], "lanes": [{value, hex}]}.
"""
import json
import math
import sys

import numpy as np

DTYPES = {"F32": (np.float32, np.uint32), "F16": (np.float16, np.uint16), "BF16": (None, np.uint16)}


def read(path, name):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        info = header[name]
        start, end = info["data_offsets"]
        f.seek(8 + n + start)
        raw = f.read(end - start)
    float_type, bits_type = DTYPES[info["dtype"]]
    bits = np.frombuffer(raw, dtype=bits_type)
    if float_type is None:
        values = (bits.astype(np.uint32) << 16).view(np.float32)
    else:
        values = bits.view(float_type).astype(np.float32)
    return values, bits, info["shape"], bits_type


def grid(shape, lanes):
    if len(shape) >= 2:
        return lanes // shape[-1], shape[-1]
    cols = max(1, math.isqrt(lanes - 1) + 1) if lanes else 0
    return -(-lanes // cols), cols


def main():
    q = json.loads(sys.argv[1])
    values, bits, shape, bits_type = read(q["file"], q["tensor"])
    layer = q.get("layer", "values")
    zeros = values == 0
    if layer.startswith("bits:"):
        bit = int(layer.split(":")[1])
        values = ((bits.astype(np.uint64) >> np.uint64(bit)) & np.uint64(1)).astype(np.float32)
        zeros = values == 0
    elif layer == "changes":
        other, other_bits, _, _ = read(q["other"], q["tensor"])
        zeros = bits == other_bits
        values = other - values
    rows, cols = grid(shape, values.size)
    padded = np.full(rows * cols, np.nan, dtype=np.float32)
    padded[: values.size] = values
    flags = np.zeros(rows * cols, dtype=bool)
    flags[: zeros.size] = zeros
    present = np.zeros(rows * cols, dtype=bool)
    present[: values.size] = True
    m, z, p = padded.reshape(rows, cols), flags.reshape(rows, cols), present.reshape(rows, cols)
    out = {"grid": [rows, cols], "regions": [], "lanes": []}
    for r0, r1, c0, c1 in q.get("regions", []):
        block = m[r0:r1, c0:c1].astype(np.float64)
        finite = block[np.isfinite(block)]
        out["regions"].append(
            {
                "mean": float(finite.mean()) if finite.size else None,
                "absmax": float(np.abs(finite).max()) if finite.size else None,
                "range": float(finite.max() - finite.min()) if finite.size else None,
                "zeros": float(z[r0:r1, c0:c1].sum() / max(1, p[r0:r1, c0:c1].sum())),
                "count": int(finite.size),
            }
        )
    width = np.dtype(bits_type).itemsize * 2
    for i in q.get("lanes", []):
        out["lanes"].append({"value": float(values[i]) if layer == "values" else None, "hex": format(int(bits[i]), f"0{width}x")})
    print(json.dumps(out))


main()
