"""mx.nd.random: uniform and normal samples from nanomx's seedable generator."""
import numbers

from ..base import _Null
from ..context import current_context
from . import _internal


def _shape(shape):
    if shape is _Null:
        return (1,)  # MXNet 1.x's legacy shape mode: a single sample has shape (1,)
    if isinstance(shape, numbers.Integral):
        return (shape,)
    return tuple(shape)


def _sample(op, params, shape, dtype, ctx, out, kwargs):
    if kwargs:
        raise TypeError("unexpected keyword arguments: %s" % ", ".join(sorted(kwargs)))
    for key, value in params.items():
        if not isinstance(value, numbers.Real):
            raise TypeError("%s must be a number (sampling with NDArray parameters is not "
                            "supported), got %s" % (key, type(value).__name__))
    attrs = dict(params)
    if out is None:
        attrs["shape"] = _shape(shape)
        attrs["ctx"] = current_context() if ctx is None else ctx
        if dtype is not _Null:
            attrs["dtype"] = dtype
    else:
        attrs["shape"] = out.shape
        attrs["ctx"] = out.context
        attrs["dtype"] = out.dtype
    return op(out=out, **attrs)


def uniform(low=0, high=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from U[low, high) (op `_random_uniform`)."""
    return _sample(_internal._random_uniform, {"low": low, "high": high}, shape, dtype, ctx,
                   out, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale^2) (op `_random_normal`)."""
    return _sample(_internal._random_normal, {"loc": loc, "scale": scale}, shape, dtype, ctx,
                   out, kwargs)
