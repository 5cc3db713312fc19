"""Pooling and LRN (and their gradients) against naive numpy loops written from MXNet 1.9.1's
CPU semantics (src/operator/nn/pool.h, pooling.cc, lrn-inl.h): every pool_type x convention x
count_include_pad, global pooling, 1-D/2-D/3-D, channel-last layouts, float32/float64, the
symbolic executor, and the errors."""
import itertools

import numpy as np
import pytest

import nanomx as mx

# --- references -------------------------------------------------------------------------------


def _out_extent(x, k, s, p, convention):
    if convention == "valid":
        return (x + 2 * p - k) // s + 1
    if convention == "full":
        return -(-(x + 2 * p - k) // s) + 1
    return -(-(x + 2 * p) // s)  # same


def _geometry(shape, kernel, stride, pad, convention, global_pool):
    spatial = shape[2:]
    n = len(spatial)
    if global_pool:
        return tuple(spatial), (1,) * n, (0,) * n, (1,) * n
    stride = stride or (1,) * n
    pad = pad or (0,) * n
    out = tuple(_out_extent(x, k, s, p, convention)
                for x, k, s, p in zip(spatial, kernel, stride, pad))
    return tuple(kernel), tuple(stride), tuple(pad), out


def _bounds(o, x, k, s, p):
    """pool.h along one axis: input elements [lo, hi) and the padded size (avg's divisor with
    count_include_pad: the window cut at the right pad's edge, not at k)."""
    start = o * s - p
    padded_end = min(start + k, x + p)
    return max(start, 0), min(start + k, x), padded_end - start


def _windows(shape, kernel, stride, pad, out):
    for o in itertools.product(*[range(e) for e in out]):
        b = [_bounds(oi, x, k, s, p) for oi, x, k, s, p in zip(o, shape[2:], kernel, stride, pad)]
        region = tuple(slice(lo, max(lo, hi)) for lo, hi, _ in b)
        count = int(np.prod([max(hi - lo, 0) for lo, hi, _ in b]))
        padded = int(np.prod([size for _, _, size in b]))
        yield o, region, count, padded


def ref_pool(x, kernel=None, stride=None, pad=None, pool_type="max", convention="valid",
             count_include_pad=True, p_value=1, global_pool=False, channel_last=False):
    """Forward on an (N, C, ...) array (or channel-last), in float64; a max window without
    input elements gives the lowest value of x's dtype (MXNet's MinValue)."""
    lowest = np.finfo(np.asarray(x).dtype).min
    x = np.asarray(x, dtype=np.float64)
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    kernel, stride, pad, out = _geometry(x.shape, kernel, stride, pad, convention, global_pool)
    y = np.zeros(x.shape[:2] + out)
    axes = tuple(range(2, x.ndim))
    for o, region, count, padded in _windows(x.shape, kernel, stride, pad, out):
        r = x[(slice(None), slice(None)) + region]
        at = (slice(None), slice(None)) + o
        if pool_type == "max":
            y[at] = r.max(axis=axes) if count else lowest
        elif count == 0:
            y[at] = 0
        elif pool_type == "avg":
            y[at] = r.sum(axis=axes) / (padded if count_include_pad else count)
        elif pool_type == "sum":
            y[at] = r.sum(axis=axes)
        else:  # lp: no absolute value (MXNet's pool_utils.h)
            s = (r ** p_value).sum(axis=axes)
            y[at] = {1: s, 2: np.sqrt(s), 3: np.cbrt(s)}[p_value]
    return np.moveaxis(y, 1, -1) if channel_last else y


def ref_pool_grad(x, y, dy, kernel=None, stride=None, pad=None, pool_type="max",
                  convention="valid", count_include_pad=True, p_value=1, global_pool=False):
    """_backward_Pooling on channel-first arrays: max sends dy to the first maximum of each
    window (C order), the others dy times d(output)/d(input)."""
    x, y, dy = (np.asarray(a, dtype=np.float64) for a in (x, y, dy))
    kernel, stride, pad, out = _geometry(x.shape, kernel, stride, pad, convention, global_pool)
    dx = np.zeros_like(x)
    n, c = x.shape[:2]
    for o, region, count, padded in _windows(x.shape, kernel, stride, pad, out):
        if count == 0:
            continue
        full = (slice(None), slice(None)) + region
        r = x[full]
        yo = y[(slice(None), slice(None)) + o]
        go = dy[(slice(None), slice(None)) + o]
        if pool_type == "max":
            flat = r.reshape(n, c, -1)
            for i, j in itertools.product(range(n), range(c)):
                hits = np.nonzero(flat[i, j] == yo[i, j])[0]
                if hits.size:
                    idx = np.unravel_index(hits[0], r.shape[2:])
                    where = tuple(sl.start + k for sl, k in zip(region, idx))
                    dx[(i, j) + where] += go[i, j]
            continue
        g = go.reshape(go.shape + (1,) * len(region))
        yb = yo.reshape(g.shape)
        if pool_type == "avg":
            d = g / (padded if count_include_pad else count) * np.ones_like(r)
        elif pool_type == "sum" or p_value == 1:
            d = g * np.ones_like(r)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                d = np.where(yb == 0, 0.0, g * (r / yb) ** (p_value - 1))
        dx[full] += d
    return dx


def ref_lrn(x, nsize, alpha=1e-4, beta=0.75, knorm=2.0):
    x = np.asarray(x, dtype=np.float64)
    c = x.shape[1]
    norm = np.zeros_like(x)
    for ch in range(c):
        lo, hi = max(ch - nsize // 2, 0), min(ch + nsize // 2 + 1, c)
        norm[:, ch] = (x[:, lo:hi] ** 2).sum(axis=1)
    norm = knorm + alpha / nsize * norm
    return x * norm ** -beta, norm


# --- helpers ----------------------------------------------------------------------------------

TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


def _attrs(kernel, stride, pad, pool_type, convention, count_include_pad, p_value):
    a = dict(kernel=kernel, pool_type=pool_type, pooling_convention=convention)
    if stride:
        a["stride"] = stride
    if pad:
        a["pad"] = pad
    if pool_type == "avg":
        a["count_include_pad"] = count_include_pad
    if pool_type == "lp":
        a["p_value"] = p_value
    return a


def _run(x, dtype, w=None, **attrs):
    """Forward and, with `w`, the gradient of sum(w * y) through autograd."""
    data = mx.nd.array(x, dtype=dtype)
    if w is None:
        return mx.nd.Pooling(data, **attrs).asnumpy(), None
    data.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(data, **attrs)
    y.backward(mx.nd.array(w, dtype=dtype))
    return y.asnumpy(), data.grad.asnumpy()


# (shape, kernel, stride, pad): 1-D, 2-D and 3-D, stride > kernel, batch 1, odd extents.
CASES = [
    ((2, 3, 9), (3,), (2,), (1,)),
    ((2, 3, 7, 6), (3, 2), (2, 2), (1, 0)),
    ((1, 2, 8, 9), (2, 2), (3, 4), None),
    ((2, 2, 5, 4, 5), (2, 3, 2), (2, 1, 2), (1, 1, 0)),
    ((1, 1, 6, 6), (3, 3), None, (2, 1)),
]
TYPES = [("max", True, 1), ("avg", True, 1), ("avg", False, 1), ("sum", True, 1), ("lp", True, 1),
         ("lp", True, 2), ("lp", True, 3)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("convention", ["valid", "full"])
@pytest.mark.parametrize("case", CASES)
def test_pooling_matches_numpy(case, convention, dtype):
    shape, kernel, stride, pad = case
    rng = np.random.RandomState(len(shape) + sum(kernel))
    signed = rng.uniform(-1, 1, shape).astype(dtype)
    for pool_type, include, p in TYPES:
        # lp on positive data: its gradient (x / y)^(p - 1) is ill-conditioned where a window's
        # signed sum nears 0 (test_lp_pooling_keeps_signs covers signs).
        x = np.abs(signed) + dtype(0.05) if pool_type == "lp" else signed
        attrs = _attrs(kernel, stride, pad, pool_type, convention, include, p)
        geo = dict(kernel=kernel, stride=stride, pad=pad, pool_type=pool_type,
                   convention=convention, count_include_pad=include, p_value=p)
        want = ref_pool(x, **geo)
        w = rng.uniform(-1, 1, want.shape)
        got, grad = _run(x, dtype, w, **attrs)
        assert got.dtype == dtype and got.shape == want.shape, (attrs, got.shape)
        np.testing.assert_allclose(got, want, err_msg=str(attrs), **TOL[dtype])
        # The gradient from the outputs as computed (max picks the window's first maximum).
        dx = ref_pool_grad(x, got, w.astype(dtype), **geo)
        np.testing.assert_allclose(grad, dx, err_msg=str(attrs), rtol=1e-4, atol=1e-5)


def test_lp_pooling_keeps_signs():
    # MXNet's pool_utils.h raises x itself to the power p, without an absolute value.
    x = np.array([[[-1.0, 2.0, -3.0, 0.5]]])
    cases = [(1, [1.0, -2.5]), (2, [5 ** 0.5, 9.25 ** 0.5]),
             (3, [7 ** (1 / 3), -(26.875 ** (1 / 3))])]
    for p, want in cases:
        got = mx.nd.Pooling(mx.nd.array(x, dtype=np.float64), kernel=(2,), stride=(2,),
                            pool_type="lp", p_value=p).asnumpy()
        np.testing.assert_allclose(got[0, 0], want, rtol=1e-12)


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_same_convention_1d(pool_type):
    x = np.random.RandomState(0).uniform(-1, 1, (2, 3, 10)).astype(np.float32)
    for kernel, stride in [(3, 2), (2, 3), (4, 4)]:
        attrs = dict(kernel=(kernel,), stride=(stride,), pool_type=pool_type,
                     pooling_convention="same")
        want = ref_pool(x, (kernel,), (stride,), None, pool_type, "same")
        assert want.shape[2] == -(-10 // stride)
        w = np.ones(want.shape)
        got, grad = _run(x, np.float32, w, **attrs)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            grad, ref_pool_grad(x, got, w, (kernel,), (stride,), None, pool_type, "same"),
            rtol=1e-5, atol=1e-6)


def test_full_convention_windows_past_the_edge():
    # x = 5, k = 1, s = 3: 'full' gives 3 windows, the last one starting at 6, past the input:
    # pool.h's max gives MinValue there, avg and sum 0, and no gradient flows.
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)
    attrs = dict(kernel=(1,), stride=(3,), pooling_convention="full")
    got, grad = _run(x, np.float32, np.ones((1, 1, 3)), **attrs)
    np.testing.assert_array_equal(got[0, 0], [1, 4, np.finfo(np.float32).min])
    np.testing.assert_array_equal(grad[0, 0], [1, 0, 0, 1, 0])
    for pool_type in ["avg", "sum"]:
        got = mx.nd.Pooling(mx.nd.array(x), pool_type=pool_type, **attrs).asnumpy()
        np.testing.assert_array_equal(got[0, 0], [1, 4, 0])
    # A 'full' window cut at the padded edge divides by what is left of it (count_include_pad).
    x = np.ones((1, 1, 6), dtype=np.float32)
    got = mx.nd.Pooling(mx.nd.array(x), kernel=(4,), stride=(3,), pad=(1,), pool_type="avg",
                        pooling_convention="full").asnumpy()
    np.testing.assert_allclose(got[0, 0], [3 / 4, 4 / 4, 1 / 2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pool_type,p", [("max", 1), ("avg", 1), ("sum", 1), ("lp", 2)])
@pytest.mark.parametrize("shape", [(2, 3, 7), (2, 3, 5, 4), (1, 2, 3, 4, 2)])
def test_global_pooling(shape, pool_type, p, dtype):
    x = np.random.RandomState(1).uniform(-1, 1, shape).astype(dtype)
    attrs = dict(global_pool=True, pool_type=pool_type)
    if pool_type == "lp":
        attrs["p_value"] = p
    want = ref_pool(x, pool_type=pool_type, p_value=p, global_pool=True)
    assert want.shape == shape[:2] + (1,) * (len(shape) - 2)
    w = np.random.RandomState(2).uniform(-1, 1, want.shape)
    got, grad = _run(x, dtype, w, **attrs)
    np.testing.assert_allclose(got, want, **TOL[dtype])
    dx = ref_pool_grad(x, got, w.astype(dtype), pool_type=pool_type, p_value=p, global_pool=True)
    np.testing.assert_allclose(grad, dx, rtol=1e-5, atol=1e-6)
    # The kernel, stride and pad are ignored (a kernel of the right rank may be given).
    more = mx.nd.Pooling(mx.nd.array(x, dtype=dtype), kernel=(1,) * (len(shape) - 2),
                         pad=(0,) * (len(shape) - 2), **attrs).asnumpy()
    np.testing.assert_array_equal(more, got)


@pytest.mark.parametrize("layout,shape,kernel,stride,pad", [
    ("NWC", (2, 9, 3), (3,), (2,), (1,)),
    ("NHWC", (2, 7, 6, 3), (3, 2), (2, 2), (1, 1)),
    ("NDHWC", (1, 4, 5, 3, 2), (2, 2, 2), (1, 2, 1), (1, 0, 1)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_channel_last_layouts(layout, shape, kernel, stride, pad, dtype):
    x = np.random.RandomState(3).uniform(-1, 1, shape).astype(dtype)
    for pool_type, include, p in [("max", True, 1), ("avg", False, 1), ("lp", True, 2)]:
        attrs = _attrs(kernel, stride, pad, pool_type, "full", include, p)
        geo = dict(kernel=kernel, stride=stride, pad=pad, pool_type=pool_type, convention="full",
                   count_include_pad=include, p_value=p)
        want = ref_pool(x, channel_last=True, **geo)
        w = np.random.RandomState(4).uniform(-1, 1, want.shape)
        got, grad = _run(x, dtype, w, layout=layout, **attrs)
        np.testing.assert_allclose(got, want, err_msg=str(attrs), **TOL[dtype])
        first = ref_pool_grad(np.moveaxis(x, -1, 1), np.moveaxis(got, -1, 1),
                              np.moveaxis(w.astype(dtype), -1, 1), **geo)
        np.testing.assert_allclose(grad, np.moveaxis(first, 1, -1), rtol=1e-4, atol=1e-5)
    got = mx.nd.Pooling(mx.nd.array(x, dtype=dtype), global_pool=True, pool_type="avg",
                        layout=layout).asnumpy()
    np.testing.assert_allclose(got, x.mean(axis=tuple(range(1, x.ndim - 1)), keepdims=True),
                               rtol=1e-5)


def _central_difference(f, x, w, h=1e-6):
    num = np.zeros_like(x)
    flat, out = x.reshape(-1), num.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        up = (f(x) * w).sum()
        flat[i] = old - h
        down = (f(x) * w).sum()
        flat[i] = old
        out[i] = (up - down) / (2 * h)
    return num


@pytest.mark.parametrize("attrs", [
    dict(kernel=(2, 3), stride=(1, 2), pad=(1, 1), pool_type="lp", p_value=3),
    dict(kernel=(2, 3), stride=(2, 2), pad=(1, 1), pool_type="lp", p_value=2,
         pooling_convention="full"),
    dict(kernel=(3, 2), stride=(2, 1), pad=(1, 1), pool_type="avg", count_include_pad=False,
         pooling_convention="full"),
    dict(kernel=(2, 2), stride=(2, 2), pool_type="max"),
])
def test_pooling_gradient_central_differences(attrs):
    rng = np.random.RandomState(5)
    # Distinct positive values: max pooling is differentiable away from ties, lp away from 0.
    x = rng.permutation(2 * 2 * 5 * 4).reshape(2, 2, 5, 4) / 10.0 + 0.1
    out = mx.nd.Pooling(mx.nd.array(x, dtype=np.float64), **attrs)
    w = rng.uniform(-1, 1, out.shape)
    _, grad = _run(x, np.float64, w, **attrs)

    def f(v):
        return mx.nd.Pooling(mx.nd.array(v, dtype=np.float64), **attrs).asnumpy()

    np.testing.assert_allclose(grad, _central_difference(f, x.copy(), w), rtol=1e-5, atol=1e-7)


def test_pooling_symbol_executor():
    data = mx.sym.var("data")
    sym = mx.sym.Pooling(data, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max",
                         name="pool")
    assert sym.list_arguments() == ["data"]
    assert sym.list_outputs() == ["pool_output"]
    _, out_shapes, _ = sym.infer_shape(data=(2, 3, 7, 8))
    assert out_shapes == [(2, 3, 4, 4)]
    for dtype in [np.float32, np.float64]:
        exe = sym.simple_bind(mx.cpu(), type_dict={"data": dtype}, data=(2, 3, 7, 8))
        x = np.random.RandomState(6).uniform(-1, 1, (2, 3, 7, 8)).astype(dtype)
        y = exe.forward(is_train=True, data=x)[0].asnumpy()
        np.testing.assert_allclose(y, ref_pool(x, (3, 3), (2, 2), (1, 1)), **TOL[dtype])
        w = np.random.RandomState(7).uniform(-1, 1, y.shape).astype(dtype)
        exe.backward(mx.nd.array(w, dtype=dtype))
        np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(),
                                   ref_pool_grad(x, y, w, (3, 3), (2, 2), (1, 1)), rtol=1e-5,
                                   atol=1e-6)


def test_pooling_float16():
    x = np.random.RandomState(8).uniform(-1, 1, (2, 3, 6, 5)).astype(np.float16)
    for pool_type in ["max", "avg", "sum"]:
        got = mx.nd.Pooling(mx.nd.array(x, dtype=np.float16), kernel=(2, 3), stride=(2, 1),
                            pad=(1, 1), pool_type=pool_type).asnumpy()
        assert got.dtype == np.float16
        want = ref_pool(x, (2, 3), (2, 1), (1, 1), pool_type)
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


# --- LRN --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nsize,alpha,beta,knorm", [(3, 1e-4, 0.75, 2.0), (5, 0.5, 0.6, 1.5),
                                                     (1, 2.0, 1.0, 1.0)])
def test_lrn_forward_and_gradient(nsize, alpha, beta, knorm, dtype):
    rng = np.random.RandomState(nsize)
    x = rng.uniform(-2, 2, (2, 6, 3, 4)).astype(dtype)
    attrs = dict(nsize=nsize, alpha=alpha, beta=beta, knorm=knorm)
    want, _ = ref_lrn(x, **attrs)
    data = mx.nd.array(x, dtype=dtype)
    data.attach_grad()
    w = rng.uniform(-1, 1, x.shape)
    with mx.autograd.record():
        y = mx.nd.LRN(data, **attrs)
    assert isinstance(y, mx.nd.NDArray) and y.shape == x.shape and y.dtype == dtype
    y.backward(mx.nd.array(w, dtype=dtype))
    np.testing.assert_allclose(y.asnumpy(), want, **TOL[dtype])

    def f(v):
        return ref_lrn(v, **attrs)[0]

    num = _central_difference(f, x.astype(np.float64), w)
    np.testing.assert_allclose(data.grad.asnumpy(), num, rtol=1e-4 if dtype == np.float32 else 1e-6,
                               atol=1e-5 if dtype == np.float32 else 1e-8)


def test_lrn_symbol_hides_tmp_norm():
    sym = mx.sym.LRN(mx.sym.var("data"), nsize=3, name="lrn")
    assert sym.list_outputs() == ["lrn_output"]
    x = np.random.RandomState(9).uniform(-1, 1, (1, 4, 2, 3))
    exe = sym.simple_bind(mx.cpu(), type_dict={"data": np.float64}, data=x.shape)
    y = exe.forward(is_train=True, data=x)
    assert len(y) == 1
    np.testing.assert_allclose(y[0].asnumpy(), ref_lrn(x, 3)[0], rtol=1e-12)
    w = np.random.RandomState(10).uniform(-1, 1, x.shape)
    exe.backward(mx.nd.array(w, dtype=np.float64))
    num = _central_difference(lambda v: ref_lrn(v, 3)[0], x.copy(), w)
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), num, rtol=1e-6, atol=1e-9)


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,attrs,match", [
    ((1, 1, 4, 4), dict(), r"Pooling: 'kernel' is required unless global_pool=True"),
    ((1, 1, 4, 4), dict(kernel=(5, 2)), r"kernel \(5,2\) exceeds 'data' \(1,1,4,4\)"),
    ((1, 1, 4, 4), dict(kernel=(7, 2), pad=(1, 0), pool_type="sum"), r"exceeds 'data'"),
    ((1, 1, 4), dict(kernel=(2, 2)), r"2-D pooling \(kernel \(2,2\)\) takes 4-D data"),
    ((1, 1, 4, 4), dict(kernel=(2,), layout="NCHW"), r"layout 'NCHW' is for 2-D pooling"),
    ((1, 1, 4, 4), dict(kernel=(2, 2), layout="HWCN"), r"layout 'HWCN' is not one of NCW"),
    ((1, 1, 4, 4), dict(global_pool=True, layout="NCW"), r"1-D pooling \(the layout\)"),
    ((1, 1, 4, 4), dict(kernel=(2, 2), pad=(2, 0)), r"'pad' \(2,0\) must be smaller than "
                                                     r"'kernel' \(2,2\).*max pooling"),
    ((1, 1, 4, 4), dict(kernel=(2, 2), pad=(0, 3), pool_type="avg"), r"avg pooling \(axis 1\)"),
    ((1, 1, 4, 4), dict(kernel=(2, 2), pooling_convention="same"),
     r"'same' supports 1-D pooling only \(3-D data\)"),
    ((1, 1, 4), dict(kernel=(2,), pad=(1,), pooling_convention="same"), r"'same' takes no 'pad'"),
    ((1, 1, 4, 4), dict(kernel=(2, 2), pool_type="lp"), r"pool_type='lp' requires 'p_value'"),
    ((1, 1, 4, 4), dict(kernel=(2, 2), pool_type="lp", p_value=4), r"p_value 4 is not supported"),
    ((1, 1, 4, 4), dict(kernel=(2, 2), pool_type="min"), r"pool_type 'min' is not one of max"),
    ((1, 1, 4, 4), dict(kernel=(2, 2), pooling_convention="ceil"), r"'ceil' is not one of valid"),
    ((1, 1, 4, 4), dict(kernel=(2, 2), stride=(1,)), r"'stride' has 1 entries but 'kernel' has 2"),
    ((1, 1, 4, 4), dict(kernel=(2, 2), stride=(1, 0)), r"'stride' entries must be at least 1"),
    ((1, 1, 4, 4), dict(kernel=(2, 0)), r"'kernel' entries must be at least 1"),
    ((1, 1, 4, 4), dict(kernel=(1, 1, 1, 1)), r"'kernel' has 4 entries"),
    ((4, 4), dict(kernel=(2,)), r"'data' must be 3-D .* got \(4,4\)"),
    ((1, 1, 2, 2, 2, 2), dict(global_pool=True), r"'data' must be 3-D"),
])
def test_pooling_errors(shape, attrs, match):
    with pytest.raises(mx.MXNetError, match=match):
        mx.nd.Pooling(mx.nd.zeros(shape), **attrs)


def test_pooling_errors_dtype_and_symbol():
    with pytest.raises(mx.MXNetError, match="Pooling: 'data' has dtype int32; it takes float16"):
        mx.nd.Pooling(mx.nd.zeros((1, 1, 4, 4), dtype=np.int32), kernel=(2, 2))
    sym = mx.sym.Pooling(mx.sym.var("data"), kernel=(3, 3))
    with pytest.raises(mx.MXNetError, match=r"kernel \(3,3\) exceeds 'data' \(1,1,2,5\)"):
        sym.infer_shape(data=(1, 1, 2, 5))


def test_lrn_errors():
    x = mx.nd.zeros((1, 4, 2, 2))
    with pytest.raises(mx.MXNetError, match=r"LRN: 'nsize' must be an odd number .* got 4"):
        mx.nd.LRN(x, nsize=4)
    with pytest.raises(mx.MXNetError, match=r"LRN: required attribute 'nsize' is missing"):
        mx.nd.LRN(x)
    with pytest.raises(mx.MXNetError, match=r"LRN: 'data' must be 4-D .* got \(4,2,2\)"):
        mx.nd.LRN(mx.nd.zeros((4, 2, 2)), nsize=3)
    with pytest.raises(mx.MXNetError, match="LRN: 'data' has dtype int32"):
        mx.nd.LRN(mx.nd.zeros((1, 4, 2, 2), dtype=np.int32), nsize=3)


def test_pooling_accepts_extra_default_pad_entries():
    # MXNet reads the first entries of a longer tuple (its test_valid_max_pooling_pad_type_same
    # passes pad=(0,0,0) with a 1-D kernel); extra entries that are not the default are refused.
    x = mx.nd.array(np.random.RandomState(0).rand(1, 1, 10))
    y = mx.nd.Pooling(x, kernel=2, stride=2, pad=(0, 0, 0), pool_type="max",
                      pooling_convention="same")
    assert y.shape == (1, 1, 5)
    with pytest.raises(mx.MXNetError, match="'pad' has 3 entries but 'kernel' has 1"):
        mx.nd.Pooling(x, kernel=2, stride=2, pad=(0, 1, 0), pool_type="max")

