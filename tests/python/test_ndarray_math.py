"""mx.nd math with MXNet 1.x's semantics (docs/mxnet-compat.md#operators): elementwise unary
math, binary math and comparisons in their broadcast, elementwise and scalar forms, softmax,
reductions, the Python operators on NDArray, and their dtype rules, each against numpy for every
dtype nanomx has."""
import math
import operator

import numpy as np
import pytest

import nanomx as mx
from nanomx.ndarray import _internal

FLOATS = [np.float32, np.float64, np.float16]
INTS = [np.uint8, np.int32, np.int8, np.int64]
ALL_DTYPES = FLOATS + INTS
RNG = np.random.default_rng(11)


def nd(x):
    """An NDArray holding exactly `x` (any shape, 0-d and empty included, its dtype kept)."""
    x = np.asarray(x)
    if x.ndim == 0:
        return nd(x.reshape(1)).reshape(())
    result = mx.nd.empty(x.shape, dtype=x.dtype)
    if x.size:
        result._sync_copyfrom(x)
    return result


def values(dtype, shape, lo, hi):
    """Random values in [lo, hi] of `dtype` (integers: whole numbers; unsigned: lo >= 0)."""
    if np.issubdtype(dtype, np.integer):
        lo = max(lo, 0) if np.issubdtype(dtype, np.unsignedinteger) else lo
        return RNG.integers(math.ceil(lo), math.floor(hi) + 1, size=shape).astype(dtype)
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def assert_matches(got, want, dtype, atol_int=0):
    """`got` (an NDArray) equals `want` cast to dtype: exactly for integers (within atol_int
    for functions computed in double and truncated), within the type's precision for floats."""
    assert isinstance(got, mx.nd.NDArray)
    assert got.dtype == dtype, (got.dtype, dtype)
    result = got.asnumpy()
    want = np.asarray(want)
    assert result.shape == want.shape, (result.shape, want.shape)
    if np.issubdtype(dtype, np.integer):
        if atol_int:
            np.testing.assert_allclose(result.astype(np.float64), want.astype(np.float64),
                                       rtol=0, atol=atol_int)
        else:
            np.testing.assert_array_equal(result, want.astype(dtype))
    else:
        rtol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-12}[dtype]
        np.testing.assert_allclose(result.astype(np.float64),
                                   want.astype(dtype).astype(np.float64), rtol=rtol,
                                   atol=rtol, equal_nan=True)


def mx_round(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def mx_rint(x):
    lo, hi = np.floor(x), np.ceil(x)
    return np.where(x - lo <= hi - x, lo, hi)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name: (numpy reference on float64, value range, exact on integers)
UNARY = {
    "exp": (np.exp, (-3, 4), False),
    "expm1": (np.expm1, (-3, 4), False),
    "log": (np.log, (0.5, 100), False),
    "log1p": (np.log1p, (0, 100), False),
    "log2": (np.log2, (0.5, 100), False),
    "log10": (np.log10, (0.5, 100), False),
    "abs": (np.abs, (-100, 100), True),
    "sign": (np.sign, (-5, 5), True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.5, 100), False),
    "cbrt": (np.cbrt, (-100, 100), False),
    "rcbrt": (lambda x: 1 / np.cbrt(x), (0.5, 100), False),
    "reciprocal": (np.reciprocal, (0.5, 10), False),
    "sin": (np.sin, (-6, 6), False),
    "cos": (np.cos, (-6, 6), False),
    "tan": (np.tan, (-1.2, 1.2), False),
    "arcsin": (np.arcsin, (-0.95, 0.95), False),
    "arccos": (np.arccos, (-0.95, 0.95), False),
    "arctan": (np.arctan, (-10, 10), False),
    "sinh": (np.sinh, (-3, 3), False),
    "cosh": (np.cosh, (-3, 3), False),
    "tanh": (np.tanh, (-3, 3), False),
    "arcsinh": (np.arcsinh, (-10, 10), False),
    "arccosh": (np.arccosh, (1, 10), False),
    "arctanh": (np.arctanh, (-0.95, 0.95), False),
    "degrees": (np.degrees, (-2, 2), False),
    "radians": (np.radians, (-100, 100), False),
    "sigmoid": (sigmoid, (-6, 6), False),
    "relu": (lambda x: np.maximum(x, 0), (-5, 5), True),
    "softsign": (lambda x: x / (1 + np.abs(x)), (-5, 5), False),
    "floor": (np.floor, (-5, 5), True),
    "ceil": (np.ceil, (-5, 5), True),
    "round": (mx_round, (-5, 5), True),
    "rint": (mx_rint, (-5, 5), True),
    "fix": (np.trunc, (-5, 5), True),
    "trunc": (np.trunc, (-5, 5), True),
    "erf": (np.vectorize(math.erf, otypes=[np.float64]), (-2, 2), False),
    "gamma": (np.vectorize(math.gamma, otypes=[np.float64]), (0.5, 5), False),
    "gammaln": (np.vectorize(math.lgamma, otypes=[np.float64]), (0.5, 10), False),
    "logical_not": (lambda x: (x == 0).astype(np.float64), (-2, 2), True),
}


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_matches_numpy_in_the_input_dtype(name, dtype):
    reference, (lo, hi), exact = UNARY[name]
    x = values(dtype, (3, 5), lo, hi)
    if name in ("log", "log2", "log10", "rsqrt", "rcbrt", "reciprocal", "gamma", "gammaln",
                "arccosh") and np.issubdtype(dtype, np.integer):
        x = np.maximum(x, 1).astype(dtype)
    if name in ("arcsin", "arccos", "arctanh") and np.issubdtype(dtype, np.integer):
        x = np.zeros_like(x)  # the only integer inside the open domain
    want = reference(x.astype(np.float64))
    if np.issubdtype(dtype, np.integer):
        want = np.trunc(want)
    got = getattr(mx.nd, name)(nd(x))
    assert_matches(got, want, dtype, atol_int=0 if exact else 1)
    # Empty and 0-d arrays keep their shapes.
    assert getattr(mx.nd, name)(nd(np.zeros((0, 3), dtype))).shape == (0, 3)
    zero_d = getattr(mx.nd, name)(nd(np.array(x.flat[0])))
    assert zero_d.shape == () and zero_d.dtype == dtype


