"""mx.operator custom operators: imperative with autograd, a loss operator without a top
gradient, errors raised from the body (MXNetError at the next wait, the engine keeps working),
and MXNet's custom-operator profiling test (names and category of the aggregate table)."""
import json

import numpy as np
import pytest

import nanomx as mx
from nanomx import autograd, profiler


@mx.operator.register("MySigmoid")
class MySigmoidProp(mx.operator.CustomOpProp):
    def __init__(self):
        super(MySigmoidProp, self).__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return in_shape, in_shape, []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return MySigmoid()


class MySigmoid(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = 1.0 / (1.0 + np.exp(-x))
        mx.nd.zeros((100, 100))  # an operator called inside the body (profiled as MySigmoid::_zeros)
        self.assign(out_data[0], req[0], mx.nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0].asnumpy()
        dy = out_grad[0].asnumpy()
        self.assign(in_grad[0], req[0], mx.nd.array(dy * y * (1.0 - y)))


@mx.operator.register("Scale")
class ScaleProp(mx.operator.CustomOpProp):
    """Two inputs, kwargs as strings: out = a * factor + b."""

    def __init__(self, factor="1"):
        super(ScaleProp, self).__init__()
        assert isinstance(factor, str)
        self.factor = float(factor)

    def list_arguments(self):
        return ["a", "b"]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        assert isinstance(ctx, mx.Context)
        assert in_shapes == [[2, 3], [2, 3]] and in_dtypes == [0, 0]
        return Scale(self.factor)


class Scale(mx.operator.CustomOp):
    def __init__(self, factor):
        super(Scale, self).__init__()
        self.factor = factor

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * self.factor + in_data[1])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * self.factor)
        self.assign(in_grad[1], req[1], out_grad[0])


@mx.operator.register("SquareLoss")
class SquareLossProp(mx.operator.CustomOpProp):
    """A loss: backward ignores the head gradient (need_top_grad=False)."""

    def __init__(self):
        super(SquareLossProp, self).__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        assert out_grad == [0] and in_data == [1, 2] and out_data == [3]
        return in_data + out_data

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return SquareLoss()


class SquareLoss(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        d = in_data[0] - in_data[1]
        self.assign(out_data[0], req[0], d * d)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], (in_data[0] - in_data[1]) * 2)
        self.assign(in_grad[1], req[1], mx.nd.zeros(in_data[1].shape))


@mx.operator.register("Broken")
class BrokenProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Broken()


