"""`bitlens.save_file`, `load_file` and `safe_open` with NumPy arrays: round trips over every
dtype bitlens stores that NumPy or ml_dtypes hold (bf16, fp8 included), with NaN / Inf / subnormal
bit patterns, empty tensors and scalars, every codec; the snapshot decompresses to exactly the
file `safetensors.numpy.save_file` writes; `get_tensor` equals the CLI's `decompress --tensor`;
real weights load as safetensors loads them; arrays bitlens cannot store are refused."""
import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load_file as st_load
from safetensors.numpy import save_file as st_save

from conftest import run
from package_helpers import import_bitlens

bitlens = import_bitlens()

# Every dtype an array can hold, by safetensors name.
DTYPES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
    "F16": np.float16, "BF16": ml_dtypes.bfloat16, "U32": np.uint32, "I32": np.int32,
    "F32": np.float32, "C64": np.complex64, "U64": np.uint64, "I64": np.int64,
    "F64": np.float64, "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
    "F8_E4M3FNUZ": ml_dtypes.float8_e4m3fnuz, "F8_E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
    "F8_E8M0": ml_dtypes.float8_e8m0fnu,
}


def is_float(dtype):
    return dtype.kind in "fc" or dtype.name.startswith(("bfloat", "float8"))


def every_pattern(dtype, shape=(3, 5, 7)):
    """An array of `dtype` whose bytes are random, with the special bit patterns of a float
    type first: +0, -0, the smallest subnormal, a negative subnormal, every bit set (a NaN),
    every bit but the sign (a NaN, or the largest value), +Inf and -Inf (NaN where none)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    raw = np.random.default_rng(7).integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
    if dtype == np.bool_:
        raw &= 1
    a = raw.view(dtype).copy()
    if is_float(dtype) and dtype.kind != "c":
        width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
        top = width(1) << width(dtype.itemsize * 8 - 1)
        bits = a.view(width)
        bits[:6] = [0, top, 1, top | width(3), ~width(0), ~top]
        with np.errstate(all="ignore"):
            a[6:8] = np.array([np.inf, -np.inf], np.float32).astype(dtype)
    return a.reshape(shape)


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("codec", ["lmc", "neuzip", "stored", "auto"])
def test_every_dtype_round_trips_bit_for_bit(tmp_path, codec):
    arrays = {f"t.{name}": every_pattern(d) for name, d in DTYPES.items()}
    arrays["empty"] = np.zeros((0, 4), np.float32)
    arrays["scalar"] = np.array(3.5, ml_dtypes.bfloat16)
    path = tmp_path / "all.bls"
    report = bitlens.save_file(arrays, path, metadata={"step": "7"}, codec=codec)
    assert report["output"] == str(path) and report["lossy"] is False
    assert {t["name"] for t in report["tensors"]} == set(arrays)
    loaded = bitlens.load_file(path)
    assert set(loaded) == set(arrays)
    for name, a in arrays.items():
        assert same_bits(loaded[name], a), name
        assert loaded[name].flags.writeable and loaded[name].flags.c_contiguous
    with bitlens.safe_open(path) as f:
        assert f.keys() == sorted(arrays)
        assert f.metadata() == {"step": "7"}
        for name, a in arrays.items():
            assert same_bits(f.get_tensor(name), a), name


@pytest.mark.parametrize("metadata", [None, {"format": "np"}])
def test_the_snapshot_holds_the_file_safetensors_writes(tmp_path, metadata):
    arrays = {name.lower(): every_pattern(d, (4, 5)) for name, d in DTYPES.items()}
    arrays["empty"] = np.zeros((2, 0), np.int16)
    arrays["scalar"] = np.array(1.5, np.float64)
    reference = tmp_path / "ref.safetensors"
    st_save(arrays, str(reference), metadata=metadata)
    bitlens.save_file(arrays, tmp_path / "x.bls", metadata=metadata)
    bitlens.decompress_file(tmp_path / "x.bls", tmp_path / "x.safetensors")
    assert (tmp_path / "x.safetensors").read_bytes() == reference.read_bytes()
    run("decompress", tmp_path / "x.bls", "-o", tmp_path / "cli.safetensors")
    assert (tmp_path / "cli.safetensors").read_bytes() == reference.read_bytes()


def test_real_weights_load_as_safetensors_loads_them(weights, tmp_path):
    for dtype in ("f32", "f16"):
        path = weights / f"minilm-{dtype}.safetensors"
        want = st_load(str(path))
        snap = tmp_path / f"{dtype}.bls"
        run("compress", path, "-o", snap)
        for source in (path, snap):
            got = bitlens.load_file(source)
            assert list(got) == list(want) or set(got) == set(want)
            for name, a in want.items():
                assert same_bits(got[name], a), (source, name)


def test_get_tensor_equals_decompress_tensor(weights, tmp_path):
    path = weights / "minilm-bf16.safetensors"
    snap = tmp_path / "m.bls"
    run("compress", path, "-o", snap, "--codec", "neuzip")
    name = "encoder.layer.3.attention.self.key.weight"
    run("decompress", snap, "--tensor", name, "-o", tmp_path / "one.safetensors")
    want = st_load(str(tmp_path / "one.safetensors"))[name]
    with bitlens.safe_open(snap) as f:
        got = f.get_tensor(name)
    assert got.dtype == ml_dtypes.bfloat16
    assert same_bits(got, want)
    with bitlens.safe_open(path) as f:
        assert same_bits(f.get_tensor(name), want)


def test_lossy_codecs_report_their_error(tmp_path):
    w = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    report = bitlens.save_file({"w": w}, tmp_path / "k3.bls", codec="neuzip", mantissa_bits=3)
    assert report["lossy"] and report["tensors"][0]["error"]["max_rel"] <= 2.0 ** -3
    back = bitlens.load_file(tmp_path / "k3.bls")["w"]
    assert np.max(np.abs(back - w) / np.abs(w)) <= 2.0 ** -3


def test_deltas_need_their_base(tmp_path):
    a = {"w": np.arange(1000, dtype=np.float32)}
    bitlens.save_file(a, tmp_path / "a.bls")
    bitlens.decompress_file(tmp_path / "a.bls", tmp_path / "a.safetensors")
    b = {"w": a["w"].copy()}
    b["w"][7] = -1
    report = bitlens.save_file(b, tmp_path / "b.bls", codec="bitsnap", base=tmp_path / "a.safetensors")
    assert report["tensors"][0]["delta"] and report["tensors"][0]["codec"] == "bitsnap"
    got = bitlens.load_file(tmp_path / "b.bls", base=tmp_path / "a.safetensors")
    assert same_bits(got["w"], b["w"])
    with pytest.raises(bitlens.UsageError, match="base"):
        bitlens.load_file(tmp_path / "b.bls")


def test_arrays_are_copied_to_c_order_and_little_endian(tmp_path):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    arrays = {"t": base.T, "strided": base[:, ::2], "be": base.astype(">f4")}
    bitlens.save_file(arrays, tmp_path / "c.bls")
    got = bitlens.load_file(tmp_path / "c.bls")
    np.testing.assert_array_equal(got["t"], base.T)
    np.testing.assert_array_equal(got["strided"], base[:, ::2])
    assert got["be"].dtype == np.float32
    np.testing.assert_array_equal(got["be"], base)


def test_what_bitlens_cannot_store_is_refused(tmp_path):
    with pytest.raises(bitlens.UsageError, match="complex128"):
        bitlens.save_file({"z": np.zeros(2, np.complex128)}, tmp_path / "z.bls")
    with pytest.raises(bitlens.UsageError, match="object"):
        bitlens.save_file({"o": np.array([None, 1])}, tmp_path / "o.bls")
    with pytest.raises(bitlens.UsageError, match="__metadata__"):
        bitlens.save_file({"__metadata__": np.zeros(1)}, tmp_path / "m.bls")
    with pytest.raises(bitlens.UsageError, match=r"--codec bitsnap: .*base"):
        bitlens.save_file({"w": np.zeros(1)}, tmp_path / "b.bls", codec="bitsnap")
    with pytest.raises(bitlens.UsageError, match="inshrink"):
        bitlens.save_file({"w": np.zeros(1)}, tmp_path / "i.bls", codec="inshrink")
    with pytest.raises(bitlens.UsageError, match="unknown codec `zip`"):
        bitlens.save_file({"w": np.zeros(1)}, tmp_path / "u.bls", codec="zip")
    assert not any(tmp_path.iterdir())
