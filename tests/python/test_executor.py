"""The symbolic executor from Python: simple_bind / bind, forward / backward against numpy and
float64 central differences, grad_req write / add / null, MXNet's error texts, the planner's
off switches and mirroring (identical results), debug_str, a hand-written MXNet 1.x graph JSON,
reshape, and what the profiler records (MXNet's symbolic profiler test)."""
import os
import re

import numpy as np
import pytest

import nanomx as mx
from trace_check import check_trace, names_on_process


def _mlp():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=5, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _fill(exe, seed=0, label=(0, 1, 2, 1)):
    rng = np.random.RandomState(seed)
    for name, arr in exe.arg_dict.items():
        if name == "softmax_label":
            arr[:] = np.array(label, dtype=arr.dtype)
        else:
            arr[:] = rng.uniform(-1, 1, arr.shape).astype(arr.dtype)


def test_mlp_forward_backward_against_numpy():
    exe = _mlp().simple_bind(mx.cpu(), data=(4, 6))
    _fill(exe)
    a = {k: v.asnumpy().astype(np.float64) for k, v in exe.arg_dict.items()}
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    h1 = a["data"] @ a["fc1_weight"].T + a["fc1_bias"]
    r1 = np.maximum(h1, 0)
    z = r1 @ a["fc2_weight"].T + a["fc2_bias"]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out, p, rtol=1e-5, atol=1e-6)
    onehot = np.eye(3)[a["softmax_label"].astype(int)]
    dz = p - onehot  # normalization 'null': not divided by the batch
    dw2 = dz.T @ r1
    dr1 = dz @ a["fc2_weight"]
    dh1 = dr1 * (h1 > 0)
    g = exe.grad_dict
    np.testing.assert_allclose(g["fc2_weight"].asnumpy(), dw2, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g["fc2_bias"].asnumpy(), dz.sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g["fc1_weight"].asnumpy(), dh1.T @ a["data"], rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(g["fc1_bias"].asnumpy(), dh1.sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g["data"].asnumpy(), dh1 @ a["fc1_weight"], rtol=1e-4,
                               atol=1e-5)
    assert exe.outputs[0] is not None and len(exe.outputs) == 1
    assert list(exe.output_dict) == ["softmax_output"]


def _numeric_check(sym, shapes, seed=3):
    """Executor gradients vs float64 central differences of sum(w * output)."""
    exe = sym.simple_bind(mx.cpu(), type_dict={k: np.float64 for k in shapes}, **shapes)
    rng = np.random.RandomState(seed)
    inputs = {k: rng.uniform(-1, 1, s) for k, s in shapes.items()}
    exe.forward(is_train=True, **inputs)
    w = rng.uniform(-1, 1, exe.outputs[0].shape)
    exe.backward(mx.nd.array(w, dtype=np.float64))
    grads = {k: exe.grad_dict[k].asnumpy() for k in shapes}

    def loss():
        return float((exe.forward(**inputs)[0].asnumpy() * w).sum())

    h = 1e-6
    for k, v in inputs.items():
        num = np.zeros_like(v)
        flat = v.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + h
            lp = loss()
            flat[i] = old - h
            lm = loss()
            flat[i] = old
            num.reshape(-1)[i] = (lp - lm) / (2 * h)
        np.testing.assert_allclose(grads[k], num, rtol=1e-5, atol=1e-6, err_msg=k)


def _sym(name):
    return mx.sym.Variable(name)


def _ab(fn):
    """fn(a, b) on one variable a and one variable b (each used any number of times)."""
    return fn(_sym("a"), _sym("b"))


@pytest.mark.parametrize("make, shapes", [
    (lambda: mx.sym.dot(_sym("a"), _sym("b")), {"a": (2, 3), "b": (3, 4)}),
    (lambda: mx.sym.dot(_sym("a"), _sym("b"), transpose_a=True), {"a": (3, 2), "b": (3, 4)}),
    (lambda: mx.sym.FullyConnected(_sym("x"), _sym("w"), _sym("b"), num_hidden=3),
     {"x": (2, 4), "w": (3, 4), "b": (3,)}),
    (lambda: mx.sym.Activation(_sym("x"), act_type="sigmoid"), {"x": (2, 3)}),
    (lambda: mx.sym.Activation(_sym("x"), act_type="tanh"), {"x": (2, 3)}),
    (lambda: mx.sym.Activation(_sym("x"), act_type="softrelu"), {"x": (2, 3)}),
    (lambda: _ab(lambda a, b: a * b + a), {"a": (2, 3), "b": (2, 3)}),
    (lambda: _ab(lambda a, b: (a - b) / (b * b + 1)), {"a": (3,), "b": (3,)}),
    (lambda: mx.sym.sum(mx.sym.exp(_sym("a")), axis=1), {"a": (2, 3)}),
    (lambda: mx.sym.softmax(_sym("a")), {"a": (2, 4)}),
    (lambda: mx.sym.log_softmax(_sym("a")), {"a": (2, 4)}),
    (lambda: mx.sym.broadcast_mul(_sym("a"), _sym("b")), {"a": (2, 3), "b": (1, 3)}),
    (lambda: mx.sym.Reshape(mx.sym.Flatten(_sym("a")) * 2, shape=(3, 4)), {"a": (2, 3, 2)}),
    (lambda: mx.sym.Concat(_sym("a"), _sym("b"), dim=1) * 3, {"a": (2, 3), "b": (2, 2)}),
    (lambda: _ab(lambda a, b: mx.sym.Concat(a, a, b, dim=0)), {"a": (1, 3), "b": (2, 3)}),
    # pick by an index computed in the graph (zeros: the first column), which gets no gradient
    (lambda: (lambda a: mx.sym.pick(
        a, mx.sym.BlockGrad(mx.sym.sum(mx.sym.zeros_like(a), axis=1)), axis=1))(_sym("a")),
     {"a": (3, 4)}),
    # one variable feeding several nodes: gradients summed
    (lambda: _ab(lambda a, b: mx.sym.tanh(a) * mx.sym.sigmoid(a) + a * 3 + b),
     {"a": (2, 2), "b": (2, 2)}),
])
def test_numeric_gradients(make, shapes):
    _numeric_check(make(), shapes)


def test_loss_outputs_need_no_head_gradient_others_do():
    exe = _mlp().simple_bind(mx.cpu(), data=(4, 6))
    exe.forward(is_train=True)
    exe.backward()  # SoftmaxOutput: no head gradient
    y = mx.sym.dot(_sym("A"), _sym("B"))
    exe = y.simple_bind(mx.cpu(), A=(2, 2), B=(2, 2))
    exe.forward(is_train=True)
    with pytest.raises(mx.MXNetError, match="Because the last operator is not Loss function, "
                                            "head_gradient is required when calling backward"):
        exe.backward()
    exe.backward([mx.nd.ones((2, 2))])
    exe.arg_dict["A"][:] = np.array([[1, 2], [3, 4]])
    exe.backward([mx.nd.ones((2, 2), dtype=np.float64)])  # converted, as MXNet's copy
    np.testing.assert_allclose(exe.grad_dict["B"].asnumpy(), [[4, 4], [6, 6]])
    exe.backward({"dot0_output": mx.nd.ones((2, 2))} if False else mx.nd.ones((2, 2)))
    with pytest.raises(TypeError, match="inputs must be NDArray"):
        exe.backward([np.ones((2, 2))])


def test_grad_req_add_accumulates_null_has_none():
    x = _sym("x")
    y = x * 2 + 1
    exe = y.simple_bind(mx.cpu(), grad_req="add", x=(3,))
    exe.grad_dict["x"][:] = 1
    for _ in range(3):
        exe.forward(is_train=True, x=np.array([1, 2, 3], dtype=np.float32))
        exe.backward(mx.nd.ones((3,)))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), [7, 7, 7])
    exe = y.simple_bind(mx.cpu(), grad_req="null", x=(3,))
    assert exe.grad_arrays == [None]
    exe.backward()  # nothing bound: does nothing
    a, b = _sym("a"), _sym("b")
    exe = (a * b).simple_bind(mx.cpu(), grad_req={"a": "write"}, a=(2,), b=(2,))
    assert exe.grad_dict["b"] is None and exe.grad_dict["a"] is not None
    exe = (a * b).simple_bind(mx.cpu(), grad_req=["null", "add"], a=(2,), b=(2,))
    assert exe.grad_dict["a"] is None and exe.grad_dict["b"] is not None


