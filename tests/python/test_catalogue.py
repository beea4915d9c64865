"""Catalogue runs (`python -m bitlens.catalogue`, `bitlens.catalogue.run`) on Ray (a local cluster of
2 CPUs) and on a local process pool, over real and generated checkpoints of every format, a shard
set, a corrupt file, a served file and a 404 URL: the Parquet rows equal the CLI's `inspect --json`
numbers, the bad files are rows with the CLI's errors, a rerun reads headers only and rewrites
nothing, `--compress` writes the CLI's snapshot bytes, `--sidecars` writes sidecars `inspect` uses."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, run, run_json
from package_helpers import cli_error, import_bitlens
from test_remote import server  # noqa: F401  (a fixture, used below)

FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture
def sources(tmp_path, weights, server):  # noqa: F811
    """A directory of ≥ 20 checkpoints (real MiniLM weights in three dtypes, a shard set of two
    shards, GGUF of several quant types, PyTorch and NumPy files, a directory of .npy arrays, a
    corrupt file) and a list of URLs (one served file, one 404)."""
    from safetensors.numpy import load_file, save_file

    root = tmp_path / "catalogue"
    (root / "real").mkdir(parents=True)
    for dtype in ("bf16", "f16"):
        shutil.copy(weights / f"minilm-{dtype}.safetensors", root / "real" / f"minilm-{dtype}.safetensors")
    tensors = load_file(weights / "minilm-f16.safetensors")
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    (root / "sharded").mkdir()
    for shard, held in shards.items():
        save_file({n: tensors[n] for n in held}, root / "sharded" / shard)
    (root / "sharded" / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {n: s for s, held in shards.items() for n in held}}))
    (root / "gguf").mkdir()
    for name in ("f16", "bf16", "f32", "q8_0", "q4_0", "q4_k", "q6_k", "iq4_nl", "q2_k", "q5_k"):
        shutil.copy(FIXTURES / "gguf" / f"{name}.gguf", root / "gguf")
    (root / "torch").mkdir()
    for name in ("adam.pt", "state_bf16.pt", "state_f16_legacy.pt", "dtypes.pt"):
        shutil.copy(FIXTURES / "torch" / name, root / "torch")
    (root / "numpy" / "arrays").mkdir(parents=True)
    shutil.copy(FIXTURES / "numpy" / "minilm_compressed.npz", root / "numpy")
    for name in ("minilm_f16_v2.npy", "minilm_f32_v1.npy"):
        shutil.copy(FIXTURES / "numpy" / name, root / "numpy" / "arrays")
    good = (weights / "minilm-bf16.safetensors").read_bytes()
    (root / "corrupt.safetensors").write_bytes(good[:4096])
    shutil.copy(weights / "minilm-bf16.safetensors", server.root / "served.safetensors")
    urls = tmp_path / "urls.txt"
    urls.write_text(f"# served, then missing\n{server.url('served.safetensors')}\n\n"
                    f"{server.url('gone.safetensors', '404')}\n")
    return {"dir": root, "urls": urls, "server": server}


def bitlens_catalogue():
    import_bitlens()
    from bitlens import catalogue
    return catalogue


def tables(out):
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    tensors = ds.dataset(str(out / "tensors"), partitioning="hive").to_table()
    return (sorted(tensors.to_pylist(), key=lambda r: (r["file"], r["name"] or "")),
            pq.read_table(out / "files.parquet").to_pylist(),
            pq.read_table(out / "checkpoints.parquet").to_pylist())


def check_against_cli(catalogue, out, sources, summary):
    from bitlens._table import tensor_rows

    files = catalogue.list_files([sources["dir"], sources["urls"]])
    assert len(files) >= 20 and summary.files == len(files)
    assert len({f["checkpoint"] for f in files}) >= 20
    rows, file_rows, checkpoint_rows = tables(out)
    by_file = {r["file"]: r for r in file_rows}
    assert [r["file"] for r in file_rows] == [f["file"] for f in files]
    corrupt = str(sources["dir"] / "corrupt.safetensors")
    missing = sources["server"].url("gone.safetensors", "404")
    assert {f for f, r in by_file.items() if r["status"] == "failed"} == {corrupt, missing}
    assert summary.failed == 2 and summary.measured + summary.reused == len(files) - 2

    assert by_file[corrupt]["error"] == cli_error("inspect", corrupt)
    assert by_file[corrupt]["error_kind"] == "format"
    assert "404" in by_file[missing]["error"] and by_file[missing]["error_kind"] == "remote"
    error_rows = [r for r in rows if r["error"] is not None]
    assert {r["file"] for r in error_rows} == {corrupt, missing}

    for item in files:
        f = item["file"]
        mine = [dict(r, checkpoint_id=None) for r in rows if r["file"] == f]
        if by_file[f]["status"] == "failed":
            continue
        cli = run_json("inspect", f)
        expected = tensor_rows(f, cli)
        for r in expected:
            r.update(checkpoint=item["checkpoint"], checkpoint_id=None, file=f)
        expected.sort(key=lambda r: r["name"])
        assert [{k: r.get(k) for k in mine[0]} for r in expected] == mine, f
        summary_cli = cli["summary"]
        row = by_file[f]
        assert (row["tensors"], row["params"], row["bytes"], row["predicted_bytes"]) == (
            summary_cli["tensors"], summary_cli["params"], summary_cli["bytes"],
            summary_cli["predicted_bytes"]), f
        assert row["file_size"] == cli["files"][0]["file_size"]

    sharded = next(r for r in checkpoint_rows if r["checkpoint"].endswith("model.safetensors.index.json"))
    whole = run_json("inspect", sources["dir"] / "sharded" / "model.safetensors.index.json")["summary"]
    assert (sharded["files"], sharded["tensors"], sharded["bytes"], sharded["predicted_bytes"]) == (
        2, whole["tensors"], whole["bytes"], whole["predicted_bytes"])
    arrays = next(r for r in checkpoint_rows if r["checkpoint"].endswith("arrays"))
    assert arrays["files"] == 2
    return rows


def rerun_does_no_work(catalogue, out, sources, rows, **kwargs):
    import pyarrow.parquet as pq
    # Failed files are tried again (a 404 or a dropped connection may pass next time).
    retried = {catalogue._part_path(str(out), r["checkpoint"], r["file"])
               for r in pq.read_table(out / "files.parquet").to_pylist() if r["status"] == "failed"}
    parts = {p: p.stat().st_mtime_ns for p in (out / "tensors").rglob("*.parquet") if str(p) not in retried}
    sidecars = {p: p.stat().st_mtime_ns for p in (out / "sidecars").rglob("*.json")}
    server = sources["server"]
    served = server.served
    again = catalogue.run([sources["dir"], sources["urls"]], out, progress=False, **kwargs)
    assert again.measured == 0 and again.reused == again.files - 2 and again.failed == 2
    assert {p: p.stat().st_mtime_ns for p in (out / "tensors").rglob("*.parquet")
            if str(p) not in retried} == parts
    assert {p: p.stat().st_mtime_ns for p in (out / "sidecars").rglob("*.json")} == sidecars
    # The served file: its header only, not its tensors.
    header = 8 + int.from_bytes((server.root / "served.safetensors").read_bytes()[:8], "little")
    assert server.served - served <= 2 * header + 65536
    assert tables(out)[0] == rows


@pytest.mark.parametrize("engine", ["ray", "ray-data"])
def test_a_ray_run_on_two_cpus_equals_the_cli_and_resumes(sources, tmp_path, engine):
    catalogue = bitlens_catalogue()
    ray = pytest.importorskip("ray") if os.environ.get("BITLENS_REQUIRE_PACKAGE") != "1" else __import__("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / engine
        summary = catalogue.run([sources["dir"], sources["urls"]], out, engine=engine, progress=False)
        assert summary.engine == engine and summary.workers == 2
        rows = check_against_cli(catalogue, out, sources, summary)
        rerun_does_no_work(catalogue, out, sources, rows, engine=engine)
    finally:
        ray.shutdown()


def test_a_local_run_equals_the_ray_one_and_resumes(sources, tmp_path):
    catalogue = bitlens_catalogue()
    out = tmp_path / "local"
    summary = catalogue.run([sources["dir"], sources["urls"]], out, engine="local", workers=2,
                            progress=False)
    rows = check_against_cli(catalogue, out, sources, summary)
    rerun_does_no_work(catalogue, out, sources, rows, engine="local", workers=2)


def test_compress_writes_the_clis_snapshots_and_sidecars_go_beside_files(sources, tmp_path):
    catalogue = bitlens_catalogue()
    real = sources["dir"] / "real"
    out = tmp_path / "out"
    summary = catalogue.run([real, sources["urls"]], out, workers=2, compress="lmc",
                            sidecars=True, progress=False)
    assert (summary.files, summary.measured, summary.failed) == (4, 3, 1)
    import pyarrow.parquet as pq
    files = {r["file"]: r for r in pq.read_table(out / "files.parquet").to_pylist()}
    for name in ("minilm-bf16.safetensors", "minilm-f16.safetensors"):
        f = real / name
        row = files[str(f)]
        snapshot = row["snapshot"]
        assert snapshot.startswith(str(out / "snapshots" / "lmc")) and snapshot.endswith(".bls")
        run("compress", f, "-o", tmp_path / "cli.bls")
        assert open(snapshot, "rb").read() == (tmp_path / "cli.bls").read_bytes()
        assert row["snapshot_bytes"] == os.path.getsize(snapshot)
        assert row["compress_seconds"] > 0
        # --sidecars: beside the file, where inspect (of a URL) and the embed look.
        sidecar = json.loads((real / f"{name}.bitlens.json").read_text())
        assert sidecar["report"] == run_json("inspect", f) | {"files": sidecar["report"]["files"]}
        assert row["sidecar"] == str(real / f"{name}.bitlens.json")
    served = sources["server"].url("served.safetensors")
    assert files[served]["sidecar"].startswith(str(out / "sidecars" / "127.0.0.1_"))
    # A rerun keeps the snapshots; a changed file is measured and compressed again.
    kept = {f: os.stat(r["snapshot"]).st_mtime_ns for f, r in files.items() if r["snapshot"]}
    changed = real / "minilm-f16.safetensors"
    shutil.copy(real / "minilm-bf16.safetensors", changed)
    again = catalogue.run([real, sources["urls"]], out, workers=2, compress="lmc", sidecars=True,
                          progress=False)
    assert (again.measured, again.reused, again.failed) == (1, 2, 1)
    rows = {r["file"]: r for r in pq.read_table(out / "files.parquet").to_pylist()}
    assert rows[str(changed)]["status"] == "measured"
    assert rows[str(changed)]["snapshot_bytes"] == rows[str(real / "minilm-bf16.safetensors")]["snapshot_bytes"]
    for f, mtime in kept.items():
        if f != str(changed):
            assert os.stat(rows[f]["snapshot"]).st_mtime_ns == mtime and rows[f]["compress_seconds"] is None


def test_the_command_line(sources, tmp_path):
    bitlens_catalogue()
    command = [sys.executable, "-m", "bitlens.catalogue"]
    proc = subprocess.run([*command, sources["dir"] / "gguf", "--out", tmp_path / "a", "--workers", "2"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "catalogue: 10 files (10 measured, 0 reused, 0 failed)" in proc.stderr
    proc = subprocess.run([*command, sources["dir"] / "corrupt.safetensors", "--out", tmp_path / "b",
                           "--quiet"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "1 failed" in proc.stderr
    proc = subprocess.run([*command, tmp_path / "nothing-here", "--out", tmp_path / "c"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "nothing-here: cannot open" in proc.stderr
    proc = subprocess.run([*command, sources["dir"], "--out", tmp_path / "d", "--address", "x"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "--address applies to --engine ray and ray-data" in proc.stderr