def test_rounding_follows_mxnet_at_halves():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7], np.float32)
    np.testing.assert_array_equal(mx.nd.round(nd(x)).asnumpy(), [-3, -2, -1, 1, 2, 3, 0, -1])
    # rint: ties go to the floor, not to even.
    np.testing.assert_array_equal(mx.nd.rint(nd(x)).asnumpy(), [-3, -2, -1, 0, 1, 2, 0, -1])
    np.testing.assert_array_equal(mx.nd.fix(nd(x)).asnumpy(), np.trunc(x))


def test_unary_special_values():
    x = nd(np.array([0, -1, np.nan, np.inf, -np.inf], np.float32))
    log = mx.nd.log(x).asnumpy()
    assert log[0] == -np.inf and np.isnan(log[1]) and np.isnan(log[2]) and log[3] == np.inf
    relu = mx.nd.relu(x).asnumpy()
    assert np.isnan(relu[2]) and relu[3] == np.inf and relu[4] == 0  # relu keeps NaN
    np.testing.assert_array_equal(mx.nd.sign(x).asnumpy(), [0, -1, 0, 1, -1])  # NaN -> 0
    np.testing.assert_array_equal(mx.nd.logical_not(x).asnumpy(), [1, 0, 0, 0, 0])
    # Integer abs wraps at the minimum, as numpy.
    assert mx.nd.abs(nd(np.array([-128, -3], np.int8))).asnumpy().tolist() == [-128, 3]
    assert mx.nd.sign(nd(np.array([0, 7], np.uint8))).asnumpy().tolist() == [0, 1]


