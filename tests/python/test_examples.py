"""The guide's examples, run as a user runs them (a fresh interpreter, its own folder)."""
import json
import os
import subprocess
import sys

import nanomx as mx
from trace_check import check_trace, names_on_process, thread_names

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# What the guide's NDArray example makes the engine run (examples/profiler/profiler_ndarray.py).
NDARRAY_EXAMPLE_OPS = {
    "broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div", "sqrt", "square",
    "norm", "slice", "broadcast_to", "_full", "_slice_assign", "_mul_scalar", "_div_scalar",
    "_plus_scalar", "_copyto", "clip", "_random_uniform", "dot", "pick", "sum", "max", "min",
    "TernaryOp", "BinaryOp", "WaitForVar"}


def run_example(name, cwd, *args):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(mx.__file__)))
    return subprocess.run([sys.executable, os.path.join(ROOT, "examples", "profiler", name),
                           *args], cwd=str(cwd), env=env, capture_output=True, text=True,
                          timeout=600, check=True)


def _begins(events, process_name):
    pids = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
            and e["args"]["name"] == process_name}
    return [e["name"] for e in events if e.get("ph") in ("B", "X") and e.get("pid") in pids]


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


def test_profiler_matmul_example(tmp_path):
    result = run_example("profiler_matmul.py", tmp_path, "--ctx", "cpu", "--size", "128",
                         "--iter_num", "8", "--begin_profiling_iter", "2",
                         "--end_profiling_iter", "5", "--profile_filename", "mm.json")
    lines = result.stdout.splitlines()
    assert lines[0] == "profile file save to mm.json"
    assert lines[1:3] == ["execution begin", "execution end"]
    assert lines[3].startswith("duration: ") and lines[3].endswith("s")
    assert lines[4].startswith("          ") and lines[4].endswith("ms/operator")
    float(lines[4].strip()[:-len("ms/operator")])
    events = check_trace(str(tmp_path / "mm.json"))
    names = _begins(events, "cpu/0")
    # iterations 2, 3 and 4 only, and only the executor's dot: the random fills and copies
    # into its arguments run before profiling starts
    assert names.count("dot") == 3, names
    assert "_random_uniform" not in names and "_copyto" not in names


def test_profiler_matmul_example_gpu_falls_back(tmp_path):
    if mx.context.num_gpus() > 0:
        return
    result = run_example("profiler_matmul.py", tmp_path, "--size", "16", "--iter_num", "3",
                         "--begin_profiling_iter", "0", "--end_profiling_iter", "1")
    assert "no GPU found: running on cpu(0)" in result.stdout
    assert (tmp_path / "profile_matmul_20iter.json").exists()


def test_profiler_executor_example(tmp_path):
    result = run_example("profiler_executor.py", tmp_path, "--iter_num", "2", "--dry_run", "1",
                         "--batch_size", "16", "--mirror")
    lines = result.stdout.splitlines()
    assert lines[0] == "profile file save to profile_executor_5iter.json"
    assert lines[1] == "executor num_iteration: 2"
    without = [ln for ln in lines if ln.startswith("planned bytes without mirror: ")]
    with_ = [ln for ln in lines if ln.startswith("planned bytes with mirror: ")]
    assert len(without) == 1 and len(with_) == 1, lines
    assert "MB allocated" in without[0] and "MB allocated" in with_[0]
    b_without = int(without[0].split(": ")[1].split()[0])
    b_with = int(with_[0].split(": ")[1].split()[0])
    # both plans are real and differ (for this MLP recompute costs bytes, see the example)
    assert b_with > 0 and b_without > 0 and b_with != b_without, (b_with, b_without)
    assert lines[-1].startswith("executor ") and lines[-1].endswith(" ms / iteration")
    float(lines[-1].split()[1])
    events = check_trace(str(tmp_path / "profile_executor_5iter.json"))
    names = _begins(events, "cpu/0")
    assert names.count("FullyConnected") >= 2 * 5, names
    assert "_backward_FullyConnected" in names
    _check_trace_tool_on(str(tmp_path / "profile_executor_5iter.json"), events)


