"""mx.gluon core: Parameter / Constant / ParameterDict, Block naming and children,
deferred initialization, save/load of parameters, hybridize (same outputs, gradients and
moving statistics as imperative, through the executor), export + SymbolBlock.imports and
Trainer against hand-written SGD (gluon.utils is tested in test_gluon_loss.py). The layers here are written with mx.nd / mx.sym
operators directly so that these tests do not depend on gluon.nn."""
import os

import numpy as np
import pytest

import nanomx as mx
from nanomx import autograd, gluon


# ---- small layers written on the operators --------------------------------------------------
class Dense(gluon.HybridBlock):
    def __init__(self, units, in_units=0, act=None, **kwargs):
        super(Dense, self).__init__(**kwargs)
        self._units, self._act = units, act
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units, in_units),
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(units,), init="zeros",
                                        allow_deferred_init=True)

    def hybrid_forward(self, F, x, weight, bias):
        y = F.FullyConnected(x, weight, bias, num_hidden=self._units, name="fwd")
        if self._act:
            y = F.Activation(y, act_type=self._act, name="relu_fwd")
        return y


class MLP(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super(MLP, self).__init__(**kwargs)
        with self.name_scope():
            self.hidden = Dense(8, act="relu")
            self.out = Dense(3)

    def hybrid_forward(self, F, x):
        return self.out(self.hidden(x))


class ConvBN(gluon.HybridBlock):
    def __init__(self, channels, **kwargs):
        super(ConvBN, self).__init__(**kwargs)
        self._c = channels
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(channels, 0, 3, 3),
                                          allow_deferred_init=True)
            self.gamma = self.params.get("gamma", shape=(channels,), init="ones")
            self.beta = self.params.get("beta", shape=(channels,), init="zeros")
            self.running_mean = self.params.get("running_mean", shape=(channels,),
                                                init="zeros", grad_req="null",
                                                differentiable=False)
            self.running_var = self.params.get("running_var", shape=(channels,), init="ones",
                                               grad_req="null", differentiable=False)

    def hybrid_forward(self, F, x, weight, gamma, beta, running_mean, running_var):
        y = F.Convolution(x, weight, kernel=(3, 3), pad=(1, 1), num_filter=self._c,
                          no_bias=True, name="fwd")
        y = F.BatchNorm(y, gamma, beta, running_mean, running_var, fix_gamma=False,
                        name="bn")
        return F.relu(y)


class ConvNet(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super(ConvNet, self).__init__(**kwargs)
        with self.name_scope():
            self.conv = ConvBN(4)
            self.fc_weight = self.params.get("fc_weight", shape=(3, 0),
                                             allow_deferred_init=True)

    def hybrid_forward(self, F, x, fc_weight):
        y = F.Pooling(self.conv(x), kernel=(2, 2), stride=(2, 2), pool_type="max")
        return F.FullyConnected(y, fc_weight, no_bias=True, num_hidden=3)


class Plain(gluon.Block):
    def __init__(self, **kwargs):
        super(Plain, self).__init__(**kwargs)
        with self.name_scope():
            self.a = Dense(4, in_units=2)
            self.b = Dense(2, in_units=4)

    def forward(self, x):
        return self.b(self.a(x))


def _data(*shape, seed=0):
    return mx.nd.array(np.random.RandomState(seed).randn(*shape).astype(np.float32))


# ---- Parameter --------------------------------------------------------------------------
def test_parameter_initialize_data_grad():
    p = gluon.Parameter("fc_weight", shape=(3, 4), init=mx.init.One())
    assert p.grad_req == "write" and p.dtype == np.float32
    with pytest.raises(RuntimeError, match="has not been initialized"):
        p.data()
    p.initialize(ctx=mx.cpu())
    np.testing.assert_array_equal(p.data().asnumpy(), np.ones((3, 4)))
    np.testing.assert_array_equal(p.grad().asnumpy(), np.zeros((3, 4)))
    assert p.list_ctx() == [mx.cpu()]
    assert len(p.list_data()) == 1 and len(p.list_grad()) == 1
    with pytest.warns(UserWarning, match="already initialized"):
        p.initialize()
    p.set_data(mx.nd.full((3, 4), 5))
    assert p.data().asnumpy().max() == 5
    with autograd.record():
        y = (p.data() * 2).sum()
    y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), 2 * np.ones((3, 4)))
    p.zero_grad()
    assert p.grad().asnumpy().sum() == 0
    assert "Parameter fc_weight (shape=(3, 4), dtype=" in repr(p)


