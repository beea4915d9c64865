"""`--codec auto` against the exhaustive best per tensor (issue 17).

For every file of the test set (the MiniLM weights in bf16 / f16 / f32; the digits training run's
model and optimizer files, fp32 and bf16, each step against the one before; the page demo's
consecutive steps) this compresses with every candidate codec forced — LMC, NeuZip and stored, and with a
base LMC on the XOR (`--codec lmc --base`) and BitSnap's delta (`--codec bitsnap --base`) — and
reads each tensor's stored size from `bitlens inspect --json`: the exhaustive best of a tensor is
the smallest of these. Then it compresses with `--codec auto --json` and reports, per group of
files: how often auto's achieved size equals the exhaustive best per tensor, the size lost against
the exhaustive best over whole files (tensor payloads; target within 0.5 %), the snapshot size
against LMC's (with the same base), the predicted vs achieved total, and the CPU time of auto and
LMC (`perf stat -e task-clock`, the minimum of --runs runs).

Usage: bench_auto.py BITLENS [--runs N] [--json OUT]
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = ".cache/runs/digits-h512-d8-lr0.001-seed0-s300-e25"


def test_set():
    """(group, input, base or None) for every file of the test set."""
    items = []
    for d in ("bf16", "f16", "f32"):
        items.append((f"minilm {d}", f".cache/weights/minilm-{d}.safetensors", None))
    steps = sorted(glob.glob(os.path.join(ROOT, RUN, "step-*")))
    for name in ("model", "model-bf16", "optimizer", "optimizer-bf16"):
        for prev, cur in zip(steps, steps[1:]):
            items.append(
                (
                    f"digits {name} Δ",
                    os.path.relpath(os.path.join(cur, f"{name}.safetensors"), ROOT),
                    os.path.relpath(os.path.join(prev, f"{name}.safetensors"), ROOT),
                )
            )
    demo = sorted(glob.glob(os.path.join(ROOT, "web/demo/minilm-demo-step*.safetensors")))
    for prev, cur in zip(demo, demo[1:]):
        items.append(("demo bf16 Δ", os.path.relpath(cur, ROOT), os.path.relpath(prev, ROOT)))
    return items


def compress(bitlens, codec, src, out, base=None, json_out=False):
    cmd = [bitlens, "compress", "--codec", codec, src, "-o", out]
    if base:
        cmd += ["--base", base]
    if json_out:
        cmd.append("--json")
    r = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(r.stdout) if json_out else None


def tensor_sizes(bitlens, snap):
    j = json.loads(subprocess.check_output([bitlens, "inspect", "--json", snap], cwd=ROOT))
    return {t["name"]: t["stored_bytes"] for t in j["snapshots"][0]["tensors"]}


def cpu_ms(bitlens, codec, src, out, base, runs):
    """Minimum task-clock (ms) of `runs` compressions."""
    cmd = ["perf", "stat", "-x,", "-e", "task-clock", bitlens, "compress", "--codec", codec, src, "-o", out]
    if base:
        cmd += ["--base", base]
    best = None
    for _ in range(runs):
        r = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
        m = re.search(r"^([\d.]+),msec,task-clock", r.stderr, re.M)
        if m:
            v = float(m.group(1))
            best = v if best is None else min(best, v)
    return best


def measure(bitlens, item, tmp, runs):
    group, src, base = item
    forced = [("lmc", None), ("neuzip", None), ("stored", None)]
    if base:
        forced += [("lmc-delta", "lmc"), ("bitsnap", "bitsnap")]
    sizes = {}
    for name, codec in forced:
        out = os.path.join(tmp, f"{name}.bls")
        compress(bitlens, codec or name, src, out, base if codec else None)
        sizes[name] = tensor_sizes(bitlens, out)
    auto_out = os.path.join(tmp, "auto.bls")
    report = compress(bitlens, "auto", src, auto_out, base, json_out=True)
    index = tensor_sizes(bitlens, auto_out)
    tensors = report["files"][0]["tensors"]
    best_total = auto_total = 0
    same = 0
    for t in tensors:
        best = min(s[t["name"]] for s in sizes.values())
        assert t["achieved_bytes"] == index[t["name"]], t["name"]
        best_total += best
        auto_total += t["achieved_bytes"]
        same += t["achieved_bytes"] <= best
    lmc_name = "lmc-delta" if base else "lmc"
    lmc_out = os.path.join(tmp, f"{lmc_name}.bls")
    row = {
        "group": group,
        "input": src,
        "base": base,
        "tensors": len(tensors),
        "same_as_best": same,
        "best_bytes": best_total,
        "auto_bytes": auto_total,
        "predicted_bytes": report["totals"]["predicted_bytes"],
        "auto_file": os.path.getsize(os.path.join(ROOT, auto_out)),
        "lmc_file": os.path.getsize(os.path.join(ROOT, lmc_out)),
        "chosen": {},
    }
    for t in tensors:
        row["chosen"][t["chosen"]] = row["chosen"].get(t["chosen"], 0) + 1
    if runs:
        row["auto_ms"] = cpu_ms(bitlens, "auto", src, auto_out, base, runs)
        row["lmc_ms"] = cpu_ms(bitlens, "lmc", src, lmc_out, base, runs)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bitlens")
    ap.add_argument("--runs", type=int, default=5, help="perf runs per codec and file (0: none)")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--only", help="only the groups whose name contains this")
    args = ap.parse_args()
    bitlens = os.path.abspath(args.bitlens)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for item in test_set():
            if args.only and args.only not in item[0]:
                continue
            if not os.path.exists(os.path.join(ROOT, item[1])):
                print(f"skipped (missing): {item[1]}", file=sys.stderr)
                continue
            rows.append(measure(bitlens, item, tmp, args.runs))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    groups = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r)
    print("| files | tensors | auto = best | lost vs best | auto / LMC (file) | worst file auto / LMC | predicted / achieved | chosen | CPU auto / LMC |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    agg = {k: 0 for k in ("tensors", "same_as_best", "best_bytes", "auto_bytes", "auto_file", "lmc_file", "predicted_bytes", "auto_ms", "lmc_ms")}
    for g, rs in groups.items():
        s = {k: sum(r.get(k) or 0 for r in rs) for k in agg}
        for k in agg:
            agg[k] += s[k]
        chosen = {}
        for r in rs:
            for k, n in r["chosen"].items():
                chosen[k] = chosen.get(k, 0) + n
        worst = max(r["auto_file"] / r["lmc_file"] for r in rs)
        cpu = f"{s['auto_ms'] / s['lmc_ms']:.2f} ({s['auto_ms']:.0f} / {s['lmc_ms']:.0f} ms)" if s["lmc_ms"] else "–"
        print(
            f"| {g} ({len(rs)}) | {s['tensors']} | {100 * s['same_as_best'] / s['tensors']:.1f} % "
            f"| {100 * (s['auto_bytes'] / s['best_bytes'] - 1):.3f} % | {s['auto_file'] / s['lmc_file']:.4f} "
            f"| {worst:.4f} | {s['predicted_bytes'] / s['auto_bytes']:.4f} "
            f"| {', '.join(f'{n} {k}' for k, n in sorted(chosen.items()))} | {cpu} |"
        )
    cpu = f"{agg['auto_ms'] / agg['lmc_ms']:.2f}" if agg["lmc_ms"] else "–"
    print(
        f"| all ({len(rows)}) | {agg['tensors']} | {100 * agg['same_as_best'] / agg['tensors']:.1f} % "
        f"| {100 * (agg['auto_bytes'] / agg['best_bytes'] - 1):.3f} % | {agg['auto_file'] / agg['lmc_file']:.4f} "
        f"| {max(r['auto_file'] / r['lmc_file'] for r in rows):.4f} | {agg['predicted_bytes'] / agg['auto_bytes']:.4f} | | {cpu} |"
    )
    larger = [r["input"] for r in rows if r["auto_file"] > r["lmc_file"]]
    print(f"\nfiles where auto is larger than LMC: {len(larger)} of {len(rows)} {larger[:5]}")


if __name__ == "__main__":
    main()
