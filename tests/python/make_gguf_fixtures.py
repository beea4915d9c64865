"""Writes the GGUF cross-check fixtures (tests/fixtures/gguf/) with the reference `gguf` package
(gguf-py 0.19.0, llama.cpp's Python reader/writer), from real MiniLM weights.

For every ggml type gguf-py can dequantize, `<type>.gguf` holds up to two tensors:
  * `real`: a slice of a MiniLM tensor quantized by gguf-py's `quants.quantize` (for the types
    it can quantize: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, TQ1_0, TQ2_0, MXFP4);
  * `random`: seeded random blocks (dequantization is defined for any bytes) — half of them with
    their f16 scale fields replaced by ordinary scales, half left random (NaN/Inf scales too).
`<type>.f32` is gguf-py's `dequantize` of each tensor's bytes, concatenated in file order, as
little-endian f32: the Rust tests compare every value bit for bit (`format::gguf::tests`).
`metadata.gguf` has a key/value of every type (nested arrays too), a custom alignment and the
plain tensor types; `v2.gguf` is it with the version field set to 2. `expected.json` is what
gguf-py's `GGUFReader` reads from every file (floats as their bit patterns, so that no decimal
round trip is involved).

    python3 -m venv /tmp/v13g && /tmp/v13g/bin/pip install gguf==0.19.0
    /tmp/v13g/bin/python tests/python/make_gguf_fixtures.py [OUT_DIR]

tests/python/test_gguf.py regenerates them into a temporary directory and requires identical bytes.
"""
import json
import pathlib
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGML_QUANT_SIZES, GGUFReader, GGUFValueType, GGUFWriter, quants

ROOT = pathlib.Path(__file__).resolve().parents[2]
WEIGHTS = ROOT / ".cache" / "weights" / "minilm-f32.safetensors"

QUANTIZABLE = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.TQ1_0, T.TQ2_0, T.MXFP4]
RANDOM_ONLY = [T.NVFP4, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ2_XXS, T.IQ2_XS, T.IQ2_S,
               T.IQ3_XXS, T.IQ3_S, T.IQ1_S, T.IQ1_M, T.IQ4_NL, T.IQ4_XS]

# Byte offsets of each type's f16 scale fields within a block (IQ1_M's scale is spread over
# the top nibbles of its last four u16s and is handled apart).
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0], T.Q2_K: [80, 82],
    T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208], T.IQ2_XXS: [0], T.IQ2_XS: [0],
    T.IQ2_S: [0], T.IQ3_XXS: [0], T.IQ3_S: [0], T.IQ1_S: [0], T.IQ4_NL: [0], T.IQ4_XS: [0],
    T.TQ1_0: [52], T.TQ2_0: [64],
}


