"""mx.sym: variables, operator symbols with MXNet's automatic names, arithmetic, listing,
shape/type inference, MXNet's JSON graph format, attributes, and the layer operators
imperatively against numpy."""
import pickle
import warnings

import numpy as np
import pytest

import nanomx as mx

DOT_JSON = """{
  "nodes": [
    {
      "op": "null", 
      "name": "A", 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "B", 
      "inputs": []
    }, 
    {
      "op": "dot", 
      "name": "dot0", 
      "inputs": [[0, 0, 0], [1, 0, 0]]
    }
  ], 
  "arg_nodes": [0, 1], 
  "node_row_ptr": [0, 1, 2, 3], 
  "heads": [[2, 0, 0]], 
  "attrs": {"mxnet_version": ["int", 10901]}
}"""


def mlp():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=128, name="fc1")
    act1 = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act1, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def test_aliases_and_generated_functions():
    assert mx.sym is mx.symbol
    for name in ("FullyConnected", "Activation", "SoftmaxOutput", "Softmax", "Flatten",
                 "LinearRegressionOutput", "dot", "Reshape"):
        assert callable(getattr(mx.sym, name))
    assert callable(mx.sym._internal._plus_scalar)


def test_automatic_names():
    with mx.name.NameManager():
        a, b = mx.sym.Variable("A"), mx.sym.Variable("B")
        c = mx.sym.dot(a, b)
        assert c.name == "dot0"
        assert mx.sym.dot(a, b).name == "dot1"
        fc = mx.sym.FullyConnected(a, num_hidden=3)
        assert fc.name == "fullyconnected0"
        assert fc.list_arguments() == ["A", "fullyconnected0_weight", "fullyconnected0_bias"]
        assert mx.sym.SoftmaxOutput(fc).list_arguments()[-1] == "softmaxoutput0_label"
        assert (c + c).name == "_plus0"
        assert (c - c).name == "_minus0"
        assert (c * c).name == "_mul0"
        assert (c / c).name == "_div0"
        assert (c + 2).name == "_plusscalar0"
        assert (2 + c).name == "_plusscalar1"
        assert (c * 2).name == "_mulscalar0"
        assert (-c).name == "_mulscalar1"
        assert (-c).attr("scalar") == "-1.0"
        assert (2 - c).name == "_rminusscalar0"
        assert (c - 2).name == "_minusscalar0"
        assert (1 / c).name == "_rdivscalar0"
        assert mx.sym.Softmax(c).name == "softmax0"  # an alias is named after itself
        assert mx.sym.Softmax(c).tojson().count('"op": "SoftmaxOutput"') == 1
    with mx.name.NameManager():
        assert mx.sym.dot(mx.sym.var("x"), mx.sym.var("y")).name == "dot0"
        with mx.name.Prefix("net_"):
            assert mx.sym.dot(mx.sym.var("x"), mx.sym.var("y")).name == "net_dot0"
            assert mx.sym.dot(mx.sym.var("x"), mx.sym.var("y"), name="d").name == "net_d"


def test_listing_and_internals():
    s = mlp()
    assert s.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias",
                                  "softmax_label"]
    assert s.list_outputs() == ["softmax_output"]
    assert s.list_auxiliary_states() == []
    internals = s.get_internals()
    assert internals.list_outputs()[:5] == ["data", "fc1_weight", "fc1_bias", "fc1_output",
                                            "relu1_output"]
    fc1 = internals["fc1_output"]
    assert fc1.name == "fc1"
    assert fc1.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    with pytest.raises(ValueError, match='Cannot find output that matches name "nope"'):
        internals["nope"]
    g = mx.sym.Group([fc1, s])
    assert len(g) == 2
    assert g.name is None
    assert [x.name for x in g] == ["fc1", "softmax"]
    with pytest.raises(IndexError):
        g[2]
    assert g[0:1].list_outputs() == ["fc1_output"]
    assert s.get_children().list_outputs() == ["fc2_output", "softmax_label"]
    assert mx.sym.var("v").get_children() is None
    with pytest.raises(TypeError, match="Expected a list of symbols"):
        mx.sym.Group([])
    assert repr(s) == "<Symbol softmax>"