def test_simple_bind_errors():
    y = mx.sym.dot(_sym("A"), _sym("B"))
    with pytest.raises(RuntimeError) as e:
        y.simple_bind(mx.cpu(), A=(2, 3))
    assert str(e.value).startswith("simple_bind error. Arguments:\nA: (2, 3)\n")
    with pytest.raises(RuntimeError, match="is not a valid input in simple_bind; only 'null', "
                                           "'write', and 'add' are supported"):
        y.simple_bind(mx.cpu(), grad_req="bad", A=(2, 3), B=(3, 2))
    with pytest.raises(RuntimeError, match="grad_req in simple_bind cannot be an empty list"):
        y.simple_bind(mx.cpu(), grad_req=[], A=(2, 3), B=(3, 2))
    with pytest.raises(RuntimeError, match="grad_req in simple_bind cannot be an empty dict"):
        y.simple_bind(mx.cpu(), grad_req={}, A=(2, 3), B=(3, 2))
    with pytest.raises(RuntimeError, match="simple_bind error"):
        y.simple_bind(mx.cpu(), A=(2, 3), B=(4, 2))  # inconsistent shapes


def test_bind_uses_the_callers_arrays_and_checks_inputs():
    a, b = _sym("a"), _sym("b")
    y = a * b
    xa, xb = mx.nd.array([1, 2]), mx.nd.array([3, 4])
    ga = mx.nd.zeros((2,))
    exe = y.bind(mx.cpu(), {"a": xa, "b": xb}, args_grad={"a": ga})
    assert exe.arg_arrays[0] is xa
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2,)))
    np.testing.assert_allclose(ga.asnumpy(), [3, 4])
    xa[:] = 10  # the executor reads the caller's array
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), [30, 40])
    exe = y.bind(mx.cpu(), [xa, xb])  # no args_grad: no gradient at all
    exe.forward()
    exe.backward()
    with pytest.raises(TypeError, match="Context type error"):
        y.bind("cpu", [xa, xb])
    with pytest.raises(ValueError, match="Length of args does not match the number of "
                                         "arguments"):
        y.bind(mx.cpu(), [xa])
    with pytest.raises(ValueError, match="key `b` is missing in `args`"):
        y.bind(mx.cpu(), {"a": xa})
    with pytest.raises(ValueError, match="grad_req must be in"):
        y.bind(mx.cpu(), [xa, xb], args_grad=[ga, None], grad_req="bad")


