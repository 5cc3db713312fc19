"""mx.gluon.nn layers: MXNet 1.9.1's parameter names and shapes, deferred initialization,
results against numpy or the equivalent mx.nd operator, hybridized == imperative, gradients
through autograd, BatchNorm's running statistics and save/load round trips."""
import json
import math
import warnings

import numpy as np
import pytest

import nanomx as mx
from nanomx import autograd
from nanomx.gluon import nn


@pytest.fixture(autouse=True)
def _drain_engine():
    yield
    mx.nd.waitall()


def _rand(*shape, seed=0):
    return mx.nd.array(np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32))


def _shapes(block):
    return {k: v.shape for k, v in block.collect_params().items()}


def _check_hybrid(block, *inputs, rtol=1e-5, atol=1e-6):
    """Runs block imperatively and hybridized; returns the imperative output."""
    out = block(*inputs)
    block.hybridize()
    hyb = block(*inputs)
    np.testing.assert_allclose(hyb.asnumpy(), out.asnumpy(), rtol=rtol, atol=atol)
    return out


# ---- containers -----------------------------------------------------------------------------
def test_sequential_names_indexing_and_slicing():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"), nn.Dropout(0.5))
        net.add(nn.Dense(3))
    assert len(net) == 3
    assert list(_shapes(net)) == ["net_dense0_weight", "net_dense0_bias",
                                  "net_dense1_weight", "net_dense1_bias"]
    assert isinstance(net[0], nn.Dense) and net[-1] is net[2]
    tail = net[1:]
    assert type(tail) is nn.HybridSequential and len(tail) == 2 and tail[1] is net[2]
    assert tail.prefix == "net_"
    text = repr(net)
    assert "(0): Dense(None -> 8, Activation(relu))" in text and "(2): Dense(None -> 3" in text
    net.initialize()
    out = _check_hybrid(net, _rand(4, 5))
    assert out.shape == (4, 3)
    assert _shapes(net)["net_dense0_weight"] == (8, 5)


def test_sequential_runs_blocks_and_warns_when_all_hybrid():
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Dense(4), nn.Lambda(lambda x: x * 2))
    net.initialize()
    x = _rand(2, 3)
    np.testing.assert_allclose(net(x).asnumpy(), (net[0](x) * 2).asnumpy(), rtol=1e-6)
    hybrid_only = nn.Sequential()
    hybrid_only.add(nn.Dense(2))
    with pytest.warns(UserWarning, match="Consider using HybridSequential"):
        hybrid_only.hybridize()
    with pytest.raises(ValueError, match="Children of HybridBlock must also be HybridBlock"):
        nn.HybridSequential().add(nn.Lambda("tanh"))
    with pytest.raises(TypeError):
        nn.Sequential().add(42)


# ---- Dense ----------------------------------------------------------------------------------
def test_dense_matches_numpy_and_defers_in_units():
    layer = nn.Dense(5, in_units=0, prefix="fc_")
    assert _shapes(layer) == {"fc_weight": (5, 0), "fc_bias": (5,)}
    layer.initialize(mx.init.Xavier())
    layer.bias.set_data(mx.nd.arange(5))
    x = _rand(3, 2, 4)  # flattened to (3, 8)
    out = layer(x)
    assert layer.weight.shape == (5, 8)
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    np.testing.assert_allclose(out.asnumpy(), x.asnumpy().reshape(3, 8) @ w.T + b, rtol=1e-5,
                               atol=1e-6)
    assert repr(layer) == "Dense(8 -> 5, linear)"


