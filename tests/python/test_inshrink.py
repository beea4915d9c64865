"""`bitlens compress --codec inshrink` (Inshrinkerator, paper 002) end to end, checked with NumPy
and the model's own evaluation: the error budget holds for every restored tensor, protected values
come back bit-exact, the loss-based threshold holds when the restored model is evaluated again,
a chain of deltas restores each step exactly as a full snapshot with the same plan does, and
corrupt or missing inputs are errors that name what is wrong."""
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, run

SCRIPT = [sys.executable, str(ROOT / "scripts" / "train_digits.py")]
EVAL = f"{sys.executable} {ROOT / 'scripts' / 'train_digits.py'} eval {{}}"


def tensors(path):
    """name -> (dtype, raw bytes) of a safetensors file, and its header bytes."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    data = raw[8 + n:]
    out = {k: (v["dtype"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()}
    return out, raw[:8 + n]


def as_f64(dtype, b):
    if dtype == "F32":
        return np.frombuffer(b, "<f4").astype(np.float64)
    if dtype == "F16":
        return np.frombuffer(b, "<f2").astype(np.float64)
    return (np.frombuffer(b, "<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def bits(dtype, b):
    return np.frombuffer(b, "<u4" if dtype == "F32" else "<u2")


def inspect(path):
    return json.loads(run("inspect", path, "--json").stdout)["snapshots"][0]


def train(out):
    subprocess.run([*SCRIPT, "train", "--out", str(out), "--hidden", "32", "--dim", "2", "--lr", "1e-2",
                    "--steps", "40", "--every", "20"], check=True, capture_output=True)


def loss(path):
    out = subprocess.run([*SCRIPT, "eval", str(path)], check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_minilm_within_the_error_budget_and_protected_values_exact(weights, tmp_path, dtype):
    src, e = weights / f"minilm-{dtype}.safetensors", 0.1
    bls, out = tmp_path / "m.bls", tmp_path / "m.safetensors"
    report = json.loads(run("compress", src, "-o", bls, "--codec", "inshrink", "--max-error", e, "--json").stdout)
    assert report["quality"]["kind"] == "l2-proxy" and "relative L2" in report["quality"]["name"]
    assert report["quality"]["evaluations"] == sum(g["trials"] for g in report["groups"]) > 0
    assert report["output_bytes"] == bls.stat().st_size
    run("decompress", bls, "-o", out)
    orig, orig_header = tensors(src)
    rest, rest_header = tensors(out)
    assert rest_header == orig_header and list(rest) == list(orig)
    info = inspect(bls)
    assert info["inshrink"]["quality"]["name"] == report["quality"]["name"]
    assert abs(info["ratio"] - bls.stat().st_size / src.stat().st_size) < 1e-12
    lossy = 0
    for t in info["tensors"]:
        dt, a = orig[t["name"]]
        _, b = rest[t["name"]]
        if t["codec"] != "inshrink":
            assert a == b, t["name"]  # non-float tensors are lossless
            continue
        w, r = as_f64(dt, a), as_f64(dt, b)
        err = np.linalg.norm(w - r) / np.linalg.norm(w) if np.any(w) else 0.0
        assert err <= e + 1e-9, (t["name"], err)
        # The error the snapshot records is the one NumPy measures.
        assert abs(err - t["inshrink"]["error"]) <= 1e-4 * max(err, 1e-3), (t["name"], err, t["inshrink"])
        same = bits(dt, a) == bits(dt, b)
        s = t["inshrink"]
        if s["setting"]["exact"]:
            assert same.all(), t["name"]
            continue
        lossy += 1
        p = s["protected"]
        assert same.sum() >= p
        if p:
            # Without an optimizer state, protection is by magnitude: the tensor's largest |w|.
            mag = np.abs(w)
            cut = np.sort(mag)[::-1][p] if p < len(mag) else -1.0
            assert same[mag > cut].all(), t["name"]
    assert lossy > 0
    # One tensor of a full inshrink snapshot, through the generic reader.
    name = next(t["name"] for t in info["tensors"] if t["codec"] == "inshrink")
    run("decompress", bls, "-o", tmp_path / "one.safetensors", "--tensor", name)
    one, _ = tensors(tmp_path / "one.safetensors")
    assert one[name] == rest[name]
    assert bls.stat().st_size < 0.35 * src.stat().st_size  # measured: f32 0.14, bf16 0.27


def test_digits_loss_threshold_holds_on_the_restored_model(tmp_path):
    train(tmp_path / "run")
    step = tmp_path / "run" / "step-000040"
    bls, out = tmp_path / "d.bls", tmp_path / "d.safetensors"
    report = json.loads(run("compress", step / "model.safetensors", "-o", bls, "--codec", "inshrink",
                            "--eval-cmd", EVAL, "--max-degradation", 0.02,
                            "--optimizer", step / "optimizer.safetensors", "--json").stdout)
    q = report["quality"]
    original = loss(step / "model.safetensors")
    assert q["kind"] == "eval-cmd" and q["original_loss"] == pytest.approx(original, rel=1e-9)
    # One evaluation of the original, one per candidate the search judged.
    assert q["evaluations"] == 1 + sum(g["trials"] for g in report["groups"])
    assert report["optimizer"]["matched"] == len(report["tensors"])
    run("decompress", bls, "-o", out)
    restored = loss(out)
    assert (restored - original) / original <= 0.02, (restored, original)
    assert report["ratio"] < 0.6
    info = inspect(bls)
    assert "--eval-cmd" in info["inshrink"]["quality"]["name"]
    metrics = {g["setting"].get("metric") for g in info["inshrink"]["groups"]}
    assert metrics & {"magnitude", "sensitivity"}


def test_eval_command_errors_name_the_command(tmp_path):
    train(tmp_path / "run")
    model = tmp_path / "run" / "step-000040" / "model.safetensors"
    for cmd, what in (("exit 3; true {}", "failed"), ("true {}", "printed no number")):
        p = run("compress", model, "-o", tmp_path / "x.bls", "--codec", "inshrink", "--eval-cmd", cmd,
                "--max-degradation", 0.02, check=False)
        named = "--eval-cmd `" + cmd.split("{}")[0]
        assert p.returncode == 1 and what in p.stderr and named in p.stderr, p.stderr
        assert "panicked" not in p.stderr
    p = run("compress", model, "-o", tmp_path / "x.bls", "--codec", "inshrink", check=False)
    assert p.returncode == 1 and "quality threshold" in p.stderr


def test_chain_restores_each_step_as_the_full_snapshot_with_the_same_plan(tmp_path):
    train(tmp_path / "run")
    steps = [tmp_path / "run" / f"step-{s:06d}" / "model.safetensors" for s in (0, 20, 40)]
    chain = tmp_path / "chain"
    chain.mkdir()
    args = ["--codec", "inshrink", "--max-error", 0.1]
    run("compress", steps[0], "-o", chain / "s0.bls", *args)
    # Step 0's optimizer has not stepped: its all-zero second moments rank nothing and are left out.
    r = json.loads(run("compress", steps[0], "-o", tmp_path / "z.bls", *args, "--json", "--optimizer",
                       steps[0].parent / "optimizer.safetensors").stdout)
    assert r["optimizer"]["all_zero"] == len(r["tensors"]) and r["optimizer"]["matched"] == 0
    run("decompress", tmp_path / "z.bls", "-o", tmp_path / "z.safetensors")
    run("decompress", chain / "s0.bls", "-o", tmp_path / "s0.safetensors")
    assert (tmp_path / "z.safetensors").read_bytes() == (tmp_path / "s0.safetensors").read_bytes()
    for i in (1, 2):
        base = chain / f"s{i - 1}.bls"
        run("compress", steps[i], "-o", chain / f"s{i}.bls", *args, "--base", base)
        run("compress", steps[i], "-o", tmp_path / f"full{i}.bls", *args, "--base", base, "--no-delta")
    for i in (1, 2):
        run("decompress", chain / f"s{i}.bls", "-o", tmp_path / f"s{i}.safetensors")
        run("decompress", tmp_path / f"full{i}.bls", "-o", tmp_path / f"full{i}.safetensors")
        # The delta stores the same levels: the restored files are identical byte for byte.
        assert (tmp_path / f"s{i}.safetensors").read_bytes() == (tmp_path / f"full{i}.safetensors").read_bytes()
        info = inspect(chain / f"s{i}.bls")
        assert info["inshrink"]["base"]["name"] == f"s{i - 1}.bls"
        # Every tensor still coded by Inshrinkerator is a delta; the others (tiny ones whose lossy
        # code is not smaller than LMC's) are stored lossless, each listed with why (issue 29).
        coded = [t for t in info["tensors"] if t["codec"] == "inshrink"]
        in_base = {t["name"] for t in inspect(chain / f"s{i - 1}.bls")["tensors"] if t["codec"] == "inshrink"}
        assert coded and all(t["inshrink"]["delta"] == (t["name"] in in_base) for t in coded)
        own = {o["name"] for o in info["inshrink"]["report"].get("own_settings", [])}
        assert all(t["name"] in own for t in info["tensors"] if t["codec"] != "inshrink")
        assert "search" in info["inshrink"]["groups"][0]
        # Within the budget against the original step.
        orig, _ = tensors(steps[i])
        rest, _ = tensors(tmp_path / f"s{i}.safetensors")
        for name, (dt, a) in orig.items():
            w, r = as_f64(dt, a), as_f64(dt, rest[name][1])
            assert np.linalg.norm(w - r) <= 0.1 * np.linalg.norm(w) + 1e-12, name
    assert (chain / "s2.bls").stat().st_size < (tmp_path / "full2.bls").stat().st_size
    # Moved away from its base: the error names the base; --base points at it (its own base is
    # found next to it).
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(chain / "s2.bls", lone / "s2.bls")
    p = run("decompress", lone / "s2.bls", "-o", tmp_path / "x.safetensors", check=False)
    assert p.returncode == 1 and "s1.bls" in p.stderr and "--base" in p.stderr, p.stderr
    run("decompress", lone / "s2.bls", "-o", tmp_path / "y.safetensors", "--base", chain / "s1.bls")
    assert (tmp_path / "y.safetensors").read_bytes() == (tmp_path / "s2.safetensors").read_bytes()
    p = run("decompress", lone / "s2.bls", "-o", tmp_path / "x.safetensors", "--base", chain / "s0.bls", check=False)
    assert p.returncode == 1 and "wrong base" in p.stderr, p.stderr


def test_protected_values_in_bf16(tmp_path):
    """--protect-dtype bf16 (the paper's choice) on an fp32 model: protected values come back as
    the original rounded to bf16 (round to nearest even), the rest within the budget."""
    train(tmp_path / "run")
    model = tmp_path / "run" / "step-000040" / "model.safetensors"
    bls, out = tmp_path / "b.bls", tmp_path / "b.safetensors"
    run("compress", model, "-o", bls, "--codec", "inshrink", "--max-error", 0.1, "--protect-dtype", "bf16")
    run("decompress", bls, "-o", out)
    info = inspect(bls)
    assert info["inshrink"]["protect_dtype"] == "bf16"
    orig, _ = tensors(model)
    rest, _ = tensors(out)
    checked = 0
    for t in info["tensors"]:
        if t["codec"] != "inshrink":
            continue  # stored lossless (LMC): its lossy code was not smaller (issue 29)
        s, (dt, a) = t["inshrink"], orig[t["name"]]
        w, r = as_f64(dt, a), as_f64(dt, rest[t["name"]][1])
        p = s["protected"]
        if s["setting"]["exact"] or not p:
            continue
        u = np.frombuffer(a, "<u4").astype(np.uint64)
        rounded = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
        mag = np.abs(w)
        cut = np.sort(mag)[::-1][p] if p < len(mag) else -1.0
        top = mag > cut
        assert np.array_equal(r[top], rounded[top].astype(np.float64)), t["name"]
        checked += int(top.sum())
    assert checked > 0


def test_corrupt_snapshots_are_typed_errors(tmp_path):
    train(tmp_path / "run")
    good = tmp_path / "g.bls"
    run("compress", tmp_path / "run" / "step-000040" / "model.safetensors", "-o", good,
        "--codec", "inshrink", "--max-error", 0.1)
    raw = bytearray(good.read_bytes())
    prefix_len = int.from_bytes(raw[16:24], "little")
    annex_at = 24 + prefix_len + 8
    assert int.from_bytes(raw[8:12], "little") == 4 and raw[annex_at + 4:annex_at + 8] == b"INSA"
    annex_len = int.from_bytes(raw[annex_at:annex_at + 4], "little")
    first_frame = annex_at + 4 + annex_len + 8
    cases = {
        "annex": (annex_at + 10, "annex"),
        "stream magic": (first_frame, "tensor"),
        "stream body": (first_frame + 40, "tensor"),
    }
    for label, (at, word) in cases.items():
        bad = bytearray(raw)
        bad[at] ^= 0x5A
        path = tmp_path / f"bad-{label.replace(' ', '-')}.bls"
        path.write_bytes(bytes(bad))
        p = run("decompress", path, "-o", tmp_path / "x.safetensors", check=False)
        assert p.returncode == 1 and word in p.stderr and "panicked" not in p.stderr, (label, p.stderr)
    cut = tmp_path / "cut.bls"
    cut.write_bytes(bytes(raw[: len(raw) // 2]))
    p = run("decompress", cut, "-o", tmp_path / "x.safetensors", check=False)
    assert p.returncode == 1 and "panicked" not in p.stderr
