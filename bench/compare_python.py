#!/usr/bin/env python3
"""nanomx from Python beside numpy and torch, measured in one run (README's Python table).

    PYTHONPATH=python /usr/bin/python3 bench/compare_python.py [--quick]

Rows: a 10-element add per call, a 1000-element add, dot of two 512x512 float32 matrices,
mean / exp / concat / a boolean-mask read at 1 M float32 elements as bandwidth, and what
profiling adds per op (nanomx's operator profiling, and everything on, beside
torch.profiler.profile() around the same loop). nanomx's times include running the op: each
loop ends with mx.nd.waitall(), and the time is divided by the ops in the loop. Each figure is
the best of several repetitions (a shared 2-core VM is noisy; the best is the least disturbed);
what profiling adds is the median of interleaved with/without pairs.
torch is Debian's python3-torch (install it for this benchmark only); without it those columns
say "n/a".
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import nanomx as mx  # noqa: E402

try:
    import torch
    import torch.profiler
except ImportError:  # the benchmark runs without torch, with n/a in its columns
    torch = None


def best_per_call(loop, calls, repeats):
    """Seconds per call: the best of `repeats` runs of loop(calls)."""
    loop(min(calls, 1000))  # warm up (allocator pools, caches)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        loop(calls)
        best = min(best, time.perf_counter() - start)
    return best / calls


def nanomx_add(size):
    a = mx.nd.ones((size,))
    b = mx.nd.ones((size,))

    def loop(n):
        for _ in range(n):
            a + b
        mx.nd.waitall()
    return loop


def numpy_add(size):
    a = np.ones(size, np.float32)
    b = np.ones(size, np.float32)

    def loop(n):
        for _ in range(n):
            a + b
    return loop


def torch_add(size):
    a = torch.ones(size)
    b = torch.ones(size)

    def loop(n):
        for _ in range(n):
            a + b
    return loop


def nanomx_dot(size):
    a = mx.nd.array(np.random.rand(size, size))
    b = mx.nd.array(np.random.rand(size, size))

    def loop(n):
        for _ in range(n):
            mx.nd.dot(a, b)
        mx.nd.waitall()
    return loop


def numpy_dot(size):
    a = np.random.rand(size, size).astype(np.float32)
    b = np.random.rand(size, size).astype(np.float32)

    def loop(n):
        for _ in range(n):
            a @ b
    return loop


def torch_dot(size):
    a = torch.rand(size, size)
    b = torch.rand(size, size)

    def loop(n):
        for _ in range(n):
            a @ b
    return loop


# Bandwidth rows at 1 M float32 elements (issue: >= 0.8x the faster peer): each library runs
# the same operation on the same data; the bytes counted are the input arrays read plus the
# output written (the mask of the boolean read is not counted, as each library stores it
# differently: numpy and torch as bytes, nanomx as a float32 array of 0/1). nanomx waits for
# each result.
BANDWIDTH_ELEMENTS = 1 << 20


def bandwidth_cases():
    """(name, bytes moved, {library: loop factory}) per row."""
    n = BANDWIDTH_ELEMENTS
    data = np.random.rand(n).astype(np.float32)
    half = data[: n // 2].copy(), data[n // 2:].copy()
    mask = data > 0.5
    kept = int(mask.sum())

    def nanomx_case(fn, *arrays):
        nd = [mx.nd.array(x) for x in arrays]

        # Each result is waited for, as numpy's and torch's are there when the call returns:
        # without it the pushes run ahead of the worker and every call gets a fresh output
        # buffer (hundreds of 4 MB buffers in flight, written from DRAM instead of cache).
        def loop(calls):
            for _ in range(calls):
                fn(*nd).wait_to_read()
        return loop

    def plain_case(fn, convert, *arrays):
        converted = [convert(x) for x in arrays]

        def loop(calls):
            for _ in range(calls):
                fn(*converted)
        return loop

    to_torch = (lambda x: torch.from_numpy(np.ascontiguousarray(x))) if torch else None
    cases = [
        ("mean", 4 * n + 4,
         nanomx_case(lambda a: mx.nd.mean(a), data),
         plain_case(lambda a: a.mean(), np.asarray, data),
         plain_case(lambda a: a.mean(), to_torch, data) if torch else None),
        ("exp", 8 * n,
         nanomx_case(lambda a: mx.nd.exp(a), data),
         plain_case(np.exp, np.asarray, data),
         plain_case(torch.exp, to_torch, data) if torch else None),
        ("concat of two halves", 8 * n,
         nanomx_case(lambda a, b: mx.nd.concat(a, b, dim=0), *half),
         plain_case(lambda a, b: np.concatenate((a, b)), np.asarray, *half),
         plain_case(lambda a, b: torch.cat((a, b)), to_torch, *half) if torch else None),
        ("boolean-mask read `a[a > 0.5]`", 4 * n + 4 * kept,
         nanomx_case(lambda a, m: a[m], data, mask.astype(np.float32)),
         plain_case(lambda a, m: a[m], np.asarray, data, mask),
         plain_case(lambda a, m: a[m], to_torch, data, mask) if torch else None),
    ]
    return cases


def best_elapsed(run, calls, repeats):
    """Seconds per call: the best of `repeats` values of run(calls), which returns the seconds
    it timed itself."""
    run(min(calls, 1000))
    return min(run(calls) for _ in range(repeats)) / calls


def timed(loop):
    """loop as a run(n) that returns the seconds it took."""
    def run(n):
        start = time.perf_counter()
        loop(n)
        return time.perf_counter() - start
    return run


# Operator events only, as torch.profiler's default records operators only. MXNet's set_config
# defaults also turn on memory and API profiling (profile_memory, profile_api, profile_symbolic
# are true unless said otherwise): that is the profile_all figure beside it.
OPERATORS_ONLY = {"profile_imperative": True, "profile_symbolic": True, "profile_memory": False,
                  "profile_api": False}


def added_per_call(base_run, profiled_run, calls, repeats):
    """What profiling adds per call: base and profiled runs interleaved (the VM's speed drifts
    between minutes, so separate best-of-N figures can even give a negative difference); the
    median of the pairwise differences."""
    base_run(min(calls, 1000))
    profiled_run(min(calls, 1000))
    diffs = sorted(profiled_run(calls) - base_run(calls) for _ in range(repeats))
    return diffs[len(diffs) // 2] / calls


def nanomx_profiled(loop, config, end_to_end):
    """Times the loop with nanomx's profiler running; end_to_end also times starting it,
    stopping it and writing the trace file (dump)."""
    folder = tempfile.mkdtemp(prefix="nanomx_bench_")
    path = os.path.join(folder, "bench.json")

    def run(n):
        start = time.perf_counter()
        mx.profiler.set_config(filename=path, **config)
        mx.profiler.set_state("run")
        recording = time.perf_counter()
        loop(n)
        recorded = time.perf_counter()
        mx.profiler.set_state("stop")
        mx.profiler.dump(True)
        finished = time.perf_counter()
        return finished - start if end_to_end else recorded - recording
    return run


def torch_profiled(loop, end_to_end):
    """Times the loop inside torch.profiler.profile(); end_to_end also times entering and
    leaving it (where torch turns what it recorded into events)."""
    def run(n):
        start = time.perf_counter()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            recording = time.perf_counter()
            loop(n)
            recorded = time.perf_counter()
        finished = time.perf_counter()
        return finished - start if end_to_end else recorded - recording
    return run


def trace_export_rows(ops):
    """Trace bytes per op and export speed, and the aggregate table's time, for `ops` 10-element
    adds profiled by nanomx (operator events, written by dump) and by torch.profiler
    (export_chrome_trace, key_averages().table()). Returns [(what, unit, nanomx, torch)]."""
    import json as json_module
    rows = []
    tmp = tempfile.mkdtemp(prefix="nanomx_bench_")
    path = os.path.join(tmp, "nanomx.json")
    a = mx.nd.ones((10,))
    b = mx.nd.ones((10,))
    mx.profiler.set_config(profile_imperative=True, profile_symbolic=False, profile_api=False,
                           profile_memory=False, aggregate_stats=True, filename=path)
    mx.profiler.set_state("run")
    for _ in range(ops):
        a + b
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    start = time.perf_counter()
    mx.profiler.dump(True)
    n_dump = time.perf_counter() - start
    n_bytes = os.path.getsize(path)
    with open(path) as f:
        n_events = sum(1 for e in json_module.load(f)["traceEvents"]
                       if e.get("name") == "broadcast_add" and e.get("ph") in ("B", "X"))
    start = time.perf_counter()
    mx.profiler.dumps(reset=True)
    n_table = time.perf_counter() - start
    t_bytes = t_export = t_table = t_events = None
    if torch is not None:
        x = torch.ones(10)
        y = torch.ones(10)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(ops):
                x + y
        tpath = os.path.join(tmp, "torch.json")
        start = time.perf_counter()
        prof.export_chrome_trace(tpath)
        t_export = time.perf_counter() - start
        t_bytes = os.path.getsize(tpath)
        with open(tpath) as f:
            loaded = json_module.load(f)
        # torch writes {"traceEvents": [...]} with Kineto and a bare list without it.
        listed = loaded["traceEvents"] if isinstance(loaded, dict) else loaded
        t_events = sum(1 for e in listed if e.get("name") == "aten::add")
        start = time.perf_counter()
        prof.key_averages().table()
        t_table = time.perf_counter() - start
    rows.append(("trace bytes per operator (%d 10-element adds; nanomx B/E pair with shapes, "
                 "torch X event)" % ops, "B", n_bytes / max(n_events, 1),
                 t_bytes / max(t_events, 1) if t_bytes else None))
    rows.append(("trace writing speed, the same file", "MB/s", n_bytes / n_dump / 1e6,
                 t_bytes / t_export / 1e6 if t_bytes else None))
    rows.append(("aggregate table of the same ops (`dumps()` vs `key_averages().table()`)", "ms",
                 n_table * 1e3, t_table * 1e3 if t_table is not None else None))
    for name in os.listdir(tmp):
        os.unlink(os.path.join(tmp, name))
    os.rmdir(tmp)
    return rows


def fmt_us(seconds):
    if seconds is None:
        return "n/a"
    us = seconds * 1e6
    return "%.2f µs" % us if us < 100 else "%.0f µs" % us


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    parser.add_argument("--json", help="also write the rows to this file (bench/run_benchmarks.py)")
    args = parser.parse_args()
    scale = 0.1 if args.quick else 1.0
    repeats = 3 if args.quick else 7
    calls = int(20000 * scale)
    dot_calls = max(3, int(20 * scale))

    rows = []
    for size in (10, 1000):
        n = best_per_call(nanomx_add(size), calls, repeats)
        p = best_per_call(numpy_add(size), calls, repeats)
        t = best_per_call(torch_add(size), calls, repeats) if torch else None
        rows.append(("add, %d float32 elements, per call" % size, n, p, t))
    n = best_per_call(nanomx_dot(512), dot_calls, repeats)
    p = best_per_call(numpy_dot(512), dot_calls, repeats)
    t = best_per_call(torch_dot(512), dot_calls, repeats) if torch else None
    rows.append(("dot 512x512 float32", n, p, t))

    bandwidth = []
    for name, moved, nanomx_loop, numpy_loop, torch_loop in bandwidth_cases():
        calls_bw = max(3, int(100 * scale))
        n = best_per_call(nanomx_loop, calls_bw, repeats)
        p = best_per_call(numpy_loop, calls_bw, repeats)
        t = best_per_call(torch_loop, calls_bw, repeats) if torch_loop else None
        bandwidth.append((name, moved, n, p, t))

    # What profiling adds per op, on the 10-element add loop.
    profile_repeats = repeats * 3
    added = []
    for end_to_end in (False, True):
        label = ("recording, start to dump" if end_to_end else "recording only")
        ops = added_per_call(timed(nanomx_add(10)),
                             nanomx_profiled(nanomx_add(10), OPERATORS_ONLY, end_to_end),
                             calls, profile_repeats)
        every = added_per_call(timed(nanomx_add(10)),
                               nanomx_profiled(nanomx_add(10), {"profile_all": True},
                                               end_to_end), calls, profile_repeats)
        if torch:
            torch_added = added_per_call(timed(torch_add(10)),
                                         torch_profiled(torch_add(10), end_to_end), calls,
                                         profile_repeats)
        else:
            torch_added = None
        added.append((label, ops, every, torch_added))

    exports = trace_export_rows(int(10000 * scale))

    if args.json:
        area = "Python beside numpy and torch"
        out = []
        for name, n, p, t in rows:
            out.append({"area": area, "what": name + " (µs)", "unit": "µs", "nanomx": n * 1e6,
                        "reference": t * 1e6 if t else None, "reference_kind": "peer",
                        "reference_label": "torch", "better": "lower",
                        "target": "≤ 0.5× torch" if "add" in name else ""})
        for label, ops, every, torch_added in added:
            out.append({"area": "Profiler from Python",
                        "what": "operator profiling added per op, " + label +
                                " (operator events; memory and API profiling off)",
                        "unit": "µs", "nanomx": ops * 1e6,
                        "reference": torch_added * 1e6 if torch_added else None,
                        "reference_kind": "peer", "reference_label": "torch.profiler",
                        "better": "lower", "target": "≤ 0.25× torch.profiler"})
            out.append({"area": "Profiler from Python",
                        "what": "profile_all added per op, " + label +
                                " (operators, memory counters, API calls)",
                        "unit": "µs", "nanomx": every * 1e6,
                        "reference": torch_added * 1e6 if torch_added else None,
                        "reference_kind": "peer", "reference_label": "torch.profiler",
                        "better": "lower", "target": ""})
        for what, unit, n, t in exports:
            out.append({"area": "Profiler from Python", "what": what, "unit": unit, "nanomx": n,
                        "reference": t, "reference_kind": "peer",
                        "reference_label": "torch.profiler",
                        "better": "higher" if unit == "MB/s" else "lower", "target": ""})
        for name, moved, n, p, t in bandwidth:
            faster = min(x for x in (p, t) if x is not None)
            out.append({"area": "Bandwidth from Python (%d float32 elements)" % BANDWIDTH_ELEMENTS,
                        "what": name, "unit": "GB/s", "nanomx": moved / n / 1e9,
                        "reference": moved / faster / 1e9, "reference_kind": "peer",
                        "reference_label": "faster of numpy and torch", "better": "higher",
                        "target": ""})
        with open(args.json, "w") as f:
            json.dump({"rows": out}, f)

    print("| what (best of %d runs; profiling rows: median of %d interleaved pairs) | nanomx | "
          "numpy | torch %s | nanomx / torch |"
          % (repeats, repeats * 3, torch.__version__ if torch else "(absent)"))
    print("|---|---|---|---|---|")
    for name, n, p, t in rows:
        ratio = "%.2f×" % (n / t) if t else "n/a"
        print("| %s | %s | %s | %s | %s |" % (name, fmt_us(n), fmt_us(p), fmt_us(t), ratio))
    for label, ops, every, torch_added in added:
        ratio = "%.2f×" % (ops / torch_added) if torch_added else "n/a"
        print("| profiling added per op, %s (nanomx: operator events; torch: profile() on "
              "CPU) | %s | | %s | %s |" % (label, fmt_us(ops), fmt_us(torch_added), ratio))
        print("| profiling added per op, %s, nanomx profile_all (operators, API calls, "
              "memory) | %s | | | |" % (label, fmt_us(every)))

    print()
    print("| %d float32 elements (best of %d) | nanomx | numpy | torch %s | nanomx / faster "
          "peer (bandwidth) |" % (BANDWIDTH_ELEMENTS, repeats,
                                  torch.__version__ if torch else "(absent)"))
    print("|---|---|---|---|---|")
    def cell(seconds, moved):
        if seconds is None:
            return "n/a"
        return "%.3f ms, %.2f GB/s" % (seconds * 1e3, moved / seconds / 1e9)

    for name, moved, n, p, t in bandwidth:
        faster = min(x for x in (p, t) if x is not None)
        print("| %s | %s | %s | %s | %.2f× |" % (name, cell(n, moved), cell(p, moved),
                                              cell(t, moved), faster / n))
    print()
    print("| trace and table (10-element adds) | nanomx | torch.profiler | nanomx / torch |")
    print("|---|---|---|---|")
    for what, unit, n, t in exports:
        print("| %s | %.3g %s | %s | %s |" % (what, n, unit, "n/a" if t is None else
                                          "%.3g %s" % (t, unit),
                                          "n/a" if not t else "%.3g×" % (n / t)))


if __name__ == "__main__":
    main()
