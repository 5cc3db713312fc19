"""Dropout, LeakyReLU, Embedding, SoftmaxActivation, softmax_cross_entropy, MakeLoss, make_loss
and BlockGrad / stop_gradient against numpy references written here (and float64 central
differences), in float32 and float64, forward and every gradient, with MXNet 1.9.1's
semantics (its quirks included) and the errors for bad input."""
import math

import numpy as np
import pytest

import nanomx as mx

DTYPES = [np.float32, np.float64]
# MXNet's SELU constants are C++ floats.
SELU_ALPHA = float(np.float32(1.6732632423543772848170429916717))
SELU_LAMBDA = float(np.float32(1.0507009873554804934193349852946))
_erf = np.vectorize(math.erf)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)


def _away_from_zero(rng, shape, dtype, low=0.1, high=2.0):
    """Values in +-[low, high]: no element near a kink."""
    return (rng.uniform(low, high, shape) * rng.choice([-1, 1], shape)).astype(dtype)


def _grads(f, arrays, head):
    """f on the arrays under autograd.record(), backward with `head`: the output and each
    array's gradient, as numpy."""
    xs = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        y = f(*xs)
    y.backward(mx.nd.array(head, dtype=head.dtype))
    return y.asnumpy(), [x.grad.asnumpy() for x in xs]


