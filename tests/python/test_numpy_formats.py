"""The .npy/.npz readers (bitlens-tensors format::npy, format::npz) against numpy, at test time.

numpy writes real MiniLM tensors (.cache/weights/minilm-{f32,f16}.safetensors, cast to every dtype
bitlens reads) as .npy v1/v2/v3 (C and Fortran order) and as .npz, stored (np.savez) and deflated
(np.savez_compressed); the `format_layout` example of bitlens-tensors prints each file's layout as
JSON (until the CLI reads these formats), and every entry's name, dtype, shape and bytes — read at
the reported range, or inflated from the reported deflate stream with zlib — must equal what numpy
has (`arr.tobytes()`). The committed small fixtures (tests/fixtures/numpy, checked by
`cargo test -p bitlens-tensors --test numpy`) come from make_numpy_fixtures.py.
"""
import json
import subprocess
import warnings
import zlib

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import ROOT
from make_numpy_fixtures import DTYPES, cast

@pytest.fixture(scope="session")
def layout_bin():
    """Builds (if needed) and returns the `format_layout` example."""
    subprocess.run(
        ["cargo", "build", "--quiet", "--release", "-p", "bitlens-tensors", "--example", "format_layout"],
        cwd=ROOT, check=True, timeout=900,
    )
    return ROOT / "target" / "release" / "examples" / "format_layout"


def layouts(layout_bin, *paths):
    out = subprocess.run([str(layout_bin), *map(str, paths)], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.fixture(scope="session")
def minilm(weights):
    return load_file(str(weights / "minilm-f32.safetensors"))


def entry_bytes(raw, data):
    """The bytes of an entry as bitlens reports them, read/inflated here with Python alone."""
    (kind, d), = data.items()
    if kind in ("Range", "Strided"):
        return raw[d["offset"]: d["offset"] + d["len"]]
    assert kind == "Deflated"
    stream = raw[d["offset"]: d["offset"] + d["compressed"]]
    inflated = zlib.decompressobj(-15).decompress(stream, d["skip"] + d["len"])
    return inflated[d["skip"]:]


def check_entry(raw, entry, name, arr):
    assert entry["name"] == name
    assert entry["ty"] == {"Dtype": DTYPES[arr.dtype.name]}, name
    assert entry["shape"] == list(arr.shape), name
    fortran = arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous
    if "Strided" in entry["data"]:
        assert fortran
        strides = entry["data"]["Strided"]["strides"]
        assert strides == [int(np.prod(arr.shape[:i])) for i in range(arr.ndim)]
    assert entry_bytes(raw, entry["data"]) == arr.tobytes(order="F" if fortran else "C"), name


def save_npy(path, arr, version):
    with open(path, "wb") as f, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.lib.format.write_array(f, arr, version=version)


def test_npy_every_dtype_version_and_order(layout_bin, minilm, tmp_path):
    dense = minilm["encoder.layer.0.attention.self.query.weight"]
    files, arrays = [], []
    for dtype in DTYPES:
        for version in [(1, 0), (2, 0), (3, 0)]:
            for order in "CF":
                arr = cast(dense, dtype)
                arr = np.asfortranarray(arr) if order == "F" else arr
                path = tmp_path / f"{dtype}-{version[0]}-{order}.npy"
                save_npy(path, arr, version)
                files.append(path)
                arrays.append(arr)
    # The largest tensor, whole.
    big = minilm["embeddings.word_embeddings.weight"]
    np.save(tmp_path / "word_embeddings.npy", big)
    files.append(tmp_path / "word_embeddings.npy")
    arrays.append(big)
    for path, arr, out in zip(files, arrays, layouts(layout_bin, *files)):
        raw = path.read_bytes()
        assert "layout" in out, out
        layout = out["layout"]
        assert layout["kind"] == f"NumPy .npy v{raw[6]}.0"
        assert layout["file_size"] == len(raw)
        assert dict(layout["metadata"])["npy_version"] == f"{raw[6]}.0"
        (entry,) = layout["entries"]
        check_entry(raw, entry, "array", arr)


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed], ids=["stored", "compressed"])
def test_npz_whole_model(layout_bin, weights, tmp_path, save):
    for source in ["f32", "f16"]:
        tensors = load_file(str(weights / f"minilm-{source}.safetensors"))
        tensors["scalar"] = np.array(1.5, dtype="<f8")
        tensors["empty"] = np.zeros((0, 3), dtype="<i4")
        path = tmp_path / f"minilm-{source}.npz"
        save(path, **tensors)
        raw = path.read_bytes()
        (out,) = layouts(layout_bin, path)
        layout = out["layout"]
        assert layout["kind"] == "NumPy .npz"
        assert dict(layout["metadata"])["compressed"] == (save is np.savez_compressed)
        assert [e["name"] for e in layout["entries"]] == list(tensors)
        for entry, (name, arr) in zip(layout["entries"], tensors.items()):
            assert ("Deflated" in entry["data"]) == (save is np.savez_compressed) or arr.size == 0
            check_entry(raw, entry, name, arr)


def test_npz_every_dtype(layout_bin, minilm, tmp_path):
    x = minilm["encoder.layer.1.output.dense.weight"][:100]
    arrays = {f"t.{d}": cast(x, d) for d in DTYPES}
    for save in [np.savez, np.savez_compressed]:
        path = tmp_path / f"{save.__name__}.npz"
        save(path, **arrays)
        raw = path.read_bytes()
        (out,) = layouts(layout_bin, path)
        for entry, (name, arr) in zip(out["layout"]["entries"], arrays.items(), strict=True):
            check_entry(raw, entry, name, arr)


@pytest.mark.parametrize(
    "arr, words",
    [
        (np.arange(4, dtype=">f4"), ["big-endian", ">f4"]),
        (np.array([None, "x"], dtype=object), ["pickle", "|O"]),
        (np.zeros(3, dtype="V2"), ["void", "V2", "bfloat16"]),
        (np.zeros(3, dtype=[("π", "<f4")]), ["structured"]),
        (np.array(["ab"]), ["unsupported dtype", "<U2"]),
        (np.zeros(2, dtype="c16"), ["unsupported dtype", "<c16"]),
    ],
    ids=["big-endian", "object", "void", "structured-v3", "unicode", "complex128"],
)
def test_what_numpy_writes_and_bitlens_refuses(layout_bin, tmp_path, arr, words):
    path = tmp_path / "x.npy"
    save_npy(path, arr, None)
    (out,) = layouts(layout_bin, path)
    assert "error" in out, out
    for w in words:
        assert w in out["error"], out["error"]
    npz = tmp_path / "x.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.savez(npz, bad=arr)
    (out,) = layouts(layout_bin, npz)
    assert "bad.npy" in out["error"] and words[0] in out["error"], out["error"]