def test_composition_call_and_errors():
    data = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.var("x"), act_type="tanh", name="t")
    composed = net(x=mx.sym.FullyConnected(data, num_hidden=4, name="fc"))
    assert composed.list_arguments() == ["data", "fc_weight", "fc_bias"]
    assert net.list_arguments() == ["x"]  # __call__ copies
    w = mx.sym.var("w")
    fc = mx.sym.FullyConnected(data, weight=w, no_bias=True, num_hidden=4, name="nb")
    assert fc.list_arguments() == ["data", "w"]
    with pytest.raises(mx.MXNetError, match="Required parameter|num_hidden"):
        mx.sym.FullyConnected(data)
    with pytest.raises(TypeError, match="either as positional or keyword"):
        net(data, x=data)
    with pytest.raises(mx.MXNetError, match="Symbol.ComposeKeyword argument name foo not found"):
        net(foo=data)
    with pytest.raises(mx.MXNetError, match="Variable cannot be composed"):
        data(data)
    with pytest.raises(TypeError, match="Expect a string for variable"):
        mx.sym.Variable(3)
    with pytest.raises(ValueError, match="Additional attributes must start and end"):
        mx.sym.Variable("v", foo=1)


def test_variable_attributes_and_scopes():
    v = mx.sym.Variable("v", shape=(128, 784), dtype="float64", lr_mult=2, wd_mult=0.5,
                        init="zeros", __extra__="e")
    assert v.attr("__shape__") == "(128, 784)"
    assert v.attr("__dtype__") == "1"
    assert v.attr("lr_mult") == "2"
    attrs = v.list_attr()
    assert attrs["__lr_mult__"] == "2" and attrs["lr_mult"] == "2"
    assert attrs["__wd_mult__"] == "0.5" and attrs["__init__"] == "zeros"
    with mx.attribute.AttrScope(ctx_group="dev1"):
        a = mx.sym.Activation(v, act_type="relu", name="a")
    assert a.attr("ctx_group") == "dev1"
    assert a.attr_dict()["a"]["__ctx_group__"] == "dev1"
    a._set_attr(mirror_stage="True")
    assert a.attr("__mirror_stage__") == "True"
    with pytest.raises(ValueError, match="Set Attr only accepts string values"):
        a._set_attr(x=1)
    with pytest.raises(mx.MXNetError, match="deprecated"):
        a._set_attr(weight_lr_mult="2")


