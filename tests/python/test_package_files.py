"""`bitlens.compress_file` and `bitlens.decompress_file` against the CLI on the same files: the
same bytes for every codec and option (NeuZip lossy settings, BitSnap deltas and quantization,
auto, stored), for files of every format, sharded checkpoints and chains; Inshrinkerator's report
and restored file equal the CLI's; the reports carry what was written; options the CLI refuses
are refused with the CLI's message, and a file named by no option is left alone."""
import filecmp
import json

import numpy as np
import pytest
from safetensors.numpy import load_file as st_load
from safetensors.numpy import save_file as st_save

from conftest import ROOT, run, run_json
from package_helpers import cli_error, import_bitlens

bitlens = import_bitlens()
FIXTURES = ROOT / "tests" / "fixtures"


def changed_copy(src, dst, seed=1, per_mille=20):
    """`src` with a few of its float tensors' values changed (a later training step)."""
    arrays = st_load(str(src))
    rng = np.random.default_rng(seed)
    for name, a in arrays.items():
        if a.dtype.kind == "f" and a.size > 1:
            flat = a.reshape(-1)
            idx = rng.choice(flat.size, max(1, flat.size * per_mille // 1000), replace=False)
            flat[idx] = flat[idx] * 1.01
    st_save(arrays, str(dst))
    return dst


CASES = {
    "lmc": [],
    "neuzip": ["--codec", "neuzip"],
    "neuzip-k3": ["--codec", "neuzip", "--mantissa-bits", "3", "--norm-block", "128"],
    "bitsnap-quant": ["--codec", "bitsnap-quant", "--clusters", "8"],
    "stored": ["--codec", "stored"],
    "auto": ["--codec", "auto"],
}


def options(cli):
    """`compress_file`'s keyword arguments for a CLI option list."""
    out = {}
    it = iter(cli)
    for flag in it:
        key = flag[2:].replace("-", "_")
        value = next(it)
        out[key] = int(value) if value.isdigit() else value
    return out


@pytest.mark.parametrize("case", CASES)
def test_every_codec_writes_the_clis_bytes(weights, tmp_path, case):
    src = weights / "minilm-bf16.safetensors"
    cli, py = tmp_path / "cli.bls", tmp_path / "py.bls"
    run("compress", src, "-o", cli, *CASES[case])
    report = bitlens.compress_file(src, py, **options(CASES[case]))
    assert py.read_bytes() == cli.read_bytes()
    assert report["input"] == str(src) and report["output"] == str(py)
    assert report["output_bytes"] == py.stat().st_size
    assert report["input_bytes"] == src.stat().st_size
    snapshot = run_json("inspect", cli)["snapshots"][0]
    assert [(t["name"], t["codec"], t["stored_bytes"], t["error"]) for t in report["tensors"]] == \
        [(t["name"], t["codec"], t["stored_bytes"], t["error"]) for t in snapshot["tensors"]]
    assert report["lossy"] == snapshot["lossy"]
    if case == "auto":
        auto = run_json("compress", src, "-o", tmp_path / "json.bls", "--codec", "auto")
        for f in auto["files"]:
            f["output"] = str(py)
        assert report["auto"] == auto
    else:
        assert report["auto"] is None
    out = tmp_path / "back.safetensors"
    back = bitlens.decompress_file(py, out)
    assert back == {"input": str(py), "output": str(out), "input_bytes": py.stat().st_size,
                    "output_bytes": out.stat().st_size}
    if not report["lossy"]:
        assert out.read_bytes() == src.read_bytes()
    run("decompress", cli, "-o", tmp_path / "cli.safetensors")
    assert out.read_bytes() == (tmp_path / "cli.safetensors").read_bytes()


@pytest.mark.parametrize("codec", ["lmc", "bitsnap", "auto"])
def test_deltas_write_the_clis_bytes(weights, tmp_path, codec):
    a = weights / "minilm-f32.safetensors"
    b = changed_copy(a, tmp_path / "b.safetensors")
    run("compress", b, "-o", tmp_path / "cli.bls", "--base", a, "--codec", codec)
    bitlens.compress_file(b, tmp_path / "py.bls", base=a, codec=codec)
    assert (tmp_path / "py.bls").read_bytes() == (tmp_path / "cli.bls").read_bytes()
    bitlens.decompress_file(tmp_path / "py.bls", tmp_path / "b2.safetensors", base=a)
    assert (tmp_path / "b2.safetensors").read_bytes() == b.read_bytes()
    with pytest.raises(bitlens.UsageError) as e:
        bitlens.decompress_file(tmp_path / "py.bls", tmp_path / "x.safetensors")
    assert str(e.value) == cli_error("decompress", tmp_path / "cli.bls", "-o", tmp_path / "y")\
        .replace(str(tmp_path / "cli.bls"), str(tmp_path / "py.bls"))


@pytest.mark.parametrize("fixture", ["gguf/q4_k.gguf", "torch/adam.pt", "numpy/minilm_compressed.npz",
                                     "numpy/minilm_f16_v2.npy"])
def test_files_of_other_formats_restore_byte_for_byte(tmp_path, fixture):
    src = FIXTURES / fixture
    run("compress", src, "-o", tmp_path / "cli.bls")
    bitlens.compress_file(src, tmp_path / "py.bls")
    assert (tmp_path / "py.bls").read_bytes() == (tmp_path / "cli.bls").read_bytes()
    bitlens.decompress_file(tmp_path / "py.bls", tmp_path / "back")
    assert (tmp_path / "back").read_bytes() == src.read_bytes()


def test_one_tensor_and_shards(weights, tmp_path):
    src = weights / "minilm-bf16.safetensors"
    bitlens.compress_file(src, tmp_path / "m.bls")
    name = "pooler.dense.weight"
    bitlens.decompress_file(tmp_path / "m.bls", tmp_path / "py.safetensors", tensor=name)
    run("decompress", tmp_path / "m.bls", "--tensor", name, "-o", tmp_path / "cli.safetensors")
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "cli.safetensors").read_bytes()
    # A sharded checkpoint: a directory of snapshots and the index, restored as it was.
    arrays = st_load(str(src))
    names = sorted(arrays)
    shards = tmp_path / "shards"
    shards.mkdir()
    half = len(names) // 2
    weight_map = {}
    for i, part in enumerate([names[:half], names[half:]]):
        file = f"model-0000{i + 1}-of-00002.safetensors"
        st_save({n: arrays[n] for n in part}, str(shards / file))
        weight_map.update({n: file for n in part})
    (shards / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    index = shards / "model.safetensors.index.json"
    run("compress", index, "-o", tmp_path / "cli-dir")
    report = bitlens.compress_file(index, tmp_path / "py-dir")
    assert not filecmp.dircmp(tmp_path / "cli-dir", tmp_path / "py-dir").diff_files
    assert sorted(p.name for p in (tmp_path / "py-dir").iterdir()) == \
        sorted(p.name for p in (tmp_path / "cli-dir").iterdir())
    assert len(report["tensors"]) == len(names)
    bitlens.decompress_file(tmp_path / "py-dir", tmp_path / "restored")
    for p in shards.iterdir():
        assert (tmp_path / "restored" / p.name).read_bytes() == p.read_bytes()


def test_a_chain_is_the_clis_chain(weights, tmp_path):
    a = weights / "minilm-f16.safetensors"
    run_dir = tmp_path / "run"
    for i in range(3):
        (run_dir / f"step-{i}").mkdir(parents=True)
        changed_copy(a, run_dir / f"step-{i}" / "model.safetensors", seed=i)
    run("compress", "--chain", run_dir, "-o", tmp_path / "cli", "--key", "2")
    report = bitlens.compress_file(run_dir, tmp_path / "py", chain=True, key=2)
    assert report == run_json("inspect", tmp_path / "cli")["chains"][0] | {"path": str(tmp_path / "py")}
    for step in ("step-0", "step-1", "step-2"):
        assert not filecmp.dircmp(tmp_path / "cli" / step, tmp_path / "py" / step).diff_files
    back = bitlens.decompress_file(tmp_path / "py", tmp_path / "one", step="1")
    assert back["input_bytes"] is None
    assert (tmp_path / "one" / "model.safetensors").read_bytes() == \
        (run_dir / "step-1" / "model.safetensors").read_bytes()
    steps = [run_dir / f"step-{i}" for i in range(3)]
    bitlens.compress_file(steps[0], tmp_path / "listed", chain=True, more=steps[1:],
                          skip_full_size=True)
    assert bitlens.inspect(tmp_path / "listed")["chains"][0]["totals"]["all_full_size"] is None


def test_inshrink_reports_and_restores_as_the_cli(weights, tmp_path):
    arrays = st_load(str(weights / "minilm-f32.safetensors"))
    small = {n: arrays[n] for n in sorted(arrays)[:12]}
    src = tmp_path / "small.safetensors"
    st_save(small, str(src))
    cli = run_json("compress", src, "-o", tmp_path / "cli.bls", "--codec", "inshrink",
                   "--max-error", "0.05", "--protect-dtype", "bf16")
    report = bitlens.compress_file(src, tmp_path / "py.bls", codec="inshrink", max_error=0.05,
                                   protect_dtype="bf16")
    # The snapshot stores the search's times: its size may differ by the digits of a number.
    assert report["output_bytes"] == (tmp_path / "py.bls").stat().st_size
    for r in (cli, report):
        for timed in ("times", "output_bytes", "ratio"):
            r.pop(timed)
    assert report == cli
    run("decompress", tmp_path / "cli.bls", "-o", tmp_path / "cli.safetensors")
    bitlens.decompress_file(tmp_path / "py.bls", tmp_path / "py.safetensors")
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "cli.safetensors").read_bytes()


REFUSED = [
    ({"codec": "lmc", "max_error": 0.1}, ["--max-error", "0.1"]),
    ({"codec": "bitsnap"}, ["--codec", "bitsnap"]),
    ({"codec": "neuzip", "mantissa_bits": 2}, ["--codec", "neuzip", "--mantissa-bits", "2"]),
    ({"codec": "lmc", "mantissa_bits": 3}, ["--mantissa-bits", "3"]),
    ({"codec": "neuzip", "norm_block": 100}, ["--codec", "neuzip", "--norm-block", "100"]),
    ({"codec": "bitsnap-quant", "clusters": 17}, ["--codec", "bitsnap-quant", "--clusters", "17"]),
    ({"codec": "inshrink", "chain": True}, ["--codec", "inshrink", "--chain"]),
    ({"codec": "lmc", "no_delta": True}, ["--no-delta"]),
]


@pytest.mark.parametrize("kwargs,cli", REFUSED)
def test_options_the_cli_refuses_are_refused_with_its_message(weights, tmp_path, kwargs, cli):
    src = weights / "minilm-bf16.safetensors"
    with pytest.raises(bitlens.UsageError) as e:
        bitlens.compress_file(src, tmp_path / "x.bls", **kwargs)
    assert str(e.value) == cli_error("compress", src, "-o", tmp_path / "x.bls", *cli)
    assert not (tmp_path / "x.bls").exists()
    with pytest.raises(bitlens.UsageError, match="unknown codec `zip`"):
        bitlens.compress_file(src, tmp_path / "x.bls", codec="zip")
    with pytest.raises(bitlens.UsageError, match="unknown protected-value storage"):
        bitlens.compress_file(src, tmp_path / "x.bls", codec="inshrink", protect_dtype="f8")


def test_decompress_options_the_cli_refuses(weights, tmp_path):
    src = weights / "minilm-bf16.safetensors"
    bitlens.compress_file(src, tmp_path / "m.bls")
    with pytest.raises(bitlens.UsageError) as e:
        bitlens.decompress_file(tmp_path / "m.bls", tmp_path / "x", step="1")
    assert str(e.value) == cli_error("decompress", tmp_path / "m.bls", "-o", tmp_path / "x",
                                     "--step", "1")
    with pytest.raises(bitlens.UsageError, match="no tensor `nope`"):
        bitlens.decompress_file(tmp_path / "m.bls", tmp_path / "x", tensor="nope")
