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


def test_integer_arrays_sorting_and_indexing_from_python():
    a = np.array([[5, -3, 7], [2, 2, -8]], np.int32)
    g = mx.nd.array(a, ctx=mx.gpu(0), dtype="int32")
    np.testing.assert_array_equal((g * 3 - 1).asnumpy(), a * 3 - 1)
    np.testing.assert_array_equal((g / 2).asnumpy(), (mx.nd.array(a, dtype="int32") / 2).asnumpy())
    np.testing.assert_array_equal(mx.nd.sum(g, axis=1).asnumpy(), a.sum(axis=1))
    np.testing.assert_array_equal(mx.nd.sort(g).asnumpy(), np.sort(a))
    np.testing.assert_array_equal(mx.nd.argsort(g, is_ascend=False).asnumpy(),
                                  mx.nd.argsort(mx.nd.array(a, dtype="int32"),
                                                is_ascend=False).asnumpy())
    top = mx.nd.topk(g.astype("float32"), k=2, ret_typ="value")
    assert top.context == mx.gpu(0)
    np.testing.assert_array_equal(top.asnumpy(), [[7, 5], [2, 2]])
    idx = mx.nd.array([[0, 1], [2, 0]], ctx=mx.gpu(0))
    np.testing.assert_array_equal(mx.nd.gather_nd(g, idx).asnumpy(), [a[0, 2], a[1, 0]])


class _Square(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])


@mx.operator.register("gpu_test_square")
class _SquareProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Square()


def test_custom_operator_runs_on_gpu_arrays():
    x = mx.nd.array([1, 2, 3], ctx=mx.gpu(0))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="gpu_test_square")
    y.backward()
    assert y.context == mx.gpu(0) and x.grad.context == mx.gpu(0)
    np.testing.assert_allclose(y.asnumpy(), [1, 4, 9])
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 4, 6])


def test_copies_convert_dtypes_across_devices():
    a = np.array([[1.5, -2.7, 300.0], [0.0, 7.9, -129.0]], np.float32)
    g = mx.nd.array(a, ctx=mx.gpu(0))
    for dtype in ("int32", "uint8", "float16", "float64"):
        want = mx.nd.array(a).astype(dtype).asnumpy()
        on_gpu = g.astype(dtype)  # a _copyto on the GPU that converts
        assert on_gpu.context == mx.gpu(0) and on_gpu.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(on_gpu.asnumpy(), want)
        to_cpu = mx.nd.zeros((2, 3), dtype=dtype)
        g.copyto(to_cpu)  # gpu float32 -> cpu dtype
        np.testing.assert_array_equal(to_cpu.asnumpy(), want)
        to_gpu = mx.nd.zeros((2, 3), ctx=mx.gpu(0), dtype=dtype)
        mx.nd.array(a).copyto(to_gpu)  # cpu float32 -> gpu dtype
        np.testing.assert_array_equal(to_gpu.asnumpy(), want)
