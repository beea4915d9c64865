"""Checkpoint chains (`compress --chain`, `decompress CHAIN [--step]`, `inspect CHAIN`) on real
training runs of scripts/train_digits.py (fp32 and bf16 model and optimizer states): every step
restores byte for byte, each delta is the very snapshot `compress --base PREVIOUS` writes, the
sizes inspect reports are the files' sizes, and a missing, replaced, tampered or reordered
predecessor is an error naming it."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, run, run_json

SCRIPT = [sys.executable, str(ROOT / "scripts" / "train_digits.py")]
CACHED = ROOT / ".cache" / "runs" / "digits-h512-d8-lr0.001-seed0-s300-e25"
FILES = ["model-bf16.safetensors", "model.safetensors", "optimizer-bf16.safetensors", "optimizer.safetensors"]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "digits"
    subprocess.run([*SCRIPT, "train", "--out", str(out), "--hidden", "64", "--steps", "40", "--every", "10"],
                   check=True, capture_output=True)
    return out


def steps_of(run_dir):
    return sorted(p for p in run_dir.iterdir() if p.is_dir() and p.name.startswith("step-"))


def dtypes(path):
    """The dtypes of a safetensors file's tensors, from its JSON header (read here, not by bitlens)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    return {v["dtype"] for k, v in header.items() if k != "__metadata__"}


def same_bytes(a, b):
    return subprocess.run(["cmp", "-s", str(a), str(b)]).returncode == 0


def check_chain(run_dir, chain, key_every):
    """Manifest structure, sizes against the files on disk and inspect --json, for a chain of
    `run_dir` compressed with `--key key_every` (None: only the first step in full)."""
    steps = steps_of(run_dir)
    manifest = json.loads((chain / "chain.json").read_text())
    assert [s["name"] for s in manifest["steps"]] == [s.name for s in steps]
    report = run_json("inspect", chain)["chains"][0]
    assert [s["name"] for s in report["steps"]] == [s.name for s in steps]
    total = 0
    for i, (step, listed) in enumerate(zip(report["steps"], manifest["steps"])):
        assert [f["name"] for f in step["files"]] == FILES
        for f, m in zip(step["files"], listed["files"]):
            key = i % key_every == 0 if key_every else i == 0
            # A key step's files are keys; with the default codec (auto) a later step's file whose
            # every tensor is smaller in full has no delta and is a key too.
            assert f["kind"] == "key" if key else f["kind"] in ("delta", "key")
            key = f["kind"] == "key"
            assert f["base"] == (None if key else {"step": steps[i - 1].name, "file": f["name"]})
            bls = chain / step["name"] / (f["name"] + ".bls")
            assert f["snapshot_size"] == bls.stat().st_size == m["snapshot_size"]
            assert f["original_size"] == (steps[i] / f["name"]).stat().st_size
            assert f["ratio"] == pytest.approx(f["snapshot_size"] / f["original_size"])
            if key:
                assert f["full_size"] == f["snapshot_size"]
            total += bls.stat().st_size
    totals = report["totals"]
    assert totals["chain_size"] == total
    assert totals["original_size"] == sum((s / f).stat().st_size for s in steps for f in FILES)
    full = sum(f["full_size"] for s in report["steps"] for f in s["files"])
    assert totals["all_full_size"] == full and totals["saved_bytes"] == full - total
    return report


def restore_all_and_compare(run_dir, chain, out):
    run("decompress", chain, "-o", out)
    for step in steps_of(run_dir):
        for name in FILES:
            assert same_bytes(step / name, out / step.name / name), (step.name, name)


@pytest.mark.parametrize("key_every", [None, 2])
def test_small_run_chain_restores_every_step(small_run, tmp_path, key_every):
    steps = steps_of(small_run)
    assert [s.name for s in steps] == [f"step-{n:06d}" for n in (0, 10, 20, 30, 40)]
    assert dtypes(steps[0] / "model.safetensors") == {"F32"}
    assert dtypes(steps[0] / "model-bf16.safetensors") == {"BF16"}
    chain = tmp_path / "chain"
    run("compress", "--chain", small_run, "-o", chain, *(["--key", key_every] if key_every else []))
    check_chain(small_run, chain, key_every)
    restore_all_and_compare(small_run, chain, tmp_path / "all")


