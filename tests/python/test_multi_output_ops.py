"""Operators with several outputs (SliceChannel / split) and any number of inputs (add_n /
ElementWiseSum), as MXNet's generated functions behave."""
import numpy as np
import pytest

import nanomx as mx


def test_split_returns_a_list_of_equal_parts():
    x = np.arange(24, dtype=np.float32).reshape(2, 6, 2)
    parts = mx.nd.split(mx.nd.array(x), num_outputs=3, axis=1)
    assert isinstance(parts, list) and len(parts) == 3
    for got, want in zip(parts, np.split(x, 3, axis=1)):
        assert got.shape == (2, 2, 2)
        np.testing.assert_array_equal(got.asnumpy(), want)


def test_slice_channel_default_axis_squeeze_and_single_output():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    halves = mx.nd.SliceChannel(mx.nd.array(x), num_outputs=2)  # axis=1 by default
    np.testing.assert_array_equal(halves[1].asnumpy(), x[:, 2:])
    rows = mx.nd.split(mx.nd.array(x), num_outputs=3, axis=0, squeeze_axis=True)
    assert [r.shape for r in rows] == [(4,), (4,), (4,)]
    np.testing.assert_array_equal(rows[2].asnumpy(), x[2])
    one = mx.nd.split(mx.nd.array(x), num_outputs=1, axis=0)
    assert isinstance(one, mx.nd.NDArray) and one.shape == (3, 4)


def test_split_into_given_outputs():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    outs = [mx.nd.zeros((2, 2)), mx.nd.zeros((2, 2))]
    mx.nd.split(mx.nd.array(x), num_outputs=2, out=outs)
    np.testing.assert_array_equal(outs[0].asnumpy(), x[:, :2])
    np.testing.assert_array_equal(outs[1].asnumpy(), x[:, 2:])


def test_split_uneven_names_the_shapes():
    with pytest.raises(mx.MXNetError, match=r"\(2, ?3\).*num_outputs=2.*2 does not evenly divide 3"):
        mx.nd.split(mx.nd.zeros((2, 3)), num_outputs=2)


def test_add_n_sums_any_number_of_arrays():
    arrays = [np.full((2, 3), i + 1, dtype=np.float32) for i in range(5)]
    got = mx.nd.add_n(*[mx.nd.array(a) for a in arrays])
    np.testing.assert_array_equal(got.asnumpy(), sum(arrays))
    same = mx.nd.ElementWiseSum(mx.nd.array(arrays[0]), mx.nd.array(arrays[1]), num_args=2)
    np.testing.assert_array_equal(same.asnumpy(), arrays[0] + arrays[1])
    single = mx.nd.add_n(mx.nd.array(arrays[2]))
    np.testing.assert_array_equal(single.asnumpy(), arrays[2])


def test_add_n_errors():
    a, b = mx.nd.zeros((2, 3)), mx.nd.zeros((3, 2))
    with pytest.raises(mx.MXNetError, match=r"add_n.*\(2, ?3\).*\(3, ?2\)"):
        mx.nd.add_n(a, b)
    with pytest.raises(mx.MXNetError, match="num_args"):
        mx.nd.add_n(a, a, num_args=3)
    with pytest.raises(TypeError, match="NDArray"):
        mx.nd.add_n(a, 1.0)
    with pytest.raises(TypeError, match="at least one"):
        mx.nd.add_n()
