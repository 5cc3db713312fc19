"""Inference fusion: Convolution + BatchNorm + residual add + ReLU as one _sg_mkldnn_conv node
when a graph is bound without gradients (docs/nn.md#inference-fusion)."""
import json
import os

import numpy as np
import pytest

import nanomx as mx


def _block(dtype_name="float32"):
    data = mx.sym.Variable("data")
    a = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conva")
    a = mx.sym.BatchNorm(a, fix_gamma=False, name="bna")
    a = mx.sym.Activation(a, act_type="relu", name="relua")
    b = mx.sym.Convolution(a, num_filter=4, kernel=(3, 3), pad=(1, 1), no_bias=True, name="convb")
    b = mx.sym.BatchNorm(b, fix_gamma=True, eps=1e-5, name="bnb")
    short = mx.sym.Convolution(data, num_filter=4, kernel=(1, 1), name="convd")
    out = mx.sym.Activation(b + short, act_type="relu", name="reluout")
    # A convolution alone, and one whose output is also read elsewhere: neither is fused.
    lone = mx.sym.Convolution(out, num_filter=2, kernel=(1, 1), name="lone")
    return mx.sym.Group([lone, mx.sym.sum(out)])


def _bind(sym, fuse, dtype=np.float32, seed=0):
    old = os.environ.get("NANOMX_FUSE")
    os.environ["NANOMX_FUSE"] = "1" if fuse else "0"
    try:
        exe = sym.simple_bind(mx.cpu(), grad_req="null", type_dict={"data": dtype},
                              data=(2, 3, 6, 5))
    finally:
        if old is None:
            del os.environ["NANOMX_FUSE"]
        else:
            os.environ["NANOMX_FUSE"] = old
    rng = np.random.RandomState(seed)
    for name, arr in sorted(exe.arg_dict.items()):
        arr[:] = rng.uniform(-1, 1, arr.shape).astype(dtype)
    for name, arr in sorted(exe.aux_dict.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape).astype(dtype)
    return exe


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
def test_fused_inference_equals_the_unfused_graph(dtype, tol):
    sym = _block()
    fused, plain = _bind(sym, True, dtype), _bind(sym, False, dtype)
    a = [o.asnumpy() for o in fused.forward(is_train=False)]
    b = [o.asnumpy() for o in plain.forward(is_train=False)]
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)
    # Two chains fold (conva's; convb's with the shortcut as its residual); the shortcut's
    # convolution then feeds the fused node and `lone` feeds nothing fusable.
    assert fused.debug_str().count("Op:_sg_mkldnn_conv") == 2
    assert "_sg_mkldnn_conv" not in plain.debug_str()


def test_training_forward_of_a_fused_executor_runs_the_original_graph():
    sym = _block()
    fused, plain = _bind(sym, True), _bind(sym, False)
    before = fused.aux_dict["bna_moving_mean"].asnumpy().copy()
    a = [o.asnumpy() for o in fused.forward(is_train=True)]
    b = [o.asnumpy() for o in plain.forward(is_train=True)]
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
    # Training normalises with the batch and moves the statistics, as unfused.
    assert not np.allclose(fused.aux_dict["bna_moving_mean"].asnumpy(), before)
    np.testing.assert_allclose(fused.aux_dict["bna_moving_mean"].asnumpy(),
                               plain.aux_dict["bna_moving_mean"].asnumpy(), rtol=1e-5, atol=1e-6)
    # And inference afterwards uses the moved statistics.
    a = fused.forward(is_train=False)[0].asnumpy()
    b = plain.forward(is_train=False)[0].asnumpy()
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_graphs_that_want_gradients_are_not_fused():
    sym = _block()
    exe = sym.simple_bind(mx.cpu(), data=(2, 3, 6, 5))
    assert "_sg_mkldnn_conv" not in exe.debug_str()


def test_the_trace_shows_one_event_per_fused_node_with_its_parts(tmp_path):
    exe = _bind(_block(), True)
    exe.forward(is_train=False)
    mx.nd.waitall()
    path = str(tmp_path / "fused.json")
    mx.profiler.set_config(profile_symbolic=True, filename=path)
    mx.profiler.set_state("run")
    exe.forward(is_train=False)
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(path) as f:
        names = {e["name"] for e in json.load(f)["traceEvents"] if e.get("ph") in ("B", "X")}
    assert "_sg_mkldnn_conv[conva,bna,relua]" in names
    assert any(n.startswith("_sg_mkldnn_conv[convb,bnb,") and n.endswith(",reluout]")
               for n in names), names
    assert "_sg_mkldnn_conv[convd]" not in names
    assert "Convolution" in names  # `lone` and the shortcut stay convolutions
    assert "BatchNorm" not in names
