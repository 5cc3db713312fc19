"""NDArray: MXNet 1.x's imperative array over nanomx's C API.

Every operation goes through one C call (MXImperativeInvoke for operators), so the profiler's
API rows show what Python asked for and the operator rows show what the engine ran.

This module defines the NDArray class and is where the mx.nd functions are importable from
(mxnet.ndarray.ndarray.NDArray, .array, .save, ...). The class body holds the array's
properties, host copies, copies and views, numpy interop and autograd members; the sibling
modules define the rest of its members, which are installed on the class at the end of this
module, and the module functions:

  _indexing.py       a[key], a[key] = value
  _arithmetic.py     ==, !=, <, <=, >, >=, **, %, unary +, abs(); add, subtract, power, ...
  _fluent.py         x.<op>(...) as mx.nd.<op>(x, ...)
  _serialization.py  pickling; save, load
  _creation.py       array, empty, zeros, ones, full, arange, linspace, eye, full_like, ...
  _manipulation.py   concatenate, moveaxis, onehot_encode

and the helpers they share: _dtype.py (element types), _shape.py (shape arguments) and
_imperative.py (the C calls).
"""
import operator
import warnings

import numpy as np

from ..base import _LIB, numeric_types
from ..context import Context, current_context  # noqa: F401 (importable from here, as in MXNet)
from . import op as _op
# The dtype tables and helpers stay importable from here (executor.py, symbol.py, ... use them).
from ._dtype import (_DTYPE_MX_TO_NP, _DTYPE_NP_TO_MX, _dtype_code, _dtype_name,  # noqa: F401
                     mx_real_t)
from ._imperative import _invoke, _new, _op_handle
from ._shape import _as_shape, _prod


class NDArray(_LIB.NDArrayBase):
    """An n-dimensional array on a device, computed asynchronously by nanomx's engine.

    Reading values (asnumpy, asscalar, wait_to_read) waits for the operators that write them.
    The handle, its release and the arithmetic operators (+, -, *, /, their reversed and
    in-place forms, unary -) live in the C base type (python/src/ndarray_type.cc); they run
    MXNet 1.x's operators: broadcast_add/sub/mul/div for two arrays, _plus_scalar,
    _minus_scalar, _rminus_scalar, _mul_scalar, _div_scalar, _rdiv_scalar with a number.
    NDArray(handle, writable=True) wraps a handle from the C API (or None).
    Its other members are defined in _indexing.py, _arithmetic.py, _fluent.py and
    _serialization.py (see this module's docstring).
    """

    __slots__ = ("__weakref__",)
    # Makes numpy defer to NDArray in mixed expressions (np.float32(2) * nd).
    __array_priority__ = 1000.0

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

    # ---- numpy interop -----------------------------------------------------------------------
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

    # ---- shape members -----------------------------------------------------------------------
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


def waitall():
    """Waits until every pushed operator has run (raises the first error kept by one)."""
    _LIB.wait_all()


def _add_members(members):
    """Sets each function of {name: function} as the NDArray member `name`."""
    for name, function in members.items():
        function.__name__ = name
        function.__qualname__ = "NDArray." + name
        setattr(NDArray, name, function)


# The sibling modules import NDArray from this module, so they are imported once it exists. Their
# module functions are re-exported here, where MXNet scripts import them from
# (mxnet.ndarray.ndarray.array, ...), and by the package (mx.nd.array, ...).
from . import (_arithmetic, _creation, _fluent, _indexing, _manipulation,  # noqa: E402
               _serialization)
from ._arithmetic import *  # noqa: E402,F401,F403
from ._creation import *  # noqa: E402,F401,F403
from ._creation import empty, zeros  # noqa: E402
from ._indexing import _host_array  # noqa: E402
from ._manipulation import *  # noqa: E402,F401,F403
from ._serialization import *  # noqa: E402,F401,F403

__all__ = (["NDArray", "waitall"] + _creation.__all__ + _manipulation.__all__
           + _arithmetic.__all__ + _serialization.__all__)

for _module in (_indexing, _arithmetic, _fluent, _serialization):
    _add_members(_module._MEMBERS)
del _module

_LIB.set_ndarray_class(NDArray, numeric_types)
