"""NDArray: MXNet 1.x's imperative array over nanomx's C API.

Every operation goes through one C call (MXImperativeInvoke for operators), so the profiler's
API rows show what Python asked for and the operator rows show what the engine ran.
"""
import numbers
import operator
import os
import warnings

import numpy as np

from ..base import _LIB, numeric_types
from ..context import Context, current_context

__all__ = ["NDArray", "array", "empty", "zeros", "ones", "full", "save", "load", "waitall",
           "onehot_encode", "add", "subtract", "multiply", "divide"]

# MXNet's type codes of the element types the library supports, asked of the library
# (MXGetDTypeTable) so that there is one table, nanomx/dtype.h's.
_DTYPE_NP_TO_MX = {np.dtype(name).type: code for code, name, _ in _LIB.dtype_table()}
_DTYPE_MX_TO_NP = {code: t for t, code in _DTYPE_NP_TO_MX.items()}

mx_real_t = np.float32


def _dtype_code(dtype):
    """MXNet's type code of a numpy dtype, type or name ('float32', np.int8, ...)."""
    if dtype is None:
        return 0
    supported = ", ".join(np.dtype(t).name for t in _DTYPE_NP_TO_MX)
    try:
        kind = np.dtype(dtype).type
    except TypeError:
        # bfloat16 and other names numpy does not know: say which dtypes exist.
        raise TypeError("data type %r not understood: nanomx does not support dtype %s "
                        "(supported: %s)" % (dtype, dtype, supported)) from None
    code = _DTYPE_NP_TO_MX.get(kind)
    if code is None:
        raise TypeError("nanomx does not support dtype %s (supported: %s)"
                        % (np.dtype(kind).name, supported))
    return code


def _dtype_name(dtype):
    return np.dtype(_DTYPE_MX_TO_NP[_dtype_code(dtype)]).name


def _as_shape(shape, what="shape"):
    """A shape as a tuple of non-negative ints (an int is a 1-D shape)."""
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError("%s must be an int or a tuple of ints, got %r" % (what, shape)) from None
    if any(d < 0 for d in dims):
        raise ValueError("%s must not have negative dimensions, got %r" % (what, dims))
    return dims


