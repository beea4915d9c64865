"""Cross-checks of `bitlens inspect` / `bitlens diff` against Python's `safetensors` and numpy.

Files are written by the reference `safetensors` package; every number bitlens reports is recomputed
here independently with numpy.
"""
import json
import struct

import numpy as np
import pytest
from conftest import run, run_json
from safetensors import TensorSpec, safe_open, serialize_file

# ---------------------------------------------------------------- helpers


def write(path, tensors, metadata=None):
    """tensors: name -> (safetensors dtype name, shape, numpy array of the raw storage)."""
    specs, keep = {}, []
    for name, (dtype, shape, arr) in tensors.items():
        arr = np.ascontiguousarray(arr)
        keep.append(arr)
        specs[name] = TensorSpec(dtype=dtype, shape=list(shape), data_ptr=arr.ctypes.data, data_len=arr.nbytes)
    serialize_file(specs, str(path), metadata=metadata)


def raw_header(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8 : 8 + n]), data[8 + n :]


def entropy(values, k=256):
    c = np.bincount(np.asarray(values, dtype=np.int64).ravel(), minlength=k).astype(np.float64)
    c = c[c > 0]
    if c.size == 0:
        return 0.0
    p = c / c.sum()
    return float(-(p * np.log2(p)).sum())


def bit_ratios(raw_bytes, lane):
    b = np.frombuffer(raw_bytes, dtype=np.uint8).reshape(-1, lane)
    bits = np.unpackbits(b, axis=1, bitorder="little")  # byte k's bits at 8k..8k+7
    return bits.mean(axis=0) if len(b) else np.zeros(8 * lane)


def f32_to_bf16(a):
    bits = a.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


RNG = np.random.default_rng(1234)
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-40, 65504.0, 1e30], dtype=np.float32)

# ---------------------------------------------------------------- reading


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    """A file with every dtype Python's safetensors can write, a scalar, an empty tensor, metadata."""
    path = tmp_path_factory.mktemp("zoo") / "zoo.safetensors"
    normal = RNG.normal(0, 0.05, size=(37, 129)).astype(np.float32)
    normal.ravel()[: len(SPECIALS)] = SPECIALS
    with np.errstate(over="ignore"):
        f16 = normal.astype(np.float16)  # 1e30 overflows to inf on purpose
    tensors = {
        "f32": ("float32", normal.shape, normal),
        "f64": ("float64", (5, 7), RNG.normal(size=(5, 7))),
        "f16": ("float16", normal.shape, f16),
        "bf16": ("bfloat16", normal.shape, f32_to_bf16(normal)),
        "f8_e4m3": ("float8_e4m3fn", (300,), RNG.integers(0, 256, 300, dtype=np.uint8)),
        "f8_e5m2": ("float8_e5m2", (300,), RNG.integers(0, 256, 300, dtype=np.uint8)),
        "f8_e4m3fnuz": ("float8_e4m3fnuz", (10,), RNG.integers(0, 256, 10, dtype=np.uint8)),
        "f8_e5m2fnuz": ("float8_e5m2fnuz", (10,), RNG.integers(0, 256, 10, dtype=np.uint8)),
        "f8_e8m0": ("float8_e8m0fnu", (10,), RNG.integers(0, 256, 10, dtype=np.uint8)),
        "f4": ("float4_e2m1fn_x2", (6, 2), RNG.integers(0, 256, 12, dtype=np.uint8)),
        "c64": ("complex64", (3,), (RNG.normal(size=3) + 1j * RNG.normal(size=3)).astype(np.complex64)),
        "i8": ("int8", (50,), RNG.integers(-128, 128, 50, dtype=np.int8)),
        "u8": ("uint8", (50,), RNG.integers(0, 256, 50, dtype=np.uint8)),
        "i16": ("int16", (50,), RNG.integers(-3000, 3000, 50, dtype=np.int16)),
        "u16": ("uint16", (50,), RNG.integers(0, 65535, 50, dtype=np.uint16)),
        "i32": ("int32", (50,), RNG.integers(-(10**6), 10**6, 50, dtype=np.int32)),
        "u32": ("uint32", (50,), RNG.integers(0, 10**9, 50, dtype=np.uint32)),
        "i64": ("int64", (4, 5), np.arange(20, dtype=np.int64) - 7),
        "u64": ("uint64", (3,), np.array([0, 1, 2**40], dtype=np.uint64)),
        "bool": ("bool", (9,), np.array([1, 0, 1, 1, 0, 0, 0, 1, 1], dtype=np.bool_)),
        "scalar": ("float32", (), np.array(3.5, dtype=np.float32)),
        "empty": ("float16", (0, 4), np.zeros((0, 4), dtype=np.float16)),
    }
    write(path, tensors, metadata={"format": "pt", "note": "written by safetensors"})
    return path


