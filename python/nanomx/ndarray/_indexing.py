"""Indexing: a[key] and a[key] = value, NDArray's __getitem__ and __setitem__.

Basic keys (ints, slices, one Ellipsis) are resolved against the shape by _IndexPlan: a run of
contiguous memory is served as a view, anything else runs op `slice` (reading) or
`_slice_assign` / `_slice_assign_scalar` (writing). An int on a 1-D array gives shape (1,), as
in MXNet 1.x. Advanced keys (integer arrays, lists, ranges, boolean masks, NDArrays) are turned
into flat row indices by numpy and run as gather_nd (reading) or _scatter_set_nd (writing) over
the array viewed as (rows, *trailing whole axes).
"""
import numbers
import operator

import numpy as np

from ..base import _LIB, numeric_types
from . import op as _op
from ._creation import array
from ._imperative import _invoke, _op_handle
from ._shape import _prod
from .ndarray import NDArray


def _getitem(self, key):
    if _is_advanced(key):
        return self._get_advanced(key)
    shape = self.shape
    if isinstance(key, numbers.Integral) and not isinstance(key, bool):
        index = _normalize_index(key, shape, 0)
        if len(shape) == 1:
            return self._slice(index, index + 1)  # MXNet 1.x: shape (1,), not ()
        return self._at(index)
    if isinstance(key, slice) and key.step in (None, 1):
        start, stop, _ = key.indices(shape[0] if shape else 0)
        return self._slice(start, max(start, stop))
    plan = _IndexPlan(key, shape)
    if plan.contiguous:
        flat = self.reshape(-1)
        view = flat._slice(plan.offset, plan.offset + plan.length)
        return view.reshape(plan.result_shape)
    sliced = _op.slice(self, begin=plan.begin, end=plan.end, step=plan.step)
    if plan.result_shape != plan.sliced_shape:
        return sliced.reshape(plan.result_shape)
    return sliced


def _setitem(self, key, value):
    if not self.writable:
        raise ValueError("Failed to assign to a readonly NDArray")
    if _is_advanced(key):
        self._set_advanced(key, value)
        return
    shape = self.shape
    plan = _IndexPlan(key, shape)
    if plan.whole:
        if isinstance(value, NDArray):
            if value.handle != self.handle:
                if value.shape != shape:
                    value = value.broadcast_to(shape)
                value.copyto(self)
        elif isinstance(value, numeric_types):
            _invoke(_op_handle("_full"), (),
                    ("shape", "dtype", "value", "ctx"),
                    (str(shape), np.dtype(self.dtype).name, str(float(value)),
                     str(self.context)), out=self)
        else:
            _LIB.sync_copy_from(self.handle, _host_value(value, self.dtype, shape))
        return
    begin, end, step = str(plan.begin), str(plan.end), str(plan.step)
    if isinstance(value, numeric_types):
        _invoke(_op_handle("_slice_assign_scalar"), (self,),
                ("scalar", "begin", "end", "step"), (str(float(value)), begin, end, step),
                out=self)
        return
    # The value matches the region as numpy sees it (int-indexed axes dropped); the
    # operator wants it with those axes kept as size 1.
    if isinstance(value, NDArray):
        if value.shape != plan.sliced_shape:
            if value.shape != plan.result_shape:
                value = value.broadcast_to(plan.result_shape)
            value = value.reshape(plan.sliced_shape)
    else:
        host = _host_value(value, self.dtype, plan.result_shape)
        value = array(host.reshape(plan.sliced_shape), ctx=self.context, dtype=self.dtype)
    _invoke(_op_handle("_slice_assign"), (self, value), ("begin", "end", "step"),
            (begin, end, step), out=self)


