"""mx.nd: the NDArray API of MXNet 1.x over nanomx's C API."""
import os
import pickle
import struct

import numpy as np
import pytest

import nanomx as mx
from nanomx.ndarray import _internal

ALL_DTYPES = [np.float32, np.float64, np.float16, np.uint8, np.int32, np.int8, np.int64]


def test_every_returned_array_is_exactly_ndarray(in_tmp):
    a = mx.nd.ones((2, 3))
    mx.nd.save("x.params", [a])
    produced = [a, a + 1, a[0], a[0:1], a.reshape((3, 2)), a.T, a.copy(), mx.nd.sum(a),
                mx.nd.array([1, 2]), mx.nd.empty((2,)), mx.nd.zeros(3), mx.nd.full((2,), 5),
                mx.random.uniform(shape=(2,)), pickle.loads(pickle.dumps(a)),
                mx.nd.load("x.params")[0], -a, 2 - a, a.astype(np.int32)]
    assert all(type(x) is mx.ndarray.NDArray for x in produced)
    assert mx.nd.NDArray is mx.ndarray.NDArray


def test_properties():
    a = mx.nd.zeros((2, 3, 4), dtype="float64")
    assert a.shape == (2, 3, 4) and a.size == 24 and a.ndim == 3
    assert a.dtype == np.float64 and a.dtype is np.float64
    assert a.context == mx.cpu(0) and a.ctx == mx.cpu(0)
    assert a.stype == "default"
    assert len(a) == 2
    assert a.T.shape == (4, 3, 2)
    assert mx.nd.ones((5,)).T.shape == (5,)


def test_dtype_table_comes_from_the_library():
    from nanomx.base import _LIB
    from nanomx.ndarray import ndarray as nd_module
    table = _LIB.dtype_table()
    assert [(code, name, size) for code, name, size in table] == [
        (i, np.dtype(t).name, np.dtype(t).itemsize) for i, t in enumerate(ALL_DTYPES)]
    assert nd_module._DTYPE_NP_TO_MX == {np.dtype(name).type: code for code, name, _ in table}
    assert nd_module._DTYPE_MX_TO_NP == {code: np.dtype(name).type for code, name, _ in table}
    with pytest.raises(TypeError, match="supported: float32, float64, float16, uint8"):
        mx.nd.zeros((1,), dtype=np.complex64)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_array_round_trip_each_dtype(dtype):
    host = (np.arange(24) % 100).reshape(2, 3, 4).astype(dtype)
    a = mx.nd.array(host, dtype=dtype)
    assert a.dtype == dtype
    np.testing.assert_array_equal(a.asnumpy(), host)
    assert a.asnumpy().dtype == dtype


def test_array_defaults_to_float32_even_from_float64():
    assert mx.nd.array(np.ones((2,), dtype=np.float64)).dtype == np.float32
    assert mx.nd.array([1, 2, 3]).dtype == np.float32
    nd64 = mx.nd.array(np.ones(2), dtype=np.float64)
    assert mx.nd.array(nd64).dtype == np.float64  # an NDArray source keeps its dtype


def test_zero_size_arrays():
    a = mx.nd.zeros((0, 3))
    assert a.shape == (0, 3) and a.size == 0
    assert a.asnumpy().shape == (0, 3)
    b = a + a
    assert b.shape == (0, 3)
    assert not a
    assert mx.nd.sum(mx.nd.zeros((2, 0)), axis=1).asnumpy().tolist() == [0, 0]


def test_creation_functions():
    np.testing.assert_array_equal(mx.nd.ones((2, 2), dtype=np.int32).asnumpy(),
                                  np.ones((2, 2), np.int32))
    np.testing.assert_array_equal(mx.nd.zeros(3).asnumpy(), np.zeros(3))
    np.testing.assert_array_equal(mx.nd.full((2, 3), 7.5).asnumpy(), np.full((2, 3), 7.5))
    out = mx.nd.empty((2,))
    assert mx.nd.full((2,), 3, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), [3, 3])
    assert mx.nd.empty((4, 5), dtype="int8").dtype == np.int8
    with mx.cpu(0):
        assert mx.nd.ones(1).context == mx.cpu(0)


