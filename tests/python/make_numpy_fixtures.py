"""Writes tests/fixtures/numpy/: small .npy/.npz files made by numpy from real MiniLM tensors
(slices of .cache/weights/minilm-f32.safetensors cast to every dtype bitlens reads), files numpy
writes that bitlens refuses, and expected.json — what crates/tensors/tests/numpy.rs checks the
readers against (entry names, dtypes, shapes, Fortran order, and the CRC-32 of each array's bytes as
numpy lays them out, or the error variant).

Run with the repo's venv (numpy + safetensors): `.venv/bin/python tests/python/make_numpy_fixtures.py`.
The .npz files carry the time they were written (zip timestamps), so rerunning changes their bytes
but not expected.json. tests/python/test_numpy_formats.py checks the same readers against numpy at test time on whole
MiniLM tensors.
"""
import io
import json
import pathlib
import warnings
import zlib

import numpy as np
from safetensors.numpy import load_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "numpy"
WEIGHTS = ROOT / ".cache" / "weights" / "minilm-f32.safetensors"

# numpy dtype -> bitlens Dtype name.
DTYPES = {
    "float16": "F16", "float32": "F32", "float64": "F64", "bool": "BOOL", "int8": "I8",
    "uint8": "U8", "int16": "I16", "uint16": "U16", "int32": "I32", "uint32": "U32",
    "int64": "I64", "uint64": "U64", "complex64": "C64",
}


def cast(x, dtype):
    """A float tensor as `dtype`: floats cast, ints scaled to use their range, bools by sign."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return x.astype(dtype)
    if dtype.kind == "c":
        return (x + 1j * x[::-1]).astype(dtype)
    if dtype.kind == "b":
        return x > 0
    info = np.iinfo(dtype)
    x = x.astype(np.float64)
    scaled = x / (np.abs(x).max() or 1) * (min(info.max, 2**40) * 0.99)
    if info.min == 0:
        scaled = np.abs(scaled)
    return scaled.astype(dtype)


def expected_entry(name, arr):
    fortran = bool(arr.flags.f_contiguous and not arr.flags.c_contiguous)
    return {
        "name": name,
        "dtype": DTYPES[arr.dtype.name],
        "shape": list(arr.shape),
        "fortran_order": fortran,
        "crc32": zlib.crc32(arr.tobytes(order="F" if fortran else "C")),
    }


def npy_bytes(arr, version=None):
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.lib.format.write_array(buf, arr, version=version, allow_pickle=True)
    return buf.getvalue()


def main():
    t = load_file(str(WEIGHTS))
    pos = t["embeddings.position_embeddings.weight"]  # (512, 384)
    dense = t["encoder.layer.0.attention.output.dense.weight"]  # (384, 384)
    bias = t["embeddings.LayerNorm.bias"]  # (384,)
    OUT.mkdir(parents=True, exist_ok=True)
    expected = {}

    def put(name, data, value):
        (OUT / name).write_bytes(data)
        expected[name] = value
        assert len(data) <= 200_000, (name, len(data))

    # .npy: one per version, a Fortran-ordered one, a scalar, an empty array.
    for fname, arr, version in [
        ("minilm_f32_v1.npy", pos[:32, :64], (1, 0)),
        ("minilm_f16_v2.npy", cast(dense[:48, :96], "f2"), (2, 0)),
        ("minilm_u8_v3.npy", cast(bias, "u1"), (3, 0)),
        ("minilm_f64_fortran.npy", np.asfortranarray(cast(dense[:16, :24], "f8")), None),
        ("scalar_i4.npy", np.array(7, dtype="<i4"), None),
        ("empty_f4.npy", np.zeros((0, 5), dtype="<f4"), None),
    ]:
        data = npy_bytes(np.asarray(arr) if not arr.flags.f_contiguous or arr.ndim < 2 else arr, version)
        v = data[6]
        put(fname, data, {
            "kind": f"NumPy .npy v{v}.0",
            "entries": [expected_entry("array", arr)],
        })

    # .npz: every dtype, stored and deflated, plus a scalar, an empty and (stored) a Fortran array.
    arrays = {
        f"encoder.dense.{np.dtype(d).name}": cast(dense[: 8 + i, :40], d)
        for i, d in enumerate(DTYPES)
    }
    arrays["embeddings.LayerNorm.bias"] = bias
    arrays["scalar"] = np.array(3.5, dtype="<f8")
    arrays["empty"] = np.zeros((2, 0), dtype="<i2")
    for fname, save in [("minilm_stored.npz", np.savez), ("minilm_compressed.npz", np.savez_compressed)]:
        items = dict(arrays)
        if save is np.savez:
            items["fortran"] = np.asfortranarray(cast(pos[:12, :10], "f4"))
        buf = io.BytesIO()
        save(buf, **items)
        put(fname, buf.getvalue(), {
            "kind": "NumPy .npz",
            "entries": [expected_entry(k, v) for k, v in items.items()],
        })

    # What numpy writes and bitlens refuses, with the error variant expected.
    refused = [
        ("big_endian.npy", npy_bytes(bias[:8].astype(">f4")), "BigEndian"),
        ("object_pickle.npy", npy_bytes(np.array(["a", None], dtype=object)), "Pickle"),
        ("void_v2.npy", npy_bytes(np.zeros(4, dtype="V2")), "Void"),
        ("unicode.npy", npy_bytes(np.array(["ab", "c"])), "UnsupportedDtype"),
        ("complex128.npy", npy_bytes(bias[:4].astype("c16")), "UnsupportedDtype"),
        ("structured_v3.npy", npy_bytes(np.zeros(3, dtype=[("π", "<f4")])), "Structured"),
    ]
    buf = io.BytesIO()
    np.savez_compressed(buf, f=np.asfortranarray(pos[:4, :6]))
    refused.append(("fortran_compressed.npz", buf.getvalue(), "FortranDeflated"))
    for fname, data, variant in refused:
        put(fname, data, {"error": variant})

    (OUT / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    print(f"wrote {len(expected)} fixtures to {OUT}")


if __name__ == "__main__":
    main()
