"""The paper-fidelity driver's row functions (tests/python/paper_table.py, scripts/paper-table.sh) on a
tiny real run (train_digits.py --hidden 64 --steps 20 --every 10, no MiniLM): every measured number a
row reports is checked against an independent computation — the file on disk, the same number by
another bitlens path (`compress` + `inspect` vs `bench`), Python's bz2, or NumPy on the raw bits."""
import bz2
import json
import subprocess

import numpy as np
import pytest

import paper_table as pt
from conftest import BIN, ROOT, run
from test_bench_inshrink import example, uniform_min_bins


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paper-table")
    args = pt.parse([str(BIN), "--fidelity", str(example()), "--hidden", "64", "--steps", "20", "--every", "10",
                     "--runs", str(tmp / "runs"), "--work", str(tmp / "work"), "--weights", str(tmp / "no-weights"),
                     "--chain-modes", "proxy", "--max-error", "0.1", "--table7-every", "1",
                     "--table7-bins", "1,2,4,8,16,32,64,128,256"])
    return pt.Ctx(args)


def stored_bytes(bls):
    """Σ of the tensors' stored bytes in a snapshot, by `bitlens inspect`."""
    info = json.loads(run("inspect", bls, "--json").stdout)["snapshots"][0]
    return sum(t["stored_bytes"] for t in info["tensors"])


def tensors(path):
    """(name, dtype, raw element array) of a safetensors file's float tensors, read independently."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    kinds = {"BF16": "<u2", "F16": "<u2", "F32": "<u4"}
    return [(k, v["dtype"], np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                                          kinds[v["dtype"]]))
            for k, v in header.items() if v["dtype"] in kinds]


def h(values, minlength=0):
    c = np.bincount(values.astype(np.int64), minlength=minlength).astype(np.float64)
    c = c[c > 0]
    return float(np.log2(c.sum()) - (c * np.log2(c)).sum() / c.sum())


def block_entropy_bytes(path):
    """LMC §4.1's estimate: per tensor, ⌈Σ over 65,536-element blocks and byte groups of n·H / 8⌉."""
    total = 0
    for _, _, a in tensors(path):
        b = a.view(np.uint8).reshape(a.size, -1)
        bits = 0.0
        for s in range(0, a.size, 65536):
            for g in range(b.shape[1]):
                col = b[s:s + 65536, g]
                bits += col.size * h(col)
        total += int(np.ceil(bits / 8))
    return total


def test_lmc_rows(ctx):
    row = pt.lmc_entropy(ctx)
    assert len(row.data["rows"]) == 8  # 4 files of the last checkpoint + 4 XOR deltas
    for d in row.data["rows"]:
        assert d["entropy_bytes"] == block_entropy_bytes(pt.Path(d["path"]))
        # bench's in-memory LMC bytes = what `bitlens compress` stores per tensor.
        bls = ctx.work / "check.bls"
        run("compress", d["path"], "-o", bls, "--codec", "lmc")
        assert d["lmc_bytes"] == stored_bytes(bls)
    row = pt.lmc_bzip2(ctx)
    for d in row.data["rows"]:
        want = sum(len(bz2.compress(a.tobytes(), 9)) for _, _, a in tensors(pt.Path(d["path"])))
        assert d["bzip2"]["bzip2"]["bytes"] == want
        assert d["bzip2_ratio"] == min(v["ratio"] for v in d["bzip2"].values())
        assert d["speedup"] == pytest.approx(d["lmc_mb_s"] / d["bzip2_mb_s"])
    # A group's speed-up is bzip2's total time over LMC's (sizes from the files on disk).
    full = [d for d in row.data["rows"] if "Δ" not in d["input"]]
    size = [pt.Path(d["path"]).stat().st_size for d in full]
    want = sum(b / d["bzip2_mb_s"] for b, d in zip(size, full)) / sum(b / d["lmc_mb_s"] for b, d in zip(size, full))
    assert row.data["speedup_by_group"]["checkpoints"] == pytest.approx(want)
    assert row.verdict in ("holds", "holds partly", "does not hold here")


