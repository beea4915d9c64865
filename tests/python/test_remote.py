"""bitlens on http:// URLs: range reads against a local server on 127.0.0.1 that counts what it
serves, compared with the same commands on local files; each server failure gives one line, exit 1."""
import filecmp
import http.server
import json
import re
import shutil
import threading

import pytest

from conftest import run, run_json


class Handler(http.server.BaseHTTPRequestHandler):
    """Serves `server.root`; the first path segment picks a mode: ok, norange, 404, 500, flaky (500
    once per file, then ok), badrange (Content-Range off by one), replace (the file is replaced by
    another version of the same size right after its first answer). Answers carry an ETag (size,
    mtime and version of the file); a request whose If-Range does not match it gets the whole
    file with 200, as HTTP says."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server
        _, mode, name = self.path.split("/", 2)
        path = srv.root / name
        if mode == "404" or not path.is_file():
            return self.send_error(404)
        if mode == "500":
            return self.send_error(500)
        if mode == "flaky":
            with srv.lock:
                srv.failed[name] = srv.failed.get(name, 0) + 1
                first = srv.failed[name] == 1
            if first:
                return self.send_error(500)
        st = path.stat()
        size = st.st_size
        with srv.lock:
            etag = f'"{size:x}-{st.st_mtime_ns:x}-{srv.versions.get(name, 0)}"'
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        if_range = self.headers.get("If-Range")
        with open(path, "rb") as f:
            if mode == "norange" or not m or (if_range is not None and if_range != etag):
                body, status, extra = f.read(), 200, {}
            else:
                start, end = int(m[1]), min(int(m[2]), size - 1)
                f.seek(start)
                body, status = f.read(end + 1 - start), 206
                shown = (start + 1, end + 1) if mode == "badrange" else (start, end)
                extra = {"Content-Range": f"bytes {shown[0]}-{shown[1]}/{size}"}
        with srv.lock:
            replace = mode == "replace" and name not in srv.versions
            if replace:
                # The new version is in place before this answer leaves: every later request
                # sees it, this one still carries the old ETag.
                data = bytearray(path.read_bytes())
                data[-1] ^= 0xFF
                tmp = path.with_suffix(".new")
                tmp.write_bytes(data)
                tmp.replace(path)
                srv.versions[name] = 1
        self.send_response(status)
        for k, v in extra.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", etag)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            return
        with srv.lock:
            srv.served += len(body)


@pytest.fixture
def server(tmp_path):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.root, srv.lock, srv.served, srv.failed, srv.versions = tmp_path, threading.Lock(), 0, {}, {}
    srv.url = lambda name, mode="ok": f"http://127.0.0.1:{srv.server_address[1]}/{mode}/{name}"
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def without_paths(doc):
    for f in doc["files"]:
        f.pop("path")
    return doc


def test_inspect_url_equals_inspect_file(server, weights):
    local = weights / "minilm-bf16.safetensors"
    shutil.copy(local, server.root / "m.safetensors")
    remote = run_json("inspect", server.url("m.safetensors"))
    assert remote["files"][0]["path"] == server.url("m.safetensors")
    assert without_paths(remote) == without_paths(run_json("inspect", local))
    size = local.stat().st_size
    assert size <= server.served <= size + 64


def test_header_only_reads_are_tiny(server, weights):
    shutil.copy(weights / "minilm-f32.safetensors", server.root / "m.safetensors")
    # A --base that the (non-delta) snapshot does not use is opened for its header only.
    snap = server.root / "x.bls"
    run("compress", weights / "minilm-f32.safetensors", "-o", snap)
    run("decompress", snap, "--base", server.url("m.safetensors"), "-o", server.root / "y")
    header_len = int.from_bytes((weights / "minilm-f32.safetensors").read_bytes()[:8], "little")
    assert server.served <= 8 + 8 + header_len


def test_diff_url_equals_diff_file(server, weights):
    a, b = weights / "minilm-f32.safetensors", weights / "minilm-bf16.safetensors"
    shutil.copy(a, server.root / "a.safetensors")
    remote = run_json("diff", server.url("a.safetensors"), b)
    local = run_json("diff", a, b)
    for d in (remote, local):
        d.pop("a")
    assert remote == local


def test_sharded_checkpoint_by_index_url(server, weights):
    shutil.copy(weights / "minilm-bf16.safetensors", server.root / "model-00001-of-00001.safetensors")
    header = json.loads(run("inspect", "--json", weights / "minilm-bf16.safetensors").stdout)
    names = [t["name"] for t in header["files"][0]["tensors"]]
    index = {"metadata": {}, "weight_map": {n: "model-00001-of-00001.safetensors" for n in names}}
    (server.root / "model.safetensors.index.json").write_text(json.dumps(index))
    remote = run_json("inspect", server.url("model.safetensors.index.json"))
    assert remote["files"][0]["path"] == server.url("model-00001-of-00001.safetensors")
    assert without_paths(remote) == without_paths(run_json("inspect", server.root / "model.safetensors.index.json"))
    bad = {"metadata": {}, "weight_map": {names[0]: "../secret.safetensors"}}
    (server.root / "bad.safetensors.index.json").write_text(json.dumps(bad))
    proc = run("inspect", server.url("bad.safetensors.index.json"), check=False)
    assert proc.returncode == 1 and "`..`" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_decompress_one_tensor_from_a_url_reads_only_its_frames(server, weights):
    local = weights / "minilm-f32.safetensors"
    snap = server.root / "m.bls"
    run("compress", local, "-o", snap)
    info = run_json("inspect", snap)["snapshots"][0]
    t = max((t for t in info["tensors"] if t["bytes"] < 4 << 20), key=lambda t: t["bytes"])
    run("decompress", snap, "--tensor", t["name"], "-o", server.root / "local.safetensors")
    served_before = server.served
    run("decompress", server.url("m.bls"), "--tensor", t["name"], "-o", server.root / "remote.safetensors")
    assert filecmp.cmp(server.root / "local.safetensors", server.root / "remote.safetensors", shallow=False)
    served = server.served - served_before
    index_and_header = info["snapshot_size"] - sum(x["stored_bytes"] for x in info["tensors"])
    assert t["stored_bytes"] <= served <= t["stored_bytes"] + index_and_header + 4096
    assert served < snap.stat().st_size / 10


def test_flaky_server_is_retried(server, weights):
    shutil.copy(weights / "minilm-f16.safetensors", server.root / "m.safetensors")
    remote = run_json("inspect", server.url("m.safetensors", "flaky"))
    assert without_paths(remote) == without_paths(run_json("inspect", weights / "minilm-f16.safetensors"))


@pytest.mark.parametrize(
    "mode, message",
    [
        ("norange", "ignores Range requests"),
        ("404", "HTTP 404"),
        ("500", "HTTP 500 Internal Server Error (after 3 tries)"),
        ("badrange", "does not match the request"),
    ],
)
def test_server_failures_give_one_line_naming_the_url(server, weights, mode, message):
    shutil.copy(weights / "minilm-bf16.safetensors", server.root / "m.safetensors")
    url = server.url("m.safetensors", mode)
    for args in (["inspect", url], ["diff", url, weights / "minilm-bf16.safetensors"]):
        before = server.served
        proc = run(*args, check=False)
        assert proc.returncode == 1, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and url in lines[0] and message in lines[0], proc.stderr
        assert server.served - before < 1024 or mode == "norange"


def test_small_files_may_be_read_whole_on_request(server, weights):
    shutil.copy(weights / "minilm-bf16.safetensors", server.root / "m.safetensors")
    url = server.url("m.safetensors", "norange")
    assert "--download-small" in run("inspect", url, check=False).stderr
    before = server.served
    remote = run_json("--download-small", "inspect", url)
    assert without_paths(remote) == without_paths(run_json("inspect", weights / "minilm-bf16.safetensors"))
    # The probe's own 200 answer is the file: it is downloaded once, not twice.
    assert server.served - before == (weights / "minilm-bf16.safetensors").stat().st_size


def test_a_file_replaced_between_requests_is_refused(server, weights):
    shutil.copy(weights / "minilm-bf16.safetensors", server.root / "m.safetensors")
    url = server.url("m.safetensors", "replace")
    proc = run("inspect", url, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert url in lines[0] and "changed on the server" in lines[0], proc.stderr
    # The same file, unchanged, reads as before: its ETag matches every If-Range.
    assert run_json("inspect", server.url("m.safetensors"))["files"][0]["tensors"]


def test_only_http_urls(weights):
    proc = run("inspect", "ftp://127.0.0.1/m.safetensors", check=False)
    assert proc.returncode == 1 and "only http and https" in proc.stderr