# name: (broadcast operator, numpy reference on float64, value range of lhs and rhs)
def np_mod(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.mod(a, b)
    return np.where(b == 0, 0, r)  # MXNet: x % 0 == 0


def np_power(a, b):
    return np.power(a, b)


BINARY = {
    "power": (np_power, (-3, 3), (0, 3)),
    "maximum": (np.maximum, (-5, 5), (-5, 5)),
    "minimum": (np.minimum, (-5, 5), (-5, 5)),
    "mod": (np_mod, (-10, 10), (-4, 4)),
    "hypot": (np.hypot, (-5, 5), (-5, 5)),
    "equal": (np.equal, (-2, 2), (-2, 2)),
    "not_equal": (np.not_equal, (-2, 2), (-2, 2)),
    "greater": (np.greater, (-2, 2), (-2, 2)),
    "greater_equal": (np.greater_equal, (-2, 2), (-2, 2)),
    "lesser": (np.less, (-2, 2), (-2, 2)),
    "lesser_equal": (np.less_equal, (-2, 2), (-2, 2)),
    "logical_and": (lambda a, b: np.logical_and(a != 0, b != 0), (-1, 1), (-1, 1)),
    "logical_or": (lambda a, b: np.logical_or(a != 0, b != 0), (-1, 1), (-1, 1)),
    "logical_xor": (lambda a, b: np.logical_xor(a != 0, b != 0), (-1, 1), (-1, 1)),
}
SHAPES = [((2, 3), (2, 3)), ((2, 1, 3), (4, 3)), ((3,), ()), ((), (2, 2)), ((1,), (5,)),
          ((0, 3), (1, 3)), ((2, 0), (2, 1))]


def reference(fn, a, b, dtype):
    with np.errstate(all="ignore"):
        want = np.asarray(fn(a.astype(np.float64), b.astype(np.float64)), np.float64)
    if np.issubdtype(dtype, np.integer):
        want = np.trunc(want)
    return want


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast_and_elementwise_forms(name, dtype):
    fn, lhs_range, rhs_range = BINARY[name]
    for lhs_shape, rhs_shape in SHAPES:
        a, b = values(dtype, lhs_shape, *lhs_range), values(dtype, rhs_shape, *rhs_range)
        got = getattr(mx.nd, "broadcast_" + name)(nd(a), nd(b))
        assert_matches(got, reference(fn, a, b, dtype), dtype,
                       atol_int=1 if name == "hypot" else 0)
    a, b = values(dtype, (2, 3), *lhs_range), values(dtype, (2, 3), *rhs_range)
    got = getattr(_internal, "_" + name)(nd(a), nd(b))
    assert_matches(got, reference(fn, a, b, dtype), dtype, atol_int=1 if name == "hypot" else 0)
    with pytest.raises(mx.MXNetError, match="_" + name):
        getattr(_internal, "_" + name)(nd(a), nd(b[:1]))  # the twin does not broadcast
    with pytest.raises(mx.MXNetError, match="broadcast_" + name):
        getattr(mx.nd, "broadcast_" + name)(nd(np.zeros((2, 3), dtype)),
                                            nd(np.zeros((4, 3), dtype)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_scalar_forms_cast_the_scalar_to_the_array_dtype(name, dtype):
    fn, lhs_range, rhs_range = BINARY[name]
    x = values(dtype, (4, 3), *lhs_range)
    scalar = 2.5 if name != "power" else 2.0
    s = np.array(scalar).astype(dtype)  # MXNet casts the scalar first: int 2.5 -> 2
    got = getattr(_internal, "_%s_scalar" % name)(nd(x), scalar=scalar)
    assert_matches(got, reference(fn, x, s, dtype), dtype, atol_int=1 if name == "hypot" else 0)
    if name in ("power", "mod"):
        base = values(dtype, (4, 3), 1, 3) if name == "mod" else values(dtype, (4, 3), 0, 3)
        got = getattr(_internal, "_r%s_scalar" % name)(nd(base), scalar=scalar)
        assert_matches(got, reference(fn, s, base, dtype), dtype)


def test_camel_case_and_elementwise_aliases_exist():
    for name in ("_Power", "_Maximum", "_Minimum", "_Mod", "_Hypot", "_Equal", "_Not_Equal",
                 "_Greater", "_Greater_Equal", "_Lesser", "_Lesser_Equal", "_PowerScalar",
                 "_RPowerScalar", "_MaximumScalar", "_MinimumScalar", "_ModScalar",
                 "_RModScalar", "_EqualScalar", "_NotEqualScalar", "_GreaterScalar",
                 "_GreaterEqualScalar", "_LesserScalar", "_LesserEqualScalar"):
        assert callable(getattr(_internal, name)), name


def test_mod_follows_python_sign_rules_and_zero_divisor():
    a = nd(np.array([7, -7, 7, -7, 5], np.float32))
    b = nd(np.array([3, 3, -3, -3, 0], np.float32))
    np.testing.assert_array_equal(mx.nd.broadcast_mod(a, b).asnumpy(), [1, 2, -2, -1, 0])
    ai = nd(np.array([7, -7, 7, -7, 5, -128], np.int8))
    bi = nd(np.array([3, 3, -3, -3, 0, -1], np.int8))
    np.testing.assert_array_equal(mx.nd.broadcast_mod(ai, bi).asnumpy(), [1, 2, -2, -1, 0, 0])


def test_integer_power_is_exact_and_maximum_propagates_nan():
    a = nd(np.array([3, -2, 10], np.int64))
    np.testing.assert_array_equal((a ** 15).asnumpy(), np.array([3, -2, 10], np.int64) ** 15)
    x = nd(np.array([np.nan, 1, 2], np.float32))
    y = nd(np.array([0, np.nan, 1], np.float32))
    assert np.isnan(mx.nd.broadcast_maximum(x, y).asnumpy()[:2]).all()
    assert np.isnan(mx.nd.broadcast_minimum(x, y).asnumpy()[:2]).all()


def test_binary_dtypes_must_agree():
    with pytest.raises(mx.MXNetError, match="float32.*float64"):
        mx.nd.broadcast_power(nd(np.ones(2, np.float32)), nd(np.ones(2, np.float64)))


# ---- Python operators ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_comparison_operators_give_zero_one_in_the_input_dtype(dtype):
    x = values(dtype, (3, 4), -3, 3)
    y = values(dtype, (4,), -3, 3)
    a, b = nd(x), nd(y)
    cases = [(a == b, x == y), (a != b, x != y), (a < b, x < y), (a <= b, x <= y),
             (a > b, x > y), (a >= b, x >= y), (a == 2, x == 2), (a != 2, x != 2),
             (a > 1, x > 1), (a >= 1, x >= 1), (a < 1, x < 1), (a <= 1, x <= 1),
             (1 < a, 1 < x), (1 <= a, 1 <= x), (1 > a, 1 > x), (1 >= a, 1 >= x),
             (2 == a, 2 == x), (a == a, np.ones_like(x, bool))]
    for got, want in cases:
        assert_matches(got, want, dtype)
    # The scalar is cast to the dtype first: an integer array == 2.5 compares with 2.
    if np.issubdtype(dtype, np.integer):
        assert_matches(a == 2.5, x == 2, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_power_modulo_abs_and_unary_operators(dtype):
    x = values(dtype, (2, 3), 1, 4)
    a = nd(x)
    f = x.astype(np.float64)
    assert_matches(a ** 2, f ** 2, dtype)
    assert_matches(2 ** a, 2.0 ** f, dtype)
    assert_matches(a ** a, f ** f, dtype)
    assert_matches(a % 3, np.mod(f, 3), dtype)
    assert_matches(7 % a, np.mod(7, f), dtype)
    assert_matches(a % a, np.zeros_like(f), dtype)
    assert_matches(abs(nd(-x) if not np.issubdtype(dtype, np.unsignedinteger) else a),
                   f, dtype)
    assert (+a) is a
    # numpy scalars on the left defer to NDArray (its __array_priority__).
    assert_matches(np.float64(2) ** a, 2.0 ** f, dtype)
    assert_matches(np.int64(7) % a, np.mod(7, f), dtype)
    assert_matches(np.float32(2) < a, 2 < f, dtype)
    if not np.issubdtype(dtype, np.unsignedinteger):
        assert_matches(-a, -f, dtype)
    # Reflected forms of the arithmetic the C type implements.
    assert_matches(1 + a, 1 + f, dtype)
    assert_matches(9 - a, 9 - f, dtype)
    assert_matches(2 * a, 2 * f, dtype)


def test_in_place_operators_write_into_the_same_array():
    a = nd(np.array([1.0, 2.0, 3.0], np.float32))
    handle = a.handle
    a **= 2
    a %= 5
    a += 1
    a -= 0.5
    a *= 2
    a /= 3
    assert a.handle == handle
    np.testing.assert_allclose(a.asnumpy(), ((np.array([1, 4, 9]) % 5 + 1 - 0.5) * 2) / 3,
                               rtol=1e-6)
    b = nd(np.array([2.0, 3.0], np.float32))
    b **= nd(np.array([3.0, 2.0], np.float32))
    np.testing.assert_array_equal(b.asnumpy(), [8, 9])
    b.writable = False
    with pytest.raises(ValueError, match="readonly"):
        b **= 2
    with pytest.raises(ValueError, match="readonly"):
        b %= 2


class Other:
    """An operand type NDArray does not know: Python must try its reflected methods."""

    def __rpow__(self, other):
        return "rpow"

    def __rmod__(self, other):
        return "rmod"

    def __radd__(self, other):
        return "radd"

    def __eq__(self, other):
        return "eq"

    def __gt__(self, other):
        return "gt"

    __hash__ = object.__hash__


def test_unknown_operand_types_return_not_implemented():
    a = mx.nd.ones((2,))
    for method in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__pow__",
                   "__rpow__", "__mod__", "__rmod__", "__ipow__", "__imod__"):
        assert getattr(a, method)(None) is NotImplemented, method
        assert getattr(a, method)("x") is NotImplemented, method
        assert getattr(a, method)([1, 2]) is NotImplemented, method
    assert a ** Other() == "rpow"
    assert a % Other() == "rmod"
    assert a + Other() == "radd"
    assert (a == Other()) == "eq"  # reflected __eq__
    assert (a < Other()) == "gt"  # reflected __lt__ is __gt__
    assert (a == None) is False  # noqa: E711 (identity fallback)
    assert (a != None) is True  # noqa: E711
    with pytest.raises(TypeError):
        a < None  # noqa: B015
    with pytest.raises(TypeError):
        a ** "x"  # noqa: B015
    with pytest.raises(TypeError):
        None % a  # noqa: B015


def test_hash_is_identity_although_eq_is_elementwise():
    a, b = mx.nd.ones((2,)), mx.nd.ones((2,))
    assert hash(a) == id(a) // 16
    assert len({a, b}) == 2
    table = {a: "a"}
    assert table[a] == "a"
    assert isinstance(a == b, mx.nd.NDArray)


def test_module_functions_dispatch_like_mxnet():
    x = np.array([[1, 5, 3]], np.float32)
    a = nd(x)
    assert_matches(mx.nd.power(a, 2), x ** 2, np.float32)
    assert_matches(mx.nd.power(2, a), 2.0 ** x, np.float32)
    assert_matches(mx.nd.maximum(a, 3), np.maximum(x, 3), np.float32)
    assert_matches(mx.nd.maximum(3, a), np.maximum(x, 3), np.float32)
    assert_matches(mx.nd.minimum(a, nd(np.array([2.0], np.float32))), np.minimum(x, 2),
                   np.float32)
    assert_matches(mx.nd.modulo(7, a), np.mod(7, x), np.float32)
    assert_matches(mx.nd.greater(2, a), 2 > x, np.float32)
    assert_matches(mx.nd.lesser_equal(3, a), 3 <= x, np.float32)
    assert_matches(mx.nd.logical_xor(a, 5), np.logical_xor(x != 0, True), np.float32)
    assert_matches(mx.nd.true_divide(a, 2), x / 2, np.float32)
    assert mx.nd.maximum(2, 3) == 3 and mx.nd.power(2, 3) == 8
    assert mx.nd.greater(3, 2) == 1 and mx.nd.equal(3, 2) == 0
    with pytest.raises(TypeError, match="not supported"):
        mx.nd.power(a, None)
    with pytest.raises(TypeError, match="not supported"):
        mx.nd.equal(np.ones(3), a)
    assert not hasattr(mx.nd, "hypot")  # as MXNet: only the operators


# ---- softmax ------------------------------------------------------------------------------
def np_softmax(x, axis, t=1.0):
    z = x / t
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_family(dtype):
    x = values(dtype, (2, 3, 4), -3, 3)
    f = x.astype(np.float64)
    for axis in (-1, 0, 1):
        assert_matches(mx.nd.softmax(nd(x), axis=axis), np_softmax(f, axis), dtype)
        assert_matches(mx.nd.log_softmax(nd(x), axis=axis), np.log(np_softmax(f, axis)), dtype)
        assert_matches(mx.nd.softmin(nd(x), axis=axis), np_softmax(-f, axis), dtype)
    assert_matches(mx.nd.softmax(nd(x), temperature=2.0), np_softmax(f, -1, 2.0), dtype)
    assert_matches(nd(x).softmax(axis=0), np_softmax(f, 0), dtype)
    assert_matches(nd(x).log_softmax(), np.log(np_softmax(f, -1)), dtype)
    wide = mx.nd.softmax(nd(x), dtype="float64")
    assert wide.dtype == np.float64
    np.testing.assert_allclose(wide.asnumpy(), np_softmax(x.astype(np.float64), -1),
                               rtol=1e-12)
    assert mx.nd.softmax(nd(np.zeros((0, 3), dtype))).shape == (0, 3)


def test_softmax_errors():
    with pytest.raises(mx.MXNetError, match="int32"):
        mx.nd.softmax(nd(np.ones((2, 2), np.int32)))
    with pytest.raises(mx.MXNetError, match="axis 2"):
        mx.nd.softmax(nd(np.ones((2, 2), np.float32)), axis=2)
    with pytest.raises(mx.MXNetError, match="use_length"):
        mx.nd.softmax(nd(np.ones((2, 2), np.float32)), use_length=True)


# ---- reductions ---------------------------------------------------------------------------
def reduced_axes(ndim, axis, exclude):
    if axis is None or axis == ():
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % ndim for a in axes)
    return tuple(a for a in range(ndim) if a not in axes) if exclude else axes


def mxnet_shape(shape, axes, keepdims):
    out = tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)
    return out or (1,)


def np_mean(x, axes, dtype):
    if np.issubdtype(dtype, np.integer):
        count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        total = x.astype(np.int64).sum(axis=axes).astype(dtype).astype(np.int64)
        return np.sign(total) * (np.abs(total) // count)
    return x.astype(np.float64).mean(axis=axes)


REDUCTIONS = {
    "sum": lambda x, axes, dtype: x.astype(np.float64 if x.dtype.kind == "f" else np.int64)
    .sum(axis=axes),
    "mean": np_mean,
    "prod": lambda x, axes, dtype: x.astype(np.float64 if x.dtype.kind == "f" else np.int64)
    .prod(axis=axes),
    "nansum": lambda x, axes, dtype: np.nansum(x.astype(np.float64), axis=axes)
    if x.dtype.kind == "f" else x.astype(np.int64).sum(axis=axes),
    "nanprod": lambda x, axes, dtype: np.nanprod(x.astype(np.float64), axis=axes)
    if x.dtype.kind == "f" else x.astype(np.int64).prod(axis=axes),
    "max": lambda x, axes, dtype: x.max(axis=axes),
    "min": lambda x, axes, dtype: x.min(axis=axes),
}
AXES = [None, (), 1, -1, (0, 2), (2, 0, 1)]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_with_axis_keepdims_exclude(name, dtype):
    x = values(dtype, (2, 3, 4), -2, 2)
    if name.startswith("nan") and dtype in FLOATS:
        x[0, 1, 2] = np.nan
        x[1, 0, 0] = np.nan
    for axis in AXES:
        for keepdims in (False, True):
            for exclude in (False, True):
                axes = reduced_axes(3, axis, exclude)
                want = REDUCTIONS[name](x, axes, dtype)
                if np.issubdtype(dtype, np.integer):
                    want = np.asarray(want).astype(np.int64).astype(dtype)  # wraps as MXNet
                kwargs = {"keepdims": keepdims, "exclude": exclude}
                if axis is not None:
                    kwargs["axis"] = axis
                got = getattr(mx.nd, name)(nd(x), **kwargs)
                want = np.reshape(want, mxnet_shape(x.shape, axes, keepdims))
                assert_matches(got, want, dtype)
    method = getattr(nd(x), name)(axis=1)
    assert_matches(method, np.reshape(REDUCTIONS[name](x, (1,), dtype), (2, 4)).astype(dtype)
                   if np.issubdtype(dtype, np.integer) else REDUCTIONS[name](x, (1,), dtype),
                   dtype)


def test_reductions_of_empty_and_zero_d_arrays():
    empty = nd(np.zeros((0, 3), np.float32))
    np.testing.assert_array_equal(mx.nd.sum(empty).asnumpy(), [0])
    np.testing.assert_array_equal(mx.nd.prod(empty).asnumpy(), [1])
    np.testing.assert_array_equal(mx.nd.prod(empty, axis=0).asnumpy(), [1, 1, 1])
    assert np.isnan(mx.nd.mean(empty).asnumpy()).all()
    assert mx.nd.sum(empty, axis=1).shape == (0,)
    with pytest.raises(mx.MXNetError, match="max"):
        mx.nd.max(empty)
    with pytest.raises(mx.MXNetError, match="argmax"):
        mx.nd.argmax(empty)
    scalar = nd(np.array(5, np.int32))
    assert mx.nd.sum(scalar).shape == (1,) and mx.nd.mean(scalar).asnumpy().tolist() == [5]
    assert mx.nd.argmax(scalar).asnumpy().tolist() == [0]


def test_integer_max_and_min_are_exact_at_the_extremes():
    # Compared in double, INT64_MAX and INT64_MAX - 1 merged and came back as INT64_MIN.
    big = np.array([[2**63 - 2, 2**63 - 1, 5], [-2**63, -2**63 + 1, 0]], np.int64)
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(mx.nd.max(nd(big), axis=axis).asnumpy().ravel(),
                                      np.ravel(big.max(axis=axis)))
        np.testing.assert_array_equal(mx.nd.min(nd(big), axis=axis).asnumpy().ravel(),
                                      np.ravel(big.min(axis=axis)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_argmax_argmin_give_indices_in_the_input_dtype(dtype):
    x = values(dtype, (3, 4, 5), -50, 50)
    for name, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
        for axis in (0, 1, -1):
            assert_matches(getattr(mx.nd, name)(nd(x), axis=axis), fn(x, axis=axis), dtype)
            kept = getattr(mx.nd, name)(nd(x), axis=axis, keepdims=True)
            assert_matches(kept, np.expand_dims(fn(x, axis=axis), axis), dtype)
        assert_matches(getattr(mx.nd, name)(nd(x)), [fn(x)], dtype)  # flattened: (1,)
        assert getattr(mx.nd, name)(nd(x), keepdims=True).shape == (1, 1, 1)
        assert getattr(mx.nd, name)(nd(x[0, 0]), axis=0).shape == (1,)  # 1-D: (1,)
        assert_matches(getattr(nd(x), name)(axis=2), fn(x, axis=2), dtype)
    assert_matches(mx.nd.argmax_channel(nd(x[0])), np.argmax(x[0], axis=1), dtype)
    assert_matches(nd(x).argmax_channel(), np.argmax(x, axis=1), dtype)


def test_argmax_takes_the_first_occurrence_and_nan():
    a = nd(np.array([[1, 3, 3], [2, 2, 1]], np.float32))
    np.testing.assert_array_equal(mx.nd.argmax(a, axis=1).asnumpy(), [1, 0])
    np.testing.assert_array_equal(mx.nd.argmin(a, axis=1).asnumpy(), [0, 2])
    b = nd(np.array([1, np.nan, 5], np.float32))
    assert mx.nd.argmax(b, axis=0).asnumpy().tolist() == [1]


def test_max_and_min_propagate_nan_wherever_it_is():
    # numpy's rule: a NaN anywhere in the reduced elements is the result (a later number used
    # to replace it: max([nan, 1, 2]) gave 2).
    for row in ([np.nan, 1, 2], [1, np.nan, 2], [1, 2, np.nan]):
        a = nd(np.array(row, np.float32))
        for name in ("max", "min"):
            assert np.isnan(getattr(mx.nd, name)(a).asnumpy()[0]), (name, row)
    m = nd(np.array([[np.nan, 1, 2], [3, 4, 5]], np.float32))
    out = mx.nd.max(m, axis=1).asnumpy()
    assert np.isnan(out[0]) and out[1] == 5
    np.testing.assert_array_equal(mx.nd.min(m, axis=0).asnumpy()[1:], [1, 2])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_norm_ord_axis_keepdims(dtype):
    x = values(dtype, (2, 3, 4), -3, 3)
    f = x.astype(np.float64)
    for ord_ in (1, 2):
        for axis in (None, 1, (0, 2)):
            for keepdims in (False, True):
                axes = reduced_axes(3, axis, False)
                want = (np.abs(f).sum(axis=axes) if ord_ == 1
                        else np.sqrt((f * f).sum(axis=axes)))
                if np.issubdtype(dtype, np.integer):
                    want = np.trunc(want)
                kwargs = {"ord": ord_, "keepdims": keepdims}
                if axis is not None:
                    kwargs["axis"] = axis
                got = mx.nd.norm(nd(x), **kwargs)
                assert_matches(got, np.reshape(want, mxnet_shape(x.shape, axes, keepdims)),
                               dtype, atol_int=1)
    assert_matches(nd(x).norm(), [np.trunc(np.sqrt((f * f).sum()))]
                   if np.issubdtype(dtype, np.integer) else [np.sqrt((f * f).sum())], dtype,
                   atol_int=1)


def test_norm_out_dtype():
    x = np.array([[3, 4], [6, 8]], np.float16)
    wide = mx.nd.norm(nd(x), out_dtype="float64")
    assert wide.dtype == np.float64
    np.testing.assert_allclose(wide.asnumpy(), [np.sqrt(125.0)], rtol=1e-12)
    rows = mx.nd.norm(nd(x), ord=1, axis=1, out_dtype="int32", keepdims=True)
    assert rows.dtype == np.int32 and rows.asnumpy().tolist() == [[7], [14]]
    assert mx.nd.norm(nd(x), out_dtype=None).dtype == np.float16
    with pytest.raises(mx.MXNetError, match="out_dtype"):
        mx.nd.norm(nd(x), out_dtype="uint8")


# ---- fluent methods and dtype errors -----------------------------------------------------
def test_fluent_methods_match_the_functions():
    x = values(np.float32, (2, 3), 0.5, 2)
    a = nd(x)
    for name in ("abs", "sign", "round", "rint", "fix", "floor", "ceil", "trunc", "exp",
                 "expm1", "log", "log10", "log2", "log1p", "rsqrt", "cbrt", "rcbrt",
                 "reciprocal", "relu", "sigmoid", "sin", "cos", "tan", "arcsin", "arccos",
                 "arctan", "degrees", "radians", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
                 "arctanh", "sqrt", "square", "softmax", "log_softmax", "softmin", "mean",
                 "prod", "nansum", "nanprod", "sum", "max", "min", "norm", "argmax", "argmin"):
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(getattr(a, name)().asnumpy(),
                                          getattr(mx.nd, name)(a).asnumpy(), err_msg=name)


def test_unsupported_dtypes_name_the_supported_ones():
    supported = "float32, float64, float16, uint8, int32, int8, int64"
    with pytest.raises(TypeError, match=supported):
        mx.nd.zeros((2,), dtype="bfloat16")
    with pytest.raises(TypeError, match=supported):
        mx.nd.ones((2,)).astype("bfloat16")
    with pytest.raises(mx.MXNetError, match="bfloat16.*" + supported):
        mx.nd.softmax(mx.nd.ones((2,)), dtype="bfloat16")
    with pytest.raises(TypeError, match="complex64.*" + supported):
        mx.nd.empty((2,), dtype=np.complex64)
    with pytest.raises(TypeError, match="bfloat16.*" + supported):
        mx.nd.array([1, 2], dtype="bfloat16")


def test_trace_names_are_mxnet_operator_names(enable_profiler):
    enable_profiler("math.json", aggregate_stats=True)
    a = mx.nd.ones((2, 2))
    results = [a > 1, 2 > a, a == a, a ** 2, 2 ** a, a % 2, abs(a), mx.nd.mean(a),
               mx.nd.argmax(a, axis=0), mx.nd.softmax(a)]
    mx.nd.waitall()
    table = mx.profiler.dumps()
    for name in ("_greater_scalar", "_lesser_scalar", "broadcast_equal", "_power_scalar",
                 "_rpower_scalar", "_mod_scalar", "abs", "mean", "argmax", "softmax"):
        assert name in table, name
    del results


def test_float32_exp_is_within_one_ulp_and_handles_every_range():
    # The vectorized path covers [-87, 88]; blocks with anything else (overflow, subnormal
    # results, inf, NaN) are redone with libm, also when the input is the output.
    x = np.linspace(-87, 88, 200001).astype(np.float32)
    got = mx.nd.exp(nd(x)).asnumpy().astype(np.float64)
    exact = np.exp(x.astype(np.float64))
    ulps = np.abs(got - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 1.01, ulps.max()
    special = np.array([np.nan, np.inf, -np.inf, 89, 100, -88, -100, -104, 0, 1, -87, 88] * 200,
                       np.float32)
    with np.errstate(over="ignore"):
        want = np.exp(special)
    np.testing.assert_allclose(mx.nd.exp(nd(special)).asnumpy(), want, rtol=2e-7)
    a = nd(special)
    mx.nd.exp(a, out=a)
    np.testing.assert_allclose(a.asnumpy(), want, rtol=2e-7)


def test_float32_log_is_within_one_ulp_and_handles_every_range():
    # Vectorized for positive normal floats; blocks with 0, negatives, subnormals, inf or NaN
    # are redone with libm.
    x = np.concatenate([RNG.uniform(0, 1, 20000) * scale
                        for scale in (1e-37, 1e-20, 1e-3, 1, 2, 10, 1e5, 1e20, 1e38)])
    x = np.concatenate([x, [1, 2, 0.5, 0.70710677, 0.7071068, np.finfo(np.float32).tiny,
                            np.finfo(np.float32).max]]).astype(np.float32)
    got = mx.nd.log(nd(x)).asnumpy().astype(np.float64)
    exact = np.log(x.astype(np.float64))
    ulps = np.abs(got - exact) / np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 1.01, ulps.max()
    special = np.array([0, -1, np.nan, np.inf, -np.inf, 1e-40, 1e-45, 2.5] * 300, np.float32)
    with np.errstate(all="ignore"):
        want = np.log(special)
    np.testing.assert_allclose(mx.nd.log(nd(special)).asnumpy(), want, rtol=2e-7)
    a = nd(special)
    mx.nd.log(a, out=a)
    np.testing.assert_allclose(a.asnumpy(), want, rtol=2e-7)