def test_dense_no_flatten_no_bias_and_activation():
    layer = nn.Dense(3, use_bias=False, flatten=False, activation="tanh", in_units=4)
    assert list(_shapes(layer)) == [layer.prefix + "weight"]
    assert layer.act.prefix == layer.prefix + "tanh_"
    layer.initialize()
    x = _rand(2, 5, 4)
    out = _check_hybrid(layer, x)
    ref = np.tanh(x.asnumpy() @ layer.weight.data().asnumpy().T)
    assert out.shape == (2, 5, 3)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_dense_gradients_through_autograd():
    layer = nn.Dense(2, in_units=3)
    layer.initialize()
    x = _rand(4, 3)
    with autograd.record():
        loss = (layer(x) ** 2).sum()
    loss.backward()
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    y = x.asnumpy() @ w.T + b
    np.testing.assert_allclose(layer.weight.grad().asnumpy(), 2 * y.T @ x.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(layer.bias.grad().asnumpy(), 2 * y.sum(axis=0), rtol=1e-5)


def test_hybridized_graph_uses_mxnet_node_names():
    net = nn.HybridSequential(prefix="model_")
    with net.name_scope():
        net.add(nn.Conv2D(2, 3), nn.Dense(2))
    net.initialize()
    net.hybridize()
    net(_rand(1, 1, 5, 5))
    nodes = [n["name"] for n in json.loads(net._cached_graph[1].tojson())["nodes"]]
    assert "model_conv0_fwd" in nodes and "model_dense0_fwd" in nodes
    assert "model_conv0_weight" in nodes and "model_dense0_bias" in nodes


# ---- convolutions ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls, ndim", [(nn.Conv1D, 1), (nn.Conv2D, 2), (nn.Conv3D, 3)])
def test_conv_matches_operator(cls, ndim):
    layer = cls(4, 3, strides=2, padding=1, dilation=1, groups=2, activation="relu")
    assert layer.weight.shape == (4, 0) + (3,) * ndim
    layer.initialize()
    x = _rand(*((2, 6) + (7,) * ndim))
    out = _check_hybrid(layer, x)
    assert layer.weight.shape == (4, 3) + (3,) * ndim
    ref = mx.nd.Convolution(x, layer.weight.data(), layer.bias.data(), kernel=(3,) * ndim,
                            stride=(2,) * ndim, pad=(1,) * ndim, num_filter=4, num_group=2)
    np.testing.assert_allclose(out.asnumpy(), mx.nd.relu(ref).asnumpy(), rtol=1e-5, atol=1e-6)
    assert out.shape == (2, 4) + (4,) * ndim


def test_conv_weight_shapes_and_repr():
    assert nn.Conv2D(8, (3, 5), in_channels=4).weight.shape == (8, 4, 3, 5)
    assert nn.Conv2D(8, 3, layout="NHWC", in_channels=4, groups=2).weight.shape == (8, 3, 3, 2)
    assert nn.Conv2DTranspose(8, 3, in_channels=6, groups=2).weight.shape == (6, 4, 3, 3)
    assert nn.Conv3DTranspose(2, 2, in_channels=3).weight.shape == (3, 2, 2, 2, 2)
    assert nn.Conv2D(8, 3, use_bias=False).bias is None
    text = repr(nn.Conv2D(8, 3, padding=1, groups=2, use_bias=False, in_channels=4))
    # The mapping shows the weight's second axis (in_channels / groups), as in MXNet.
    assert text == ("Conv2D(2 -> 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), "
                    "groups=2, bias=False)")
    with pytest.raises(AssertionError, match="layout"):
        nn.Conv1D(2, 3, layout="NWC")
    with pytest.raises(AssertionError, match="kernel_size"):
        nn.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="groups"):
        nn.Conv2D(3, 3, groups=2)


@pytest.mark.parametrize("cls, ndim", [(nn.Conv1DTranspose, 1), (nn.Conv2DTranspose, 2),
                                       (nn.Conv3DTranspose, 3)])
def test_conv_transpose_output_padding(cls, ndim):
    layer = cls(3, 3, strides=2, padding=1, output_padding=1)
    layer.initialize()
    x = _rand(*((1, 2) + (4,) * ndim))
    out = _check_hybrid(layer, x)
    assert layer.weight.shape == (2, 3) + (3,) * ndim
    assert out.shape == (1, 3) + (8,) * ndim  # (4 - 1) * 2 - 2 + 3 + 1
    ref = mx.nd.Deconvolution(x, layer.weight.data(), layer.bias.data(), kernel=(3,) * ndim,
                              stride=(2,) * ndim, pad=(1,) * ndim, adj=(1,) * ndim,
                              num_filter=3, no_bias=False)
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)