def test_unsupported_dtype_and_bad_shapes_raise_python_errors():
    with pytest.raises(TypeError, match="does not support dtype"):
        mx.nd.zeros((2,), dtype=np.complex64)
    with pytest.raises(TypeError, match="not understood"):
        mx.nd.empty((2,), dtype="no_such_type")
    with pytest.raises(ValueError, match="negative"):
        mx.nd.empty((2, -1))
    with pytest.raises(TypeError, match="shape"):
        mx.nd.empty("abc")
    with pytest.raises(TypeError):
        mx.nd.array(object())


def test_basic_slices_are_views():
    a = mx.nd.array(np.arange(12).reshape(3, 4))
    row = a[1]
    rows = a[1:3]
    part = a[2, 1:3]
    assert row.shape == (4,) and rows.shape == (2, 4) and part.shape == (2,)
    row[:] = -1
    part[:] = 100
    expected = np.arange(12).reshape(3, 4).astype(np.float32)
    expected[1] = -1
    expected[2, 1:3] = 100
    np.testing.assert_array_equal(a.asnumpy(), expected)
    np.testing.assert_array_equal(rows.asnumpy(), expected[1:3])


def test_one_dimensional_int_index_keeps_a_dimension():
    a = mx.nd.array([1, 2, 3])
    assert a[1].shape == (1,)  # MXNet 1.x
    assert a[-1].asscalar() == 3
    with pytest.raises(IndexError):
        a[3]


@pytest.mark.parametrize("key", [
    (slice(None), 1), (slice(None), slice(1, 3)), (slice(0, 3, 2),), (Ellipsis, 2),
    (1, slice(None, None, -1)), (slice(None), slice(None), 0), (0, 1), (slice(2, 5), 1, 1)])
def test_indexing_matches_numpy(key):
    host = np.arange(5 * 4 * 3).reshape(5, 4, 3).astype(np.float32)
    a = mx.nd.array(host)
    expected = host[key]
    got = a[key].asnumpy()
    assert got.shape == (expected.shape or (1,))
    np.testing.assert_array_equal(got.reshape(expected.shape), expected)


def test_unsupported_indexing_is_an_index_error():
    a = mx.nd.ones((3, 3))
    with pytest.raises(IndexError, match="basic indexing"):
        a["x"]
    with pytest.raises(IndexError, match="too many"):
        a[0, 0, 0]
    with pytest.raises(IndexError, match="newaxis"):
        a[None]


@pytest.mark.parametrize("key", [slice(3, 8), (slice(None), 1), (1, slice(0, 2)),
                                 (slice(0, 4, 2), slice(1, 3)), 2, (Ellipsis, 0)])
@pytest.mark.parametrize("kind", ["scalar", "numpy", "ndarray"])
def test_setitem_matches_numpy(key, kind):
    host = np.arange(10 * 3).reshape(10, 3).astype(np.float32)
    a = mx.nd.array(host)
    region = host[key]
    if kind == "scalar":
        value = 7.0
    else:
        value = (np.arange(region.size).reshape(region.shape) + 100).astype(np.float32)
        if kind == "ndarray":
            value = mx.nd.array(value)
    host[key] = value.asnumpy() if kind == "ndarray" else value
    a[key] = value
    np.testing.assert_array_equal(a.asnumpy(), host)