class Broken(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        raise ValueError("broken on purpose")


@mx.operator.register("BadShape")
class BadShapeProp(mx.operator.CustomOpProp):
    def infer_shape(self, in_shape):
        raise ValueError("no")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_imperative_forward():
    x = mx.nd.array([0.0, 1.0, 2.0, 3.0])
    y = mx.nd.Custom(x, op_type="MySigmoid")
    np.testing.assert_allclose(y.asnumpy(), _sigmoid(np.arange(4.0)), rtol=1e-6)


def test_autograd_backward():
    x = mx.nd.array([0.0, 1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.Custom(x, op_type="MySigmoid")
    y.backward()
    s = _sigmoid(np.arange(4.0))
    np.testing.assert_allclose(x.grad.asnumpy(), s * (1 - s), rtol=1e-5)


def test_kwargs_are_strings_and_two_inputs():
    a = mx.nd.ones((2, 3))
    b = mx.nd.ones((2, 3)) * 5
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        out = mx.nd.Custom(a, b, op_type="Scale", factor=3)
    np.testing.assert_allclose(out.asnumpy(), np.full((2, 3), 8.0))
    out.backward(mx.nd.ones((2, 3)) * 2)
    np.testing.assert_allclose(a.grad.asnumpy(), np.full((2, 3), 6.0))
    np.testing.assert_allclose(b.grad.asnumpy(), np.full((2, 3), 2.0))


def test_loss_without_top_grad():
    data = mx.nd.array([1.0, 2.0, 3.0])
    label = mx.nd.array([1.0, 0.0, 5.0])
    data.attach_grad()
    with autograd.record():
        loss = mx.nd.Custom(data, label, op_type="SquareLoss")
    np.testing.assert_allclose(loss.asnumpy(), [0.0, 4.0, 4.0])
    loss.backward()
    np.testing.assert_allclose(data.grad.asnumpy(), [0.0, 4.0, -4.0])


def test_errors():
    x = mx.nd.ones((2,))
    with pytest.raises(mx.MXNetError, match="Required argument `op_type` is missing"):
        mx.nd.Custom(x)
    with pytest.raises(mx.MXNetError, match="Cannot find custom operator NoSuchOp"):
        mx.nd.Custom(x, op_type="NoSuchOp")
    with pytest.raises(mx.MXNetError, match="Error in BadShape.infer_shape: ValueError: no"):
        mx.nd.Custom(x, op_type="BadShape")


def test_raising_forward_reaches_the_caller_and_engine_keeps_working():
    x = mx.nd.ones((3,))
    y = mx.nd.Custom(x, op_type="Broken")
    with pytest.raises(mx.MXNetError,
                       match="Error in CustomOp.forward of custom operator Broken: "
                             "ValueError: broken on purpose"):
        y.wait_to_read()
    with pytest.raises(mx.MXNetError):
        mx.nd.waitall()
    # The engine and custom operators still work.
    z = mx.nd.Custom(x, op_type="MySigmoid") + 1
    np.testing.assert_allclose(z.asnumpy(), _sigmoid(np.ones(3)) + 1, rtol=1e-6)
    mx.nd.waitall()


def test_nested_and_many_calls():
    x = mx.nd.array(np.linspace(-2, 2, 10))
    ys = [mx.nd.Custom(x * (i + 1), op_type="MySigmoid") for i in range(8)]
    for i, y in enumerate(ys):
        np.testing.assert_allclose(y.asnumpy(), _sigmoid(np.linspace(-2, 2, 10) * (i + 1)),
                                   rtol=1e-5)


def test_reregistration_overrides():
    @mx.operator.register("Twice")
    class One(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return mx.operator.CustomOp()

    @mx.operator.register("Twice")
    class Two(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            class Copy(mx.operator.CustomOp):
                def forward(self, is_train, req, in_data, out_data, aux):
                    self.assign(out_data[0], req[0], in_data[0] * 2)
            return Copy()

    y = mx.nd.Custom(mx.nd.ones((2,)), op_type="Twice")
    np.testing.assert_allclose(y.asnumpy(), [2.0, 2.0])


# ---- MXNet's test_profiler.py: test_custom_operator_profiling ----------------------------------
def test_custom_operator_profiling(enable_profiler):
    enable_profiler("test_custom_operator_profiling.json", run=True, continuous_dump=True,
                    aggregate_stats=True)
    profiler.dumps(reset=True)
    x = mx.nd.array([0, 1, 2, 3])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.Custom(x, op_type="MySigmoid")
    y.backward()
    mx.nd.waitall()
    profiler.dump(False)
    debug_str = profiler.dumps(format="json")
    target = json.loads(debug_str)
    assert "Time" in target and "Custom Operator" in target["Time"]
    names = target["Time"]["Custom Operator"]
    assert "MySigmoid::pure_python" in names
    assert "_backward_MySigmoid::pure_python" in names
    assert "MySigmoid::_zeros" in names
    # The Custom engine operations themselves are never profiled.
    assert "Custom" not in target["Time"].get("operator", {})
    assert "_backward_Custom" not in target["Time"].get("operator", {})
    profiler.set_state("stop")


# ---- symbolic -----------------------------------------------------------------------------------
def test_symbolic_forward_backward():
    data = mx.sym.Variable("data")
    out = mx.sym.Custom(data, op_type="MySigmoid", name="sig")
    assert out.list_arguments() == ["data"]
    assert out.list_outputs() == ["sig_output"]
    assert out.infer_shape(data=(2, 3))[1] == [(2, 3)]
    node = [n for n in json.loads(out.tojson())["nodes"] if n["op"] == "Custom"][0]
    assert node["attrs"]["op_type"] == "MySigmoid"
    xv = np.linspace(-2, 2, 6).reshape(2, 3).astype(np.float32)
    exe = out.simple_bind(mx.cpu(), data=(2, 3))
    exe.forward(is_train=True, data=mx.nd.array(xv))
    s = _sigmoid(xv)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), s, rtol=1e-5)
    head = np.arange(6, dtype=np.float32).reshape(2, 3)
    exe.backward(mx.nd.array(head))
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), head * s * (1 - s), rtol=1e-5,
                               atol=1e-6)


def test_symbolic_two_inputs_by_name_in_a_graph():
    a = mx.sym.Variable("a")
    b = mx.sym.Variable("b")
    out = mx.sym.Custom(b=b * 2, a=a, op_type="Scale", factor=3) + 1
    av = np.ones((2, 3), dtype=np.float32)
    bv = np.full((2, 3), 4.0, dtype=np.float32)
    exe = out.bind(mx.cpu(), {"a": mx.nd.array(av), "b": mx.nd.array(bv)},
                   args_grad={"a": mx.nd.zeros((2, 3)), "b": mx.nd.zeros((2, 3))})
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), av * 3 + bv * 2 + 1)
    exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), np.full((2, 3), 3.0))
    np.testing.assert_allclose(exe.grad_dict["b"].asnumpy(), np.full((2, 3), 2.0))


