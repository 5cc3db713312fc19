"""The CUDA backend from Python (docs/cuda.md): arrays, copies, the executor's forward and
backward and the matmul example on gpu(0), each against the CPU. Skipped without a GPU."""
import os
import subprocess
import sys

import numpy as np
import pytest

import nanomx as mx

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU is visible")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def test_arrays_and_copies_round_trip():
    x = np.random.RandomState(0).uniform(-1, 1, (4, 5)).astype(np.float32)
    g = mx.nd.array(x).as_in_context(mx.gpu(0))
    assert g.context == mx.gpu(0)
    y = (g * 2 + 1).asnumpy()
    np.testing.assert_allclose(y, x * 2 + 1, rtol=1e-6)
    back = mx.nd.zeros((4, 5))
    g.copyto(back)
    np.testing.assert_array_equal(back.asnumpy(), x)
    free, total = mx.context.gpu_memory_info(0)
    assert 0 < free <= total


def _mlp_grads(ctx, x, w, b, dy):
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=w.shape[0], name="fc")
    out = mx.sym.Activation(fc, act_type="tanh")
    ex = out.simple_bind(ctx, "write", data=x.shape)
    ex.arg_dict["data"][:] = x
    ex.arg_dict["fc_weight"][:] = w
    ex.arg_dict["fc_bias"][:] = b
    ex.forward(is_train=True)
    ex.backward([mx.nd.array(dy, ctx=ctx)])
    return ([ex.outputs[0].asnumpy()] +
            [ex.grad_dict[k].asnumpy() for k in ("data", "fc_weight", "fc_bias")])


def test_executor_forward_and_backward_match_the_cpu():
    rs = np.random.RandomState(1)
    x = rs.uniform(-1, 1, (8, 6)).astype(np.float32)
    w = rs.uniform(-1, 1, (5, 6)).astype(np.float32)
    b = rs.uniform(-1, 1, (5,)).astype(np.float32)
    dy = rs.uniform(-1, 1, (8, 5)).astype(np.float32)
    for g, c in zip(_mlp_grads(mx.gpu(0), x, w, b, dy), _mlp_grads(mx.cpu(0), x, w, b, dy)):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-5)


def test_matmul_example_runs_on_the_gpu(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "profiler", "profiler_matmul.py"),
         "--size", "512", "--iter_num", "5", "--begin_profiling_iter", "1",
         "--end_profiling_iter", "3"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "no GPU found" not in result.stdout
    assert (tmp_path / "profile_matmul_20iter.json").exists()


def test_gpu_memory_profiler_symbolic(tmp_path, monkeypatch):
    # MXNet's test_gpu_memory_profiler_symbolic (tests/python/gpu/test_profiler_gpu.py).
    monkeypatch.chdir(tmp_path)
    mx.profiler.set_config(profile_all=True, filename="test_profiler.json", profile_memory=True)
    mx.profiler.set_state("run")
    with mx.profiler.scope("tensordot"):
        A = mx.sym.Variable("A")
        B = mx.sym.Variable("B")
        C = mx.symbol.dot(A, B, name="dot")
    executor = C.simple_bind(mx.gpu(), "write", A=(1024, 2048), B=(2048, 4096))
    with mx.profiler.scope("init"):
        a = mx.random.uniform(-1.0, 1.0, shape=(1024, 2048), ctx=mx.gpu(0))
        b = mx.random.uniform(-1.0, 1.0, shape=(2048, 4096), ctx=mx.gpu(0))
    a.copyto(executor.arg_dict["A"])
    b.copyto(executor.arg_dict["B"])
    executor.forward(is_train=True)
    executor.backward([mx.nd.ones((1024, 4096), ctx=mx.gpu(0))])
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    mx.profiler.dump(True)

    import csv
    with open("gpu_memory_profile-pid_%d.csv" % os.getpid()) as f:
        rows = list(csv.DictReader(f))
    found = {(r["Attribute Name"], r["Requested Size"]) for r in rows}
    for name, size in [("tensordot:in_arg:A", a.size), ("tensordot:in_arg:B", b.size),
                       ("tensordot:arg_grad:A", a.size), ("tensordot:arg_grad:B", b.size),
                       ("tensordot:dot", 1024 * 4096), ("init:_random_uniform", a.size),
                       ("init:_random_uniform", b.size)]:
        assert (name, str(4 * size)) in found, (name, sorted(found))
    assert not any(r["Attribute Name"] in ("<unk>:unknown", "<unk>:") for r in rows)
    # nanomx-trace reads it per scope.
    tool = os.environ.get("NANOMX_TRACE_TOOL")
    if tool:
        out = subprocess.run([tool, "memory", "gpu_memory_profile-pid_%d.csv" % os.getpid()],
                             capture_output=True, text=True, check=True).stdout
        assert "tensordot" in out and "in_arg" in out


def test_module_trains_on_the_gpu():
    # One SGD step of a softmax classifier on gpu(0) and on cpu(0) from the same start.
    rs = np.random.RandomState(2)
    x = rs.uniform(-1, 1, (16, 10)).astype(np.float32)
    y = rs.randint(0, 4, (16,)).astype(np.float32)

    def train(ctx):
        data = mx.sym.Variable("data")
        fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
        net = mx.sym.SoftmaxOutput(fc, name="softmax")
        it = mx.io.NDArrayIter(x, y, batch_size=16)
        mod = mx.mod.Module(net, context=ctx)
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
        mx.random.seed(3)
        mod.init_params(initializer=mx.init.Uniform(0.5))
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5,
                                                              "momentum": 0.9})
        for _ in range(3):
            it.reset()
            for batch in it:
                mod.forward_backward(batch)
                mod.update()
        args, _ = mod.get_params()
        return {k: v.asnumpy() for k, v in args.items()}

    gpu, cpu = train(mx.gpu(0)), train(mx.cpu(0))
    for k in cpu:
        np.testing.assert_allclose(gpu[k], cpu[k], rtol=1e-4, atol=1e-5, err_msg=k)
