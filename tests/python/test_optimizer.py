"""mx.optimizer and the update operators against MXNet's formulas in numpy; mx.init's
dispatch, statistics and Xavier's scales; mx.lr_scheduler."""
import json
import math
import pickle
import warnings

import numpy as np
import pytest

import nanomx as mx


def _arrays(*values):
    return [mx.nd.array(np.asarray(v, dtype=np.float32)) for v in values]


# ---- operators -----------------------------------------------------------------------------
def test_sgd_update_operator_in_place():
    w0 = np.array([1, -2, 3, 0.5], dtype=np.float32)
    g = np.array([10, -4, 0.5, 100], dtype=np.float32)
    w, grad = _arrays(w0, g)
    out = mx.nd.sgd_update(w, grad, lr=0.1, wd=0.01, rescale_grad=0.5, clip_gradient=2, out=w)
    assert out is w
    want = (1 - 0.1 * 0.01) * w0 - 0.1 * np.clip(0.5 * g, -2, 2)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6)


def test_sgd_mom_and_adam_operators_write_their_states():
    w0 = np.array([1, -1, 2], dtype=np.float32)
    g = np.array([0.5, 1, -3], dtype=np.float32)
    w, grad, mom = _arrays(w0, g, np.zeros(3))
    mx.nd.sgd_mom_update(w, grad, mom, lr=0.1, momentum=0.9, wd=0.001, out=w)
    m = -0.1 * 0.001 * w0 - 0.1 * g
    np.testing.assert_allclose(mom.asnumpy(), m, rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), w0 + m, rtol=1e-6)
    w, grad, mean, var = _arrays(w0, g, np.zeros(3), np.zeros(3))
    mx.nd.adam_update(w, grad, mean, var, lr=0.01, wd=0.1, clip_gradient=1.0, out=w)
    gp = np.clip(g + 0.1 * w0, -1, 1)
    np.testing.assert_allclose(mean.asnumpy(), 0.1 * gp, rtol=1e-6)
    np.testing.assert_allclose(var.asnumpy(), 0.001 * gp * gp, rtol=1e-4)
    np.testing.assert_allclose(w.asnumpy(),
                               w0 - 0.01 * 0.1 * gp / (np.sqrt(0.001 * gp * gp) + 1e-8),
                               rtol=1e-4)


def test_multi_sgd_update_operator():
    w0, g0, w1, g1 = _arrays([1, 2], [1, 1], [10], [-2])
    outs = mx.nd.multi_sgd_update(w0, g0, w1, g1, lrs=(0.5, 0.1), wds=(0.0, 0.5),
                                  num_weights=2, out=[w0, w1])
    assert len(outs) == 2
    np.testing.assert_allclose(w0.asnumpy(), [0.5, 1.5])
    np.testing.assert_allclose(w1.asnumpy(), [(1 - 0.05) * 10 + 0.2], rtol=1e-6)
    with pytest.raises(mx.MXNetError, match="num_weights"):
        mx.nd.multi_sgd_update(w0, g0, w1, lrs=(0.5,), wds=(0.0,), num_weights=1)


def test_update_operators_as_symbols():
    v = [mx.sym.Variable(n) for n in "abcd"]
    multi = mx.sym.multi_sgd_update(*v, lrs=(0.1, 0.2), wds=(0, 0))
    assert multi.list_attr()["num_weights"] == "2"
    assert len(multi.list_outputs()) == 2
    _, out_shapes, _ = multi.infer_shape(a=(2, 3), c=(4,))
    assert out_shapes == [(2, 3), (4,)]
    adam = mx.sym.adam_update(*v, lr=0.1)
    # The mean and variance it writes are auxiliary states (MXNet's FMutateInputs).
    assert adam.list_arguments() == ["a", "b"]
    assert adam.list_auxiliary_states() == ["c", "d"]
    assert mx.sym.load_json(multi.tojson()).list_attr()["num_weights"] == "2"


def test_update_operator_errors_name_the_operator():
    w, g = _arrays([1, 2], [1, 2, 3])
    with pytest.raises(mx.MXNetError, match="sgd_update"):
        mx.nd.sgd_update(w, g, lr=0.1)
    with pytest.raises(mx.MXNetError, match="'lr'"):
        mx.nd.sgd_update(w, w)


