"""The guide's examples, run as a user runs them (a fresh interpreter, its own folder)."""
import os
import subprocess
import sys

import nanomx as mx
from trace_check import check_trace, names_on_process, thread_names

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Spec workloads §1.4: what the NDArray example makes the engine run.
NDARRAY_EXAMPLE_OPS = {
    "broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div", "sqrt", "square",
    "norm", "slice", "broadcast_to", "_full", "_slice_assign", "_mul_scalar", "_div_scalar",
    "_plus_scalar", "_copyto", "clip", "_random_uniform", "dot", "pick", "sum", "max", "min",
    "TernaryOp", "BinaryOp", "WaitForVar"}


def run_example(name, cwd):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(mx.__file__)))
    return subprocess.run([sys.executable, os.path.join(ROOT, "examples", "profiler", name)],
                          cwd=str(cwd), env=env, capture_output=True, text=True, timeout=600,
                          check=True)


def test_profiler_ndarray_example(tmp_path):
    result = run_example("profiler_ndarray.py", tmp_path)
    assert "Profile Statistics:" in result.stdout
    assert "operator\n=================" in result.stdout
    assert result.stderr.count("The operator onehot_encode is deprecated") == 3
    assert not (tmp_path / "tmp_list.bin").exists()
    events = check_trace(str(tmp_path / "profile_ndarray.json"))
    on_cpu0 = set(names_on_process(events, "cpu/0"))
    assert NDARRAY_EXAMPLE_OPS <= on_cpu0, NDARRAY_EXAMPLE_OPS - on_cpu0
    # every kernel ran on a named thread: an engine worker, or the Python thread when it waited
    # on an op no worker had started yet (the engine then runs it there)
    names = thread_names(events)
    runners = {names[(e["pid"], e["tid"])] for e in events if e.get("cat") == "operator"}
    assert runners and all(r == "main" or r.startswith("cpu/0 worker") for r in runners), runners
    categories = {e.get("cat") for e in events if e.get("ph") != "M"}
    assert {"operator", "MXNET_C_API", "Device Storage"} <= categories
