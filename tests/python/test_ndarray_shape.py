"""The NDArray surface added for MXNet parity (issue 11): creation, shape and indexing
operators, advanced and boolean-mask indexing, members and numpy interop, each against numpy
for every dtype it supports, with empty arrays, negative axes and MXNet's special cases."""
import ctypes
import warnings

import numpy as np
import pytest

import nanomx as mx

nd = mx.nd
DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64"]


def host(shape, dtype="float32"):
    """Distinct values that fit every dtype (int8 included)."""
    size = int(np.prod(shape)) if shape else 1
    return (np.arange(size) % 100).reshape(shape).astype(dtype)


def raises_in_kernel(match, make):
    """An error raised by a kernel: at the next wait, and once more at waitall (the engine
    keeps the first error for it, as MXNet's), which clears it for the tests that follow."""
    with pytest.raises(mx.MXNetError, match=match):
        make().wait_to_read()
    with pytest.raises(mx.MXNetError, match=match):
        nd.waitall()


def check(result, expected):
    assert isinstance(result, nd.NDArray)
    got = result.asnumpy()
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


# ---- creation -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_arange_matches_numpy(dtype):
    check(nd.arange(5, dtype=dtype), np.arange(5).astype(dtype))
    check(nd.arange(2, 11, 3, dtype=dtype), np.arange(2, 11, 3).astype(dtype))
    check(nd.arange(0, 4, repeat=2, dtype=dtype), np.repeat(np.arange(4), 2).astype(dtype))
    if dtype.startswith("float"):
        check(nd.arange(0, 2, 0.5, dtype=dtype), np.arange(0, 2, 0.5).astype(dtype))