def _numeric(f, x, w, h=1e-6):
    """d sum(w * f(x)) / dx by float64 central differences."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        g[i] = ((f(up) - f(down)) * w).sum() / (2 * h)
    return g


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---- Dropout --------------------------------------------------------------------------------


def test_dropout_is_the_identity_outside_training_and_draws_nothing():
    x = np.random.RandomState(0).uniform(-1, 1, (3, 4)).astype(np.float32)
    y = mx.nd.Dropout(mx.nd.array(x), p=0.5)
    assert isinstance(y, mx.nd.NDArray)  # the mask is hidden
    np.testing.assert_array_equal(y.asnumpy(), x)
    with mx.autograd.record(train_mode=False):
        y = mx.nd.Dropout(mx.nd.array(x), p=0.5)
    np.testing.assert_array_equal(y.asnumpy(), x)
    mx.random.seed(3)
    first = mx.nd.random.uniform(shape=(4,)).asnumpy()
    mx.random.seed(3)
    mx.nd.Dropout(mx.nd.array(x), p=0.5).asnumpy()
    np.testing.assert_array_equal(mx.nd.random.uniform(shape=(4,)).asnumpy(), first)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_training_drops_p_and_scales_by_one_over_keep(dtype):
    mx.random.seed(11)
    p = 0.3
    x = mx.nd.ones((100000,), dtype=dtype)
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=p)
    y = y.asnumpy()
    assert y.dtype == dtype
    assert abs((y == 0).mean() - p) < 0.01
    np.testing.assert_allclose(y[y != 0], 1 / (1 - p), rtol=1e-6)
    assert abs(y.mean() - 1) < 0.02  # the expected value is kept


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_gradient_is_the_head_gradient_times_the_mask(dtype):
    rng = np.random.RandomState(1)
    x = rng.uniform(1, 2, (6, 7)).astype(dtype)
    w = rng.uniform(-1, 1, (6, 7)).astype(dtype)
    mx.random.seed(5)
    y, (gx,) = _grads(lambda a: mx.nd.Dropout(a, p=0.4), [x], w)
    mask = y / x
    assert ((mask == 0) | np.isclose(mask, 1 / 0.6, rtol=1e-6)).all()
    assert (mask == 0).any() and (mask != 0).any()
    np.testing.assert_allclose(gx, w * mask, rtol=1e-6)


def test_dropout_masks_repeat_after_the_same_seed():
    x = mx.nd.ones((50,))

    def draw(seed):
        mx.random.seed(seed)
        with mx.autograd.train_mode():
            return mx.nd.Dropout(x, p=0.5).asnumpy()

    a, b, c = draw(7), draw(7), draw(8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_dropout_mode_always_drops_in_inference_and_p0_is_the_identity():
    mx.random.seed(2)
    x = mx.nd.ones((1000,))
    y = mx.nd.Dropout(x, p=0.5, mode="always").asnumpy()
    assert 0.4 < (y == 0).mean() < 0.6
    assert set(np.unique(y)) == {0.0, 2.0}
    with mx.autograd.record():
        z = mx.nd.Dropout(x, p=0)
    np.testing.assert_array_equal(z.asnumpy(), np.ones(1000))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axes,shared", [((1,), (1,)), ((-1, 0), (0, 2))])
def test_dropout_axes_share_one_mask_value_along_them(dtype, axes, shared):
    rng = np.random.RandomState(2)
    x = rng.uniform(1, 2, (4, 5, 6)).astype(dtype)
    w = rng.uniform(-1, 1, x.shape).astype(dtype)
    mx.random.seed(9)
    y, (gx,) = _grads(lambda a: mx.nd.Dropout(a, p=0.5, axes=axes), [x], w)
    mask = y / x
    first = mask[tuple(slice(0, 1) if i in shared else slice(None) for i in range(3))]
    np.testing.assert_allclose(mask, np.broadcast_to(first, mask.shape), rtol=1e-6)
    assert (mask == 0).any() and (mask != 0).any()
    np.testing.assert_allclose(gx, w * mask, rtol=1e-6)


def test_dropout_symbol_hides_the_mask_and_follows_is_train():
    sym = mx.sym.Dropout(mx.sym.Variable("data"), p=0.5, name="drop")
    assert sym.list_outputs() == ["drop_output"]
    exe = sym.simple_bind(mx.cpu(), data=(8, 8))
    rng = np.random.RandomState(0)
    x = rng.uniform(1, 2, (8, 8)).astype(np.float32)
    np.testing.assert_array_equal(exe.forward(is_train=False, data=x)[0].asnumpy(), x)
    mx.random.seed(4)
    mask = exe.forward(is_train=True, data=x)[0].asnumpy() / x
    assert (mask == 0).any() and (mask != 0).any()
    w = rng.uniform(-1, 1, (8, 8)).astype(np.float32)
    exe.backward(mx.nd.array(w))
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), w * mask, rtol=1e-6)


def test_dropout_p_one_drops_everything_with_mxnets_nan():
    # MXNet's mask for p = 1 is 0 * (1 / 0): NaN everywhere in training (its test_dropout
    # asserts it), the identity outside.
    x = mx.nd.ones((3, 4))
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=1)
    assert np.isnan(y.asnumpy()).all()
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=1).asnumpy(), np.ones((3, 4)))


def test_dropout_errors():
    x = mx.nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match=r"Dropout: p = 1.5 is out of range.*\[0, 1\]"):
        mx.nd.Dropout(x, p=1.5)
    with pytest.raises(mx.MXNetError, match=r"Dropout: p = -0.5 is out of range"):
        mx.nd.Dropout(x, p=-0.5)
    with pytest.raises(mx.MXNetError, match="mode 'sometimes' is not one of training, always"):
        mx.nd.Dropout(x, mode="sometimes")
    with pytest.raises(mx.MXNetError, match=r"axis 2 in 'axes' is out of range.*\(2, ?3\)"):
        mx.nd.Dropout(x, axes=(2,))
    with pytest.raises(mx.MXNetError, match="Dropout: 'data' has dtype int32"):
        mx.nd.Dropout(mx.nd.ones((2,), dtype=np.int32))


# ---- LeakyReLU ------------------------------------------------------------------------------


def _leaky_reference(act, x, slope):
    """MXNet's forward and its derivative (elu, leaky, selu from the output; gelu from x)."""
    if act == "leaky":
        y = np.where(x > 0, x, slope * x)
        return y, np.where(y > 0, 1.0, slope)
    if act == "elu":
        y = np.where(x > 0, x, slope * np.expm1(x))
        return y, np.where(y > 0, 1.0, y + slope)
    if act == "selu":
        y = SELU_LAMBDA * np.where(x > 0, x, SELU_ALPHA * np.expm1(x))
        # MXNet's selu_grad: lambda * (alpha + y) below 0 (d/dx is y + lambda * alpha).
        return y, SELU_LAMBDA * np.where(y > 0, 1.0, SELU_ALPHA + y)
    y = 0.5 * x * (1 + _erf(x / np.sqrt(2)))
    return y, 0.5 * (1 + _erf(x / np.sqrt(2))) + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ["leaky", "elu", "selu", "gelu"])