def test_symbolic_loss_backward_without_head_gradient():
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("label")
    loss = mx.sym.Custom(data, label, op_type="SquareLoss")
    exe = loss.simple_bind(mx.cpu(), data=(3,), label=(3,))
    exe.forward(is_train=True, data=mx.nd.array([1.0, 2.0, 3.0]),
                label=mx.nd.array([1.0, 0.0, 5.0]))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), [0.0, 4.0, 4.0])
    exe.backward()  # need_top_grad=False: no head gradient needed, as MXNet's loss operators
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), [0.0, 4.0, -4.0])


def test_symbolic_raising_forward():
    exe = mx.sym.Custom(mx.sym.Variable("x"), op_type="Broken").simple_bind(mx.cpu(), x=(2,))
    exe.forward()
    with pytest.raises(mx.MXNetError, match="forward"):
        exe.outputs[0].asnumpy()
    with pytest.raises(mx.MXNetError):
        mx.nd.waitall()
    np.testing.assert_allclose((mx.nd.ones((2,)) * 2).asnumpy(), [2.0, 2.0])


# ---- MXNet's test_profiler.py: custom operators, imperative and symbolic ----------------------
class MyAdd(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register("MyAdd1")
class MyAdd1Prop(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return MyAdd()


@mx.operator.register("MyAdd2")
class MyAdd2Prop(MyAdd1Prop):
    pass


@pytest.mark.parametrize("mode", ["imperative", "symbolic"])
def test_custom_operator_profiling_multiple_custom_ops(enable_profiler, mode):
    enable_profiler("test_custom_operator_profiling_multiple_custom_ops_%s.json" % mode,
                    run=True, continuous_dump=True, aggregate_stats=True)
    inp = mx.nd.zeros(shape=(100, 100))
    if mode == "imperative":
        x = inp + 1
        y = mx.nd.Custom(inp, op_type="MyAdd1")
        z = mx.nd.Custom(inp, op_type="MyAdd2")
        results = [x, y, z]
    else:
        a = mx.symbol.Variable("a")
        b = a + 1
        c = mx.symbol.Custom(data=a, op_type="MyAdd1")
        d = mx.symbol.Custom(data=a, op_type="MyAdd2")
        e = b.bind(mx.cpu(), {"a": inp})
        f = c.bind(mx.cpu(), {"a": inp})
        g = d.bind(mx.cpu(), {"a": inp})
        results = [e.forward()[0], f.forward()[0], g.forward()[0]]
    mx.nd.waitall()
    for r in results:
        np.testing.assert_allclose(r.asnumpy(), np.ones((100, 100)))
    profiler.dump(False)
    target = json.loads(profiler.dumps(format="json"))
    assert "Time" in target and "Custom Operator" in target["Time"]
    names = target["Time"]["Custom Operator"]
    for name in ("MyAdd1::pure_python", "MyAdd2::pure_python", "MyAdd1::_plus_scalar",
                 "MyAdd2::_plus_scalar"):
        assert name in names, (name, sorted(names))
    profiler.set_state("stop")


def test_everything_above_under_the_naive_engine():
    """MXNet runs these tests again with MXNET_ENGINE_TYPE=NaiveEngine: bodies then run inline
    on the calling thread."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, NANOMX_ENGINE_TYPE="NaiveEngine")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             os.path.abspath(__file__), "-k", "not naive_engine"],
                            env=env, capture_output=True, text=True, timeout=600,
                            cwd=os.path.dirname(os.path.abspath(__file__)))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
