"""mx.nd.random: samples from nanomx's one seedable generator, as MXNet 1.9.1's mx.nd.random.

Number parameters run the `_random_<d>` operators (shape (1,) when no shape is given); NDArray
parameters run `_sample_<d>`, one set of `shape` draws per parameter element (output shape
params.shape + shape). Mixing the two raises, as in MXNet.
"""
import numbers

from ..base import _Null
from ..context import current_context
from . import _internal
from .ndarray import NDArray

__all__ = ["uniform", "normal", "randn", "randint", "exponential", "gamma", "poisson",
           "multinomial", "shuffle"]


def _shape(shape):
    if shape is _Null or shape is None:
        return (1,)  # MXNet 1.x's legacy shape mode: a single sample has shape (1,)
    if isinstance(shape, numbers.Integral):
        return (shape,)
    return tuple(shape)


def _random_helper(random_op, sample_op, params, shape, dtype, ctx, out, kwargs):
    if kwargs:
        raise TypeError("unexpected keyword arguments: %s" % ", ".join(sorted(kwargs)))
    values = list(params.values())
    if isinstance(values[0], NDArray):
        for value in values[1:]:
            if not isinstance(value, NDArray):
                raise TypeError("Distribution parameters must all have the same type, but got "
                                "both %s and %s." % (type(values[0]).__name__,
                                                     type(value).__name__))
        attrs = {}
        if shape is not _Null and shape is not None:
            attrs["shape"] = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
        if dtype is not _Null and dtype is not None:
            attrs["dtype"] = dtype
        return sample_op(*values, out=out, **attrs)
    for key, value in params.items():
        if isinstance(value, NDArray):
            raise TypeError("Distribution parameters must all have the same type, but got both "
                            "%s and NDArray." % type(values[0]).__name__)
        if not isinstance(value, numbers.Real):
            raise ValueError("Distribution parameters must be either NDArray or numbers, but got "
                             "%s for '%s'." % (type(value).__name__, key))
    attrs = dict(params)
    if out is None:
        attrs["shape"] = _shape(shape)
        attrs["ctx"] = current_context() if ctx is None else ctx
        if dtype is not _Null and dtype is not None:
            attrs["dtype"] = dtype
    else:
        attrs["shape"] = out.shape
        attrs["ctx"] = out.context
        attrs["dtype"] = out.dtype
    return random_op(out=out, **attrs)


def uniform(low=0, high=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from U[low, high) (op `_random_uniform`, or `_sample_uniform` for NDArrays)."""
    return _random_helper(_internal._random_uniform, _internal._sample_uniform,
                          {"low": low, "high": high}, shape, dtype, ctx, out, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale^2) (op `_random_normal`, or `_sample_normal` for NDArrays)."""
    if isinstance(loc, NDArray):
        if not isinstance(scale, NDArray):
            raise TypeError("Distribution parameters must all have the same type, but got both "
                            "NDArray and %s." % type(scale).__name__)
        return _random_helper(None, _internal._sample_normal, {"mu": loc, "sigma": scale}, shape,
                              dtype, ctx, out, kwargs)
    return _random_helper(_internal._random_normal, None, {"loc": loc, "scale": scale}, shape,
                          dtype, ctx, out, kwargs)


def randn(*shape, **kwargs):
    """Normal samples of shape `shape` given positionally: randn(2, 3, loc=0, scale=1)."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", _Null)
    ctx = kwargs.pop("ctx", None)
    out = kwargs.pop("out", None)
    if not shape and out is None:
        raise ValueError("randn needs a shape (its dimensions, positionally)")
    return normal(loc, scale, shape or _Null, dtype, ctx, out, **kwargs)


def randint(low, high, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Integers from [low, high) (op `_random_randint`; int32 unless dtype says int64)."""
    if isinstance(low, NDArray) or isinstance(high, NDArray):
        raise TypeError("randint takes numbers for 'low' and 'high' (MXNet has no "
                        "_sample_randint)")
    return _random_helper(_internal._random_randint, None, {"low": int(low), "high": int(high)},
                          shape, dtype, ctx, out, kwargs)


def exponential(scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Samples with mean `scale` (op `_random_exponential` with lam = 1/scale)."""
    if isinstance(scale, NDArray):
        return _random_helper(None, _internal._sample_exponential, {"lam": 1.0 / scale}, shape,
                              dtype, ctx, out, kwargs)
    return _random_helper(_internal._random_exponential, None, {"lam": 1.0 / scale}, shape,
                          dtype, ctx, out, kwargs)


def gamma(alpha=1, beta=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Gamma samples, shape alpha and scale beta (op `_random_gamma` / `_sample_gamma`)."""
    return _random_helper(_internal._random_gamma, _internal._sample_gamma,
                          {"alpha": alpha, "beta": beta}, shape, dtype, ctx, out, kwargs)


def poisson(lam=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Poisson samples (integer values in a float dtype; op `_random_poisson`)."""
    return _random_helper(_internal._random_poisson, _internal._sample_poisson, {"lam": lam},
                          shape, dtype, ctx, out, kwargs)


def multinomial(data, shape=_Null, get_prob=False, out=None, dtype="int32", **kwargs):
    """Category draws from the probabilities over data's last axis (op `_sample_multinomial`);
    with get_prob=True also their log-probabilities."""
    if kwargs:
        raise TypeError("unexpected keyword arguments: %s" % ", ".join(sorted(kwargs)))
    if not isinstance(data, NDArray):
        raise TypeError("multinomial: 'data' must be an NDArray, got %s" % type(data).__name__)
    attrs = {"get_prob": bool(get_prob), "dtype": dtype}
    if shape is not _Null and shape is not None:
        attrs["shape"] = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    return _internal._sample_multinomial(data, out=out, **attrs)


def shuffle(data, **kwargs):
    """A copy of data with its rows (axis 0) in random order (op `_shuffle`)."""
    return _internal._shuffle(data, **kwargs)
