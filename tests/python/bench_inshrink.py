#!/usr/bin/env python3
"""Inshrinkerator's fidelity on a real training run (issue 15; paper 002 §9), NumPy only.

Trains scripts/train_digits.py (cached under .cache/runs/), then measures on its checkpoints:

1. per checkpoint, `bitlens compress --codec inshrink --optimizer` as a chain (`--base` the
   previous .bls) under both quality thresholds — the model-free proxy `--max-error E` and the
   paper's `--eval-cmd "python scripts/train_digits.py eval {}" --max-degradation D` — with the
   chosen setting per layer group, the ratio with the delta and without it (`--base PREV
   --no-delta`: same plan, full streams), the achieved error, and the validation loss / accuracy
   of the checkpoint restored by `bitlens decompress` against the original;
2. the fault-tolerance experiment (§9.1): training interrupted every `--restore-every` steps,
   resumed each time from the model and optimizer state restored from compressed files (model:
   inshrink under --max-degradation; optimizer: lossless LMC, or inshrink under --max-error), to
   the end, against the uninterrupted run;
3. Table 7: the fewest bins the non-uniform and the uniform quantizer (no pruning or protection)
   need, per checkpoint, to keep the model's loss within 0.1 / 1 / 5 % (the paper's thresholds)
   and each tensor within a relative L2 error — via crates/inshrink/examples/fidelity.rs;
4. §9.3 / Figure 12: the delta under the CLI's plans as Huffman only (HE), run-length + Huffman
   (RLE) and rearranged by source bucket (PE) — the same example;
5. compression speed on one core (thread CPU time of quantize + encode) and the search's time per
   checkpoint (the proxy's CPU time; the CLI's wall time and evaluations under --eval-cmd).

Prints Markdown tables (what BENCHMARKS.md records) and writes the whole report as JSON
(`--report`). Asserts only what the codec promises: the restored loss obeys --max-degradation,
the example's quantization equals the CLI's (same per-tensor errors).

    bench_inshrink.py BITLENS FIDELITY_EXAMPLE [--hidden 512 --steps 300 --every 25 ...]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "scripts" / "train_digits.py"
THRESHOLDS = (0.001, 0.01, 0.05)  # Table 7's loss degradations
L2_ERRORS = (0.01, 0.05, 0.1)
TABLE7_BINS = [*range(1, 17), 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256]

_spec = importlib.util.spec_from_file_location("train_digits", TRAIN)
td = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(td)


class Bench:
    def __init__(self, args):
        self.args = args
        self.bin = str(Path(args.bitlens).resolve())
        self.example = str(Path(args.example).resolve()) if args.example else None
        self.work = Path(args.work)
        self.work.mkdir(parents=True, exist_ok=True)
        _, (self.xv, self.yv) = td.load_digits()
        self.eval_cmd = f"{sys.executable} {TRAIN} eval {{}}"

    # -- helpers -------------------------------------------------------------------------------
    def bitlens(self, *args) -> str:
        p = subprocess.run([self.bin, *map(str, args)], capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"bitlens {' '.join(map(str, args))} failed: {p.stderr}")
        return p.stdout

    def evaluate(self, path: Path) -> tuple[float, float]:
        """(validation loss, accuracy) of a model file, with train_digits's own forward pass."""
        p, _ = td.read_safetensors(Path(path))
        loss, acc, _ = td.forward(p, self.xv, self.yv, False)
        return loss, acc

    def run_dir(self) -> Path:
        a = self.args
        name = f"digits-h{a.hidden}-d{a.dim}-lr{a.lr:g}-seed{a.seed}-s{a.steps}-e{a.every}"
        return Path(a.runs) / name

    def train(self, out: Path, steps: int, every: int, resume: Path | None = None) -> None:
        a = self.args
        cmd = [sys.executable, str(TRAIN), "train", "--out", str(out), "--steps", str(steps),
               "--every", str(every), "--hidden", str(a.hidden), "--dim", str(a.dim), "--lr", str(a.lr),
               "--seed", str(a.seed)]
        if resume:
            cmd += ["--resume", str(resume)]
        subprocess.run(cmd, check=True, capture_output=True)

    def ensure_run(self) -> Path:
        """The cached training run (trained once; deterministic, so the cache is exact)."""
        d = self.run_dir()
        if (d / f"step-{self.args.steps:06d}" / "optimizer-bf16.safetensors").exists():
            return d
        tmp = d.with_name(d.name + ".part")
        shutil.rmtree(tmp, ignore_errors=True)
        t0 = time.time()
        self.train(tmp, self.args.steps, self.args.every)
        print(f"trained {d.name} in {time.time() - t0:.0f} s", file=sys.stderr)
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)
        return d

    def compress(self, model: Path, out: Path, quality: list[str], base: Path | None = None,
                 optimizer: Path | None = None, extra=()) -> dict:
        args = ["compress", model, "-o", out, "--codec", "inshrink", *quality, "--json", *extra]
        if optimizer:
            args += ["--optimizer", optimizer]
        if base:
            args += ["--base", base]
        return json.loads(self.bitlens(*args))

    # -- 1. per checkpoint ---------------------------------------------------------------------
    def chain(self, run: Path, steps: list[int], mode: str) -> list[dict]:
        a = self.args
        quality = (["--max-error", str(a.max_error)] if mode == "proxy"
                   else ["--eval-cmd", self.eval_cmd, "--max-degradation", str(a.max_degradation)])
        d = self.work / f"chain-{mode}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        rows, prev = [], None
        for s in steps:
            ck = run / f"step-{s:06d}"
            model, opt = ck / "model.safetensors", ck / "optimizer.safetensors"
            bls = d / f"step-{s:06d}.bls"
            rep = self.compress(model, bls, quality, prev, opt)
            if prev:
                full = self.compress(model, d / f"step-{s:06d}-full.bls", quality, prev, opt, ["--no-delta"])
                full_bytes = full["output_bytes"]
                plans = ([g["setting"] for g in full["groups"]], [g["setting"] for g in rep["groups"]])
                assert plans[0] == plans[1], f"step {s}: --no-delta chose {plans[0]}, the delta {plans[1]}"
            else:
                full_bytes = rep["output_bytes"]
            restored = d / f"step-{s:06d}.safetensors"
            self.bitlens("decompress", bls, "-o", restored)
            info = json.loads(self.bitlens("inspect", bls, "--json"))["snapshots"][0]
            loss0, acc0 = self.evaluate(model)
            loss1, acc1 = self.evaluate(restored)
            groups = {g["group"]: g for g in info["inshrink"]["groups"]}
            row = {
                "step": s, "mode": mode, "input_bytes": rep["input_bytes"],
                "output_bytes": rep["output_bytes"], "full_bytes": full_bytes,
                "ratio_delta": rep["input_bytes"] / rep["output_bytes"],
                "ratio_full": rep["input_bytes"] / full_bytes,
                "settings": {k: g["setting"] for k, g in groups.items()},
                "max_error": {k: g["max_error"] for k, g in groups.items()},
                # Tensors on their group's setting (those with their own — more bins, or stored
                # lossless, issue 29 — are not what the example re-quantizes under the plan).
                "tensor_errors": {t["name"]: t["error"] for t in rep["tensors"]
                                  if t["name"] not in {o["name"] for o in rep.get("own_settings", [])}},
                "numpy_errors": relative_errors(model, restored),
                "loss": loss0, "accuracy": acc0, "restored_loss": loss1, "restored_accuracy": acc1,
                "degradation": (loss1 - loss0) / loss0,
                "search_seconds": rep["times"]["search_seconds"],
                "total_seconds": rep["times"]["total_seconds"],
                "evaluations": rep["quality"]["evaluations"],
                "modes": {g["group"]: g["mode"] for g in rep["groups"]},
            }
            if mode == "proxy":
                assert max(row["numpy_errors"].values()) <= a.max_error * (1 + 1e-6), row["numpy_errors"]
            if mode == "eval":
                assert row["degradation"] <= a.max_degradation + 1e-12, row
                assert abs(rep["quality"]["original_loss"] - loss0) <= 1e-6 * loss0, (rep["quality"], loss0)
            rows.append(row)
            prev = bls
            print(f"{mode} step {s}: ratio {row['ratio_delta']:.1f} (full {row['ratio_full']:.1f}), "
                  f"loss {loss0:.4f} -> {loss1:.4f}", file=sys.stderr)
        return rows

    # -- 2. fault tolerance --------------------------------------------------------------------
    def fault_tolerance(self, run: Path, optimizer_codec: str) -> dict:
        a = self.args
        d = self.work / f"ft-{optimizer_codec}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        points = list(range(a.restore_every, a.steps, a.restore_every))
        cur = run / f"step-{points[0]:06d}"
        prev_model = prev_opt = None
        restores = []
        for k, r in enumerate(points):
            rd = d / f"restored-{r:06d}"
            rd.mkdir()
            mb, ob = d / f"model-{r:06d}.bls", d / f"optimizer-{r:06d}.bls"
            mrep = self.compress(cur / "model.safetensors", mb,
                                 ["--eval-cmd", self.eval_cmd, "--max-degradation", str(a.max_degradation)],
                                 prev_model, cur / "optimizer.safetensors")
            if optimizer_codec == "lmc":
                self.bitlens("compress", cur / "optimizer.safetensors", "-o", ob, "--codec", "lmc")
            else:
                self.compress(cur / "optimizer.safetensors", ob, ["--max-error", str(a.max_error)], prev_opt)
                prev_opt = ob
            prev_model = mb
            self.bitlens("decompress", mb, "-o", rd / "model.safetensors")
            self.bitlens("decompress", ob, "-o", rd / "optimizer.safetensors")
            opt_in = (cur / "optimizer.safetensors").stat().st_size
            restores.append({"step": r, "model_ratio": mrep["input_bytes"] / mrep["output_bytes"],
                             "optimizer_ratio": opt_in / ob.stat().st_size,
                             "model_degradation": (self.evaluate(rd / "model.safetensors")[0]
                                                   - self.evaluate(cur / "model.safetensors")[0])
                             / self.evaluate(cur / "model.safetensors")[0]})
            nxt = points[k + 1] if k + 1 < len(points) else a.steps
            seg = d / f"segment-{r:06d}"
            self.train(seg, nxt, nxt - r, rd)
            cur = seg / f"step-{nxt:06d}"
        loss, acc = self.evaluate(cur / "model.safetensors")
        base_loss, base_acc = self.evaluate(run / f"step-{a.steps:06d}" / "model.safetensors")
        total_in = sum((run / f"step-{r:06d}" / n).stat().st_size for r in points
                       for n in ("model.safetensors", "optimizer.safetensors"))
        total_out = sum(p.stat().st_size for p in d.glob("*.bls"))
        return {"optimizer_codec": optimizer_codec, "restores": restores, "final_loss": loss,
                "final_accuracy": acc, "uninterrupted_loss": base_loss, "uninterrupted_accuracy": base_acc,
                "relative_loss_change": (loss - base_loss) / base_loss, "storage_ratio": total_in / total_out}

    # -- 3. Table 7 ----------------------------------------------------------------------------
    def table7(self, run: Path, steps: list[int]) -> list[dict]:
        rows = []
        for s in steps:
            model = run / f"step-{s:06d}" / "model.safetensors"
            loss0, _ = self.evaluate(model)
            with tempfile.TemporaryDirectory(dir=self.work) as tmp:
                out = subprocess.run([self.example, "bins", "--errors", ",".join(map(str, L2_ERRORS)),
                                      "--write", tmp, "--bins", ",".join(map(str, self.args.table7_bins)),
                                      str(model)], check=True, capture_output=True, text=True).stdout
                tensors = [json.loads(l) for l in out.splitlines() if '"tensor"' in l]
                deg = {q: {b: (self.evaluate(Path(tmp) / f"{q}-{b}.safetensors")[0] - loss0) / loss0
                           for b in self.args.table7_bins} for q in ("nonuniform", "uniform")}
            need = {q: [bins_needed(deg[q], t) for t in THRESHOLDS] for q in deg}
            matrices = [t for t in tensors if t["tensor"].endswith(".weight") and t["elements"] > 64 * 64]
            l2 = {q: [float(np.mean([t[q][i] for t in matrices])) if all(t[q][i] for t in matrices) else None
                      for i in range(len(L2_ERRORS))] for q in ("nonuniform", "uniform")}
            rows.append({"step": s, "loss": loss0, "bins_for_degradation": need, "degradation": deg,
                         "l2_bins_matrices": l2, "tensors": tensors})
            print(f"table 7 step {s}: {need}", file=sys.stderr)
        return rows

    # -- 4, 5. the delta variants, speed -------------------------------------------------------
    def delta_variants(self, run: Path, rows: list[dict]) -> list[dict]:
        def setting(s):
            if s.get("exact", False):
                return "exact"
            return f"{s['bins']},{s['prune']},{s['metric']},{s['protect']}"

        lst = self.work / f"plans-{rows[0]['mode']}.tsv"
        with open(lst, "w") as f:
            for r in rows:
                ck = run / f"step-{r['step']:06d}"
                f.write(f"{ck / 'model.safetensors'}\t{ck / 'optimizer.safetensors'}\t"
                        f"{setting(r['settings']['main'])}\t{setting(r['settings']['embedding'])}\n")
        out = subprocess.run([self.example, "delta", "--max-error", str(self.args.max_error), str(lst)],
                             check=True, capture_output=True, text=True).stdout
        res = [json.loads(l) for l in out.splitlines()]
        for r, x in zip(rows, res):
            # The example quantizes under the CLI's plan: the same tensors, so the same errors.
            for name, e in r["tensor_errors"].items():
                assert abs(x["errors"][name] - e) <= 1e-5 * max(e, 1e-3), (r["step"], name, x["errors"][name], e)
            x["step"] = r["step"]
        return res


