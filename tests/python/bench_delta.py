"""Delta snapshots vs change rate (issues 3 and 5): for each fraction of changed elements, a "next
checkpoint" is made from the real weights (tests/python/perturb.py: low mantissa bits of that fraction
of elements flipped, as small optimizer steps do) and stored as
  - BitSnap delta (bitmask + new values, values PLMC-coded): `bitlens compress --codec bitsnap --base`
  - LMC XOR delta: `bitlens compress --codec lmc --base`
  - zstd -3 on the same XOR bytes (via `bitlens bench --codecs zstd-3` on a file of the XORs)
Sizes are of the whole snapshot / compressed stream; "×" is original bytes / stored bytes.
Usage: bench_delta.py BITLENS_BIN WEIGHTS.safetensors [--json]
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors import TensorSpec, serialize_file

HERE = os.path.dirname(os.path.abspath(__file__))
RATES = [0.01, 0.03, 0.05, 0.15, 0.50, 0.95]
PAPER = {0.01: "16× (low change)", 0.15: "≈5×"}


def xor_file(a_path, b_path, out_path):
    def load(p):
        raw = open(p, "rb").read()
        n = int.from_bytes(raw[:8], "little")
        return json.loads(raw[8 : 8 + n]), raw[8 + n :]

    ha, da = load(a_path)
    _, db = load(b_path)
    x = np.bitwise_xor(np.frombuffer(da, np.uint8), np.frombuffer(db, np.uint8))
    specs, keep = {}, []
    names = {"BF16": "bfloat16", "F16": "float16", "F32": "float32", "I64": "int64"}
    for name, info in ha.items():
        if name == "__metadata__":
            continue
        s, e = info["data_offsets"]
        arr = np.ascontiguousarray(x[s:e])
        keep.append(arr)
        specs[name] = TensorSpec(dtype=names[info["dtype"]], shape=info["shape"], data_ptr=arr.ctypes.data, data_len=arr.nbytes)
    serialize_file(specs, out_path)


def measure(binary, weights, rates=RATES):
    """One row per changed fraction: the sizes of the three deltas of a perturbed copy of `weights`."""
    size = os.path.getsize(weights)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for rate in rates:
            nxt = os.path.join(d, "next.safetensors")
            subprocess.run([sys.executable, os.path.join(HERE, "perturb.py"), weights, str(rate), nxt, "7"], check=True)
            sizes = {}
            for codec in ("bitsnap", "lmc"):
                out = os.path.join(d, f"{codec}.bls")
                subprocess.run([binary, "compress", nxt, "--base", weights, "--codec", codec, "-o", out], check=True, capture_output=True)
                sizes[codec] = os.path.getsize(out)
            xf = os.path.join(d, "xor.safetensors")
            xor_file(weights, nxt, xf)
            bench = json.loads(subprocess.run([binary, "--threads", "1", "bench", xf, "--codecs", "zstd-3", "--json"], check=True, capture_output=True, text=True).stdout)
            (z,) = [r for r in bench["results"] if r["codec"] == "zstd-3"]
            rows.append({"changed": rate, "original_bytes": size, "bitsnap_bytes": sizes["bitsnap"],
                         "lmc_xor_bytes": sizes["lmc"], "zstd3_xor_bytes": z["compressed_bytes"]})
    return rows


def main():
    binary, weights = sys.argv[1], sys.argv[2]
    size = os.path.getsize(weights)
    rows = measure(binary, weights)
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=1))
        return
    print(f"{os.path.basename(weights)} ({size} bytes)")
    print(f"{'changed':>8} {'BitSnap':>10} {'LMC XOR':>10} {'zstd-3 XOR':>11}   paper (BitSnap)")
    for r in rows:
        f = lambda k: f"{r['original_bytes'] / r[k]:9.1f}×"
        print(f"{100 * r['changed']:7.0f}% {f('bitsnap_bytes')} {f('lmc_xor_bytes')} {f('zstd3_xor_bytes'):>11}   {PAPER.get(r['changed'], '')}")


if __name__ == "__main__":
    main()