# ---- pooling and padding --------------------------------------------------------------------
def test_pooling_layers_match_operator():
    x = _rand(2, 3, 7, 7)
    cases = [
        (nn.MaxPool2D(3, 2, 1), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")),
        (nn.MaxPool2D(3, 2, ceil_mode=True),
         dict(kernel=(3, 3), stride=(2, 2), pool_type="max", pooling_convention="full")),
        (nn.AvgPool2D(3, 1, 1, count_include_pad=False),
         dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type="avg",
              count_include_pad=False)),
        (nn.GlobalAvgPool2D(), dict(kernel=(1, 1), global_pool=True, pool_type="avg")),
        (nn.GlobalMaxPool2D(), dict(kernel=(1, 1), global_pool=True, pool_type="max")),
    ]
    for layer, kwargs in cases:
        out = _check_hybrid(layer, x)
        np.testing.assert_allclose(out.asnumpy(), mx.nd.Pooling(x, **kwargs).asnumpy(),
                                   rtol=1e-6)
    assert nn.MaxPool2D(3, 2, ceil_mode=True)(x).shape == (2, 3, 3, 3)
    assert nn.AvgPool1D()(_rand(1, 2, 6)).shape == (1, 2, 3)
    assert nn.MaxPool3D()(_rand(1, 2, 4, 4, 4)).shape == (1, 2, 2, 2, 2)
    assert nn.GlobalAvgPool1D()(_rand(1, 2, 6)).shape == (1, 2, 1)
    assert nn.GlobalMaxPool3D()(_rand(1, 2, 3, 3, 3)).shape == (1, 2, 1, 1, 1)
    np.testing.assert_allclose(nn.GlobalAvgPool2D()(x).asnumpy()[:, :, 0, 0],
                               x.asnumpy().mean(axis=(2, 3)), rtol=1e-5)
    assert nn.MaxPool2D(3)._alias() == "pool"
    with pytest.raises(AssertionError, match="layouts are valid"):
        nn.MaxPool2D(layout="NCW")


def test_reflection_pad():
    x = _rand(1, 2, 3, 4)
    out = _check_hybrid(nn.ReflectionPad2D(1), x)
    ref = np.pad(x.asnumpy(), ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect")
    np.testing.assert_allclose(out.asnumpy(), ref)


# ---- normalization --------------------------------------------------------------------------
def test_batchnorm_parameters_and_training_statistics():
    bn = nn.BatchNorm(prefix="bn_")
    assert _shapes(bn) == {"bn_gamma": (0,), "bn_beta": (0,), "bn_running_mean": (0,),
                           "bn_running_var": (0,)}
    assert bn.running_mean.grad_req == "null" and bn.running_var.grad_req == "null"
    assert bn.gamma.grad_req == "write"
    bn.initialize()
    x = mx.nd.array(np.random.RandomState(1).normal(2.0, 3.0, (8, 3, 4, 4)).astype(np.float32))
    host = x.asnumpy()
    mean, var = host.mean(axis=(0, 2, 3)), host.var(axis=(0, 2, 3))
    with autograd.record():
        out = bn(x)
    out.backward()
    ref = (host - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), 0.1 * mean, rtol=1e-4)
    np.testing.assert_allclose(bn.running_var.data().asnumpy(), 0.9 + 0.1 * var, rtol=1e-4)
    # Inference normalizes with the running statistics.
    rm, rv = bn.running_mean.data().asnumpy(), bn.running_var.data().asnumpy()
    infer = bn(x)
    np.testing.assert_allclose(
        infer.asnumpy(), (host - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5),
        rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), rm)


def test_batchnorm_hybridized_training_and_global_stats():
    x = _rand(4, 2, 3, 3, seed=2)
    plain, hybrid = nn.BatchNorm(momentum=0.5), nn.BatchNorm(momentum=0.5)
    for layer in (plain, hybrid):
        layer.initialize()
    hybrid.hybridize()
    for layer in (plain, hybrid):
        with autograd.record():
            layer(x)
    np.testing.assert_allclose(hybrid.running_mean.data().asnumpy(),
                               plain.running_mean.data().asnumpy(), rtol=1e-5, atol=1e-7)
    frozen = nn.BatchNorm(use_global_stats=True, in_channels=2)
    frozen.initialize()
    with autograd.record():
        out = frozen(x)
    np.testing.assert_allclose(out.asnumpy(), x.asnumpy() / np.sqrt(1 + 1e-5), rtol=1e-5)
    np.testing.assert_array_equal(frozen.running_mean.data().asnumpy(), [0, 0])


def test_batchnorm_scale_center_and_cast():
    bn = nn.BatchNorm(scale=False, center=False, in_channels=2)
    assert bn.gamma.grad_req == "null" and bn.beta.grad_req == "null"
    assert bn._kwargs["fix_gamma"] is True
    bn.cast("float16")
    assert bn.gamma.dtype in ("float32", np.float32)
    relu = nn.BatchNormReLU(in_channels=2)
    relu.initialize()
    out = _check_hybrid(relu, _rand(2, 2, 3, 3))
    assert out.asnumpy().min() >= 0
    assert "in_channels=2" in repr(relu)


