"""One small CNN (Convolution, BatchNorm, ReLU, Pooling, Dropout, FullyConnected,
SoftmaxOutput) through mx.nd + autograd, through mx.sym + simple_bind and through Module: the
same outputs, gradients, moving statistics and (Module) updated weights."""
import numpy as np

import nanomx as mx

SHAPES = {"conv_weight": (4, 3, 3, 3), "conv_bias": (4,), "bn_gamma": (4,), "bn_beta": (4,),
          "fc_weight": (5, 16), "fc_bias": (5,)}
AUX = {"bn_moving_mean": (4,), "bn_moving_var": (4,)}


def _data():
    rng = np.random.RandomState(42)
    x = rng.uniform(-1, 1, (4, 3, 4, 4)).astype(np.float32)
    label = np.array([0, 3, 1, 4], np.float32)
    params = {k: rng.uniform(-0.5, 0.5, s).astype(np.float32) for k, s in SHAPES.items()}
    aux = {"bn_moving_mean": np.zeros(4, np.float32), "bn_moving_var": np.ones(4, np.float32)}
    return x, label, params, aux


def _symbol():
    h = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), pad=(1, 1), num_filter=4,
                           name="conv")
    h = mx.sym.BatchNorm(h, fix_gamma=False, name="bn")
    h = mx.sym.Activation(h, act_type="relu")
    h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type="max")
    h = mx.sym.Dropout(h, p=0.0)  # identity, but a train-mode operator in the graph
    h = mx.sym.FullyConnected(mx.sym.Flatten(h), num_hidden=5, name="fc")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def _with_ndarray(x, label, params, aux):
    p = {k: mx.nd.array(v) for k, v in params.items()}
    a = {k: mx.nd.array(v) for k, v in aux.items()}
    for v in p.values():
        v.attach_grad()
    with mx.autograd.record():
        h = mx.nd.Convolution(mx.nd.array(x), p["conv_weight"], p["conv_bias"], kernel=(3, 3),
                              pad=(1, 1), num_filter=4)
        h = mx.nd.BatchNorm(h, p["bn_gamma"], p["bn_beta"], a["bn_moving_mean"],
                            a["bn_moving_var"], fix_gamma=False)
        h = mx.nd.Activation(h, act_type="relu")
        h = mx.nd.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type="max")
        h = mx.nd.Dropout(h, p=0.0)
        h = mx.nd.FullyConnected(mx.nd.Flatten(h), p["fc_weight"], p["fc_bias"], num_hidden=5)
        y = mx.nd.SoftmaxOutput(h, mx.nd.array(label))
    y.backward()
    return (y.asnumpy(), {k: v.grad.asnumpy() for k, v in p.items()},
            {k: v.asnumpy() for k, v in a.items()})


def _with_executor(x, label, params, aux):
    exe = _symbol().simple_bind(mx.cpu(), data=x.shape, softmax_label=label.shape)
    exe.arg_dict["data"][:] = x
    exe.arg_dict["softmax_label"][:] = label
    for k, v in params.items():
        exe.arg_dict[k][:] = v
    for k, v in aux.items():
        exe.aux_dict[k][:] = v
    y = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    return (y, {k: exe.grad_dict[k].asnumpy() for k in params},
            {k: exe.aux_dict[k].asnumpy() for k in aux})


def test_ndarray_autograd_and_executor_agree():
    x, label, params, aux = _data()
    y1, g1, a1 = _with_ndarray(x, label, params, aux)
    y2, g2, a2 = _with_executor(x, label, params, aux)
    np.testing.assert_allclose(y1, y2, rtol=1e-5, atol=1e-6)
    for k in params:
        np.testing.assert_allclose(g1[k], g2[k], rtol=1e-4, atol=1e-5, err_msg=k)
    for k in aux:
        np.testing.assert_allclose(a1[k], a2[k], rtol=1e-5, atol=1e-6, err_msg=k)
    assert np.abs(a1["bn_moving_mean"]).sum() > 0  # training moved them


def test_module_agrees_with_the_executor_and_applies_sgd():
    x, label, params, aux = _data()
    y, grads, moved = _with_executor(x, label, params, aux)
    mod = mx.mod.Module(_symbol(), data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", label.shape)])
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in params.items()},
                    aux_params={k: mx.nd.array(v) for k, v in aux.items()})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(label)])
    mod.forward_backward(batch)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), y, rtol=1e-5, atol=1e-6)
    mod.update()
    arg, aux_after = mod.get_params()
    for k, v in params.items():
        # Module's SGD rescales the gradient by 1 / batch size, as MXNet's.
        np.testing.assert_allclose(arg[k].asnumpy(), v - 0.1 * grads[k] / x.shape[0],
                                   rtol=1e-4, atol=1e-6, err_msg=k)
    for k in aux:
        np.testing.assert_allclose(aux_after[k].asnumpy(), moved[k], rtol=1e-5, atol=1e-6)
    # Prediction binds without gradients (fused) and normalises with the moving statistics.
    pred = mx.mod.Module(_symbol(), data_names=["data"], label_names=["softmax_label"])
    pred.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", label.shape)],
              for_training=False)
    pred.set_params(arg, aux_after)
    pred.forward(batch, is_train=False)
    exe = _symbol().simple_bind(mx.cpu(), grad_req="null", data=x.shape,
                                softmax_label=label.shape)
    exe.copy_params_from(arg, aux_after)
    exe.arg_dict["data"][:] = x
    np.testing.assert_allclose(pred.get_outputs()[0].asnumpy(),
                               exe.forward(is_train=False)[0].asnumpy(), rtol=1e-5, atol=1e-6)


def test_an_unwanted_data_gradient_is_skipped_and_changes_nothing_else():
    # With no gradient for the data, the first Convolution's _backward_Convolution has a data
    # gradient nothing reads: the executor marks it unwanted and the kernel skips it.
    x, label, params, aux = _data()
    _, grads, _ = _with_executor(x, label, params, aux)
    sym = _symbol()
    reqs = {n: "null" if n in ("data", "softmax_label") else "write" for n in sym.list_arguments()}
    exe = sym.simple_bind(mx.cpu(), grad_req=reqs, data=x.shape, softmax_label=label.shape)
    exe.copy_params_from({k: mx.nd.array(v) for k, v in params.items()},
                         {k: mx.nd.array(v) for k, v in aux.items()})
    exe.arg_dict["data"][:] = x
    exe.arg_dict["softmax_label"][:] = label
    exe.forward(is_train=True)
    exe.backward()
    assert exe.grad_dict.get("data") is None
    for k in params:
        np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), grads[k], rtol=1e-5, atol=1e-7)