def test_forward_kwargs_checks_and_dicts():
    exe = (_sym("a") + 1).simple_bind(mx.cpu(), a=(2,))
    np.testing.assert_allclose(exe.forward(a=np.array([1, 2]))[0].asnumpy(), [2, 3])
    with pytest.raises(ValueError, match="only accept keyword argument of NDArrays and "
                                         "numpy.ndarray"):
        exe.forward(a=[1, 2])
    with pytest.raises(TypeError, match="Unknown argument c"):
        exe.forward(c=np.ones(2))
    with pytest.raises(ValueError, match=r"Shape not match! Argument a, need: \(2,\), "
                                         r"received: \(3,\)"):
        exe.forward(a=np.ones(3))
    exe.copy_params_from({"a": mx.nd.array([5, 6], dtype=np.float64)})
    np.testing.assert_allclose(exe.arg_dict["a"].asnumpy(), [5, 6])
    with pytest.raises(ValueError, match='Find name "zz" that is not in the arguments'):
        exe.copy_params_from({"zz": mx.nd.ones((2,))})
    exe.copy_params_from({"zz": mx.nd.ones((2,))}, allow_extra_params=True)
    with pytest.raises(ValueError, match="Find name zz that is not in the auxiliary states"):
        exe.copy_params_from({}, {"zz": mx.nd.ones((2,))})
    assert exe.aux_dict == {} and exe.aux_arrays == []
    assert isinstance(exe, mx.executor.Executor)