# ---- optimizers -----------------------------------------------------------------------------
def test_registry_and_create():
    assert isinstance(mx.optimizer.create("SGD"), mx.optimizer.SGD)
    ccsgd = mx.optimizer.create("ccsgd", learning_rate=0.5)
    assert isinstance(ccsgd, mx.optimizer.SGD) and ccsgd.lr == 0.5
    assert mx.opt.create("adam").lr == 0.001
    assert mx.optimizer.create("sgd").lr == 0.01
    with pytest.raises(ValueError, match="Cannot find optimizer nosuch"):
        mx.optimizer.create("nosuch")


def _sgd_numpy(w, g, m, lr, wd, rescale, clip, momentum):
    gr = rescale * g
    if clip is not None:
        gr = np.clip(gr, -clip, clip)
    if momentum == 0:
        return (1 - lr * wd) * w - lr * gr, m
    m = momentum * m - lr * wd * w - lr * gr
    return w + m, m


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_steps_match_numpy(momentum):
    rng = np.random.RandomState(0)
    shapes = [(3, 4), (4,), (2, 2), (5,), (1, 3)]  # 5 parameters: groups of 4 and 1
    names = ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "fc3_weight"]
    ws = [rng.randn(*s).astype(np.float32) for s in shapes]
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=momentum, wd=0.01, rescale_grad=0.5,
                           clip_gradient=0.8, param_idx2name=dict(enumerate(names)))
    updater = mx.optimizer.get_updater(opt)
    nd_ws = [mx.nd.array(w) for w in ws]
    ms = [np.zeros_like(w) for w in ws]
    for _ in range(3):
        gs = [rng.randn(*s).astype(np.float32) for s in shapes]
        updater(list(range(5)), [mx.nd.array(g) for g in gs], nd_ws)
        for i in range(5):
            wd = 0.01 if names[i].endswith("_weight") else 0.0  # no decay on biases
            ws[i], ms[i] = _sgd_numpy(ws[i], gs[i], ms[i], 0.1, wd, 0.5, 0.8, momentum)
    for got, want in zip(nd_ws, ws):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert opt.num_update == 3


def test_sgd_runs_multi_sgd_update_in_groups_of_four(profile_to):
    opt = mx.optimizer.create("ccsgd", learning_rate=0.1, rescale_grad=1 / 128.)
    updater = mx.optimizer.get_updater(opt)
    ws = [mx.nd.ones((2,)) for _ in range(10)]
    gs = [mx.nd.ones((2,)) for _ in range(10)]
    mx.nd.waitall()
    profile_to.start("sgd.json", profile_imperative=True)
    updater(list(range(10)), gs, ws)
    mx.nd.waitall()
    events = profile_to.finish()
    ops = [e["name"] for e in events if e.get("cat") == "operator" and e.get("ph") in ("B", "X")]
    assert ops.count("multi_sgd_update") == 3, ops
    assert "sgd_update" not in ops


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_multi_precision_keeps_a_float32_master(momentum):
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=momentum, multi_precision=True)
    updater = mx.optimizer.get_updater(opt)
    w = mx.nd.array([1.0, 2.0, 3.0], dtype=np.float16)
    g = mx.nd.array([1e-3, 1e-3, 1e-3], dtype=np.float16)
    for _ in range(10):
        updater(0, g, w)
    state = updater.states[0]
    master = state[1]
    assert master.dtype == np.float32 and w.dtype == np.float16
    m = np.zeros(3, np.float32)
    want = np.array([1, 2, 3], np.float32)
    g32 = np.float32(np.float16(1e-3))
    for _ in range(10):
        if momentum:
            m = momentum * m - np.float32(0.1) * g32
            want = want + m
        else:
            want = want - np.float32(0.1) * g32
    np.testing.assert_allclose(master.asnumpy(), want, rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), want.astype(np.float16), rtol=1e-3)