class NDArray(_LIB.NDArrayBase):
    """An n-dimensional array on a device, computed asynchronously by nanomx's engine.

    Reading values (asnumpy, asscalar, wait_to_read) waits for the operators that write them.
    The handle, its release and the arithmetic operators (+, -, *, /, their reversed and
    in-place forms, unary -) live in the C base type (python/src/ndarray_type.cc); they run
    MXNet 1.x's operators: broadcast_add/sub/mul/div for two arrays, _plus_scalar,
    _minus_scalar, _rminus_scalar, _mul_scalar, _div_scalar, _rdiv_scalar with a number.
    NDArray(handle, writable=True) wraps a handle from the C API (or None).
    """

    __slots__ = ("__weakref__",)
    # Makes numpy defer to NDArray in mixed expressions (np.float32(2) * nd).
    __array_priority__ = 1000.0

    # ---- pickling: MXNDArraySaveRawBytes / MXNDArrayLoadFromRawBytes ----------------------
    def __reduce__(self):
        return NDArray, (None,), self.__getstate__()

    def __getstate__(self):
        if self.handle is None:
            return {"handle": None}
        return {"handle": bytearray(_LIB.save_raw_bytes(self.handle))}

    def __setstate__(self, state):
        # Only what __getstate__ made: anything else would silently give an empty array.
        if not isinstance(state, dict):
            raise TypeError("NDArray.__setstate__: state must be the dict made by __getstate__, "
                            "got %s" % type(state).__name__)
        if "handle" not in state:
            raise ValueError("NDArray.__setstate__: state has no 'handle' entry (expected the "
                             "dict made by __getstate__, with the array's bytes or None)")
        blob = state["handle"]
        old = self.handle
        self.handle = _LIB.load_from_raw_bytes(blob) if blob is not None else None
        self.writable = True
        if old:
            _LIB.free(old)

    # ---- properties --------------------------------------------------------------------------
    @property
    def shape(self):
        return _LIB.shape(self.handle)

    @property
    def size(self):
        return _prod(_LIB.shape(self.handle))

    @property
    def ndim(self):
        return len(_LIB.shape(self.handle))

    @property
    def dtype(self):
        return _DTYPE_MX_TO_NP[_LIB.dtype(self.handle)]

    @property
    def context(self):
        return Context._from_ids(*_LIB.context(self.handle))

    ctx = context

    @property
    def stype(self):
        return "default"

    @property
    def T(self):
        if self.ndim < 2:
            return self
        return _op.transpose(self)

    def __repr__(self):
        if self.handle is None:
            return "<%s (no handle)>" % self.__class__.__name__
        shape = self.shape
        return "\n%s\n<%s %s @%s>" % (str(self.asnumpy()), self.__class__.__name__,
                                     "x".join(str(d) for d in shape), self.context)

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of an NDArray without dimensions")
        return shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        size = self.size
        if size == 0:
            return False
        if size == 1:
            return bool(self.asscalar())
        raise ValueError("The truth value of an NDArray with multiple elements is ambiguous.")

    def __float__(self):
        return float(self.asscalar())

    def __int__(self):
        return int(self.asscalar())

    # ---- host copies and waits ------------------------------------------------------------
    def asnumpy(self):
        """A numpy copy of the values (waits for pending writes)."""
        return _LIB.to_numpy(self.handle)

    def asscalar(self):
        """The only element, as a numpy scalar; ValueError unless size is 1."""
        if self.size != 1:
            raise ValueError("The current array is not a scalar (shape %s)" % (self.shape,))
        return self.asnumpy().reshape(-1)[0]

    def wait_to_read(self):
        _LIB.wait_to_read(self.handle)

    def _sync_copyfrom(self, source_array):
        """Copies a host array of the same shape into this array (waits for pending use)."""
        shape = self.shape
        host = _host_array(source_array, self.dtype)
        if host.shape != shape:
            raise ValueError("Shape inconsistent: expected %s vs got %s" % (shape, host.shape))
        _LIB.sync_copy_from(self.handle, host)

    # ---- copies, dtype, views ----------------------------------------------------------------
    def copyto(self, other):
        """Copies into an NDArray (returned) or onto a Context (a new array)."""
        if isinstance(other, NDArray):
            if other.handle == self.handle:
                warnings.warn("You are attempting to copy an array to itself", RuntimeWarning)
                return False
            return _invoke(_op_handle("_copyto"), (self,), out=other)
        if isinstance(other, Context):
            target = empty(self.shape, other, dtype=self.dtype)
            return _invoke(_op_handle("_copyto"), (self,), out=target)
        raise TypeError("copyto does not support type %s" % type(other).__name__)

    def copy(self):
        return self.copyto(self.context)

    def as_in_context(self, context):
        if self.context == context:
            return self
        return self.copyto(context)

    def astype(self, dtype, copy=True):
        if not copy and np.dtype(dtype) == np.dtype(self.dtype):
            return self
        result = empty(self.shape, ctx=self.context, dtype=dtype)
        self.copyto(result)
        return result

    def reshape(self, *shape, **kwargs):
        """A view with another shape (MXNet's codes 0, -1, -2, -3, -4; reverse=True matches
        them from the right)."""
        reverse = kwargs.pop("reverse", False)
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        elif not shape:
            shape = kwargs.pop("shape", None)
            if shape is None:
                raise TypeError("reshape() needs a shape")
        if kwargs:
            raise TypeError("reshape() got unexpected keyword arguments %s"
                            % ", ".join(sorted(kwargs)))
        try:
            dims = [operator.index(d) for d in shape]
        except TypeError:
            raise TypeError("reshape(): shape must hold ints, got %r" % (shape,)) from None
        return _new(_LIB.reshape(self.handle, dims, bool(reverse)))

    def broadcast_to(self, shape):
        """A new array broadcast to `shape` (axes of size 1 repeat; fewer dims pad on the left)."""
        shape = _as_shape(shape)
        cur_shape = self.shape
        message = ("operands could not be broadcast together with remapped shapes "
                   "[original->remapped]: %s and requested shape %s" % (cur_shape, shape))
        if len(shape) < len(cur_shape):
            raise ValueError(message)
        padded = (1,) * (len(shape) - len(cur_shape)) + cur_shape
        if any(c != t and c != 1 for c, t in zip(padded, shape)):
            raise ValueError(message)
        source = self.reshape(padded) if padded != cur_shape else self
        return _op.broadcast_to(source, shape=shape)

    def _at(self, idx):
        return _new(_LIB.at(self.handle, idx))

    def _slice(self, start, stop):
        return _new(_LIB.slice(self.handle, start, stop))

    # --- shape, indexing and numpy interop members (issue 11) ---
    # Members mirroring mx.nd's shape and indexing functions (MXNet 1.9.1's fluent methods),
    # advanced and boolean-mask indexing, and numpy interop (docs/runtime.md, "Operators added
    # for MXNet parity: shape and indexing").
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

    def __array__(self, dtype=None, copy=None):  # noqa: ARG002 (numpy's protocol)
        """np.array(a), np.asarray(a): a numpy copy (beyond MXNet 1.9.1, which has none)."""
        host = self.asnumpy()
        return host if dtype is None else host.astype(dtype, copy=False)

    def item(self):
        """The only element as a Python number; ValueError unless size is 1."""
        return self.asscalar().item()

    def tostype(self, stype):
        """A copy with storage type `stype`; nanomx has dense ('default') storage only."""
        if stype != "default":
            raise ValueError("nanomx supports only the 'default' (dense) storage type, got %r "
                             "(row_sparse and csr do not exist)" % (stype,))
        return self.copy()

    def zeros_like(self, *args, **kwargs):
        return _op.zeros_like(self, *args, **kwargs)

    def ones_like(self, *args, **kwargs):
        return _op.ones_like(self, *args, **kwargs)

    def flatten(self, inplace=False):
        """(d0, d1*...*dn): a view with inplace=True, else op Flatten (a copy)."""
        if inplace:
            shape = self.shape
            return self.reshape((shape[0] if shape else 1, -1))
        return _op.Flatten(self)

    def expand_dims(self, axis, inplace=False):
        """A new axis of size 1 at `axis`: a view with inplace=True, else op expand_dims."""
        if inplace:
            shape = list(self.shape)
            nd = len(shape)
            if not -nd - 1 <= axis <= nd:
                raise ValueError("axis must be in the range [%d, %d] (%d provided)"
                                 % (-nd - 1, nd, axis))
            shape.insert(axis if axis >= 0 else axis + nd + 1, 1)
            return self.reshape(shape)
        return _op.expand_dims(self, axis=axis)

    def squeeze(self, axis=None, inplace=False):
        """Size-1 axes removed: a view with inplace=True, else op squeeze."""
        result = _op.squeeze(self, axis=axis)
        if inplace:
            return self.reshape(result.shape)
        return result

    def split(self, *args, **kwargs):
        return _op.split(self, *args, **kwargs)

    # ---- indexing --------------------------------------------------------------------------
    def __getitem__(self, key):
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

    def __setitem__(self, key, value):
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

    def __pos__(self):
        return self

    # ---- autograd (mx.autograd) -----------------------------------------------------------
    def attach_grad(self, grad_req="write", stype=None):
        """Gives this array a zero gradient buffer and makes it an autograd variable."""
        if stype is not None and stype != "default":
            raise ValueError("nanomx supports only dense (stype 'default') gradients, got %r"
                             % (stype,))
        from .. import autograd
        autograd.mark_variables([self], [zeros(self.shape, self.context, dtype=self.dtype)],
                                grad_req)

    @property
    def grad(self):
        """The gradient buffer of an array marked with attach_grad, else None."""
        handle = _LIB.ndarray_get_grad(self.handle)
        return None if handle is None else _new(handle)

    def detach(self):
        """The same data without autograd history."""
        return _new(_LIB.ndarray_detach(self.handle))

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Gradients of this array with respect to the marked variables (into their .grad)."""
        from .. import autograd
        autograd.backward([self], None if out_grad is None else [out_grad], retain_graph,
                          train_mode)


# The generated operator functions (filled in by register.py when the package is imported).
from . import op as _op  # noqa: E402

_OP_HANDLES = {}


def _operator_method(name):
    """x.<name>(...) as mx.nd.<name>(x, ...), looked up when called (ops are generated later)."""
    def method(self, *args, **kwargs):
        return getattr(_op, name)(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = "mx.nd.%s with this array as its first argument." % name
    return method


for _name in ("slice", "slice_axis", "sum", "max", "min", "norm", "clip", "sqrt", "square",
              "transpose", "flip", "pick", "dot"):
    setattr(NDArray, _name, _operator_method(_name))
del _name


# --- shape, indexing and numpy interop members (issue 11), continued: fluent methods ---
for _name in ("swapaxes", "tile", "repeat", "pad", "take", "one_hot", "sort", "argsort", "topk",
              "diag", "slice_like"):
    setattr(NDArray, _name, _operator_method(_name))
del _name


def _op_handle(name):
    handle = _OP_HANDLES.get(name)
    if handle is None:
        handle = _OP_HANDLES[name] = _LIB.get_op_handle(name)
    return handle


_new = _LIB.wrap  # a new NDArray owning a handle the C API just gave out


def _invoke(op, inputs, keys=(), vals=(), out=None):
    """MXImperativeInvoke: the new result (an NDArray, or a list for several outputs), or
    `out` (an NDArray or a list of them) written and returned."""
    return _LIB.invoke(op, inputs, keys, vals, out)


def _prod(shape):
    size = 1
    for d in shape:
        size *= d
    return size


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


# ---- creation ---------------------------------------------------------------------------------
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


# --- creation functions added for MXNet parity (issue 11) ---
__all__ += ["arange", "linspace", "eye", "full_like", "empty_like", "concatenate", "moveaxis"]


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


def concatenate(arrays, axis=0, always_copy=True):
    """The arrays joined along `axis` (MXNet's Python-level concatenate, through op Concat)."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise ValueError("concatenate needs a non-empty list of NDArrays")
    if not all(isinstance(a, NDArray) for a in arrays):
        raise TypeError("concatenate: every element must be an NDArray")
    if not always_copy and len(arrays) == 1:
        return arrays[0]
    return _op.Concat(*arrays, dim=axis)


def moveaxis(tensor, source, destination):
    """The array with axes moved from `source` to `destination` (op transpose)."""
    ndim = tensor.ndim
    src = [source] if isinstance(source, numbers.Integral) else list(source)
    dst = [destination] if isinstance(destination, numbers.Integral) else list(destination)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    try:
        src = [operator.index(a) + (ndim if a < 0 else 0) for a in src]
        dst = [operator.index(a) + (ndim if a < 0 else 0) for a in dst]
    except TypeError:
        raise TypeError("moveaxis: axes must be ints") from None
    if any(not 0 <= a < ndim for a in src + dst) or len(set(src)) != len(src) \
            or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: bad axes %r -> %r for %d dimensions"
                         % (source, destination, ndim))
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _op.transpose(tensor, axes=tuple(order))


