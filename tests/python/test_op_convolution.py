"""Convolution, Deconvolution and UpSampling against independent numpy references (MXNet 1.9.1's
semantics): forward in float32 (oneDNN) and float64 (im2col), every gradient through autograd
and the symbolic executor, shape inference and the errors for bad inputs."""
import itertools
import re

import numpy as np
import pytest

import nanomx as mx

RNG = np.random.RandomState(7)


def _tuple(v, nd, default):
    return tuple(v) if v is not None else (default,) * nd


# ---- numpy references ---------------------------------------------------------------------

def conv_ref(x, w, b=None, stride=None, pad=None, dilate=None, groups=1):
    """out[n, o, p] = b[o] + sum over c of its group and taps k of
    x_padded[n, c, p * stride + k * dilate] * w[o, c, k]."""
    nd = x.ndim - 2
    stride, pad, dilate = _tuple(stride, nd, 1), _tuple(pad, nd, 0), _tuple(dilate, nd, 1)
    n, c = x.shape[:2]
    o, k = w.shape[0], w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out = [(x.shape[2 + i] + 2 * pad[i] - dilate[i] * (k[i] - 1) - 1) // stride[i] + 1
           for i in range(nd)]
    y = np.zeros((n, o) + tuple(out))
    cg, og = c // groups, o // groups
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = w[g * og:(g + 1) * og]
        for tap in itertools.product(*[range(v) for v in k]):
            window = tuple(slice(tap[i] * dilate[i],
                                 tap[i] * dilate[i] + stride[i] * (out[i] - 1) + 1, stride[i])
                           for i in range(nd))
            patch = xg[(slice(None), slice(None)) + window]
            y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch,
                                                   wg[(slice(None), slice(None)) + tap])
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y


def deconv_ref(x, w, num_filter, b=None, stride=None, pad=None, dilate=None, adj=None,
               groups=1):
    """MXNet's transposed convolution: every x[n, c, i] * w[c, o, k] added at
    i * stride + k * dilate of an output padded by `pad` on both sides, then cropped."""
    nd = x.ndim - 2
    stride, pad = _tuple(stride, nd, 1), _tuple(pad, nd, 0)
    dilate, adj = _tuple(dilate, nd, 1), _tuple(adj, nd, 0)
    n, c = x.shape[:2]
    k = w.shape[2:]
    out = [stride[i] * (x.shape[2 + i] - 1) + dilate[i] * (k[i] - 1) + 1 - 2 * pad[i] + adj[i]
           for i in range(nd)]
    padded = np.zeros((n, num_filter) + tuple(o + 2 * p for o, p in zip(out, pad)))
    cg, og = c // groups, num_filter // groups
    for g in range(groups):
        xg = x[:, g * cg:(g + 1) * cg]
        wg = w[g * cg:(g + 1) * cg]
        for tap in itertools.product(*[range(v) for v in k]):
            where = tuple(slice(tap[i] * dilate[i],
                                tap[i] * dilate[i] + stride[i] * (x.shape[2 + i] - 1) + 1,
                                stride[i]) for i in range(nd))
            padded[(slice(None), slice(g * og, (g + 1) * og)) + where] += np.einsum(
                "nc...,co->no...", xg, wg[(slice(None), slice(None)) + tap])
    y = padded[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(pad, out))]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * nd)
    return y