def test_adam_steps_match_numpy_with_bias_correction():
    rng = np.random.RandomState(1)
    w = rng.randn(6).astype(np.float32)
    opt = mx.optimizer.Adam(learning_rate=0.01, beta1=0.8, beta2=0.9, epsilon=1e-6, wd=0.1,
                            clip_gradient=1.0)
    updater = mx.optimizer.get_updater(opt)
    nd_w = mx.nd.array(w)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t in range(1, 4):
        g = rng.randn(6).astype(np.float32)
        updater(7, mx.nd.array(g), nd_w)
        lr = 0.01 * math.sqrt(1 - 0.9 ** t) / (1 - 0.8 ** t)
        gp = np.clip(g + 0.1 * w, -1, 1)
        m = 0.8 * m + 0.2 * gp
        v = 0.9 * v + 0.1 * gp * gp
        w = w - lr * m / (np.sqrt(v) + 1e-6)
    np.testing.assert_allclose(nd_w.asnumpy(), w, rtol=1e-5, atol=1e-6)


def test_lr_wd_multipliers_from_names_and_symbol_attributes():
    data = mx.sym.Variable("data")
    w = mx.sym.Variable("fc_weight", lr_mult=2.0)
    b = mx.sym.Variable("fc_bias", wd_mult=3.0)
    net = mx.sym.FullyConnected(data, weight=w, bias=b, num_hidden=2, name="fc")
    opt = mx.optimizer.SGD(learning_rate=0.5, wd=0.1, sym=net,
                           param_idx2name={0: "fc_weight", 1: "fc_bias", 2: "other"})
    assert opt._get_lrs([0, 1]) == [1.0, 0.5]
    assert opt._get_wds([0, 1, 2]) == pytest.approx([0.1, 0.3, 0.0])
    alone = mx.optimizer.SGD(wd=0.1)  # no names known: everything decays
    assert alone._get_wd(5) == 0.1


def test_updater_states_pickle_round_trip():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    updater = mx.optimizer.get_updater(opt)
    w = mx.nd.ones((3,))
    updater(0, mx.nd.ones((3,)), w)
    blob = updater.get_states(dump_optimizer=True)
    other = mx.optimizer.get_updater(mx.optimizer.SGD())
    other.set_states(blob)
    assert other.optimizer.momentum == 0.9
    np.testing.assert_allclose(other.states[0].asnumpy(), [-0.1] * 3, rtol=1e-6)
    assert pickle.loads(updater.get_states())[0].shape == (3,)


def test_lr_scheduler_drives_the_learning_rate():
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    assert opt.learning_rate == 1.0
    updater = mx.optimizer.get_updater(opt)
    w = mx.nd.zeros((1,))
    lrs = []
    for _ in range(5):
        updater(0, mx.nd.ones((1,)), w)
        lrs.append(opt.learning_rate)
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.25]
    multi = mx.lr_scheduler.MultiFactorScheduler(step=[2, 4], factor=0.1, base_lr=1.0)
    assert [multi(n) for n in (1, 3, 5)] == pytest.approx([1.0, 0.1, 0.01])
    with pytest.raises(UserWarning):
        opt.set_learning_rate(0.1)


