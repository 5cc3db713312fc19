"""Fluent methods: x.<name>(...) is mx.nd.<name>(x, ...), as MXNet's NDArray methods.

Each method looks its operator function up in nanomx.ndarray.op when called: register.py
generates those functions after this module is imported.
"""
from . import op as _op

# The operators that are also NDArray methods.
_FLUENT_METHODS = (
    # shape, slicing and indexing
    "slice", "slice_axis", "transpose", "flip", "swapaxes", "tile", "repeat", "pad", "take",
    "pick", "one_hot", "diag", "slice_like",
    # sorting
    "sort", "argsort", "topk",
    # reductions
    "sum", "max", "min", "mean", "prod", "nansum", "nanprod", "norm", "argmax", "argmin",
    "argmax_channel",
    # element-wise math
    "clip", "abs", "sign", "round", "rint", "fix", "floor", "ceil", "trunc", "sqrt", "square",
    "rsqrt", "cbrt", "rcbrt", "reciprocal", "exp", "expm1", "log", "log10", "log2", "log1p",
    # activations and softmax
    "relu", "sigmoid", "softmax", "log_softmax", "softmin",
    # trigonometric and hyperbolic
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "degrees", "radians", "sinh", "cosh",
    "tanh", "arcsinh", "arccosh", "arctanh",
    # linear algebra
    "dot",
)


def _operator_method(name):
    """x.<name>(...) as mx.nd.<name>(x, ...), looked up when called (ops are generated later)."""
    def method(self, *args, **kwargs):
        return getattr(_op, name)(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = "mx.nd.%s with this array as its first argument." % name
    return method


# Installed on NDArray by ndarray.py.
_MEMBERS = {name: _operator_method(name) for name in _FLUENT_METHODS}