def test_leaky_relu_forward_and_gradient(dtype, act):
    rng = np.random.RandomState(3)
    x = _away_from_zero(rng, (3, 4, 2), dtype)
    w = rng.uniform(-1, 1, x.shape).astype(dtype)
    slope = float(np.float32(0.3))  # MXNet's attributes are floats
    y, (gx,) = _grads(lambda a: mx.nd.LeakyReLU(a, act_type=act, slope=0.3), [x], w)
    ref, deriv = _leaky_reference(act, x.astype(np.float64), slope)
    np.testing.assert_allclose(y, ref, **_tol(dtype))
    np.testing.assert_allclose(gx, w * deriv, **_tol(dtype))


@pytest.mark.parametrize("act", ["leaky", "elu", "gelu"])
def test_leaky_relu_gradient_matches_central_differences(act):
    rng = np.random.RandomState(4)
    x = _away_from_zero(rng, (2, 5), np.float64)
    w = rng.uniform(-1, 1, x.shape)
    _, (gx,) = _grads(lambda a: mx.nd.LeakyReLU(a, act_type=act, slope=0.3), [x], w)

    def f(a):
        return mx.nd.LeakyReLU(mx.nd.array(a, dtype=np.float64), act_type=act,
                               slope=0.3).asnumpy()

    np.testing.assert_allclose(gx, _numeric(f, x, w), rtol=1e-6, atol=1e-8)


def test_leaky_relu_default_is_leaky_with_slope_quarter():
    x = np.array([-2.0, -0.5, 0.0, 1.5], dtype=np.float32)
    np.testing.assert_allclose(mx.nd.LeakyReLU(mx.nd.array(x)).asnumpy(),
                               [-0.5, -0.125, 0.0, 1.5])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gamma_shape", [(3,), (1,)])
def test_prelu_gradients_for_data_and_gamma(dtype, gamma_shape):
    rng = np.random.RandomState(5)
    x = _away_from_zero(rng, (2, 3, 4), dtype)
    gamma = rng.uniform(0.1, 0.5, gamma_shape).astype(dtype)
    w = rng.uniform(-1, 1, x.shape).astype(dtype)
    y, (gx, gg) = _grads(lambda a, g: mx.nd.LeakyReLU(a, g, act_type="prelu"), [x, gamma], w)
    g = gamma.astype(np.float64).reshape(1, -1, 1)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    np.testing.assert_allclose(y, np.where(x64 > 0, x64, g * x64), **_tol(dtype))
    np.testing.assert_allclose(gx, w64 * np.where(x64 > 0, 1.0, g), **_tol(dtype))
    dgamma = (w64 * np.where(x64 > 0, 0.0, x64)).sum(axis=(0, 2))
    np.testing.assert_allclose(gg, dgamma.sum(keepdims=True) if gamma_shape == (1,) else dgamma,
                               **_tol(dtype))


