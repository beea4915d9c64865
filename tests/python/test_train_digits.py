"""The real training run (scripts/train_digits.py): its gradients are right, it learns, it is
deterministic and resumable bit for bit, its files are read by bitlens, and `eval` prints the loss
last (what `--eval-cmd` reads)."""
import subprocess
import sys

import numpy as np

from conftest import ROOT, run_json

sys.path.insert(0, str(ROOT / "scripts"))
import train_digits as td  # noqa: E402

SCRIPT = [sys.executable, str(ROOT / "scripts" / "train_digits.py")]


def test_gradients_match_finite_differences():
    (xt, yt), _ = td.load_digits()
    p = {k: v.astype(np.float64) for k, v in td.init_params(16, 3, 0).items()}
    x, y = xt[:20], yt[:20]
    _, _, g = td.forward(p, x, y, True)
    rng = np.random.default_rng(1)
    for name, a in p.items():
        for _ in range(3):
            i = tuple(int(rng.integers(0, s)) for s in a.shape)
            old = a[i]
            a[i] = old + 1e-5
            lp, _, _ = td.forward(p, x, y, False)
            a[i] = old - 1e-5
            lm, _, _ = td.forward(p, x, y, False)
            a[i] = old
            num = (lp - lm) / 2e-5
            assert abs(num - g[name][i]) <= 1e-4 * max(1.0, abs(num)), (name, i, num, g[name][i])


def train(out, *extra):
    subprocess.run([*SCRIPT, "train", "--out", str(out), "--hidden", "32", "--dim", "2", "--lr", "1e-2",
                    "--steps", "40", "--every", "20", *extra], check=True, capture_output=True)


def test_run_learns_is_deterministic_and_resumes_exactly(tmp_path):
    train(tmp_path / "a")
    train(tmp_path / "b")
    train(tmp_path / "c", "--resume", str(tmp_path / "a" / "step-000020"))
    names = ["model.safetensors", "optimizer.safetensors", "model-bf16.safetensors", "optimizer-bf16.safetensors"]

    def same(x, y):
        # The tensors bit for bit and the metadata (safetensors orders metadata keys freely).
        (tx, mx), (ty, my) = td.read_safetensors(x), td.read_safetensors(y)
        assert mx == my and list(tx) == list(ty)
        for k in tx:
            assert tx[k].tobytes() == ty[k].tobytes(), (x, k)

    for step in ("step-000000", "step-000020", "step-000040"):
        for n in names:
            same(tmp_path / "a" / step / n, tmp_path / "b" / step / n)
    for n in names:
        same(tmp_path / "a" / "step-000040" / n, tmp_path / "c" / "step-000040" / n)

    def loss(path):
        out = subprocess.run([*SCRIPT, "eval", str(path)], check=True, capture_output=True, text=True).stdout
        return float(out.split()[-1])

    first, last = loss(tmp_path / "a" / "step-000000" / "model.safetensors"), loss(tmp_path / "a" / "step-000040" / "model.safetensors")
    assert last < 0.5 * first, (first, last)
    # bf16 weights evaluate close to fp32.
    assert abs(loss(tmp_path / "a" / "step-000040" / "model-bf16.safetensors") - last) < 0.05 * last


def test_bitlens_reads_the_run(tmp_path):
    train(tmp_path / "r")
    step = tmp_path / "r" / "step-000040"
    model = run_json("inspect", step / "model.safetensors")
    names = {t["name"]: t for t in model["files"][0]["tensors"]}
    assert set(names) == set(td.init_params(32, 2, 0))
    assert names["fc2.weight"]["shape"] == [32, 32] and names["fc2.weight"]["dtype"] == "F32"
    opt = run_json("inspect", step / "optimizer-bf16.safetensors")
    assert {t["dtype"] for t in opt["files"][0]["tensors"]} == {"BF16"}
    assert len(opt["files"][0]["tensors"]) == 2 * len(names)
