"""Where a second thread starts to pay in the CLI (issue 28, "Threads must never cost"): the
`bitlens compress` and `bitlens decompress` of real checkpoints of several sizes (the first
tensors of MiniLM in bf16 and fp32 cut to about 1, 4, 8, 16 and 32 MB, the transformer's AdamW
moments, whole MiniLM), with `--threads 1`, `--threads 2` and no `--threads` (the default rule),
alternated round by round; the fastest round of each counts. Prints one row per file: MB, and
for compress and decompress the wall ms of 1 and 2 threads, 2 ÷ 1 speed, and the default's ÷ 1.

usage: bench_threads.py BITLENS [--rounds N] [--json]
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUT_MB = [1, 4, 8, 16, 32]


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)), 8 + n


def cut(path, mb, out):
    """The tensors of `path` (in file order, skipping any that would pass the size) up to `mb`
    MB, as a safetensors file."""
    h, start = header(path)
    names = sorted((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"][0])
    keep, total = {}, 0
    for k in names:
        a, b = h[k]["data_offsets"]
        if total + (b - a) > mb * 1e6:
            continue
        keep[k] = dict(h[k], data_offsets=[total, total + (b - a)])
        total += b - a
    with open(path, "rb") as src, open(out, "wb") as dst:
        body = json.dumps(keep).encode()
        body += b" " * (-len(body) % 8)
        dst.write(struct.pack("<Q", len(body)) + body)
        for k in sorted(keep, key=lambda k: keep[k]["data_offsets"][0]):
            a, b = h[k]["data_offsets"]
            src.seek(start + a)
            dst.write(src.read(b - a))
    return out


def wall(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bitlens")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    w = os.path.join(ROOT, ".cache", "weights")
    t = os.path.join(ROOT, ".cache", "runs", "transformer")
    tmp = tempfile.mkdtemp(prefix="bench-threads-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    files = []
    for src in ("minilm-bf16", "minilm-f32"):
        path = os.path.join(w, src + ".safetensors")
        files += [cut(path, mb, os.path.join(tmp, f"{src}-{mb}mb.safetensors")) for mb in CUT_MB]
        files.append(path)
    files += [os.path.join(t, f) for f in ("optimizer-bf16.safetensors", "optimizer.safetensors")]
    rows = []
    variants = [("1", ["--threads", "1"]), ("2", ["--threads", "2"]), ("default", [])]
    for f in files:
        bls = os.path.join(tmp, "x.bls")
        subprocess.run([args.bitlens, "compress", f, "-o", bls, "--codec", "lmc"], check=True,
                       capture_output=True)
        best = {}
        for _ in range(args.rounds):
            for name, flag in variants:
                for verb, cmd in (("compress", [args.bitlens, *flag, "compress", f, "-o", "/dev/null",
                                                "--codec", "lmc"]),
                                  ("decompress", [args.bitlens, *flag, "decompress", bls, "-o",
                                                  "/dev/null"])):
                    s = wall(cmd)
                    best[(name, verb)] = min(best.get((name, verb), s), s)
        mb = os.path.getsize(f) / 1e6
        rows.append({"file": os.path.basename(f), "mb": round(mb, 2),
                     **{f"{verb} {name} ms": round(best[(name, verb)] * 1e3, 2)
                        for name, _ in variants for verb in ("compress", "decompress")}})
        os.remove(bls)
    load = open("/proc/loadavg").read().split()[:3]
    if args.json:
        print(json.dumps({"load": load, "rows": rows}, indent=1))
        return
    print(f"fastest of {args.rounds} rounds, wall ms; load average {' '.join(load)}")
    print("| file | MB | compress 1 / 2 threads ms | 2 ÷ 1 | default ÷ 1 | decompress 1 / 2 ms | 2 ÷ 1 | default ÷ 1 |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        cells = [r["file"], f"{r['mb']:.1f}"]
        for verb in ("compress", "decompress"):
            one, two, dflt = (r[f"{verb} {n} ms"] for n in ("1", "2", "default"))
            cells += [f"{one:.1f} / {two:.1f}", f"{one / two:.2f}", f"{one / dflt:.2f}"]
        print("| " + " | ".join(cells) + " |")
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    os.rmdir(tmp)


if __name__ == "__main__":
    sys.exit(main())