def test_parameter_grad_req_add_null_and_cast():
    p = gluon.Parameter("w", shape=(2,), init="ones", grad_req="add")
    p.initialize()
    for _ in range(2):
        with autograd.record():
            y = (p.data() * 3).sum()
        y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), [6, 6])
    p.grad_req = "null"
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        p.grad()
    p.grad_req = "write"
    assert p.grad().shape == (2,)
    p.cast("float64")
    assert p.data().dtype == np.float64 and p.grad().dtype == np.float64
    with pytest.raises(AssertionError, match="grad_req must be one of"):
        p.grad_req = "sometimes"
    q = gluon.Parameter("frozen", shape=(2,), differentiable=False)
    assert q.grad_req == "null"


def test_parameter_deferred_and_shape_rules():
    p = gluon.Parameter("w", shape=(0, 3), allow_deferred_init=True)
    p.initialize()
    with pytest.raises(gluon.parameter.DeferredInitializationError):
        p.data()
    assert p.list_ctx() == [mx.cpu()]
    p.shape = (5, 3)
    p._finish_deferred_init()
    assert p.data().shape == (5, 3)
    with pytest.raises(AssertionError, match="incompatible"):
        p.shape = (4, 3)
    q = gluon.Parameter("v", shape=(0, 3))
    with pytest.raises(ValueError, match="invalid shape"):
        q.initialize()
    with pytest.raises(ValueError, match="dense"):
        gluon.Parameter("s", shape=(2,), stype="row_sparse")
    r = gluon.Parameter("r", shape=4)
    assert r.shape == (4,)


def test_parameter_var_attributes():
    p = gluon.Parameter("fc_weight", shape=(3, 4), lr_mult=2.0, wd_mult=0.5,
                        init=mx.init.Xavier())
    v = p.var()
    assert v.name == "fc_weight"
    assert v.attr("__shape__") == "(3, 4)"
    assert v.attr("__lr_mult__") == "2.0" and v.attr("__wd_mult__") == "0.5"
    assert "xavier" in v.attr("__init__")
    assert v.attr("__dtype__") == "0"
    assert p.var() is v


def test_constant():
    c = gluon.Constant("const", [[1, 2], [3, 4]])
    assert c.grad_req == "null"
    with pytest.warns(UserWarning, match="does not support grad_req"):
        c.grad_req = "write"
    c.initialize()
    np.testing.assert_array_equal(c.data().asnumpy(), [[1, 2], [3, 4]])
    assert repr(c).startswith("Constant const")
    pd = gluon.ParameterDict("b_")
    k = pd.get_constant("k", [1.0, 2.0])
    assert k.name == "b_k" and pd.get_constant("k") is k
    with pytest.raises(KeyError, match="No constant named"):
        pd.get_constant("missing")


def test_parameter_dict_get_update_share():
    pd = gluon.ParameterDict("net_")
    w = pd.get("weight", shape=(2, 0))
    assert w.name == "net_weight" and pd.prefix == "net_"
    assert pd.get("weight", shape=(2, 5)) is w and w.shape == (2, 5)
    with pytest.raises(AssertionError, match="desired attribute does not match"):
        pd.get("weight", shape=(3, 5))
    shared = gluon.ParameterDict("net_", shared=pd)
    assert shared.get("weight") is w
    other = gluon.ParameterDict("x_")
    other.get("weight")
    with pytest.raises(AssertionError, match="different Parameters with the same name"):
        pd.update({"net_weight": gluon.Parameter("net_weight")})
    pd.update(other)
    assert list(pd.keys()) == ["net_weight", "x_weight"]
    pd.setattr("lr_mult", 0.25)
    assert all(p.lr_mult == 0.25 for p in pd.values())
    assert "net_weight" in repr(pd)