def bins_needed(degradation: dict, threshold: float) -> int | None:
    """The fewest bins from which on every larger count tried keeps the loss within `threshold`.

    Not simply the first count that does: on this small, over-fitted model a coarse quantizer can
    lower the validation loss at one count and not at the next (quantization noise acting as a
    regulariser), and a count that passes by luck is not a count one could configure.
    """
    counts = sorted(degradation, key=int)
    need = None
    for b in reversed(counts):
        if degradation[b] > threshold:
            break
        need = int(b)
    return need


def relative_errors(original: Path, restored: Path) -> dict[str, float]:
    """‖w − ŵ‖ / ‖w‖ of every tensor, in NumPy (float64)."""
    a, _ = td.read_safetensors(original)
    b, _ = td.read_safetensors(restored)
    out = {}
    for k, w in a.items():
        w, r = w.astype(np.float64), b[k].astype(np.float64)
        n = np.linalg.norm(w)
        out[k] = float(np.linalg.norm(w - r) / n) if n > 0 else float(np.any(r != 0))
    return out


def mean_or_missing(counts: list, limit: int) -> str:
    """The mean of `counts`, or how many checkpoints needed more than `limit` bins."""
    missing = sum(c is None for c in counts)
    if missing:
        return f"> {limit} at {missing} of {len(counts)} checkpoints"
    return f"{np.mean(counts):.2f}"