def test_setitem_whole_array_forms():
    a = mx.nd.zeros((2, 3))
    a[:] = 1.5
    np.testing.assert_array_equal(a.asnumpy(), np.full((2, 3), 1.5))
    a[:] = np.arange(3)  # numpy broadcast over rows
    np.testing.assert_array_equal(a.asnumpy(), np.tile(np.arange(3), (2, 1)))
    a[:] = mx.nd.ones((1, 3)) * 4  # NDArray broadcast
    np.testing.assert_array_equal(a.asnumpy(), np.full((2, 3), 4))
    a[...] = [[1, 2, 3], [4, 5, 6]]
    np.testing.assert_array_equal(a.asnumpy(), [[1, 2, 3], [4, 5, 6]])
    a[:] = a  # assigning an array to itself is a no-op
    np.testing.assert_array_equal(a.asnumpy(), [[1, 2, 3], [4, 5, 6]])
    with pytest.raises(ValueError):
        a[:] = np.ones((4, 4))
    ro = mx.nd.ones((2,))
    ro.writable = False
    with pytest.raises(ValueError, match="readonly"):
        ro[:] = 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.uint8, np.int32])
def test_arithmetic_with_arrays_and_scalars(dtype):
    rng = np.random.RandomState(3)
    x = rng.uniform(1, 10, (3, 4)).astype(dtype)
    y = rng.uniform(1, 10, (3, 4)).astype(dtype)
    a, b = mx.nd.array(x, dtype=dtype), mx.nd.array(y, dtype=dtype)
    tol = dict(rtol=2e-3) if dtype == np.float16 else dict(rtol=1e-6)

    def close(nd, ref):
        assert nd.dtype == dtype
        np.testing.assert_allclose(nd.asnumpy().astype(np.float64),
                                   np.asarray(ref).astype(dtype).astype(np.float64), **tol)

    close(a + b, x + y)
    close(a - b, x - y)
    close(a * b, x * y)
    if np.issubdtype(dtype, np.integer):
        close(a / b, (x.astype(np.int64) // y.astype(np.int64)))  # C division, operands > 0
    else:
        close(a / b, x / y)
        close(2 / a, np.float32(2) / x)
        close(a / 4, x / np.asarray(4, dtype))
    close(a + 2, x + np.asarray(2, dtype))
    close(2 + a, x + np.asarray(2, dtype))
    close(a * 3, x * np.asarray(3, dtype))
    close(3 * a, x * np.asarray(3, dtype))


def test_scalar_ops_and_inplace_forms_use_mxnet_op_names(profile_to):
    profile_to.start("ops.json", profile_imperative=True)
    x = mx.nd.ones((2, 2))
    results = [x + 1, 1 + x, x - 1, 1 - x, x * 2, 2 * x, x / 2, 2 / x, -x]
    x += 1
    x -= 1
    x *= 3
    x /= 3
    x += x
    mx.nd.waitall()
    del results
    events = profile_to.finish()
    ops = [e["name"] for e in events if e.get("cat") == "operator" and e["ph"] == "B"]
    expected = ["_ones", "_plus_scalar", "_plus_scalar", "_minus_scalar", "_rminus_scalar",
                "_mul_scalar", "_mul_scalar", "_div_scalar", "_rdiv_scalar", "_mul_scalar",
                "_plus_scalar", "_minus_scalar", "_mul_scalar", "_div_scalar",
                "broadcast_add"]
    # as a multiset: reads of x may run in any order, and on a worker or the waiting thread
    assert sorted(o for o in ops if o != "WaitForVar") == sorted(expected)


def test_reversed_and_inplace_values():
    x = mx.nd.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose((10 - x).asnumpy(), [9, 8, 6])
    np.testing.assert_allclose((8 / x).asnumpy(), [8, 4, 2])
    np.testing.assert_allclose((-x).asnumpy(), [-1, -2, -4])
    np.testing.assert_allclose(x.asnumpy(), [1, 2, 4])  # negation is not in place
    y = x
    y += mx.nd.array([1, 1, 1])
    assert y is x
    np.testing.assert_allclose(x.asnumpy(), [2, 3, 5])
    x *= 2
    np.testing.assert_allclose(x.asnumpy(), [4, 6, 10])
    np.testing.assert_allclose((np.float32(2) * x).asnumpy(), [8, 12, 20])


def test_broadcasting_binary_ops():
    a = mx.nd.array(np.arange(6).reshape(2, 3))
    b = mx.nd.array([[10], [20]])
    np.testing.assert_array_equal((a + b).asnumpy(), np.arange(6).reshape(2, 3) + [[10], [20]])
    with pytest.raises(mx.MXNetError, match=r"broadcast_add.*\(2, ?3\).*\(4, ?3\)|"
                       r"broadcast_add.*2x3.*4x3|broadcast_add"):
        (a + mx.nd.ones((4, 3))).wait_to_read()


def test_integer_types_wrap_like_numpy():
    a = mx.nd.array([250, 3], dtype=np.uint8)
    np.testing.assert_array_equal((a + a).asnumpy(), np.array([250, 3], np.uint8) * 2)
    b = mx.nd.array([2**31 - 1], dtype=np.int32)
    np.testing.assert_array_equal((b + b).asnumpy(), np.array([2**31 - 1], np.int32) * 2)


def test_unsupported_operands_raise_type_error():
    a = mx.nd.ones((2,))
    with pytest.raises(TypeError):
        a + "text"
    with pytest.raises(TypeError):
        "text" - a
    with pytest.raises(TypeError):
        mx.nd.add("a", a)


def test_copies_and_dtype_conversion():
    a = mx.nd.array([1.7, -2.2, 3.0])
    b = a.copy()
    b[:] = 0
    np.testing.assert_allclose(a.asnumpy(), [1.7, -2.2, 3.0], rtol=1e-6)
    c = a.copyto(mx.Context("cpu", 0))
    assert c.handle != a.handle
    d = mx.nd.empty((3,))
    assert a.copyto(d) is d
    with pytest.warns(RuntimeWarning):
        assert a.copyto(a) is False
    as_int = a.astype(np.int32)
    assert as_int.dtype == np.int32
    np.testing.assert_array_equal(as_int.asnumpy(), np.array([1.7, -2.2, 3.0]).astype(np.int32))
    assert a.astype(np.float32, copy=False) is a
    assert a.as_in_context(mx.cpu(0)) is a
    with pytest.raises(TypeError):
        a.copyto("cpu")


def test_reshape_is_a_view_and_takes_mxnet_codes():
    a = mx.nd.array(np.arange(24).reshape(2, 3, 4))
    assert a.reshape((6, 4)).shape == (6, 4)
    assert a.reshape(4, -1).shape == (4, 6)
    assert a.reshape(shape=(0, -1)).shape == (2, 12)
    assert a.reshape((-3, 4)).shape == (6, 4)
    assert a.reshape((-1, 3), reverse=True).shape == (8, 3)
    v = a.reshape((24,))
    v[:] = 0
    assert a.asnumpy().sum() == 0
    with pytest.raises(mx.MXNetError, match="24|reshape"):
        a.reshape((5, 5))


def test_broadcast_to_checks_shapes():
    a = mx.nd.array([[1], [2]])
    np.testing.assert_array_equal(a.broadcast_to((2, 3)).asnumpy(), [[1] * 3, [2] * 3])
    np.testing.assert_array_equal(mx.nd.array([5, 6]).broadcast_to((3, 2)).asnumpy(),
                                  [[5, 6]] * 3)
    with pytest.raises(ValueError, match="could not be broadcast"):
        a.broadcast_to((3, 3))
    with pytest.raises(ValueError, match="could not be broadcast"):
        a.broadcast_to((2,))


def test_operator_functions():
    host = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    a = mx.nd.array(host)
    np.testing.assert_allclose(mx.nd.sqrt(a).asnumpy(), np.sqrt(host), rtol=1e-6)
    np.testing.assert_allclose(mx.nd.square(a).asnumpy(), host ** 2)
    assert mx.nd.norm(a).shape == (1,)
    np.testing.assert_allclose(mx.nd.norm(a).asscalar(), np.linalg.norm(host), rtol=1e-6)
    np.testing.assert_array_equal(mx.nd.clip(a, 2, 5).asnumpy(), np.clip(host, 2, 5))
    np.testing.assert_array_equal(mx.nd.clip(a, a_min=2, a_max=5).asnumpy(),
                                  np.clip(host, 2, 5))
    np.testing.assert_allclose(mx.nd.dot(a, a.T).asnumpy(), host @ host.T, rtol=1e-6)
    np.testing.assert_allclose(mx.nd.dot(a, a, transpose_a=True).asnumpy(), host.T @ host,
                               rtol=1e-6)
    np.testing.assert_array_equal(mx.nd.transpose(a).asnumpy(), host.T)
    np.testing.assert_array_equal(mx.nd.sum(a, axis=1).asnumpy(), host.sum(axis=1))
    np.testing.assert_array_equal(mx.nd.max(a, axis=(0,), keepdims=True).asnumpy(),
                                  host.max(axis=0, keepdims=True))
    np.testing.assert_array_equal(mx.nd.min(a).asnumpy(), [host.min()])
    assert mx.nd.sum(a).shape == (1,)  # MXNet 1.x's full reduction
    np.testing.assert_array_equal(a.slice(begin=(None, 1), end=(None, 3)).asnumpy(),
                                  host[:, 1:3])
    np.testing.assert_array_equal(a.slice_axis(axis=1, begin=1, end=3).asnumpy(), host[:, 1:3])
    idx = mx.nd.array([0, 3, 1])
    np.testing.assert_array_equal(mx.nd.choose_element_0index(a, idx).asnumpy(),
                                  host[np.arange(3), [0, 3, 1]])
    np.testing.assert_array_equal(mx.nd.pick(a, idx).asnumpy(), host[np.arange(3), [0, 3, 1]])
    filled = mx.nd.fill_element_0index(lhs=a, mhs=mx.nd.array([-1, -2, -3]), rhs=idx)
    expected = host.copy()
    expected[np.arange(3), [0, 3, 1]] = [-1, -2, -3]
    np.testing.assert_array_equal(filled.asnumpy(), expected)
    out = mx.nd.empty((3, 4))
    assert mx.nd.onehot_encode(idx, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4)[[0, 3, 1]])
    r = mx.nd.empty((3, 4))
    assert mx.nd.sqrt(a, out=r) is r
    np.testing.assert_allclose(r.asnumpy(), np.sqrt(host), rtol=1e-6)
    np.testing.assert_array_equal(_internal._plus_scalar(a, scalar=1).asnumpy(), host + 1)


def test_operator_function_argument_errors():
    a = mx.nd.ones((2, 2))
    with pytest.raises(TypeError, match="unexpected keyword argument 'axes'"):
        mx.nd.sum(a, axes=0)
    with pytest.raises(TypeError, match="must be an NDArray"):
        mx.nd.sqrt(np.ones(2))
    # A trailing input left out reaches the library, which names the count (as MXNet's);
    # one missing before a given input is a TypeError here.
    with pytest.raises(mx.MXNetError, match="dot: expected 2 input"):
        mx.nd.dot(a)
    with pytest.raises(TypeError, match="missing NDArray argument"):
        mx.nd.dot(rhs=a)
    with pytest.raises(TypeError, match="at most"):
        mx.nd.clip(a, 1, 2, 3)
    with pytest.raises(TypeError, match="multiple values"):
        mx.nd.clip(a, 1, a_min=2)
    with pytest.raises(TypeError, match="not an NDArray"):
        mx.nd.clip(a, a, 2)


def test_operator_errors_carry_the_c_message():
    a = mx.nd.ones((2, 3))
    b = mx.nd.ones((4, 5))
    with pytest.raises(mx.MXNetError) as info:
        mx.nd.dot(a, b)
    text = str(info.value)
    assert "dot" in text and "3" in text and "4" in text
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(mx.MXNetError, match="clip"):
        mx.nd.clip(a, "low", 2)
    # the process keeps working
    np.testing.assert_array_equal((a + 1).asnumpy(), np.full((2, 3), 2))


def test_random_is_seedable():
    mx.random.seed(42)
    first = mx.random.uniform(-10, 10, (1000,)).asnumpy()
    mx.random.seed(42)
    second = mx.random.uniform(-10, 10, (1000,)).asnumpy()
    np.testing.assert_array_equal(first, second)
    assert first.min() >= -10 and first.max() < 10
    normal = mx.random.normal(1, 2, shape=(20000,)).asnumpy()
    assert abs(normal.mean() - 1) < 0.1 and abs(normal.std() - 2) < 0.1
    assert mx.random.uniform().shape == (1,)
    assert mx.nd.random.uniform(0, 1, 5, dtype="float64").dtype == np.float64
    out = mx.nd.empty((3,))
    assert mx.random.uniform(out=out) is out
    with pytest.raises(ValueError):
        mx.random.seed("x")
    with pytest.raises(TypeError, match="same type"):
        mx.random.uniform(mx.nd.ones(1), 2)


def test_repr_like_mxnet():
    a = mx.nd.array([[1, 2], [3, 4]])
    assert repr(a) == "\n%s\n<NDArray 2x2 @cpu(0)>" % str(a.asnumpy())
    assert repr(mx.nd.NDArray(None)) == "<NDArray (no handle)>"


def test_scalar_conversions():
    assert mx.nd.array([3.5]).asscalar() == np.float32(3.5)
    assert float(mx.nd.array([2.0])) == 2.0
    assert int(mx.nd.array([7])) == 7
    assert bool(mx.nd.array([1])) is True
    with pytest.raises(ValueError, match="not a scalar"):
        mx.nd.ones((2,)).asscalar()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.nd.ones((2,)))
    assert [x.asscalar() for x in mx.nd.array([1, 2, 3])] == [1, 2, 3]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(1,), (3, 4), (2, 0, 3), (2, 1, 2, 3)])
