"""`bitlens compress --codec auto` end to end (issue 17): byte-identical round trips on files written
by Python's safetensors (every float dtype with NaN / Inf / subnormals, integers, incompressible
bytes), on the real MiniLM weights and on the digits training run's consecutive steps (with
--base); the --json report's achieved sizes and codecs equal the .bls index as `inspect --json`
reads it; auto is never larger than LMC; each tensor's choice is the smallest of the candidates
compressed one by one (tensors sampled whole, whose predictions are exact)."""
import filecmp
import glob
import json
import struct

import numpy as np
import pytest
from conftest import ROOT, run, run_json
from safetensors.numpy import save_file

RUN = ROOT / ".cache" / "runs" / "digits-h512-d8-lr0.001-seed0-s300-e25"


def compress_auto(tmp_path, src, base=None, name="auto.bls"):
    snap = tmp_path / name
    extra = ["--base", base] if base else []
    report = run_json("compress", "--codec", "auto", src, "-o", snap, *extra)
    return snap, report


def decompress(tmp_path, snap, base=None):
    out = tmp_path / "out.safetensors"
    extra = ["--base", base] if base else []
    run("decompress", snap, "-o", out, *extra)
    return out


def index(snap):
    j = run_json("inspect", snap)
    return {t["name"]: t for t in j["snapshots"][0]["tensors"]}


# Auto takes NeuZip (its encoder is several times slower than LMC's) only where it saves at least
# this much (crates/snapshot/src/auto.rs, SLOW_MIN_SAVING).
SLOW_MIN_SAVING = 0.02


def weighed(candidate, size):
    """The size auto compares: NeuZip's divided by 1 - SLOW_MIN_SAVING."""
    return size / (1 - SLOW_MIN_SAVING) if candidate == "neuzip" else size


# Auto's candidates in its order of preference on a tie (auto.rs, Candidate::ALL).
ORDER = ["lmc", "lmc-delta", "unchanged", "bitsnap", "neuzip", "stored"]


def smallest(sizes):
    """The candidate auto picks among `sizes` (ties to the earlier in ORDER)."""
    return min(sizes, key=lambda c: (weighed(c, sizes[c]), ORDER.index(c)))


def check_report_matches_index(report, snap):
    """The JSON's per-tensor codec and achieved bytes are the index's; totals add up."""
    idx = index(snap)
    (f,) = report["files"]
    assert [t["name"] for t in f["tensors"]] == list(idx)
    for t in f["tensors"]:
        e = idx[t["name"]]
        assert t["achieved_bytes"] == e["stored_bytes"], t["name"]
        assert (t["codec"], t["delta"]) == (e["codec"], e["delta"]), t["name"]
        assert t["chosen"] in t["predicted"]
        assert t["predicted_bytes"] == t["predicted"][t["chosen"]]
        assert t["chosen"] == smallest(t["predicted"]), t["name"]
    assert f["totals"]["achieved_bytes"] == sum(t["achieved_bytes"] for t in f["tensors"])
    assert f["totals"]["snapshot_bytes"] == snap.stat().st_size
    assert report["totals"]["achieved_bytes"] == f["totals"]["achieved_bytes"]


def specials(dtype, n, rng):
    v = (rng.standard_normal(n) * 0.02).astype(np.float32)
    v[::97] = np.nan
    v[1::97] = np.inf
    v[2::97] = -np.inf
    v[3::97] = 1e-45 if dtype == "f32" else 6e-8
    v[4::97] = -0.0
    if dtype == "f32":
        return v
    if dtype == "f16":
        return v.astype(np.float16)
    # bf16: the top half of the f32 bits, saved as uint16 and relabelled BF16 (`as_bf16`).
    return (v.view(np.uint32) >> 16).astype(np.uint16)