def test_reshape_shares_memory_and_checks_sizes():
    exe = _mlp().simple_bind(mx.cpu(), data=(8, 6))
    _fill(exe, label=list(range(3)) * 2 + [0, 1])
    small = exe.reshape(data=(4, 6), softmax_label=(4,))
    assert small.arg_dict["data"].shape == (4, 6)
    np.testing.assert_allclose(small.arg_dict["data"].asnumpy(),
                               exe.arg_dict["data"].asnumpy()[:4])
    np.testing.assert_allclose(small.forward()[0].asnumpy(), exe.forward()[0].asnumpy()[:4],
                               rtol=1e-6)
    with pytest.raises(mx.MXNetError, match="larger than original"):
        exe.reshape(data=(16, 6), softmax_label=(16,))
    big = exe.reshape(allow_up_sizing=True, data=(16, 6), softmax_label=(16,))
    assert big.outputs[0].shape == (16, 3)
    with pytest.raises(mx.MXNetError, match="Shape of unspecifie arg: softmax_label changed"):
        exe.reshape(data=(4, 6))
    exe.reshape(partial_shaping=True, data=(4, 6))


def _run_mlp(**env):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        exe = _mlp().simple_bind(mx.cpu(), data=(64, 6))
    finally:
        for k, v in old.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    _fill(exe, label=[i % 3 for i in range(64)])
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    grads = {k: v.asnumpy() for k, v in exe.grad_dict.items()}
    return out, grads, exe._planned_bytes()[0], exe.debug_str()


def test_planner_off_switches_and_mirror_give_identical_results():
    out, grads, shared, _ = _run_mlp()
    for env in ({"NNVM_EXEC_MATCH_RANGE": "0", "MXNET_EXEC_ENABLE_INPLACE": "0"},
                {"NANOMX_EXEC_ENABLE_INPLACE": "0"}, {"MXNET_BACKWARD_DO_MIRROR": "1"}):
        o, g, planned, text = _run_mlp(**env)
        np.testing.assert_array_equal(o, out)
        for k in grads:
            np.testing.assert_array_equal(g[k], grads[k], err_msg=k)
        if "NNVM_EXEC_MATCH_RANGE" in env:
            assert planned > shared
        if "MXNET_BACKWARD_DO_MIRROR" in env:
            assert "relu1_mirror" in text and "relu1_mirror_backward" in text


def test_force_mirroring_attribute():
    data = mx.sym.Variable("data")
    act = mx.sym.Activation(data, act_type="tanh", name="act", attr={"force_mirroring": "True"})
    exe = (act * 2).simple_bind(mx.cpu(), data=(3,))
    assert "act_mirror" in exe.debug_str()


def test_debug_str_dot_example():
    c = mx.sym.dot(mx.sym.Variable("A"), mx.sym.Variable("B"))
    exe = c._simple_bind(mx.cpu(), "write", A=(4096, 4096), B=(4096, 4096))
    text = exe.debug_str()
    assert text.endswith("Total 128 MB allocated\nTotal 11 TempSpace resource requested\n")
    assert text.split("\n")[-3].split()[1] == "128"  # how Module and memonger read it
    assert re.search(r"Op:_backward_dot, Name=dot\d+_backward\n", text)
    assert "Variable:_head_grad_0\n" in text


# MXNet 1.x's JSON graph format, written by hand (an MLP as MXNet 1.9.1 saves it).
_MXNET_JSON = """{
  "nodes": [
    {"op": "null", "name": "data", "inputs": []},
    {"op": "null", "name": "fc1_weight", "attrs": {"num_hidden": "4"}, "inputs": []},
    {"op": "null", "name": "fc1_bias", "attrs": {"num_hidden": "4"}, "inputs": []},
    {"op": "FullyConnected", "name": "fc1", "attrs": {"num_hidden": "4"},
     "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
    {"op": "Activation", "name": "relu1", "attrs": {"act_type": "relu"},
     "inputs": [[3, 0, 0]]},
    {"op": "null", "name": "softmax_label", "inputs": []},
    {"op": "SoftmaxOutput", "name": "softmax", "inputs": [[4, 0, 0], [5, 0, 0]]}
  ],
  "arg_nodes": [0, 1, 2, 5],
  "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 7],
  "heads": [[6, 0, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
}"""


def test_mxnet_json_graph_loads_binds_and_runs():
    sym = mx.sym.load_json(_MXNET_JSON)
    assert sym.list_arguments() == ["data", "fc1_weight", "fc1_bias", "softmax_label"]
    exe = sym.simple_bind(mx.cpu(), data=(2, 3))
    exe.arg_dict["data"][:] = np.array([[1, 2, 3], [-1, 0, 1]])
    exe.arg_dict["fc1_weight"][:] = np.eye(4, 3)
    exe.arg_dict["softmax_label"][:] = np.array([0, 3])
    out = exe.forward(is_train=True)[0].asnumpy()
    z = np.maximum(np.array([[1, 2, 3, 0], [-1, 0, 1, 0]], dtype=np.float64), 0)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    np.testing.assert_allclose(out, p, rtol=1e-6)
    exe.backward()
    assert exe.grad_dict["fc1_weight"].shape == (4, 3)


