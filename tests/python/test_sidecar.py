"""Sidecars (`<file>.bitlens.json`, docs/REPORTS.md "sidecar"): `bitlens sidecar` writes them
(resumable), and `bitlens inspect URL` uses the one next to a remote file when it matches the file's
size and header — the same JSON as reading every tensor, with only header bytes served — ignores a
mismatched or malformed one with a note, treats a 404 as none, and skips the lookup with
--no-sidecar. The data server is test_remote.py's, logging every request."""
import json
import shutil

import pytest

from conftest import ROOT, run, run_json
from test_remote import Handler, without_paths
from test_remote import server as remote_server  # noqa: F401  (a fixture, used below)

FIXTURES = ROOT / "tests" / "fixtures"
USED = "(matches size and header)"


class Logged(Handler):
    """test_remote's handler, recording each GET's path and the length of the body it answered
    (0 for an error)."""

    def send_response(self, code, message=None):
        self.status = code
        super().send_response(code, message)

    def send_header(self, keyword, value):
        if keyword == "Content-Length" and 200 <= self.status < 300:
            self.length = int(value)
        super().send_header(keyword, value)

    def do_GET(self):
        self.status, self.length = 0, 0
        super().do_GET()
        with self.server.lock:
            self.server.log.append((self.path.split("/", 2)[2], self.length))


@pytest.fixture
def server(remote_server):
    """test_remote's server, its requests logged: `log` of (name, bytes), `bytes_of(name)`."""
    remote_server.RequestHandlerClass = Logged
    remote_server.log = []
    remote_server.bytes_of = lambda name: sum(n for p, n in remote_server.log if p == name)
    return remote_server


def header_len(path):
    return int.from_bytes(path.read_bytes()[:8], "little")


def inspect_url(url, *extra):
    proc = run("inspect", "--json", url, *extra)
    return json.loads(proc.stdout), proc.stderr


def test_a_matching_sidecar_gives_the_same_json_from_header_bytes_alone(server, weights):
    model = server.root / "m.safetensors"
    shutil.copy(weights / "minilm-bf16.safetensors", model)
    made = run("sidecar", model)
    assert "wrote" in made.stderr and "m.safetensors.bitlens.json" in made.stderr, made.stderr
    sidecar = json.loads((server.root / "m.safetensors.bitlens.json").read_text())
    assert sidecar["format"] == "bitlens-sidecar" and sidecar["version"] == 1
    assert sidecar["file"] == "m.safetensors" and sidecar["file_size"] == model.stat().st_size
    assert sidecar["header_offset"] == 0 and sidecar["header_bytes"] == 8 + header_len(model)
    assert without_paths(sidecar["report"]) == without_paths(run_json("inspect", model))

    url = server.url("m.safetensors")
    used, err = inspect_url(url)
    assert f"bitlens: statistics from {url}.bitlens.json {USED}" in err, err
    # Only header bytes of the model were served (the probe, and the header read twice: once to
    # list the tensors, once to hash it).
    assert server.bytes_of("m.safetensors") <= 8 + 2 * (8 + header_len(model)), server.log
    server.log.clear()
    read, err = inspect_url(url, "--no-sidecar")
    assert "sidecar" not in err and "bitlens.json" not in err, err
    assert not any(p.endswith(".bitlens.json") for p, _ in server.log), server.log
    assert server.bytes_of("m.safetensors") >= model.stat().st_size
    assert used == read  # the same document, byte for byte as JSON values


