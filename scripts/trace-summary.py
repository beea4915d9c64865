#!/usr/bin/env python3
"""Sums a Chromium trace's V8 CPU samples per thread and function (tests/e2e/profile-page.mjs
writes one): for each thread busy at least 20 ms, its total and busy time and the functions with
the most self time. "(program)" is the browser's own native work on that thread (style, layout,
paint, message decoding): busy, but in no JavaScript or wasm function; "(idle)" is waiting. With --timeline MS, each thread's busy time in steps of MS milliseconds and its
three busiest functions in each, to see who waits for whom.

Usage: trace-summary.py TRACE.json [--top N] [--timeline MS]
"""
import collections
import json
import sys


def profiles(events):
    """Per profile: its thread, start time (µs) and the (function, µs) of each sample in order."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    found = collections.defaultdict(lambda: {"nodes": {}, "samples": [], "deltas": [], "thread": None, "start": None})
    for e in events:
        if e.get("name") == "Profile":
            p = found[(e["pid"], e["id"])]
            p["thread"] = names.get((e["pid"], e["tid"]), f"thread {e['tid']}")
            p["start"] = e["args"]["data"].get("startTime")
        elif e.get("name") == "ProfileChunk":
            p = found[(e["pid"], e["id"])]
            data = e["args"]["data"]
            cpu = data.get("cpuProfile", {})
            p["nodes"].update({n["id"]: n for n in cpu.get("nodes", [])})
            p["samples"] += cpu.get("samples", [])
            p["deltas"] += data.get("timeDeltas", [])
    for p in found.values():
        if p["start"] is None:
            continue
        samples = []
        for s, dt in zip(p["samples"], p["deltas"]):
            node = p["nodes"].get(s)
            fn = node["callFrame"]["functionName"] if node else "?"
            samples.append((fn.split("::h")[0] if fn else "(anonymous)", dt))
        yield p["thread"], p["start"], samples


IDLE = ("(idle)",)


def main():
    args = sys.argv[1:]
    top, step = 20, None
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    if "--timeline" in args:
        i = args.index("--timeline")
        step = float(args[i + 1])
        del args[i:i + 2]
    found = list(profiles(json.load(open(args[0]))))
    t0 = min(start for _, start, _ in found)
    for thread, start, samples in found:
        own = collections.Counter()
        for fn, dt in samples:
            own[fn] += dt
        total = sum(own.values())
        busy = total - sum(own[i] for i in IDLE)
        if busy < 20_000:
            continue
        print(f"== {thread}: {total / 1e3:.0f} ms sampled, {busy / 1e3:.0f} ms busy")
        if step is None:
            for fn, t in own.most_common(top):
                print(f"  {t / 1e3:8.1f} ms  {fn[:140]}")
            continue
        steps = collections.defaultdict(collections.Counter)
        t = start
        for fn, dt in samples:
            t += dt
            if fn not in IDLE:
                steps[int((t - t0) / 1e3 / step)][fn[-48:]] += dt
        for k in sorted(steps):
            c = steps[k]
            print(f"  {k * step:7.0f} ms  busy {sum(c.values()) / 1e3:6.1f}: "
                  + ", ".join(f"{f} {v / 1e3:.0f}" for f, v in c.most_common(3)))


if __name__ == "__main__":
    main()