def test_prelu_symbol_infers_gamma_from_the_channels():
    sym = mx.sym.LeakyReLU(mx.sym.Variable("data"), act_type="prelu", name="act")
    assert sym.list_arguments() == ["data", "act_gamma"]
    args, outs, _ = sym.infer_shape(data=(2, 5, 3))
    assert [tuple(s) for s in args] == [(2, 5, 3), (5,)]
    assert [tuple(s) for s in outs] == [(2, 5, 3)]
    assert mx.sym.LeakyReLU(mx.sym.Variable("data"), act_type="elu").list_arguments() == ["data"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_rrelu_draws_slopes_in_training_and_uses_their_mean_otherwise(dtype):
    rng = np.random.RandomState(6)
    x = _away_from_zero(rng, (50, 4), dtype)
    w = rng.uniform(-1, 1, x.shape).astype(dtype)
    lo, hi = 0.1, 0.4
    # MXNet lists rrelu's slopes as a second output.
    y, mask = mx.nd.LeakyReLU(mx.nd.array(x, dtype=dtype), act_type="rrelu", lower_bound=lo,
                              upper_bound=hi)
    mean = float((np.float32(lo) + np.float32(hi)) / np.float32(2))
    np.testing.assert_allclose(mask.asnumpy(), np.full(x.shape, mean), **_tol(dtype))
    np.testing.assert_allclose(y.asnumpy(), np.where(x > 0, x, mean * x), **_tol(dtype))

    mx.random.seed(6)
    xa = mx.nd.array(x, dtype=dtype)
    xa.attach_grad()
    with mx.autograd.record():
        y, mask = mx.nd.LeakyReLU(xa, act_type="rrelu", lower_bound=lo, upper_bound=hi)
    y.backward(mx.nd.array(w, dtype=dtype))
    m = mask.asnumpy().astype(np.float64)
    assert lo - 1e-7 <= m.min() and m.max() < hi + 1e-7 and m.std() > 0.05
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y.asnumpy(), np.where(x64 > 0, x64, m * x64), **_tol(dtype))
    np.testing.assert_allclose(xa.grad.asnumpy(), w * np.where(x64 > 0, 1.0, m), **_tol(dtype))


def test_leaky_relu_errors():
    x = mx.nd.ones((2, 3, 5))
    with pytest.raises(mx.MXNetError,
                       match="act_type 'relu6' is not one of leaky, prelu, rrelu, elu, selu, gelu"):
        mx.nd.LeakyReLU(x, act_type="relu6")
    with pytest.raises(mx.MXNetError, match=r"'gamma' of shape \(4,?\) cannot be broadcast to "
                                            r"'data' of shape \(2, ?3, ?5\)"):
        mx.nd.LeakyReLU(x, mx.nd.ones((4,)), act_type="prelu")
    with pytest.raises(mx.MXNetError, match="lower_bound .* is greater than upper_bound"):
        mx.nd.LeakyReLU(x, act_type="rrelu", lower_bound=0.5, upper_bound=0.1)
    with pytest.raises(mx.MXNetError, match="LeakyReLU: 'data' has dtype int32"):
        mx.nd.LeakyReLU(mx.nd.ones((2,), dtype=np.int32))


# ---- Embedding ------------------------------------------------------------------------------