def _check_trace_tool_on(trace, events):
    """`nanomx-trace critical-path` and `diff` on a real profile (when ctest names the tool)."""
    tool = os.environ.get("NANOMX_TRACE_TOOL")
    if not tool:
        return
    result = subprocess.run([tool, "critical-path", trace, "--format", "json"],
                            capture_output=True, text=True, timeout=120, check=True)
    path = json.loads(result.stdout)
    has_dependency_flows = any(e.get("cat") == "dependency" and e.get("ph") == "s"
                               for e in events)
    assert path["edges"] == ("dependency" if has_dependency_flows else "push"), path["edges"]
    if has_dependency_flows:
        assert path["dependency_flows"] > 0
    assert path["push_flows"] > 0
    segments = path["path"]
    assert segments and path["length_us"] > 0
    # The path covers its window without gaps or overlaps, in time order.
    for before, after in zip(segments, segments[1:]):
        assert abs(before["start_us"] + before["dur_us"] - after["start_us"]) < 0.002, (before,
                                                                                       after)
    total = sum(s["dur_us"] for s in segments)
    assert abs(total - path["length_us"]) < 0.002 * len(segments)
    kinds = {k["key"]: k["us"] for k in path["by_kind"]}
    assert kinds["compute"] > 0
    assert abs(sum(kinds.values()) - path["length_us"]) < 0.002 * len(segments)
    on_path = {o["key"] for o in path["by_operator"]}
    assert on_path & {"FullyConnected", "_backward_FullyConnected", "Activation",
                      "_backward_Activation", "SoftmaxOutput", "_backward_SoftmaxOutput",
                      "sgd_update", "sgd_mom_update"}, on_path
    text = subprocess.run([tool, "diff", trace, trace], capture_output=True, text=True,
                          timeout=120, check=True).stdout
    assert text.rstrip().endswith("NEW takes the same time as BASE"), text


def test_profiler_imageiter_example(tmp_path):
    import numpy as np
    from nanomx import recordio
    missing = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "profiler",
                                                           "profiler_imageiter.py")],
                             cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                             env=dict(os.environ,
                                      PYTHONPATH=os.path.dirname(os.path.dirname(mx.__file__))))
    assert missing.returncode != 0 and "scripts/make-sample-rec" in missing.stderr
    # 609 images: the fewest that give the example's 20 batches of 32.
    rng = np.random.RandomState(0)
    writer = recordio.MXIndexedRecordIO(str(tmp_path / "test.idx"), str(tmp_path / "test.rec"),
                                        "w")
    for i in range(609):
        img = rng.randint(0, 255, (rng.randint(40, 80), rng.randint(40, 80), 3)).astype(np.uint8)
        writer.write_idx(i, recordio.pack_img(recordio.IRHeader(0, i % 10, i, 0), img))
    writer.close()
    result = run_example("profiler_imageiter.py", tmp_path)
    assert float(result.stdout.strip()) > 0
    events = check_trace(str(tmp_path / "profile_imageiter.json"))
    names = {e["name"] for e in events if e.get("ph") in ("X", "B")}
    assert {"ImageRecordIter:decode", "ImageRecordIter:batchify", "wait for batch"} <= names


def test_profiler_gluon_example(tmp_path):
    import numpy as np
    from nanomx import recordio
    rng = np.random.RandomState(1)
    writer = recordio.MXIndexedRecordIO(str(tmp_path / "test.idx"), str(tmp_path / "test.rec"),
                                        "w")
    for i in range(24):
        img = rng.randint(0, 255, (rng.randint(40, 80), rng.randint(40, 80), 3)).astype(np.uint8)
        writer.write_idx(i, recordio.pack_img(recordio.IRHeader(0, i % 10, i, 0), img))
    writer.close()
    result = run_example("profiler_gluon.py", tmp_path, "--batches", "2", "--batch-size", "4",
                         "--size", "32")
    first = result.stdout.splitlines()[0]
    assert first.startswith("trained 8 images in ") and "images/s" in first, first
    assert "Profile Statistics:" in result.stdout
    events = check_trace(str(tmp_path / "profile_gluon.json"))
    names = {e["name"] for e in events if e.get("ph") in ("X", "B", "b")}
    # The model side: the hybridized graph's operators and its backward, one recorded node.
    assert {"Convolution", "BatchNorm", "Pooling"} <= names, names
    assert any(n.endswith("_backward_Convolution") for n in names), names
    assert "_nanomx_gluon_cached_graph::pure_python" in names
    # The data side: images decoded by the DataLoader's threads, and the steps.
    assert "NNImageDecode" in names
    assert any(n.startswith("ProfilerStep#") for n in names), names