def test_parameter_dict_save_load(tmp_path):
    pd = gluon.ParameterDict("m_")
    pd.get("weight", shape=(2, 3))
    pd.get("bias", shape=(2,), init="zeros")
    pd.initialize(mx.init.Uniform())
    fname = str(tmp_path / "pd.params")
    pd.save(fname, strip_prefix="m_")
    assert sorted(mx.nd.load(fname).keys()) == ["bias", "weight"]
    pd2 = gluon.ParameterDict("m_")
    pd2.get("weight", shape=(2, 0), allow_deferred_init=True)
    pd2.get("bias", shape=(2,))
    pd2.load(fname, restore_prefix="m_")
    np.testing.assert_array_equal(pd2["m_weight"].data().asnumpy(),
                                  pd["m_weight"].data().asnumpy())
    with pytest.raises(ValueError, match="does not start with"):
        pd.save(fname, strip_prefix="zz_")
    pd3 = gluon.ParameterDict("m_")
    pd3.get("weight", shape=(2, 3))
    with pytest.raises(AssertionError, match="is not present in ParameterDict"):
        pd3.load(fname, restore_prefix="m_")
    pd3.load(fname, restore_prefix="m_", ignore_extra=True)
    pd4 = gluon.ParameterDict("m_")
    pd4.get("weight", shape=(2, 3))
    pd4.get("gamma", shape=(2,))
    with pytest.raises(AssertionError, match="is missing in"):
        pd4.load(fname, restore_prefix="m_", ignore_extra=True)


# ---- Block naming and structure -----------------------------------------------------------
def test_block_prefixes_and_collect_params():
    with mx.name.NameManager():
        net = MLP()
        net2 = MLP()
    assert net.prefix == "mlp0_" and net2.prefix == "mlp1_" and net.name == "mlp0"
    assert net.hidden.prefix == "mlp0_dense0_" and net.out.prefix == "mlp0_dense1_"
    assert list(net.collect_params().keys()) == [
        "mlp0_dense0_weight", "mlp0_dense0_bias", "mlp0_dense1_weight", "mlp0_dense1_bias"]
    assert list(net.collect_params(".*weight").keys()) == [
        "mlp0_dense0_weight", "mlp0_dense1_weight"]
    assert list(net.collect_params("mlp0_dense1_.*").keys()) == [
        "mlp0_dense1_weight", "mlp0_dense1_bias"]
    assert list(net.params.keys()) == []
    assert sorted(net._collect_params_with_prefix().keys()) == [
        "hidden.bias", "hidden.weight", "out.bias", "out.weight"]
    named = Dense(2, prefix="fc_")
    assert named.prefix == "fc_" and list(named.params.keys()) == ["fc_weight", "fc_bias"]
    assert "(hidden): Dense" in repr(net)


def test_block_sharing_children_and_errors():
    a = Dense(3, in_units=2, prefix="a_")
    b = Dense(3, in_units=2, prefix="b_", params=a.collect_params())
    assert b.weight is a.weight
    hb = gluon.HybridBlock(prefix="h_")
    with pytest.raises(ValueError, match="Children of HybridBlock must also be HybridBlock"):
        hb.plain = Plain()
    net = Plain(prefix="p_")
    with pytest.raises(TypeError, match="Changing attribute type"):
        net.a = 3
    net.blocks = [Dense(1, prefix="x_")]
    with pytest.warns(UserWarning, match="unregistered container"):
        net.collect_params()
    with pytest.raises(NotImplementedError):
        gluon.Block()(mx.nd.ones((1,)))


def test_hooks_apply_and_summary(capsys):
    net = Plain(prefix="p_")
    net.initialize()
    seen = []
    pre = net.register_forward_pre_hook(lambda blk, inp: seen.append(("pre", blk.name)))
    post = net.a.register_forward_hook(lambda blk, inp, out: seen.append(("post", out.shape)))
    net(mx.nd.ones((5, 2)))
    assert seen == [("pre", "p"), ("post", (5, 4))]
    pre.detach()
    post.detach()
    net(mx.nd.ones((5, 2)))
    assert len(seen) == 2
    names = []
    net.apply(lambda blk: names.append(blk.name))
    assert names == ["p_dense0", "p_dense1", "p"]
    net.summary(mx.nd.ones((5, 2)))
    text = capsys.readouterr().out
    assert "Dense-1" in text and "Total params: 22" in text