def test_infer_shape_full_partial_and_errors():
    s = mlp()
    arg, out, aux = s.infer_shape(data=(32, 784))
    assert arg == [(32, 784), (128, 784), (128,), (10, 128), (10,), (32,)]
    assert out == [(32, 10)]
    assert aux == []
    assert s.infer_shape((32, 784))[1] == [(32, 10)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert s.infer_shape(fc1_weight=(128, 784)) == (None, None, None)
    assert "Cannot decide shape for the following arguments" in str(caught[0].message)
    arg, out, _ = s.infer_shape_partial(fc1_weight=(128, 784))
    assert arg[0] == ()
    assert arg[1] == (128, 784)
    assert out == [()]
    arg, _, _ = s.infer_shape_partial(data=(0, 784))
    assert arg[0] == (0, 784) and arg[1] == (128, 784)
    with pytest.raises(TypeError, match="Arguments need to be shapes"):
        s.infer_shape(data=[32, 784])
    with pytest.raises(ValueError):
        s.infer_shape((32, 784), data=(32, 784))
    with pytest.raises(mx.MXNetError, match="InferShapeKeyword argument name nope not found"):
        s.infer_shape(nope=(1,))
    with pytest.raises(mx.MXNetError, match=r"Error in operator fc1.*\(128,100\)"):
        s.infer_shape(data=(1, 100), fc1_weight=(128, 99))
    # A variable's __shape__ counts when no shape is given.
    v = mx.sym.Variable("x", shape=(4, 5))
    assert mx.sym.Activation(v, act_type="relu").infer_shape()[1] == [(4, 5)]


def test_infer_type():
    s = mlp()
    arg, out, aux = s.infer_type(data=np.float64)
    assert arg == [np.float64] * 6 and out == [np.float64] and aux == []
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert s.infer_type() == (None, None, None)
    assert s.infer_type_partial()[0] == [None] * 6
    v = mx.sym.Variable("x", dtype=np.float16)
    assert mx.sym.Activation(v, act_type="relu").infer_type()[1] == [np.float16]


def test_json_byte_for_byte_and_round_trip(tmp_path):
    with mx.name.NameManager():
        c = mx.sym.dot(mx.sym.Variable("A"), mx.sym.Variable("B"))
    assert c.tojson() == DOT_JSON
    s = mlp()
    j = s.tojson()
    assert mx.sym.load_json(j).tojson() == j
    path = str(tmp_path / "net-symbol.json")
    s.save(path)
    with open(path) as f:
        assert f.read() == j
    loaded = mx.sym.load(path)
    assert loaded.list_arguments() == s.list_arguments()
    assert loaded.infer_shape(data=(2, 784))[1] == [(2, 10)]
    assert pickle.loads(pickle.dumps(s)).tojson() == j
    with pytest.raises(TypeError, match="fname need to be string"):
        s.save(3)
    with pytest.raises(TypeError, match="fname required to be string"):
        mx.sym.load_json(3)
    with pytest.raises(mx.MXNetError, match="Failed loading Op x of type NoSuchOp"):
        mx.sym.load_json('{"nodes": [{"op": "NoSuchOp", "name": "x", "inputs": []}], '
                         '"arg_nodes": [], "heads": [[0, 0, 0]]}')


def test_hand_written_mxnet_1x_json_loads():
    legacy = """{
      "nodes": [
        {"op": "null", "name": "data", "inputs": []},
        {"op": "null", "name": "fc1_weight", "attr": {"num_hidden": "64"}, "inputs": []},
        {"op": "null", "name": "fc1_bias", "attr": {"num_hidden": "64"}, "inputs": []},
        {"op": "FullyConnected", "name": "fc1", "param": {"num_hidden": "64"},
         "inputs": [[0, 0], [1, 0], [2, 0]]},
        {"op": "Activation", "name": "relu1", "attrs": {"act_type": "relu"},
         "inputs": [[3, 0, 0]]},
        {"op": "null", "name": "softmax_label", "inputs": []},
        {"op": "SoftmaxOutput", "name": "softmax", "inputs": [[4, 0, 0], [5, 0, 0]]}
      ],
      "arg_nodes": [0, 1, 2, 5],
      "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 7],
      "heads": [[6, 0, 0]],
      "attrs": {"mxnet_version": ["int", 10400]}
    }"""
    s = mx.sym.load_json(legacy)
    assert s.list_arguments() == ["data", "fc1_weight", "fc1_bias", "softmax_label"]
    assert s.get_internals()["fc1_output"].attr("num_hidden") == "64"
    assert s.infer_shape(data=(8, 20))[0][1] == (64, 20)


def test_debug_str():
    assert mx.sym.var("x").debug_str() == "Variable:x\n"
    text = mx.sym.Activation(mx.sym.var("x"), act_type="relu", name="r").debug_str()
    assert text == ("Symbol Outputs:\n\toutput[0]=r(0)\nVariable:x\n--------------------\n"
                    "Op:Activation, Name=r\nInputs:\n\targ[0]=x(0) version=0\nAttrs:\n"
                    "\tact_type=relu\n")


# ---- The layer operators imperatively, against numpy ----
def test_fully_connected_against_numpy():
    rng = np.random.RandomState(0)
    x = rng.randn(5, 2, 3).astype(np.float32)
    w = rng.randn(4, 6).astype(np.float32)
    b = rng.randn(4).astype(np.float32)
    y = mx.nd.FullyConnected(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b), num_hidden=4)
    np.testing.assert_allclose(y.asnumpy(), x.reshape(5, 6) @ w.T + b, rtol=1e-5, atol=1e-5)
    y = mx.nd.FullyConnected(mx.nd.array(x), mx.nd.array(w), num_hidden=4, no_bias=True)
    np.testing.assert_allclose(y.asnumpy(), x.reshape(5, 6) @ w.T, rtol=1e-5, atol=1e-5)
    w3 = rng.randn(4, 3).astype(np.float32)
    y = mx.nd.FullyConnected(mx.nd.array(x), mx.nd.array(w3), mx.nd.array(b), num_hidden=4,
                             flatten=False)
    assert y.shape == (5, 2, 4)
    np.testing.assert_allclose(y.asnumpy(), x @ w3.T + b, rtol=1e-5, atol=1e-5)
    xd = x.astype(np.float64)
    y = mx.nd.FullyConnected(mx.nd.array(xd, dtype=np.float64),
                             mx.nd.array(w, dtype=np.float64),
                             mx.nd.array(b, dtype=np.float64), num_hidden=4)
    np.testing.assert_allclose(y.asnumpy(), xd.reshape(5, 6) @ w.T.astype(np.float64) + b,
                               rtol=1e-12)
    with pytest.raises(mx.MXNetError, match="FullyConnected"):
        mx.nd.FullyConnected(mx.nd.array(x), mx.nd.array(w3), mx.nd.array(b), num_hidden=4)


