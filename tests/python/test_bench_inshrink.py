"""Smoke test of scripts/bench-inshrink.sh's path (tests/python/bench_inshrink.py) on a tiny run
(hidden 32, 40 steps, checkpoints at 20 and 40): the report's numbers are checked against the files
it left behind — sizes on disk, the loss of the decompressed checkpoint by train_digits.py's own
`eval`, a uniform quantizer in NumPy — and the restored loss obeys --max-degradation."""
import json
import subprocess
import sys

import numpy as np

from conftest import BIN, ROOT, run

EXAMPLE = BIN.parent / "examples" / "fidelity"
D = 0.02


def example():
    """The fidelity example next to the CLI binary, built if missing (same profile and target)."""
    if not EXAMPLE.exists():
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "bitlens-inshrink", "--example", "fidelity"],
                       cwd=ROOT, check=True, capture_output=True,
                       env={**__import__("os").environ, "CARGO_TARGET_DIR": str(BIN.parents[1])})
    return EXAMPLE


def eval_loss(path):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "train_digits.py"), "eval", str(path)],
                         check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def uniform_min_bins(w, max_error):
    """Fewest evenly spaced centroids (min..max, nearest) with relative L2 error ≤ max_error."""
    w = w.astype(np.float64)
    for k in range(1, 257):
        c = np.linspace(w.min(), w.max(), k) if k > 1 else np.array([(w.min() + w.max()) / 2])
        c = c.astype(np.float32).astype(np.float64)
        r = c[np.abs(w[:, None] - c[None, :]).argmin(axis=1)]
        if np.linalg.norm(w - r) / np.linalg.norm(w) <= max_error:
            return k
    return None


def test_bench_inshrink_tiny_run(tmp_path):
    report = tmp_path / "report.json"
    work = tmp_path / "work"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "python" / "bench_inshrink.py"), str(BIN), str(example()),
         "--hidden", "32", "--steps", "40", "--every", "20", "--restore-every", "20", "--lr", "1e-2",
         "--max-degradation", str(D), "--max-error", "0.1", "--table7-bins", "1,2,4,8,16,32,64,128,256",
         "--table7-every", "2", "--jobs", "3", "--runs", str(tmp_path / "runs"), "--work", str(work), "--report", str(report)],
        capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = json.loads(report.read_text())
    assert "| step |" in proc.stdout and "PE (rearranged)" in proc.stdout
    run_dir = tmp_path / "runs" / "digits-h32-d8-lr0.01-seed0-s40-e20"
    for mode, rows in rep["chains"].items():
        assert [r["step"] for r in rows] == [20, 40]
        for r in rows:
            bls = work / f"chain-{mode}" / f"step-{r['step']:06d}.bls"
            model = run_dir / f"step-{r['step']:06d}" / "model.safetensors"
            assert r["output_bytes"] == bls.stat().st_size and r["input_bytes"] == model.stat().st_size
            assert r["ratio_delta"] > 1 and r["ratio_full"] > 1
            # The restored loss, by the model's own evaluation of the decompressed file.
            restored = work / f"chain-{mode}" / f"step-{r['step']:06d}.safetensors"
            assert abs(eval_loss(restored) - r["restored_loss"]) <= 1e-6 * r["restored_loss"]
            assert abs(eval_loss(model) - r["loss"]) <= 1e-6 * r["loss"]
            if mode == "eval":
                assert (r["restored_loss"] - r["loss"]) / r["loss"] <= D
            else:
                assert max(r["numpy_errors"].values()) <= 0.1 * (1 + 1e-6)
        # The second checkpoint is a delta of the first (restoring needs it), the first is not.
        inspect = json.loads(run("inspect", work / f"chain-{mode}" / "step-000040.bls", "--json").stdout)
        assert inspect["snapshots"][0]["inshrink"]["base"]["name"] == "step-000020.bls"
    for ft in rep["fault_tolerance"]:
        assert [x["step"] for x in ft["restores"]] == [20]
        assert ft["restores"][0]["model_ratio"] > 1 and ft["restores"][0]["optimizer_ratio"] > 1
        assert ft["restores"][0]["model_degradation"] <= D
        final = work / f"ft-{ft['optimizer_codec']}" / "segment-000020" / "step-000040" / "model.safetensors"
        assert abs(eval_loss(final) - ft["final_loss"]) <= 1e-6 * ft["final_loss"]
        assert abs(eval_loss(run_dir / "step-000040" / "model.safetensors") - ft["uninterrupted_loss"]) <= 1e-6
    for mode, res in rep["delta_variants"].items():
        assert [x["has_base"] for x in res] == [False, True]
        assert all(v > 0 for v in res[1]["delta_bytes"].values())
        assert res[0]["full_bytes"] < res[0]["original_bytes"]
    # Table 7's uniform counts equal a NumPy uniform quantizer's on the same tensor.
    (t7,) = rep["table7"]
    w = np.frombuffer(_tensor_bytes(run_dir / "step-000020" / "model.safetensors", "fc2.weight"), "<f4")
    fc2 = next(t for t in t7["tensors"] if t["tensor"] == "fc2.weight")
    assert fc2["uniform"] == [uniform_min_bins(w, e) for e in fc2["errors"]]
    for q in ("nonuniform", "uniform"):
        need = t7["bins_for_degradation"][q]
        for b, t in zip(need, (0.001, 0.01, 0.05)):
            if b is not None:  # within the threshold from b bins on
                assert all(d <= t for k, d in t7["degradation"][q].items() if int(k) >= b)


def _tensor_bytes(path, name):
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    info = json.loads(raw[8:8 + n])[name]
    a, b = info["data_offsets"]
    return raw[8 + n + a:8 + n + b]
