"""bitlens compress / decompress end to end: byte-exact round trips on real weights, shards, deltas,
single tensors, lossy codecs checked with numpy, and corrupt snapshots."""
import filecmp
import json
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest
from conftest import run, run_json, ROOT
from safetensors import safe_open


def roundtrip(tmp_path, src, *args, base=None):
    snap = tmp_path / "x.bls"
    out = tmp_path / "x.safetensors"
    extra = ["--base", base] if base else []
    run("compress", src, "-o", snap, *args, *extra)
    run("decompress", snap, "-o", out, *extra)
    return snap, out


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("codec", ["lmc", "neuzip", "stored"])
def test_lossless_codecs_restore_the_file_byte_for_byte(tmp_path, weights, dtype, codec):
    src = weights / f"minilm-{dtype}.safetensors"
    snap, out = roundtrip(tmp_path, src, "--codec", codec)
    assert filecmp.cmp(src, out, shallow=False)
    if codec != "stored":
        assert snap.stat().st_size < 0.86 * src.stat().st_size


def test_outputs_that_are_not_regular_files_are_written_in_place(tmp_path, weights):
    # A pipe (as /dev/null or /dev/stdout would be) must receive the bytes, not be replaced by a
    # renamed temporary file; a symlink keeps pointing at its target, which gets the output.
    import os
    import threading
    src = weights / "minilm-bf16.safetensors"
    snap, _ = roundtrip(tmp_path, src)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    run("compress", src, "-o", fifo)
    reader.join(timeout=60)
    assert got and got[0] == snap.read_bytes()
    assert fifo.is_fifo()
    target = tmp_path / "target.bls"
    target.write_bytes(b"old")
    link = tmp_path / "link.bls"
    link.symlink_to(target)
    run("compress", src, "-o", link)
    assert link.is_symlink() and target.read_bytes() == snap.read_bytes()
    assert not list(tmp_path.glob("*.bitlens-partial"))


def test_ratios_beat_zipnn_reference_numbers(tmp_path, weights):
    # ZipNN measured on these files: bf16 0.6652, fp16 0.8486, fp32 0.8194 (BENCHMARKS.md).
    for dtype, zipnn in (("bf16", 0.6652), ("f16", 0.8486), ("f32", 0.8194)):
        src = weights / f"minilm-{dtype}.safetensors"
        snap, _ = roundtrip(tmp_path, src)
        assert snap.stat().st_size / src.stat().st_size < zipnn, dtype


def test_sharded_checkpoint_round_trips_through_a_directory(tmp_path, weights):
    src = tmp_path / "model"
    src.mkdir()
    header_len = struct.unpack("<Q", (weights / "minilm-bf16.safetensors").read_bytes()[:8])[0]
    shutil.copy(weights / "minilm-bf16.safetensors", src / "model-00001-of-00002.safetensors")
    shutil.copy(weights / "minilm-f16.safetensors", src / "model-00002-of-00002.safetensors")
    # Not a real split of one model, but a valid index over two shards with disjoint names.
    with safe_open(str(src / "model-00002-of-00002.safetensors"), "numpy") as f:
        names2 = list(f.keys())
    index = {"metadata": {}, "weight_map": {}}
    with safe_open(str(src / "model-00001-of-00002.safetensors"), "numpy") as f:
        for n in f.keys():
            index["weight_map"][n] = "model-00001-of-00002.safetensors"
    (src / "model.safetensors.index.json").write_text(json.dumps(index))
    packed = tmp_path / "packed"
    restored = tmp_path / "restored"
    run("compress", src / "model.safetensors.index.json", "-o", packed)
    assert sorted(p.name for p in packed.iterdir()) == [
        "model-00001-of-00002.safetensors.bls",
        "model.safetensors.index.json",
    ]
    run("decompress", packed, "-o", restored)
    assert filecmp.cmp(src / "model-00001-of-00002.safetensors", restored / "model-00001-of-00002.safetensors", shallow=False)
    assert filecmp.cmp(src / "model.safetensors.index.json", restored / "model.safetensors.index.json", shallow=False)
    assert header_len > 0 and names2