def test_deferred_initialization_from_first_forward():
    net = MLP(prefix="m_")
    net.initialize()
    with pytest.raises(gluon.parameter.DeferredInitializationError):
        net.hidden.weight.data()
    y = net(_data(4, 7))
    assert y.shape == (4, 3)
    assert net.hidden.weight.shape == (8, 7) and net.out.weight.shape == (3, 8)
    h = MLP(prefix="h_")
    h.initialize()
    h.hybridize()
    assert h(_data(2, 6)).shape == (2, 3)
    assert h.hidden.weight.shape == (8, 6)


def test_infer_shape_and_type():
    net = MLP(prefix="i_")
    net.infer_shape(mx.nd.ones((2, 9)))
    assert net.hidden.weight.shape == (8, 9)
    net.cast("float64")
    net.infer_type(mx.nd.ones((2, 9), dtype="float64"))
    assert np.dtype(net.hidden.weight.dtype) == np.float64
    with pytest.raises(mx.MXNetError, match="float32"):
        net.infer_type(mx.nd.ones((2, 9)))


# ---- save / load --------------------------------------------------------------------------
def test_save_load_parameters_round_trip(tmp_path):
    net = MLP(prefix="s_")
    net.initialize(mx.init.Xavier())
    x = _data(3, 5)
    y = net(x).asnumpy()
    fname = str(tmp_path / "mlp.params")
    net.save_parameters(fname)
    assert sorted(mx.nd.load(fname).keys()) == [
        "hidden.bias", "hidden.weight", "out.bias", "out.weight"]
    other = MLP(prefix="other_")  # structural names: the prefix does not matter
    other.load_parameters(fname, ctx=mx.cpu())
    np.testing.assert_allclose(other(x).asnumpy(), y, rtol=1e-6)

    class Bigger(MLP):
        def __init__(self, **kwargs):
            super(Bigger, self).__init__(**kwargs)
            with self.name_scope():
                self.extra = Dense(2, in_units=3)

    big = Bigger(prefix="b_")
    with pytest.raises(AssertionError, match="is missing in file"):
        big.load_parameters(fname)
    big.load_parameters(fname, allow_missing=True)
    np.testing.assert_allclose(big.out.weight.data().asnumpy(),
                               net.out.weight.data().asnumpy())
    big.extra.initialize()  # the one layer the file did not have
    fname2 = str(tmp_path / "big.params")
    big.save_parameters(fname2)
    small = MLP(prefix="t_")
    with pytest.raises(ValueError, match="is not present in ParameterDict"):
        small.load_parameters(fname2)
    small.load_parameters(fname2, ignore_extra=True)
    np.testing.assert_allclose(small(x).asnumpy(), y, rtol=1e-6)


def test_load_parameters_dtype_and_legacy(tmp_path):
    net = Dense(2, in_units=3, prefix="d_")
    net.initialize()
    fname = str(tmp_path / "d.params")
    net.save_parameters(fname)
    net64 = Dense(2, in_units=3, prefix="e_")
    net64.cast("float64")
    with pytest.raises(AssertionError, match="dtype incompatible"):
        net64.load_parameters(fname)
    net64.load_parameters(fname, cast_dtype=True)
    assert net64.weight.data().dtype == np.float64
    saved = Dense(2, in_units=3, prefix="f_")
    saved.cast("float64")
    saved.load_parameters(fname, cast_dtype=True, dtype_source="saved")
    assert saved.weight.data().dtype == np.float32
    legacy = str(tmp_path / "legacy.params")
    with pytest.warns(UserWarning, match="deprecated"):
        net.save_params(legacy)
    assert sorted(mx.nd.load(legacy).keys()) == ["bias", "weight"]
    again = Dense(2, in_units=3, prefix="g_")
    again.load_parameters(legacy)
    np.testing.assert_array_equal(again.weight.data().asnumpy(), net.weight.data().asnumpy())