def test_instance_layer_group_norm_match_numpy():
    x = _rand(2, 4, 3, 5, seed=3)
    host = x.asnumpy()

    def normalize(a, axes):
        return (a - a.mean(axis=axes, keepdims=True)) / np.sqrt(a.var(axis=axes, keepdims=True)
                                                                + 1e-5)

    inorm = nn.InstanceNorm()
    inorm.initialize()
    np.testing.assert_allclose(_check_hybrid(inorm, x).asnumpy(), normalize(host, (2, 3)),
                               rtol=1e-4, atol=1e-4)
    assert inorm.gamma.shape == (4,) and inorm.gamma.grad_req == "null"
    inorm2 = nn.InstanceNorm(axis=2)
    inorm2.initialize()
    ref2 = normalize(host.swapaxes(1, 2), (2, 3)).swapaxes(1, 2)
    np.testing.assert_allclose(_check_hybrid(inorm2, x).asnumpy(), ref2, rtol=1e-4, atol=1e-4)

    lnorm = nn.LayerNorm()
    lnorm.initialize()
    np.testing.assert_allclose(_check_hybrid(lnorm, x).asnumpy(), normalize(host, (3,)),
                               rtol=1e-4, atol=1e-4)
    assert lnorm.gamma.shape == (5,)

    gnorm = nn.GroupNorm(num_groups=2)
    assert gnorm.gamma.shape == (2,)
    gnorm.initialize()
    ref = normalize(host.reshape(2, 2, 2, 3, 5), (2, 3, 4)).reshape(host.shape)
    np.testing.assert_allclose(_check_hybrid(gnorm, x).asnumpy(), ref, rtol=1e-4, atol=1e-4)


# ---- dropout, embedding, flatten, lambdas ---------------------------------------------------
def test_dropout_training_and_inference():
    x = mx.nd.ones((200, 50))
    layer = nn.Dropout(0.4)
    np.testing.assert_array_equal(layer(x).asnumpy(), x.asnumpy())
    with autograd.record():
        out = layer(x).asnumpy()
    assert set(np.unique(out)) <= {0.0, np.float32(1 / 0.6)}
    assert abs((out == 0).mean() - 0.4) < 0.03
    with autograd.record():
        shared = nn.Dropout(0.5, axes=(1,))(mx.nd.ones((30, 20))).asnumpy()
    assert all(len(set(row)) == 1 for row in shared)
    assert "p = 0.4" in repr(layer)
    np.testing.assert_array_equal(nn.Dropout(0)(x).asnumpy(), x.asnumpy())


def test_embedding_lookup_and_gradient():
    emb = nn.Embedding(10, 3, prefix="emb_")
    assert _shapes(emb) == {"emb_weight": (10, 3)}
    emb.initialize()
    idx = mx.nd.array([[1, 2], [3, 1]])
    with autograd.record():
        out = emb(idx)
    out.backward()
    w = emb.weight.data().asnumpy()
    np.testing.assert_allclose(out.asnumpy(), w[[[1, 2], [3, 1]]])
    grad = emb.weight.grad().asnumpy()
    np.testing.assert_allclose(grad[:, 0], [0, 2, 1, 1, 0, 0, 0, 0, 0, 0])
    assert repr(emb) == "Embedding(10 -> 3, float32)"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.Embedding(5, 2, sparse_grad=True)
    assert any("row_sparse" in str(w.message) for w in caught)


def test_flatten_and_lambdas():
    x = _rand(2, 3, 4)
    assert _check_hybrid(nn.Flatten(), x).shape == (2, 12)
    np.testing.assert_allclose(nn.Lambda("tanh")(x).asnumpy(), np.tanh(x.asnumpy()), rtol=1e-6)
    np.testing.assert_allclose(_check_hybrid(nn.HybridLambda("tanh"), x).asnumpy(),
                               np.tanh(x.asnumpy()), rtol=1e-6)
    out = _check_hybrid(nn.HybridLambda(lambda F, a: F.relu(a) * 2), x)
    np.testing.assert_allclose(out.asnumpy(), np.maximum(x.asnumpy(), 0) * 2, rtol=1e-6)
    with pytest.raises(AssertionError, match="not found"):
        nn.Lambda("no_such_function")
    with pytest.raises(ValueError, match="Unrecognized function"):
        nn.HybridLambda(3)


