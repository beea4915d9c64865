"""`bitlens inspect --json` and `bitlens diff --json` on every format, against numpy and gguf-py.

Files are written at test time from real MiniLM tensors (.cache/weights/minilm-f32.safetensors):
`.npy`, `.npz` (stored and compressed) with numpy, GGUF F32/F16/Q8_0/Q4_0 with gguf-py's
GGUFWriter and `quants.quantize`; the PyTorch files are the committed fixtures
(tests/fixtures/torch, written by torch; the suite needs no torch): their reference values are
rebuilt with numpy from the same MiniLM slices and checked against the fixtures' sha256 first.

What is checked: names, shapes and element types equal the reference; the value statistics the
CLI reports (min, max, mean) equal numpy's on the same values (for quantized GGUF: on gguf-py's
`dequantize` of the same blocks); `diff` against a perturbed copy counts the changed values
numpy counts, and for quantized GGUF reports the dequantized differences (changed, max / mean
|Δ|, relative L2) numpy computes from gguf-py's `dequantize` of both sides; deflated `.npz`
members and PyTorch views are diffed like any tensor; a hostile pickle exits 1 naming its global.
"""
import hashlib
import json
import pathlib
import re
import zipfile

import gguf
import numpy as np
import pytest
from conftest import ROOT, run, run_json
from safetensors.numpy import load_file

TORCH = ROOT / "tests" / "fixtures" / "torch"
DTYPE = {"float32": "F32", "float16": "F16", "int64": "I64", "float64": "F64"}
GGUF_TYPES = ("F32", "F16", "Q8_0", "Q4_0")


@pytest.fixture(scope="module")
def minilm(weights):
    w = load_file(weights / "minilm-f32.safetensors")
    # A few real tensors: an embedding slice, a weight matrix, biases, the int64 position ids.
    return {
        "embeddings.word_embeddings.weight": w["embeddings.word_embeddings.weight"][:512],
        "embeddings.position_ids": w["embeddings.position_ids"],
        "encoder.layer.0.attention.self.query.weight": w["encoder.layer.0.attention.self.query.weight"],
        "encoder.layer.0.attention.self.query.bias": w["encoder.layer.0.attention.self.query.bias"],
        "encoder.layer.1.output.dense.weight": w["encoder.layer.1.output.dense.weight"],
    }


def perturbed(arrays, seed=3):
    """A copy with a few values of every float array changed, and numpy's count of changes."""
    rng = np.random.default_rng(seed)
    out, changed = {}, {}
    for k, v in arrays.items():
        v = v.copy()
        if v.dtype.kind == "f" and v.size:
            flat = v.reshape(-1)
            idx = rng.choice(flat.size, size=min(37, flat.size), replace=False)
            flat[idx] += v.dtype.type(0.5)
        out[k] = v
        changed[k] = int(np.count_nonzero(arrays[k] != v))
    return out, changed


def tensors_of(report):
    [f] = report["files"]
    return f, {t["name"]: t for t in f["tensors"]}


def check_values(t, ref, what):
    v = t["values"] if "dequantized" not in t else t["dequantized"]["values"]
    ref = np.asarray(ref, dtype=np.float64)
    assert v["count"] == ref.size, what
    assert v["min"] == ref.min() and v["max"] == ref.max(), what
    assert v["mean"] == pytest.approx(ref.mean(), rel=1e-9, abs=1e-12), what


def changed_lanes(report):
    return {t["name"]: t["changed_lanes"] for t in report["tensors"]}


@pytest.fixture(scope="module")
def numpy_files(tmp_path_factory, minilm):
    d = tmp_path_factory.mktemp("numpy")
    b, changed = perturbed(minilm)
    name = "encoder.layer.0.attention.self.query.weight"
    np.save(d / "a.npy", minilm[name])
    np.save(d / "a2.npy", b[name])
    np.savez(d / "s.npz", **minilm)
    np.savez(d / "s2.npz", **b)
    np.savez_compressed(d / "c.npz", **minilm)
    np.savez_compressed(d / "c2.npz", **b)
    return d, changed