def test_deltas_are_the_snapshots_of_compress_with_base(small_run, tmp_path):
    """Each delta of the chain is byte for byte what `compress FILE --base PREVIOUS` writes, and a
    delta's recorded size in full is what `compress FILE` alone writes."""
    chain = tmp_path / "chain"
    run("compress", "--chain", small_run, "-o", chain)
    report = run_json("inspect", chain)["chains"][0]
    steps = steps_of(small_run)
    for name in ("model.safetensors", "optimizer-bf16.safetensors"):
        alone = tmp_path / "alone.bls"
        with_base = tmp_path / "with-base.bls"
        run("compress", steps[3] / name, "-o", with_base, "--base", steps[2] / name)
        run("compress", steps[3] / name, "-o", alone)
        assert (chain / steps[3].name / f"{name}.bls").read_bytes() == with_base.read_bytes()
        entry = next(f for f in report["steps"][3]["files"] if f["name"] == name)
        assert entry["full_size"] == alone.stat().st_size
        assert entry["delta_vs_full"] == pytest.approx(with_base.stat().st_size / alone.stat().st_size)
        # And the chain's delta decompresses with the plain command too.
        restored = tmp_path / "restored.safetensors"
        run("decompress", chain / steps[3].name / f"{name}.bls", "-o", restored, "--base", steps[2] / name)
        assert same_bytes(restored, steps[3] / name)


def test_one_step_by_name_or_index(small_run, tmp_path):
    chain = tmp_path / "chain"
    run("compress", "--chain", small_run, "-o", chain, "--key", "3")
    steps = steps_of(small_run)
    for wanted, step in (("step-000020", steps[2]), ("4", steps[4]), ("step-000000", steps[0])):
        out = tmp_path / f"one-{wanted}"
        run("decompress", chain, "-o", out, "--step", wanted)
        assert sorted(p.name for p in out.iterdir()) == FILES  # no temporary files left
        for name in FILES:
            assert same_bytes(step / name, out / name), (wanted, name)
    err = run("decompress", chain, "-o", tmp_path / "x", "--step", "step-000050", check=False)
    assert err.returncode == 1 and "no step `step-000050`" in err.stderr


@pytest.mark.parametrize("codec", ["bitsnap", "neuzip", "stored"])
def test_other_lossless_codecs(small_run, tmp_path, codec):
    chain = tmp_path / "chain"
    run("compress", "--chain", small_run, "-o", chain, "--codec", codec, "--skip-full-size")
    manifest = json.loads((chain / "chain.json").read_text())
    assert manifest["codec"] == codec
    keys = {f["codec"] for f in manifest["steps"][0]["files"]}
    deltas = {f["codec"] for s in manifest["steps"][1:] for f in s["files"]}
    # bitsnap stores changes against a base: its keys are LMC.
    assert keys == {"lmc" if codec == "bitsnap" else codec} and deltas == {codec}
    report = run_json("inspect", chain)["chains"][0]
    assert report["totals"]["all_full_size"] is None
    restore_all_and_compare(small_run, chain, tmp_path / "all")


def test_lossy_codecs_are_refused(small_run, tmp_path):
    for args in (["--codec", "neuzip", "--mantissa-bits", "3"], ["--codec", "bitsnap-quant"], ["--codec", "inshrink"]):
        err = run("compress", "--chain", small_run, "-o", tmp_path / "c", *args, check=False)
        assert err.returncode == 1, args
        assert "lossy" in err.stderr or "inshrink" in err.stderr, err.stderr
        assert not (tmp_path / "c" / "chain.json").exists()


