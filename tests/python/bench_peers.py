"""ZipNN beside bitlens LMC on the same files in the same run (issue 3 targets).

For each file: ZipNN (PyPI `zipnn`, byte grouping + huff0) compresses and decompresses the whole file
in memory on one thread; bitlens `bench` does LMC on every tensor (1 thread, and the 2-thread pool),
and `bitlens compress` writes the real snapshot. Best of 3 for every timing. Prints a table and, with
--json, one JSON document.
Usage: bench_peers.py BITLENS_BIN FILE... [--json]
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

import zipnn

REPEATS = 3
ST_TO_ZIPNN = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}


def main_dtype(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    sizes = {}
    for name, info in header.items():
        if name != "__metadata__":
            s, e = info["data_offsets"]
            sizes[info["dtype"]] = sizes.get(info["dtype"], 0) + e - s
    return max(sizes, key=sizes.get)


def zipnn_row(path):
    raw = open(path, "rb").read()
    z = zipnn.ZipNN(input_format="byte", bytearray_dtype=ST_TO_ZIPNN[main_dtype(path)], threads=1)
    best_c = best_d = float("inf")
    for _ in range(REPEATS):
        data = bytearray(raw)  # zipnn may modify its input in place
        t0 = time.perf_counter()
        packed = z.compress(data)
        t1 = time.perf_counter()
        out = z.decompress(packed)
        t2 = time.perf_counter()
        assert bytes(out) == raw, "zipnn did not round-trip"
        best_c, best_d = min(best_c, t1 - t0), min(best_d, t2 - t1)
    return {"ratio": len(packed) / len(raw), "compress_gb_s": len(raw) / best_c / 1e9,
            "decompress_gb_s": len(raw) / best_d / 1e9}


def bitlens_rows(binary, path):
    rows = {}
    for threads in (1, 2):
        best = None
        for _ in range(REPEATS):
            out = subprocess.run([binary, "--threads", str(threads), "bench", path, "--codecs", "lmc", "--json"],
                                 check=True, capture_output=True, text=True).stdout
            (r,) = [r for r in json.loads(out)["results"] if r["threads"] == threads]
            if best is None:
                best = r
            else:
                best["compress_mb_s"] = max(best["compress_mb_s"], r["compress_mb_s"])
                best["decompress_mb_s"] = max(best["decompress_mb_s"], r["decompress_mb_s"])
        rows[threads] = best
    with tempfile.TemporaryDirectory() as d:
        snap = os.path.join(d, "x.bls")
        subprocess.run([binary, "compress", path, "-o", snap], check=True, capture_output=True)
        container = os.path.getsize(snap) / os.path.getsize(path)
    return rows, container


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    binary, files = args[0], args[1:]
    report = []
    for path in files:
        z = zipnn_row(path)
        rows, container = bitlens_rows(binary, path)
        one, two = rows[1], rows[2]
        report.append({
            "file": path,
            "dtype": main_dtype(path),
            "zipnn": z,
            "bitlens_lmc_1_thread": {"ratio": one["ratio"], "compress_gb_s": one["compress_mb_s"] / 1e3,
                                     "decompress_gb_s": one["decompress_mb_s"] / 1e3},
            "bitlens_lmc_2_threads": {"compress_gb_s": two["compress_mb_s"] / 1e3,
                                      "decompress_gb_s": two["decompress_mb_s"] / 1e3},
            "bitlens_snapshot_ratio": container,
        })
    if "--json" in sys.argv:
        print(json.dumps(report, indent=1))
        return
    print(f"{'file':<34} {'':>6} {'ratio':>7} {'comp GB/s':>10} {'dec GB/s':>9}")
    for r in report:
        name = os.path.basename(r["file"])
        z, b, b2 = r["zipnn"], r["bitlens_lmc_1_thread"], r["bitlens_lmc_2_threads"]
        print(f"{name:<34} {'zipnn':>6} {z['ratio']:7.4f} {z['compress_gb_s']:10.3f} {z['decompress_gb_s']:9.3f}")
        print(f"{'':<34} {'lmc':>6} {b['ratio']:7.4f} {b['compress_gb_s']:10.3f} {b['decompress_gb_s']:9.3f}"
              f"   ×{b['compress_gb_s'] / z['compress_gb_s']:.2f} / ×{b['decompress_gb_s'] / z['decompress_gb_s']:.2f} vs zipnn")
        print(f"{'':<34} {'lmc 2t':>6} {'':>7} {b2['compress_gb_s']:10.3f} {b2['decompress_gb_s']:9.3f}"
              f"   ×{b2['compress_gb_s'] / b['compress_gb_s']:.2f} / ×{b2['decompress_gb_s'] / b['decompress_gb_s']:.2f} vs 1 thread")
        print(f"{'':<34} {'.bls':>6} {r['bitlens_snapshot_ratio']:7.4f}   (whole snapshot file / whole safetensors file)")


if __name__ == "__main__":
    main()
