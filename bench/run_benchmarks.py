#!/usr/bin/env python3
"""Runs every benchmark beside its peers and floors and writes BENCHMARKS.md (scripts/bench).

    /usr/bin/python3 bench/run_benchmarks.py --build build/release [--quick] [--out BENCHMARKS.md]

Each component (the C++ Google Benchmark binaries, the Python comparison scripts) runs once per
round and the rounds are interleaved, so that a slow stretch of a shared machine hits every
component alike; each row is the median over the rounds with its spread ((max - min) / median),
and a row whose spread is over 25 % is marked noisy. Peers are measured in the same rounds as
nanomx. The machine, the date and the peers' versions head the file.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NOISY_SPREAD = 0.25

# Google Benchmark rows: (area, what, binary, benchmark, metric, scale, unit,
#                         reference kind, reference label, reference benchmark, reference metric,
#                         better, target)
# metric: a field of the benchmark's JSON entry (cpu_time / real_time in its time_unit, converted
# to ns; bytes_per_second; or a counter); scale multiplies the value into `unit`.
GBENCH_ROWS = [
    ("Profiler (C++)", "recorded scope, begin + end", "profiler", "RecordedScope/threads:1",
     "cpu_time", 1, "ns", "floor", "two rdtsc + one 32-byte store",
     "Floor_TwoTscReadsAndStore/threads:1", "cpu_time", "lower", "≤ 30 ns"),
    ("Profiler (C++)", "disabled site (profiler stopped)", "profiler", "DisabledSite", "cpu_time",
     1, "ns", "floor", "empty loop", "EmptyLoop", "cpu_time", "lower", "≤ 1 ns"),
    ("Profiler (C++)", "C API duration pair (MXProfileDurationStart + Stop on a Task)",
     "profiler", "CApiTaskStartStop", "cpu_time", 1, "ns", None, None, None, None, "lower",
     "≤ 100 ns"),
    ("Profiler (C++)", "trace bytes per complete (X) event, 3-15 character names", "profiler",
     "WriteJson/complete:1/shapes:0/real_time", "bytes_per_duration", 1, "B", None, None, None,
     None, "lower", "≤ 90 B"),
    ("Profiler (C++)", "JSON writing, B/E operator events", "profiler",
     "WriteJson/complete:0/shapes:0/real_time", "bytes_per_second", 1e-6, "MB/s", None, None,
     None, None, "higher", "≥ 500 MB/s"),
    ("Profiler (C++)", "`dumps()` with 10,000 distinct names", "profiler",
     "DumpsTenThousandNames", "cpu_time", 1e-6, "ms", None, None, None, None, "lower", "< 1 ms"),
    ("Runtime (C++)", "tiny op pushed and waited", "runtime", "BM_TinyOpInvokeWait/real_time",
     "real_time", 1e-3, "µs", "peer", "condition-variable round trip between two threads",
     "BM_PeerCondvarRoundTrip/real_time", "real_time", "lower", "≤ 1 µs"),
    ("Runtime (C++)", "`ops::invoke`, 1000 per wait, per op", "runtime",
     "BM_TinyOpInvokeBatch1000/real_time", "real_time", 1e-6, "µs", None, None, None, None,
     "lower", "≤ 1 µs"),
    ("Runtime (C++)", "`broadcast_add`, 16 M float32", "runtime",
     "BM_BroadcastAdd16M/real_time", "bytes_per_second", 1e-9, "GB/s", "floor", "`memcpy`",
     "BM_PeerMemcpy16M/real_time", "bytes_per_second", "higher", "≥ 80 % of memcpy"),
    ("Runtime (C++)", "`sum`, 16 M float32", "runtime", "BM_Sum16M/real_time",
     "bytes_per_second", 1e-9, "GB/s", "floor", "`memcpy`", "BM_PeerMemcpy16M/real_time",
     "bytes_per_second", "higher", "≥ 80 % of memcpy"),
    ("Runtime (C++)", "`dot` 4096² float32 (`ops::invoke`)", "runtime",
     "BM_Dot4096/iterations:3/real_time", "GFLOP/s", 1, "GFLOP/s", "floor",
     "direct `cblas_sgemm` (OpenBLAS)", "BM_PeerCblasSgemm4096/iterations:3/real_time",
     "GFLOP/s", "higher", "≥ 0.95×"),
    ("C API", "`MXImperativeInvoke` + `MXNDArrayFree`, 10-element add, naive engine", "c_api",
     "BM_CApiInvokeFree", "cpu_time", 1, "ns", "floor", "a 10-float add into a malloc'd buffer",
     "BM_PeerAdd10Malloc", "cpu_time", "lower", ""),
    ("Trace tool (nanomx-trace)", "`summary`, 1 M-event synthetic trace", "trace_tool",
     "BM_Summary/iterations:5", "bytes_per_second", 1e-6, "MB/s", "floor",
     "the chunked simdjson parse alone", "BM_Floor_StreamParse/iterations:5", "bytes_per_second",
     "higher", "≥ 200 MB/s"),
    ("Trace tool (nanomx-trace)", "`diff` of two 1 M-event traces (MB/s of both)", "trace_tool",
     "BM_Diff/iterations:3", "bytes_per_second", 1e-6, "MB/s", "floor",
     "the chunked simdjson parse alone", "BM_Floor_StreamParse/iterations:5", "bytes_per_second",
     "higher", "≥ 200 MB/s"),
    ("Trace tool (nanomx-trace)", "`critical-path` of a 1 M-event trace with dependency flows",
     "trace_tool", "BM_CriticalPath/iterations:3", "bytes_per_second", 1e-6, "MB/s", "floor",
     "the chunked simdjson parse alone", "BM_Floor_StreamParse/iterations:5", "bytes_per_second",
     "higher", "≥ 200 MB/s"),
]

BINARIES = {
    "profiler": "bench/profiler/profiler_bench",
    "runtime": "bench/runtime/runtime_bench",
    "c_api": "bench/runtime/c_api_bench",
    "trace_tool": "bench/trace_tool/trace_tool_bench",
}


def to_ns(entry, field):
    unit = entry.get("time_unit", "ns")
    return entry[field] * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]


def gbench_value(entries, name, metric):
    entry = entries.get(name)
    if entry is None:
        return None
    if metric in ("cpu_time", "real_time"):
        return to_ns(entry, metric)
    return entry.get(metric)


def run_gbench(build, binary, names, quick):
    path = os.path.join(build, BINARIES[binary])
    # Anchored names: "RecordedScope/threads:1" must not also pick RecordedScopeAggregate.
    pattern = "^(" + "|".join(n.split("/")[0] for n in sorted(set(names))) + ")(/|$)"
    args = [path, "--benchmark_filter=" + pattern, "--benchmark_format=json"]
    if quick:
        args.append("--benchmark_min_time=0.05")
    out = subprocess.run(args, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return {b["name"]: b for b in json.loads(out)["benchmarks"]}


def run_python(script, quick, env):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        args = [sys.executable, os.path.join(HERE, script), "--json", path]
        if quick:
            args.append("--quick")
        subprocess.run(args, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(path)


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = "%.0f GiB" % (kb / 2 ** 20)
    except (OSError, ValueError, IndexError):
        pass
    return "%s, %d cores, %s memory, %s" % (model, os.cpu_count() or 0, mem, platform.platform())


def peer_versions():
    versions = {"python": platform.python_version()}
    for mod in ("numpy", "torch"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            versions[mod] = "absent"
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libopenblas0-pthread"],
                             capture_output=True, text=True).stdout
        versions["OpenBLAS"] = out or "unknown"
    except OSError:
        versions["OpenBLAS"] = "unknown"
    return versions


def summarize(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    med = statistics.median(values)
    spread = (max(values) - min(values)) / med if med else 0.0
    return med, spread


def fmt(value, unit):
    if value is None:
        return "n/a"
    if abs(value) >= 100:
        text = "%.0f" % value
    elif abs(value) >= 10:
        text = "%.1f" % value
    else:
        text = "%.3g" % value
    return "%s %s" % (text, unit)


def ratio_text(nanomx, ref, better):
    if nanomx is None or ref is None or ref == 0 or nanomx == 0:
        return ""
    # Always "how nanomx compares": time ratios as nanomx / reference, rates as nanomx / reference.
    return "%.3g×" % (nanomx / ref)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    parser.add_argument("--readme", default=os.path.join(ROOT, "README.md"),
                        help="README whose marked benchmark block is replaced ('' for none)")
    parser.add_argument("--readme-only", action="store_true",
                        help="run nothing: copy the existing BENCHMARKS.md (--out) into the README")
    args = parser.parse_args()
    if args.readme_only:
        with open(args.out) as f:
            update_readme(args.readme, f.read().split("\n"),
                          os.path.relpath(args.out, os.path.dirname(os.path.abspath(args.readme))))
        return
    rounds = args.rounds or (3 if args.quick else 4)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("NANOMX_LIBRARY_PATH", os.path.join(args.build, "python", "nanomx"))

    names = {}
    for row in GBENCH_ROWS:
        names.setdefault(row[2], set()).update(n for n in (row[3], row[9]) if n)
    samples = {}  # row key -> list of (nanomx, reference)
    python_rows = {}  # key -> row dict (last round's labels)
    started = datetime.datetime.now(datetime.timezone.utc)
    for r in range(rounds):
        print("round %d/%d" % (r + 1, rounds), flush=True)
        for binary, bench_names in names.items():
            entries = run_gbench(args.build, binary, bench_names, args.quick)
            for row in GBENCH_ROWS:
                if row[2] != binary:
                    continue
                n = gbench_value(entries, row[3], row[4])
                ref = gbench_value(entries, row[9], row[10]) if row[9] else None
                scale = row[5]
                samples.setdefault(("g",) + row[:2], []).append(
                    (None if n is None else n * scale, None if ref is None else ref * scale))
        for script in ("compare_python.py", "compare_symbolic.py", "compare_nn.py",
                       "compare_io.py", "compare_kvstore.py", "compare_gpu.py"):
            try:
                result = run_python(script, args.quick, env)
            except subprocess.CalledProcessError as e:
                print("%s failed (%s); its rows are left out" % (script, e), file=sys.stderr)
                continue
            for row in result["rows"]:
                key = ("p", row["area"], row["what"])
                python_rows[key] = row
                samples.setdefault(key, []).append((row["nanomx"], row.get("reference")))

    lines = ["# nanomx benchmarks", "",
             "Written by `scripts/bench%s` on %s UTC." % (" --quick" if args.quick else "",
                                                          started.strftime("%Y-%m-%d %H:%M")),
             "", "- Machine: " + machine(),
             "- Peers: " + ", ".join("%s %s" % kv for kv in peer_versions().items()),
             "- Each row: the median of %d interleaved rounds; spread = (max − min) / median "
             "over the rounds; **noisy** where the spread is over %d %%." % (
                 rounds, NOISY_SPREAD * 100),
             "- Ratio: nanomx ÷ the reference (a time: lower is better for nanomx; a rate: "
             "higher is better).", ""]
    areas = []
    rows_by_area = {}
    for row in GBENCH_ROWS:
        key = ("g",) + row[:2]
        rows_by_area.setdefault(row[0], []).append(
            (row[1], row[6], row[7], row[8], row[11], row[12], samples.get(key, [])))
    for key, row in python_rows.items():
        rows_by_area.setdefault(row["area"], []).append(
            (row["what"], row["unit"], row.get("reference_kind"), row.get("reference_label"),
             row.get("better", "lower"), row.get("target", ""), samples.get(key, [])))
    for area in rows_by_area:
        if area not in areas:
            areas.append(area)
    for area in areas:
        lines += ["## " + area, "",
                  "| what | nanomx | spread | reference | ratio | target |", "|---|---|---|---|---|---|"]
        for what, unit, kind, label, better, target, pairs in rows_by_area[area]:
            n, n_spread = summarize([p[0] for p in pairs])
            ref, _ = summarize([p[1] for p in pairs])
            noisy = n_spread is not None and n_spread > NOISY_SPREAD
            ref_text = "" if not kind else "%s: %s %s" % (kind, label, fmt(ref, unit))
            lines.append("| %s | %s | %s%s | %s | %s | %s |" % (
                what, fmt(n, unit), "" if n_spread is None else "%.0f %%" % (n_spread * 100),
                " **noisy**" if noisy else "", ref_text, ratio_text(n, ref, better), target))
        lines.append("")
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("wrote %s" % args.out)
    if args.readme:
        update_readme(args.readme, lines,
                      os.path.relpath(args.out, os.path.dirname(os.path.abspath(args.readme))))


README_BEGIN = "<!-- benchmarks:begin (written by scripts/bench from BENCHMARKS.md; do not edit) -->"
README_END = "<!-- benchmarks:end -->"


def update_readme(readme, lines, benchmarks_path):
    """Replaces the README's block between the benchmark markers with BENCHMARKS.md's header and
    tables (headings one level down), so the README's figures are always those of the last full
    run, with when and where they were measured."""
    with open(readme) as f:
        text = f.read()
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        print("%s has no benchmark markers; left as it is" % readme, file=sys.stderr)
        return
    body = ["From [%s](%s):" % (os.path.basename(benchmarks_path), benchmarks_path), ""]
    rest = lines[1:]  # without the title
    while rest and not rest[0].strip():
        rest = rest[1:]
    for line in rest:
        body.append("#" + line if line.startswith("## ") else line)
    block = README_BEGIN + "\n" + "\n".join(body).strip() + "\n" + README_END
    with open(readme, "w") as f:
        f.write(text[:begin] + block + text[end + len(README_END):])
    print("updated the benchmark tables of %s" % readme)


if __name__ == "__main__":
    main()
