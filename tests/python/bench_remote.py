"""Times `bitlens inspect URL --json` (tensor table with whole statistics) against a local Range
server (tests/python/test_remote.py's handler), the bytes it served, and the same file read locally.
Usage: BITLENS_BIN=target/release/bitlens .venv/bin/python tests/python/bench_remote.py FILE"""
import http.server
import pathlib
import subprocess
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from conftest import BIN  # noqa: E402
from test_remote import Handler  # noqa: E402

path = pathlib.Path(sys.argv[1]).resolve()
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
srv.root, srv.lock, srv.served, srv.failed = path.parent, threading.Lock(), 0, {}
threading.Thread(target=srv.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{srv.server_address[1]}/ok/{path.name}"


def timed(*args):
    before = srv.served
    t = time.perf_counter()
    subprocess.run([str(BIN), *args], check=True, capture_output=True)
    return time.perf_counter() - t, srv.served - before


size = path.stat().st_size
# Header only (what the tensor table needs): `decompress` of a tiny non-delta snapshot opens its
# `--base` for the header alone (probe + header request) and uses nothing else of it.
import numpy as np  # noqa: E402
import tempfile  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    tiny = pathlib.Path(tmp) / "tiny.safetensors"
    save_file({"x": np.zeros(4, np.float32)}, str(tiny))
    subprocess.run([str(BIN), "compress", str(tiny), "-o", f"{tmp}/tiny.bls"], check=True, capture_output=True)
    head_secs, head_served = timed("decompress", f"{tmp}/tiny.bls", "--base", url, "-o", f"{tmp}/out")
print(f"header only (probe + header of URL): {head_secs * 1e3:.0f} ms for the whole command, served {head_served} bytes")
secs, served = timed("inspect", url, "--json")
local_secs, _ = timed("inspect", str(path), "--json")
print(f"{path.name}: {size} bytes")
print(f"inspect URL (whole stats): {secs:.3f} s, served {served} bytes, {size / secs / 1e6:.0f} MB/s")
print(f"inspect FILE (whole stats): {local_secs:.3f} s, {size / local_secs / 1e6:.0f} MB/s")
srv.shutdown()
