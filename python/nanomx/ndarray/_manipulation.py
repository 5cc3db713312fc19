"""The module functions that rearrange arrays: concatenate (join along an axis), moveaxis
(reorder axes) and onehot_encode (indices as one-hot rows)."""
import numbers
import operator

from . import op as _op
from ._imperative import _invoke, _op_handle
from .ndarray import NDArray

__all__ = ["concatenate", "moveaxis", "onehot_encode"]


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


def onehot_encode(indices, out):
    """One-hot rows into `out` (legacy `_onehot_encode`; prefer one_hot in MXNet)."""
    return _invoke(_op_handle("_onehot_encode"), (indices, out), out=out)
