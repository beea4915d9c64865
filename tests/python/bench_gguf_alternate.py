"""Two `bitlens` binaries' statistics passes over the quantized GGUF benchmark files, run in
alternation (before, after, before, after, ...) and each binary's best time kept: on a machine
whose speed wanders over minutes, only runs side by side compare (issue 28; BENCHMARKS.md,
"Quantized statistics at the speed of the rest"). The files are scripts/bench-gguf-stats.sh's
(tests/python/make_gguf_bench.py, under .cache/gguf-bench).

Usage: bench_gguf_alternate.py BEFORE_BIN AFTER_BIN [--threads N] [--rounds R] [--types q4_0,q8_0]
Prints a Markdown table of M values/s per type (90.9 M values per file).
"""
import argparse
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIR = ROOT / ".cache" / "gguf-bench"
VALUES = 90.9e6


def seconds(binary, path, threads):
    """The pass's own time, as `bitlens inspect` reports it on stderr."""
    r = subprocess.run([binary, "--threads", str(threads), "inspect", str(path)],
                       capture_output=True, text=True, check=True)
    return float(re.search(r"in ([0-9.]+) s", r.stderr).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--types", default="")
    args = ap.parse_args()
    paths = sorted(DIR.glob("*.gguf"))
    if args.types:
        wanted = set(args.types.split(","))
        paths = [p for p in paths if p.stem in wanted]
    print(f"{args.threads} threads, best of {args.rounds} alternated rounds:\n")
    print("| type | before, M values/s | after, M values/s | after ÷ before |")
    print("| --- | --- | --- | --- |")
    for p in paths:
        best = [float("inf"), float("inf")]
        for _ in range(args.rounds):
            for i, b in enumerate((args.before, args.after)):
                best[i] = min(best[i], seconds(b, p, args.threads))
        print(f"| {p.stem.upper()} | {VALUES / best[0] / 1e6:.0f} | {VALUES / best[1] / 1e6:.0f} "
              f"| {best[0] / best[1]:.2f}× |", flush=True)


if __name__ == "__main__":
    main()