def test_delta_trend(ctx):
    row = pt.lmc_delta_trend(ctx)
    for kind, series in row.data["series"].items():
        assert [s["step"] for s in series] == [10, 20]
        for s in series:
            bls = ctx.work / "trend" / f"{kind}-{s['step']:06d}.bls"
            new = ctx.ck(s["step"], kind)
            assert s["bls_bytes"] == bls.stat().st_size
            assert s["ratio"] == s["bls_bytes"] / new.stat().st_size
            # The delta restores the checkpoint byte for byte.
            out = ctx.work / "restored.safetensors"
            run("decompress", bls, "-o", out, "--base", ctx.ck(s["step"] - 10, kind))
            assert out.read_bytes() == new.read_bytes()


def test_plmc_threads(ctx):
    row = pt.plmc_threads(ctx)
    (label, path), = [(r["input"], ctx.ck(ctx.last, "optimizer")) for r in row.data["rows"][:1]]
    bench = ctx.bench(path, "snapshot,lmc", threads=2, repeat=5)
    for d in row.data["rows"]:
        name = "lmc" if d["codec"] == "lmc" else "snapshot (whole file)"
        assert (d["c1"], d["c2"]) == (bench[name]["compress_mb_s"], bench[name + "@2"]["compress_mb_s"])
        # PLMC's output does not depend on the thread count.
        assert bench[name]["compressed_bytes"] == bench[name + "@2"]["compressed_bytes"]
    assert row.data["cores"] >= 1 and len(row.data["load"]) == 2


def test_neuzip_rows(ctx):
    row = pt.neuzip_exponent(ctx)
    for d in row.data["rows"]:
        ts = tensors(pt.Path(d["path"]))
        e_bits = {t[1]: pt.FIELDS[t[1]] for t in ts}
        for dtype, (e, m) in e_bits.items():
            ex = np.concatenate([(a.astype(np.int64) >> m) & ((1 << e) - 1) for _, dt, a in ts if dt == dtype])
            assert d["file"][dtype] == pytest.approx(h(ex), abs=1e-9)
        big = [(name, (a.astype(np.int64) >> pt.FIELDS[dt][1]) & ((1 << pt.FIELDS[dt][0]) - 1))
               for name, dt, a in ts if a.size >= 4096]
        assert d["tensor_max"] == pytest.approx(max(h(x) for _, x in big), abs=1e-9)
    row = pt.neuzip_lossless(ctx)
    for d in row.data["rows"]:
        path = pt.Path(d["path"])
        bls = ctx.work / "check-neuzip.bls"
        run("compress", path, "-o", bls, "--codec", "neuzip")
        assert d["neuzip_bytes"] == stored_bytes(bls)
        comp = 0.0
        for _, dt, a in tensors(path):
            e, m = pt.FIELDS[dt]
            bits = 8 * a.itemsize
            x = a.astype(np.int64)
            top = (x >> (m - 7)) & 0x7F
            comp += a.size * (h(x >> (bits - 1)) + h((x >> m) & ((1 << e) - 1)) + h(top) + (m - 7)) / 8
        assert d["component_bytes"] == pytest.approx(comp, rel=1e-9)
        if d["value_entropy_bytes"] is not None:
            want = sum(a.size * h(a, 65536) / 8 for _, _, a in tensors(path))
            assert d["value_entropy_bytes"] == pytest.approx(want, rel=1e-9)
    row = pt.neuzip_lossy(ctx)
    for d in row.data["rows"]:
        assert d["bls_bytes"] == pt.Path(d["bls"]).stat().st_size
        # The error measured on the decompressed file = bench's own measurement of the codec.
        e = ctx.bench(pt.Path(d["path"]), f"neuzip-k{d['k']}")[f"neuzip-k{d['k']}"]["error"]
        assert d["max_rel"] == pytest.approx(e["max_rel"], rel=1e-6)
        assert d["mse"] == pytest.approx(e["mse"], rel=1e-6)