def test_pickle_round_trip(dtype, shape):
    host = (np.arange(int(np.prod(shape))) % 120).reshape(shape).astype(dtype)
    a = mx.nd.array(host, dtype=dtype)
    b = pickle.loads(pickle.dumps(a))
    assert type(b) is mx.nd.NDArray
    assert b.dtype == dtype and b.shape == shape
    np.testing.assert_array_equal(b.asnumpy(), host)
    state = a.__getstate__()
    assert isinstance(state["handle"], bytearray)
    assert struct.unpack("<I", bytes(state["handle"][:4]))[0] == 0xF993FAC9


def test_pickle_of_an_empty_handle():
    empty = pickle.loads(pickle.dumps(mx.nd.NDArray(None)))
    assert empty.handle is None


def test_save_load_list_dict_and_single(in_tmp):
    arrays = [mx.nd.array(np.random.rand(*s), dtype=t)
              for s, t in [((2, 3), np.float32), ((4,), np.float64), ((1, 2, 2), np.int32)]]
    mx.nd.save("list.params", arrays)
    loaded = mx.nd.load("list.params")
    assert isinstance(loaded, list) and len(loaded) == 3
    for x, y in zip(arrays, loaded):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    mx.nd.save("dict.params", {"arg:w": arrays[0], "aux:z é": arrays[2]})
    loaded = mx.nd.load("dict.params")
    assert list(loaded) == ["arg:w", "aux:z é"]
    np.testing.assert_array_equal(loaded["aux:z é"].asnumpy(), arrays[2].asnumpy())
    mx.nd.save(str(in_tmp / "single.params"), arrays[1])
    assert len(mx.nd.load(in_tmp / "single.params")) == 1
    with pytest.raises(TypeError):
        mx.nd.save("bad.params", [1, 2])
    with pytest.raises(TypeError):
        mx.nd.save("bad.params", {1: arrays[0]})
    with pytest.raises(TypeError):
        mx.nd.save("bad.params", "text")