# ---- hybridize ----------------------------------------------------------------------------
def _run(net, x, hybrid):
    if hybrid:
        net.hybridize()
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        out = net(x)
        loss = (out * out).sum()
    loss.backward()
    params = {k[len(net.prefix):]: (p.data().asnumpy(),
                                    None if p.grad_req == "null" else p.grad().asnumpy())
              for k, p in net.collect_params().items()}
    return out.asnumpy(), x.grad.asnumpy(), params, net(x).asnumpy()


def _compare(a, b):
    np.testing.assert_allclose(a[0], b[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-5, atol=1e-6)
    assert a[2].keys() == b[2].keys()
    for k in a[2]:
        np.testing.assert_allclose(a[2][k][0], b[2][k][0], rtol=1e-5, atol=1e-6, err_msg=k)
        if a[2][k][1] is not None:
            np.testing.assert_allclose(a[2][k][1], b[2][k][1], rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(a[3], b[3], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make,shape", [(MLP, (4, 5)), (ConvNet, (2, 3, 6, 6))])
def test_hybridize_matches_imperative(make, shape):
    x = _data(*shape, seed=3)
    nets = []
    for _ in range(2):
        net = make(prefix="net_")
        net.initialize(mx.init.Xavier())
        net(x)  # finishes the deferred initialization (predict mode: no statistics move)
        nets.append(net)
    for name, p in nets[0].collect_params().items():
        nets[1].collect_params()[name].set_data(p.data())
    results = [_run(nets[0], x, False), _run(nets[1], x, True)]
    _compare(results[0], results[1])
    if make is ConvNet:  # the moving statistics moved, identically
        assert np.abs(results[1][2]["convbn0_running_mean"][0]).sum() > 0


def test_hybrid_graph_names_and_structure():
    net = MLP(prefix="model_")
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((2, 4)))
    data, out = net._cached_graph
    assert [d.name for d in data] == ["data"]
    assert out.get_internals().list_outputs() == [
        "data", "model_dense0_weight", "model_dense0_bias", "model_dense0_fwd_output",
        "model_dense0_relu_fwd_output", "model_dense1_weight", "model_dense1_bias",
        "model_dense1_fwd_output"]
    sym = net(mx.sym.var("data"))
    assert sym.list_arguments() == ["data", "model_dense0_weight", "model_dense0_bias",
                                    "model_dense1_weight", "model_dense1_bias"]


class TwoIn(gluon.HybridBlock):
    def hybrid_forward(self, F, a, b, c=None):
        s = F.broadcast_add(a, F.broadcast_mul(b, b))
        return [s, F.relu(s)] if c is None else F.broadcast_add(s, c)


def test_hybridize_multiple_inputs_outputs_and_none():
    net = TwoIn(prefix="two_")
    a, b = _data(2, 3, seed=1), _data(2, 3, seed=2)
    ref = net(a, b)
    net.hybridize()
    out = net(a, b)
    assert [d.name for d in net._cached_graph[0]] == ["data0", "data1"]
    for r, o in zip(ref, out):
        np.testing.assert_allclose(o.asnumpy(), r.asnumpy(), rtol=1e-6)
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        s, r = net(a, b)
        loss = (s + r).sum()
    loss.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), 1 + (s.asnumpy() > 0), rtol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), 2 * b.asnumpy() * (1 + (s.asnumpy() > 0)),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="argument structure"):
        net(a, b, a)


def test_hybridize_outputs_are_not_overwritten_and_new_shapes():
    net = MLP(prefix="o_")
    net.initialize()
    net.hybridize()
    y1 = net(mx.nd.ones((2, 4)))
    y1_val = y1.asnumpy().copy()
    net(mx.nd.zeros((2, 4))).wait_to_read()
    np.testing.assert_array_equal(y1.asnumpy(), y1_val)
    assert net(mx.nd.ones((5, 4))).shape == (5, 3)  # another signature, another executor