def test_embedding_picks_rows_and_clips_indices():
    weight = np.arange(20, dtype=np.float32).reshape(4, 5)
    idx = np.array([[1, 3], [0, 2]], dtype=np.float32)
    y = mx.nd.Embedding(mx.nd.array(idx), mx.nd.array(weight), input_dim=4, output_dim=5)
    assert y.shape == (2, 2, 5)
    np.testing.assert_array_equal(y.asnumpy(), weight[idx.astype(int)])
    # Truncated toward zero, then clipped to [0, input_dim - 1], whatever the index dtype.
    odd = np.array([-1, 5, 2.7, 3.2, -0.5], dtype=np.float64)
    y = mx.nd.Embedding(mx.nd.array(odd, dtype=np.float64), mx.nd.array(weight), input_dim=4,
                        output_dim=5)
    np.testing.assert_array_equal(y.asnumpy(), weight[[0, 3, 2, 3, 0]])
    ints = np.array([3, 9, -4, 1], dtype=np.int32)
    y = mx.nd.Embedding(mx.nd.array(ints, dtype=np.int32), mx.nd.array(weight), input_dim=4,
                        output_dim=5)
    np.testing.assert_array_equal(y.asnumpy(), weight[[3, 3, 0, 1]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_weight_gradient_adds_repeated_rows(dtype):
    rng = np.random.RandomState(7)
    idx = np.array([[0, 2], [2, 3], [2, 7]], dtype=np.float32)  # 7 clips to 3
    weight = rng.uniform(-1, 1, (4, 3)).astype(dtype)
    w = rng.uniform(-1, 1, (3, 2, 3)).astype(dtype)
    wa = mx.nd.array(weight, dtype=dtype)
    wa.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Embedding(mx.nd.array(idx), wa, input_dim=4, output_dim=3)
    assert y.dtype == dtype
    y.backward(mx.nd.array(w, dtype=dtype))
    rows = np.clip(idx.astype(int), 0, 3).ravel()
    np.testing.assert_array_equal(y.asnumpy(), weight[rows].reshape(3, 2, 3))
    want = np.zeros((4, 3))
    np.add.at(want, rows, w.reshape(-1, 3).astype(np.float64))
    np.testing.assert_allclose(wa.grad.asnumpy(), want, **_tol(dtype))


def test_embedding_symbol_infers_the_weight_and_trains_it():
    sym = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=10, output_dim=4, name="emb")
    assert sym.list_arguments() == ["data", "emb_weight"]
    args, outs, _ = sym.infer_shape(data=(2, 3))
    assert [tuple(s) for s in args] == [(2, 3), (10, 4)]
    assert [tuple(s) for s in outs] == [(2, 3, 4)]
    exe = sym.simple_bind(mx.cpu(), data=(2, 3))
    rng = np.random.RandomState(8)
    idx = np.array([[1, 1, 9], [0, 1, 4]], dtype=np.float32)
    weight = rng.uniform(-1, 1, (10, 4)).astype(np.float32)
    out = exe.forward(is_train=True, data=idx, emb_weight=weight)[0].asnumpy()
    np.testing.assert_array_equal(out, weight[idx.astype(int)])
    w = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    exe.backward(mx.nd.array(w))
    want = np.zeros((10, 4), dtype=np.float32)
    np.add.at(want, idx.astype(int).ravel(), w.reshape(-1, 4))
    np.testing.assert_allclose(exe.grad_dict["emb_weight"].asnumpy(), want, rtol=1e-6)


def test_embedding_errors():
    data = mx.nd.array([0, 1])
    with pytest.raises(mx.MXNetError, match="sparse_grad=True is not supported.*sparse_grad=False"):
        mx.nd.Embedding(data, mx.nd.ones((4, 3)), input_dim=4, output_dim=3, sparse_grad=True)
    with pytest.raises(mx.MXNetError, match=r"Embedding: 'weight.*has shape \(5, ?3\), "
                                            r"expected \(4, ?3\)"):
        mx.nd.Embedding(data, mx.nd.ones((5, 3)), input_dim=4, output_dim=3)
    with pytest.raises(mx.MXNetError, match="input_dim must be at least 1, got 0"):
        mx.nd.Embedding(data, mx.nd.ones((4, 3)), input_dim=0, output_dim=3)


# ---- SoftmaxActivation ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,shape,axis", [
    ("instance", (3, 5), 1),
    ("instance", (2, 3, 4), 2),  # MXNet's 2-D view: the last axis, per leading index
    ("channel", (2, 3, 4), 1),
    ("channel", (2, 3, 2, 2), 1),
])
def test_softmax_activation_forward_and_gradient(dtype, mode, shape, axis):
    rng = np.random.RandomState(9)
    x = rng.uniform(-2, 2, shape).astype(dtype)
    w = rng.uniform(-1, 1, shape).astype(dtype)
    y, (gx,) = _grads(lambda a: mx.nd.SoftmaxActivation(a, mode=mode), [x], w)
    p = _softmax(x.astype(np.float64), axis)
    np.testing.assert_allclose(y, p, **_tol(dtype))
    w64 = w.astype(np.float64)
    np.testing.assert_allclose(gx, p * (w64 - (w64 * p).sum(axis=axis, keepdims=True)),
                               **_tol(dtype))


