"""`bitlens.inspect`, `bitlens.diff` and `bitlens.inspect_table` against the CLI: the documents
are equal to `json.loads` of `--json` on real weights and on every format's fixtures (checkpoints
of every format, `.bls` snapshots, a chain); `tensors=` measures only the tensors named; the table
has one typed row per tensor and a row for a path that cannot be read."""
import json
import math

import pytest

from conftest import ROOT, run, run_json
from package_helpers import cli_error, import_bitlens

bitlens = import_bitlens()
FIXTURES = ROOT / "tests" / "fixtures"


def same(a, b):
    """Equal documents (NaN is NaN)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
def test_inspect_equals_the_cli_on_real_weights(weights, dtype):
    path = weights / f"minilm-{dtype}.safetensors"
    assert same(bitlens.inspect(path), run_json("inspect", path))
    assert same(bitlens.inspect(str(path), threads=1), run_json("inspect", path))


@pytest.mark.parametrize("files", [
    ["gguf/q4_k.gguf", "gguf/bf16.gguf"],
    ["torch/adam.pt"],
    ["torch/views.pt"],
    ["numpy/minilm_f16_v2.npy", "numpy/minilm_compressed.npz"],
])
def test_inspect_equals_the_cli_on_every_format(files):
    paths = [FIXTURES / f for f in files]
    assert same(bitlens.inspect(paths), run_json("inspect", *paths))


def test_diff_equals_the_cli(weights):
    a, b = weights / "minilm-bf16.safetensors", weights / "minilm-f16.safetensors"
    assert same(bitlens.diff(a, b), run_json("diff", a, b))
    q = FIXTURES / "gguf" / "q8_0.gguf"
    assert same(bitlens.diff(q, q), run_json("diff", q, q))


def test_snapshots_and_chains_inspect_as_the_cli_says(weights, tmp_path):
    bf16 = weights / "minilm-bf16.safetensors"
    snap = tmp_path / "m.bls"
    run("compress", bf16, "-o", snap, "--codec", "neuzip", "--mantissa-bits", "3")
    assert same(bitlens.inspect(snap), run_json("inspect", snap))
    steps = []
    for i in range(2):
        step = tmp_path / "run" / f"step-{i}"
        step.mkdir(parents=True)
        data = bytearray(bf16.read_bytes())
        data[-1 - i] ^= 1
        (step / "model.safetensors").write_bytes(bytes(data))
        steps.append(step)
    run("compress", "--chain", tmp_path / "run", "-o", tmp_path / "chain")
    assert same(bitlens.inspect(tmp_path / "chain"), run_json("inspect", tmp_path / "chain"))


def test_tensors_limits_what_is_measured(weights):
    path = weights / "minilm-f32.safetensors"
    full = bitlens.inspect(path)
    names = [t["name"] for t in full["files"][0]["tensors"][:3:2]]
    some = bitlens.inspect(path, tensors=names)
    measured = {t["name"]: t for t in some["files"][0]["tensors"] if "bytes" in t}
    assert sorted(measured) == sorted(names)
    by_name = {t["name"]: t for t in full["files"][0]["tensors"]}
    for name, t in measured.items():
        assert same(t, by_name[name])
    assert some["summary"]["tensors"] == 2
    with pytest.raises(bitlens.UsageError, match=r"^no tensor `nope` in "):
        bitlens.inspect(path, tensors=["nope"])


def test_inspect_table_has_a_typed_row_per_tensor(weights, tmp_path):
    pa = pytest.importorskip("pyarrow")
    path = weights / "minilm-bf16.safetensors"
    missing = tmp_path / "missing.safetensors"
    table = bitlens.inspect_table([path, FIXTURES / "gguf" / "q4_k.gguf", missing])
    assert isinstance(table, pa.Table)
    assert table.schema.field("bit_set_ratio").type == pa.list_(pa.float64())
    assert table.schema.field("value_min").type == pa.float64()
    rows = table.to_pylist()
    report = bitlens.inspect(path)
    tensors = report["files"][0]["tensors"]
    assert [r["name"] for r in rows[:len(tensors)]] == [t["name"] for t in tensors]
    first, t = rows[1], tensors[1]
    assert first["bit_set_ratio"] == t["bit_set_ratio"]
    assert first["value_std"] == t["values"]["std"]
    assert first["predicted_ratio"] == t["predicted_ratio"]
    assert first["error"] is None and first["shape"] == t["shape"]
    quant = [r for r in rows if r["dtype"] == "Q4_K"]
    assert quant and quant[0]["lane_dtype"] == "U8" and not math.isnan(quant[0]["value_mean"])
    last = rows[-1]
    assert last["file"] == str(missing) and last["name"] is None
    assert last["error"] == cli_error("inspect", missing)


def test_the_packages_own_documents_are_in_reports_md(weights, tmp_path):
    from test_reports_doc import documented, keys_of

    bf16 = weights / "minilm-bf16.safetensors"
    docs = [bitlens.compress_file(bf16, tmp_path / "a.bls", codec="auto"),
            bitlens.decompress_file(tmp_path / "a.bls", tmp_path / "a.safetensors")]
    keys = set()
    for d in docs:
        keys_of(d, keys)
    missing = sorted(k for _, k in keys if k not in documented())
    assert not missing, f"fields not in docs/REPORTS.md: {missing}"