def _advanced_plan(self, key):
    """Advanced indexing as gather_nd / _scatter_set_nd over the array viewed as
    (rows, *rest): (flat indices into the rows as numpy computes them, at least 1-D; rest,
    the trailing whole axes; rows, the product of the leading indexed axes; the shape
    numpy gives the result)."""
    shape = self.shape
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is None for k in key):
        raise IndexError("nanomx NDArray indexing does not support None (newaxis) together "
                         "with array indices")
    key = tuple(_index_entry(k) for k in key)
    if len(key) == 1 and isinstance(key[0], np.ndarray) and key[0].ndim >= 1:
        fast = _single_array_plan(key[0], shape)
        if fast is not None:
            return fast
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        used = sum(k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else 1
                   for k in key if k is not Ellipsis)
        key = key[:at] + (slice(None),) * max(len(shape) - used, 0) + key[at + 1:]
    used = sum(k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else 1
               for k in key)
    if used > len(shape):
        raise IndexError("too many indices (%d) for an array of shape %s" % (used, shape))
    # Trailing whole axes stay out of the index (MXNet drops them too).
    lead = list(key)
    while lead and isinstance(lead[-1], slice) and lead[-1] == slice(None):
        lead.pop()
    lead_ndim = sum(k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else 1
                    for k in lead)
    lead_shape = shape[:lead_ndim]
    flat = np.arange(_prod(lead_shape), dtype=np.int64).reshape(lead_shape)[tuple(lead)]
    flat = np.asarray(flat)
    rest = shape[lead_ndim:]
    # A single element (a 0-d index): MXNet's shape (1,), or the trailing axes.
    result_shape = flat.shape + rest if flat.ndim else (rest or (1,))
    return flat.reshape(flat.shape or (1,)), rest, _prod(lead_shape), result_shape


def _advanced_indices(self, flat, rows):
    dtype = np.int32 if rows < 2 ** 31 else np.int64  # MXNet's int32 indices
    return array(flat.reshape((1,) + flat.shape), ctx=self.context, dtype=dtype)


def _get_advanced(self, key):
    flat, rest, rows, result_shape = self._advanced_plan(key)
    source = self.reshape((rows,) + rest)
    result = _op.gather_nd(source, self._advanced_indices(flat, rows))
    return result if result.shape == result_shape else result.reshape(result_shape)


def _set_advanced(self, key, value):
    flat, rest, rows, result_shape = self._advanced_plan(key)
    target_shape = flat.shape + rest
    if isinstance(value, NDArray):
        if value.dtype != self.dtype:
            value = value.astype(self.dtype)
        if value.shape != result_shape:
            value = value.broadcast_to(result_shape)
        if value.shape != target_shape:
            value = value.reshape(target_shape)
    else:
        host = _host_value(value, self.dtype, result_shape).reshape(target_shape)
        value = array(host, ctx=self.context, dtype=self.dtype)
    view = self.reshape((rows,) + rest)
    _invoke(_op_handle("_scatter_set_nd"),
            (view, value, self._advanced_indices(flat, rows)),
            ("shape",), (str((rows,) + rest),), out=view)


def _normalize_index(index, shape, axis):
    if axis >= len(shape):
        raise IndexError("too many indices for an array of shape %s" % (shape,))
    size = shape[axis]
    i = operator.index(index)
    if i < 0:
        i += size
    if not 0 <= i < size:
        raise IndexError("index %d is out of bounds for axis %d with size %d"
                         % (index, axis, size))
    return i


def _host_array(value, dtype):
    """A C-contiguous numpy array of `dtype` from an array-like value (no copy when it is one)."""
    try:
        return np.ascontiguousarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise TypeError("NDArray does not support assignment with %s of type %s"
                        % (value, type(value).__name__)) from None


def _host_value(value, dtype, shape):
    """A numpy array of `dtype` broadcast to `shape` from an array-like value."""
    host = _host_array(value, dtype)
    try:
        return np.ascontiguousarray(np.broadcast_to(host, shape))
    except ValueError:
        raise ValueError("cannot assign a value of shape %s to a region of shape %s"
                         % (host.shape, shape)) from None


def _is_advanced(key):
    """Whether an index key holds an array, list or range (advanced indexing) or a boolean."""
    entries = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (NDArray, np.ndarray, list, range))
               or isinstance(k, (bool, np.bool_)) for k in entries)


def _single_array_plan(k, shape):
    """_advanced_plan for one mask or integer array over the leading axes, without numpy's
    fancy indexing of a whole index space (the common a[mask], a[idx] cases)."""
    if k.dtype == np.bool_:
        if k.shape != tuple(shape[:k.ndim]):
            raise IndexError("boolean index of shape %s does not match the array's leading "
                             "dimensions %s" % (k.shape, tuple(shape[:k.ndim])))
        flat = np.flatnonzero(k)
        rest = tuple(shape[k.ndim:])
        return flat, rest, _prod(shape[:k.ndim]), flat.shape + rest
    if not shape:
        return None
    n = shape[0]
    if k.size and (k.min() < -n or k.max() >= n):
        bad = k[(k < -n) | (k >= n)].flat[0]
        raise IndexError("index %d is out of bounds for axis 0 with size %d" % (bad, n))
    flat = np.where(k < 0, k + n, k) if k.size and k.min() < 0 else k
    rest = tuple(shape[1:])
    return flat, rest, n, flat.shape + rest