class DropScale(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super(DropScale, self).__init__(**kwargs)
        self.w = self.params.get("weight", shape=(1,), init=mx.init.Constant(2.0))

    def hybrid_forward(self, F, x, w):
        return F.Dropout(F.broadcast_mul(x, w), p=0.5)


def test_hybridized_dropout_gradient_uses_the_forward_mask_and_repeated_calls():
    net = DropScale(prefix="drop_")
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((10, 10))
    for _ in range(2):
        with autograd.record():
            y = net(x)
            loss = y.sum()
        loss.backward()
        assert net.w.grad().asscalar() == pytest.approx(y.asnumpy().sum() / 2.0)
    with autograd.record():  # two calls (one executor each) before one backward
        y1 = net(x)
        y2 = net(x * 2)
        loss = y1.sum() + y2.sum()
    loss.backward()
    total = (y1.asnumpy().sum() + y2.asnumpy().sum()) / 2.0
    assert net.w.grad().asscalar() == pytest.approx(total)
    np.testing.assert_array_equal(net(x).asnumpy(), 2 * np.ones((10, 10)))  # predict mode


def test_hybridize_sees_parameter_updates_and_cast():
    net = Dense(2, in_units=3, prefix="u_")
    net.initialize(mx.init.One())
    net.hybridize()
    x = mx.nd.ones((1, 3))
    np.testing.assert_array_equal(net(x).asnumpy(), [[3, 3]])
    net.weight.set_data(mx.nd.full((2, 3), 2))
    np.testing.assert_array_equal(net(x).asnumpy(), [[6, 6]])
    net.cast("float64")
    y = net(x.astype("float64"))
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y.asnumpy(), [[6, 6]])


