#!/usr/bin/python3
"""nanomx-trace benchmark: the numbers the README quotes, with the floor and the peer measured in
the same run on the same 1 M-event trace.

  summary  : `nanomx-trace summary` wall time -> MB/s of JSON (goal >= 200 MB/s); floor: `cat` of
             the same file; peer: Python's json.load plus a per-name count/total (what a script
             written without a tool does).
  diff     : `nanomx-trace diff BASE NEW` wall time -> MB/s of both files (goal >= 200 MB/s), on
             the generator's trace with dependency flows and steps (--issue17) and the same with
             `dot` 10 % slower.
  critical-path : `nanomx-trace critical-path` wall time -> MB/s (goal >= 200 MB/s), whole trace
             and one step, on the --issue17 trace.
  view     : `nanomx-trace view` wall time (goal < 5 s) and page size (goal <= half the input).
  render   : the page's first render in headless Chromium (goal < 2 s); no peer runs offline here
             (chrome://tracing and Perfetto UI are not installable).

usage: /usr/bin/python3 bench/trace_tool/run_trace_bench.py BUILD_DIR [EVENTS]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build/release"
events = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
tool = os.path.join(build, "tools/nanomx-trace/nanomx-trace")
generate = os.path.join(build, "bench/trace_tool/trace_bench_generate")
here = os.path.dirname(os.path.abspath(__file__))


def timed(command, runs=3):
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def python_peer(path):
    start = time.perf_counter()
    with open(path) as f:
        data = json.load(f)
    stats = {}
    open_events = {}
    for e in data["traceEvents"]:
        ph = e.get("ph")
        if ph == "B":
            open_events.setdefault((e.get("pid"), e.get("tid")), []).append(e)
        elif ph == "E":
            stack = open_events.get((e.get("pid"), e.get("tid")))
            if stack:
                b = stack.pop()
                s = stats.setdefault((b.get("cat"), b.get("name")), [0, 0.0])
                s[0] += 1
                s[1] += e["ts"] - b["ts"]
    return time.perf_counter() - start


with tempfile.TemporaryDirectory() as work:
    trace = os.path.join(work, "bench_1m.json")
    page = os.path.join(work, "bench_1m.html")
    subprocess.run([generate, trace, str(events)], check=True)
    size = os.path.getsize(trace)
    mb = size / 1e6
    subprocess.run(["cat", trace], check=True, stdout=subprocess.DEVNULL)  # into the page cache

    steps = os.path.join(work, "bench_1m_steps.json")
    slower = os.path.join(work, "bench_1m_slower.json")
    subprocess.run([generate, steps, str(events), "--issue17"], check=True)
    subprocess.run([generate, slower, str(events), "--issue17", "--slower", "dot", "1.1"],
                   check=True)
    steps_mb = os.path.getsize(steps) / 1e6
    both_mb = steps_mb + os.path.getsize(slower) / 1e6
    for path in (steps, slower):
        subprocess.run(["cat", path], check=True, stdout=subprocess.DEVNULL)

    cat_s = timed(["cat", trace])
    summary_s = timed([tool, "summary", trace])
    steps_summary_s = timed([tool, "summary", steps])
    diff_s = timed([tool, "diff", steps, slower])
    critical_s = timed([tool, "critical-path", steps])
    critical_step_s = timed([tool, "critical-path", steps, "--step", "70"])
    peer_s = python_peer(trace)
    view_s = timed([tool, "view", trace, "-o", page])
    page_size = os.path.getsize(page)
    render = json.loads(subprocess.run(["node", os.path.join(here, "first_render.mjs"), page, "3"],
                                       check=True, capture_output=True, text=True).stdout)
    first_render = statistics.median(r["firstRenderMs"] for r in render)
    ready_wall = statistics.median(r["readyWallMs"] for r in render)
    draw_median = statistics.median(r["drawMedianMs"] for r in render)
    draw_max = max(r["drawMaxMs"] for r in render)

    print(f"trace: {events:,} events, {mb:.1f} MB (synthetic nanomx trace, B/E operators)")
    print(f"{'measure':38} {'value':>14} {'goal':>12}")
    print(f"{'summary (nanomx-trace)':38} {mb / summary_s:>10.0f} MB/s {'>= 200 MB/s':>12}  ({summary_s:.2f} s)")
    print(f"{'  floor: cat FILE > /dev/null':38} {mb / cat_s:>10.0f} MB/s {'':>12}  ({cat_s:.2f} s)")
    print(f"{'  peer: python3 json.load + totals':38} {mb / peer_s:>10.1f} MB/s {'':>12}  ({peer_s:.2f} s)")
    print(f"{'summary, the --issue17 trace':38} {steps_mb / steps_summary_s:>10.0f} MB/s {'>= 200 MB/s':>12}  ({steps_summary_s:.2f} s, {steps_mb:.1f} MB)")
    print(f"{'diff (both files)':38} {both_mb / diff_s:>10.0f} MB/s {'>= 200 MB/s':>12}  ({diff_s:.2f} s)")
    print(f"{'critical-path, whole trace':38} {steps_mb / critical_s:>10.0f} MB/s {'>= 200 MB/s':>12}  ({critical_s:.2f} s)")
    print(f"{'critical-path --step 70':38} {steps_mb / critical_step_s:>10.0f} MB/s {'>= 200 MB/s':>12}  ({critical_step_s:.2f} s)")
    print(f"{'view (nanomx-trace)':38} {view_s:>12.2f} s {'< 5 s':>12}")
    print(f"{'  page size':38} {page_size / 1e6:>11.1f} MB {'<= ' + format(mb / 2, '.1f') + ' MB':>12}  ({page_size / size:.1%} of input)")
    print(f"{'first render in headless Chromium':38} {first_render:>11.0f} ms {'< 2000 ms':>12}  (ready after {ready_wall:.0f} ms wall incl. browser start)")
    print(f"{'  frame draw while zooming/panning':38} {draw_median:>11.1f} ms {'':>12}  (median; slowest {draw_max:.1f} ms)")
