"""mx.mod.Module over the executor: binding, parameters, the optimizer step, fit/score/predict
on a separable synthetic set, checkpoints (mx.model), callbacks."""
import logging
import os

import numpy as np
import pytest

import nanomx as mx


def _mlp(num_hidden=32, num_classes=2):
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, name="fc1", num_hidden=num_hidden)
    act1 = mx.sym.Activation(fc1, name="relu1", act_type="relu")
    fc2 = mx.sym.FullyConnected(act1, name="fc2", num_hidden=num_classes)
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _blobs(n=400, dim=10, seed=0):
    rng = np.random.RandomState(seed)
    label = rng.randint(0, 2, n)
    centers = np.stack([-np.ones(dim), np.ones(dim)])
    data = centers[label] + rng.randn(n, dim) * 0.8
    return data.astype(np.float32), label.astype(np.float32)


def _bound(batch=20, dim=10, **kw):
    mod = mx.mod.Module(_mlp(), context=mx.cpu(), **kw)
    mod.bind(data_shapes=[("data", (batch, dim))], label_shapes=[("softmax_label", (batch,))])
    return mod


def test_constructor_names_and_checks():
    mod = mx.mod.Module(_mlp())
    assert mod.data_names == ["data"] and mod.label_names == ["softmax_label"]
    assert mod._param_names == ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    assert mod.output_names == ["softmax_output"]
    assert not (mod.binded or mod.params_initialized or mod.optimizer_initialized)
    with pytest.raises(ValueError, match="input with name 'x' is not found"):
        mx.mod.Module(_mlp(), data_names=["x"])
    with pytest.raises(ValueError, match="one context, got 2"):
        mx.mod.Module(_mlp(), context=[mx.cpu(0), mx.cpu(1)])
    assert mx.mod.Module(_mlp(), context=[mx.cpu(0)])._context == [mx.cpu(0)]
    assert mx.module.Module is mx.mod.Module


def test_bind_shapes_and_grad_reqs():
    mod = _bound()
    assert mod.data_shapes == [("data", (20, 10))]
    assert isinstance(mod.data_shapes[0], mx.io.DataDesc)
    assert mod.label_shapes == [("softmax_label", (20,))]
    assert mod.output_shapes == [("softmax_output", (20, 2))]
    group = mod._exec_group
    assert group.grad_req == {"data": "null", "fc1_weight": "write", "fc1_bias": "write",
                              "fc2_weight": "write", "fc2_bias": "write",
                              "softmax_label": "null"}
    assert group.batch_size == 20
    params, aux = mod._arg_params, mod._aux_params
    assert sorted(params) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"] and aux == {}
    assert params["fc1_weight"].shape == (32, 10)
    with pytest.raises(ValueError, match="don't match names specified by data_names"):
        mx.mod.Module(_mlp()).bind(data_shapes=[("x", (2, 10))])
    frozen = _bound(fixed_param_names=["fc1_weight"])
    assert frozen._exec_group.grad_req["fc1_weight"] == "null"


def test_init_params_sorted_and_from_dicts():
    mod = _bound()
    mod.init_params(mx.init.Constant(0.5))
    arg, _ = mod.get_params()
    assert (arg["fc1_weight"].asnumpy() == 0.5).all()
    assert (arg["fc1_bias"].asnumpy() == 0).all()
    with pytest.warns(UserWarning, match="Parameters already initialized"):
        mod.init_params(mx.init.Zero())
    given = {k: mx.nd.ones(v.shape) * 2 for k, v in arg.items()}
    mod.set_params(given, {})
    assert (mod._exec_group.execs[0].arg_dict["fc2_bias"].asnumpy() == 2).all()
    partial = {"fc1_weight": given["fc1_weight"]}
    with pytest.raises(RuntimeError, match="fc1_bias is not presented"):
        mod.init_params(arg_params=partial, force_init=True)
    mod.init_params(mx.init.Zero(), arg_params=partial, allow_missing=True, force_init=True)
    arg, _ = mod.get_params()
    assert (arg["fc1_weight"].asnumpy() == 2).all() and (arg["fc2_weight"].asnumpy() == 0).all()


def test_one_sgd_step_matches_the_gradient():
    mod = _bound(batch=4)
    mod.init_params(mx.init.Xavier(magnitude=2))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    assert mod._optimizer.rescale_grad == 0.25
    assert mod._optimizer.idx2name == {0: "fc1_weight", 1: "fc1_bias", 2: "fc2_weight",
                                       3: "fc2_bias"}
    data, label = _blobs(4)
    batch = mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)])
    before = {k: v.asnumpy().copy() for k, v in mod.get_params()[0].items()}
    mod.forward(batch, is_train=True)
    mod.backward()
    grads = {k: g.asnumpy().copy() for k, g in mod._exec_group.execs[0].grad_dict.items()
             if g is not None}
    mod.update()
    after = mod.get_params()[0]
    for name in before:
        np.testing.assert_allclose(after[name].asnumpy(), before[name] - 0.5 * grads[name] / 4,
                                   rtol=1e-5, atol=1e-6)
    outputs = mod.get_outputs()
    assert len(outputs) == 1 and outputs[0].shape == (4, 2)
    np.testing.assert_allclose(outputs[0].asnumpy().sum(axis=1), 1, rtol=1e-5)
    assert mod.get_outputs(merge_multi_context=False)[0][0] is not None
    with pytest.warns(UserWarning, match="rescale_grad is not normalized"):
        other = _bound(batch=4)
        other.init_params()
        other.init_optimizer(optimizer=mx.optimizer.SGD(learning_rate=0.1))