def nearest_ref(xs, scale, mode="concat"):
    oh, ow = xs[0].shape[2] * scale, xs[0].shape[3] * scale
    ups = [x.repeat(oh // x.shape[2], axis=2).repeat(ow // x.shape[3], axis=3) for x in xs]
    return sum(ups) if mode == "sum" else np.concatenate(ups, axis=1)


def grad_of_input(f, x, dy):
    """d sum(f(x) * dy) / dx for f linear in x and acting on each sample alone: f of every
    basis vector of one sample at once (as a batch)."""
    per = x[0].size
    ys = f(np.eye(per).reshape((per,) + x.shape[1:]))
    return (dy.reshape(x.shape[0], -1) @ ys.reshape(per, -1).T).reshape(x.shape)


def grad_of_param(f, w, dy):
    """d sum(f(w) * dy) / dw for f linear in w, one basis vector at a time."""
    g = np.zeros(w.shape)
    for j in range(w.size):
        e = np.zeros(w.shape)
        e.flat[j] = 1
        g.flat[j] = (f(e) * dy).sum()
    return g


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-9)


def _run(op, arrays, dtype, head, **attrs):
    """Forward and backward of mx.nd.<op> through autograd: the output and every gradient."""
    nds = [mx.nd.array(a, dtype=dtype) for a in arrays]
    for a in nds:
        a.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, op)(*nds, **attrs)
    y.backward(mx.nd.array(head, dtype=dtype))
    assert y.dtype == dtype
    return y.asnumpy(), [a.grad.asnumpy() for a in nds]


# ---- Convolution ------------------------------------------------------------------------

