"""The bitlens Python package beside the CLI and beside ZipNN's Python API, same files, same rounds
(issue 26). Asserts nothing but that every output is right; BENCHMARKS.md records the table.

For each file, ROUNDS rounds, each running every measurement once in the same order so all see
the same machine state (the machine is shared: the spread between rounds is real):
- the CLI as a user runs it, started bare (wall time of the whole process): `bitlens compress F
  -o X.bls` and `bitlens decompress X.bls -o X.out`, F on disk in the page cache, X on tmpfs;
- the package in this process, on the same files: `compress_file(F, Y.bls)`,
  `decompress_file(Y.bls, Y.out)`; `save_file(arrays, Z.bls, metadata=…)` of F's tensors and
  metadata as NumPy arrays
  (loaded once before the rounds; the work of the CLI's compress from memory instead of the
  file) and `load_file(Y.bls)` (the CLI's decompress into arrays instead of a file);
- ZipNN 0.5.4 (PyPI `zipnn`, byte grouping + huff0) compressing and decompressing the file's
  bytes in memory on one thread, as bench_peers.py runs it (a copy of the bytes each time: its
  compress() modifies its input for bf16). ZipNN imports torch at import time but its byte API
  never calls it: where torch is not installed, a stand-in module is put in its place (any call
  into it would raise).
Every thread count is the default (all cores) for bitlens; Y.bls and Z.bls are checked to be the
CLI's X.bls byte for byte and the outputs the original file. Speeds are of the fastest round (min
time) and of the median round; "÷ CLI" divides the package's time by the CLI's of the same work,
wall time (the CLI's process start included, as a user waits for it) and CPU time (every thread:
the CLI's from wait4's rusage, the package's from this process's rusage around the call).
Usage: bench_python.py BITLENS_BIN FILE... [--rounds N] [--json]
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import types

import numpy as np

import bitlens

SHM = "/dev/shm/bitlens-bench-python"
ST_TO_ZIPNN = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}


def import_zipnn():
    """`zipnn`, with a stand-in `torch` when torch is not installed; `None` without zipnn."""
    try:
        import torch  # noqa: F401
    except ImportError:
        stand_ins = {}

        class StandIn:
            def __init__(self, name):
                self.name = name

            def __call__(self, *args, **kwargs):
                raise RuntimeError(f"torch.{self.name} called, but torch is not installed")

            def __getattr__(self, attr):
                return stand_in(f"{self.name}.{attr}")

        def stand_in(name):
            return stand_ins.setdefault(name, StandIn(name))

        module = types.ModuleType("torch")
        module.__getattr__ = stand_in
        module.jit = types.SimpleNamespace(script=lambda f: f)
        sys.modules["torch"] = module
    try:
        import zipnn
    except ImportError:
        return None
    return zipnn


def main_dtype(path):
    """The dtype holding most of the file's bytes."""
    sizes = {}
    for t in bitlens.inspect(path)["files"][0]["tensors"]:
        sizes[t["dtype"]] = sizes.get(t["dtype"], 0) + t["bytes"]
    return max(sizes, key=sizes.get)


def cpu_self():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(f):
    """Wall and CPU time (every thread of this process) of `f()`, and its result."""
    c0, t0 = cpu_self(), time.perf_counter()
    out = f()
    return time.perf_counter() - t0, cpu_self() - c0, out


