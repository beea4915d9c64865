"""Catalogue runs (`bitlens.catalogue`) on this machine: files/s and GB/s with 1 and 2 workers on Ray
and on a process pool, the overhead per file beside the CLI, a rerun's speed, and the projection to
a hub's catalogue (issue 26). Asserts nothing but that every run covers every file without failure;
BENCHMARKS.md records the tables.

The corpus (made under CORPUS from the real weights, hard links so it costs no disk and every
file is in the page cache, as on a hub's worker that has just fetched it):
- "weights": MiniLM-L6 in bf16 and fp16 (45 MB each) ×24 names each and fp32 (91 MB) ×12: 60
  files, 3.27 GB, the statistics pass at full size (enough files that a run's fixed costs —
  starting its processes, listing, the final tables — weigh as on a catalogue);
- "small": the GGUF, PyTorch and NumPy fixtures of tests/fixtures (1–600 kB), ×4 names each: what
  a run pays per file beyond reading it.
For each corpus and each (engine, workers), ROUNDS runs into a fresh output directory (best and
median wall time, listing and Parquet writing included; Ray's start is not: the cluster is started
once per worker count, as a hub's is running already), then one rerun over the finished output
(every file reused: headers read, nothing written). "CLI": `bitlens inspect --json --threads 1 F`
per file, one process after another, the way a pipeline calls the CLI today.
Usage: bench_catalogue.py BITLENS_BIN CORPUS [--rounds N] [--json]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bitlens import catalogue

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WEIGHTS = os.path.join(ROOT, ".cache", "weights")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def link(src, dst):
    if not os.path.exists(dst):
        os.link(src, dst)


def make_corpus(corpus):
    weights = os.path.join(corpus, "weights")
    small = os.path.join(corpus, "small")
    os.makedirs(weights, exist_ok=True)
    os.makedirs(small, exist_ok=True)
    for dtype, copies in (("bf16", 24), ("f16", 24), ("f32", 12)):
        for i in range(copies):
            link(os.path.join(WEIGHTS, f"minilm-{dtype}.safetensors"),
                 os.path.join(weights, f"minilm-{dtype}-{i}.safetensors"))
    readable = []
    for sub, ext in (("gguf", ".gguf"), ("torch", ".pt"), ("numpy", ".npz")):
        for name in sorted(os.listdir(os.path.join(FIXTURES, sub))):
            # fortran_compressed.npz is the reader's refusal fixture (a Fortran-ordered array
            # in a deflated member): a bad file is a test's business, not a speed's.
            if name.endswith(ext) and not name.startswith("fortran_compressed"):
                readable.append(os.path.join(FIXTURES, sub, name))
    for path in readable:
        for i in range(4):
            base, ext = os.path.splitext(os.path.basename(path))
            link(path, os.path.join(small, f"{base}-{i}{ext}"))
    return {"weights": weights, "small": small}


def run_once(source, engine, workers):
    out = tempfile.mkdtemp(prefix="bitlens-bench-catalogue-", dir="/dev/shm")
    try:
        started = time.perf_counter()
        summary = catalogue.run([source], out, engine=engine, workers=workers, progress=False)
        seconds = time.perf_counter() - started
        assert summary.failed == 0, f"{summary.failed} files failed"
        started = time.perf_counter()
        again = catalogue.run([source], out, engine=engine, workers=workers, progress=False)
        rerun = time.perf_counter() - started
        assert again.reused == again.files
        return summary, seconds, rerun
    finally:
        shutil.rmtree(out, ignore_errors=True)


def cli_seconds(bitlens_bin, source):
    files = [f["file"] for f in catalogue.list_files([source])]
    started = time.perf_counter()
    for f in files:
        subprocess.run([bitlens_bin, "inspect", "--json", "--threads", "1", f], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main():
    args = sys.argv[1:]
    rounds = 3
    as_json = "--json" in args
    if "--rounds" in args:
        rounds = int(args[args.index("--rounds") + 1])
    bitlens_bin, corpus = [a for a in args if not a.startswith("--") and not a.isdigit()][:2]
    corpora = make_corpus(corpus)
    rows = []
    for engine in ("local", "ray", "ray-data"):
        for workers in (1, 2):
            if engine != "local":
                import ray
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
            try:
                for name, source in corpora.items():
                    times, reruns = [], []
                    for _ in range(rounds):
                        summary, seconds, rerun = run_once(source, engine, workers)
                        times.append(seconds)
                        reruns.append(rerun)
                    rows.append({
                        "corpus": name, "engine": engine, "workers": workers,
                        "files": summary.files, "bytes": summary.total_bytes,
                        "best_s": min(times), "median_s": statistics.median(times),
                        "rerun_s": min(reruns),
                    })
                    print(f"bench-catalogue: {rows[-1]}", file=sys.stderr)
            finally:
                if engine != "local":
                    ray.shutdown()
    cli = {name: min(cli_seconds(bitlens_bin, source) for _ in range(rounds))
           for name, source in corpora.items()}
    if as_json:
        print(json.dumps({"rows": rows, "cli_s": cli}, indent=1))
        return
    print("| corpus | engine | workers | files | GB | best s | files/s | GB/s | ÷ 1 worker | "
          "median s | rerun s (files/s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    one = {(r["corpus"], r["engine"]): r["best_s"] for r in rows if r["workers"] == 1}
    for r in rows:
        speedup = one[(r["corpus"], r["engine"])] / r["best_s"]
        print(f"| {r['corpus']} | {r['engine']} | {r['workers']} | {r['files']} | "
              f"{r['bytes'] / 1e9:.3f} | {r['best_s']:.2f} | {r['files'] / r['best_s']:.1f} | "
              f"{r['bytes'] / 1e9 / r['best_s']:.3f} | {speedup:.2f}× | {r['median_s']:.2f} | "
              f"{r['rerun_s']:.2f} ({r['files'] / r['rerun_s']:.0f}) |")
    print()
    print("| corpus | CLI, one process per file, --threads 1: s | per file ms | "
          "catalogue local 1 worker: per file ms |")
    print("| --- | --- | --- | --- |")
    for name in corpora:
        r = next(r for r in rows if r["corpus"] == name and r["engine"] == "local"
                 and r["workers"] == 1)
        print(f"| {name} | {cli[name]:.2f} | {1000 * cli[name] / r['files']:.1f} | "
              f"{1000 * r['best_s'] / r['files']:.1f} |")


if __name__ == "__main__":
    main()