def test_names_dtypes_shapes_offsets_match_the_reference(zoo):
    report = run_json("inspect", zoo)
    (f,) = report["files"]
    header, _ = raw_header(zoo)
    assert f["metadata"] == header["__metadata__"]
    assert f["header_len"] == struct.unpack("<Q", open(zoo, "rb").read(8))[0]
    ours = {t["name"]: t for t in f["tensors"]}
    theirs = {k: v for k, v in header.items() if k != "__metadata__"}
    assert set(ours) == set(theirs)
    for name, info in theirs.items():
        t = ours[name]
        assert t["dtype"] == info["dtype"], name
        assert t["shape"] == info["shape"], name
        assert t["data_offsets"] == info["data_offsets"], name
    # safe_open agrees on the dtype names it knows and the shapes
    with safe_open(str(zoo), framework="numpy") as sf:
        assert sorted(sf.keys()) == sorted(theirs)
        assert sf.metadata() == header["__metadata__"]
    offsets = [t["data_offsets"] for t in f["tensors"]]
    assert offsets == sorted(offsets), "reported in offset order"
    assert ours["scalar"]["params"] == 1 and ours["empty"]["params"] == 0
    # 12 bytes of packed FP4: safetensors records the logical shape (6, 4), 24 values
    assert ours["f4"]["dtype"] == "F4" and ours["f4"]["shape"] == [6, 4] and ours["f4"]["params"] == 24


LANES = {"F32": 4, "F64": 8, "F16": 2, "BF16": 2, "C64": 4, "I64": 8, "U64": 8, "I32": 4, "U32": 4, "I16": 2, "U16": 2}


def test_bit_and_byte_statistics_match_numpy(zoo):
    report = run_json("inspect", zoo)
    header, data = raw_header(zoo)
    for t in report["files"][0]["tensors"]:
        s, e = t["data_offsets"]
        raw = data[s:e]
        lane = LANES.get(t["dtype"], 1)
        np.testing.assert_allclose(t["bit_set_ratio"], bit_ratios(raw, lane), atol=1e-12, err_msg=t["name"])
        groups = np.frombuffer(raw, dtype=np.uint8).reshape(-1, lane)
        want = [entropy(groups[:, k]) for k in range(lane)]
        np.testing.assert_allclose(t["byte_group_entropy"], want, atol=1e-9, err_msg=t["name"])
        assert t["byte_entropy"] == pytest.approx(entropy(np.frombuffer(raw, np.uint8)), abs=1e-9)


def exponent_field(t, raw):
    if t["dtype"] == "BF16":
        return (np.frombuffer(raw, np.uint16) >> 7) & 0xFF
    if t["dtype"] == "F16":
        return (np.frombuffer(raw, np.uint16) >> 10) & 0x1F
    if t["dtype"] in ("F32", "C64"):
        return (np.frombuffer(raw, np.uint32) >> 23) & 0xFF
    if t["dtype"] == "F64":
        return (np.frombuffer(raw, np.uint64) >> 52) & 0x7FF
    if t["dtype"] in ("F8_E4M3", "F8_E4M3FNUZ"):
        return (np.frombuffer(raw, np.uint8) >> 3) & 0xF
    if t["dtype"] in ("F8_E5M2", "F8_E5M2FNUZ"):
        return (np.frombuffer(raw, np.uint8) >> 2) & 0x1F
    if t["dtype"] == "F8_E8M0":
        return np.frombuffer(raw, np.uint8)
    return None


