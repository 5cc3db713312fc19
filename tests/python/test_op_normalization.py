"""The normalization operators against numpy references written here: BatchNorm, LayerNorm,
InstanceNorm, GroupNorm and L2Normalization, forward and every gradient, in float32 (oneDNN for
BatchNorm and last-axis LayerNorm) and float64 (plain loops), MXNet 1.9.1's semantics (the
hidden outputs, BatchNorm's inverse standard deviation as 'var', GroupNorm's per-group gamma),
BatchNorm's moving statistics eagerly and in an executor, and the errors."""
import numpy as np
import pytest

import nanomx as mx

BN_EPS = float(np.float32(1e-3))  # MXNet's default, a float literal
F32 = dict(rtol=1e-4, atol=1e-5)
F64 = dict(rtol=1e-9, atol=1e-10)


def _nd(a, dtype):
    return mx.nd.array(np.asarray(a), dtype=dtype)


def _numeric_grads(f, arrays, w, h=1e-6):
    """Central differences of sum(w * f(*arrays)) for each float64 array in `arrays`."""
    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        flat, gflat = a.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + h
            plus = (f(*arrays) * w).sum()
            flat[i] = old - h
            minus = (f(*arrays) * w).sum()
            flat[i] = old
            gflat[i] = (plus - minus) / (2 * h)
        grads.append(g)
    return grads


def _run(op, arrays, dtype, w, train=True, **attrs):
    """op on `arrays` (each given a gradient) under record(train_mode), backward with head w:
    (output, [gradients])."""
    nds = [_nd(a, dtype) for a in arrays]
    for a in nds:
        a.attach_grad()
    with mx.autograd.record(train_mode=train):
        y = op(*nds, **attrs)
    y.backward(_nd(w, dtype), train_mode=train)
    return y.asnumpy(), [a.grad.asnumpy() for a in nds]


# ---- BatchNorm ----------------------------------------------------------------------------


# momentum is a float32 attribute in MXNet: 0.9 is 0.899999976...
def _bn_ref(x, gamma, beta, mm, mv, eps=BN_EPS, momentum=float(np.float32(0.9)), axis=1,
            train=True, fix_gamma=True, use_global_stats=False):
    """(output, mean, var output = 1/sqrt(variance + eps), new moving mean, new moving var)."""
    ax = axis % x.ndim
    red = tuple(i for i in range(x.ndim) if i != ax)
    shape = [1] * x.ndim
    shape[ax] = x.shape[ax]
    if train and not use_global_stats:
        mean, var = x.mean(axis=red), x.var(axis=red)
        new_mm, new_mv = mm * momentum + mean * (1 - momentum), mv * momentum + var * (1 - momentum)
    else:
        mean, var, new_mm, new_mv = mm, mv, mm, mv
    g = np.ones_like(gamma) if fix_gamma else gamma
    inv = 1 / np.sqrt(var + eps)
    y = (x - mean.reshape(shape)) * (inv * g).reshape(shape) + beta.reshape(shape)
    return y, mean, inv, new_mm, new_mv


def _bn_inputs(shape, axis=1, seed=0):
    rng = np.random.RandomState(seed)
    c = shape[axis]
    return (rng.uniform(-2, 2, shape), rng.uniform(0.5, 1.5, c), rng.uniform(-1, 1, c),
            rng.uniform(-0.5, 0.5, c), rng.uniform(0.5, 2, c))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axis", [((4, 3, 5), 1), ((2, 3, 2, 3), 1), ((5, 4), -1),
                                        ((3, 2, 4), -1), ((6, 2), 1), ((1, 3, 4, 2), 1)])