def test_sidecars_are_kept_when_they_match_and_rewritten_when_asked(server, weights, tmp_path):
    (tmp_path / "local").mkdir()
    model = tmp_path / "local" / "m.safetensors"
    shutil.copy(weights / "minilm-f16.safetensors", model)
    out = tmp_path / "out"
    run("sidecar", model, "--dir", out)
    written = out / "m.safetensors.bitlens.json"
    before = written.stat().st_mtime_ns
    again = run("sidecar", model, "--dir", out)
    assert "(kept)" in again.stderr and written.stat().st_mtime_ns == before, again.stderr
    assert "wrote" in run("sidecar", model, "--dir", out, "--force").stderr
    # A URL's sidecar goes under DIR/<host>/<path>, and says the same of the same bytes.
    shutil.copy(model, server.root / "m.safetensors")
    url = server.url("m.safetensors")
    run("sidecar", url, "--dir", out)
    host = f"127.0.0.1_{server.server_address[1]}"
    remote = json.loads((out / host / "ok" / "m.safetensors.bitlens.json").read_text())
    local = json.loads(written.read_text())
    assert remote["report"]["files"][0]["path"] == url
    assert without_paths(remote["report"]) == without_paths(local["report"])
    assert {k: v for k, v in remote.items() if k != "report"} == {k: v for k, v in local.items() if k != "report"}
    # A URL needs --dir; a missing file fails alone, the others are written.
    assert "--dir" in run("sidecar", url, check=False).stderr
    proc = run("sidecar", tmp_path / "local" / "missing.safetensors", model, "--dir", out, check=False)
    assert proc.returncode == 1 and "1 of 2 sidecars could not be written" in proc.stderr, proc.stderr
    assert "(kept)" in proc.stderr


def test_no_sidecar_is_none_and_a_mismatched_or_malformed_one_is_noted_and_ignored(server, weights):
    shutil.copy(weights / "minilm-f16.safetensors", server.root / "m.safetensors")
    url = server.url("m.safetensors")
    reference, err = inspect_url(url, "--no-sidecar")
    # 404: nothing said, the file read as before.
    none, err = inspect_url(url)
    assert "bitlens.json" not in err, err
    assert none == reference
    # Another file's sidecar (the bf16 weights: another size).
    shutil.copy(weights / "minilm-bf16.safetensors", server.root / "other.safetensors")
    run("sidecar", server.root / "other.safetensors")
    shutil.move(server.root / "other.safetensors.bitlens.json", server.root / "m.safetensors.bitlens.json")
    server.log.clear()
    ignored, err = inspect_url(url)
    size = (weights / "minilm-f16.safetensors").stat().st_size
    assert f"bitlens: {url}.bitlens.json ignored: it describes a file of" in err and f"the file has {size}" in err, err
    assert "statistics are computed from the file" in err
    assert ignored == reference
    assert server.bytes_of("m.safetensors") >= size
    # The same size, another header: the hash tells them apart.
    doc = json.loads((server.root / "m.safetensors.bitlens.json").read_text())
    doc["file_size"] = size
    doc["report"]["files"][0]["file_size"] = size
    (server.root / "m.safetensors.bitlens.json").write_text(json.dumps(doc))
    ignored, err = inspect_url(url)
    assert "ignored: its header hash differs from the file's" in err, err
    assert ignored == reference
    # Not a sidecar at all.
    (server.root / "m.safetensors.bitlens.json").write_text('{"files": []}')
    ignored, err = inspect_url(url)
    assert "ignored: not a bitlens sidecar" in err, err
    assert ignored == reference


@pytest.mark.parametrize("fixture", ["gguf/q4_k.gguf", "numpy/minilm_compressed.npz", "torch/state_bf16.pt",
                                     "torch/state_f16_legacy.pt", "numpy/minilm_f16_v2.npy"])
def test_sidecars_of_other_formats_are_used_by_their_header_rule(server, fixture):
    name = fixture.split("/")[1]
    shutil.copy(FIXTURES / fixture, server.root / name)
    run("sidecar", server.root / name)
    sidecar = json.loads((server.root / f"{name}.bitlens.json").read_text())
    zipped = name.endswith((".npz", ".pt")) and not name.endswith("_legacy.pt")
    assert (sidecar["header_offset"] > 0) == zipped, sidecar["header_offset"]
    assert sidecar["header_offset"] + sidecar["header_bytes"] <= sidecar["file_size"]
    url = server.url(name)
    used, err = inspect_url(url)
    assert USED in err, err
    read, _ = inspect_url(url, "--no-sidecar")
    assert used == read