# ---- activations ----------------------------------------------------------------------------
def _gelu(a):
    return 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))


@pytest.mark.parametrize("layer, ref", [
    (nn.Activation("relu"), lambda a: np.maximum(a, 0)),
    (nn.Activation("sigmoid"), lambda a: 1 / (1 + np.exp(-a))),
    (nn.LeakyReLU(0.1), lambda a: np.where(a >= 0, a, 0.1 * a)),
    (nn.ELU(0.5), lambda a: np.where(a > 0, a, 0.5 * (np.exp(a) - 1))),
    (nn.SELU(), lambda a: 1.0507009873554805 * np.where(
        a > 0, a, 1.6732632423543772 * (np.exp(a) - 1))),
    (nn.GELU(), _gelu),
    (nn.Swish(2.0), lambda a: a / (1 + np.exp(-2 * a))),
])
def test_activations_match_numpy(layer, ref):
    x = _rand(3, 4, seed=4) * 3
    out = _check_hybrid(layer, x)
    np.testing.assert_allclose(out.asnumpy(), ref(x.asnumpy()), rtol=1e-4, atol=1e-5)


def test_activation_names_and_prelu():
    net = nn.HybridSequential(prefix="n_")
    with net.name_scope():
        act = nn.Activation("relu")
        act2 = nn.Activation("relu")
    assert act.prefix == "n_relu0_" and act2.prefix == "n_relu1_"
    assert repr(act) == "Activation(relu)"
    prelu = nn.PReLU(prefix="p_")
    assert _shapes(prelu) == {"p_alpha": (1,)}
    prelu.initialize()
    np.testing.assert_allclose(prelu.alpha.data().asnumpy(), [0.25])
    x = _rand(2, 3, 4, seed=5)
    with autograd.record():
        out = prelu(x)
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), np.where(x.asnumpy() >= 0, x.asnumpy(),
                                                       0.25 * x.asnumpy()), rtol=1e-6)
    np.testing.assert_allclose(prelu.alpha.grad().asnumpy(),
                               [np.minimum(x.asnumpy(), 0).sum()], rtol=1e-5)
    channel = nn.PReLU(in_channels=3)
    channel.initialize()
    assert _check_hybrid(channel, x).shape == (2, 3, 4)
    with pytest.raises(AssertionError, match="no less than 0"):
        nn.LeakyReLU(-0.1)
    with pytest.raises(TypeError):
        nn.Activation(None)


# ---- whole networks -------------------------------------------------------------------------
def _small_cnn():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.MaxPool2D(), nn.Conv2D(6, 3), nn.GlobalAvgPool2D(), nn.Flatten(),
                nn.Dense(3))
    return net


def test_small_cnn_hybrid_gradients_match_imperative():
    x = _rand(2, 3, 8, 8, seed=6)
    grads = []
    for hybrid in (False, True):
        net = _small_cnn()
        net.initialize(mx.init.Xavier())
        net(x)  # finishes the deferred initialization
        for p in net.collect_params().values():  # same weights for both runs
            p.set_data(mx.nd.array(np.random.RandomState(len(p.name)).uniform(
                -0.5, 0.5, p.shape).astype(np.float32)))
        if hybrid:
            net.hybridize()
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        grads.append({k[len(net.prefix):]: v.grad().asnumpy()
                      for k, v in net.collect_params().items() if v.grad_req != "null"})
    assert grads[0].keys() == grads[1].keys()
    for k in grads[0]:
        np.testing.assert_allclose(grads[1][k], grads[0][k], rtol=1e-4, atol=1e-5)


def test_save_load_parameters_round_trip(tmp_path):
    net = _small_cnn()
    net.initialize(mx.init.Xavier())
    x = _rand(1, 3, 8, 8, seed=7)
    with autograd.record():
        net(x)  # moves the running statistics away from their initial values
    expected = net(x).asnumpy()
    path = str(tmp_path / "net.params")
    net.save_parameters(path)
    saved = mx.nd.load(path)
    assert "0.weight" in saved and "1.running_mean" in saved and "7.bias" in saved
    fresh = _small_cnn()
    fresh.load_parameters(path)
    np.testing.assert_allclose(fresh(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    fresh.hybridize()
    np.testing.assert_allclose(fresh(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