@pytest.mark.parametrize("mode", ["instance", "channel"])
def test_softmax_activation_gradient_matches_central_differences(mode):
    rng = np.random.RandomState(10)
    x = rng.uniform(-2, 2, (2, 3, 4))
    w = rng.uniform(-1, 1, x.shape)
    _, (gx,) = _grads(lambda a: mx.nd.SoftmaxActivation(a, mode=mode), [x], w)

    def f(a):
        return mx.nd.SoftmaxActivation(mx.nd.array(a, dtype=np.float64), mode=mode).asnumpy()

    np.testing.assert_allclose(gx, _numeric(f, x, w), rtol=1e-6, atol=1e-9)


def test_softmax_activation_errors():
    with pytest.raises(mx.MXNetError, match=r"mode='channel' needs 'data' with at least 3 axes"
                                            r".*\(3, ?4\)"):
        mx.nd.SoftmaxActivation(mx.nd.ones((3, 4)), mode="channel")
    with pytest.raises(mx.MXNetError, match="mode 'batch' is not one of instance, channel"):
        mx.nd.SoftmaxActivation(mx.nd.ones((3, 4)), mode="batch")


# ---- softmax_cross_entropy ------------------------------------------------------------------


def test_softmax_cross_entropy_mxnet_example():
    x = mx.nd.array([[1, 2, 3], [11, 7, 5]])
    loss = mx.nd.softmax_cross_entropy(x, mx.nd.array([2, 0]))
    assert loss.shape == (1,)
    np.testing.assert_allclose(loss.asnumpy(), [0.4281871], rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_cross_entropy_forward_and_gradient(dtype):
    rng = np.random.RandomState(11)
    x = rng.uniform(-2, 2, (4, 5)).astype(dtype)
    label = np.array([2, 0, 4, 1], dtype=dtype)
    xa = mx.nd.array(x, dtype=dtype)
    xa.attach_grad()
    with mx.autograd.record():
        loss = mx.nd.softmax_cross_entropy(xa, mx.nd.array(label, dtype=dtype))
    loss.backward(mx.nd.array([0.5], dtype=dtype))
    p = _softmax(x.astype(np.float64), 1)
    rows = label.astype(int)
    np.testing.assert_allclose(loss.asnumpy(), [-np.log(p[np.arange(4), rows]).sum()],
                               **_tol(dtype))
    np.testing.assert_allclose(xa.grad.asnumpy(), 0.5 * (p - np.eye(5)[rows]), **_tol(dtype))


def test_softmax_cross_entropy_errors():
    with pytest.raises(mx.MXNetError, match=r"'data' must be 2-D \(batch, classes\)"):
        mx.nd.softmax_cross_entropy(mx.nd.ones((2, 3, 4)), mx.nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match=r"'label' must be 1-D \(batch,\)"):
        mx.nd.softmax_cross_entropy(mx.nd.ones((2, 3)), mx.nd.ones((2, 1)))
    with pytest.raises(mx.MXNetError, match="disagree on the batch size"):
        mx.nd.softmax_cross_entropy(mx.nd.ones((3, 4)), mx.nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match="dtypes float32 and float64 differ"):
        mx.nd.softmax_cross_entropy(mx.nd.ones((2, 3)), mx.nd.ones((2,), dtype=np.float64))
    # Label values are known only when the kernel runs: the error comes with the result.
    with pytest.raises(mx.MXNetError, match=r"label 7 of row 1 is not a class index in \[0, 3\)"):
        mx.nd.softmax_cross_entropy(mx.nd.ones((2, 3)), mx.nd.array([0, 7])).asnumpy()
    with pytest.raises(mx.MXNetError, match="not a class index"):
        mx.nd.waitall()  # the engine's first error, once


# ---- MakeLoss, make_loss, BlockGrad ---------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs,shape,want", [
    ({}, (4, 3), 1.0),
    ({"grad_scale": 2}, (4, 3), 2.0),
    ({"grad_scale": 2, "normalization": "batch"}, (4, 3), 0.5),
    # MXNet divides by the rows of its 2-D view: all axes but the last.
    ({"grad_scale": 2, "normalization": "batch"}, (2, 3, 4), 2 / 6),
    ({"grad_scale": 3, "normalization": "batch"}, (5,), 3.0),
])
def test_make_loss_gradient_ignores_the_head_gradient(dtype, kwargs, shape, want):
    rng = np.random.RandomState(12)
    x = rng.uniform(-1, 1, shape).astype(dtype)
    w = rng.uniform(-5, 5, shape).astype(dtype)
    y, (gx,) = _grads(lambda a: mx.nd.MakeLoss(a, **kwargs), [x], w)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_allclose(gx, np.full(shape, want), rtol=1e-6)


