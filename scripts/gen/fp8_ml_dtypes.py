"""Generates `fp8_ml_dtypes.txt`, the fp8 reference the anatomy tests read (`fp8_matches_ml_dtypes`):
every fp8 pattern's value as `ml_dtypes` decodes it, and how `ml_dtypes` rounds every tie between
neighbours, the values next to them, overflow and random values (ml_dtypes and numpy pinned in
tests/python/requirements.txt).

    .venv/bin/python scripts/gen/fp8_ml_dtypes.py crates/codecs/src/anatomy/fp8_ml_dtypes.txt

Without a path it writes the table to stdout. tests/python/test_generated_tables.py regenerates it
and compares it with the checked-in file.
"""
import sys

import ml_dtypes
import numpy as np
from emit import emit

FORMATS = (("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2))


def render():
    """The whole table: a two-line header, then `decode` and `encode` lines per format."""
    rng = np.random.default_rng(14)
    out = [
        "# fp8 reference from ml_dtypes %s (numpy %s), by scripts/gen/fp8_ml_dtypes.py:"
        % (ml_dtypes.__version__, np.__version__),
        "# `decode <fmt> <u8 hex> <f64 bits hex>` for all 256 patterns, `encode <fmt> <f64 bits hex> <u8 hex>` for inputs.",
    ]
    for name, t in FORMATS:
        pats = np.arange(256, dtype=np.uint8)
        vals = pats.view(t).astype(np.float64)
        for p, v in zip(pats, vals):
            out.append("decode %s %02x %016x" % (name, p, np.float64(v).view(np.uint64)))
        fin = np.sort(np.unique(vals[np.isfinite(vals) & (vals >= 0)]))
        mids = (fin[1:] + fin[:-1]) / 2
        xs = [fin, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)]
        top = fin[-1]
        xs.append(np.array([top * 1.0625, top * 1.0625 * (1 + 2**-40), top * 1.07, top * 2, 1e30, 1e300, 2.0**-30, 2.0**-1074, 1e-300]))
        xs.append(np.exp(rng.uniform(np.log(2.0**-20), np.log(top * 1.2), 400)))
        x = np.concatenate(xs)
        x = np.concatenate([x, -x, [0.0, -0.0, np.inf, -np.inf, np.nan]])
        # Values beyond the format's range are what the overflow lines test: numpy's warning is noise.
        with np.errstate(over="ignore"):
            enc = x.astype(t).view(np.uint8)
        for xv, e in zip(x, enc):
            out.append("encode %s %016x %02x" % (name, np.float64(xv).view(np.uint64), e))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    emit(render(), sys.argv)