def test_arange_errors_and_defaults():
    assert nd.arange(3).dtype == np.float32
    with pytest.raises(mx.MXNetError, match="Invalid range"):
        nd.arange(0)  # MXNet: empty ranges are errors
    with pytest.raises(mx.MXNetError, match="step=0"):
        nd.arange(0, 3, 0)
    with pytest.raises(mx.MXNetError, match="repeat > 0"):
        nd.arange(0, 3, repeat=0)
    with pytest.warns(DeprecationWarning, match="infer_range"):
        nd.arange(0, 3, infer_range=True)
    # An int dtype truncates a fractional step to 0 while the length uses the real step.
    check(nd.arange(0, 2, 0.5, dtype="int32"), np.zeros(4, np.int32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_linspace_and_eye(dtype):
    check(nd.linspace(0, 8, 5, dtype=dtype), np.linspace(0, 8, 5).astype(dtype))
    check(nd.linspace(0, 8, 4, endpoint=False, dtype=dtype),
          np.linspace(0, 8, 4, endpoint=False).astype(dtype))
    check(nd.linspace(3, 8, 0, dtype=dtype), np.zeros(0, dtype))
    for n, m, k in [(3, 0, 0), (3, 4, 1), (4, 2, -1), (2, 2, 5)]:
        check(nd.eye(n, m, k, dtype=dtype), np.eye(n, m or n, k, dtype=dtype))
    assert nd.eye(2).dtype == np.float32


@pytest.mark.parametrize("dtype", DTYPES)
def test_like_functions(dtype):
    a = nd.array(host((2, 3), dtype), dtype=dtype)
    check(nd.zeros_like(a), np.zeros((2, 3), dtype))
    check(nd.ones_like(a), np.ones((2, 3), dtype))
    check(a.zeros_like(), np.zeros((2, 3), dtype))
    check(a.ones_like(), np.ones((2, 3), dtype))
    check(nd.full_like(a, 7), np.full((2, 3), 7, dtype))
    check(nd.full_like(a, 7, dtype="float64"), np.full((2, 3), 7, np.float64))
    e = nd.empty_like(a)
    assert e.shape == (2, 3) and e.dtype == np.dtype(dtype)
    check(nd.zeros_like(nd.empty((0, 3), dtype=dtype)), np.zeros((0, 3), dtype))


def test_unsupported_dtypes_name_the_supported_ones():
    for make in (lambda: nd.zeros((2,), dtype="bfloat16"),
                 lambda: nd.arange(3, dtype="bfloat16"),
                 lambda: nd.empty((2,), dtype="bool")):
        with pytest.raises(TypeError, match="supported: float32, float64, float16, uint8"):
            make()
    with pytest.raises(mx.MXNetError, match="valid: float32"):
        nd.one_hot(nd.array([0]), depth=2, dtype="bfloat16")


# ---- shape operators ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_expand_dims_squeeze_flatten(dtype):
    x = host((2, 3, 4), dtype)
    a = nd.array(x, dtype=dtype)
    for axis in range(-4, 4):
        check(nd.expand_dims(a, axis=axis), np.expand_dims(x, axis))
        check(a.expand_dims(axis), np.expand_dims(x, axis))
        check(a.expand_dims(axis, inplace=True), np.expand_dims(x, axis))
    y = host((1, 3, 1), dtype)
    b = nd.array(y, dtype=dtype)
    check(nd.squeeze(b), y.reshape(3))
    check(nd.squeeze(b, axis=0), y.reshape(3, 1))
    check(nd.squeeze(b, axis=(0, -1)), y.reshape(3))
    check(b.squeeze(axis=-1), y.reshape(1, 3))
    check(nd.squeeze(nd.ones((1, 1), dtype=dtype)), np.ones((1,), dtype))  # MXNet: (1,)
    check(nd.flatten(a), x.reshape(2, 12))
    check(nd.Flatten(a), x.reshape(2, 12))
    check(a.flatten(), x.reshape(2, 12))
    check(a.flatten(inplace=True), x.reshape(2, 12))
    check(nd.flatten(nd.array(host((5,), dtype), dtype=dtype)), host((5,), dtype).reshape(5, 1))
    check(nd.flatten(nd.zeros((0, 3, 2), dtype=dtype)), np.zeros((0, 6), dtype))


def test_shape_operator_errors():
    a = nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match="axis must be in the range"):
        nd.expand_dims(a, axis=3)
    with pytest.raises(mx.MXNetError, match="size=3 not equal to one"):
        nd.squeeze(a, axis=1)
    with pytest.raises(mx.MXNetError, match="out of bounds"):
        nd.squeeze(a, axis=2)
    with pytest.raises(mx.MXNetError, match="4-D or 5-D"):
        nd.pad(a, mode="constant", pad_width=(0, 0, 1, 1))
    with pytest.raises(mx.MXNetError, match="first two axes"):
        nd.pad(nd.ones((1, 1, 2, 2)), mode="edge", pad_width=(1, 0, 0, 0, 0, 0, 0, 0))
    with pytest.raises(mx.MXNetError, match="valid: constant, edge, reflect"):
        nd.pad(nd.ones((1, 1, 2, 2)), mode="wrap", pad_width=(0,) * 8)
    with pytest.raises(mx.MXNetError, match="Incompatible input shape"):
        nd.concat(a, nd.ones((3, 2)), dim=1)
    with pytest.raises(mx.MXNetError, match="Non-uniform data type"):
        nd.concat(a, nd.ones((2, 3), dtype="float64"))
    with pytest.raises(mx.MXNetError, match="same shape"):
        nd.stack(a, nd.ones((2, 2)))
    with pytest.raises(mx.MXNetError, match="exceeds limit"):
        nd.slice_like(a, nd.ones((5, 3)))
    with pytest.raises(mx.MXNetError, match="repeats cannot be a negative"):
        nd.repeat(a, repeats=-1)
    with pytest.raises(mx.MXNetError, match="evenly"):
        nd.split(a, num_outputs=2, axis=1)


# The table of MXNet's Reshape special values (0, -1, -2, -3, -4, reverse).
RESHAPE_TABLE = [
    ((2, 3, 4), (4, 0, 2), False, (4, 3, 2)),
    ((2, 3, 4), (6, 1, -1), False, (6, 1, 4)),
    ((2, 3, 4), (-3, -2), False, (6, 4)),
    ((2, 3, 4), (2, -4, -1, 3, -2), False, (2, 1, 3, 4)),
    ((10, 5, 4), (-1, 0), False, (40, 5)),
    ((10, 5, 4), (-1, 0), True, (50, 4)),
    ((2, 3, 4), (0, -1), False, (2, 12)),
    ((2, 3, 4), (-2,), False, (2, 3, 4)),
    ((2, 3, 4), (0, 0, -4, 2, 2), False, (2, 3, 2, 2)),
]


@pytest.mark.parametrize("src,spec,reverse,expected", RESHAPE_TABLE)
@pytest.mark.parametrize("dtype", ["float32", "int8", "float16"])
def test_reshape_special_values(src, spec, reverse, expected, dtype):
    x = host(src, dtype)
    a = nd.array(x, dtype=dtype)
    check(a.reshape(spec, reverse=reverse), x.reshape(expected))
    check(nd.reshape(a, shape=spec, reverse=reverse), x.reshape(expected))


@pytest.mark.parametrize("dtype", DTYPES)
def test_swapaxes_flip_transpose(dtype):
    x = host((2, 3, 4), dtype)
    a = nd.array(x, dtype=dtype)
    for d1, d2 in [(0, 2), (-1, 0), (1, 1), (-2, -1)]:
        check(nd.swapaxes(a, dim1=d1, dim2=d2), np.swapaxes(x, d1, d2))
        check(nd.SwapAxis(a, dim1=d1, dim2=d2), np.swapaxes(x, d1, d2))
        check(a.swapaxes(d1, d2), np.swapaxes(x, d1, d2))
    check(nd.flip(a, axis=(0, 2)), x[::-1, :, ::-1])
    check(a.flip(axis=1), x[:, ::-1])
    check(a.T, x.T)
    check(nd.swapaxes(nd.zeros((0, 3), dtype=dtype), dim1=0, dim2=1), np.zeros((3, 0), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tile_and_repeat(dtype):
    x = host((2, 3), dtype)
    a = nd.array(x, dtype=dtype)
    for reps in [(2,), (2, 1), (1, 3), (2, 1, 2), ()]:
        check(nd.tile(a, reps=reps), np.tile(x, reps))
        check(a.tile(reps), np.tile(x, reps))
    for axis in [None, 0, 1, -1]:
        for repeats in [0, 1, 3]:
            check(nd.repeat(a, repeats=repeats, axis=axis), np.repeat(x, repeats, axis=axis))
    check(a.repeat(2, axis=0), np.repeat(x, 2, axis=0))
    check(nd.tile(nd.zeros((0, 2), dtype=dtype), reps=(2, 2)), np.zeros((0, 4), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_matches_numpy(dtype, mode):
    for shape in [(1, 2, 3, 4), (2, 1, 3, 4, 3)]:
        x = host(shape, dtype)
        width = [(0, 0), (0, 0)] + [(1, 2), (2, 1), (1, 1)][:len(shape) - 2]
        flat = tuple(v for pair in width for v in pair)
        a = nd.array(x, dtype=dtype)
        if mode == "constant":
            expected = np.pad(x, width, mode="constant", constant_values=5)
            check(nd.pad(a, mode=mode, pad_width=flat, constant_value=5), expected)
            check(nd.Pad(a, mode=mode, pad_width=flat), np.pad(x, width, mode="constant"))
        else:
            check(nd.pad(a, mode=mode, pad_width=flat), np.pad(x, width, mode=mode))
            check(a.pad(mode=mode, pad_width=flat), np.pad(x, width, mode=mode))


@pytest.mark.parametrize("dtype", DTYPES)
def test_concat_stack_split(dtype):
    x, y = host((2, 3), dtype), (host((2, 3), dtype) + 1).astype(dtype)
    a, b = nd.array(x, dtype=dtype), nd.array(y, dtype=dtype)
    for dim in [0, 1, -1, -2]:
        check(nd.concat(a, b, dim=dim), np.concatenate([x, y], axis=dim))
        check(nd.Concat(a, b, a, dim=dim), np.concatenate([x, y, x], axis=dim))
        check(nd.concatenate([a, b], axis=dim), np.concatenate([x, y], axis=dim))
    check(nd.concat(a, b), np.concatenate([x, y], axis=1))  # MXNet's default dim=1
    for axis in [0, 1, 2, -1, -3]:
        check(nd.stack(a, b, axis=axis), np.stack([x, y], axis=axis))
    check(nd.concat(nd.zeros((0, 3), dtype=dtype), a, dim=0), x)
    assert nd.concatenate([a], always_copy=False) is a
    parts = nd.split(nd.array(host((2, 6), dtype), dtype=dtype), num_outputs=3, axis=1)
    for i, p in enumerate(parts):
        check(p, host((2, 6), dtype)[:, 2 * i:2 * i + 2])
    squeezed = a.split(num_outputs=3, axis=1, squeeze_axis=True)
    for i, p in enumerate(squeezed):
        check(p, x[:, i])
    one = nd.split(a, num_outputs=1, axis=0)
    check(one if isinstance(one, nd.NDArray) else one[0], x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_like(dtype):
    x = host((3, 4, 5), dtype)
    a = nd.array(x, dtype=dtype)
    check(nd.slice_like(a, nd.zeros((2, 3, 4))), x[:2, :3, :4])
    check(nd.slice_like(a, nd.zeros((2, 3)), axes=(0, -2)), x[:2, :3])
    check(a.slice_like(nd.zeros((1, 2, 5)), axes=(1,)), x[:, :2])


# ---- indexing operators -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_take_modes(dtype):
    x = host((4, 3), dtype)
    a = nd.array(x, dtype=dtype)
    idx = np.array([[0, 5], [-1, 2]])
    check(nd.take(a, nd.array(idx)), x[np.clip(idx, 0, 3)])
    check(nd.take(a, nd.array(idx), mode="wrap"), x[idx % 4])
    check(nd.take(a, nd.array([2, 0], dtype="int64"), axis=-1), x[:, [2, 0]])
    check(a.take(nd.array([1.7, 0.2])), x[[1, 0]])  # float indices truncate
    check(nd.take(a, nd.array([-1, 1]), mode="raise"), x[[-1, 1]])
    raises_in_kernel("out of bound", lambda: nd.take(a, nd.array([4]), mode="raise"))
    with pytest.raises(mx.MXNetError, match="Axis should be in the range"):
        nd.take(a, nd.array([0]), axis=2)
    check(nd.take(a, nd.zeros((0,))), np.zeros((0, 3), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_take_one_hot_where(dtype):
    x = host((3, 4), dtype)
    a = nd.array(x, dtype=dtype)
    check(nd.batch_take(a, nd.array([0, 3, 1], dtype="int32")), x[[0, 1, 2], [0, 3, 1]])
    idx = np.array([1, 0, 3, -1])
    expected = np.zeros((4, 3), dtype)
    expected[0, 1] = expected[1, 0] = 1
    check(nd.one_hot(nd.array(idx), depth=3, dtype=dtype), expected)
    assert nd.one_hot(nd.array([0]), depth=2).dtype == np.float32
    check(nd.array(idx).one_hot(3, on_value=5, off_value=-1, dtype="int32"),
          np.where(expected == 1, 5, -1).astype(np.int32))
    cond = np.array([[1, 0, 0, 2], [0, 0, 1, 0], [1, 1, 1, 1]], np.float32)
    y = (x + 1).astype(dtype)
    check(nd.where(nd.array(cond), a, nd.array(y, dtype=dtype)), np.where(cond != 0, x, y))
    rows = np.array([0, 1, 0])
    check(nd.where(nd.array(rows, dtype="int32"), a, nd.array(y, dtype=dtype)),
          np.where(rows[:, None] != 0, x, y))
    with pytest.raises(mx.MXNetError, match="'x' has dtype"):
        nd.where(nd.array(cond), nd.array(x, dtype="float32"), nd.array(y, dtype="float64"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_nd_scatter_nd(dtype):
    x = host((2, 3, 4), dtype)
    a = nd.array(x, dtype=dtype)
    idx = np.array([[0, 1, -1], [2, 0, 1]])
    check(nd.gather_nd(a, nd.array(idx)), x[tuple(idx)])
    check(nd.gather_nd(a, nd.array(idx[:, :, None])), x[tuple(idx[:, :, None])])
    raises_in_kernel("is out of bounds for axis 1 with size 3",
                     lambda: nd.gather_nd(a, nd.array([[0], [3]])))
    with pytest.raises(mx.MXNetError, match="at least 2"):
        nd.gather_nd(a, nd.array([0, 1]))
    data = host((3, 4), dtype)
    sidx = np.array([[0, 2, 1], [1, 0, 1]])
    out = nd.scatter_nd(nd.array(data, dtype=dtype), nd.array(sidx), shape=(3, 2, 4))
    expected = np.zeros((3, 2, 4), dtype)
    expected[tuple(sidx)] = data
    check(out, expected)
    with pytest.raises(mx.MXNetError, match="Invalid data, indices, and output shape"):
        nd.scatter_nd(nd.array(data, dtype=dtype), nd.array(sidx), shape=(3, 2, 5))


@pytest.mark.parametrize("dtype", DTYPES)
def test_diag(dtype):
    v = host((3,), dtype)
    for k in [0, 1, -2]:
        check(nd.diag(nd.array(v, dtype=dtype), k=k), np.diag(v, k))
    m = host((3, 4), dtype)
    for k in [0, 2, -1]:
        check(nd.diag(nd.array(m, dtype=dtype), k=k), np.diag(m, k))
        check(nd.array(m, dtype=dtype).diag(k), np.diag(m, k))
    t = host((2, 3, 4), dtype)
    check(nd.diag(nd.array(t, dtype=dtype), k=1, axis1=-1, axis2=1),
          np.diagonal(t, 1, axis1=-1, axis2=1))
    with pytest.raises(mx.MXNetError, match="Diagonal does not exist"):
        nd.diag(nd.array(m, dtype=dtype), k=4)
    with pytest.raises(mx.MXNetError, match="same axis"):
        nd.diag(nd.array(m, dtype=dtype), axis1=1, axis2=-1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_argsort_topk(dtype):
    rng = np.random.RandomState(0)
    x = rng.permutation(24).reshape(2, 3, 4).astype(dtype)  # distinct: no ties
    a = nd.array(x, dtype=dtype)
    for axis in [-1, 0, 1]:
        check(nd.sort(a, axis=axis), np.sort(x, axis=axis))
        check(a.sort(axis=axis, is_ascend=False), np.flip(np.sort(x, axis=axis), axis=axis))
        check(nd.argsort(a, axis=axis), np.argsort(x, axis=axis).astype(np.float32))
        check(a.argsort(axis=axis, dtype="int32"), np.argsort(x, axis=axis).astype(np.int32))
    check(nd.sort(a, axis=None), np.sort(x, axis=None))
    desc = np.flip(np.argsort(x, axis=-1), axis=-1)
    check(nd.topk(a, k=2), desc[..., :2].astype(np.float32))
    check(a.topk(k=2, ret_typ="value"), np.take_along_axis(x, desc[..., :2], -1))
    values, indices = nd.topk(a, k=3, axis=1, ret_typ="both", is_ascend=True, dtype="int64")
    asc = np.argsort(x, axis=1)[:, :3]
    check(values, np.take_along_axis(x, asc, 1))
    check(indices, asc.astype(np.int64))
    mask = np.zeros_like(x)
    np.put_along_axis(mask, desc[..., :1], 1, -1)
    check(nd.topk(a, ret_typ="mask"), mask)
    check(nd.topk(a, k=0, ret_typ="value"), np.take_along_axis(x, desc, -1))  # k <= 0: all
    check(nd.topk(a, axis=None, k=3, ret_typ="value"), np.sort(x, axis=None)[::-1][:3])
    with pytest.raises(mx.MXNetError, match="k must be smaller than 4"):
        nd.topk(a, k=5)
    with pytest.raises(mx.MXNetError, match="ret_typ"):
        nd.topk(a, ret_typ="values")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16"])
def test_dot_and_batch_dot_transposes(dtype):
    rng = np.random.RandomState(1)
    tol = 1e-2 if dtype == "float16" else 1e-5
    x = rng.randint(0, 4, (2, 3, 4)).astype(dtype)
    y = rng.randint(0, 4, (2, 4, 5)).astype(dtype)
    a, b = nd.array(x, dtype=dtype), nd.array(y, dtype=dtype)
    np.testing.assert_allclose(nd.batch_dot(a, b).asnumpy(), np.matmul(x, y), rtol=tol)
    xt, yt = np.swapaxes(x, 1, 2).copy(), np.swapaxes(y, 1, 2).copy()
    out = nd.batch_dot(nd.array(xt, dtype=dtype), nd.array(yt, dtype=dtype), transpose_a=True,
                       transpose_b=True)
    np.testing.assert_allclose(out.asnumpy(), np.matmul(x, y), rtol=tol)
    assert out.dtype == np.dtype(dtype)
    m, n = x[0], y[0]
    np.testing.assert_allclose(nd.dot(nd.array(m.T.copy(), dtype=dtype), nd.array(n, dtype=dtype),
                                      transpose_a=True).asnumpy(), m @ n, rtol=tol)
    np.testing.assert_allclose(nd.dot(nd.array(m, dtype=dtype), nd.array(n.T.copy(), dtype=dtype),
                                      transpose_b=True).asnumpy(), m @ n, rtol=tol)
    with pytest.raises(mx.MXNetError, match="N >= 3"):
        nd.batch_dot(nd.ones((2, 3)), nd.ones((3, 2)))
    with pytest.raises(mx.MXNetError, match="shape mismatch"):
        nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((2, 3, 4)))
    with pytest.raises(mx.MXNetError, match="leading batch dimensions"):
        nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((3, 4, 2)))


# ---- NDArray indexing ---------------------------------------------------------------------
READ_KEYS = [
    [0, 2],
    [[0, 1], [1, 2]],
    ([0, 1], [1, 2]),
    (slice(None), [0, 2]),
    (1, [2, 0]),
    ([[0], [1]], [0, 2]),
    (Ellipsis, [1]),
    np.array([1, 0]),
    ([0, -1], slice(1, 3), [0, 3]),
    ([], ),
    np.array(1),
]


@pytest.mark.parametrize("key", READ_KEYS, ids=repr)
@pytest.mark.parametrize("dtype", DTYPES)
def test_advanced_indexing_reads_as_numpy(key, dtype):
    x = host((3, 3, 4), dtype)
    a = nd.array(x, dtype=dtype)
    check(a[key], x[key])


def test_advanced_indexing_with_ndarray_keys():
    x = host((4, 3))
    a = nd.array(x)
    check(a[nd.array([3, 1])], x[[3, 1]])
    check(a[nd.array([3, 1]), nd.array([0, 2], dtype="int64")], x[[3, 1], [0, 2]])
    check(a[nd.array([[0, 1], [2, 3]])], x[[[0, 1], [2, 3]]])
    with pytest.raises(IndexError):
        a[[4]]
    with pytest.raises(IndexError, match="too many"):
        a[[0], [0], [0]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_boolean_masks_read_and_write(dtype):
    x = host((3, 4), dtype)
    a = nd.array(x, dtype=dtype)
    mask = x > 5
    check(a[mask], x[mask])
    check(a[mask[:, 0]], x[mask[:, 0]])  # a mask over the leading axis picks rows
    check(a[[True, False, True]], x[[True, False, True]])
    check(a[np.zeros((3, 4), bool)], x[np.zeros((3, 4), bool)])  # nothing selected
    a[mask] = 1
    y = x.copy()
    y[mask] = 1
    check(a, y)
    a[mask[:, 0]] = nd.array([[9, 8, 7, 6]], dtype=dtype)
    y[mask[:, 0]] = [9, 8, 7, 6]
    check(a, y)


@pytest.mark.parametrize("dtype", DTYPES)
def test_advanced_indexing_writes_as_numpy(dtype):
    x = host((3, 4), dtype)
    cases = [
        ([0, 2], 7),
        (([0, 1], [1, 3]), [5, 6]),
        ((slice(None), [0, 2]), np.arange(6).reshape(3, 2)),
        ([1], nd.array([[1, 2, 3, 4]], dtype="float64")),  # cast to the array's dtype
        ((2, [0, 1]), nd.array([3, 4], dtype=dtype)),
        (np.array([[0], [2]]), 1),
    ]
    for key, value in cases:
        a = nd.array(x, dtype=dtype)
        y = x.copy()
        a[key] = value
        y[key] = value.asnumpy() if isinstance(value, nd.NDArray) else value
        check(a, y)


def test_basic_indexing_is_unchanged():
    x = host((4, 3))
    a = nd.array(x)
    check(a[1], x[1])
    check(a[1:3], x[1:3])
    check(a[1, 2], x[1, 2].reshape(1))  # MXNet: shape (1,)
    check(a[::2, 1], x[::2, 1])
    a[0] = 5
    x[0] = 5
    check(a, x)


# ---- members and numpy interop --------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_members_and_numpy_interop(dtype):
    x = host((2, 3), dtype)
    a = nd.array(x, dtype=dtype)
    assert a.size == 6 and a.ndim == 2
    assert nd.empty((0, 4)).size == 0
    np.testing.assert_array_equal(np.array(a), x)
    assert np.asarray(a).dtype == np.dtype(dtype)
    assert np.array(a, dtype="float64").dtype == np.float64
    np.testing.assert_array_equal(np.asarray(nd.empty((0, 2), dtype=dtype)), np.zeros((0, 2)))
    one = nd.array([7], dtype=dtype)
    assert one.item() == 7 and isinstance(one.item(), (int, float))
    assert one.asscalar() == 7
    with pytest.raises(ValueError, match="not a scalar"):
        a.item()
    c = a.copy()
    c[:] = 0
    check(a, x)
    check(a.tostype("default"), x)
    with pytest.raises(ValueError, match="default"):
        a.tostype("csr")
    check(a.T, x.T)


@pytest.mark.parametrize("dtype", DTYPES)
def test_buffer_protocol_exports_a_read_only_snapshot(dtype):
    x = host((2, 3), dtype)
    a = nd.array(x, dtype=dtype)
    view = memoryview(a)
    assert view.shape == (2, 3) and view.readonly and view.itemsize == np.dtype(dtype).itemsize
    assert np.dtype(view.format) == np.dtype(dtype)
    np.testing.assert_array_equal(np.frombuffer(view, dtype).reshape(2, 3), x)
    a[:] = 0  # a snapshot: later writes do not show
    np.testing.assert_array_equal(np.asarray(view), x)
    view.release()
    assert memoryview(nd.empty((0, 3), dtype=dtype)).shape == (0, 3)
    with pytest.raises((BufferError, TypeError), match="writable|read-only"):
        ctypes.c_char.from_buffer(a)  # asks for a writable buffer


# ---- random -----------------------------------------------------------------------------------
def test_random_functions_shapes_and_dtypes():
    r = nd.random
    assert r.uniform(0, 1).shape == (1,)
    assert r.randint(0, 5, shape=(3,)).dtype == np.int32
    assert r.randint(0, 5, shape=(3,), dtype="int64").dtype == np.int64
    vals = r.randint(-2, 3, shape=(2000,)).asnumpy()
    assert vals.min() == -2 and vals.max() == 2
    assert r.randn(2, 3).shape == (2, 3)
    assert r.exponential(2, shape=(4,), dtype="float64").dtype == np.float64
    assert abs(r.exponential(2, shape=(20000,)).asnumpy().mean() - 2) < 0.1
    assert abs(r.gamma(2, 3, shape=(20000,)).asnumpy().mean() - 6) < 0.2
    p = r.poisson(4, shape=(20000,)).asnumpy()
    assert p.dtype == np.float32 and abs(p.mean() - 4) < 0.1 and (p == np.round(p)).all()
    with pytest.raises(mx.MXNetError, match="float16, float32, float64"):
        r.gamma(1, 1, shape=(2,), dtype="int32")
    with pytest.raises(mx.MXNetError, match="int32, int64"):
        r.randint(0, 4, shape=(2,), dtype="float32")


def test_random_with_array_parameters():
    r = nd.random
    low, high = nd.array([0, 10]), nd.array([1, 11])
    u = r.uniform(low, high, shape=(1000,)).asnumpy()
    assert u.shape == (2, 1000)
    assert (u[0] >= 0).all() and (u[0] < 1).all() and (u[1] >= 10).all() and (u[1] < 11).all()
    assert r.uniform(low, high).shape == (2,)
    n = r.normal(nd.array([0, 100]), nd.array([1, 1]), shape=(2000,)).asnumpy()
    assert abs(n[0].mean()) < 0.1 and abs(n[1].mean() - 100) < 0.1
    assert r.gamma(nd.array([1, 2]), nd.array([1, 1]), shape=3).shape == (2, 3)
    e = r.exponential(nd.array([[1], [4]]), shape=(4000,)).asnumpy()
    assert e.shape == (2, 1, 4000) and abs(e[1].mean() - 4) < 0.3
    assert r.poisson(nd.array([1, 2, 3])).shape == (3,)
    with pytest.raises(TypeError, match="same type"):
        r.uniform(low, 1)
    with pytest.raises(ValueError, match="NDArray or numbers"):
        r.uniform("a", 1)
    with pytest.raises(mx.MXNetError, match="share one shape"):
        r.uniform(nd.array([0]), nd.array([1, 2]))


def test_a_bad_sampling_call_leaves_the_random_operators_working():
    # The failed call's error stays on its output; it once stuck to the generator's engine
    # variable, and every later random operator of the process failed with it.
    with pytest.raises(mx.MXNetError, match="invalid distribution parameter"):
        nd.random.normal(nd.array([0, 1]), nd.array([1, -1]), shape=(3,)).asnumpy()
    for _ in range(2):
        assert nd.random.uniform(shape=(4,)).asnumpy().shape == (4,)
        assert nd.random.poisson(nd.array([1, 2])).asnumpy().shape == (2,)
    with pytest.raises(mx.MXNetError, match="invalid distribution parameter"):
        mx.nd.waitall()  # the engine's first error, once, as MXNet


def test_multinomial_and_shuffle():
    mx.random.seed(3)
    probs = nd.array([[0, 0, 1], [1, 0, 0]])
    check(nd.random.multinomial(probs, shape=4), np.array([[2] * 4, [0] * 4], np.int32))
    draws = nd.random.multinomial(nd.array([0.25, 0.75]), shape=(4000,)).asnumpy()
    assert abs(draws.mean() - 0.75) < 0.05
    single = nd.random.multinomial(nd.array([0.5, 0.5]))
    assert single.shape == (1,)
    samples, logp = nd.random.multinomial(probs, get_prob=True)
    check(samples, np.array([2, 0], np.int32))
    np.testing.assert_allclose(logp.asnumpy(), [0, 0])
    x = host((6, 2))
    s = nd.random.shuffle(nd.array(x)).asnumpy()
    assert sorted(map(tuple, s)) == sorted(map(tuple, x))
    mx.random.seed(5)
    first = nd.random.shuffle(nd.arange(50)).asnumpy()
    mx.random.seed(5)
    np.testing.assert_array_equal(nd.random.shuffle(nd.arange(50)).asnumpy(), first)


def test_no_warnings_on_creation():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nd.arange(3)
        nd.linspace(0, 1, 3)
        nd.eye(2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_dim_arrays(dtype):
    z = nd.full_like(nd.zeros((), dtype=dtype), 3)
    three = np.array(3, dtype)
    check(z, three)
    assert z.item() == 3 and np.array(z).shape == () and memoryview(z).shape == ()
    check(nd.expand_dims(z, axis=0), np.expand_dims(three, 0))
    check(nd.expand_dims(z, axis=-1), np.expand_dims(three, -1))
    check(nd.stack(z, z), np.stack([three, three]))
    check(nd.tile(z, reps=(2,)), np.tile(three, (2,)))
    check(nd.repeat(z, repeats=2), np.repeat(three, 2))
    check(z.reshape((1, 1)), three.reshape(1, 1))
    check(nd.zeros_like(z), np.zeros((), dtype))
    check(nd.take(nd.arange(5, dtype=dtype), nd.full_like(nd.zeros(()), 2)), np.array(2, dtype))
    check(nd.one_hot(nd.full_like(nd.zeros((), dtype="int32"), 1), depth=3),
          np.eye(3, dtype=np.float32)[1])
    check(nd.sort(z, axis=None), three.reshape(1))
    with pytest.raises(mx.MXNetError, match="zero-dimensional"):
        nd.concat(z, z, dim=0)


def test_index_errors_of_the_fast_paths():
    a = nd.array(host((3, 4)))
    with pytest.raises(IndexError, match="does not match"):
        a[np.ones((4,), bool)]
    with pytest.raises(IndexError, match="index -4 is out of bounds for axis 0 with size 3"):
        a[np.array([0, -4])]
    check(a[np.array([-1, -3])], host((3, 4))[[-1, -3]])
    check(a[[]], host((3, 4))[np.array([], np.int64)])


def test_trace_names_are_mxnet_operator_names(profile_to):
    profile_to.start("shape_ops.json", profile_imperative=True)
    a = nd.array(host((4, 3)))
    b = a[[0, 2]]
    a[[1, 3]] = 0
    c = nd.concat(a, a, dim=0)
    d = a.expand_dims(0).topk(k=1)
    e = nd.arange(3)
    f = nd.random.uniform(nd.zeros((2,)), nd.ones((2,)))
    nd.waitall()
    del b, c, d, e, f
    names = {ev["name"] for ev in profile_to.finish() if ev.get("cat") == "operator"}
    assert {"gather_nd", "_scatter_set_nd", "Concat", "expand_dims", "topk", "_arange",
            "_sample_uniform"} <= names, names


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_sorting_places_nan_as_numpy_and_keeps_ties_in_index_order(dtype):
    y = np.array([3, np.nan, 1, np.nan, 2, 1], dtype)
    b = nd.array(y, dtype=dtype)
    check(nd.sort(b), np.sort(y))
    check(nd.sort(b, is_ascend=False), np.sort(y)[::-1])
    check(nd.argsort(b, dtype="int64"), np.argsort(y, kind="stable"))
    check(nd.argsort(b, is_ascend=False, dtype="int64"), np.array([1, 3, 0, 4, 2, 5]))
    check(nd.topk(b, k=4, ret_typ="value"), np.array([np.nan, np.nan, 3, 2], dtype))
    check(nd.topk(b, k=2, is_ascend=True, dtype="int32"), np.array([2, 5], np.int32))


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_moveaxis_and_concatenate_checks(dtype):
    x = host((2, 3, 4), dtype)
    a = nd.array(x, dtype=dtype)
    for src, dst in [(0, -1), (-1, 0), ((0, 1), (2, 0)), (1, 1)]:
        check(nd.moveaxis(a, src, dst), np.moveaxis(x, src, dst))
    with pytest.raises(ValueError, match="same number"):
        nd.moveaxis(a, (0, 1), 0)
    with pytest.raises(ValueError, match="bad axes"):
        nd.moveaxis(a, 3, 0)
    with pytest.raises(ValueError, match="non-empty"):
        nd.concatenate([])
    with pytest.raises(TypeError, match="NDArray"):
        nd.concatenate([a, x])
