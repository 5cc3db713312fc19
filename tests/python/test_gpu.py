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