def test_batch_norm_training_forward_and_moving_stats(dtype, shape, axis):
    x, gamma, beta, mm, mv = _bn_inputs(shape, axis)
    MM, MV = _nd(mm, dtype), _nd(mv, dtype)
    with mx.autograd.record():
        out = mx.nd.BatchNorm(_nd(x, dtype), _nd(gamma, dtype), _nd(beta, dtype), MM, MV,
                              axis=axis, fix_gamma=False, output_mean_var=True)
    y, mean, inv, new_mm, new_mv = _bn_ref(x, gamma, beta, mm, mv, axis=axis, fix_gamma=False)
    tol = F32 if dtype == np.float32 else F64
    assert isinstance(out, list) and len(out) == 3
    assert out[0].dtype == dtype and out[1].shape == (shape[axis],)
    np.testing.assert_allclose(out[0].asnumpy(), y, **tol)
    np.testing.assert_allclose(out[1].asnumpy(), mean, **tol)
    np.testing.assert_allclose(out[2].asnumpy(), inv, **tol)
    # Updated in the forward call (nanomx follows MXNet's cuDNN path here).
    np.testing.assert_allclose(MM.asnumpy(), new_mm, **tol)
    np.testing.assert_allclose(MV.asnumpy(), new_mv, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_inference_uses_moving_stats(dtype):
    x, gamma, beta, mm, mv = _bn_inputs((3, 4, 2))
    MM, MV = _nd(mm, dtype), _nd(mv, dtype)
    out = mx.nd.BatchNorm(_nd(x, dtype), _nd(gamma, dtype), _nd(beta, dtype), MM, MV,
                          eps=1e-4, fix_gamma=False, output_mean_var=True)
    y, _, inv, _, _ = _bn_ref(x, gamma, beta, mm, mv, eps=1e-4, train=False, fix_gamma=False)
    tol = F32 if dtype == np.float32 else F64
    np.testing.assert_allclose(out[0].asnumpy(), y, **tol)
    np.testing.assert_allclose(out[1].asnumpy(), mm, **tol)
    np.testing.assert_allclose(out[2].asnumpy(), inv, **tol)
    np.testing.assert_allclose(MM.asnumpy(), mm, **tol)  # untouched
    np.testing.assert_allclose(MV.asnumpy(), mv, **tol)
    # One visible output unless output_mean_var.
    single = mx.nd.BatchNorm(_nd(x, dtype), _nd(gamma, dtype), _nd(beta, dtype), MM, MV)
    assert isinstance(single, mx.nd.NDArray) and single.shape == (3, 4, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_fix_gamma_and_use_global_stats(dtype):
    x, gamma, beta, mm, mv = _bn_inputs((4, 3, 3))
    tol = F32 if dtype == np.float32 else F64
    with mx.autograd.record():  # fix_gamma (the default): gamma is used as 1
        y = mx.nd.BatchNorm(_nd(x, dtype), _nd(gamma, dtype), _nd(beta, dtype), _nd(mm, dtype),
                            _nd(mv, dtype))
    np.testing.assert_allclose(y.asnumpy(), _bn_ref(x, gamma, beta, mm, mv)[0], **tol)
    MM, MV = _nd(mm, dtype), _nd(mv, dtype)
    with mx.autograd.record():  # use_global_stats: the moving statistics, left as they are
        y = mx.nd.BatchNorm(_nd(x, dtype), _nd(gamma, dtype), _nd(beta, dtype), MM, MV,
                            fix_gamma=False, use_global_stats=True)
    want = _bn_ref(x, gamma, beta, mm, mv, fix_gamma=False, use_global_stats=True)[0]
    np.testing.assert_allclose(y.asnumpy(), want, **tol)
    np.testing.assert_allclose(MM.asnumpy(), mm, **tol)
    np.testing.assert_allclose(MV.asnumpy(), mv, **tol)


def test_batch_norm_moving_stats_after_three_eager_steps():
    rng = np.random.RandomState(4)
    mm, mv = np.zeros(3), np.ones(3)
    MM, MV = mx.nd.zeros((3,)), mx.nd.ones((3,))
    gamma, beta = mx.nd.ones((3,)), mx.nd.zeros((3,))
    for _ in range(3):
        x = rng.uniform(-1, 3, (5, 3, 2))
        with mx.autograd.record():
            mx.nd.BatchNorm(_nd(x, np.float32), gamma, beta, MM, MV, momentum=0.8)
        red = (0, 2)
        mm = mm * 0.8 + x.mean(axis=red) * 0.2
        mv = mv * 0.8 + x.var(axis=red) * 0.2
    np.testing.assert_allclose(MM.asnumpy(), mm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(MV.asnumpy(), mv, rtol=1e-5, atol=1e-6)


def test_batch_norm_symbol_aux_states_in_an_executor():
    with mx.name.NameManager():
        net = mx.sym.BatchNorm(mx.sym.Variable("data"))
    assert net.list_auxiliary_states() == ["batchnorm0_moving_mean", "batchnorm0_moving_var"]
    assert net.list_arguments() == ["data", "batchnorm0_gamma", "batchnorm0_beta"]
    assert net.list_outputs() == ["batchnorm0_output"]
    exe = net.simple_bind(mx.cpu(), data=(4, 2, 3))
    exe.arg_dict["batchnorm0_gamma"][:] = 1
    exe.aux_dict["batchnorm0_moving_var"][:] = 1
    rng = np.random.RandomState(5)
    mm, mv = np.zeros(2), np.ones(2)
    for _ in range(3):
        x = rng.uniform(-1, 2, (4, 2, 3)).astype(np.float32)
        out = exe.forward(is_train=True, data=x)[0].asnumpy()
        np.testing.assert_allclose(out, _bn_ref(x.astype(np.float64), np.ones(2), np.zeros(2),
                                                mm, mv)[0], **F32)
        mm = mm * 0.9 + x.mean(axis=(0, 2)) * 0.1
        mv = mv * 0.9 + x.var(axis=(0, 2)) * 0.1
    np.testing.assert_allclose(exe.aux_dict["batchnorm0_moving_mean"].asnumpy(), mm, **F32)
    np.testing.assert_allclose(exe.aux_dict["batchnorm0_moving_var"].asnumpy(), mv, **F32)
    # Inference normalises with them and leaves them alone.
    out = exe.forward(is_train=False, data=x)[0].asnumpy()
    np.testing.assert_allclose(out, _bn_ref(x.astype(np.float64), np.ones(2), np.zeros(2), mm,
                                            mv, train=False)[0], **F32)
    np.testing.assert_allclose(exe.aux_dict["batchnorm0_moving_mean"].asnumpy(), mm, **F32)


@pytest.mark.parametrize("shape,axis,fix_gamma,global_stats",
                         [((3, 2, 4), 1, False, False), ((4, 3), -1, False, False),
                          ((2, 3, 2, 2), 1, True, False), ((3, 2, 3), 1, False, True),
                          ((1, 2, 3), 1, False, False)])
def test_batch_norm_gradients(shape, axis, fix_gamma, global_stats):
    x, gamma, beta, mm, mv = _bn_inputs(shape, axis, seed=7)
    w = np.random.RandomState(8).uniform(-1, 1, shape)
    attrs = dict(axis=axis, fix_gamma=fix_gamma, use_global_stats=global_stats)

    def op(X, G, B, **kw):
        return mx.nd.BatchNorm(X, G, B, _nd(mm, X.dtype), _nd(mv, X.dtype), **kw)

    def ref(x_, g_, b_):
        return _bn_ref(x_, g_, b_, mm, mv, axis=axis, fix_gamma=fix_gamma,
                       use_global_stats=global_stats)[0]

    y, grads = _run(op, [x, gamma, beta], np.float64, w, **attrs)
    np.testing.assert_allclose(y, ref(x, gamma, beta), **F64)
    want = _numeric_grads(ref, [x.copy(), gamma.copy(), beta.copy()], w)
    if fix_gamma:
        want[1] = np.zeros_like(gamma)  # MXNet: gamma's gradient is 0 with fix_gamma
    for got, expect in zip(grads, want):
        np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-7)
    # float32 (oneDNN) agrees with the checked float64 gradients.
    _, grads32 = _run(op, [x, gamma, beta], np.float32, w, **attrs)
    for got, expect in zip(grads32, grads):
        np.testing.assert_allclose(got, expect, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_inference_gradient_uses_fixed_statistics(dtype):
    x, gamma, beta, mm, mv = _bn_inputs((3, 2, 2), seed=9)
    w = np.random.RandomState(10).uniform(-1, 1, x.shape)

    def op(X, G, B):
        return mx.nd.BatchNorm(X, G, B, _nd(mm, X.dtype), _nd(mv, X.dtype), fix_gamma=False)

    _, (dx, dg, db) = _run(op, [x, gamma, beta], dtype, w, train=False)
    inv = (1 / np.sqrt(mv + BN_EPS)).reshape(1, 2, 1)
    tol = F32 if dtype == np.float32 else F64
    np.testing.assert_allclose(dx, w * inv * gamma.reshape(1, 2, 1), **tol)
    np.testing.assert_allclose(dg, (w * (x - mm.reshape(1, 2, 1)) * inv).sum(axis=(0, 2)), **tol)
    np.testing.assert_allclose(db, w.sum(axis=(0, 2)), **tol)


def test_batch_norm_float16_data_takes_float32_parameters():
    x, gamma, beta, mm, mv = _bn_inputs((4, 3, 2))
    MM, MV = _nd(mm, np.float32), _nd(mv, np.float32)
    with mx.autograd.record():
        out = mx.nd.BatchNorm(_nd(x, np.float16), _nd(gamma, np.float32), _nd(beta, np.float32),
                              MM, MV, fix_gamma=False, output_mean_var=True)
    y, mean, inv, new_mm, _ = _bn_ref(x.astype(np.float16).astype(np.float64), gamma, beta, mm,
                                      mv, fix_gamma=False)
    assert out[0].dtype == np.float16 and out[1].dtype == np.float32
    np.testing.assert_allclose(out[0].asnumpy(), y, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(out[2].asnumpy(), inv, rtol=1e-4)
    np.testing.assert_allclose(MM.asnumpy(), new_mm, rtol=1e-4, atol=1e-5)


def test_batch_norm_errors_leave_the_moving_stats_alone():
    x = mx.nd.ones((2, 3, 4))
    g3, MM, MV = mx.nd.ones((3,)), mx.nd.zeros((3,)), mx.nd.ones((3,))
    with pytest.raises(mx.MXNetError, match=r"BatchNorm: axis 3 is out of range.*\(2, ?3, ?4\)"):
        with mx.autograd.record():
            mx.nd.BatchNorm(x, g3, g3, MM, MV, axis=3)
    with pytest.raises(mx.MXNetError,
                       match=r"BatchNorm: 'gamma' has shape \(4,?\), expected \(3,?\)"):
        with mx.autograd.record():
            mx.nd.BatchNorm(x, mx.nd.ones((4,)), g3, MM, MV)
    with pytest.raises(mx.MXNetError, match=r"BatchNorm: 'moving_var' has shape"):
        mx.nd.BatchNorm(x, g3, g3, MM, mx.nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match=r"BatchNorm: 'data' has dtype int32"):
        mx.nd.BatchNorm(mx.nd.ones((2, 3), dtype=np.int32), g3, g3, MM, MV)
    with pytest.raises(mx.MXNetError, match=r"BatchNorm: 'gamma' has dtype float64, expected "
                                             r"float32"):
        mx.nd.BatchNorm(x, mx.nd.ones((3,), dtype=np.float64), g3, MM, MV)
    np.testing.assert_array_equal(MM.asnumpy(), np.zeros(3))
    np.testing.assert_array_equal(MV.asnumpy(), np.ones(3))


# ---- LayerNorm ----------------------------------------------------------------------------


def _ln_ref(x, gamma, beta, axis=-1, eps=1e-5):
    ax = axis % x.ndim
    shape = [1] * x.ndim
    shape[ax] = x.shape[ax]
    mean = x.mean(axis=ax, keepdims=True)
    std = np.sqrt(x.var(axis=ax, keepdims=True) + eps)
    return (x - mean) / std * gamma.reshape(shape) + beta.reshape(shape), mean, std


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axis", [((3, 5), -1), ((2, 3, 4), -1), ((2, 3, 4), 1),
                                        ((4, 3), 0), ((7,), 0)])
def test_layer_norm_forward_and_gradients(dtype, shape, axis):
    rng = np.random.RandomState(11)
    c = shape[axis]
    x, gamma, beta = rng.uniform(-2, 2, shape), rng.uniform(0.5, 1.5, c), rng.uniform(-1, 1, c)
    w = rng.uniform(-1, 1, shape)
    out = mx.nd.LayerNorm(_nd(x, dtype), _nd(gamma, dtype), _nd(beta, dtype), axis=axis,
                          output_mean_var=True)
    y, mean, std = _ln_ref(x, gamma, beta, axis)
    tol = F32 if dtype == np.float32 else F64
    assert len(out) == 3 and out[1].shape == mean.shape and out[2].shape == std.shape
    for got, want in zip(out, (y, mean, std)):
        np.testing.assert_allclose(got.asnumpy(), want, **tol)
    _, grads = _run(mx.nd.LayerNorm, [x, gamma, beta], dtype, w, axis=axis)
    want = _numeric_grads(lambda *a: _ln_ref(*a, axis=axis)[0], [x.copy(), gamma.copy(),
                                                                 beta.copy()], w)
    gtol = dict(rtol=1e-5, atol=1e-7) if dtype == np.float64 else dict(rtol=1e-3, atol=1e-4)
    for got, expect in zip(grads, want):
        np.testing.assert_allclose(got, expect, **gtol)


def test_layer_norm_defaults_and_errors():
    x = mx.nd.ones((2, 3))
    assert isinstance(mx.nd.LayerNorm(x, mx.nd.ones((3,)), mx.nd.zeros((3,))), mx.nd.NDArray)
    with pytest.raises(mx.MXNetError, match=r"LayerNorm: axis 2 is out of range"):
        mx.nd.LayerNorm(x, mx.nd.ones((3,)), mx.nd.zeros((3,)), axis=2)
    with pytest.raises(mx.MXNetError, match=r"LayerNorm: 'beta' has shape \(2,?\), expected"):
        mx.nd.LayerNorm(x, mx.nd.ones((3,)), mx.nd.zeros((2,)))
    with pytest.raises(mx.MXNetError, match=r"LayerNorm: 'gamma' has dtype float64 but 'data' has "
                                             r"float32"):
        mx.nd.LayerNorm(x, mx.nd.ones((3,), dtype=np.float64), mx.nd.zeros((3,)))


# ---- InstanceNorm and GroupNorm -----------------------------------------------------------


def _group_ref(x, gamma, beta, groups, eps, per_group):
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    mean = xg.mean(axis=2, keepdims=True)
    var = xg.var(axis=2, keepdims=True)
    xhat = ((xg - mean) / np.sqrt(var + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if per_group:  # GroupNorm: one gamma and beta per group
        g = np.repeat(gamma, c // groups).reshape(shape)
        b = np.repeat(beta, c // groups).reshape(shape)
    else:
        g, b = gamma.reshape(shape), beta.reshape(shape)
    return xhat * g + b, mean.reshape(n, groups), var.reshape(n, groups)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 2, 2, 3)])
def test_instance_norm_forward_and_gradients(dtype, shape):
    rng = np.random.RandomState(12)
    c = shape[1]
    x, gamma, beta = rng.uniform(-2, 2, shape), rng.uniform(0.5, 1.5, c), rng.uniform(-1, 1, c)
    w = rng.uniform(-1, 1, shape)

    def ref(x_, g_, b_):
        return _group_ref(x_, g_, b_, c, 1e-3, per_group=False)[0]

    y, grads = _run(mx.nd.InstanceNorm, [x, gamma, beta], dtype, w, eps=1e-3)
    tol = F32 if dtype == np.float32 else F64
    np.testing.assert_allclose(y, ref(x, gamma, beta), **tol)
    want = _numeric_grads(ref, [x.copy(), gamma.copy(), beta.copy()], w)
    gtol = dict(rtol=1e-5, atol=1e-7) if dtype == np.float64 else dict(rtol=1e-3, atol=1e-4)
    for got, expect in zip(grads, want):
        np.testing.assert_allclose(got, expect, **gtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,groups", [((2, 4, 3), 2), ((1, 6, 2, 2), 3), ((3, 2, 2), 1)])
def test_group_norm_forward_and_gradients(dtype, shape, groups):
    rng = np.random.RandomState(13)
    x = rng.uniform(-2, 2, shape)
    gamma, beta = rng.uniform(0.5, 1.5, groups), rng.uniform(-1, 1, groups)
    w = rng.uniform(-1, 1, shape)
    out = mx.nd.GroupNorm(_nd(x, dtype), _nd(gamma, dtype), _nd(beta, dtype), num_groups=groups,
                          output_mean_var=True)
    y, mean, var = _group_ref(x, gamma, beta, groups, 1e-5, per_group=True)
    tol = F32 if dtype == np.float32 else F64
    np.testing.assert_allclose(out[0].asnumpy(), y, **tol)
    np.testing.assert_allclose(out[1].asnumpy(), mean, **tol)
    np.testing.assert_allclose(out[2].asnumpy(), np.sqrt(var + 1e-5), **tol)  # std

    def ref(x_, g_, b_):
        return _group_ref(x_, g_, b_, groups, 1e-5, per_group=True)[0]

    _, grads = _run(mx.nd.GroupNorm, [x, gamma, beta], dtype, w, num_groups=groups)
    want = _numeric_grads(ref, [x.copy(), gamma.copy(), beta.copy()], w)
    gtol = dict(rtol=1e-5, atol=1e-7) if dtype == np.float64 else dict(rtol=1e-3, atol=1e-4)
    for got, expect in zip(grads, want):
        np.testing.assert_allclose(got, expect, **gtol)


def test_instance_and_group_norm_errors():
    with pytest.raises(mx.MXNetError, match=r"InstanceNorm: 'data' must have at least 3"):
        mx.nd.InstanceNorm(mx.nd.ones((2, 3)), mx.nd.ones((3,)), mx.nd.zeros((3,)))
    with pytest.raises(mx.MXNetError, match=r"InstanceNorm: 'gamma' has shape \(2,?\)"):
        mx.nd.InstanceNorm(mx.nd.ones((2, 3, 4)), mx.nd.ones((2,)), mx.nd.zeros((3,)))
    with pytest.raises(mx.MXNetError, match=r"GroupNorm: the 3 channels .* num_groups=2"):
        mx.nd.GroupNorm(mx.nd.ones((2, 3, 4)), mx.nd.ones((2,)), mx.nd.zeros((2,)),
                        num_groups=2)
    with pytest.raises(mx.MXNetError, match=r"GroupNorm: 'gamma' has shape \(4,?\), expected "
                                             r"\(2,?\) \(one value per group"):
        mx.nd.GroupNorm(mx.nd.ones((2, 4, 3)), mx.nd.ones((4,)), mx.nd.zeros((2,)),
                        num_groups=2)
    with pytest.raises(mx.MXNetError, match=r"GroupNorm: num_groups must be at least 1"):
        mx.nd.GroupNorm(mx.nd.ones((2, 4, 3)), mx.nd.ones((1,)), mx.nd.zeros((1,)),
                        num_groups=0)
    with pytest.raises(mx.MXNetError, match=r"GroupNorm: 'data' must have at least 3"):
        mx.nd.GroupNorm(mx.nd.ones((2, 4)), mx.nd.ones((1,)), mx.nd.zeros((1,)))


# ---- L2Normalization ----------------------------------------------------------------------


def _l2_ref(x, mode, eps=1e-10):
    if mode == "instance":
        axes = tuple(range(1, x.ndim))
    elif mode == "channel":
        axes = (1,)
    else:
        axes = tuple(range(2, x.ndim))
    return x / np.sqrt((x * x).sum(axis=axes, keepdims=True) + eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode,shape", [("instance", (3, 4)), ("instance", (2, 3, 2)),
                                        ("channel", (2, 3, 2, 2)), ("spatial", (2, 3, 4)),
                                        ("instance", (5,))])
def test_l2_normalization_forward_and_gradient(dtype, mode, shape):
    rng = np.random.RandomState(14)
    x, w = rng.uniform(-2, 2, shape), rng.uniform(-1, 1, shape)
    y, (dx,) = _run(mx.nd.L2Normalization, [x], dtype, w, mode=mode)
    tol = F32 if dtype == np.float32 else F64
    np.testing.assert_allclose(y, _l2_ref(x, mode), **tol)
    (want,) = _numeric_grads(lambda a: _l2_ref(a, mode), [x.copy()], w)
    gtol = dict(rtol=1e-5, atol=1e-7) if dtype == np.float64 else dict(rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(dx, want, **gtol)


def test_l2_normalization_errors():
    with pytest.raises(mx.MXNetError, match=r"L2Normalization: mode 'rows' is not one of"):
        mx.nd.L2Normalization(mx.nd.ones((2, 3)), mode="rows")
    with pytest.raises(mx.MXNetError,
                       match=r"L2Normalization: 'data' must have at least 3 dimensions in "
                             r"channel mode"):
        mx.nd.L2Normalization(mx.nd.ones((2, 3)), mode="channel")


def test_symbol_shapes_are_inferred_from_data():
    data = mx.sym.Variable("data")
    bn = mx.sym.BatchNorm(data, axis=-1, name="bn")
    arg, out, aux = bn.infer_shape(data=(2, 5, 3))
    assert arg == [(2, 5, 3), (3,), (3,)] and out == [(2, 5, 3)] and aux == [(3,), (3,)]
    gn = mx.sym.GroupNorm(data, num_groups=2, name="gn")
    arg, out, _ = gn.infer_shape(data=(2, 4, 3))
    assert arg == [(2, 4, 3), (2,), (2,)] and out == [(2, 4, 3)]
    ln = mx.sym.LayerNorm(data, axis=1, name="ln", output_mean_var=True)
    assert ln.list_outputs() == ["ln_output", "ln_mean", "ln_std"]
    _, out, _ = ln.infer_shape(data=(2, 4, 3))
    assert out == [(2, 4, 3), (2, 1, 3), (2, 1, 3)]
    l2 = mx.sym.L2Normalization(data, mode="channel", name="l2")
    assert l2.list_outputs() == ["l2_output"]