def md_setting(s) -> str:
    if s.get("exact", True):
        return "exact"
    return f"{s['bins']} bins, prune {s['prune'] * 100:.0f}% ({s['metric'][:3]}), protect {s['protect'] * 100:.2g}%"


def markdown(rep: dict) -> str:
    a = rep["args"]
    lines = []
    for mode, rows in rep["chains"].items():
        q = (f"--max-error {a['max_error']}" if mode == "proxy"
             else f"--eval-cmd \"python scripts/train_digits.py eval {{}}\" --max-degradation {a['max_degradation']}")
        lines += [f"\n**{q}** (checkpoints fp32, {rows[0]['input_bytes']:,} bytes each)\n",
                  "| step | main group | embedding group | ratio (delta) | ratio (no delta) | max error main / emb "
                  "| val loss orig → restored (Δ%) | val acc orig → restored | search s (evals) |",
                  "| ---: | --- | --- | ---: | ---: | --- | --- | --- | ---: |"]
        for r in rows:
            lines.append(
                f"| {r['step']} | {md_setting(r['settings']['main'])} | {md_setting(r['settings']['embedding'])} "
                f"| {r['ratio_delta']:.1f} | {r['ratio_full']:.1f} "
                f"| {r['max_error']['main']:.3f} / {r['max_error']['embedding']:.3f} "
                f"| {r['loss']:.4f} → {r['restored_loss']:.4f} ({r['degradation'] * 100:+.2f}) "
                f"| {r['accuracy']:.4f} → {r['restored_accuracy']:.4f} "
                f"| {r['search_seconds']:.1f} ({r['evaluations']}) |")
        tin = sum(r["input_bytes"] for r in rows)
        lines.append(f"\nWhole chain: ratio {tin / sum(r['output_bytes'] for r in rows):.1f} with the delta, "
                     f"{tin / sum(r['full_bytes'] for r in rows):.1f} without.")
    if rep.get("fault_tolerance"):
        lines += ["\n| optimizer state stored as | restores (steps) | model ratio (mean) | optimizer ratio (mean) "
                  "| storage ratio | final val loss | final val acc | uninterrupted loss / acc | loss change |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
        for f in rep["fault_tolerance"]:
            rs = f["restores"]
            lines.append(
                f"| {'LMC (lossless)' if f['optimizer_codec'] == 'lmc' else 'inshrink --max-error ' + str(a['max_error'])} "
                f"| {len(rs)} ({', '.join(str(r['step']) for r in rs)}) "
                f"| {np.mean([r['model_ratio'] for r in rs]):.1f} | {np.mean([r['optimizer_ratio'] for r in rs]):.1f} "
                f"| {f['storage_ratio']:.1f} | {f['final_loss']:.4f} | {f['final_accuracy']:.4f} "
                f"| {f['uninterrupted_loss']:.4f} / {f['uninterrupted_accuracy']:.4f} "
                f"| {f['relative_loss_change'] * 100:+.2f}% |")
    if rep.get("table7"):
        t7 = rep["table7"]
        tables = (("loss degradation ≤", "bins_for_degradation", [f"{t * 100:g}%" for t in THRESHOLDS],
                   a["table7_bins"][-1]),
                  ("relative L2 error ≤ (per 2-D weight)", "l2_bins_matrices", [str(e) for e in L2_ERRORS], 256))
        for title, key, labels, limit in tables:
            lines += [f"\n| {title} | mean bins, non-uniform | mean bins, uniform | uniform / non-uniform |",
                      "| ---: | ---: | ---: | ---: |"]
            for i, label in enumerate(labels):
                nu = [r[key]["nonuniform"][i] for r in t7]
                un = [r[key]["uniform"][i] for r in t7]
                ratio = "–" if None in nu or None in un else f"{np.mean(un) / np.mean(nu):.2f}×"
                lines.append(f"| {label} | {mean_or_missing(nu, limit)} | {mean_or_missing(un, limit)} | {ratio} |")
    for mode, res in rep.get("delta_variants", {}).items():
        lines += [f"\nDelta variants under the {mode} chain's plans (whole streams, ratio = original / bytes):\n",
                  "| step | levels changed | full | HE (Huffman) | RLE + Huffman | PE (rearranged) | PE / RLE | PE / HE "
                  "| compress MB/s (1 core) | proxy search CPU s (trials) |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for x in res:
            o, d = x["original_bytes"], x["delta_bytes"]
            mbs = o / x["compress_cpu_seconds"] / 1e6
            ps = x["proxy_search"]
            if x["has_base"]:
                lines.append(f"| {x['step']} | {x['changed_levels'] * 100:.1f}% | {o / x['full_bytes']:.1f} "
                             f"| {o / d['he']:.1f} | {o / d['rle']:.1f} | {o / d['pe']:.1f} "
                             f"| {d['rle'] / d['pe']:.2f} | {d['he'] / d['pe']:.2f} | {mbs:.0f} "
                             f"| {ps['cpu_seconds']:.2f} ({ps['trials']}) |")
            else:
                lines.append(f"| {x['step']} | – | {o / x['full_bytes']:.1f} | – | – | – | – | – | {mbs:.0f} "
                             f"| {ps['cpu_seconds']:.2f} ({ps['trials']}) |")
        with_base = [x for x in res if x["has_base"]]
        if with_base:
            o = sum(x["original_bytes"] for x in with_base)
            tot = {k: sum(x["delta_bytes"][k] for x in with_base) for k in ("he", "rle", "pe")}
            lines.append(f"\nAll deltas: HE {o / tot['he']:.1f}, RLE {o / tot['rle']:.1f}, PE {o / tot['pe']:.1f} "
                         f"(PE / RLE {tot['rle'] / tot['pe']:.2f}×, PE / HE {tot['he'] / tot['pe']:.2f}×).")
    return "\n".join(lines)


def add_run_arguments(ap: argparse.ArgumentParser) -> None:
    """The run's options (scripts/train_digits.py, cached in --runs) and the quality settings, shared
    with tests/python/paper_table.py."""
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--dim", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--max-error", type=float, default=0.05)
    ap.add_argument("--max-degradation", type=float, default=0.01)
    ap.add_argument("--table7-bins", type=lambda s: [int(x) for x in s.split(",")], default=TABLE7_BINS)
    ap.add_argument("--runs", default=str(ROOT / ".cache" / "runs"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bitlens", nargs="?")
    ap.add_argument("example", nargs="?", help="crates/inshrink/examples/fidelity.rs built (parts 3-5)")
    add_run_arguments(ap)
    ap.add_argument("--restore-every", type=int, default=50)
    ap.add_argument("--table7-every", type=int, default=1, help="use every Nth checkpoint for Table 7")
    ap.add_argument("--work", default=str(ROOT / ".cache" / "bench-inshrink"))
    ap.add_argument("--report", help="write the JSON report here")
    ap.add_argument("--jobs", type=int, default=1, help="parts run side by side")
    ap.add_argument("--render", help="print the tables of a saved JSON report (recomputing Table 7's counts)")
    args = ap.parse_args()
    if args.render:
        rep = json.loads(Path(args.render).read_text())
        for r in rep.get("table7", []):
            r["bins_for_degradation"] = {q: [bins_needed(d, t) for t in THRESHOLDS]
                                         for q, d in r["degradation"].items()}
        print(markdown(rep))
        return
    b = Bench(args)
    run = b.ensure_run()
    steps = list(range(args.every, args.steps + 1, args.every))
    if steps[-1] != args.steps:
        steps.append(args.steps)
    rep = {"args": vars(args), "run": str(run), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "chains": {}, "delta_variants": {}}
    # The parts are independent; --jobs > 1 runs them side by side (wall times then include the
    # waiting; the speed figures are thread CPU times and do not).
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        chains = {mode: pool.submit(b.chain, run, steps, mode) for mode in ("proxy", "eval")}
        ft = [pool.submit(b.fault_tolerance, run, c) for c in ("lmc", "inshrink")]
        t7 = pool.submit(b.table7, run, steps[::args.table7_every]) if b.example else None
        rep["chains"] = {mode: f.result() for mode, f in chains.items()}
        if b.example:
            variants = {mode: pool.submit(b.delta_variants, run, rows) for mode, rows in rep["chains"].items()}
            rep["delta_variants"] = {mode: f.result() for mode, f in variants.items()}
            rep["table7"] = t7.result()
        rep["fault_tolerance"] = [f.result() for f in ft]
    if args.report:
        Path(args.report).write_text(json.dumps(rep, indent=1))
    print(markdown(rep))


if __name__ == "__main__":
    main()