def as_bf16(path, names):
    """Relabels the U16 tensors `names` of a safetensors file as BF16 (same bytes)."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    for k in names:
        assert header[k]["dtype"] == "U16"
        header[k]["dtype"] = "BF16"
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + n :])


def synthetic(path, seed):
    rng = np.random.default_rng(seed)
    tensors = {
        "f32": specials("f32", 70_000, rng),
        "f16": specials("f16", 90_000, rng),
        "f16_small": specials("f16", 300, rng),
        "bf16": specials("bf16", 150_000, rng),
        "bf16_small": specials("bf16", 500, rng),
        "random": rng.integers(0, 256, 200_000, dtype=np.uint8),
        "i64": np.arange(20_000, dtype=np.int64) * 3,
        "i32": rng.integers(-5, 5, 1000, dtype=np.int32),
        "const": np.full(70_000, 1.0, np.float32),
        "empty": np.zeros((0, 4), np.float32),
    }
    save(tensors, path)
    return tensors


def save(tensors, path):
    save_file(tensors, str(path), metadata={"format": "pt"})
    as_bf16(path, ["bf16", "bf16_small"])


@pytest.mark.parametrize("seed", [1, 2])
def test_python_written_files_round_trip_with_and_without_a_base(tmp_path, seed):
    src = tmp_path / "a.safetensors"
    tensors = synthetic(src, seed)
    snap, report = compress_auto(tmp_path, src)
    assert filecmp.cmp(decompress(tmp_path, snap), src, shallow=False)
    check_report_matches_index(report, snap)
    # A changed copy (1 % of the f32 / f16 values, the integers shifted) against the original.
    rng = np.random.default_rng(seed + 10)
    for k in ("f32", "f16", "bf16"):
        t = tensors[k].copy()
        idx = rng.choice(t.size, t.size // 100, replace=False)
        t[idx] = t[idx] * 3 if k == "bf16" else t[idx] * 1.5
        tensors[k] = t
    tensors["i64"] = tensors["i64"] + 1
    new = tmp_path / "b.safetensors"
    save(tensors, new)
    snap, report = compress_auto(tmp_path, new, base=src, name="delta.bls")
    assert filecmp.cmp(decompress(tmp_path, snap, base=src), new, shallow=False)
    check_report_matches_index(report, snap)
    chosen = {t["name"]: t["chosen"] for t in report["files"][0]["tensors"]}
    assert chosen["random"] in ("unchanged", "lmc", "stored")  # unchanged, and incompressible
    assert chosen["f32"] in ("lmc-delta", "bitsnap")


def forced_sizes(tmp_path, src, base):
    """Per tensor and candidate, the stored bytes with that codec forced."""
    runs = {"lmc": ["--codec", "lmc"], "neuzip": ["--codec", "neuzip"], "stored": ["--codec", "stored"]}
    if base:
        runs["lmc-delta"] = ["--codec", "lmc", "--base", base]
        runs["bitsnap"] = ["--codec", "bitsnap", "--base", base]
    out = {}
    for name, args in runs.items():
        snap = tmp_path / f"{name}.bls"
        run("compress", src, "-o", snap, *args)
        out[name] = {k: v["stored_bytes"] for k, v in index(snap).items()}
    return out


def check_against_forced(report, forced):
    for t in report["files"][0]["tensors"]:
        sizes = {c: forced[c if c != "unchanged" else "lmc-delta"][t["name"]] for c in t["predicted"]}
        assert t["achieved_bytes"] <= forced["lmc-delta" if "lmc-delta" in forced else "lmc"][t["name"]] * 1.01 + 64
        if t["sample_bytes"] == t["bytes"]:
            # Sampled whole: the predictions are the sizes, and the choice is the smallest
            # (NeuZip where it saves at least SLOW_MIN_SAVING).
            assert t["predicted"] == sizes, t["name"]
            assert t["achieved_bytes"] == sizes[smallest(sizes)], t["name"]


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
def test_real_weights_round_trip_and_are_no_larger_than_lmc(tmp_path, weights, dtype):
    src = weights / f"minilm-{dtype}.safetensors"
    snap, report = compress_auto(tmp_path, src)
    assert filecmp.cmp(decompress(tmp_path, snap), src, shallow=False)
    check_report_matches_index(report, snap)
    forced = forced_sizes(tmp_path, src, None)
    assert snap.stat().st_size <= (tmp_path / "lmc.bls").stat().st_size
    check_against_forced(report, forced)
    totals = report["totals"]
    assert abs(totals["predicted_bytes"] / totals["achieved_bytes"] - 1) < 0.02
    # `inspect` sums the tensors and stored bytes of each codec the snapshot mixes.
    per_codec = {}
    for t in report["files"][0]["tensors"]:
        n, b = per_codec.get(t["codec"], (0, 0))
        per_codec[t["codec"]] = (n + 1, b + t["achieved_bytes"])
    text = run("inspect", snap).stdout
    if len(per_codec) > 1:
        line = next(l for l in text.splitlines() if l.startswith("  codecs (tensors, stored):"))
        for codec, (n, _) in per_codec.items():
            assert f"{codec} {n} (" in line, (codec, line)


def training_pairs():
    steps = sorted(glob.glob(str(RUN / "step-*")))
    if len(steps) < 3:
        pytest.skip("the digits run is missing (scripts/train_digits.py)")
    return [(steps[0], steps[1]), (steps[-2], steps[-1])]


@pytest.mark.parametrize("name", ["model", "model-bf16", "optimizer", "optimizer-bf16"])
def test_training_steps_against_their_predecessor(tmp_path, name):
    for prev, cur in training_pairs():
        base = f"{prev}/{name}.safetensors"
        src = f"{cur}/{name}.safetensors"
        snap, report = compress_auto(tmp_path, src, base=base)
        assert filecmp.cmp(decompress(tmp_path, snap, base=base), src, shallow=False)
        check_report_matches_index(report, snap)
        forced = forced_sizes(tmp_path, src, base)
        assert snap.stat().st_size <= (tmp_path / "lmc-delta.bls").stat().st_size
        check_against_forced(report, forced)


def test_json_needs_auto_and_chains_refuse_json(tmp_path, weights):
    src = weights / "minilm-bf16.safetensors"
    p = run("compress", "--codec", "lmc", "--json", src, "-o", tmp_path / "x.bls", check=False)
    assert p.returncode != 0 and "--json" in p.stderr
    p = run("compress", "--chain", "--codec", "auto", "--json", src, src, "-o", tmp_path / "c", check=False)
    assert p.returncode != 0 and "--json" in p.stderr


FIXTURES = ROOT / "tests" / "fixtures"


@pytest.mark.parametrize(
    "name",
    ["gguf/bf16.gguf", "gguf/q8_0.gguf", "torch/adam.pt", "numpy/minilm_f32_v1.npy", "numpy/minilm_compressed.npz"],
)
def test_other_formats_round_trip_with_their_pieces_chosen(tmp_path, name):
    src = FIXTURES / name
    if not src.exists():
        pytest.skip(f"{name} is not a fixture")
    snap, report = compress_auto(tmp_path, src)
    assert filecmp.cmp(decompress(tmp_path, snap), src, shallow=False)
    check_report_matches_index(report, snap)
    lmc = tmp_path / "lmc.bls"
    run("compress", "--codec", "lmc", src, "-o", lmc)
    assert snap.stat().st_size <= lmc.stat().st_size * 1.001 + 256
    # Against itself: every piece is unchanged (or as small without the base).
    snap, report = compress_auto(tmp_path, src, base=src, name="self.bls")
    assert filecmp.cmp(decompress(tmp_path, snap, base=src), src, shallow=False)
    check_report_matches_index(report, snap)
    assert all(t["chosen"] in ("unchanged", "lmc", "stored") for t in report["files"][0]["tensors"])