# ---- initializers ---------------------------------------------------------------------------
def test_initializer_dispatch_by_name_suffix():
    init = mx.init.Constant(3.0)
    arrays = {n: mx.nd.ones((2, 3)) * 7 for n in ("fc_weight", "fc_bias", "bn_gamma", "bn_beta",
                                                   "q_min", "q_max")}
    for name, arr in arrays.items():
        init(mx.init.InitDesc(name), arr)
    assert (arrays["fc_weight"].asnumpy() == 3).all()
    assert (arrays["fc_bias"].asnumpy() == 0).all()
    assert (arrays["bn_gamma"].asnumpy() == 1).all()
    assert (arrays["bn_beta"].asnumpy() == 0).all()
    assert (arrays["q_min"].asnumpy() == 0).all()
    assert (arrays["q_max"].asnumpy() == 1).all()
    with pytest.raises(ValueError, match="Unknown initialization pattern for moving_thing"):
        init(mx.init.InitDesc("moving_thing"), mx.nd.ones((2,)))
    # a variable's own __init__ wins whatever the name
    arr = mx.nd.zeros((2,))
    init(mx.init.InitDesc("x_bias", {"__init__": mx.init.One().dumps()}), arr)
    assert (arr.asnumpy() == 1).all()
    # the legacy string call still works, with a DeprecationWarning
    arr = mx.nd.zeros((2,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.init.One()("moving_var", arr)
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    assert (arr.asnumpy() == 1).all()


def test_uniform_and_normal_statistics():
    mx.random.seed(42)
    arr = mx.nd.zeros((200, 500))
    mx.init.Uniform(0.3)(mx.init.InitDesc("w_weight"), arr)
    a = arr.asnumpy()
    assert a.min() >= -0.3 and a.max() <= 0.3
    assert abs(a.mean()) < 0.01 and abs(a.std() - 0.3 / math.sqrt(3)) < 0.005
    mx.init.Normal(0.5)(mx.init.InitDesc("w_weight"), arr)
    a = arr.asnumpy()
    assert abs(a.mean()) < 0.01 and abs(a.std() - 0.5) < 0.01


@pytest.mark.parametrize("rnd_type", ["uniform", "gaussian"])
@pytest.mark.parametrize("factor_type", ["avg", "in", "out"])
@pytest.mark.parametrize("magnitude", [2, 3])
def test_xavier_scales(rnd_type, factor_type, magnitude):
    shape = (64, 8, 3, 3)  # fan_in 72, fan_out 576
    fan_in, fan_out = 8 * 9, 64 * 9
    factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[factor_type]
    scale = math.sqrt(magnitude / factor)
    arr = mx.nd.zeros(shape)
    mx.init.Xavier(rnd_type, factor_type, magnitude)(mx.init.InitDesc("c_weight"), arr)
    a = arr.asnumpy()
    if rnd_type == "uniform":
        assert a.max() <= scale and a.min() >= -scale
        assert abs(a.std() - scale / math.sqrt(3)) < 0.05 * scale
    else:
        assert abs(a.std() - scale) < 0.05 * scale


def test_xavier_errors_and_fc_fans():
    with pytest.raises(ValueError, match="Xavier initializer cannot be applied to vector fc_w"):
        mx.init.Xavier()._init_weight("fc_w", mx.nd.zeros((3,)))
    with pytest.raises(ValueError, match="Incorrect factor type"):
        mx.init.Xavier(factor_type="bad")(mx.init.InitDesc("a_weight"), mx.nd.zeros((2, 2)))
    with pytest.raises(ValueError, match="Unknown random type"):
        mx.init.Xavier(rnd_type="bad")(mx.init.InitDesc("a_weight"), mx.nd.zeros((2, 2)))
    arr = mx.nd.zeros((128, 784))
    mx.init.Xavier(magnitude=2)(mx.init.InitDesc("fc1_weight"), arr)
    scale = math.sqrt(2 / ((784 + 128) / 2.0))
    assert np.abs(arr.asnumpy()).max() <= scale
    assert np.abs(arr.asnumpy()).max() > 0.95 * scale


def test_dumps_and_create():
    assert mx.init.Normal(0.5).dumps() == '["normal", {"sigma": 0.5}]'
    assert json.loads(mx.init.Xavier(magnitude=2).dumps()) == \
        ["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 2}]
    made = mx.init.create('["uniform", {"scale": 0.2}]')
    assert isinstance(made, mx.init.Uniform) and made.scale == 0.2
    assert isinstance(mx.init.create("zeros"), mx.init.Zero)
    assert isinstance(mx.initializer.create("ones"), mx.init.One)
    with pytest.raises(ValueError, match="Cannot find initializer"):
        mx.init.create("nosuch")


def test_load_and_mixed():
    params = {"arg:fc_weight": mx.nd.ones((2, 2)) * 5}
    arr = mx.nd.zeros((2, 2))
    mx.init.Load(params)("fc_weight", arr)
    assert (arr.asnumpy() == 5).all()
    with pytest.raises(ValueError, match="Cannot Initialize other"):
        mx.init.Load(params)("other", arr)
    mixed = mx.init.Mixed([".*bias", ".*"], [mx.init.Zero(), mx.init.Constant(2)])
    arr = mx.nd.ones((2,))
    mixed(mx.init.InitDesc("fc_weight"), arr)
    assert (arr.asnumpy() == 2).all()