def test_steps_are_ordered_by_number(small_run, tmp_path):
    """A run directory's steps go by their number (step-5 < step-10 < step-100, which sort the other
    way as text); steps given one by one must come in that order."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    steps = steps_of(small_run)
    for n, step in zip((5, 10, 100), steps):
        os.symlink(step, run_dir / f"step-{n}")
    (run_dir / "notes.txt").write_text("not a step")
    chain = tmp_path / "chain"
    run("compress", "--chain", run_dir, "-o", chain)
    manifest = json.loads((chain / "chain.json").read_text())
    assert [s["name"] for s in manifest["steps"]] == ["step-5", "step-10", "step-100"]
    out = tmp_path / "out"
    run("decompress", chain, "-o", out)
    assert same_bytes(out / "step-100" / "model.safetensors", steps[2] / "model.safetensors")

    err = run("compress", "--chain", steps[2], steps[1], "-o", tmp_path / "bad", check=False)
    assert err.returncode == 1 and "out of order" in err.stderr and "step-000010" in err.stderr


def test_a_list_of_files(small_run, tmp_path):
    """Single files, in order, each a step named by its folder (their file names are the same): each
    is a delta against the previous file whatever its name."""
    steps = steps_of(small_run)
    files = [s / "model-bf16.safetensors" for s in steps[:3]]
    chain = tmp_path / "chain"
    run("compress", "--chain", *files, "-o", chain)
    manifest = json.loads((chain / "chain.json").read_text())
    assert [s["name"] for s in manifest["steps"]] == [s.name for s in steps[:3]]
    assert [s["files"][0]["kind"] for s in manifest["steps"]] == ["key", "delta", "delta"]
    # Renamed copies: differently named files are still chained (one file per step).
    renamed = []
    for i, f in enumerate(files):
        renamed.append(tmp_path / f"ckpt-{i * 10}.safetensors")
        shutil.copy(f, renamed[-1])
    chain2 = tmp_path / "chain2"
    run("compress", "--chain", *renamed, "-o", chain2)
    m2 = json.loads((chain2 / "chain.json").read_text())
    assert [s["name"] for s in m2["steps"]] == ["ckpt-0", "ckpt-10", "ckpt-20"]
    assert m2["steps"][2]["files"][0]["base"] == {"step": "ckpt-10", "file": "ckpt-10.safetensors"}
    out = tmp_path / "out"
    run("decompress", chain2, "-o", out, "--step", "ckpt-20")
    assert same_bytes(out / "ckpt-20.safetensors", files[2])


@pytest.fixture()
def small_chain(small_run, tmp_path):
    chain = tmp_path / "chain"
    run("compress", "--chain", small_run, "-o", chain, "--skip-full-size")
    return chain


def fails(*args):
    proc = run(*args, check=False)
    assert proc.returncode == 1, proc
    return proc.stderr


def test_missing_predecessor_is_named(small_chain, tmp_path):
    shutil.rmtree(small_chain / "step-000010")
    err = fails("decompress", small_chain, "-o", tmp_path / "o", "--step", "step-000030")
    assert "step `step-000010`" in err and "missing" in err
    assert "step-000010" in fails("inspect", small_chain)
    # The steps before it still restore.
    run("decompress", small_chain, "-o", tmp_path / "ok", "--step", "step-000000")


def test_replaced_predecessor_is_named(small_chain, small_run, tmp_path):
    # Another step's snapshot of the same file put in step 10's place.
    name = "model.safetensors.bls"
    shutil.copy(small_chain / "step-000020" / name, small_chain / "step-000010" / name)
    err = fails("decompress", small_chain, "-o", tmp_path / "o", "--step", "step-000030")
    assert "step `step-000010`, file `model.safetensors`" in err
    assert "size" in err or "fingerprint" in err


def test_base_of_other_values_is_refused(small_chain, small_run, tmp_path):
    """A manifest edited so that a delta names another step as its base: the base's index does not
    have the tensors the delta was XORed with."""
    path = small_chain / "chain.json"
    m = json.loads(path.read_text())
    m["steps"][3]["files"][1]["base"]["step"] = "step-000000"
    path.write_text(json.dumps(m))
    err = fails("decompress", small_chain, "-o", tmp_path / "o", "--step", "3")
    assert "step `step-000030`, file `model.safetensors`: not a delta against step `step-000000`" in err


def test_tampered_predecessor_is_named(small_chain, tmp_path):
    bls = small_chain / "step-000010" / "model.safetensors.bls"
    data = bytearray(bls.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bls.write_bytes(data)
    err = fails("decompress", small_chain, "-o", tmp_path / "o", "--step", "step-000020")
    assert "step `step-000010`, file `model.safetensors`" in err
    assert not (tmp_path / "o" / "model.safetensors").exists()
    assert not [p for p in (tmp_path / "o").iterdir() if "bitlens" in p.name]  # temporaries removed


def test_reordered_and_corrupt_manifests(small_chain, tmp_path):
    path = small_chain / "chain.json"
    good = path.read_text()
    m = json.loads(good)
    m["steps"][1], m["steps"][2] = m["steps"][2], m["steps"][1]
    path.write_text(json.dumps(m))
    err = fails("decompress", small_chain, "-o", tmp_path / "o")
    assert "chain.json" in err and "step `step-000020`" in err and "reordered" in err

    m = json.loads(good)
    del m["steps"][1]
    path.write_text(json.dumps(m))
    err = fails("inspect", small_chain)
    assert "base step `step-000010` is not in the chain" in err

    path.write_text(good[: len(good) // 2])
    err = fails("inspect", small_chain)
    assert "chain.json: chain manifest" in err and "line" in err


def test_cached_run_chain(tmp_path):
    """The 13-step run of the repository's cache (hidden 512, 300 steps): default and --key 4,
    every step restored byte for byte; the delta ratio of the bf16 model falls as training goes on
    (LMC Fig. 12)."""
    if not CACHED.is_dir():
        pytest.skip("the cached run is not here (scripts/train_digits.py train --out .cache/runs/...)")
    for key_every in (None, 4):
        chain = tmp_path / f"chain-{key_every}"
        run("compress", "--chain", CACHED, "-o", chain, *(["--key", key_every] if key_every else []))
        report = check_chain(CACHED, chain, key_every)
        out = tmp_path / f"out-{key_every}"
        restore_all_and_compare(CACHED, chain, out)
        shutil.rmtree(out)
    trend = {t["file"]: [r for _, r in t["points"]] for t in report["trend"]}
    bf16 = trend["model-bf16.safetensors"]
    assert bf16[-1] < 0.6 * bf16[0]
    default = run_json("inspect", tmp_path / "chain-None")["chains"][0]["totals"]
    assert default["chain_size"] < default["all_full_size"] < default["original_size"]


def test_numpy_steps(tmp_path):
    """Steps of another format (NumPy .npy, stored as version 3 snapshots) chain the same way."""
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((256, 64)).astype(np.float32)
    run_dir = tmp_path / "run"
    for s in (0, 10, 20):
        (run_dir / f"step-{s}").mkdir(parents=True)
        np.save(run_dir / f"step-{s}" / "w.npy", w)
        w = w + np.float32(1e-3) * rng.standard_normal(w.shape).astype(np.float32)
    chain = tmp_path / "chain"
    run("compress", "--chain", run_dir, "-o", chain)
    report = run_json("inspect", chain)["chains"][0]
    assert [f["kind"] for s in report["steps"] for f in s["files"]] == ["key", "delta", "delta"]
    # Small steps: each delta is smaller than the same file in full.
    assert all(f["delta_vs_full"] < 1 for s in report["steps"][1:] for f in s["files"])
    out = tmp_path / "out"
    run("decompress", chain, "-o", out, "--step", "step-20")
    assert same_bytes(out / "w.npy", run_dir / "step-20" / "w.npy")


def test_a_file_new_in_a_step_is_a_key(small_run, tmp_path):
    """Files are chained by name: a file that the previous step lacks is stored in full (even when
    the previous step holds a single file), and a folder with safetensors files leaves its other
    files (`training_args.bin`, configs) out, as for a Hugging Face folder."""
    steps = steps_of(small_run)
    run_dir = tmp_path / "run"
    for i, files in enumerate((["model.safetensors"], ["model.safetensors", "optimizer.safetensors"])):
        d = run_dir / f"step-{i}"
        d.mkdir(parents=True)
        for f in files:
            os.symlink(steps[i] / f, d / f)
    (run_dir / "step-1" / "training_args.bin").write_bytes(b"\x80\x04not a checkpoint")
    (run_dir / "step-1" / "config.json").write_text("{}")
    chain = tmp_path / "chain"
    proc = run("compress", "--chain", run_dir, "-o", chain)
    assert "left out of the chain: config.json, training_args.bin" in proc.stderr
    m = json.loads((chain / "chain.json").read_text())
    files = {f["name"]: f for f in m["steps"][1]["files"]}
    assert sorted(files) == ["model.safetensors", "optimizer.safetensors"]
    assert files["model.safetensors"]["kind"] == "delta"
    assert files["optimizer.safetensors"]["kind"] == "key" and "base" not in files["optimizer.safetensors"]
    out = tmp_path / "out"
    run("decompress", chain, "-o", out, "--step", "step-1")
    for f in ("model.safetensors", "optimizer.safetensors"):
        assert same_bytes(out / f, steps[1] / f)


def test_auto_chain_stores_a_step_in_full_where_no_delta_pays(small_run, tmp_path):
    """With --codec auto a step's file whose every tensor is smaller in full (the optimizer state
    after the first step, against its all-zero predecessor) comes out with no delta: the manifest
    lists it as a key, with no base, and every step still restores byte for byte."""
    chain = tmp_path / "chain"
    run("compress", "--chain", small_run, "-o", chain, "--codec", "auto", "--skip-full-size")
    manifest = json.loads((chain / "chain.json").read_text())
    kinds = {(s["name"], f["name"]): f for s in manifest["steps"] for f in s["files"]}
    later = {k: f for k, f in kinds.items() if k[0] != "step-000000"}
    # The step-10 optimizer state (bf16 here) against the all-zero one of step 0: no delta pays.
    assert any(f["kind"] == "key" and f.get("base") is None for f in later.values()), later
    assert kinds[("step-000010", "model.safetensors")]["kind"] == "delta"
    for (step, name), f in kinds.items():
        index = run_json("inspect", chain / step / (name + ".bls"))["snapshots"][0]
        assert any(t["delta"] for t in index["tensors"]) == (f["kind"] == "delta"), (step, name)
    restore_all_and_compare(small_run, chain, tmp_path / "out")
