"""nanomx-trace on traces the profiler writes: step spans, dependency flows and rotated series
(docs/trace-format.md), read by `critical-path`, `diff --by step` and `merge`. Runs when ctest
names the tool (NANOMX_TRACE_TOOL); a profiler without steps or rotation skips those parts."""
import collections
import glob
import json
import os
import subprocess

import numpy as np
import pytest

import nanomx as mx

TOOL = os.environ.get("NANOMX_TRACE_TOOL")
pytestmark = pytest.mark.skipif(not TOOL, reason="NANOMX_TRACE_TOOL is not set (run via ctest)")


def run_tool(*args):
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=120, check=True)


def _record(filename, steps=4, **config):
    """A chain dot -> relu -> sum and an independent sqrt per step, one step() per step."""
    try:
        mx.profiler.set_config(profile_all=True, filename=filename, **config)
    except (mx.MXNetError, TypeError, ValueError) as error:
        pytest.skip("the profiler does not take %s: %s" % (sorted(config), error))
    if not hasattr(mx.profiler, "step"):
        pytest.skip("the profiler has no step()")
    mx.profiler.set_state("run")
    a = mx.nd.array(np.random.rand(128, 128).astype("float32"))
    for _ in range(steps):
        total = mx.nd.sum(mx.nd.relu(mx.nd.dot(a, a)))
        side = mx.nd.sqrt(a)
        total.wait_to_read()
        side.wait_to_read()
        mx.profiler.step()
    mx.profiler.set_state("stop")
    mx.profiler.dump(True)


def test_critical_path_and_diff_by_step_on_a_recorded_trace(in_tmp):
    _record("steps.json")
    path = json.loads(run_tool("critical-path", "steps.json", "--step", "2", "--format",
                               "json").stdout)
    assert path["edges"] == "dependency", path["edges"]
    names = {o["key"] for o in path["by_operator"]}
    assert {"dot", "relu", "sum"} <= names, names  # the chain; sqrt is off the path
    assert path["length_us"] <= (path["window"]["end_us"] - path["window"]["start_us"]) * 1.5
    text = run_tool("diff", "steps.json", "steps.json", "--by", "step").stdout
    assert "ProfilerStep#2" in text and text.rstrip().endswith("NEW takes the same time as BASE")


def test_rotated_series_merges_back_into_one_trace(in_tmp):
    _record("rot.json", steps=8, max_file_mb=0.01)
    parts = ["rot.json"] + sorted(glob.glob("rot.[0-9]*.json"),
                                  key=lambda name: int(name.split(".")[1]))
    assert len(parts) >= 3, parts
    out = run_tool("merge", *reversed(parts), "-o", "merged.json").stdout
    assert "part %d of the rotated series rot.json" % (len(parts) - 1) in out, out

    def timed(events):
        return collections.Counter(json.dumps(e, sort_keys=True) for e in events
                                   if e.get("ph") != "M" and e.get("cat") not in (None, ""))

    # Numbers compared by value: a part writes a whole-microsecond ts as `1518` (no decimal the
    # clock cannot resolve), merge writes it as `1518.0`; the same JSON number either way.
    def events_of(path):
        with open(path) as f:
            return json.load(f, parse_int=float)["traceEvents"]

    merged = events_of("merged.json")
    in_parts = []
    for part in parts:
        in_parts += events_of(part)
    # Every timed event of every part once (merge rewrites pids and ids of a single series
    # unchanged: it is file 0), metadata once per distinct event.
    assert timed(merged) == timed(in_parts)
    metadata = [json.dumps(e, sort_keys=True) for e in merged if e.get("ph") == "M"]
    assert len(metadata) == len(set(metadata))
    run_tool("critical-path", "merged.json", "--step", "3")