def load_minilm():
    with open(WEIGHTS, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n

        def tensor(name):
            info = header[name]
            a, b = info["data_offsets"]
            f.seek(base + a)
            return np.frombuffer(f.read(b - a), dtype="<f4").reshape(info["shape"])

        return {
            "q": tensor("encoder.layer.0.attention.self.query.weight")[:2],  # (2, 384)
            "ffn": tensor("encoder.layer.0.output.dense.weight")[:1],  # (1, 1536)
        }


def random_blocks(rng, qtype, n_blocks):
    block, size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    sane = n_blocks // 2  # the first half gets ordinary scales
    scales = (rng.uniform(1e-4, 0.05, size=(sane, 4)) * rng.choice([-1, 1], size=(sane, 4))).astype(np.float16)
    for i in range(sane):
        for j, off in enumerate(F16_FIELDS.get(qtype, [])):
            raw[i, off:off + 2] = np.frombuffer(scales[i, j].tobytes(), dtype=np.uint8)
        if qtype == T.IQ1_M:
            bits = int(scales[i, 0].view(np.uint16))
            words = raw[i, 48:56].view("<u2").copy()
            for k in range(4):
                words[k] = (words[k] & 0x0FFF) | (((bits >> (4 * k)) & 0xF) << 12)
            raw[i, 48:56] = words.view(np.uint8)
        if qtype == T.MXFP4:
            raw[i, 0] = rng.integers(110, 135)
    return raw


def write_type_file(out, qtype, minilm, rng):
    block, size = GGML_QUANT_SIZES[qtype]
    path = out / f"{qtype.name.lower()}.gguf"
    w = GGUFWriter(str(path), arch="bitlens-test")
    if qtype in QUANTIZABLE:
        src = minilm["ffn"] if block == 256 else minilm["q"]
        data = quants.quantize(src, qtype)
        w.add_tensor("real", data, raw_dtype=qtype if data.dtype == np.uint8 else None)
    # 4 dims; bytes shaped (1, 3, 1, 2 blocks): GGUF dims ne = [2 · block, 1, 3, 1].
    raw = random_blocks(rng, qtype, 6)
    w.add_tensor("random", raw.reshape(1, 3, 1, 2 * size), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_metadata_file(out):
    path = out / "metadata.gguf"
    w = GGUFWriter(str(path), arch="bitlens-test")
    w.add_custom_alignment(64)
    V = GGUFValueType
    w.add_key_value("t.u8", 200, V.UINT8)
    w.add_key_value("t.i8", -100, V.INT8)
    w.add_key_value("t.u16", 60000, V.UINT16)
    w.add_key_value("t.i16", -30000, V.INT16)
    w.add_key_value("t.u32", 4_000_000_000, V.UINT32)
    w.add_key_value("t.i32", -2_000_000_000, V.INT32)
    w.add_key_value("t.f32", 0.1, V.FLOAT32)
    w.add_key_value("t.bool", True, V.BOOL)
    w.add_key_value("t.string", "héllo ✓ GGUF", V.STRING)
    w.add_key_value("t.u64", 2**63 + 5, V.UINT64)
    w.add_key_value("t.i64", -(2**62), V.INT64)
    w.add_key_value("t.f64", -1.0e-300, V.FLOAT64)
    w.add_key_value("t.empty_string", "", V.STRING)
    for name, vt, vals in [
        ("u8", V.UINT8, [0, 1, 255]), ("i8", V.INT8, [-128, 0, 127]), ("u16", V.UINT16, [0, 65535]),
        ("i16", V.INT16, [-32768, 32767]), ("u32", V.UINT32, [0, 2**32 - 1]), ("i32", V.INT32, [-(2**31), 2**31 - 1]),
        ("f32", V.FLOAT32, [1.5, -0.0, 3.4e38, 1e-45]), ("bool", V.BOOL, [True, False, True]),
        ("string", V.STRING, ["a", "", "ünïcode"]), ("u64", V.UINT64, [0, 2**64 - 1]),
        ("i64", V.INT64, [-(2**63), 2**63 - 1]), ("f64", V.FLOAT64, [np.pi, -np.inf, 5e-324]),
    ]:
        w.add_key_value(f"a.{name}", vals, V.ARRAY, sub_type=vt)
    w.add_key_value("a.nested", [[1, 2], [3], [4, 5, 6]], V.ARRAY)
    w.add_key_value("a.nested_strings", [["x", "y"], ["z"]], V.ARRAY)
    rng = np.random.default_rng(7)
    w.add_tensor("f32.1d", rng.normal(size=7).astype(np.float32))
    w.add_tensor("f16.2d", rng.normal(size=(3, 5)).astype(np.float16))
    w.add_tensor("i8.3d", rng.integers(-128, 128, size=(2, 3, 4), dtype=np.int8))
    w.add_tensor("i16.4d", rng.integers(-1000, 1000, size=(2, 1, 3, 2), dtype=np.int16))
    w.add_tensor("i32", rng.integers(-(2**31), 2**31, size=(5,), dtype=np.int32))
    w.add_tensor("i64", rng.integers(-(2**62), 2**62, size=(2, 2), dtype=np.int64))
    w.add_tensor("f64", rng.normal(size=(3,)).astype(np.float64))
    w.add_tensor("empty", np.zeros((0, 4), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def typed(vtype, value):
    """A value in the JSON's typed form: floats as their bit patterns."""
    if vtype == GGUFValueType.FLOAT32:
        return struct.unpack("<I", struct.pack("<f", value))[0]
    if vtype == GGUFValueType.FLOAT64:
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    if vtype == GGUFValueType.BOOL:
        return bool(value)
    return value


def describe(path):
    """What GGUFReader reads from `path`."""
    r = GGUFReader(str(path))
    kvs = []
    for field in r.fields.values():
        if field.name.startswith("GGUF."):
            continue
        types = [int(t) for t in field.types]
        contents = field.contents()
        leaf = field.types[-1]
        if field.types[0] == GGUFValueType.ARRAY:
            value = [typed(leaf, v) for v in contents]  # nested arrays come flattened
        else:
            value = typed(leaf, contents)
        kvs.append({"key": field.name, "offset": int(field.offset), "types": types, "value": value})
    tensors = []
    for t in r.tensors:
        tensors.append({
            "name": t.name, "type": int(t.tensor_type), "dims": [int(d) for d in t.shape],
            "n_elements": int(t.n_elements), "n_bytes": int(t.n_bytes), "data_offset": int(t.data_offset),
        })
    version = int(r.fields["GGUF.version"].parts[0][0])
    return r, {"version": version, "alignment": int(r.alignment), "data_offset": int(r.data_offset),
               "file_size": path.stat().st_size, "kvs": kvs, "tensors": tensors}


def main(out):
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1313)
    minilm = load_minilm()
    files = {}
    for qtype in QUANTIZABLE + RANDOM_ONLY:
        path = write_type_file(out, qtype, minilm, rng)
        r, desc = describe(path)
        values = [quants.dequantize(t.data, t.tensor_type).astype("<f4").reshape(-1) for t in r.tensors]
        for d, v in zip(desc["tensors"], values):
            d["dequantized"] = int(v.size)
        (out / f"{qtype.name.lower()}.f32").write_bytes(np.concatenate(values).tobytes())
        files[path.name] = desc
    meta = write_metadata_file(out)
    files[meta.name] = describe(meta)[1]
    v2 = out / "v2.gguf"
    data = bytearray(meta.read_bytes())
    data[4:8] = struct.pack("<I", 2)
    v2.write_bytes(bytes(data))
    files[v2.name] = describe(v2)[1]
    (out / "expected.json").write_text(json.dumps(files, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "fixtures" / "gguf")