def test_golden_96_byte_file(in_tmp):
    """One float32 2x3 array on cpu(0) saved as a list: MXNet's 96 bytes (docs/mxnet-compat.md#file-formats)."""
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    mx.nd.save("golden.params", [mx.nd.array(values)])
    data = open("golden.params", "rb").read()
    expected = (struct.pack("<QQQ", 0x112, 0, 1)
                + struct.pack("<Ii", 0xF993FAC9, 0)
                + struct.pack("<i", 2) + struct.pack("<qq", 2, 3)
                + struct.pack("<ii", 1, 0) + struct.pack("<i", 0)
                + values.tobytes() + struct.pack("<Q", 0))
    assert len(data) == 96
    assert data == expected
    # and a file built by hand (as MXNet writes it) loads
    with open("by_hand.params", "wb") as f:
        f.write(expected)
    np.testing.assert_array_equal(mx.nd.load("by_hand.params")[0].asnumpy(), values)


def test_corrupt_files_raise_mxnet_error_naming_the_file(in_tmp):
    mx.nd.save("good.params", [mx.nd.ones((4, 4))])
    data = open("good.params", "rb").read()
    with open("cut.params", "wb") as f:
        f.write(data[:50])
    with pytest.raises(mx.MXNetError, match="cut.params"):
        mx.nd.load("cut.params")
    huge = bytearray(data)
    huge[16:24] = struct.pack("<Q", 2**62)  # absurd array count
    with open("huge.params", "wb") as f:
        f.write(bytes(huge))
    with pytest.raises(mx.MXNetError, match="huge.params"):
        mx.nd.load("huge.params")
    with pytest.raises(mx.MXNetError, match="missing.params"):
        mx.nd.load("missing.params")
    state = mx.nd.ones(2).__getstate__()
    state["handle"] = state["handle"][:-3]  # blob cut inside the data
    with pytest.raises(mx.MXNetError, match="raw bytes"):
        mx.nd.NDArray(None).__setstate__(state)
    with pytest.raises(mx.MXNetError):
        mx.nd.NDArray(None).__setstate__({"handle": bytearray(b"\x01\x02\x03")})