def cli(binary, *args):
    """Wall time of one CLI run, the process started bare, and its CPU time (wait4's rusage)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([binary, *map(str, args)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, f"bitlens {args} failed"
    return wall, usage.ru_utime + usage.ru_stime


def measure(binary, path, rounds, zipnn):
    os.makedirs(SHM, exist_ok=True)
    x, y, z = (os.path.join(SHM, n) for n in ("x.bls", "y.bls", "z.bls"))
    raw = open(path, "rb").read()
    arrays = bitlens.load_file(path)
    with bitlens.safe_open(path) as f:
        metadata = f.metadata()
    keys = ("cli compress", "py compress_file", "py save_file", "cli decompress",
            "py decompress_file", "py load_file", "zipnn compress", "zipnn decompress")
    times = {k: [] for k in keys}
    cpu = {k: [] for k in keys}

    def record(key, wall, seconds):
        times[key].append(wall)
        cpu[key].append(seconds)

    z_nn = None
    if zipnn is not None:
        z_nn = zipnn.ZipNN(input_format="byte", bytearray_dtype=ST_TO_ZIPNN[main_dtype(path)],
                           threads=1)
    sizes = {}
    try:
        for _ in range(rounds):
            record("cli compress", *cli(binary, "compress", path, "-o", x))
            record("py compress_file", *timed(lambda: bitlens.compress_file(path, y))[:2])
            record("py save_file",
                   *timed(lambda: bitlens.save_file(arrays, z, metadata=metadata))[:2])
            record("cli decompress", *cli(binary, "decompress", x, "-o", x + ".out"))
            record("py decompress_file",
                   *timed(lambda: bitlens.decompress_file(y, y + ".out"))[:2])
            t, c, loaded = timed(lambda: bitlens.load_file(y))
            record("py load_file", t, c)
            bls = open(x, "rb").read()
            assert open(y, "rb").read() == bls, "compress_file differs from the CLI"
            sizes["bitlens"] = len(bls)
            sizes["save_file is the CLI's snapshot"] = open(z, "rb").read() == bls
            for out in (x + ".out", y + ".out"):
                assert open(out, "rb").read() == raw, f"{out} is not the original"
            assert all(np.array_equal(loaded[n].view(np.uint8), arrays[n].view(np.uint8))
                       for n in arrays)
            if z_nn is not None:
                data = bytearray(raw)  # zipnn may modify its input in place
                t, c, packed = timed(lambda: z_nn.compress(data))
                record("zipnn compress", t, c)
                t, c, back = timed(lambda: z_nn.decompress(packed))
                record("zipnn decompress", t, c)
                assert bytes(back) == raw, "zipnn did not round-trip"
                sizes["zipnn"] = len(packed)
    finally:
        for f in os.listdir(SHM):
            os.remove(os.path.join(SHM, f))
        os.rmdir(SHM)
    n = len(raw)
    return {"file": path, "dtype": main_dtype(path), "bytes": n, "rounds": rounds,
            "ratio": {k: v / n for k, v in sizes.items() if not isinstance(v, bool)},
            "save_file_is_cli_snapshot": sizes["save_file is the CLI's snapshot"],
            "seconds": {k: {"best": min(v), "median": statistics.median(v)}
                        for k, v in times.items() if v},
            "cpu_seconds": {k: {"best": min(v), "median": statistics.median(v)}
                            for k, v in cpu.items() if v}}


PAIRS = [("py compress_file", "cli compress"), ("py save_file", "cli compress"),
         ("py decompress_file", "cli decompress"), ("py load_file", "cli decompress")]


def print_table(report):
    rounds = report[0]["rounds"]
    print(f"Python package ÷ CLI time, fastest of {rounds} rounds (median of them); "
          "speeds in GB/s of the original file\n")
    names = [f"{os.path.basename(r['file']).replace('.safetensors', '')} ({r['dtype']})"
             for r in report]
    print("| | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(report))

    def speed(r, key):
        s = r["seconds"].get(key)
        if s is None:
            return "—"
        gb = r["bytes"] / 1e9
        return f"{gb / s['best']:.2f} ({gb / s['median']:.2f})"

    for key in ("cli compress", "py compress_file", "py save_file", "cli decompress",
                "py decompress_file", "py load_file", "zipnn compress", "zipnn decompress"):
        print(f"| {key} GB/s | " + " | ".join(speed(r, key) for r in report) + " |")
    for what, unit in (("seconds", "time"), ("cpu_seconds", "CPU time")):
        for py, base in PAIRS:
            cells = []
            for r in report:
                s = r[what]
                cells.append(f"{s[py]['best'] / s[base]['best']:.3f} "
                             f"({s[py]['median'] / s[base]['median']:.3f})")
            print(f"| {py} ÷ {base}, {unit} | " + " | ".join(cells) + " |")
    print("| ratio bitlens (ZipNN) | " + " | ".join(
        f"{r['ratio']['bitlens']:.4f}" + (f" ({r['ratio']['zipnn']:.4f})" if "zipnn" in r["ratio"]
                                          else "") for r in report) + " |")
    print("| save_file's snapshot is the CLI's | " + " | ".join(
        "yes" if r["save_file_is_cli_snapshot"] else "no" for r in report) + " |")


def main():
    args = sys.argv[1:]
    rounds = 5
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    as_json = "--json" in args
    args = [a for a in args if a != "--json"]
    binary, files = args[0], args[1:]
    zipnn = import_zipnn()
    if zipnn is None:
        print("bench_python: zipnn is not installed: its rows are left out", file=sys.stderr)
    report = [measure(binary, f, rounds, zipnn) for f in files]
    if as_json:
        print(json.dumps(report, indent=1))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
