"""ZipNN beside bitlens on the same files in the same run, on every path a user can take (issue 16).

For each file, ROUNDS rounds, each running every measurement once in the same order, so that all
see the same machine state (the machine is shared: the spread between rounds is real):
- ZipNN (PyPI `zipnn`, byte grouping + huff0) compresses and decompresses the whole file in memory
  on one thread (its API returns fresh buffers);
- `bitlens --threads T bench F --codecs lmc,snapshot --repeat 2` for T = 1 and 2: the `lmc` row is
  the codec alone (every tensor into reused buffers), the `snapshot` row the whole container in
  memory (frames, checksums, index; decoded back and compared); the best of its two passes;
  with T = 1 also `bg4-lz4`, its `bg4-lz4 (whole file)` row: the hub's own Xet storage scheme
  (64 KiB content-defined chunks, each stored as it is, LZ4 or byte-grouped LZ4; issue 28) on the
  whole file, one thread, the peer a hub sets beside ZipNN and LMC;
- the CLI as a user runs it: `bitlens --threads T compress F -o /dev/null`, `compress F -o
  F.bls`, `decompress F.bls -o /dev/null`, `decompress F.bls -o F.out`. Its inputs are where a
  user's checkpoints are, files on disk in the page cache (F itself and a copy of F.bls under
  .cache/bench-peers, the same bytes; both dropped from the cache and read back through once, so
  they sit in the large folios a download or a copy leaves, whatever read them before); the
  outputs F.bls and F.out are on tmpfs (/dev/shm), and F.out is compared with F. One more row
  reads the inputs from tmpfs: this kernel copies a tmpfs file out in 4 KiB pages and an ext4
  file in large folios, which costs the CLI ~2 ms more per 30 MB read, a sixth of a
  decompression. Wall time of the whole process started bare (a `perf` or `time` wrapper's own
  start would count), its CPU time from wait4's rusage, and for the file -> file runs its peak
  RSS from another run of it under /usr/bin/time.
- the floor of any CLI that starts a process per file, in the same rounds: `dd` reading the same
  input (F to compress, F.bls to decompress) to /dev/null, started the same way. ZipNN's time
  divided by it is the largest multiple of ZipNN such a process can reach, before it codes a
  byte: on small files (13 MB) it is below issue 28's 1.5×, ZipNN being timed inside a running
  Python on bytes already in memory.
- this binary's own start in the same rounds: `bitlens --version` started the same way (loader,
  runtime, arguments; no file, no codec). A one-thread CLI on this codec takes at least its start
  plus the codec alone's time (measured with hot caches and reused buffers, and without the
  reading, checksums and output the CLI also does), so ZipNN's time divided by that sum is the
  most such a CLI can reach: where it is under 1.5, issue 28's target needs a faster codec, not
  a leaner CLI.
- with --page (bench-peers.sh does it when the web app is built), the page: the app in headless
  Chromium (tests/e2e/bench-page.mjs, started once per file and driven round by round) compresses
  F with LMC and decompresses its snapshot, the whole in-page path from the click to the result on
  the page (File read, wasm, codec, output folded into a Blob), with the single-threaded build
  (page not cross-origin isolated: one thread) and the threaded build (isolated page; when
  scripts/build-web.sh made it), compared with the CLI on 1 and 2 threads; the page's snapshot is
  checked to be the CLI's and its restored file F, byte for byte, once per build. Also the CPU
  time of every browser process meanwhile (single-threaded build), beside the CLI's, and the
  browser's own floor in the same rounds (tests/e2e/page-floor.mjs: the same input read and an
  output of the same size written, with no codec), which the page's time is divided by.
Speeds are of the fastest round (min time) and of the median round; "÷ ZipNN" divides each by
ZipNN's of the same kind (min by min, median by median). Prints a table and, with --json, one JSON
document.
Usage: bench_peers.py BITLENS_BIN FILE... [--rounds N] [--page] [--json]
"""
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time

import zipnn

ST_TO_ZIPNN = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}
SHM = "/dev/shm/bitlens-bench-peers"
DISK = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    ".cache", "bench-peers")
THREADS = (1, 2)