def test_stale_and_made_up_handles_never_crash():
    a = mx.nd.ones((2,))
    handle = a.handle
    del a
    with pytest.raises(mx.MXNetError, match="stale or unknown NDArray handle"):
        mx.nd.NDArray(handle).asnumpy()
    with pytest.raises(mx.MXNetError, match="stale or unknown NDArray handle"):
        mx.nd.NDArray(12345).shape
    with pytest.raises(TypeError):
        mx.nd.NDArray("handle")


def test_waitall_and_wait_to_read():
    xs = [mx.nd.ones((100, 100)) * i for i in range(20)]
    mx.nd.waitall()
    xs[5].wait_to_read()
    assert xs[5].asnumpy()[0, 0] == 5


def test_contexts():
    assert mx.cpu() == mx.Context("cpu", 0) == mx.Context(mx.cpu(0))
    assert str(mx.cpu(1)) == "cpu(1)" and repr(mx.gpu(0)) == "gpu(0)"
    assert mx.gpu(1).device_type == "gpu" and mx.gpu(1).device_id == 1
    assert mx.context.num_gpus() == mx.num_gpus() >= 0
    assert mx.current_context() == mx.cpu(0)
    with mx.cpu(1):
        assert mx.current_context() == mx.cpu(1)
        assert mx.nd.zeros((2,)).context == mx.cpu(1)
    assert mx.current_context() == mx.cpu(0)
    assert len({mx.cpu(0), mx.Context("cpu", 0)}) == 1
    with pytest.raises(ValueError):
        mx.Context("tpu", 0)
    with pytest.raises(ValueError):
        mx.cpu(-1)


