"""The package on http:// URLs, through the Range server of test_remote.py (it counts the bytes
it serves): `inspect` of a URL equals the CLI's; `safe_open(url).get_tensor` fetches only the
tensor's frames (a snapshot) or its byte range (a safetensors file) and equals the local file's
tensor; `load_file` and `decompress_file` of a URL equal the local ones; a server failure is a
`bitlens.RemoteError` (an `OSError`) with the CLI's message."""
import shutil

import pytest

from conftest import run, run_json
from package_helpers import cli_error, import_bitlens
from test_remote import server  # noqa: F401 (the fixture)

bitlens = import_bitlens()


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_inspect_of_a_url_equals_the_cli(server, weights):
    shutil.copy(weights / "minilm-bf16.safetensors", server.root / "m.safetensors")
    url = server.url("m.safetensors")
    assert bitlens.inspect(url) == run_json("inspect", url)


def test_get_tensor_fetches_only_the_tensors_frames(server, weights):
    local = weights / "minilm-f32.safetensors"
    snap = server.root / "m.bls"
    run("compress", local, "-o", snap, "--codec", "neuzip")
    info = bitlens.inspect(snap)["snapshots"][0]
    t = max((t for t in info["tensors"] if t["bytes"] < 4 << 20), key=lambda t: t["bytes"])
    index_and_header = info["snapshot_size"] - sum(x["stored_bytes"] for x in info["tensors"])
    with bitlens.safe_open(local) as f:
        want = f.get_tensor(t["name"])
    before = server.served
    with bitlens.safe_open(server.url("m.bls")) as f:
        assert server.served - before <= index_and_header + 4096  # the index only
        got = f.get_tensor(t["name"])
    served = server.served - before
    assert same_bits(got, want)
    assert t["stored_bytes"] <= served <= t["stored_bytes"] + index_and_header + 4096
    assert served < snap.stat().st_size / 10


def test_get_tensor_of_a_safetensors_url_reads_its_range(server, weights):
    local = weights / "minilm-bf16.safetensors"
    shutil.copy(local, server.root / "m.safetensors")
    header = 8 + int.from_bytes(local.read_bytes()[:8], "little")
    name = "encoder.layer.0.output.dense.weight"
    before = server.served
    with bitlens.safe_open(server.url("m.safetensors")) as f:
        got = f.get_tensor(name)
        size = got.nbytes
    assert size <= server.served - before <= size + header + 64
    with bitlens.safe_open(local) as f:
        assert same_bits(got, f.get_tensor(name))


def test_load_and_decompress_of_a_url_equal_the_local_file(server, weights, tmp_path):
    local = weights / "minilm-f16.safetensors"
    bitlens.compress_file(local, server.root / "m.bls")
    remote = bitlens.load_file(server.url("m.bls"))
    here = bitlens.load_file(local)
    assert list(remote) == list(here)
    assert all(same_bits(remote[n], here[n]) for n in here)
    bitlens.decompress_file(server.url("m.bls"), tmp_path / "m.safetensors")
    assert (tmp_path / "m.safetensors").read_bytes() == local.read_bytes()


@pytest.mark.parametrize("mode", ["norange", "404", "500", "badrange"])
def test_server_failures_are_remote_errors_with_the_clis_message(server, weights, mode):
    shutil.copy(weights / "minilm-bf16.safetensors", server.root / "m.safetensors")
    url = server.url("m.safetensors", mode)
    for call in (lambda: bitlens.inspect(url), lambda: bitlens.safe_open(url)):
        with pytest.raises(bitlens.RemoteError) as e:
            call()
        assert isinstance(e.value, OSError)
        assert str(e.value) == cli_error("inspect", url)


def test_only_http_urls(weights):
    with pytest.raises(bitlens.UsageError) as e:
        bitlens.inspect("ftp://host/m.safetensors")
    assert str(e.value) == cli_error("inspect", "ftp://host/m.safetensors")
