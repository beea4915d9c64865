"""Catalogue runs: the statistics of many checkpoints computed once, on Ray or on this machine.

::

    python -m bitlens.catalogue SOURCES... --out DIR [--engine ray|ray-data|local] [--address ADDR]
                                [--workers N] [--in-flight N] [--compress CODEC] [--sidecars]

SOURCES are checkpoint files, directories (walked: a shard set grouped by its
``*.safetensors.index.json``, a directory's ``.npy`` files one checkpoint, every other file named
as a checkpoint on its own), shard index or file URLs, and text files (``*.txt``, ``*.urls``) of
them, one per line. Each file is one task: ``--engine ray`` runs them as Ray tasks on the
cluster at ``--address`` (or a local one it starts with ``--workers`` CPUs), ``--engine
ray-data`` through Ray Data's ``map`` (one block and one task per file; its streaming executor
costs ~0.1 s a task, BENCHMARKS.md), ``--engine local`` on a pool of ``--workers`` processes. At
most ``--in-flight`` tasks are submitted at once.

DIR receives:

- ``tensors/checkpoint_id=<id>/<file id>.parquet``: one row per tensor (the columns of
  :func:`bitlens.inspect_table` and ``checkpoint``), partitioned by checkpoint — read it with
  ``pyarrow.dataset.dataset(DIR + "/tensors", partitioning="hive")``;
- ``files.parquet``: one row per file: its status (``measured``, ``reused``, ``failed``), error,
  size, header hash, totals and, with ``--compress``, its snapshot's size and time;
- ``checkpoints.parquet``: one row per checkpoint, the totals of its files;
- ``sidecars/``: each file's sidecar (``<file>.bitlens.json``: the ``inspect --json`` document,
  the file's size and header SHA-256) at its mirrored path (``<host>/<path>`` for a URL, the
  absolute path for a local file); with ``--sidecars`` a local file's goes beside it instead,
  where ``bitlens inspect``, the page and ``<bitlens-view>`` find it;
- with ``--compress CODEC``, ``snapshots/<codec>/<mirrored path>.bls``.

A file that fails (corrupt, unreadable, HTTP 404) is a row with its error and never stops the
run. A rerun reads only the header of a file whose sidecar matches its size and header hash and
keeps its rows and snapshot; failed files are tried again.

The rules (which files, what a file's record holds, when a sidecar is current) are the engine's
(``bitlens_engine::catalogue``); this module spreads the files over workers and writes Parquet.
"""
import argparse
import hashlib
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence

from . import _bitlens

#: The engines a run can use: Ray Core tasks, Ray Data, or a local process pool.
ENGINES = ("ray", "ray-data", "local")

__all__ = ["CatalogueSummary", "ENGINES", "files_schema", "checkpoints_schema", "list_files", "process_file",
           "run", "main"]


@dataclass
class CatalogueSummary:
    """What a catalogue run did."""

    #: Files covered.
    files: int
    #: Files whose tensors were read and measured.
    measured: int
    #: Files whose sidecar matched: only their header was read.
    reused: int
    #: Files that failed (their rows carry the error).
    failed: int
    #: Bytes of the files measured (their sizes; reused and failed files not counted).
    measured_bytes: int
    #: Bytes of every file whose size is known.
    total_bytes: int
    #: Wall time of the run in seconds, listing included.
    seconds: float
    #: Workers the run had (processes, or the Ray cluster's CPUs).
    workers: int
    #: The engine: ``ray``, ``ray-data`` or ``local``.
    engine: str

    @property
    def files_per_second(self) -> float:
        """Files covered per second of wall time."""
        return self.files / self.seconds if self.seconds > 0 else 0.0

    @property
    def measured_gb_per_second(self) -> float:
        """Gigabytes (10⁹ bytes) of measured files per second of wall time."""
        return self.measured_bytes / 1e9 / self.seconds if self.seconds > 0 else 0.0