def test_exponent_entropy_matches_numpy(zoo):
    report = run_json("inspect", zoo)
    _, data = raw_header(zoo)
    for t in report["files"][0]["tensors"]:
        s, e = t["data_offsets"]
        exp = exponent_field(t, data[s:e])
        if exp is None:
            continue
        assert t["exponent_entropy"] == pytest.approx(entropy(exp, 2048), abs=1e-9), t["name"]


def decoded(t, raw):
    kinds = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I8": np.int8, "U8": np.uint8,
             "I16": np.int16, "U16": np.uint16, "I32": np.int32, "U32": np.uint32, "I64": np.int64,
             "U64": np.uint64, "C64": np.float32, "BOOL": np.uint8}
    if t["dtype"] == "BF16":
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if t["dtype"] in kinds:
        return np.frombuffer(raw, kinds[t["dtype"]]).astype(np.float64)
    return None


def test_value_statistics_match_numpy(zoo):
    report = run_json("inspect", zoo)
    _, data = raw_header(zoo)
    for t in report["files"][0]["tensors"]:
        s, e = t["data_offsets"]
        x = decoded(t, data[s:e])
        if x is None:
            continue
        v = t["values"]
        finite = x[np.isfinite(x)]
        assert v["count"] == x.size, t["name"]
        assert v["nan"] == np.isnan(x).sum(), t["name"]
        assert v["pos_inf"] == np.isposinf(x).sum(), t["name"]
        assert v["neg_inf"] == np.isneginf(x).sum(), t["name"]
        assert v["zeros"] == (finite == 0).sum(), t["name"]
        if finite.size == 0:
            assert v["mean"] is None
            continue
        assert v["min"] == finite.min() and v["max"] == finite.max(), t["name"]
        assert v["mean"] == pytest.approx(finite.mean(), rel=1e-9, abs=1e-12), t["name"]
        assert v["std"] == pytest.approx(finite.std(), rel=1e-9, abs=1e-12), t["name"]
        if v["histogram"] is not None and v["histogram"]["exact"]:
            counts, _ = np.histogram(finite, bins=64, range=(finite.min(), finite.max()))
            # numpy closes the last bin on the right like bitlens does; edges agree to rounding
            assert sum(v["histogram"]["counts"]) == finite.size
            assert np.abs(np.array(v["histogram"]["counts"]) - counts).sum() <= 2, t["name"]


