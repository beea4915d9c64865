"""Writes the second checkpoint of the compare fixtures: a perturbed copy of a deflated `.npz` and
of a PyTorch zip whose tensors are views, so that `bitlens diff` and the page's Compare view have
deflated members and strided views with real changes to compare.

  * `numpy/minilm_compressed_b.npz`: `numpy/minilm_compressed.npz` with a seeded 10 % of every
    array's elements changed (floats: scaled by 1 + N(0, 1e-3); integers: +1; booleans: negated),
    written deflated by `np.savez_compressed` like the original.
  * `torch/views_b.pt`: `torch/views.pt` with a seeded 10 % of the float32 elements of its first
    storage (`base`, which `transposed` and `column` view) scaled the same way, patched in place
    (the member is stored, not deflated) and its CRC-32 updated in the local and central headers,
    so torch's zip layout (alignment padding, member order) stays the same — no torch needed.

    .venv/bin/python tests/python/make_pair_fixtures.py [OUT_DIR]

The values are reproducible (seeded); the `.npz`'s zip timestamps are not, so the committed files
are the reference.
"""
import pathlib
import struct
import sys
import zipfile
import zlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def perturb(a, rng):
    """A copy of `a` with a seeded 10 % of its elements changed."""
    out = a.copy()
    flat = out.reshape(-1)
    if flat.size == 0:
        return out
    pick = rng.random(flat.size) < 0.1
    if out.dtype == np.bool_:
        flat[pick] = ~flat[pick]
    elif np.issubdtype(out.dtype, np.integer):
        flat[pick] = flat[pick] + np.array(1, dtype=out.dtype)
    else:
        noise = rng.normal(0.0, 1e-3, flat.size).astype(np.float64)
        flat[pick] = (flat[pick] * (1.0 + noise[pick])).astype(out.dtype)
    return out


def npz(out_dir, rng):
    src = np.load(FIXTURES / "numpy" / "minilm_compressed.npz")
    arrays = {k: perturb(src[k], rng) for k in src.files}
    np.savez_compressed(out_dir / "numpy" / "minilm_compressed_b.npz", **arrays)


def torch_views(out_dir, rng):
    path = FIXTURES / "torch" / "views.pt"
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("views/data/0")
        assert info.compress_type == zipfile.ZIP_STORED
        name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
        start = info.header_offset + 30 + name_len + extra_len
        values = np.frombuffer(bytes(data[start:start + info.file_size]), dtype="<f4")
        values = perturb(values, rng)
        data[start:start + info.file_size] = values.tobytes()
        crc = zlib.crc32(values.tobytes())
        # Local header CRC, then the central directory entry's.
        struct.pack_into("<I", data, info.header_offset + 14, crc)
        pos = z.start_dir
        while pos < len(data) and data[pos:pos + 4] == b"PK\x01\x02":
            n, e, c = struct.unpack_from("<HHH", data, pos + 28)
            if bytes(data[pos + 46:pos + 46 + n]) == b"views/data/0":
                struct.pack_into("<I", data, pos + 16, crc)
            pos += 46 + n + e + c
    (out_dir / "torch" / "views_b.pt").write_bytes(bytes(data))


def main():
    out_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURES
    for sub in ("numpy", "torch"):
        (out_dir / sub).mkdir(parents=True, exist_ok=True)
    npz(out_dir, np.random.default_rng(13))
    torch_views(out_dir, np.random.default_rng(14))


if __name__ == "__main__":
    main()