def checkpoint_id(checkpoint: str) -> str:
    """The partition key of a checkpoint: the first 16 hex digits of the SHA-256 of its name."""
    return hashlib.sha256(checkpoint.encode()).hexdigest()[:16]


def files_schema():
    """The columns of ``files.parquet``."""
    import pyarrow as pa
    return pa.schema([
        ("checkpoint", pa.string()),
        ("checkpoint_id", pa.string()),
        ("file", pa.string()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("error_kind", pa.string()),
        ("file_size", pa.int64()),
        ("header_sha256", pa.string()),
        ("sidecar", pa.string()),
        ("tensors", pa.int64()),
        ("params", pa.int64()),
        ("bytes", pa.int64()),
        ("predicted_bytes", pa.int64()),
        ("predicted_ratio", pa.float64()),
        ("snapshot", pa.string()),
        ("snapshot_codec", pa.string()),
        ("snapshot_bytes", pa.int64()),
        ("snapshot_ratio", pa.float64()),
        ("compress_seconds", pa.float64()),
        ("seconds", pa.float64()),
    ])


def checkpoints_schema():
    """The columns of ``checkpoints.parquet``."""
    import pyarrow as pa
    return pa.schema([
        ("checkpoint", pa.string()),
        ("checkpoint_id", pa.string()),
        ("files", pa.int64()),
        ("failed_files", pa.int64()),
        ("errors", pa.list_(pa.string())),
        ("file_bytes", pa.int64()),
        ("tensors", pa.int64()),
        ("params", pa.int64()),
        ("bytes", pa.int64()),
        ("predicted_bytes", pa.int64()),
        ("predicted_ratio", pa.float64()),
        ("snapshot_bytes", pa.int64()),
        ("snapshot_ratio", pa.float64()),
        ("seconds", pa.float64()),
    ])


def tensors_schema():
    """The columns of the per-tensor parts: ``checkpoint`` and :func:`bitlens.inspect_table`'s."""
    import pyarrow as pa
    from ._table import rows_schema
    return pa.schema([pa.field("checkpoint", pa.string())] + list(rows_schema()))


def list_files(sources: Sequence[str]) -> List[Dict[str, str]]:
    """The files a run over ``sources`` covers: ``{"checkpoint", "file"}`` each, in order."""
    return _bitlens.catalogue_files([os.fspath(s) for s in sources])


def _part_path(out: str, checkpoint: str, file: str) -> str:
    return os.path.join(out, "tensors", f"checkpoint_id={checkpoint_id(checkpoint)}",
                        hashlib.sha256(file.encode()).hexdigest()[:24] + ".parquet")


def process_file(item: Dict[str, str], out: str, sidecars: bool = False,
                 compress: Optional[str] = None, threads: Optional[int] = 1) -> Dict[str, Any]:
    """One task: ``item``'s record made by the engine, its tensor rows written as a Parquet part
    under ``out/tensors`` (kept when the file was reused and its part exists), and its row of
    ``files.parquet`` returned."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from ._table import tensor_rows

    record = _bitlens.catalogue_file(item["checkpoint"], item["file"], out, beside=sidecars,
                                     compress=compress, threads=threads)
    part = _part_path(out, record["checkpoint"], record["file"])
    if not (record["status"] == "reused" and os.path.exists(part)):
        if record["report"] is not None:
            rows = tensor_rows(record["file"], record["report"])
            for row in rows:
                row["file"] = record["file"]
                if record["error"] is not None:
                    row["error"] = record["error"]
        else:
            rows = [{"file": record["file"], "error": record["error"]}]
        for row in rows:
            row["checkpoint"] = record["checkpoint"]
        os.makedirs(os.path.dirname(part), exist_ok=True)
        temporary = f"{part}.{os.getpid()}.tmp"
        pq.write_table(pa.Table.from_pylist(rows, schema=tensors_schema()), temporary)
        os.replace(temporary, part)
    return file_row(record)


def file_row(record: Dict[str, Any]) -> Dict[str, Any]:
    """A file's row of ``files.parquet`` from its record (``bitlens_report::catalogue``)."""
    summary = (record["report"] or {}).get("summary") or {}
    fingerprint = record["fingerprint"] or {}
    snapshot = record["snapshot"] or {}
    return {
        "checkpoint": record["checkpoint"],
        "checkpoint_id": checkpoint_id(record["checkpoint"]),
        "file": record["file"],
        "status": record["status"],
        "error": record["error"],
        "error_kind": record["error_kind"],
        "file_size": fingerprint.get("file_size"),
        "header_sha256": fingerprint.get("header_sha256"),
        "sidecar": record["sidecar"],
        "tensors": summary.get("tensors"),
        "params": summary.get("params"),
        "bytes": summary.get("bytes"),
        "predicted_bytes": summary.get("predicted_bytes"),
        "predicted_ratio": summary.get("predicted_ratio"),
        "snapshot": snapshot.get("path"),
        "snapshot_codec": snapshot.get("codec"),
        "snapshot_bytes": snapshot.get("output_bytes"),
        "snapshot_ratio": snapshot.get("ratio"),
        "compress_seconds": snapshot.get("seconds"),
        "seconds": record["seconds"],
    }


def checkpoint_rows(files: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """``checkpoints.parquet``'s rows: each checkpoint's files summed, in first-seen order."""
    rows: Dict[str, Dict[str, Any]] = {}
    for f in files:
        row = rows.setdefault(f["checkpoint"], {
            "checkpoint": f["checkpoint"], "checkpoint_id": f["checkpoint_id"], "files": 0,
            "failed_files": 0, "errors": [], "file_bytes": 0, "tensors": 0, "params": 0,
            "bytes": 0, "predicted_bytes": 0, "snapshot_bytes": None, "seconds": 0.0,
        })
        row["files"] += 1
        row["seconds"] += f["seconds"]
        if f["status"] == "failed":
            row["failed_files"] += 1
            row["errors"].append(f["error"])
        for key, source in (("file_bytes", "file_size"), ("tensors", "tensors"),
                            ("params", "params"), ("bytes", "bytes"),
                            ("predicted_bytes", "predicted_bytes")):
            row[key] += f[source] or 0
        if f["snapshot_bytes"] is not None:
            row["snapshot_bytes"] = (row["snapshot_bytes"] or 0) + f["snapshot_bytes"]
    for row in rows.values():
        row["predicted_ratio"] = row["predicted_bytes"] / row["bytes"] if row["bytes"] else None
        row["snapshot_ratio"] = (row["snapshot_bytes"] / row["file_bytes"]
                                 if row["snapshot_bytes"] is not None and row["file_bytes"]
                                 else None)
    return list(rows.values())


class _Progress:
    """A status line on stderr at most every ``every`` seconds, and the last one at the end."""

    def __init__(self, total: int, stream=sys.stderr, every: float = 2.0, enabled: bool = True):
        self.total, self.stream, self.every, self.enabled = total, stream, every, enabled
        self.started = time.monotonic()
        self.shown = 0.0
        self.done = self.failed = self.reused = self.measured_bytes = 0

    def add(self, row: Dict[str, Any]) -> None:
        self.done += 1
        if row["status"] == "failed":
            self.failed += 1
            if self.enabled:
                print(f"catalogue: failed: {row['error']}", file=self.stream)
        elif row["status"] == "reused":
            self.reused += 1
        else:
            self.measured_bytes += row["file_size"] or 0
        now = time.monotonic()
        if now - self.shown >= self.every or self.done == self.total:
            self.shown = now
            self.show()

    def show(self) -> None:
        if not self.enabled:
            return
        seconds = max(time.monotonic() - self.started, 1e-9)
        print(f"catalogue: {self.done}/{self.total} files, {self.reused} reused, "
              f"{self.failed} failed; {self.measured_bytes / 1e9:.3f} GB measured, "
              f"{self.done / seconds:.1f} files/s, {self.measured_bytes / 1e6 / seconds:.0f} MB/s",
              file=self.stream, flush=True)


def _run_local(files: List[Dict[str, str]], task: Callable[[Dict[str, str]], Dict[str, Any]],
               workers: int, in_flight: int) -> Iterator[Dict[str, Any]]:
    import multiprocessing
    # spawn, not fork: a forked child would inherit the parent's thread pools mid-state.
    with ProcessPoolExecutor(max_workers=workers,
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        pending = set()
        queue = iter(files)
        while True:
            for item in queue:
                pending.add(pool.submit(task, item))
                if len(pending) >= in_flight:
                    break
            if not pending:
                return
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()


def _run_ray(files: List[Dict[str, str]], out: str, sidecars: bool, compress: Optional[str],
             in_flight: int) -> Iterator[Dict[str, Any]]:
    """Ray tasks, one per file (one CPU each), at most ``in_flight`` submitted at once."""
    import ray
    remote = ray.remote(num_cpus=1)(process_file)
    pending: list = []
    queue = iter(files)
    while True:
        for item in queue:
            pending.append(remote.remote(item, out, sidecars, compress))
            if len(pending) >= in_flight:
                break
        if not pending:
            return
        done, pending = ray.wait(pending, num_returns=1)
        yield from ray.get(done)


def _ray_data_task(row: Dict[str, Any], out: str, sidecars: bool,
                   compress: Optional[str]) -> Dict[str, Any]:
    return process_file({"checkpoint": row["checkpoint"], "file": row["file"]}, out, sidecars,
                        compress)


def _run_ray_data(files: List[Dict[str, str]], out: str, sidecars: bool, compress: Optional[str],
                  in_flight: int) -> Iterator[Dict[str, Any]]:
    """Ray Data: the files as a dataset of one block each, mapped by one task per file, at most
    ``in_flight`` at once."""
    import logging
    import ray.data
    # Our status line says what Ray Data's per-dataset log lines would.
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_options.preserve_order = False
    dataset = ray.data.from_items(files, override_num_blocks=len(files)).map(
        _ray_data_task, fn_kwargs={"out": out, "sidecars": sidecars, "compress": compress},
        num_cpus=1, compute=ray.data.TaskPoolStrategy(size=in_flight))
    yield from dataset.iter_rows()


def _ray_workers(address: Optional[str], workers: Optional[int]) -> int:
    import ray
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                     log_to_driver=False)
    return int(ray.cluster_resources().get("CPU", 1))


def run(sources: Sequence[str], out: str, *, engine: str = "local", address: Optional[str] = None,
        workers: Optional[int] = None, in_flight: Optional[int] = None,
        compress: Optional[str] = None, sidecars: bool = False,
        progress: bool = True) -> CatalogueSummary:
    """Runs a catalogue over ``sources`` into ``out`` (see the module's doc) and returns what it
    did. ``engine``: ``"ray"`` (one Ray task per file on the cluster at ``address``, or on a local
    cluster of ``workers`` CPUs started here), ``"ray-data"`` (the same through Ray Data's
    ``map``) or ``"local"`` (``workers`` processes; default: the CPUs).
    ``in_flight``: tasks running or queued at once (default: twice the workers).
    ``compress``: also write each file's ``.bls`` with this codec. ``sidecars``: write a local
    file's sidecar beside it. Errors: a source that does not exist or cannot be listed
    (``OSError``, :class:`bitlens.FormatError` for a bad index); a failing file is a row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: one of {', '.join(ENGINES)}")
    started = time.monotonic()
    out = os.path.abspath(os.fspath(out))
    os.makedirs(out, exist_ok=True)
    files = list_files(sources)
    if engine != "local":
        workers = _ray_workers(address, workers)
    else:
        workers = workers or os.cpu_count() or 1
    in_flight = max(1, in_flight or 2 * workers)
    status = _Progress(len(files), enabled=progress)
    rows = []
    if files:
        if engine == "ray":
            results = _run_ray(files, out, sidecars, compress, in_flight)
        elif engine == "ray-data":
            results = _run_ray_data(files, out, sidecars, compress, in_flight)
        else:
            from functools import partial
            task = partial(process_file, out=out, sidecars=sidecars, compress=compress)
            results = _run_local(files, task, workers, in_flight)
        for row in results:
            rows.append(row)
            status.add(row)
    order = {f["file"]: i for i, f in enumerate(files)}
    rows.sort(key=lambda r: order[r["file"]])
    pq.write_table(pa.Table.from_pylist(rows, schema=files_schema()),
                   os.path.join(out, "files.parquet"))
    pq.write_table(pa.Table.from_pylist(checkpoint_rows(rows), schema=checkpoints_schema()),
                   os.path.join(out, "checkpoints.parquet"))
    summary = CatalogueSummary(
        files=len(rows),
        measured=sum(r["status"] == "measured" for r in rows),
        reused=sum(r["status"] == "reused" for r in rows),
        failed=sum(r["status"] == "failed" for r in rows),
        measured_bytes=sum(r["file_size"] or 0 for r in rows if r["status"] == "measured"),
        total_bytes=sum(r["file_size"] or 0 for r in rows),
        seconds=time.monotonic() - started,
        workers=workers,
        engine=engine,
    )
    return summary


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line: ``python -m bitlens.catalogue --help``. Exit status 0 when every file
    was measured or reused, 1 when some failed (their rows say why), 2 for a usage error."""
    parser = argparse.ArgumentParser(
        prog="python -m bitlens.catalogue",
        description="Statistics (and snapshots) of many checkpoints, computed once each, as "
                    "Parquet tables and sidecars, on Ray or on this machine.")
    parser.add_argument("sources", nargs="+",
                        help="checkpoint files, directories, shard indexes, URLs, or text files "
                             "(*.txt, *.urls) listing them one per line")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="ray: one Ray task per file on a cluster; ray-data: the same "
                             "through Ray Data's map; local: a process pool (default)")
    parser.add_argument("--address", help="the Ray cluster to join (default: start a local one)")
    parser.add_argument("--workers", type=int,
                        help="processes (local), or CPUs of the local Ray cluster started "
                             "(default: this machine's CPUs)")
    parser.add_argument("--in-flight", type=int,
                        help="tasks running or queued at once (default: twice the workers)")
    parser.add_argument("--compress", metavar="CODEC",
                        help="also write each file's .bls snapshot with this codec "
                             "(lmc, auto, neuzip, …) under OUT/snapshots/CODEC")
    parser.add_argument("--sidecars", action="store_true",
                        help="write each local file's sidecar beside it (URLs': under "
                             "OUT/sidecars), where inspect, the page and the embed look")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if args.address and args.engine == "local":
        parser.error("--address applies to --engine ray and ray-data")
    try:
        summary = run(args.sources, args.out, engine=args.engine, address=args.address,
                      workers=args.workers, in_flight=args.in_flight, compress=args.compress,
                      sidecars=args.sidecars, progress=not args.quiet)
    except (OSError, ValueError) as e:
        print(f"bitlens.catalogue: {e}", file=sys.stderr)
        return 2
    print(f"catalogue: {summary.files} files ({summary.measured} measured, {summary.reused} "
          f"reused, {summary.failed} failed) in {summary.seconds:.1f} s on {summary.workers} "
          f"{summary.engine} workers: {summary.files_per_second:.1f} files/s, "
          f"{summary.measured_gb_per_second:.3f} GB/s measured; tables in {args.out}",
          file=sys.stderr)
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