def test_gpu_arrays_need_a_gpu():
    if mx.context.num_gpus() > 0:
        pytest.skip("this build has a GPU")
    with pytest.raises(mx.MXNetError):
        mx.nd.zeros((2,), ctx=mx.gpu(0)).wait_to_read()


def test_profiled_op_names_of_the_example_kinds(profile_to):
    profile_to.start("kinds.json", profile_imperative=True)
    x = mx.nd.array(np.arange(10, dtype=np.float32))
    x[3:8] = np.ones(5)
    y = x.slice(begin=(2,), end=(4,))
    z = x.copyto(mx.cpu(0))
    mx.nd.waitall()
    del y, z
    events = profile_to.finish()
    names = {e["name"] for e in events if e.get("cat") == "operator"}
    assert {"_slice_assign", "slice", "_copyto"} <= names


def test_pickled_arrays_keep_working_across_processes(in_tmp):
    import subprocess
    import sys
    a = mx.nd.array(np.arange(6).reshape(2, 3), dtype=np.int64)
    with open("a.pkl", "wb") as f:
        pickle.dump(a, f)
    script = ("import pickle, nanomx\n"
              "a = pickle.load(open('a.pkl', 'rb'))\n"
              "print(type(a).__name__, a.dtype.__name__, a.asnumpy().sum())\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(mx.__file__)))
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True, env=env, cwd=str(in_tmp)).stdout
    assert out.split() == ["NDArray", "int64", "15"]


