"""Auxiliary states, hidden outputs and the train mode, as MXNet 1.x has them.

BatchNorm's moving statistics are inputs the operator writes (MXNet's FMutateInputs), so a
symbol lists them apart from its arguments and an executor binds them as aux arrays; Dropout's
mask and BatchNorm's batch statistics are outputs kept for the gradient but not shown; and an
operator that behaves differently in training sees autograd's train mode (eager) or
forward(is_train=...) (executor).
"""
import numpy as np
import pytest

import nanomx as mx


def _bn_net():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    return mx.sym.BatchNorm(net, name="bn", fix_gamma=False)


def test_aux_states_are_listed_apart_from_arguments():
    net = _bn_net()
    assert net.list_arguments() == ["data", "fc_weight", "fc_bias", "bn_gamma", "bn_beta"]
    assert net.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert net.list_inputs() == ["data", "fc_weight", "fc_bias", "bn_gamma", "bn_beta",
                                 "bn_moving_mean", "bn_moving_var"]
    # The batch mean and variance are hidden outputs.
    assert net.list_outputs() == ["bn_output"]
    arg, out, aux = net.infer_shape(data=(5, 3))
    assert arg == [(5, 3), (4, 3), (4,), (4,), (4,)]
    assert out == [(5, 4)]
    assert aux == [(4,), (4,)]
    # MXNet names the moving statistics by keyword too.
    _, _, aux = net.infer_shape(data=(5, 3), bn_moving_mean=(4,))
    assert aux == [(4,), (4,)]
    assert mx.sym.Dropout(mx.sym.Variable("x"), name="drop").list_outputs() == ["drop_output"]


def test_executor_updates_aux_states_only_in_training():
    net = _bn_net()
    exe = net.simple_bind(mx.cpu(), data=(6, 3))
    assert sorted(exe.aux_dict) == ["bn_moving_mean", "bn_moving_var"]
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (6, 3)).astype(np.float32)
    exe.arg_dict["fc_weight"][:] = rng.uniform(-1, 1, (4, 3))
    exe.arg_dict["bn_gamma"][:] = 1
    exe.aux_dict["bn_moving_var"][:] = 1
    exe.forward(is_train=False, data=x)
    np.testing.assert_array_equal(exe.aux_dict["bn_moving_mean"].asnumpy(), np.zeros(4))
    exe.forward(is_train=True, data=x)
    h = x @ exe.arg_dict["fc_weight"].asnumpy().T
    mean, var = h.mean(0), h.var(0)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), 0.1 * mean, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_var"].asnumpy(), 0.9 + 0.1 * var,
                               rtol=1e-5, atol=1e-6)
    exe.backward(mx.nd.ones((6, 4)))
    assert exe.grad_dict["fc_weight"].asnumpy().shape == (4, 3)
    assert "bn_moving_mean" not in exe.grad_dict


def test_module_trains_and_returns_aux_params():
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(_bn_net(), num_hidden=2, name="out"),
                               name="softmax")
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (20, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=5, label_name="softmax_label")
    mod = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"])
    mod.fit(it, num_epoch=2, optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    arg, aux = mod.get_params()
    assert sorted(aux) == ["bn_moving_mean", "bn_moving_var"]
    assert np.abs(aux["bn_moving_mean"].asnumpy()).sum() > 0
    assert "bn_moving_mean" not in arg


def test_eager_dropout_follows_autograd_train_mode():
    x = mx.nd.ones((1000,))
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=0.5).asnumpy(), np.ones(1000))
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=0.5)
    values = set(np.unique(y.asnumpy()).tolist())
    assert values == {0.0, 2.0}
    with mx.autograd.record(train_mode=False):
        y = mx.nd.Dropout(x, p=0.5)
    np.testing.assert_array_equal(y.asnumpy(), np.ones(1000))
    with mx.autograd.train_mode():
        y = mx.nd.Dropout(x, p=0.5)
    assert set(np.unique(y.asnumpy()).tolist()) == {0.0, 2.0}


def test_dropout_gradient_uses_the_hidden_mask():
    x = mx.nd.ones((200,))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=0.5)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), y.asnumpy())
    # out= takes the visible outputs only.
    out = mx.nd.zeros((200,))
    mx.nd.Dropout(x, p=0.5, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.ones(200))


def test_executor_dropout_is_identity_for_inference():
    exe = mx.sym.Dropout(mx.sym.Variable("x"), p=0.5).simple_bind(mx.cpu(), x=(500,))
    exe.arg_dict["x"][:] = 1
    np.testing.assert_array_equal(exe.forward(is_train=False)[0].asnumpy(), np.ones(500))
    assert set(np.unique(exe.forward(is_train=True)[0].asnumpy()).tolist()) == {0.0, 2.0}