@pytest.mark.parametrize("codec", ["lmc", "bitsnap"])
def test_deltas_need_the_right_base(tmp_path, weights, codec):
    base = weights / "minilm-bf16.safetensors"
    nxt = tmp_path / "next.safetensors"
    subprocess.run([sys.executable, str(ROOT / "tests/python/perturb.py"), str(base), "0.05", str(nxt)], check=True)
    snap, out = roundtrip(tmp_path, nxt, "--codec", codec, base=base)
    assert filecmp.cmp(nxt, out, shallow=False)
    assert snap.stat().st_size < 0.2 * nxt.stat().st_size
    no_base = run("decompress", snap, "-o", tmp_path / "y.safetensors", check=False)
    assert no_base.returncode == 1 and "pass the base" in no_base.stderr
    wrong = run("decompress", snap, "-o", tmp_path / "y.safetensors", "--base", weights / "minilm-f16.safetensors", check=False)
    assert wrong.returncode == 1 and "wrong base" in wrong.stderr
    assert not (tmp_path / "y.safetensors").exists(), "no partial output is left behind"


def test_one_tensor_decodes_to_a_valid_safetensors_file(tmp_path, weights):
    src = weights / "minilm-f32.safetensors"
    snap = tmp_path / "x.bls"
    run("compress", src, "-o", snap)
    out = tmp_path / "one.safetensors"
    name = "encoder.layer.3.attention.self.query.weight"
    run("decompress", snap, "-o", out, "--tensor", name)
    with safe_open(str(out), "numpy") as f, safe_open(str(src), "numpy") as g:
        assert list(f.keys()) == [name]
        assert f.metadata() == g.metadata()
        np.testing.assert_array_equal(f.get_tensor(name), g.get_tensor(name))


def bf16_values(path):
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    out = {}
    for name, info in header.items():
        if name != "__metadata__" and info["dtype"] == "BF16":
            s, e = info["data_offsets"]
            bits = np.frombuffer(raw[8 + n + s : 8 + n + e], np.uint16).astype(np.uint32) << 16
            out[name] = bits.view(np.float32).astype(np.float64)
    return out


@pytest.mark.parametrize("k", [0, 1, 3])
def test_lossy_neuzip_respects_its_bound_and_reports_it(tmp_path, weights, k):
    src = weights / "minilm-bf16.safetensors"
    snap, out = roundtrip(tmp_path, src, "--codec", "neuzip", "--mantissa-bits", str(k), "--norm-block", "128")
    original, decoded = bf16_values(src), bf16_values(out)
    worst = 0.0
    for name, x in original.items():
        y = decoded[name]
        nz = (x != 0) & np.isfinite(x)
        rel = np.abs(y[nz] - x[nz]) / np.abs(x[nz])
        worst = max(worst, rel.max(initial=0.0))
        for start in range(0, x.size, 128):  # block maxima are exact
            blk = np.abs(x[start : start + 128])
            i = start + int(np.argmax(blk))
            assert y[i] == x[i], name
    assert worst <= 2.0**-k
    report = run_json("inspect", snap)["snapshots"][0]
    assert report["lossy"]
    reported = max(t["error"]["max_rel"] for t in report["tensors"] if t["error"])
    assert reported == pytest.approx(worst, rel=1e-9)


def test_bitsnap_quant_is_2_67x_on_fp32(tmp_path, weights):
    src = weights / "minilm-f32.safetensors"
    snap, out = roundtrip(tmp_path, src, "--codec", "bitsnap-quant")
    assert 0.37 < snap.stat().st_size / src.stat().st_size < 0.38
    with safe_open(str(out), "numpy") as f, safe_open(str(src), "numpy") as g:
        for name in list(g.keys())[1:6]:
            a, b = g.get_tensor(name), f.get_tensor(name)
            assert a.shape == b.shape and a.dtype == b.dtype
            assert np.abs(a - b).max() <= (a.max() - a.min()) / 255


def test_corrupt_snapshots_give_one_line_naming_the_problem(tmp_path, weights):
    src = weights / "minilm-bf16.safetensors"
    snap = tmp_path / "x.bls"
    run("compress", src, "-o", snap, "--codec", "stored")
    data = bytearray(snap.read_bytes())
    cases = {
        "magic.bls": (b"XX" + data[2:], "not a bitlens snapshot"),
        "truncated.bls": (data[: len(data) // 2], "truncated"),
        "index.bls": (data[:-40] + bytes([data[-40] ^ 1]) + data[-39:], "index corrupt"),
    }
    report = run_json("inspect", snap)["snapshots"][0]
    # flip a byte in the middle of the largest tensor's payload → its checksum fails
    big = max(report["tensors"], key=lambda t: t["bytes"])
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    cases["payload.bls"] = (bytes(flipped), "checksum mismatch")
    for name, (content, phrase) in cases.items():
        p = tmp_path / name
        p.write_bytes(content)
        proc = run("decompress", p, "-o", tmp_path / "out.safetensors", check=False)
        assert proc.returncode == 1, name
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and phrase in lines[0], (name, lines)
        assert "panicked" not in proc.stderr
    assert big["name"]
