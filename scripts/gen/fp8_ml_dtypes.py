# Generates fp8_ml_dtypes.txt (the fp8 reference of anatomy/tests.rs) with ml_dtypes, in a throwaway venv:
#   python3 -m venv /tmp/v14 && /tmp/v14/bin/pip install ml_dtypes numpy
#   /tmp/v14/bin/python gen_fp8_ml_dtypes.py fp8_ml_dtypes.txt
import ml_dtypes, numpy as np, sys
rng = np.random.default_rng(14)
out = ["# fp8 reference from ml_dtypes %s (numpy %s), by gen_fp8_ml_dtypes.py beside it:" % (ml_dtypes.__version__, np.__version__),
       "# `decode <fmt> <u8 hex> <f64 bits hex>` for all 256 patterns, `encode <fmt> <f64 bits hex> <u8 hex>` for inputs."]
for name, t in (("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2)):
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
    enc = x.astype(t).view(np.uint8)
    for xv, e in zip(x, enc):
        out.append("encode %s %016x %02x" % (name, np.float64(xv).view(np.uint64), e))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
