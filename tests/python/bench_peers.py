"""ZipNN beside bitlens LMC on the same files in the same run (issue 3 targets).

For each file, alternating between the two so that both see the same machine state:
- ZipNN (PyPI `zipnn`, byte grouping + huff0) compresses and decompresses the whole file in memory
  on one thread (its API returns fresh buffers);
- `bitlens bench --codecs lmc,snapshot`: LMC on every tensor into reused buffers (the codec), and
  the whole container on the whole file in memory (checksums, index, every byte restored), on one
  thread and on the 2-thread pool.
Timings are the best of REPEATS runs on each side. Prints a table and, with --json, one JSON
document. Run it with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 too: that takes the VM's page-fault
cost (~1.6 µs per fresh 4 KiB page) out of both sides' fresh allocations.
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

REPEATS = 5
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
        out = subprocess.run([binary, "--threads", str(threads), "bench", path, "--codecs", "lmc,snapshot",
                              "--repeat", str(REPEATS), "--json"],
                             check=True, capture_output=True, text=True).stdout
        for r in json.loads(out)["results"]:
            if r["threads"] == threads:
                rows[(r["codec"].split(" ")[0], threads)] = r
    return rows


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    binary, files = args[0], args[1:]
    report = []
    for path in files:
        z = zipnn_row(path)
        rows = bitlens_rows(binary, path)

        def row(name, threads):
            r = rows[(name, threads)]
            return {"ratio": r["ratio"], "compress_gb_s": r["compress_mb_s"] / 1e3,
                    "decompress_gb_s": r["decompress_mb_s"] / 1e3}

        report.append({
            "file": path,
            "dtype": main_dtype(path),
            "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""),
            "zipnn": z,
            "bitlens_lmc_1_thread": row("lmc", 1),
            "bitlens_lmc_2_threads": row("lmc", 2),
            "bitlens_snapshot_1_thread": row("snapshot", 1),
            "bitlens_snapshot_2_threads": row("snapshot", 2),
        })
    if "--json" in sys.argv:
        print(json.dumps(report, indent=1))
        return
    print(f"GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '')!r}, best of {REPEATS}")
    print(f"{'file':<26} {'':>18} {'ratio':>7} {'comp GB/s':>10} {'dec GB/s':>9}   vs zipnn (comp / dec)")
    for r in report:
        name = os.path.basename(r["file"])
        z = r["zipnn"]
        print(f"{name:<26} {'zipnn':>18} {z['ratio']:7.4f} {z['compress_gb_s']:10.3f} {z['decompress_gb_s']:9.3f}")
        for key, label in (("bitlens_lmc_1_thread", "lmc 1 thread"), ("bitlens_lmc_2_threads", "lmc 2 threads"),
                           ("bitlens_snapshot_1_thread", ".bls 1 thread"),
                           ("bitlens_snapshot_2_threads", ".bls 2 threads")):
            b = r[key]
            print(f"{'':<26} {label:>18} {b['ratio']:7.4f} {b['compress_gb_s']:10.3f} {b['decompress_gb_s']:9.3f}"
                  f"   x{b['compress_gb_s'] / z['compress_gb_s']:.2f} / x{b['decompress_gb_s'] / z['decompress_gb_s']:.2f}")


if __name__ == "__main__":
    main()