def _reject_kwargs(function, kwargs):
    if kwargs:
        raise TypeError("%s() got unexpected keyword arguments: %s"
                        % (function, ", ".join(sorted(kwargs))))


# ---- save / load / sync -----------------------------------------------------------------------
def save(fname, data):
    """Saves an NDArray, a list of NDArrays or a dict str -> NDArray in MXNet's .params format."""
    fname = os.fspath(fname)
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        keys = list(data.keys())
        if not all(isinstance(k, str) for k in keys):
            raise TypeError("save: dict keys must be str")
        values = list(data.values())
    elif isinstance(data, (list, tuple)):
        keys, values = None, list(data)
    else:
        raise TypeError("save only accepts a dict str->NDArray, a list of NDArray or an "
                        "NDArray, got %s" % type(data).__name__)
    if not all(isinstance(v, NDArray) for v in values):
        raise TypeError("save: every value must be an NDArray")
    _LIB.save(fname, [v.handle for v in values], keys)


def load(fname):
    """Loads a file written by save (or MXNet): a list, or a dict when the file has names."""
    fname = os.fspath(fname)
    handles, names = _LIB.load(fname)
    arrays = [_new(h) for h in handles]
    if not names:
        return arrays
    return dict(zip(names, arrays))


def waitall():
    """Waits until every pushed operator has run (raises the first error kept by one)."""
    _LIB.wait_all()