def test_export_and_symbolblock_imports(tmp_path):
    net = ConvNet(prefix="cnn_")
    net.initialize(mx.init.Xavier())
    x = _data(2, 3, 6, 6)
    with pytest.raises(RuntimeError, match="hybridize"):
        net.export(str(tmp_path / "no"))
    net.hybridize()
    with autograd.record():  # move the moving statistics away from their initial values
        net(x)
    ref = net(x).asnumpy()
    path = str(tmp_path / "cnn")
    net.export(path, epoch=3)
    assert os.path.exists(path + "-symbol.json")
    saved = mx.nd.load(path + "-0003.params")
    assert sorted(saved.keys()) == [
        "arg:cnn_convbn0_beta", "arg:cnn_convbn0_gamma", "arg:cnn_convbn0_weight",
        "arg:cnn_fc_weight", "aux:cnn_convbn0_running_mean", "aux:cnn_convbn0_running_var"]
    imported = gluon.SymbolBlock.imports(path + "-symbol.json", ["data"], path + "-0003.params")
    np.testing.assert_allclose(imported(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    assert "cnn_convbn0_weight" in imported.collect_params().keys()
    imported.hybridize()
    np.testing.assert_allclose(imported(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    # the symbolic executor reads the same files (Module's checkpoint format)
    sym, args, auxs = mx.model.load_checkpoint(path, 3)
    assert set(args) == {"cnn_convbn0_weight", "cnn_convbn0_gamma", "cnn_convbn0_beta",
                         "cnn_fc_weight"}
    assert set(auxs) == {"cnn_convbn0_running_mean", "cnn_convbn0_running_var"}


def test_symbolblock_features_share_parameters_and_train():
    net = MLP(prefix="f_")
    net.initialize()
    data = mx.sym.var("data")
    internals = net(data).get_internals()
    feat = gluon.SymbolBlock(internals["f_dense0_relu_fwd_output"], data,
                             params=net.collect_params())
    x = _data(3, 4)
    net(x)
    assert feat.collect_params()["f_dense0_weight"] is net.hidden.weight
    expect = np.maximum(x.asnumpy() @ net.hidden.weight.data().asnumpy().T
                        + net.hidden.bias.data().asnumpy(), 0)
    np.testing.assert_allclose(feat(x).asnumpy(), expect, rtol=1e-5, atol=1e-6)
    with autograd.record():
        loss = feat(x).sum()
    loss.backward()
    assert np.abs(net.hidden.weight.grad().asnumpy()).sum() > 0
    composed = feat(mx.sym.var("other"))
    assert "other" in composed.list_arguments()


# ---- Trainer ------------------------------------------------------------------------------
def test_trainer_sgd_step_matches_hand_update(tmp_path):
    net = Dense(2, in_units=3, prefix="t_")
    net.initialize(mx.init.Uniform(0.5))
    net.bias.lr_mult = 0.5
    w0 = net.weight.data().asnumpy().copy()
    b0 = net.bias.data().asnumpy().copy()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.1, "wd": 0.01, "momentum": 0.9})
    assert trainer.learning_rate == 0.1
    x = _data(4, 3)
    mom_w, mom_b = np.zeros_like(w0), np.zeros_like(b0)
    w, b = w0, b0
    for _ in range(2):
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        gw = net.weight.grad().asnumpy() / 4
        gb = net.bias.grad().asnumpy() / 4
        trainer.step(4)
        mom_w = 0.9 * mom_w - 0.1 * (gw + 0.01 * w)
        mom_b = 0.9 * mom_b - 0.05 * (gb + 0.01 * b)
        w, b = w + mom_w, b + mom_b
        np.testing.assert_allclose(net.weight.data().asnumpy(), w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(net.bias.data().asnumpy(), b, rtol=1e-5, atol=1e-6)
    trainer.set_learning_rate(0.2)
    assert trainer.learning_rate == 0.2
    states = str(tmp_path / "trainer.states")
    trainer.save_states(states)
    trainer2 = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.7})
    trainer2.load_states(states)
    assert trainer2.learning_rate == 0.2
    assert trainer2.optimizer.momentum == 0.9


def test_trainer_with_hybridized_net_and_errors():
    net = MLP(prefix="th_")
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x, y = _data(8, 4), _data(8, 3, seed=5)
    trainer = gluon.Trainer(net.collect_params(), mx.optimizer.SGD(learning_rate=0.05))
    losses = []
    for _ in range(5):
        with autograd.record():
            loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        trainer.step(1)
        losses.append(loss.asscalar())
    assert losses[-1] < losses[0]
    with pytest.raises(ValueError, match="list or dict of Parameters"):
        gluon.Trainer("params", "sgd")
    with pytest.raises(AssertionError, match="optimizer_params must be None"):
        gluon.Trainer(net.collect_params(), mx.optimizer.SGD(), {"learning_rate": 1})


def test_trainer_two_contexts_allreduce():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = Dense(1, in_units=2, prefix="kv_")
    net.initialize(mx.init.One(), ctx=ctxs)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    xs = [mx.nd.ones((1, 2), ctx=c) * (i + 1) for i, c in enumerate(ctxs)]
    with autograd.record():
        losses = [net(x).sum() for x in xs]
    for loss in losses:
        loss.backward()
    trainer.step(2)
    # the summed gradient of the weight is 1 + 2 = 3 per entry, scaled by 1/2 and lr 0.1
    for c in ctxs:
        np.testing.assert_allclose(net.weight.data(c).asnumpy(), [[0.85, 0.85]], rtol=1e-6)


def test_gluon_namespace():
    for name in ("nn", "data", "model_zoo", "loss", "utils", "Trainer", "Parameter",
                 "Constant", "ParameterDict", "Block", "HybridBlock", "SymbolBlock"):
        assert hasattr(gluon, name), name


def test_recorded_calls_waiting_beyond_the_limit(monkeypatch):
    monkeypatch.setenv("NANOMX_GLUON_PENDING_CALLS", "2")
    net = DropScale(prefix="lim_")
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((2, 2))
    with autograd.record():
        first = net(x).sum()
        net(x)
        with pytest.warns(UserWarning, match="NANOMX_GLUON_PENDING_CALLS"):
            third = net(x).sum()
    third.backward()
    assert net.w.grad().shape == (1,)
    with pytest.raises(mx.MXNetError, match="forward state"):
        first.backward()
        mx.nd.waitall()
    net.collect_params().zero_grad()
    for _ in range(3):  # after backward the executors are reused: no new ones are bound
        with autograd.record():
            loss = net(x).sum()
        loss.backward()
    assert sum(len(v) for v in net._cached_op._training.values()) == 2


def test_hybridized_training_loop_with_batchnorm():
    net = ConvNet(prefix="loop_")
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x, y = _data(4, 3, 6, 6), _data(4, 3, seed=2)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05,
                                                          "momentum": 0.9})
    first = None
    for _ in range(20):
        with autograd.record():
            loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        trainer.step(4)
        if first is None:
            first = loss.asscalar()
    assert loss.asscalar() < first
    assert len(list(net._cached_op._training.values())[0]) == 1


