"""The statistics pass over quantized GGUF files, per value (issue 28; scripts/bench-gguf-stats.sh
runs it): for each file of DIR (made by make_gguf_bench.py: one block type each, the same real
MiniLM weights, and their BF16 GGUF as the reference), `bitlens --threads N inspect F` for N = 2
and 1, ROUNDS rounds in turn over all files (so load changes hit every type alike), best wall time;
M values/s over the file's values (the `params` of its tensors) and the per-value cost beside the
BF16 file's in the same run. With --page, the page's statistics pass on the same files
(tests/e2e/bench.mjs: its statistics throughput over the tensor bytes, median of RUNS, 2 workers
on this machine), in M values/s and as a fraction of the native 2-thread figure. Asserts nothing.

Usage: bench_gguf_stats.py BITLENS_BIN DIR [--rounds N] [--page] [--types q4_0,q8_0,...]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def values_and_bytes(bitlens, path):
    """(values, tensor bytes) of a file, from `inspect --json`."""
    doc = json.loads(subprocess.run([bitlens, "--threads", "2", "inspect", "--json", path],
                                    check=True, capture_output=True).stdout)
    tensors = doc["files"][0]["tensors"]
    return sum(t["params"] for t in tensors), sum(t["bytes"] for t in tensors)


def seconds(bitlens, threads, path):
    start = time.perf_counter()
    subprocess.run([bitlens, "--threads", str(threads), "inspect", path], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def page_mb_per_s(paths):
    """The page's statistics throughput (MB/s of tensor bytes, median of RUNS) per file."""
    out = subprocess.run(["node", os.path.join(ROOT, "tests", "e2e", "bench.mjs"), *paths],
                         check=True, capture_output=True, text=True, cwd=ROOT).stdout
    speeds = {}
    for line in out.splitlines():
        m = re.match(r"(\S+) median of \d+: table [\d.]+ ms, (\d+) MB/s", line)
        if m:
            speeds[m.group(1)] = float(m.group(2))
    return speeds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bitlens")
    ap.add_argument("dir")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--page", action="store_true")
    ap.add_argument("--types", default="")
    args = ap.parse_args()
    names = sorted(f[:-5] for f in os.listdir(args.dir) if f.endswith(".gguf"))
    if args.types:
        names = [n for n in names if n in args.types.split(",") or n == "bf16"]
    names = ["bf16"] + [n for n in names if n != "bf16"]
    paths = {n: os.path.join(args.dir, f"{n}.gguf") for n in names}
    for p in paths.values():  # warm the page cache, as a rerun finds it
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass
    sizes = {n: values_and_bytes(args.bitlens, p) for n, p in paths.items()}
    best = {(n, t): float("inf") for n in names for t in (1, 2)}
    for _ in range(args.rounds):
        for n in names:
            for t in (2, 1):
                best[n, t] = min(best[n, t], seconds(args.bitlens, t, paths[n]))
    page = page_mb_per_s(list(paths.values())) if args.page else {}
    rate = {k: sizes[k[0]][0] / s / 1e6 for k, s in best.items()}
    head = "| type | file MB | M values | 1 thread s | 1 thread M values/s | 2 threads s | " \
           "2 threads M values/s | per value vs BF16 (2 threads) |"
    if args.page:
        head += " page M values/s | page ÷ native |"
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    for n in names:
        values, tensor_bytes = sizes[n]
        mb = os.path.getsize(paths[n]) / 1e6
        row = (f"| {n.upper()} | {mb:.1f} | {values / 1e6:.1f} | {best[n, 1]:.3f} | {rate[n, 1]:.0f} | "
               f"{best[n, 2]:.3f} | {rate[n, 2]:.0f} | {rate['bf16', 2] / rate[n, 2]:.2f}× |")
        if args.page:
            name = os.path.basename(paths[n])
            if name in page:
                pv = page[name] * 1e6 * values / tensor_bytes / 1e6
                row += f" {pv:.0f} | {pv / rate[n, 2]:.2f} |"
            else:
                row += " — | — |"
        print(row, flush=True)


if __name__ == "__main__":
    sys.exit(main())