# ---- functions with MXNet's hand-written Python front ends -------------------------------------
def onehot_encode(indices, out):
    """One-hot rows into `out` (legacy `_onehot_encode`; prefer one_hot in MXNet)."""
    return _invoke(_op_handle("_onehot_encode"), (indices, out), out=out)


def _ufunc(lhs, rhs, python_op):
    """lhs <op> rhs for NDArrays and numbers (the NDArray operators decide which operator)."""
    if not (isinstance(lhs, (NDArray,) + numeric_types)
            and isinstance(rhs, (NDArray,) + numeric_types)):
        raise TypeError("unsupported operand types: %s and %s"
                        % (type(lhs).__name__, type(rhs).__name__))
    return python_op(lhs, rhs)


def add(lhs, rhs):
    """lhs + rhs, element-wise with broadcasting (NDArrays or numbers)."""
    return _ufunc(lhs, rhs, operator.add)


def subtract(lhs, rhs):
    return _ufunc(lhs, rhs, operator.sub)


def multiply(lhs, rhs):
    return _ufunc(lhs, rhs, operator.mul)


def divide(lhs, rhs):
    return _ufunc(lhs, rhs, operator.truediv)


# --- math, comparison and reduction members (issue 11) ---
# MXNet 1.x's Python operators and module functions over its math operators: an NDArray with an
# NDArray runs broadcast_<op>, with a number _<op>_scalar (the number cast to the array's dtype
# first), a number with an NDArray the reflected scalar operator (s > a is _lesser_scalar(a, s)).
# Comparisons give 1 and 0 in the input dtype. docs/mxnet-compat.md#operators has the rules.