def test_an_array_without_handle_says_so():
    empty = mx.nd.NDArray(None)
    with pytest.raises(mx.MXNetError, match="handle must not be null"):
        empty.shape
    with pytest.raises(mx.MXNetError, match="handle must not be null"):
        empty.asnumpy()


def test_freed_array_handles_are_never_reused():
    from nanomx.base import _LIB

    seen = set()
    for _ in range(50):
        a = mx.nd.ones((3,))
        assert a.handle not in seen
        seen.add(a.handle)
        del a  # freed with the object
    b = mx.nd.ones((2,)) + 1
    assert b.asnumpy().tolist() == [2.0, 2.0]
    old = next(iter(seen))
    with pytest.raises(mx.MXNetError, match="MXNDArrayFree: handle is a stale or unknown NDArray"):
        _LIB.free(old)  # double free of an array already freed by its object
    assert b.asnumpy().tolist() == [2.0, 2.0]


def test_nul_inside_a_name_is_refused_not_cut(tmp_path):
    from nanomx.base import _LIB

    a = mx.nd.ones((2,))
    with pytest.raises(ValueError, match="key contains a NUL character at index 1"):
        mx.nd.save(str(tmp_path / "x.params"), {"w\0b": a})
    with pytest.raises(ValueError, match="fname contains a NUL character"):
        mx.nd.save(str(tmp_path / "x\0.params"), [a])
    with pytest.raises(ValueError, match="fname contains a NUL character"):
        mx.nd.load(str(tmp_path / "x\0.params"))
    with pytest.raises(ValueError, match=r"vals\[0\] contains a NUL character"):
        _LIB.invoke(_LIB.get_op_handle("_plus_scalar"), [a], ["scalar"], ["1\0junk"], None)


def test_setstate_refuses_what_getstate_never_makes():
    with pytest.raises(TypeError, match="state must be the dict made by __getstate__, got int"):
        mx.nd.NDArray(None).__setstate__(5)
    with pytest.raises(ValueError, match="no 'handle' entry"):
        mx.nd.NDArray(None).__setstate__({})
    none = mx.nd.NDArray(None)
    none.__setstate__({"handle": None})  # a pickled none array stays a none array
    assert none.handle is None


def test_loading_a_directory_names_it(tmp_path):
    with pytest.raises(mx.MXNetError, match="'%s' is a directory" % str(tmp_path)):
        mx.nd.load(str(tmp_path))