def test_backward_needs_for_training():
    mod = mx.mod.Module(_mlp())
    mod.bind(data_shapes=[("data", (2, 10))], label_shapes=[("softmax_label", (2,))],
             for_training=False)
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 10))], [mx.nd.zeros((2,))]))
    with pytest.raises(AssertionError, match="re-bind with for_training=True"):
        mod.backward()


def test_fit_trains_a_separable_set_above_95_percent(caplog):
    mx.random.seed(1)
    np.random.seed(1)
    data, label = _blobs(400)
    train = mx.io.NDArrayIter(data, label, batch_size=20, shuffle=True)
    val_data, val_label = _blobs(200, seed=5)
    val = mx.io.NDArrayIter(val_data, val_label, batch_size=20)
    mod = mx.mod.Module(_mlp(), context=mx.cpu())
    batches = []
    with caplog.at_level(logging.INFO):
        mod.fit(train, eval_data=val, eval_metric="acc", num_epoch=4,
                initializer=mx.init.Xavier(magnitude=2), optimizer="sgd",
                optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
                batch_end_callback=[lambda p: batches.append(p.nbatch),
                                    mx.callback.Speedometer(20, frequent=10)])
    assert batches[:21] == list(range(20)) + [0]
    text = caplog.text
    assert "Epoch[3] Train-accuracy=" in text and "Epoch[3] Validation-accuracy=" in text
    assert "Epoch[0] Batch [10-20]\tSpeed:" in text or "Epoch[0] Batch [0-10]" in text
    (name, acc), = mod.score(val, "acc")
    assert name == "accuracy" and acc > 0.95, acc
    (_, ce), = mod.score(val, mx.metric.CrossEntropy())
    assert ce < 0.3
    pred = mod.predict(val)
    assert pred.shape == (200, 2)
    assert (pred.asnumpy().argmax(axis=1) == val_label).mean() > 0.95
    # a batch of another size reshapes the executor
    small = mod.predict(mx.nd.array(val_data[:7]))
    assert small.shape == (7, 2)
    np.testing.assert_allclose(small.asnumpy(), pred.asnumpy()[:7], rtol=1e-5, atol=1e-6)


def test_predict_removes_padding():
    mod = _bound(batch=4)
    mod.init_params(mx.init.Xavier())
    data, label = _blobs(10)
    it = mx.io.NDArrayIter(data, label, batch_size=4)
    out = mod.predict(it)
    assert out.shape == (10, 2)
    outs = mod.predict(it, merge_batches=False)
    assert [o[0].shape[0] for o in outs] == [4, 4, 2]
    with pytest.raises(ValueError, match="eval_data must be of type NDArray or DataIter"):
        mod.predict([1, 2])


def test_checkpoint_round_trip(in_tmp):
    mod = _bound()
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"momentum": 0.9})
    data, label = _blobs(20)
    batch = mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)])
    mod.forward_backward(batch)
    mod.update()
    mod.save_checkpoint("mlp", 3, save_optimizer_states=True)
    assert sorted(os.listdir(in_tmp)) == ["mlp-0003.params", "mlp-0003.states",
                                          "mlp-symbol.json"]
    saved = mx.nd.load("mlp-0003.params")
    assert sorted(saved) == ["arg:fc1_bias", "arg:fc1_weight", "arg:fc2_bias", "arg:fc2_weight"]
    sym, arg, aux = mx.model.load_checkpoint("mlp", 3)
    assert sym.list_arguments() == mod.symbol.list_arguments() and aux == {}
    for k, v in mod.get_params()[0].items():
        np.testing.assert_array_equal(arg[k].asnumpy(), v.asnumpy())
    loaded = mx.mod.Module.load("mlp", 3, load_optimizer_states=True)
    loaded.bind(data_shapes=[("data", (20, 10))], label_shapes=[("softmax_label", (20,))])
    loaded.init_optimizer(optimizer="sgd", optimizer_params={"momentum": 0.9})
    np.testing.assert_array_equal(
        loaded._updater.states[0].asnumpy(), mod._updater.states[0].asnumpy())
    loaded.forward(batch, is_train=False)
    mod.forward(batch, is_train=False)
    np.testing.assert_allclose(loaded.get_outputs()[0].asnumpy(),
                               mod.get_outputs()[0].asnumpy(), rtol=1e-6)
    mx.model.save_checkpoint("plain", 0, mod.symbol, arg, {})
    assert os.path.exists("plain-0000.params") and os.path.exists("plain-symbol.json")
    mx.nd.save("bad.params", {"xyz:a": mx.nd.ones((1,))})
    with pytest.raises(ValueError, match="Invalid param file bad.params"):
        mod.load_params("bad.params")


def test_do_checkpoint_saves_epoch_plus_one(in_tmp):
    callback = mx.callback.do_checkpoint("cb", period=2)
    arg = {"w": mx.nd.ones((2,))}
    callback(0, None, arg, {})
    assert not os.path.exists("cb-0001.params")
    callback(1, None, arg, {})
    assert mx.model.load_params("cb", 2)[0]["w"].shape == (2,)


def test_speedometer_lines(caplog):
    metric = mx.metric.Accuracy()
    metric.update([mx.nd.array([1])], [mx.nd.array([[0.0, 1.0]])])
    speedo = mx.callback.Speedometer(batch_size=4, frequent=2)
    with caplog.at_level(logging.INFO):
        for n in range(5):
            speedo(mx.model.BatchEndParam(epoch=0, nbatch=n, eval_metric=metric, locals=None))
    lines = [r.getMessage() for r in caplog.records if "Speed" in r.getMessage()]
    assert len(lines) == 2
    assert lines[0].startswith("Epoch[0] Batch [0-2]\tSpeed: ")
    assert lines[0].endswith("samples/sec\taccuracy=1.000000")
    assert lines[1].endswith("accuracy=nan")  # auto_reset cleared the local counters