def _index_entry(k):
    """An advanced-index entry as numpy sees it: integer arrays (NDArrays and floats truncated
    to int64, as MXNet's astype), boolean numpy arrays and lists kept as masks."""
    if isinstance(k, NDArray):
        return k.asnumpy().astype(np.int64)
    if isinstance(k, (list, range)):
        k = np.asarray(k)
        if k.size == 0:
            k = k.astype(np.int64)
    if isinstance(k, (bool, np.bool_)):
        return np.asarray(k)
    if isinstance(k, np.ndarray):
        if k.dtype == np.bool_:
            return k
        if not np.issubdtype(k.dtype, np.integer):
            return k.astype(np.int64)
        return k
    if isinstance(k, (slice, numbers.Integral)) or k is Ellipsis:
        return k
    raise IndexError("NDArray does not support slicing with key %r of type %s"
                     % (k, type(k).__name__))


class _IndexPlan(object):
    """Basic indexing (ints, slices, one Ellipsis) resolved against a shape.

    begin/end/step: per-axis tuples for the `slice`/`_slice_assign` operators (an int index
    is [i, i+1)); sliced_shape keeps int-indexed axes as 1, result_shape drops them (MXNet 1.x
    gives (1,) when every axis is dropped). `contiguous`: the selection is one run of memory,
    served as a view; offset and length locate it in the flat array.
    """

    def __init__(self, key, shape):
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is None for k in key):
            raise IndexError("nanomx NDArray indexing does not support None (newaxis)")
        ellipses = sum(1 for k in key if k is Ellipsis)
        if ellipses > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if ellipses:
            at = next(i for i, k in enumerate(key) if k is Ellipsis)
            fill = len(shape) - (len(key) - 1)
            key = key[:at] + (slice(None),) * max(fill, 0) + key[at + 1:]
        if len(key) > len(shape):
            raise IndexError("too many indices (%d) for an array of shape %s"
                             % (len(key), shape))
        key = key + (slice(None),) * (len(shape) - len(key))
        begin, end, step, sliced, result = [], [], [], [], []
        for axis, (k, size) in enumerate(zip(key, shape)):
            if isinstance(k, slice):
                start, stop, stride = k.indices(size)
                if stride == 0:
                    raise ValueError("slice step cannot be zero")
                length = len(range(start, stop, stride))
                begin.append(start)
                end.append(stop if stride > 0 or stop >= 0 else None)
                step.append(stride)
                sliced.append(length)
                result.append(length)
            elif isinstance(k, (numbers.Integral, np.integer)) and not isinstance(k, bool):
                i = _normalize_index(k, shape, axis)
                begin.append(i)
                end.append(i + 1)
                step.append(1)
                sliced.append(1)
            else:
                raise IndexError(
                    "nanomx NDArray supports basic indexing only (ints, slices, '...'); got %r "
                    "of type %s" % (k, type(k).__name__))
        self.begin, self.end, self.step = tuple(begin), tuple(end), tuple(step)
        self.sliced_shape = tuple(sliced)
        self.result_shape = tuple(result) if result else (1,)
        self.whole = all(b == 0 and s == 1 and n == size and isinstance(k, slice)
                         for b, s, n, size, k in zip(begin, step, sliced, shape, key))
        # One run of memory: every step 1, and every axis after the first one that selects
        # more than a single index is whole.
        self.length = _prod(sliced)
        first_wide = next((a for a, n in enumerate(sliced) if n != 1), len(shape))
        self.contiguous = (self.length > 0 and all(s == 1 for s in step)
                           and all(sliced[a] == shape[a] for a in range(first_wide + 1,
                                                                        len(shape))))
        strides = [1] * len(shape)
        for a in range(len(shape) - 2, -1, -1):
            strides[a] = strides[a + 1] * shape[a + 1]
        self.offset = sum(b * s for b, s in zip(begin, strides))


# Installed on NDArray by ndarray.py.
_MEMBERS = {
    "__getitem__": _getitem,
    "__setitem__": _setitem,
    "_advanced_plan": _advanced_plan,
    "_advanced_indices": _advanced_indices,
    "_get_advanced": _get_advanced,
    "_set_advanced": _set_advanced,
}
