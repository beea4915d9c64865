"""The GIL is released while bitlens works: while one thread is inside a long bitlens call,
another Python thread keeps running (its loop never stands still for a large part of the call,
as it would with the GIL held: a comparison of the call with itself, not a speed limit), and
several threads calling bitlens at once get the results they get one after another. Warnings
reach Python as `bitlens.BitlensWarning`s."""
import json
import threading
import time

import pytest

from package_helpers import import_bitlens

bitlens = import_bitlens()


def test_python_runs_while_bitlens_works(weights, tmp_path):
    """While a worker thread is inside one long call, the main thread's loop never stops for
    long: with the GIL held the loop would stand still for the whole call."""
    src = weights / "minilm-f32.safetensors"
    call = {}
    done = threading.Event()

    def work():
        call["start"] = time.perf_counter()
        bitlens.compress_file(src, tmp_path / "m.bls", codec="neuzip", threads=1)
        call["end"] = time.perf_counter()
        done.set()

    ticks = []
    worker = threading.Thread(target=work)
    worker.start()
    while not done.is_set():
        ticks.append(time.perf_counter())
    worker.join()
    inside = [t for t in ticks if call["start"] <= t <= call["end"]]
    edges = [call["start"], *inside, call["end"]]
    longest_stop = max(b - a for a, b in zip(edges, edges[1:]))
    assert longest_stop < 0.5 * (call["end"] - call["start"]), (longest_stop, call)


def test_calls_from_threads_run_at_once_and_agree(weights, tmp_path):
    paths = [weights / f"minilm-{d}.safetensors" for d in ("bf16", "f16", "f32")]
    alone = [json.dumps(bitlens.inspect(p), sort_keys=True) for p in paths]
    together = [None] * len(paths)
    errors = []

    def work(i):
        try:
            together[i] = json.dumps(bitlens.inspect(paths[i], threads=1), sort_keys=True)
            # The global pool, shared by the calls (as the CLI's default).
            bitlens.compress_file(paths[i], tmp_path / f"{i}.bls")
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(paths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert together == alone
    for i, p in enumerate(paths):
        bitlens.decompress_file(tmp_path / f"{i}.bls", tmp_path / f"{i}.safetensors")
        assert (tmp_path / f"{i}.safetensors").read_bytes() == p.read_bytes()


def test_warnings_reach_python(weights, tmp_path):
    arrays = tmp_path / "idx"
    arrays.mkdir()
    src = weights / "minilm-bf16.safetensors"
    (arrays / "model.safetensors").write_bytes(src.read_bytes())
    # An index that lists one tensor only: the others are in the file but not in the index.
    (arrays / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"embeddings.position_ids": "model.safetensors"}}))
    with pytest.warns(bitlens.BitlensWarning, match="not listed in"):
        bitlens.inspect(arrays / "model.safetensors.index.json")


def test_pools_are_kept_per_thread_and_remade_after_fork(weights, tmp_path):
    """A thread's `threads=n` pool is kept for its next calls (repeated calls agree), each
    Python thread has its own, and a child forked after the parent's calls makes its own pool
    (the parent's has no threads in the child): its call finishes and agrees."""
    import os

    src = weights / "minilm-bf16.safetensors"
    bitlens.compress_file(src, tmp_path / "a.bls", threads=1)
    for i, n in enumerate((1, 2, 1)):
        bitlens.compress_file(src, tmp_path / f"b{i}.bls", threads=n)
        assert (tmp_path / f"b{i}.bls").read_bytes() == (tmp_path / "a.bls").read_bytes()
    errors = []

    def work(i):
        try:
            bitlens.decompress_file(tmp_path / "a.bls", tmp_path / f"t{i}.out", threads=1)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(3):
        assert (tmp_path / f"t{i}.out").read_bytes() == src.read_bytes()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            bitlens.decompress_file(tmp_path / "a.bls", tmp_path / "child.out", threads=1)
            code = 0 if (tmp_path / "child.out").read_bytes() == src.read_bytes() else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 20
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            pytest.fail("the forked child's call did not finish in 20 s")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0