def test_npy_and_npz_stats_and_diffs_equal_numpys(numpy_files, minilm):
    d, changed = numpy_files
    name = "encoder.layer.0.attention.self.query.weight"
    f, ts = tensors_of(run_json("inspect", d / "a.npy"))
    assert f["kind"] == "NumPy .npy v1.0" and f["format"] == "npy"
    [t] = ts.values()
    assert (t["shape"], t["dtype"]) == (list(minilm[name].shape), "F32")
    check_values(t, minilm[name], "a.npy")
    diff = run_json("diff", d / "a.npy", d / "a2.npy")
    assert changed_lanes(diff)["array"] == changed[name]
    for stem in ("s", "c"):
        f, ts = tensors_of(run_json("inspect", d / f"{stem}.npz"))
        assert f["kind"] == "NumPy .npz"
        assert list(ts) == list(minilm)
        for k, ref in minilm.items():
            assert ts[k]["shape"] == list(ref.shape) and ts[k]["dtype"] == DTYPE[ref.dtype.name]
            check_values(ts[k], ref, f"{stem}.npz {k}")
        diff = run_json("diff", d / f"{stem}.npz", d / f"{stem}2.npz")
        assert changed_lanes(diff) == changed, stem


def write_gguf(path, arrays, qtype):
    """GGUF of `arrays`, 2-D float ones as `qtype` (or those a dict `qtype` names, each as its
    type), the rest as they are; returns {name: (values as gguf-py dequantizes them, raw stored
    bytes)}."""
    if not isinstance(qtype, dict):
        qtype = {k: qtype for k, v in arrays.items() if v.ndim == 2 and v.dtype == np.float32}
    w = gguf.GGUFWriter(str(path), "bert")
    w.add_uint32("bitlens.test.u32", 7)
    w.add_float32("bitlens.test.f32", 0.25)
    w.add_bool("bitlens.test.bool", True)
    w.add_array("bitlens.test.array", [1, 2, 3])
    ref = {}
    for k, v in arrays.items():
        if k in qtype:
            q = gguf.GGMLQuantizationType[qtype[k]]
            data = gguf.quants.quantize(v, q)
            w.add_tensor(k, data, raw_dtype=q)
            ref[k] = (gguf.quants.dequantize(data, q), data)
        else:
            w.add_tensor(k, v)
            ref[k] = (v, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return ref


@pytest.mark.parametrize("qtype", GGUF_TYPES)
def test_gguf_stats_are_of_the_dequantized_values_and_diffs_count_them(tmp_path, minilm, qtype):
    a = write_gguf(tmp_path / "a.gguf", minilm, qtype)
    b_arrays, _ = perturbed(minilm)
    b = write_gguf(tmp_path / "b.gguf", b_arrays, qtype)
    f, ts = tensors_of(run_json("inspect", tmp_path / "a.gguf"))
    assert f["format"] == "gguf" and f["kind"] == "GGUF v3"
    meta = f["metadata"]
    assert meta["bitlens.test.u32"] == 7 and meta["bitlens.test.f32"] == 0.25
    assert meta["bitlens.test.bool"] is True and meta["bitlens.test.array"] == [1, 2, 3]
    assert list(ts) == list(minilm)
    def converted(k):
        return minilm[k].ndim == 2 and minilm[k].dtype == np.float32

    quantized = qtype in ("Q8_0", "Q4_0")
    for k, (values, raw) in a.items():
        t = ts[k]
        assert t["shape"] == list(minilm[k].shape), k
        if quantized and converted(k):
            assert t["element_type"] == qtype and t["dtype"] == "U8"
            assert t["bytes"] == raw.nbytes
            assert t["quant"]["blocks"] == raw.nbytes // gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[qtype]][1]
        else:
            assert "element_type" not in t
            assert t["dtype"] == (qtype if converted(k) else DTYPE[values.dtype.name])
        check_values(t, values, f"{qtype} {k}")
    diff = run_json("diff", tmp_path / "a.gguf", tmp_path / "b.gguf")
    by_name = {t["name"]: t for t in diff["tensors"]}
    assert list(by_name) == list(minilm)
    for k in minilm:
        (va, ra), (vb, rb) = a[k], b[k]
        t = by_name[k]
        if quantized and converted(k):
            # Flips on the raw block bytes; changed values on the dequantized ones.
            assert t["changed_lanes"] == int(np.count_nonzero(ra != rb)), k
            check_dequantized_diff(t["dequantized"], va, vb, f"{qtype} {k}")
        else:
            assert t["changed_lanes"] == int(np.count_nonzero(ra != rb)), k
            assert "dequantized" not in t


def check_dequantized_diff(d, va, vb, ctx):
    """`diff --json`'s `dequantized` object against gguf-py's dequantized values of both sides."""
    va, vb = va.reshape(-1).astype(np.float32), vb.reshape(-1).astype(np.float32)
    changed = (va != vb) & (va.view(np.uint32) != vb.view(np.uint32))
    finite = np.isfinite(va) & np.isfinite(vb)
    delta = np.abs(vb[finite].astype(np.float64) - va[finite].astype(np.float64))
    assert d["values"] == va.size, ctx
    assert d["changed"] == int(np.count_nonzero(changed)), ctx
    assert d["changed"] > 0, ctx
    assert d["changed_fraction"] == pytest.approx(d["changed"] / va.size), ctx
    assert d["nonfinite"] == int(np.count_nonzero(~finite)), ctx
    assert d["max_abs_diff"] == pytest.approx(delta.max(), rel=1e-12), ctx
    assert d["mean_abs_diff"] == pytest.approx(delta.mean(), rel=1e-9), ctx
    a64 = va[finite].astype(np.float64)
    rel = np.sqrt(np.sum(delta * delta)) / np.sqrt(np.sum(a64 * a64))
    assert d["relative_l2"] == pytest.approx(rel, rel=1e-9), ctx


def torch_reference(weights):
    """The arrays the committed torch fixtures were made of (make_torch_fixtures.py), rebuilt."""
    w = load_file(weights / "minilm-f32.safetensors")
    state = {
        "embeddings.word_embeddings.weight": w["embeddings.word_embeddings.weight"][:48],
        "embeddings.LayerNorm.weight": w["embeddings.LayerNorm.weight"],
        "embeddings.LayerNorm.bias": w["embeddings.LayerNorm.bias"],
        "encoder.layer.0.attention.self.query.weight": w["encoder.layer.0.attention.self.query.weight"][:32],
        "encoder.layer.0.attention.self.query.bias": w["encoder.layer.0.attention.self.query.bias"],
    }
    base = w["encoder.layer.1.attention.self.value.weight"][:16, :24]
    views = {
        "base": base,
        "transposed": base.T,
        "column": base[:, 3],
        "rows": base[2:5],
        "param": w["encoder.layer.1.attention.self.value.bias"][:40],
    }
    return {
        "state_f32": state,
        "state_f16": {k: v.astype(np.float16) for k, v in state.items()},
        "views": views,
    }


@pytest.mark.parametrize("stem", ["state_f32", "state_f16", "views"])
@pytest.mark.parametrize("legacy", [False, True])
def test_torch_fixtures_report_numpys_values(weights, stem, legacy):
    name = stem + ("_legacy" if legacy else "")
    expected = json.loads((TORCH / f"{name}.json").read_text())
    ref = torch_reference(weights)[stem]
    f, ts = tensors_of(run_json("inspect", TORCH / f"{name}.pt"))
    assert f["kind"] == ("PyTorch legacy" if legacy else "PyTorch zip")
    assert list(ts) == [t["name"] for t in expected["tensors"]]
    for e in expected["tensors"]:
        arr = np.ascontiguousarray(ref[e["name"]])
        # The rebuilt array is the one torch saved.
        assert hashlib.sha256(arr.tobytes()).hexdigest() == e["sha256"], e["name"]
        t = ts[e["name"]]
        assert (t["shape"], t["dtype"]) == (e["shape"], e["dtype"])
        check_values(t, arr, f"{name} {e['name']}")
    # The zip and the legacy file hold the same tensors: nothing changed between them.
    other = TORCH / f"{stem}{'' if legacy else '_legacy'}.pt"
    diff = run_json("diff", TORCH / f"{name}.pt", other)
    assert diff["overall"]["changed_lanes"] == 0 and len(diff["tensors"]) == len(expected["tensors"])


@pytest.mark.parametrize(
    "name, glob",
    [
        ("os_system.pt", "os.system"),
        ("os_system_legacy.pt", "os.system"),
        ("builtins_eval.pt", "builtins.eval"),
        ("subprocess_popen.pt", "subprocess.Popen"),
    ],
)
def test_a_hostile_pickle_exits_1_naming_its_global(name, glob):
    proc = run("inspect", TORCH / "hostile" / name, check=False)
    assert proc.returncode == 1
    assert name in proc.stderr and "PyTorch" in proc.stderr and glob in proc.stderr
    assert "nothing was executed" in proc.stderr
    assert proc.stdout == ""


def code_entropy(hist):
    p = hist[hist > 0] / hist.sum()
    return float(-(p * np.log2(p)).sum())


def codes(raw, qtype):
    """The quant codes of Q8_0 / Q4_0 blocks as ggml lays them out (an f16 scale, then int8 bytes
    or 16 bytes of nibbles), read with numpy: the reference for the CLI's code histogram."""
    blocks = np.frombuffer(raw.tobytes(), dtype=np.uint8).reshape(-1, 34 if qtype == "Q8_0" else 18)
    qs = blocks[:, 2:]
    return qs.reshape(-1) if qtype == "Q8_0" else np.concatenate([qs & 0xF, qs >> 4], axis=None)


def test_the_summary_groups_a_gguf_by_block_type_with_numpys_code_entropy(tmp_path, minilm):
    """Q8_0, Q4_0, F16 and F32 tensors in one GGUF: `summary.by_dtype` has one entry per block
    type (not one U8 for all), each with the tensors, bytes and the entropy of all its codes that
    numpy computes from the blocks gguf-py wrote; plain entries keep their old keys only."""
    names = list(minilm)
    types = {names[0]: "Q8_0", names[2]: "Q8_0", names[4]: "Q4_0"}
    raws = {k: raw for k, (_, raw) in write_gguf(tmp_path / "mix.gguf", minilm, types).items()}
    report = run_json("inspect", tmp_path / "mix.gguf")
    groups = {d.get("element_type", d["dtype"]): d for d in report["summary"]["by_dtype"]}
    assert list(groups) == ["Q4_0", "Q8_0", "F32", "I64"]
    [f] = report["files"]
    assert f["summary"]["by_dtype"] == report["summary"]["by_dtype"]
    for qtype, bits in (("Q8_0", 8), ("Q4_0", 4)):
        mine = [k for k in names if types.get(k) == qtype]
        g = groups[qtype]
        assert g["dtype"] == "U8" and g["tensors"] == len(mine)
        assert g["bytes"] == sum(raws[k].nbytes for k in mine)
        assert g["params"] == sum(minilm[k].size for k in mine)
        hist = np.bincount(np.concatenate([codes(raws[k], qtype) for k in mine]), minlength=2**bits)
        assert g["code_bits"] == bits
        assert g["code_entropy"] == pytest.approx(code_entropy(hist), rel=1e-12)
    plain = {"dtype", "tensors", "params", "bytes", "predicted_bytes", "lanes", "bit_set_counts",
             "bit_set_ratio", "byte_group_entropy", "exponent_entropy"}
    assert set(groups["F32"]) == plain and set(groups["I64"]) == plain
    # The table names the block types in the summary rows too.
    text = run("inspect", tmp_path / "mix.gguf").stdout
    assert re.search(r"\n\s+Q8_0\s+2 tensors", text) and f"H code {groups['Q4_0']['code_entropy']:.3f} of 4 bits" in text


def test_a_directory_of_other_formats_gives_each_checkpoint_told_by_first_bytes(tmp_path, weights):
    """`inspect DIR` on a folder without safetensors: every GGUF, PyTorch and NumPy file is a
    checkpoint, whatever its name (a .pt named `.dat`, an .npy named `.bin`), reported as when
    inspected alone; other files are skipped; `diff` asks for one of them. A folder of
    safetensors files keeps ignoring its other files (a hostile `training_args.bin`)."""
    d = tmp_path / "mixed"
    d.mkdir()
    (d / "model.gguf").write_bytes((ROOT / "tests/fixtures/gguf/q4_k.gguf").read_bytes())
    (d / "weights.dat").write_bytes((TORCH / "state_f16.pt").read_bytes())
    np.save(d / "arr.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
    (d / "arr.npy").rename(d / "arr.bin")
    (d / "config.json").write_text("{}")
    (d / "README.md").write_text("# notes\n")
    report = run_json("inspect", d)
    assert [pathlib.Path(f["path"]).name for f in report["files"]] == ["arr.bin", "model.gguf", "weights.dat"]
    assert [f["format"] for f in report["files"]] == ["npy", "gguf", "zip"]
    for f in report["files"]:
        [alone] = run_json("inspect", f["path"])["files"]
        if f["format"] == "npy":
            # The .npy files of a directory are one checkpoint: arrays named by file name
            # (without `.npy`), not `array`.
            assert [t["name"] for t in f["tensors"]] == ["arr.bin"]
            alone["tensors"][0]["name"] = "arr.bin"
        assert f == alone, f["path"]
    assert report["summary"]["tensors"] == sum(len(f["tensors"]) for f in report["files"])
    proc = run("diff", d, d, check=False)
    assert proc.returncode == 1
    assert "holds 3 checkpoints (arr.bin, model.gguf, weights.dat); name one" in proc.stderr
    # Nothing a reader knows: said so.
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_text("{}")
    proc = run("inspect", empty, check=False)
    assert proc.returncode == 1 and "no checkpoint in directory" in proc.stderr
    # An HF folder: its safetensors only, the pickle never read.
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "model.safetensors").write_bytes((weights / "minilm-bf16.safetensors").read_bytes())
    (hf / "training_args.bin").write_bytes((TORCH / "hostile" / "os_system.pt").read_bytes())
    [f] = run_json("inspect", hf)["files"]
    assert pathlib.Path(f["path"]).name == "model.safetensors"


def test_a_directory_of_npy_files_is_one_checkpoint_named_by_stem(tmp_path, minilm):
    """As numpy.savez names an .npz's members: `inspect DIR` of .npy files is one checkpoint whose
    tensors are the file stems, with numpy's values; `diff` of two such directories matches them by
    stem and counts numpy's changes."""
    names = ["encoder.layer.0.attention.self.query.weight", "embeddings.word_embeddings.weight"]
    a, b = tmp_path / "step-1", tmp_path / "step-2"
    a.mkdir()
    b.mkdir()
    changed = {}
    for i, name in enumerate(names):
        arr = minilm[name]
        np.save(a / f"{name}.npy", arr)
        other = arr.copy()
        other.reshape(-1)[:: 7 + i] += 1.0
        changed[name] = int(np.count_nonzero(other != arr))
        np.save(b / f"{name}.npy", other)
    (a / "notes.txt").write_text("x")
    report = run_json("inspect", a)
    assert len(report["files"]) == 2 and report["summary"]["tensors"] == 2
    got = {t["name"]: t for f in report["files"] for t in f["tensors"]}
    assert sorted(got) == sorted(names)
    for name in names:
        assert got[name]["shape"] == list(minilm[name].shape)
        assert got[name]["values"]["max"] == pytest.approx(float(minilm[name].max()))
    diff = run_json("diff", a, b)
    assert not diff["only_in_a"] and not diff["only_in_b"] and not diff["mismatched"]
    for t in diff["tensors"]:
        assert t["changed_lanes"] == changed[t["name"]], t["name"]


def test_diff_of_deflated_npz_members_and_torch_views_counts_numpys_changes():
    """The lockstep diff (deflated `.npz` members, PyTorch views) against numpy's element-wise
    comparison of the same arrays (make_pair_fixtures.py made the B side)."""
    fx = ROOT / "tests" / "fixtures"
    a_path, b_path = fx / "numpy" / "minilm_compressed.npz", fx / "numpy" / "minilm_compressed_b.npz"
    diff = run_json("diff", a_path, b_path)
    a, b = np.load(a_path), np.load(b_path)
    by_name = {t["name"]: t for t in diff["tensors"]}
    assert list(by_name) == list(a.files)
    for k in a.files:
        va, vb = a[k], b[k]
        if va.dtype == np.complex64:  # two F32 lanes per element
            va, vb = va.view(np.float32), vb.view(np.float32)
        bits = np.dtype(f"u{va.dtype.itemsize}")
        changed = int(np.count_nonzero(va.view(bits) != vb.view(bits)))
        assert by_name[k]["changed_lanes"] == changed, k
    assert diff["overall"]["changed_lanes"] > 0
    # Views: `transposed` is base.T and `column` base[:, 3] of the first storage.
    diff = run_json("diff", fx / "torch" / "views.pt", fx / "torch" / "views_b.pt")
    by_name = {t["name"]: t for t in diff["tensors"]}
    storage = []
    for p in (fx / "torch" / "views.pt", fx / "torch" / "views_b.pt"):
        with zipfile.ZipFile(p) as z:
            storage.append(np.frombuffer(z.read("views/data/0"), dtype="<f4").view(np.uint32))
    base_a, base_b = (s[:16 * 24].reshape(16, 24) for s in storage)
    assert by_name["base"]["changed_lanes"] == int(np.count_nonzero(base_a != base_b))
    assert by_name["transposed"]["changed_lanes"] == int(np.count_nonzero(base_a.T != base_b.T))
    assert by_name["transposed"]["lanes"] == 384
    assert by_name["column"]["changed_lanes"] == int(np.count_nonzero(base_a[:, 3] != base_b[:, 3]))
    assert by_name["base"]["changed_lanes"] > 0
