"""The functions that make new arrays: array (from host data), empty, zeros, ones, full, arange,
linspace, eye, full_like and empty_like, each one operator call (or MXNDArrayCreate and a copy
from the host)."""
import warnings

import numpy as np

from ..base import _LIB
from ..context import Context, current_context
from ._dtype import _dtype_code, _dtype_name, mx_real_t
from ._imperative import _invoke, _new, _op_handle
from ._shape import _as_shape
from .ndarray import NDArray

__all__ = ["array", "empty", "zeros", "ones", "full", "arange", "linspace", "eye", "full_like",
           "empty_like"]


def empty(shape, ctx=None, dtype=None):
    """A new array with uninitialised values (float32 unless dtype says otherwise)."""
    shape = _as_shape(shape)
    ctx = current_context() if ctx is None else Context(ctx)
    return _new(_LIB.create(list(shape), ctx.device_typeid, ctx.device_id, _dtype_code(dtype)))


def _creation_attrs(shape, ctx, dtype):
    shape = _as_shape(shape)
    ctx = current_context() if ctx is None else Context(ctx)
    return ("shape", "ctx", "dtype"), (str(shape), str(ctx), _dtype_name(dtype))


def zeros(shape, ctx=None, dtype=None, **kwargs):
    """A new array of zeros (op `_zeros`)."""
    _reject_kwargs("zeros", kwargs)
    keys, vals = _creation_attrs(shape, ctx, dtype)
    return _invoke(_op_handle("_zeros"), (), keys, vals)


def ones(shape, ctx=None, dtype=None, **kwargs):
    """A new array of ones (op `_ones`)."""
    _reject_kwargs("ones", kwargs)
    keys, vals = _creation_attrs(shape, ctx, dtype)
    return _invoke(_op_handle("_ones"), (), keys, vals)


def full(shape, val, ctx=None, dtype=mx_real_t, out=None):
    """An array filled with `val` (op `_full`), new or written into `out`."""
    if out is None:
        out = empty(shape, ctx, dtype)
    out[:] = val
    return out


def array(source_array, ctx=None, dtype=None):
    """A new array holding a copy of `source_array` (an NDArray, numpy array or nested list);
    float32 unless `dtype` says otherwise or the source is an NDArray."""
    if isinstance(source_array, NDArray):
        dtype = source_array.dtype if dtype is None else dtype
        result = empty(source_array.shape, ctx, dtype)
        result[:] = source_array
        return result
    dtype = mx_real_t if dtype is None else dtype
    _dtype_code(dtype)  # a dtype nanomx lacks names the ones it has
    try:
        host = np.ascontiguousarray(source_array, dtype=dtype)
    except (TypeError, ValueError):
        raise TypeError("source_array must be array like object, got %s"
                        % type(source_array).__name__) from None
    if host.ndim == 0:
        host = host.reshape(1)
    result = empty(host.shape, ctx, dtype)
    _LIB.sync_copy_from(result.handle, host)
    return result


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=mx_real_t):
    """Evenly spaced values in [start, stop) (op `_arange`); each repeated `repeat` times.
    Without `stop` the range is [0, start). Empty ranges are errors, as in MXNet."""
    if infer_range is not None:
        warnings.warn("`infer_range` argument has been deprecated", DeprecationWarning)
    ctx = current_context() if ctx is None else Context(ctx)
    return _invoke(_op_handle("_arange"), (),
                   ("start", "stop", "step", "repeat", "infer_range", "ctx", "dtype"),
                   (str(float(start)), "None" if stop is None else str(float(stop)),
                    str(float(step)), str(int(repeat)), "False", str(ctx), _dtype_name(dtype)))


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=mx_real_t):
    """`num` evenly spaced values from start to stop (op `_linspace`)."""
    ctx = current_context() if ctx is None else Context(ctx)
    return _invoke(_op_handle("_linspace"), (),
                   ("start", "stop", "num", "endpoint", "ctx", "dtype"),
                   (str(float(start)), str(float(stop)), str(int(num)), str(bool(endpoint)),
                    str(ctx), _dtype_name(dtype)))


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """An (N, M or N) array with ones on diagonal k (op `_eye`)."""
    _reject_kwargs("eye", kwargs)
    ctx = current_context() if ctx is None else Context(ctx)
    return _invoke(_op_handle("_eye"), (), ("N", "M", "k", "ctx", "dtype"),
                   (str(int(N)), str(int(M)), str(int(k)), str(ctx), _dtype_name(dtype)))


def full_like(a, fill_value, dtype=None, ctx=None):
    """An array of a's shape filled with `fill_value` (op `_full`; beyond MXNet's mx.nd)."""
    dtype = a.dtype if dtype is None else dtype
    ctx = a.context if ctx is None else Context(ctx)
    return _invoke(_op_handle("_full"), (), ("shape", "dtype", "value", "ctx"),
                   (str(a.shape), _dtype_name(dtype), str(float(fill_value)), str(ctx)))


def empty_like(a, dtype=None, ctx=None):
    """An uninitialised array of a's shape (and dtype and context unless given)."""
    return empty(a.shape, a.context if ctx is None else ctx, a.dtype if dtype is None else dtype)


def _reject_kwargs(function, kwargs):
    if kwargs:
        raise TypeError("%s() got unexpected keyword arguments: %s"
                        % (function, ", ".join(sorted(kwargs))))