# name: (operator for two arrays, array op number, number op array)
_BINARY_OPS = {
    "power": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar"),
    "modulo": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "hypot": ("broadcast_hypot", "_hypot_scalar", "_hypot_scalar"),
    "equal": ("broadcast_equal", "_equal_scalar", "_equal_scalar"),
    "not_equal": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"),
    "greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "greater_equal": ("broadcast_greater_equal", "_greater_equal_scalar",
                      "_lesser_equal_scalar"),
    "lesser": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "lesser_equal": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar"),
    "logical_and": ("broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar"),
    "logical_or": ("broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar"),
    "logical_xor": ("broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar"),
}


def _binary_op(name, lhs, rhs, out=None):
    """lhs <name> rhs through MXNet's operators, or NotImplemented when neither side is an
    NDArray paired with an NDArray or a number (so Python tries the reflected operator)."""
    array_op, scalar_op, reflected_op = _BINARY_OPS[name]
    if isinstance(lhs, NDArray):
        if isinstance(rhs, NDArray):
            return _invoke(_op_handle(array_op), (lhs, rhs), out=out)
        if isinstance(rhs, numeric_types):
            return _invoke(_op_handle(scalar_op), (lhs,), ("scalar",), (str(float(rhs)),),
                           out=out)
    elif isinstance(rhs, NDArray) and isinstance(lhs, numeric_types):
        return _invoke(_op_handle(reflected_op), (rhs,), ("scalar",), (str(float(lhs)),),
                       out=out)
    return NotImplemented


def _in_place(name, self, other, message):
    if not self.writable:
        raise ValueError(message)
    return _binary_op(name, self, other, out=self)


def _ndarray_eq(self, other):
    return _binary_op("equal", self, other)


def _ndarray_ne(self, other):
    return _binary_op("not_equal", self, other)


def _ndarray_gt(self, other):
    return _binary_op("greater", self, other)


def _ndarray_ge(self, other):
    return _binary_op("greater_equal", self, other)


def _ndarray_lt(self, other):
    return _binary_op("lesser", self, other)


def _ndarray_le(self, other):
    return _binary_op("lesser_equal", self, other)


def _ndarray_pow(self, other, modulo=None):
    if modulo is not None:
        return NotImplemented
    return _binary_op("power", self, other)


def _ndarray_rpow(self, other):
    return _binary_op("power", other, self)


def _ndarray_ipow(self, other):
    return _in_place("power", self, other, "trying to raise a readonly NDArray to a power")


