"""`bitlens compress` / `decompress` on GGUF, NumPy and PyTorch files: the file comes back byte for
byte (container version 3, docs/FORMAT.md section 1.2).

GGUF files (F16 and Q8_0) and `.npy` / `.npz` files (stored and deflated) are written at test time
by gguf-py and numpy from the real MiniLM weights; the PyTorch files are the committed fixtures
(torch is not a test dependency). Each round trip prints the snapshot's size next to `zstd -3`'s
of the same file (not asserted: a comparison, not a rule).
"""
import json
import shutil
import subprocess

import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFWriter, quants
from safetensors.numpy import load_file

from conftest import ROOT, run, run_json

TORCH = ROOT / "tests" / "fixtures" / "torch"


@pytest.fixture(scope="module")
def minilm(weights):
    return load_file(str(weights / "minilm-f32.safetensors"))


def zstd3(path):
    """Size of `zstd -3` of the file, or None without zstd."""
    if shutil.which("zstd") is None:
        return None
    out = subprocess.run(["zstd", "-3", "-c", str(path)], capture_output=True, check=True).stdout
    return len(out)


def round_trip(path, tmp_path, *codec):
    """Compresses and decompresses `path`; requires identical bytes; prints the sizes."""
    snap = tmp_path / (path.name + ".bls")
    back = tmp_path / (path.name + ".out")
    run("compress", path, "-o", snap, *codec)
    run("decompress", snap, "-o", back)
    assert back.read_bytes() == path.read_bytes(), f"{path.name} {codec}"
    size, packed, z = path.stat().st_size, snap.stat().st_size, zstd3(path)
    zs = f", zstd -3 {z} ({z / size:.4f})" if z else ""
    print(f"{path.name} {' '.join(codec) or 'lmc'}: {size} → {packed} ({packed / size:.4f}){zs}")
    return snap


def write_gguf(path, minilm, qtype, scale=1.0):
    """MiniLM as a GGUF of `qtype` (F16 or Q8_0; tensors whose rows are not whole Q8_0 blocks and
    1-D tensors stay F32), with some metadata."""
    w = GGUFWriter(str(path), arch="bert")
    w.add_name("MiniLM bitlens test")
    w.add_uint32("bitlens.step", 100)
    for name, arr in minilm.items():
        arr = (arr * np.float32(scale)).astype(np.float32)
        if qtype == GGMLQuantizationType.F16:
            w.add_tensor(name, arr.astype(np.float16))
        elif arr.ndim == 2 and arr.shape[1] % 32 == 0:
            w.add_tensor(name, quants.quantize(arr, qtype), raw_dtype=qtype)
        else:
            w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def ggufs(minilm, tmp_path_factory):
    out = tmp_path_factory.mktemp("gguf")
    return {
        "f16": write_gguf(out / "minilm-f16.gguf", minilm, GGMLQuantizationType.F16),
        "q8_0": write_gguf(out / "minilm-q8_0.gguf", minilm, GGMLQuantizationType.Q8_0),
    }


@pytest.mark.parametrize("kind", ["f16", "q8_0"])
@pytest.mark.parametrize("codec", [[], ["--codec", "neuzip"], ["--codec", "stored"]])
def test_gguf_round_trip(ggufs, tmp_path, kind, codec):
    snap = round_trip(ggufs[kind], tmp_path, *codec)
    info = run_json("inspect", snap)["snapshots"][0]
    assert info["original_format"].startswith("GGUF")
    assert info["original_size"] == ggufs[kind].stat().st_size
    pieces = {t["name"]: t["piece"] for t in info["tensors"]}
    if kind == "q8_0":
        assert ["tensor", "Q8_0"] in pieces.values()
    assert any(p[0] == "gap" for p in pieces.values())


def test_numpy_round_trip(minilm, tmp_path):
    arrays = {n.replace(".", "_"): a for n, a in list(minilm.items())[:12]}
    first = next(iter(arrays.values()))
    np.save(tmp_path / "f32.npy", first)
    np.save(tmp_path / "f16.npy", first.astype(np.float16))
    np.save(tmp_path / "fortran.npy", np.asfortranarray(first))
    np.savez(tmp_path / "stored.npz", **arrays)
    np.savez_compressed(tmp_path / "deflated.npz", **arrays)
    for name in ["f32.npy", "f16.npy", "fortran.npy", "stored.npz", "deflated.npz"]:
        for codec in ([], ["--codec", "neuzip"]):
            round_trip(tmp_path / name, tmp_path, *codec)
    info = run_json("inspect", tmp_path / "deflated.npz.bls")["snapshots"][0]
    assert info["original_format"] == "NumPy .npz"
    assert {t["piece"][0] for t in info["tensors"]} == {"gap", "deflated"}


@pytest.mark.parametrize("path", sorted(TORCH.glob("*.pt")), ids=lambda p: p.name)
def test_torch_fixtures_round_trip(path, tmp_path):
    for codec in ([], ["--codec", "neuzip"]):
        round_trip(path, tmp_path, *codec)


def test_gguf_delta_and_its_base(minilm, ggufs, tmp_path):
    base = ggufs["f16"]
    new = write_gguf(tmp_path / "minilm-f16-step2.gguf", minilm, GGMLQuantizationType.F16, 1.001)
    snap, back = tmp_path / "d.bls", tmp_path / "d.out"
    run("compress", new, "--base", base, "-o", snap)
    run("decompress", snap, "--base", base, "-o", back)
    assert back.read_bytes() == new.read_bytes()
    # Without the base, or with another file, decoding is refused.
    assert "base" in run("decompress", snap, "-o", back, check=False).stderr
    wrong = run("decompress", snap, "--base", new, "-o", back, check=False)
    assert wrong.returncode != 0 and "base" in wrong.stderr
    # A base of another format or layout is refused at compress time.
    np.save(tmp_path / "other.npy", np.zeros(4, np.float32))
    other = run("compress", new, "--base", tmp_path / "other.npy", "-o", snap, check=False)
    assert other.returncode != 0 and "same format" in other.stderr
    layout = run("compress", new, "--base", ggufs["q8_0"], "-o", snap, check=False)
    assert layout.returncode != 0 and "same layout" in layout.stderr


def test_one_tensor_of_a_gguf(ggufs, tmp_path, minilm):
    snap = tmp_path / "f16.bls"
    run("compress", ggufs["f16"], "-o", snap)
    name = "embeddings.word_embeddings.weight"
    out = tmp_path / "one.safetensors"
    run("decompress", snap, "--tensor", name, "-o", out)
    assert np.array_equal(load_file(str(out))[name], minilm[name].astype(np.float16))
    q = tmp_path / "q.bls"
    run("compress", ggufs["q8_0"], "-o", q)
    refused = run("decompress", q, "--tensor", name, "-o", out, check=False)
    assert refused.returncode != 0 and "quantized" in refused.stderr