def main_dtype(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    sizes = {}
    for name, info in header.items():
        if name != "__metadata__":
            s, e = info["data_offsets"]
            sizes[info["dtype"]] = sizes.get(info["dtype"], 0) + e - s
    return max(sizes, key=sizes.get)


class Series:
    """Wall times of one measurement, one per round."""

    def __init__(self):
        self.times = []

    def add(self, seconds):
        self.times.append(seconds)

    def speeds(self, nbytes):
        """(best, median) speed in GB/s."""
        gb = nbytes / 1e9
        return gb / min(self.times), gb / statistics.median(self.times)


def zipnn_round(z, raw, series, sizes):
    data = bytearray(raw)  # zipnn may modify its input in place
    c0, t0 = time.process_time(), time.perf_counter()
    packed = z.compress(data)
    c1, t1 = time.process_time(), time.perf_counter()
    out = z.decompress(packed)
    c2, t2 = time.process_time(), time.perf_counter()
    assert bytes(out) == raw, "zipnn did not round-trip"
    series[("zipnn", 1, "compress")].add(t1 - t0)
    series[("zipnn", 1, "decompress")].add(t2 - t1)
    series[("zipnn cpu", 1, "compress")].add(c1 - c0)
    series[("zipnn cpu", 1, "decompress")].add(c2 - c1)
    sizes["zipnn"] = len(packed)


BENCH_ROWS = {"lmc": "codec", "snapshot (whole file)": "container", "bg4-lz4 (whole file)": "bg4-lz4"}


def bench_round(binary, path, threads, series, sizes, nbytes):
    """One `bitlens bench` run: codec alone and container in memory, best of its 2 passes; on one
    thread also the hub's bg4-lz4 on the whole file (a peer: always one thread)."""
    codecs = "lmc,snapshot" + (",bg4-lz4" if threads == 1 else "")
    out = subprocess.run([binary, "--threads", str(threads), "bench", path, "--codecs", codecs,
                          "--repeat", "2", "--json"], check=True, capture_output=True, text=True).stdout
    for r in json.loads(out)["results"]:
        name = BENCH_ROWS.get(r["codec"])
        if r["threads"] != threads or name is None:
            continue
        for verb in ("compress", "decompress"):
            series[(name, threads, verb)].add(nbytes / 1e6 / r[f"{verb}_mb_s"])
        sizes[name] = r["compressed_bytes"]


def spawn(cmd, err):
    """Starts `cmd` with posix_spawn (no copy of this large Python process), stdout to /dev/null
    and stderr to the file `err`; returns (wall seconds from spawn to reap, wait4's rusage)."""
    actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(cmd[0], cmd, os.environ, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        with open(err) as f:
            raise RuntimeError(f"{cmd} failed: {f.read()}")
    return wall, usage


def timed(cmd):
    """Runs a command bare (a `perf stat` or /usr/bin/time wrapper would add its own start, ~8 ms,
    to a ~16 ms run); returns (wall seconds, CPU seconds): CPU time is wait4's user + system time,
    the kernel's exact runtime of the process (as `perf stat`'s task-clock)."""
    wall, usage = spawn(cmd, os.path.join(SHM, "stderr"))
    return wall, usage.ru_utime + usage.ru_stime


def peak_rss(cmd):
    """Peak RSS in MB of a separate run of `cmd` under /usr/bin/time: a process spawned straight
    from here shares this process's memory until its exec, and the kernel counts that in its
    peak."""
    rss = os.path.join(SHM, "rss")
    spawn(["/usr/bin/time", "-f", "%M", "-o", rss, *cmd], os.path.join(SHM, "stderr"))
    with open(rss) as f:
        return int(f.read().split()[-1]) / 1024


def cache_by_reading(path):
    """Puts `path` in the page cache the way reading it does: drops its cached pages, then reads it
    through. How a file came into the cache decides how fast it is copied out: pages faulted in
    through a memory map (Python's safetensors maps its files) sit in small folios, which the
    kernel copied out at about a quarter of the speed of the large folios a read or a write leaves
    (45 MB with `dd`, its own start taken off: 7.0 ms against 1.8 ms), and the CLI's read is a
    sixth to a third of its run. So every input starts from the same state, the one a download or
    a copy leaves."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 20):
            pass
    finally:
        os.close(fd)


def cli_round(binary, path, src, disk_bls, threads, series, rss):
    """The CLI runs of one round: inputs `path` and `disk_bls` on disk (page cache), outputs on
    tmpfs; `src` (a copy of `path`) and its .bls on tmpfs for the tmpfs-input row."""
    bls, out = src + ".bls", src + ".out"
    b = [binary, "--threads", str(threads)]
    # LMC, named, as in the codec and container rows (the default today; `--codec auto` may
    # become it: BENCHMARKS.md, "Automatic codec choice").
    runs = [("cli-null", "compress", b + ["compress", path, "-o", "/dev/null", "--codec", "lmc"]),
            ("cli-file", "compress", b + ["compress", path, "-o", bls, "--codec", "lmc"]),
            ("cli-null", "decompress", b + ["decompress", disk_bls, "-o", "/dev/null"]),
            ("cli-file", "decompress", b + ["decompress", disk_bls, "-o", out]),
            ("cli-tmpfs", "compress", b + ["compress", src, "-o", "/dev/null", "--codec", "lmc"]),
            ("cli-tmpfs", "decompress", b + ["decompress", bls, "-o", "/dev/null"])]
    if threads == 1:
        for verb, src_file in (("compress", path), ("decompress", disk_bls)):
            floor = ["/usr/bin/dd", f"if={src_file}", "of=/dev/null", "bs=4M", "status=none"]
            series[("process floor", 1, verb)].add(timed(floor)[0])
            # This binary started and stopped with no work (loader, runtime, arguments): what
            # its process costs before it opens a file.
            series[("process start", 1, verb)].add(timed([binary, "--version"])[0])
    for name, verb, cmd in runs:
        wall, cpu = timed(cmd)
        series[(name, threads, verb)].add(wall)
        if threads == 1:
            series[(name + " cpu", threads, verb)].add(cpu)
        if name == "cli-file":
            mb = peak_rss(cmd)
            rss[(name, threads, verb)] = max(rss.get((name, threads, verb), 0), mb)
    with open(path, "rb") as a, open(out, "rb") as c:
        assert a.read() == c.read(), "bitlens decompress did not restore the file"
    with open(bls, "rb") as a, open(disk_bls, "rb") as c:
        assert a.read() == c.read(), "bitlens compress wrote other bytes than before"
    sizes = os.path.getsize(bls)
    os.remove(out)
    return sizes


class Page:
    """The page's coprocess for one file (tests/e2e/bench-page.mjs): it opens the app once per
    build and checks its output; each `round` is one compression and one decompression per build."""

    ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def __init__(self, binary, path):
        env = dict(os.environ, BITLENS_BIN=os.path.abspath(binary))
        script = os.path.join(self.ROOT, "tests", "e2e", "bench-page.mjs")
        self.proc = subprocess.Popen(["node", script, os.path.abspath(path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=self.ROOT)
        self.builds = self._answer()["ready"]

    def _answer(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"bench-page.mjs ended (exit {self.proc.wait()}): see its messages above")
        return json.loads(line)

    def round(self, series):
        """One round: series ("page", 1, verb) of the single-threaded build, ("page", 2, verb) of
        the threaded one; each build's (ratio, threads)."""
        self.proc.stdin.write("round\n")
        self.proc.stdin.flush()
        seen = {}
        answer = self._answer()
        for v in ("compress", "decompress"):
            series[("page floor", 1, v)].add(answer["floor"][f"{v}_s"])
        for b in answer["round"]:
            t = 1 if b["build"] == "single" else 2
            series[("page", t, "compress")].add(b["compress_s"])
            series[("page", t, "decompress")].add(b["decompress_s"])
            if t == 1:
                series[("page cpu", t, "compress")].add(b["compress_cpu_s"])
                series[("page cpu", t, "decompress")].add(b["decompress_cpu_s"])
            seen[t] = {"ratio": b["ratio"], "threads": b["threads"]}
        return seen

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


PATHS = [("codec", "LMC codec alone (`bench`, lmc)"),
         ("container", "container in memory (`bench`, snapshot)"),
         ("cli-null", "CLI file -> /dev/null"),
         ("cli-file", "CLI file -> file (tmpfs)"),
         ("cli-tmpfs", "CLI tmpfs file -> /dev/null")]


def measure(binary, path, rounds, page):
    os.makedirs(SHM, exist_ok=True)
    os.makedirs(DISK, exist_ok=True)
    src = os.path.join(SHM, os.path.basename(path))
    shutil.copyfile(path, src)
    disk_bls = os.path.join(DISK, os.path.basename(path) + ".bls")
    subprocess.run([binary, "compress", path, "-o", disk_bls, "--codec", "lmc"], check=True,
                   capture_output=True)
    for f in (path, disk_bls):
        cache_by_reading(f)
    raw = open(path, "rb").read()
    n = len(raw)
    z = zipnn.ZipNN(input_format="byte", bytearray_dtype=ST_TO_ZIPNN[main_dtype(path)], threads=1)
    keys = [(p, 1, v) for p in ("zipnn", "bg4-lz4") for v in ("compress", "decompress")] + [
        (p, t, v) for p, _ in PATHS for t in THREADS for v in ("compress", "decompress")]
    keys += [(p + " cpu", 1, v) for p in ("zipnn", "cli-null", "cli-file", "cli-tmpfs")
             for v in ("compress", "decompress")]
    keys += [(p, 1, v) for p in ("process floor", "process start") for v in ("compress", "decompress")]
    keys += [("page", t, v) for t in THREADS for v in ("compress", "decompress")] if page else []
    keys += [(p, 1, v) for p in ("page cpu", "page floor") for v in ("compress", "decompress")] if page else []
    series = {k: Series() for k in keys}
    sizes, rss, builds = {}, {}, {}
    browser = Page(binary, path) if page else None
    try:
        for _ in range(rounds):
            zipnn_round(z, raw, series, sizes)
            for t in THREADS:
                bench_round(binary, path, t, series, sizes, n)
                sizes["cli"] = cli_round(binary, path, src, disk_bls, t, series, rss)
            if browser:
                builds = browser.round(series)
    finally:
        if browser:
            browser.close()
        for f in (src, src + ".bls", src + ".out", disk_bls):
            if os.path.exists(f):
                os.remove(f)
    speeds = {f"{p} {t} {v}": dict(zip(("best_gb_s", "median_gb_s"), s.speeds(n)))
              for (p, t, v), s in series.items() if s.times}
    return {"file": path, "dtype": main_dtype(path), "bytes": n, "rounds": rounds,
            "ratio": {k: v / n for k, v in sizes.items()}, "speeds": speeds,
            "page_builds": {f"page {t}": b for t, b in builds.items()},
            "peak_rss_mb": {f"{p} {t} {v}": m for (p, t, v), m in rss.items()}}


def kind(r):
    name = os.path.basename(r["file"]).replace(".safetensors", "")
    return f"{name} ({r['dtype']})"


PAGE = ("page", "page, whole in-page")


def page_label(r, threads):
    """The page row's label: which build, on how many threads."""
    if threads == 1:
        return f"{PAGE[1]} (single-threaded build, 1 thread)"
    n = r.get("page_builds", {}).get("page 2", {}).get("threads", "?")
    return f"{PAGE[1]} (threaded build, {n} threads)"


def print_table(report):
    rounds = report[0]["rounds"]
    print(f"bitlens ÷ ZipNN speed, compress / decompress: fastest of {rounds} rounds (median of them)")
    print("one thread unless stated; ZipNN on one thread in the same rounds\n")
    cols = [kind(r) for r in report]
    has = lambda key: all(f"{key} compress" in r["speeds"] for r in report)  # noqa: E731

    def head():
        print("| | " + " | ".join(cols) + " |")
        print("|---" * (len(cols) + 1) + "|")

    def speed_cell(r, key):
        s = r["speeds"]
        c, d = s[f"{key} compress"], s[f"{key} decompress"]
        return f"{c['best_gb_s']:.3f} / {d['best_gb_s']:.3f} ({c['median_gb_s']:.3f} / {d['median_gb_s']:.3f})"

    def ratio_cell(r, mine, theirs):
        """Speed of `mine` ÷ speed of `theirs` (keys with their thread count), fastest (median)."""
        s = r["speeds"]
        out = []
        for v in ("compress", "decompress"):
            m, t = s[f"{mine} {v}"], s[f"{theirs} {v}"]
            out.append((m["best_gb_s"] / t["best_gb_s"], m["median_gb_s"] / t["median_gb_s"]))
        return f"{out[0][0]:.2f} / {out[1][0]:.2f} ({out[0][1]:.2f} / {out[1][1]:.2f})"

    order = [PATHS[2], PATHS[3], PATHS[4], PATHS[1], PATHS[0]]
    head()
    for t in THREADS:
        rows = [(f"{p} {t}", label if t == 1 else f"{t} threads, {label}") for p, label in order]
        if has(f"page {t}"):
            rows.insert(2, (f"page {t}", page_label(report[0], t)))
        for key, label in rows:
            print(f"| {label} | " + " | ".join(ratio_cell(r, key, "zipnn 1") for r in report) + " |")
    print("| the most a process per file can reach: a process only reading the input (`dd` → /dev/null) | "
          + " | ".join(ratio_cell(r, "process floor 1", "zipnn 1") for r in report) + " |")
    def bound_cell(r):
        """ZipNN's time ÷ (this binary's start + the codec alone's time): the most a one-thread
        CLI on this codec could reach if reading, checksums and output cost nothing, fastest
        (median)."""
        s, n = r["speeds"], r["bytes"] / 1e9
        out = []
        for v in ("compress", "decompress"):
            t = {k: (n / s[f"{k} 1 {v}"]["best_gb_s"], n / s[f"{k} 1 {v}"]["median_gb_s"])
                 for k in ("zipnn", "process start", "codec")}
            out.append([t["zipnn"][i] / (t["process start"][i] + t["codec"][i]) for i in (0, 1)])
        return f"{out[0][0]:.2f} / {out[1][0]:.2f} ({out[0][1]:.2f} / {out[1][1]:.2f})"

    if has("process start 1"):
        print("| the most a one-thread CLI on this codec can reach: ZipNN ÷ (this binary's start, "
              "`bitlens --version`, + the codec alone) | " + " | ".join(bound_cell(r) for r in report) + " |")

    def page_rows(title, against, cell):
        """A table of the page's builds: `against(t)` names the row's divisor, `cell(r, t)` fills it."""
        print(title)
        head()
        for t in THREADS:
            if has(f"page {t}"):
                print(f"| {page_label(report[0], t)} ÷ {against(t)} | "
                      + " | ".join(cell(r, t) for r in report) + " |")

    if has("page 1"):
        page_rows("\nThe page ÷ the native CLI (file -> /dev/null, wall), compress / decompress, same "
                  "rounds:\nfastest (median)\n",
                  lambda t: f"CLI on {t} thread{'s' if t > 1 else ''}",
                  lambda r, t: ratio_cell(r, f"page {t}", f"cli-null {t}"))
    if has("page floor 1"):
        # Time ÷ time: the floor's speed ÷ the page's.
        page_rows("\nThe page's time ÷ the browser's own floor (the same input read and output "
                  "written\nwith no codec, tests/e2e/page-floor.mjs), same rounds, compress / decompress: "
                  "fastest (median)\n",
                  lambda t: "floor", lambda r, t: ratio_cell(r, "page floor 1", f"page {t}"))
    print("\nSpeeds in GB/s, compress / decompress: fastest round (median round)\n")
    head()
    print("| ZipNN 0.5.4 | " + " | ".join(speed_cell(r, "zipnn 1") for r in report) + " |")
    print("| bg4-lz4, the hub's Xet scheme (whole file, `bench`) | "
          + " | ".join(speed_cell(r, "bg4-lz4 1") for r in report) + " |")
    for t in THREADS:
        for path, label in PATHS:
            print(f"| bitlens {label}, {t} thread{'s' if t > 1 else ''} | "
                  + " | ".join(speed_cell(r, f"{path} {t}") for r in report) + " |")
        if has(f"page {t}"):
            print(f"| bitlens {page_label(report[0], t)} | "
                  + " | ".join(speed_cell(r, f"page {t}") for r in report) + " |")
    print("| a process only reading the input (`dd` → /dev/null; the CLI's floor) | "
          + " | ".join(speed_cell(r, "process floor 1") for r in report) + " |")
    if has("process start 1"):
        print("| this binary started with no work (`bitlens --version`), file size ÷ its time | "
              + " | ".join(speed_cell(r, "process start 1") for r in report) + " |")
    if has("page floor 1"):
        print("| the page's floor: input read, output written, no codec | "
              + " | ".join(speed_cell(r, "page floor 1") for r in report) + " |")
    print("\nCPU time (the machine is shared: wall time includes waiting for a core), one thread:")
    print("bitlens CLI process (rusage user + system, startup included) ÷ ZipNN's calls (process CPU time),")
    print("compress / decompress, fastest round (median round)\n")
    head()
    for path, label in PATHS[2:]:
        print(f"| {label} | " + " | ".join(ratio_cell(r, path + " cpu 1", "zipnn cpu 1") for r in report) + " |")
    if has("page cpu 1"):
        print(f"| {page_label(report[0], 1)}: every browser process | "
              + " | ".join(ratio_cell(r, "page cpu 1", "zipnn cpu 1") for r in report) + " |")
    print("| ZipNN GB/s of CPU time | " + " | ".join(speed_cell(r, "zipnn cpu 1") for r in report) + " |")
    if has("page cpu 1"):
        print("\nThe page's CPU time (every browser process: its threads' run time in /proc) ÷ the CLI's")
        print("(file -> /dev/null), one thread, compress / decompress, fastest round (median round)\n")
        head()
        print(f"| {page_label(report[0], 1)} | "
              + " | ".join(ratio_cell(r, "page cpu 1", "cli-null cpu 1") for r in report) + " |")
    print("\nTwo threads ÷ one thread (fastest rounds), compress / decompress\n")
    head()
    for path, label in PATHS + ([PAGE] if has("page 2") else []):
        cells = []
        for r in report:
            s = r["speeds"]
            c = s[f"{path} 2 compress"]["best_gb_s"] / s[f"{path} 1 compress"]["best_gb_s"]
            d = s[f"{path} 2 decompress"]["best_gb_s"] / s[f"{path} 1 decompress"]["best_gb_s"]
            cells.append(f"{c:.2f} / {d:.2f}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("\nSize ÷ original: bitlens .bls (CLI) / bitlens LMC codec alone / ZipNN / bg4-lz4 (the hub's)\n")
    head()
    print("| ratio | " + " | ".join(
        f"{r['ratio']['cli']:.4f} / {r['ratio']['codec']:.4f} / {r['ratio']['zipnn']:.4f} / "
        f"{r['ratio']['bg4-lz4']:.4f}" for r in report) + " |")
    print("\nbitlens ÷ bg4-lz4 (the hub's scheme), one thread, compress / decompress: fastest (median)\n")
    head()
    for path, label in PATHS[:3]:
        print(f"| {label} | " + " | ".join(ratio_cell(r, f"{path} 1", "bg4-lz4 1") for r in report) + " |")
    print("\nPeak RSS of the CLI (MB), compress / decompress, file -> file, 1 thread (2 threads)\n")
    head()
    print("| peak RSS | " + " | ".join(
        f"{r['peak_rss_mb']['cli-file 1 compress']:.0f} / {r['peak_rss_mb']['cli-file 1 decompress']:.0f} "
        f"({r['peak_rss_mb']['cli-file 2 compress']:.0f} / {r['peak_rss_mb']['cli-file 2 decompress']:.0f})"
        for r in report) + " |")


def main():
    args = sys.argv[1:]
    as_json, page = "--json" in args, "--page" in args
    args = [a for a in args if a not in ("--json", "--page")]
    rounds = 7
    while "--rounds" in args:  # the last one given counts (bench-peers.sh appends its own)
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    binary, files = args[0], args[1:]
    report = [measure(binary, f, rounds, page) for f in files]
    if as_json:
        print(json.dumps(report, indent=1))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