CONV_CASES = [
    # data shape, num_filter, kernel, extra attributes
    ((2, 3, 6, 5), 4, (3, 3), {}),
    ((1, 2, 7, 7), 3, (2, 2), {"stride": (3, 3), "pad": (1, 1)}),  # stride > kernel, batch 1
    ((2, 2, 4, 5), 2, (3, 3), {"pad": (2, 2)}),  # pad >= kernel / 2
    ((2, 3, 4, 3), 5, (1, 1), {}),
    ((2, 4, 5, 5), 4, (3, 3), {"num_group": 4, "pad": (1, 1)}),  # depthwise
    ((1, 4, 5, 4), 8, (3, 2), {"num_group": 2, "stride": (1, 2)}),
    ((2, 2, 7, 6), 3, (3, 2), {"dilate": (2, 3), "pad": (1, 2)}),
    ((2, 3, 5, 5), 2, (3, 3), {"no_bias": True, "stride": (2, 2)}),
    ((2, 3, 9), 4, (3,), {"stride": (2,), "pad": (1,), "dilate": (2,)}),  # 1-D
    ((1, 4, 4, 5, 4), 4, (2, 3, 2), {"num_group": 2, "stride": (1, 2, 1), "pad": (1, 0, 1)}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, num_filter, kernel, attrs", CONV_CASES)
def test_convolution_forward_and_gradients(shape, num_filter, kernel, attrs, dtype):
    attrs = dict(attrs)
    groups = attrs.get("num_group", 1)
    no_bias = attrs.get("no_bias", False)
    geo = dict(stride=attrs.get("stride"), pad=attrs.get("pad"), dilate=attrs.get("dilate"),
               groups=groups)
    x = RNG.uniform(-1, 1, shape)
    w = RNG.uniform(-1, 1, (num_filter, shape[1] // groups) + kernel)
    b = None if no_bias else RNG.uniform(-1, 1, (num_filter,))
    want = conv_ref(x, w, b, **geo)
    head = RNG.uniform(-1, 1, want.shape)
    arrays = [x, w] if no_bias else [x, w, b]
    got, grads = _run("Convolution", arrays, dtype, head, kernel=kernel, num_filter=num_filter,
                      **attrs)
    tol = _tol(dtype)
    np.testing.assert_allclose(got, want, **tol)
    np.testing.assert_allclose(grads[0], grad_of_input(lambda v: conv_ref(v, w, **geo), x, head),
                               **tol)
    np.testing.assert_allclose(grads[1], grad_of_param(lambda v: conv_ref(x, v, **geo), w, head),
                               **tol)
    if not no_bias:
        np.testing.assert_allclose(grads[2], head.sum(axis=tuple(i for i in range(head.ndim)
                                                                 if i != 1)), **tol)


def test_convolution_float16_follows_float32():
    x = RNG.uniform(-1, 1, (2, 2, 5, 5))
    w = RNG.uniform(-1, 1, (3, 2, 3, 3))
    b = RNG.uniform(-1, 1, (3,))
    y = mx.nd.Convolution(mx.nd.array(x, dtype=np.float16), mx.nd.array(w, dtype=np.float16),
                          mx.nd.array(b, dtype=np.float16), kernel=(3, 3), num_filter=3,
                          pad=(1, 1))
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.asnumpy(), conv_ref(x, w, b, pad=(1, 1)), rtol=2e-2, atol=2e-2)


def test_convolution_symbol_names_and_shape_inference():
    with mx.name.NameManager():
        s = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=4)
    assert s.list_arguments() == ["data", "convolution0_weight", "convolution0_bias"]
    arg, out, aux = s.infer_shape(data=(2, 3, 8, 8))
    assert arg == [(2, 3, 8, 8), (4, 3, 3, 3), (4,)]
    assert out == [(2, 4, 6, 6)] and aux == []
    # Unknown channels (0 in a symbol's shape): the weight's second axis stays unknown.
    arg, out, _ = s.infer_shape_partial(data=(2, 0, 8, 8))
    assert arg[1] == (4, 0, 3, 3) and out == [(2, 4, 6, 6)]
    with mx.name.NameManager():
        s = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(2,), num_filter=2, no_bias=True,
                               num_group=2, stride=(2,))
    assert s.list_arguments() == ["data", "convolution0_weight"]
    arg, out, _ = s.infer_shape(data=(1, 4, 9))
    assert arg == [(1, 4, 9), (2, 2, 2)] and out == [(1, 2, 4)]


def test_convolution_simple_bind_forward_backward():
    s = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=3, pad=(1, 1),
                           stride=(2, 1), name="conv")
    exe = s.simple_bind(mx.cpu(), data=(2, 2, 5, 4), type_dict={"data": np.float64})
    x = RNG.uniform(-1, 1, (2, 2, 5, 4))
    w = RNG.uniform(-1, 1, (3, 2, 3, 3))
    b = RNG.uniform(-1, 1, (3,))
    exe.arg_dict["conv_weight"][:] = w
    exe.arg_dict["conv_bias"][:] = b
    out = exe.forward(is_train=True, data=x)[0].asnumpy()
    geo = dict(stride=(2, 1), pad=(1, 1))
    np.testing.assert_allclose(out, conv_ref(x, w, b, **geo), rtol=1e-10, atol=1e-10)
    head = RNG.uniform(-1, 1, out.shape)
    exe.backward(mx.nd.array(head, dtype=np.float64))
    g = exe.grad_dict
    np.testing.assert_allclose(g["data"].asnumpy(),
                               grad_of_input(lambda v: conv_ref(v, w, **geo), x, head),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(g["conv_weight"].asnumpy(),
                               grad_of_param(lambda v: conv_ref(x, v, **geo), w, head),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(g["conv_bias"].asnumpy(), head.sum(axis=(0, 2, 3)), rtol=1e-10)


def _err(text):
    return re.escape(text)


def test_convolution_bad_inputs():
    x = mx.nd.zeros((2, 3, 8, 8))
    w = mx.nd.zeros((4, 3, 3, 3))
    b = mx.nd.zeros((4,))
    with pytest.raises(mx.MXNetError, match=_err(
            "Convolution: a 3-D kernel (3,3,3) needs 5-D data (N, C, D, H, W), got (2,3,8,8)")):
        mx.nd.Convolution(x, mx.nd.zeros((4, 3, 3, 3, 3)), b, kernel=(3, 3, 3), num_filter=4)
    with pytest.raises(mx.MXNetError, match="num_filter 4 is not divisible by num_group 3"):
        mx.nd.Convolution(x, w, b, kernel=(3, 3), num_filter=4, num_group=3)
    with pytest.raises(mx.MXNetError, match="3 channels .* not divisible by num_group 2"):
        mx.nd.Convolution(x, mx.nd.zeros((4, 1, 3, 3)), b, kernel=(3, 3), num_filter=4,
                          num_group=2)
    with pytest.raises(mx.MXNetError, match="spans 9 on spatial axis 0, more than the padded "
                                            "input's 8"):
        mx.nd.Convolution(x, mx.nd.zeros((4, 3, 5, 3)), b, kernel=(5, 3), dilate=(2, 1),
                          num_filter=4)
    with pytest.raises(mx.MXNetError, match=_err("data (0,3,8,8) has a zero-size dimension")):
        mx.nd.Convolution(mx.nd.zeros((0, 3, 8, 8)), w, b, kernel=(3, 3), num_filter=4)
    with pytest.raises(mx.MXNetError, match="layout NHWC is not supported"):
        mx.nd.Convolution(x, w, b, kernel=(3, 3), num_filter=4, layout="NHWC")
    with pytest.raises(mx.MXNetError, match=_err("layout NCW does not fit the 2-D kernel (3,3)")):
        mx.nd.Convolution(x, w, b, kernel=(3, 3), num_filter=4, layout="NCW")
    with pytest.raises(mx.MXNetError, match=_err("stride (1,) must have as many dimensions as "
                                                 "kernel (3,3)")):
        mx.nd.Convolution(x, w, b, kernel=(3, 3), num_filter=4, stride=(1,))
    with pytest.raises(mx.MXNetError, match="1-D, 2-D and 3-D kernels are supported"):
        mx.nd.Convolution(x, w, b, kernel=(1, 1, 1, 1), num_filter=4)
    with pytest.raises(mx.MXNetError, match=_err("'weight' has shape (4,2,3,3), expected "
                                                 "(4,3,3,3)")):
        mx.nd.Convolution(x, mx.nd.zeros((4, 2, 3, 3)), b, kernel=(3, 3), num_filter=4)
    with pytest.raises(mx.MXNetError, match="Convolution: dtype int32 is not supported"):
        mx.nd.Convolution(x.astype(np.int32), w.astype(np.int32), b.astype(np.int32),
                          kernel=(3, 3), num_filter=4)
    with pytest.raises(mx.MXNetError, match="'weight' has dtype float64 but 'data' has float32"):
        mx.nd.Convolution(x, w.astype(np.float64), b, kernel=(3, 3), num_filter=4)
    with pytest.raises(mx.MXNetError, match="Convolution: expected 2 input"):
        mx.nd.Convolution(x, w, b, kernel=(3, 3), num_filter=4, no_bias=True)


# ---- Deconvolution ----------------------------------------------------------------------

DECONV_CASES = [
    # data shape, num_filter, kernel, extra attributes
    ((2, 3, 4, 3), 2, (3, 3), {"stride": (2, 2), "pad": (1, 1), "adj": (1, 0)}),
    ((1, 4, 3, 4), 6, (3, 2), {"num_group": 2, "stride": (2, 3), "no_bias": False}),
    ((2, 2, 3, 3), 3, (2, 3), {"dilate": (2, 1), "pad": (1, 1), "no_bias": False}),
    ((2, 2, 3, 3), 2, (1, 1), {"stride": (3, 3), "adj": (2, 1)}),  # adj > pad: zero rows
    ((2, 3, 5), 2, (4,), {"stride": (2,), "pad": (1,)}),  # 1-D
    ((1, 2, 2, 3, 2), 4, (2, 2, 3), {"num_group": 2, "stride": (2, 1, 2), "pad": (0, 0, 1),
                                     "adj": (1, 0, 0)}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, num_filter, kernel, attrs", DECONV_CASES)
def test_deconvolution_forward_and_gradients(shape, num_filter, kernel, attrs, dtype):
    attrs = dict(attrs)
    attrs.setdefault("no_bias", True)  # MXNet's default; passed so mx.nd drops the bias input
    groups = attrs.get("num_group", 1)
    no_bias = attrs["no_bias"]
    geo = dict(stride=attrs.get("stride"), pad=attrs.get("pad"), dilate=attrs.get("dilate"),
               adj=attrs.get("adj"), groups=groups)
    x = RNG.uniform(-1, 1, shape)
    w = RNG.uniform(-1, 1, (shape[1], num_filter // groups) + kernel)
    b = None if no_bias else RNG.uniform(-1, 1, (num_filter,))
    want = deconv_ref(x, w, num_filter, b, **geo)
    head = RNG.uniform(-1, 1, want.shape)
    arrays = [x, w] if no_bias else [x, w, b]
    got, grads = _run("Deconvolution", arrays, dtype, head, kernel=kernel,
                      num_filter=num_filter, **attrs)
    tol = _tol(dtype)
    np.testing.assert_allclose(got, want, **tol)
    np.testing.assert_allclose(
        grads[0], grad_of_input(lambda v: deconv_ref(v, w, num_filter, **geo), x, head), **tol)
    np.testing.assert_allclose(
        grads[1], grad_of_param(lambda v: deconv_ref(x, v, num_filter, **geo), w, head), **tol)
    if not no_bias:
        np.testing.assert_allclose(grads[2], head.sum(axis=tuple(i for i in range(head.ndim)
                                                                 if i != 1)), **tol)


def test_deconvolution_target_shape_derives_pad_and_adj():
    x = RNG.uniform(-1, 1, (1, 2, 4, 4))
    w = RNG.uniform(-1, 1, (2, 3, 3, 3))
    # Unpadded, stride 2 and kernel 3 reach 9: a target of 8 needs pad 1 and adj 1, one of 7
    # pad 1 and adj 0 (MXNet's InferPad); pad and adj given alongside are ignored.
    for target, pad, adj in [((8, 8), (1, 1), (1, 1)), ((7, 9), (1, 0), (0, 0))]:
        y = mx.nd.Deconvolution(mx.nd.array(x), mx.nd.array(w), kernel=(3, 3), stride=(2, 2),
                                num_filter=3, target_shape=target, pad=(5, 5), no_bias=True)
        assert y.shape == (1, 3) + target
        np.testing.assert_allclose(y.asnumpy(), deconv_ref(x, w, 3, stride=(2, 2), pad=pad,
                                                           adj=adj), rtol=1e-4, atol=1e-4)
    with pytest.raises(mx.MXNetError, match=_err("target_shape (10,10) is too big")):
        mx.nd.Deconvolution(mx.nd.array(x), mx.nd.array(w), kernel=(3, 3), stride=(2, 2),
                            num_filter=3, target_shape=(10, 10), no_bias=True)


def test_deconvolution_default_has_no_bias():
    # MXNet 1.9.1's Deconvolution defaults to no_bias=True: (data, weight) alone.
    with mx.name.NameManager():
        s = mx.sym.Deconvolution(mx.sym.Variable("data"), kernel=(2, 2), num_filter=3,
                                 stride=(2, 2))
    assert s.list_arguments() == ["data", "deconvolution0_weight"]
    arg, out, _ = s.infer_shape(data=(2, 4, 3, 5))
    assert arg == [(2, 4, 3, 5), (4, 3, 2, 2)] and out == [(2, 3, 6, 10)]
    x = RNG.uniform(-1, 1, (1, 2, 3, 3))
    w = RNG.uniform(-1, 1, (2, 1, 2, 2))
    y = mx.nd.Deconvolution(mx.nd.array(x), mx.nd.array(w), kernel=(2, 2), num_filter=1)
    np.testing.assert_allclose(y.asnumpy(), deconv_ref(x, w, 1), rtol=1e-4, atol=1e-4)


def test_deconvolution_bad_inputs():
    x = mx.nd.zeros((1, 2, 4, 4))
    w = mx.nd.zeros((2, 3, 3, 3))
    with pytest.raises(mx.MXNetError, match=_err("adj (2,2) must be smaller than stride (2,2)")):
        mx.nd.Deconvolution(x, w, kernel=(3, 3), stride=(2, 2), adj=(2, 2), num_filter=3,
                            no_bias=True)
    with pytest.raises(mx.MXNetError, match="needs adj 1 on spatial axis 0, which must be "
                                            "smaller than the stride 1"):
        mx.nd.Deconvolution(x, w, kernel=(3, 3), num_filter=3, target_shape=(5, 6),
                            no_bias=True)
    with pytest.raises(mx.MXNetError, match="not supported with a 3-D kernel"):
        mx.nd.Deconvolution(mx.nd.zeros((1, 2, 3, 3, 3)), mx.nd.zeros((2, 1, 2, 2, 2)),
                            kernel=(2, 2, 2), dilate=(2, 2, 2), num_filter=1, no_bias=True)
    with pytest.raises(mx.MXNetError, match="the output would have size -4 on spatial axis 0"):
        mx.nd.Deconvolution(x, w, kernel=(3, 3), pad=(5, 0), num_filter=3, no_bias=True)
    with pytest.raises(mx.MXNetError, match=_err("'weight' has shape (2,3,3,3), expected "
                                                 "(2,1,3,3)")):
        mx.nd.Deconvolution(x, w, kernel=(3, 3), num_filter=2, num_group=2, no_bias=True)
    with pytest.raises(mx.MXNetError, match="must give every spatial size"):
        mx.nd.Deconvolution(x, w, kernel=(3, 3), num_filter=3, target_shape=(0, 6),
                            no_bias=True)


# ---- UpSampling -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_upsampling_nearest_single_input(dtype):
    x = RNG.uniform(-1, 1, (2, 3, 2, 3))
    want = nearest_ref([x], 3)
    head = RNG.uniform(-1, 1, want.shape)
    got, grads = _run("UpSampling", [x], dtype, head, scale=3, sample_type="nearest")
    np.testing.assert_allclose(got, want, **_tol(dtype))
    # The gradient sums each 3 x 3 block.
    block_sums = head.reshape(2, 3, 2, 3, 3, 3).sum(axis=(3, 5))
    np.testing.assert_allclose(grads[0], block_sums, **_tol(dtype))
    # MXNet's documented example.
    ones = mx.nd.ones((1, 1, 3, 3))
    np.testing.assert_array_equal(
        mx.nd.UpSampling(ones, scale=2, sample_type="nearest").asnumpy(), np.ones((1, 1, 6, 6)))


@pytest.mark.parametrize("mode", ["concat", "sum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_upsampling_nearest_several_inputs(mode, dtype):
    # Each input is scaled to the first's scaled size (4 x 6) by its own factor.
    c2 = 2 if mode == "sum" else 3
    xs = [RNG.uniform(-1, 1, (2, 2, 2, 3)), RNG.uniform(-1, 1, (2, c2, 4, 6)),
          RNG.uniform(-1, 1, (2, 2, 2, 3))]
    want = nearest_ref(xs, 2, mode)
    head = RNG.uniform(-1, 1, want.shape)
    got, grads = _run("UpSampling", xs, dtype, head, scale=2, sample_type="nearest",
                      multi_input_mode=mode)
    np.testing.assert_allclose(got, want, **_tol(dtype))
    for i, x in enumerate(xs):
        def f(v, i=i):
            parts = [np.zeros((v.shape[0],) + a.shape[1:]) for a in xs]
            parts[i] = v
            return nearest_ref(parts, 2, mode)
        np.testing.assert_allclose(grads[i], grad_of_input(f, x, head), **_tol(dtype))


def test_upsampling_nearest_symbol_gradient():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    s = mx.sym.UpSampling(a, b, scale=2, sample_type="nearest", multi_input_mode="concat")
    _, out, _ = s.infer_shape(a=(1, 2, 2, 2), b=(1, 1, 4, 4))
    assert out == [(1, 3, 4, 4)]
    exe = s.simple_bind(mx.cpu(), a=(1, 2, 2, 2), b=(1, 1, 4, 4),
                        type_dict={"a": np.float64, "b": np.float64})
    xa, xb = RNG.uniform(-1, 1, (1, 2, 2, 2)), RNG.uniform(-1, 1, (1, 1, 4, 4))
    out = exe.forward(is_train=True, a=xa, b=xb)[0].asnumpy()
    np.testing.assert_allclose(out, nearest_ref([xa, xb], 2), rtol=1e-12)
    head = RNG.uniform(-1, 1, out.shape)
    exe.backward(mx.nd.array(head, dtype=np.float64))
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(),
                               head[:, :2].reshape(1, 2, 2, 2, 2, 2).sum(axis=(3, 5)), rtol=1e-12)
    np.testing.assert_allclose(exe.grad_dict["b"].asnumpy(), head[:, 2:], rtol=1e-12)


@pytest.mark.parametrize("scale", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_upsampling_bilinear_is_a_grouped_deconvolution(scale, dtype):
    c = 3
    k = 2 * scale - scale % 2
    pad = (scale - 1 + 1) // 2  # ceil((scale - 1) / 2)
    x = RNG.uniform(-1, 1, (2, c, 3, 2))
    w = RNG.uniform(-1, 1, (c, 1, k, k))
    geo = dict(stride=(scale, scale), pad=(pad, pad), groups=c)
    want = deconv_ref(x, w, c, **geo)
    assert want.shape == (2, c, 3 * scale, 2 * scale)
    head = RNG.uniform(-1, 1, want.shape)
    got, grads = _run("UpSampling", [x, w], dtype, head, scale=scale, sample_type="bilinear",
                      num_filter=c)
    np.testing.assert_allclose(got, want, **_tol(dtype))
    np.testing.assert_allclose(grads[0], grad_of_input(lambda v: deconv_ref(v, w, c, **geo), x,
                                                       head), **_tol(dtype))
    np.testing.assert_allclose(grads[1], grad_of_param(lambda v: deconv_ref(x, v, c, **geo), w,
                                                       head), **_tol(dtype))


def test_upsampling_bilinear_documented_example():
    y = mx.nd.UpSampling(mx.nd.ones((1, 1, 3, 3)), mx.nd.ones((1, 1, 4, 4)), scale=2,
                         sample_type="bilinear", num_filter=1)
    row = np.array([1, 2, 2, 2, 2, 1], dtype=np.float32)
    np.testing.assert_array_equal(y.asnumpy()[0, 0], np.outer(row, row))


def test_upsampling_bad_inputs():
    x = mx.nd.zeros((1, 2, 3, 3))
    with pytest.raises(mx.MXNetError, match="bilinear needs num_filter equal to the data's "
                                            "channel count 2"):
        mx.nd.UpSampling(x, mx.nd.zeros((2, 1, 4, 4)), scale=2, sample_type="bilinear")
    with pytest.raises(mx.MXNetError, match=_err("'weight' has shape (2,1,3,3), expected "
                                                 "(2,1,4,4)")):
        mx.nd.UpSampling(x, mx.nd.zeros((2, 1, 3, 3)), scale=2, sample_type="bilinear",
                         num_filter=2)
    with pytest.raises(mx.MXNetError, match="bilinear takes 2 inputs"):
        mx.nd.UpSampling(x, scale=2, sample_type="bilinear", num_filter=2)
    with pytest.raises(mx.MXNetError, match="cannot be scaled to the output size"):
        mx.nd.UpSampling(x, mx.nd.zeros((1, 2, 4, 4)), scale=2, sample_type="nearest")
    with pytest.raises(mx.MXNetError, match="same channel count"):
        mx.nd.UpSampling(x, mx.nd.zeros((1, 3, 3, 3)), scale=2, sample_type="nearest",
                         multi_input_mode="sum")
    with pytest.raises(mx.MXNetError, match="takes 4-D inputs"):
        mx.nd.UpSampling(mx.nd.zeros((2, 3, 3)), scale=2, sample_type="nearest")
    with pytest.raises(mx.MXNetError, match="sample_type 'linear' is not one of"):
        mx.nd.UpSampling(x, scale=2, sample_type="linear")


def test_a_script_ending_on_queued_convolutions_exits_cleanly():
    # The queued operations run at exit; before oneDNN's own static objects are destroyed
    # (onednn.cc waits for them from an exit handler). It crashed with SIGSEGV before.
    import subprocess
    import sys
    script = ("import nanomx as mx\n"
              "y = mx.nd.random.uniform(shape=(1, 32, 128, 128))\n"
              "w = mx.nd.random.uniform(shape=(32, 32, 3, 3))\n"
              "for _ in range(30):\n"
              "    y = mx.nd.Convolution(y, w, kernel=(3, 3), num_filter=32, no_bias=True,\n"
              "                          pad=(1, 1))\n")
    import os
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(mx.__file__)))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