def test_reset_ctx_cast_and_hybridize_off():
    net = MLP(prefix="r_")
    net.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    x = _data(2, 4)
    y = net(x).asnumpy()
    assert net.hidden.weight.list_ctx() == [mx.cpu(0), mx.cpu(1)]
    np.testing.assert_array_equal(net.hidden.weight.data(mx.cpu(1)).asnumpy(),
                                  net.hidden.weight.data(mx.cpu(0)).asnumpy())
    with pytest.raises(RuntimeError, match="was not initialized on context"):
        net.hidden.weight.data(mx.cpu(2))
    net.reset_ctx(mx.cpu(1))
    assert net.hidden.weight.list_ctx() == [mx.cpu(1)]
    np.testing.assert_allclose(net(x.as_in_context(mx.cpu(1))).asnumpy(), y, rtol=1e-6)
    net.hybridize()
    np.testing.assert_allclose(net(x.as_in_context(mx.cpu(1))).asnumpy(), y, rtol=1e-6)
    net.hybridize(active=False)
    assert net._cached_op is None
    net.cast("float64")
    assert net(x.astype("float64").as_in_context(mx.cpu(1))).dtype == np.float64
    with pytest.raises(NotImplementedError, match="subgraph backends"):
        net.hybridize(backend="MKLDNN")


class Shared(gluon.HybridBlock):
    """One Dense applied twice: its parameters appear once in the graph."""

    def __init__(self, **kwargs):
        super(Shared, self).__init__(**kwargs)
        with self.name_scope():
            self.fc = Dense(2, in_units=2)

    def hybrid_forward(self, F, x):
        return self.fc(self.fc(x))


def test_shared_parameters_in_one_graph():
    net = Shared(prefix="sh_")
    net.initialize(mx.init.Xavier())
    x = _data(3, 2)
    ref = _run(net, x, False)
    net.collect_params().zero_grad()
    _compare(ref, _run(net, x, True))
    assert net._cached_graph[1].list_arguments() == ["data", "sh_dense0_weight",
                                                     "sh_dense0_bias"]


def test_trainer_allreduce_then_update_and_lr_mult():
    net = Dense(1, in_units=2, prefix="au_")
    net.initialize(mx.init.One())
    net.weight.lr_mult = 2.0
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    with autograd.record():
        loss = net(mx.nd.ones((1, 2))).sum()
    loss.backward()
    trainer.allreduce_grads()
    gluon.utils.clip_global_norm([net.weight.grad()], 0.5)
    trainer.update(1)
    # clipped gradient: (1, 1) * 0.5 / sqrt(2); lr 0.1 times lr_mult 2
    np.testing.assert_allclose(net.weight.data().asnumpy(),
                               [[1 - 0.2 * 0.5 / np.sqrt(2)] * 2], rtol=1e-5)
    np.testing.assert_allclose(net.bias.data().asnumpy(), [-0.1], rtol=1e-5)


def test_hybridized_grad_req_changes_rebind():
    net = MLP(prefix="gr_")
    net.initialize()
    net.hybridize()
    x = _data(2, 4)
    net.hidden.collect_params().setattr("grad_req", "null")
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    assert np.abs(net.out.weight.grad().asnumpy()).sum() > 0
    net.hidden.collect_params().setattr("grad_req", "write")
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    assert np.abs(net.hidden.weight.grad().asnumpy()).sum() > 0


def test_dropped_graphs_release_their_executors():
    import gc
    import weakref
    from nanomx.gluon import _cached_graph
    net = MLP(prefix="rel_")
    net.initialize()
    net.hybridize()
    with autograd.record():
        loss = net(_data(2, 4)).sum()
    loss.backward()
    graph = weakref.ref(net._cached_op)
    net.hybridize()  # clears the cached graph
    mx.nd.waitall()
    gc.collect()
    assert graph() is None
    assert all(c.graph is not None for c in _cached_graph._calls.values())