def test_activation_softmax_output_flatten_regression_against_numpy():
    x = np.linspace(-3, 3, 12).reshape(3, 4).astype(np.float32)
    a = mx.nd.array(x)
    expected = {
        "relu": np.maximum(x, 0),
        "sigmoid": 1 / (1 + np.exp(-x)),
        "tanh": np.tanh(x),
        "softrelu": np.log1p(np.exp(x)),
        "softsign": x / (1 + np.abs(x)),
    }
    for act, want in expected.items():
        np.testing.assert_allclose(mx.nd.Activation(a, act_type=act).asnumpy(), want,
                                   rtol=1e-5, atol=1e-6)
    with pytest.raises(mx.MXNetError, match="act_type"):
        mx.nd.Activation(a, act_type="gelu")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    soft = e / e.sum(axis=1, keepdims=True)
    label = mx.nd.array(np.array([0, 1, 2], dtype=np.float32))
    np.testing.assert_allclose(mx.nd.SoftmaxOutput(a, label).asnumpy(), soft, rtol=1e-5)
    np.testing.assert_allclose(mx.nd.Softmax(a, label, grad_scale=2, normalization="batch",
                                             use_ignore=True, ignore_label=1).asnumpy(),
                               soft, rtol=1e-5)
    with pytest.raises(mx.MXNetError, match="normalization"):
        mx.nd.SoftmaxOutput(a, label, normalization="bad")
    x3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    f = mx.nd.Flatten(mx.nd.array(x3))
    assert f.shape == (2, 12)
    np.testing.assert_array_equal(f.asnumpy(), x3.reshape(2, 12))
    np.testing.assert_array_equal(mx.nd.flatten(mx.nd.array(x3)).asnumpy(), x3.reshape(2, 12))
    np.testing.assert_array_equal(mx.nd.LinearRegressionOutput(a, a).asnumpy(), x)


def test_layer_ops_in_graph_inference():
    data = mx.sym.var("data")
    net = mx.sym.LinearRegressionOutput(mx.sym.Flatten(data, name="f"), name="lro")
    arg, out, _ = net.infer_shape(data=(4, 2, 3))
    assert arg == [(4, 2, 3), (4, 6)]
    assert out == [(4, 6)]
    # The label's shape flows back to the data's batch size.
    s = mx.sym.SoftmaxOutput(mx.sym.var("d"), name="sm")
    arg, _, _ = s.infer_shape_partial(sm_label=(7,))
    assert arg == [(), (7,)] or arg[1] == (7,)