def test_make_loss_valid_normalization_counts_elements_above_the_threshold():
    x = np.array([[0.1, 0.7, 0.9], [0.6, -1.0, 0.5]], dtype=np.float32)
    w = np.ones_like(x)
    _, (gx,) = _grads(lambda a: mx.nd.MakeLoss(a, grad_scale=2, normalization="valid",
                                               valid_thresh=0.5), [x], w)
    np.testing.assert_allclose(gx, np.full(x.shape, 2 / 3), rtol=1e-6)
    _, (gx,) = _grads(lambda a: mx.nd.MakeLoss(a, grad_scale=2, normalization="valid",
                                               valid_thresh=5), [x], w)
    np.testing.assert_allclose(gx, np.full(x.shape, 2.0))  # no valid element: divided by 1
    with pytest.raises(mx.MXNetError, match="normalization 'mean' is not one of null, batch"):
        mx.nd.MakeLoss(mx.nd.array(x), normalization="mean")


@pytest.mark.parametrize("dtype", DTYPES)
def test_make_loss_unary_is_the_identity_with_a_gradient_of_ones(dtype):
    rng = np.random.RandomState(13)
    x = rng.uniform(-1, 1, (3, 4)).astype(dtype)
    w = rng.uniform(-5, 5, (3, 4)).astype(dtype)
    y, (gx,) = _grads(lambda a: mx.nd.make_loss(a), [x], w)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(gx, np.ones((3, 4)))
    assert mx.sym.make_loss(mx.sym.Variable("x"), name="l").list_outputs() == ["l_loss"]


@pytest.mark.parametrize("name", ["BlockGrad", "stop_gradient"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_block_grad_is_the_identity_with_no_gradient(name, dtype):
    x = mx.nd.array([1.0, 2.0, 3.0], dtype=dtype)
    np.testing.assert_array_equal(getattr(mx.nd, name)(x).asnumpy(), [1, 2, 3])
    x.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, name)(x) * x  # only the second factor passes a gradient
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [1, 2, 3])


def test_make_loss_and_stop_gradient_in_a_symbol():
    # MXNet's BlockGrad example: no head gradient needed, b gets none.
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    loss = mx.sym.MakeLoss(mx.sym.stop_gradient(3 * b) + a)
    exe = loss.simple_bind(mx.cpu(), a=(1, 2), b=(1, 2))
    out = exe.forward(is_train=True, a=np.array([[1.0, 2.0]]), b=np.array([[0.0, 1.0]]))
    np.testing.assert_allclose(out[0].asnumpy(), [[1, 5]])
    exe.backward()
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), [[1, 1]])
    np.testing.assert_allclose(exe.grad_dict["b"].asnumpy(), [[0, 0]])