def test_block_entropy_bound_matches_numpy_on_real_weights(weights):
    path = weights / "minilm-bf16.safetensors"
    report = run_json("inspect", path)
    _, data = raw_header(path)
    by_name = {t["name"]: t for t in report["files"][0]["tensors"]}
    t = by_name["embeddings.word_embeddings.weight"]
    s, e = t["data_offsets"]
    groups = np.frombuffer(data[s:e], np.uint8).reshape(-1, 2)
    bits = 0.0
    for k in range(2):
        stream = groups[:, k]
        for start in range(0, stream.size, 65536):
            block = stream[start : start + 65536]
            bits += entropy(block) * block.size
    assert t["block_entropy_bits"] == pytest.approx(bits, rel=1e-9)
    assert t["predicted_bytes"] == int(np.ceil(bits / 8))
    assert len(t["block_entropy"][0]) == -(-groups.shape[0] // 65536)
    # Real bf16 weights: the exponent byte is far more compressible than the mantissa byte.
    assert t["byte_group_entropy"][1] < 3.5 < 7.5 < t["byte_group_entropy"][0]


def test_real_weights_in_all_three_dtypes(weights):
    for dtype, lane in (("f32", 4), ("bf16", 2), ("f16", 2)):
        path = weights / f"minilm-{dtype}.safetensors"
        report = run_json("inspect", path)
        _, data = raw_header(path)
        summary = report["summary"]
        assert summary["tensors"] == 104 and summary["params"] == 22713216 + 512
        for t in report["files"][0]["tensors"][::10]:
            s, e = t["data_offsets"]
            want_lane = 8 if t["dtype"] == "I64" else lane
            np.testing.assert_allclose(t["bit_set_ratio"], bit_ratios(data[s:e], want_lane), atol=1e-12)
            x = decoded(t, data[s:e])
            assert t["values"]["mean"] == pytest.approx(x.mean(), rel=1e-7, abs=1e-9)


# ---------------------------------------------------------------- diff


def test_diff_matches_numpy(tmp_path, weights):
    src = weights / "minilm-bf16.safetensors"
    header, data = raw_header(src)
    rng = np.random.default_rng(7)
    tensors = {}
    changed = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        s, e = info["data_offsets"]
        if info["dtype"] != "BF16":
            tensors[name] = ("int64", info["shape"], np.frombuffer(data[s:e], np.int64))
            continue
        v = np.frombuffer(data[s:e], np.uint16).copy()
        mask = rng.random(v.size) < 0.05
        v[mask] ^= rng.integers(1, 1 << 16, mask.sum(), dtype=np.uint16)
        changed[name] = (np.frombuffer(data[s:e], np.uint16), v)
        tensors[name] = ("bfloat16", info["shape"], v)
    b = tmp_path / "b.safetensors"
    write(b, tensors, metadata=header["__metadata__"])
    report = run_json("diff", src, b)
    assert report["mismatched"] == [] and report["only_in_a"] == [] and report["only_in_b"] == []
    total_changed = total = 0
    for t in report["tensors"]:
        if t["name"] not in changed:
            assert t["changed_lanes"] == 0
            continue
        old, new = changed[t["name"]]
        x = old ^ new
        assert t["changed_lanes"] == int((x != 0).sum()), t["name"]
        ratios = ((x[:, None] >> np.arange(16)) & 1).mean(axis=0)
        np.testing.assert_allclose(t["bit_flip_ratio"], ratios, atol=1e-12)
        total_changed += int((x != 0).sum())
        total += x.size
    overall = report["overall"]
    assert overall["changed_lanes"] == total_changed
    assert overall["changed_fraction"] == pytest.approx(total_changed / (total + 512))
    assert 0.04 < overall["changed_fraction"] < 0.06
    assert overall["bit_flip_ratio"] is None  # BF16 and I64 compared: per dtype only
    (bf16,) = [d for d in overall["by_dtype"] if d["dtype"] == "BF16"]
    assert len(bf16["bit_flip_ratio"]) == 16


def test_diff_reports_mismatches_without_failing(tmp_path):
    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    write(a, {"x": ("float32", (4,), np.ones(4, np.float32)), "y": ("float32", (2,), np.zeros(2, np.float32)),
              "only_a": ("float16", (1,), np.ones(1, np.float16))})
    write(b, {"x": ("float32", (4,), np.array([1, 2, 1, 1], np.float32)), "y": ("float16", (2,), np.zeros(2, np.float16)),
              "only_b": ("uint8", (3,), np.ones(3, np.uint8))})
    report = run_json("diff", a, b)
    assert [t["name"] for t in report["tensors"]] == ["x"]
    assert report["tensors"][0]["changed_fraction"] == 0.25
    assert report["mismatched"] == [{"name": "y", "a": ["F32", [2]], "b": ["F16", [2]]}]
    assert report["only_in_a"] == ["only_a"] and report["only_in_b"] == ["only_b"]
    assert report["overall"]["bit_flip_ratio"] is not None
    table = run("diff", a, b).stdout
    assert "mismatch: `y`" in table and "only in A: `only_a`" in table


# ---------------------------------------------------------------- shards


@pytest.fixture()
def sharded(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    write(d / "model-00001-of-00002.safetensors", {"a": ("float32", (8,), np.arange(8, dtype=np.float32))})
    write(d / "model-00002-of-00002.safetensors", {"b": ("float16", (4,), np.ones(4, np.float16)),
                                                    "c": ("int64", (2,), np.array([1, 2], np.int64))})
    index = {"metadata": {"total_size": 32 + 8 + 16},
             "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors",
                            "c": "model-00002-of-00002.safetensors"}}
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    return d


def test_index_and_directory_resolve_to_the_shards(sharded):
    by_index = run_json("inspect", sharded / "model.safetensors.index.json")
    by_dir = run_json("inspect", sharded)
    for report in (by_index, by_dir):
        names = [t["name"] for f in report["files"] for t in f["tensors"]]
        assert sorted(names) == ["a", "b", "c"] and names[0] == "a"  # shard order, then offsets
        assert report["summary"]["tensors"] == 3 and report["summary"]["params"] == 14
        assert [d["dtype"] for d in report["summary"]["by_dtype"]] == ["F16", "F32", "I64"]


def test_missing_shard_is_one_clear_line(sharded):
    (sharded / "model-00002-of-00002.safetensors").unlink()
    proc = run("inspect", sharded / "model.safetensors.index.json", check=False)
    assert proc.returncode == 1
    assert proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert "model-00002-of-00002.safetensors" in line and "not found" in line


def test_index_naming_a_tensor_its_shard_lacks_is_rejected(sharded):
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    index["weight_map"]["ghost"] = "model-00001-of-00002.safetensors"
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    proc = run("inspect", sharded / "model.safetensors.index.json", check=False)
    assert proc.returncode == 1 and "ghost" in proc.stderr


def test_a_tensor_name_in_two_shards_is_rejected_as_the_page_rejects_it(tmp_path):
    # The page refuses such a checkpoint; inspect used to accept it and diff kept one copy silently.
    d = tmp_path / "dup"
    d.mkdir()
    first, second = d / "model-00001-of-00002.safetensors", d / "model-00002-of-00002.safetensors"
    write(first, {"a": ("float32", (2,), np.ones(2, np.float32))})
    write(second, {"a": ("float32", (2,), np.zeros(2, np.float32)), "b": ("uint8", (1,), np.ones(1, np.uint8))})
    index = d / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": first.name, "b": second.name}}))
    other = tmp_path / "other.safetensors"
    write(other, {"a": ("float32", (2,), np.ones(2, np.float32))})
    for args in (("inspect", d), ("inspect", index), ("diff", d, other), ("diff", other, index)):
        proc = run(*args, check=False)
        assert proc.returncode == 1, args
        assert proc.stdout == "", args
        (line,) = proc.stderr.strip().splitlines()
        assert "tensor `a`" in line and str(first) in line and str(second) in line, (args, line)


# ---------------------------------------------------------------- bad input


def bad_files(tmp_path, weights):
    good = (weights / "minilm-bf16.safetensors").read_bytes()
    n = struct.unpack("<Q", good[:8])[0]
    return {
        "not_safetensors.safetensors": (b"PK\x03\x04 this is a zip file, not a model" * 10, "not a safetensors file"),
        "truncated.safetensors": (good[: 8 + n + 1000], "truncated"),
        "header_beyond_file.safetensors": (good[:500], "runs past the end"),
        "garbage_json.safetensors": (struct.pack("<Q", 11) + b'{"a": [1, 2', "JSON invalid"),
        "tiny.safetensors": (b"\x01\x02", "too small"),
        "duplicate.safetensors": (
            (lambda h: struct.pack("<Q", len(h)) + h + b"\0\0")(
                b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}'
            ),
            "more than once",
        ),
    }


def test_bad_input_gives_one_line_and_exit_1(tmp_path, weights):
    for name, (content, phrase) in bad_files(tmp_path, weights).items():
        p = tmp_path / name
        p.write_bytes(content)
        proc = run("inspect", p, check=False)
        assert proc.returncode == 1, name
        assert proc.stdout == "", name
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, (name, lines)
        assert name in lines[0] and phrase in lines[0], (name, lines[0])
        assert "panicked" not in proc.stderr and "backtrace" not in proc.stderr.lower()