def test_symbolic_profiler_dot_on_cpu1(enable_profiler):
    # MXNet's test_profiler.py::test_profiler: _simple_bind on cpu(1), passes 2 and 3 profiled.
    enable_profiler("test_profiler.json", run=False)
    A = mx.sym.Variable("A")
    B = mx.sym.Variable("B")
    C = mx.symbol.dot(A, B)
    executor = C._simple_bind(mx.cpu(1), "write", A=(256, 256), B=(256, 256))
    a = mx.random.uniform(-1.0, 1.0, shape=(256, 256))
    b = mx.random.uniform(-1.0, 1.0, shape=(256, 256))
    a.copyto(executor.arg_dict["A"])
    b.copyto(executor.arg_dict["B"])
    for i in range(5):
        if i == 1:
            mx.profiler.set_state("run")
        if i == 3:
            mx.profiler.set_state("stop")
        executor.forward()
        executor.outputs[0].wait_to_read()
    mx.profiler.dump(True)
    mx.profiler.set_state("stop")
    events = check_trace("test_profiler.json")
    dots = [e for e in events if e.get("name") == "dot" and e.get("ph") == "B"]
    assert len(dots) == 2, dots
    for e in dots:
        assert e["pid"] == 1 and e["cat"] == "operator"
        assert e["args"] == {"inputs": [[256, 256], [256, 256]], "outputs": [[256, 256]]}
    assert "dot" in names_on_process(events, "cpu/1")


def test_only_profile_symbolic_records_executor_nodes_not_imperative_calls(profile_to):
    profile_to.start("symbolic_only.json", profile_symbolic=True, profile_imperative=False,
                     profile_api=False, profile_memory=False)
    exe = mx.sym.dot(_sym("A"), _sym("B")).simple_bind(mx.cpu(), A=(8, 8), B=(8, 8))
    x = mx.random.uniform(-1, 1, shape=(8, 8))  # imperative: a random fill
    x.copyto(exe.arg_dict["A"])  # imperative: a copy
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((8, 8)))
    exe.outputs[0].wait_to_read()
    mx.nd.waitall()
    names = {e["name"] for e in profile_to.finish() if e.get("ph") == "B"}
    assert "dot" in names and "_backward_dot" in names
    assert "_identity_with_attr_like_rhs" in names
    assert not names & {"_copyto", "_random_uniform", "_zeros", "_full"}, names


def test_same_gradient_for_two_arguments_gets_copies():
    a, b = _sym("a"), _sym("b")
    exe = (a + b).simple_bind(mx.cpu(), a=(3,), b=(3,))
    exe.forward(is_train=True)
    exe.backward(mx.nd.array([1, 2, 3]))
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), [1, 2, 3])
    np.testing.assert_allclose(exe.grad_dict["b"].asnumpy(), [1, 2, 3])
    assert "_copy" in exe.debug_str()


def test_many_gradient_terms_are_summed_by_a_chain():
    a = _sym("a")
    y = mx.sym.add_n(*[a * k for k in range(1, 10)])
    exe = y.simple_bind(mx.cpu(), a=(2,))
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2,)))
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), [45, 45])
    text = exe.debug_str()
    assert "Name=sum_grad_8\n" in text and "Name=sum_grad\n" not in text
    exe = mx.sym.add_n(*[a * k for k in range(1, 4)]).simple_bind(mx.cpu(), a=(2,))
    assert "Op:add_n, Name=sum_grad\n" in exe.debug_str()


def test_shared_buffer_receives_the_new_arrays():
    buf = {}
    exe = _mlp().simple_bind(mx.cpu(), shared_arg_names=["fc1_weight"], shared_buffer=buf,
                             data=(4, 6))
    assert "data" in buf and "fc1_weight" not in buf
    assert buf["data"] is exe.arg_dict["data"]
    with pytest.raises(ValueError, match="shared_exec is not supported"):
        _mlp().simple_bind(mx.cpu(), shared_exec=exe, data=(4, 6))
