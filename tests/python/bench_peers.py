"""ZipNN beside bitlens LMC on the same files in the same run (issue 3 targets).

For each file, alternating between the two so that both see the same machine state:
- ZipNN (PyPI `zipnn`, byte grouping + huff0) compresses and decompresses the whole file in memory
  on one thread (its API returns fresh buffers);
- `bitlens bench --codecs lmc,snapshot`: LMC on every tensor into reused buffers (the codec), and
  the whole container on the whole file in memory (checksums, index, every byte restored), on one
  thread and on the 2-thread pool.
bitlens timings are the best of REPEATS runs; ZipNN's are given as best and median wall time and
as compute speed (see zipnn_row). Prints a table and, with --json, one JSON document. Run it with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 too: that takes the VM's page-fault
cost (~1.6 µs per fresh 4 KiB page) out of both sides' fresh allocations.
Usage: bench_peers.py BITLENS_BIN FILE... [--json]
"""
import json
import os
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import zipnn

REPEATS = 9
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


def user_seconds():
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def zipnn_row(path):
    """ZipNN's speeds three ways: best and median wall time of REPEATS runs, and its compute
    speed, user CPU time averaged over the runs. ZipNN's wall time swings ~2x from run to run
    with how many of its fresh buffers land in pages the kernel must fault in (~1.6 us per 4 KiB
    in this VM, counted as system time); user time leaves that out. The kernel accounts CPU
    time in 4 ms ticks, so only the mean over all runs is meaningful."""
    raw = open(path, "rb").read()
    z = zipnn.ZipNN(input_format="byte", bytearray_dtype=ST_TO_ZIPNN[main_dtype(path)], threads=1)
    comp, dec = [], []
    user_c = user_d = 0.0
    for _ in range(REPEATS):
        data = bytearray(raw)  # zipnn may modify its input in place
        u0 = user_seconds()
        t0 = time.perf_counter()
        packed = z.compress(data)
        t1 = time.perf_counter()
        u1 = user_seconds()
        out = z.decompress(packed)
        t2 = time.perf_counter()
        u2 = user_seconds()
        assert bytes(out) == raw, "zipnn did not round-trip"
        comp.append(t1 - t0)
        dec.append(t2 - t1)
        user_c += u1 - u0
        user_d += u2 - u1
    gb = len(raw) / 1e9
    return {"ratio": len(packed) / len(raw),
            "compress_gb_s": gb / min(comp), "decompress_gb_s": gb / min(dec),
            "compress_median_gb_s": gb / statistics.median(comp),
            "decompress_median_gb_s": gb / statistics.median(dec),
            "compress_user_gb_s": gb * REPEATS / user_c, "decompress_user_gb_s": gb * REPEATS / user_d}


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
    print(f"GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '')!r}, {REPEATS} runs each; bitlens: best wall time")
    print("ZipNN three ways: best wall, median wall, compute (mean user CPU time; no page faults)")
    print(f"{'file':<26} {'':>18} {'ratio':>7} {'comp GB/s':>10} {'dec GB/s':>9}   "
          "vs zipnn best | median | compute (comp / dec)")
    for r in report:
        name = os.path.basename(r["file"])
        z = r["zipnn"]
        print(f"{name:<26} {'zipnn best':>18} {z['ratio']:7.4f} {z['compress_gb_s']:10.3f} {z['decompress_gb_s']:9.3f}")
        print(f"{'':<26} {'zipnn median':>18} {'':7} {z['compress_median_gb_s']:10.3f} "
              f"{z['decompress_median_gb_s']:9.3f}")
        print(f"{'':<26} {'zipnn compute':>18} {'':7} {z['compress_user_gb_s']:10.3f} {z['decompress_user_gb_s']:9.3f}")
        for key, label in (("bitlens_lmc_1_thread", "lmc 1 thread"), ("bitlens_lmc_2_threads", "lmc 2 threads"),
                           ("bitlens_snapshot_1_thread", ".bls 1 thread"),
                           ("bitlens_snapshot_2_threads", ".bls 2 threads")):
            b = r[key]
            vs = " | ".join(f"x{b['compress_gb_s'] / z['compress' + k]:.2f} / x{b['decompress_gb_s'] / z['decompress' + k]:.2f}"
                            for k in ("_gb_s", "_median_gb_s", "_user_gb_s"))
            print(f"{'':<26} {label:>18} {b['ratio']:7.4f} {b['compress_gb_s']:10.3f} {b['decompress_gb_s']:9.3f}   {vs}")

if __name__ == "__main__":
    main()
