"""Writes the quantized GGUF benchmark files of issue 28 (scripts/bench-gguf-stats.sh) from the real
MiniLM weights (.cache/weights/minilm-f32.safetensors, 22.7 M values), one file per block type the
reader dequantizes, plus the BF16 GGUF of the same weights as the reference.

Every 2-D MiniLM tensor is written COPIES times (`copy.K.<name>`, default 4: 91 M values, so that a
run at the target speed still lasts a few tenths of a second); 1-D tensors (biases, norms) stay F32,
as llama.cpp's quantizer leaves them. A tensor whose rows are not whole blocks of the type (MiniLM's
rows are 384 or 1536 values, K-quant blocks 256) is stored as rows of 768 values.

How the blocks are made:
  * F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, TQ1_0, TQ2_0, MXFP4: gguf-py's `quants.quantize`
    (gguf 0.19.0, llama.cpp's reference quantizers) of the real weights;
  * the others (the K-quants, the IQ grid types, IQ4_NL, IQ4_XS, NVFP4, Q8_K), which gguf-py
    cannot quantize: random codes with real scales. Each block's bytes are seeded random, then its
    f16 scale fields (the offsets of make_gguf_fixtures.F16_FIELDS; IQ1_M's nibble-spread scale;
    Q8_K's f32 `d`; NVFP4's four E4M3 sub-block scales) are set to the real block's max |w|
    divided by the type's largest code magnitude, so the values span the weights' range. The
    statistics pass costs the same for any codes; what it computes is defined for any bytes.

Usage: make_gguf_bench.py OUT_DIR [COPIES]   (files are only written when missing)
"""
import json
import pathlib
import struct
import sys

import numpy as np
from gguf import GGML_QUANT_SIZES, GGUFWriter, quants
from gguf import GGMLQuantizationType as T

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_gguf_fixtures import F16_FIELDS  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
WEIGHTS = ROOT / ".cache" / "weights" / "minilm-f32.safetensors"

QUANTIZED = [T.BF16, T.F16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.TQ1_0, T.TQ2_0, T.MXFP4]
RANDOM_CODES = [T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K, T.IQ4_NL, T.IQ4_XS, T.NVFP4,
                T.IQ1_S, T.IQ1_M, T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS, T.IQ3_S]
# Largest code magnitude per type (value ≈ d · code), so that d = max|w| / it.
CODE_MAX = {T.Q2_K: 3 * 15, T.Q3_K: 4 * 31, T.Q4_K: 15 * 63, T.Q5_K: 31 * 63, T.Q6_K: 32 * 127,
            T.Q8_K: 127, T.IQ4_NL: 127, T.IQ4_XS: 127 * 31, T.NVFP4: 6,
            T.IQ1_S: 1.125 * 15, T.IQ1_M: 1.125 * 15, T.IQ2_XXS: 0.125 * 43 * 15,
            T.IQ2_XS: 0.125 * 43 * 31, T.IQ2_S: 0.125 * 43 * 31, T.IQ3_XXS: 0.25 * 62 * 31,
            T.IQ3_S: 62 * 31}
TYPES = QUANTIZED + RANDOM_CODES


def load_minilm():
    """MiniLM's tensors as f32 arrays, in file order."""
    raw = WEIGHTS.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in sorted(header.items(), key=lambda kv: kv[1].get("data_offsets", [0])[0]
                             if kv[0] != "__metadata__" else -1):
        if name == "__metadata__" or info["dtype"] != "F32":
            continue  # MiniLM's int64 position_ids are not weights
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(info["shape"])
    return out


def rows_for(w, block):
    """`w` as rows of whole blocks: its own shape when its rows are, else rows of 768."""
    if w.shape[-1] % block == 0:
        return w
    return w.reshape(-1, 768)


def f16_bits(x):
    return np.asarray(x, dtype=np.float16).view(np.uint16)


def random_code_blocks(w, qtype, rng):
    """Blocks of `qtype` for `w` (rows of whole blocks): random codes, real scales."""
    block, size = GGML_QUANT_SIZES[qtype]
    blocks = w.reshape(-1, block)
    raw = rng.integers(0, 256, size=(blocks.shape[0], size), dtype=np.uint8)
    d = np.abs(blocks).max(axis=1) / CODE_MAX[qtype]
    if qtype == T.Q8_K:
        raw[:, 0:4] = d.astype("<f4").view(np.uint8).reshape(-1, 4)
    elif qtype == T.NVFP4:
        # E4M3 (bias 7) scale per 16-value sub-block, halved by the reader: 2 · max|w| / 6.
        sub = np.abs(blocks.reshape(-1, 4, 16)).max(axis=2) * 2 / 6
        e = np.clip(np.floor(np.log2(np.maximum(sub, 2.0 ** -6))) + 7, 1, 15).astype(np.uint8)
        raw[:, 0:4] = e << 3
    elif qtype == T.IQ1_M:
        bits = f16_bits(d).astype(np.uint32)
        words = raw[:, 48:56].copy().view("<u2")
        for k in range(4):
            words[:, k] = (words[:, k] & 0x0FFF) | (((bits >> (4 * k)) & 0xF) << 12)
        raw[:, 48:56] = words.view(np.uint8)
    else:
        dbits = f16_bits(d).view(np.uint8).reshape(-1, 2)
        for off in F16_FIELDS[qtype][:1]:
            raw[:, off:off + 2] = dbits
        for off in F16_FIELDS[qtype][1:]:  # a min: a fraction of the scale
            raw[:, off:off + 2] = f16_bits(d * 4).view(np.uint8).reshape(-1, 2)
    return raw.reshape(w.shape[0], -1)


def write(out, qtype, minilm, copies):
    path = out / f"{qtype.name.lower()}.gguf"
    if path.exists():
        return path
    block, _ = GGML_QUANT_SIZES[qtype]
    rng = np.random.default_rng(2800 + int(qtype))
    tensors = []
    for name, w in minilm.items():
        if w.ndim < 2:
            tensors.append((name, np.ascontiguousarray(w), None))
        elif qtype in QUANTIZED:
            data = quants.quantize(rows_for(w, block), qtype)
            tensors.append((name, data, qtype if data.dtype == np.uint8 else None))
        else:
            tensors.append((name, random_code_blocks(rows_for(w, block), qtype, rng), qtype))
    tmp = path.with_suffix(".tmp")
    wr = GGUFWriter(str(tmp), arch="bitlens-bench")
    for k in range(copies):
        for name, data, raw in tensors:
            wr.add_tensor(f"copy.{k}.{name}", data, raw_dtype=raw)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    tmp.rename(path)
    return path


def main(out, copies):
    out.mkdir(parents=True, exist_ok=True)
    minilm = None
    for qtype in TYPES:
        if (out / f"{qtype.name.lower()}.gguf").exists():
            continue
        minilm = minilm if minilm is not None else load_minilm()
        path = write(out, qtype, minilm, copies)
        print(f"{path.name}: {path.stat().st_size / 1e6:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 4)