def _ndarray_mod(self, other):
    return _binary_op("modulo", self, other)


def _ndarray_rmod(self, other):
    return _binary_op("modulo", other, self)


def _ndarray_imod(self, other):
    return _in_place("modulo", self, other, "trying to take modulo from a readonly NDArray")


def _ndarray_abs(self):
    return _op.abs(self)


def _ndarray_hash(self):
    # Identity, as MXNet's (== is elementwise, so equal arrays need not hash alike).
    return id(self) // 16


for _name, _function in (("__eq__", _ndarray_eq), ("__ne__", _ndarray_ne),
                         ("__gt__", _ndarray_gt), ("__ge__", _ndarray_ge),
                         ("__lt__", _ndarray_lt), ("__le__", _ndarray_le),
                         ("__pow__", _ndarray_pow), ("__rpow__", _ndarray_rpow),
                         ("__ipow__", _ndarray_ipow), ("__mod__", _ndarray_mod),
                         ("__rmod__", _ndarray_rmod), ("__imod__", _ndarray_imod),
                         ("__abs__", _ndarray_abs), ("__hash__", _ndarray_hash)):
    _function.__name__ = _function.__qualname__ = _name
    setattr(NDArray, _name, _function)

# Fluent methods: x.<name>(...) is mx.nd.<name>(x, ...), as MXNet's NDArray methods.
for _name in ("mean", "prod", "nansum", "nanprod", "argmax", "argmin", "argmax_channel",
              "abs", "sign", "round", "rint", "fix", "floor", "ceil", "trunc", "exp", "expm1",
              "log", "log10", "log2", "log1p", "rsqrt", "cbrt", "rcbrt", "reciprocal", "relu",
              "sigmoid", "softmax", "log_softmax", "softmin", "sin", "cos", "tan", "arcsin",
              "arccos", "arctan", "degrees", "radians", "sinh", "cosh", "tanh", "arcsinh",
              "arccosh", "arctanh"):
    setattr(NDArray, _name, _operator_method(_name))
del _name, _function


def _number_result(name, lhs, rhs):
    """MXNet's result for two numbers: the Python value (1 / 0 for comparisons)."""
    if name == "power":
        return lhs ** rhs
    if name == "maximum":
        return lhs if lhs > rhs else rhs
    if name == "minimum":
        return lhs if lhs < rhs else rhs
    if name == "modulo":
        return lhs % rhs
    if name == "hypot":
        return (lhs * lhs + rhs * rhs) ** 0.5
    compare = {"equal": operator.eq, "not_equal": operator.ne, "greater": operator.gt,
               "greater_equal": operator.ge, "lesser": operator.lt, "lesser_equal": operator.le,
               "logical_and": lambda a, b: a and b, "logical_or": lambda a, b: a or b,
               "logical_xor": lambda a, b: bool(a) != bool(b)}[name]
    return 1 if compare(lhs, rhs) else 0


def _make_module_function(name):
    def function(lhs, rhs):
        if isinstance(lhs, numeric_types) and isinstance(rhs, numeric_types):
            return _number_result(name, lhs, rhs)
        result = _binary_op(name, lhs, rhs)
        if result is NotImplemented:
            bad = lhs if not isinstance(lhs, (NDArray,) + numeric_types) else rhs
            raise TypeError("type %s not supported" % str(type(bad)))
        return result
    array_op, scalar_op, reflected_op = _BINARY_OPS[name]
    function.__name__ = function.__qualname__ = name
    function.__doc__ = ("%s(lhs, rhs): element-wise with broadcasting; runs %s for two "
                        "NDArrays, %s for an NDArray and a number, %s for a number and an "
                        "NDArray." % (name, array_op, scalar_op, reflected_op))
    return function


# MXNet's module functions (hypot has only its operators there).
_MODULE_FUNCTIONS = [name for name in _BINARY_OPS if name != "hypot"]
for _name in _MODULE_FUNCTIONS:
    globals()[_name] = _make_module_function(_name)
del _name
true_divide = divide
__all__ += _MODULE_FUNCTIONS + ["true_divide"]
# --- end of math, comparison and reduction members (issue 11) ---


_LIB.set_ndarray_class(NDArray, numeric_types)