def test_bitsnap_rows(ctx):
    row = pt.bitsnap_break_even(ctx)
    for d in row.data["rows"]:
        base = tensors(ctx.ck(0, d["kind"]))
        for p in d["points"]:
            mixed = pt.Path(p["mixed"])
            changed = sum(int((a != b).sum()) for (_, _, a), (_, _, b) in zip(base, tensors(mixed)))
            assert p["changed"] == changed / sum(a.size for _, _, a in base)
            assert p["bls_bytes"] == mixed.with_suffix(".bls").stat().st_size
        # The encoder switches to dense at the paper's break-even: the size drops there.
        assert d["break_even"] == 1 - 1 / (8 * d["width"]) and d["drop_at_switch"] > 0
    row = pt.bitsnap_15(ctx)
    for d in row.data["rows"]:
        assert 0 < d["changed"] <= 1 and d["bitsnap_x"] == d["orig"] / d["bitsnap_bytes"]
    mixed = ctx.work / "bitsnap15" / "model-bf16.safetensors"
    base = tensors(ctx.ck(10, "model-bf16"))
    n = sum(a.size for _, _, a in base)
    assert row.data["rows"][0]["changed"] == sum(int((a != b).sum()) for (_, _, a), (_, _, b)
                                                 in zip(base, tensors(mixed))) / n
    assert row.data["rows"][0]["bitsnap_bytes"] == mixed.with_suffix(".bls").stat().st_size
    row = pt.bitsnap_quant(ctx)
    (d,) = row.data["rows"]
    path = pt.Path(d["path"])
    e = ctx.bench(path, "bitsnap-quant")["bitsnap-quant"]["error"]
    g = d["bitsnap"]["errors"]
    pooled = sum(x["mse"] * x["values"] for x in g.values()) / sum(x["values"] for x in g.values())
    assert pooled == pytest.approx(e["mse"], rel=1e-6)
    assert d["bitsnap"]["bls_bytes"] == pt.Path(d["bitsnap"]["bls"]).stat().st_size
    # Naive uint8 (one min / max per tensor) in NumPy has the one-cluster decode's MSE.
    for prefix, err in d["naive"]["errors"].items():
        sq, count = 0.0, 0
        for name, _, a in tensors(path):
            if name.startswith(prefix):
                w = a.view(np.float32).astype(np.float64)
                lo, hi = w.min(), w.max()
                q = lo + np.round((w - lo) / (hi - lo) * 255) * (hi - lo) / 255 if hi > lo else w
                sq += float(((q.astype(np.float32).astype(np.float64) - w) ** 2).sum())
                count += w.size
        assert err["mse"] == pytest.approx(sq / count, rel=1e-3)


def test_inshrink_rows(ctx):
    row = pt.inshrink_table7(ctx)
    t7 = row.data["table7"]
    assert [r["step"] for r in t7] == [10, 20]
    w = np.frombuffer(tensors(ctx.ck(20, "model"))[[t[0] for t in tensors(ctx.ck(20, "model"))].index("fc2.weight")][2]
                      .tobytes(), "<f4")
    fc2 = next(t for t in t7[-1]["tensors"] if t["tensor"] == "fc2.weight")
    assert fc2["uniform"] == [uniform_min_bins(w, e) for e in fc2["errors"]]
    kurt = row.data["shape"]["fc2.weight"][0]
    z = (w.astype(np.float64) - w.mean()) / w.astype(np.float64).std()
    assert kurt == pytest.approx(float(np.mean(z ** 4)), rel=1e-9)
    row = pt.inshrink_delta(ctx)
    (res,) = row.data["variants"].values()
    assert [x["has_base"] for x in res] == [False, True]
    # PE is what the CLI writes: the example's PE streams = the chain's second .bls, tensor by tensor,
    # for every tensor the CLI stored as an Inshrinkerator stream; the CLI stores a tensor by LMC
    # instead only where that is smaller (issue 29), so the file is never larger than the PE sum.
    bls = ctx.work / "inshrink" / "chain-proxy" / "step-000020.bls"
    info = json.loads(run("inspect", bls, "--json").stdout)["snapshots"][0]
    pe = res[1]["pe_tensors"]
    coded = [t for t in info["tensors"] if t["codec"] == "inshrink"]
    assert coded, "the chain's second step codes tensors as PE deltas"
    for t in coded:
        assert t["stored_bytes"] == pe[t["name"]], t["name"]
    for t in info["tensors"]:
        if t["codec"] != "inshrink":
            assert t["stored_bytes"] < pe[t["name"]], t["name"]
    assert stored_bytes(bls) <= res[1]["delta_bytes"]["pe"]
    s = row.data["summary"]["proxy"]
    assert s["pe_he"] == res[1]["delta_bytes"]["he"] / res[1]["delta_bytes"]["pe"]


def test_render_has_every_row(ctx):
    rows = [pt.neuzip_exponent(ctx), pt.bitsnap_15(ctx)]
    text = pt.render(ctx, rows, {"command": "x", "date": "d", "seconds": 60, "commit": "c", "cores": 2,
                                 "load": [0.5, 0.6], "params": 1})
    for r in rows:
        assert f"| {r.claim} | {r.measured} | **{r.verdict}** |" in text
        assert r.detail in text
