"""Symbol's fluent methods, as MXNet 1.9.1 has them: s.<method>(...) is mx.sym.<op>(s, ...).

Importing this module (symbol/__init__.py does, after the operator functions are generated)
attaches to Symbol one method per entry of _FLUENT whose operator this build registers; a
method whose operator is missing is left out (AttributeError, as for any unknown attribute)
rather than failing when called. The NDArray-only methods raise NotImplementedForSymbol, as
MXNet's do. Methods Symbol already defines are never replaced.
"""
from .base import _LIB, NotImplementedForSymbol
from .symbol import op as _op
from .symbol.symbol import Symbol

# method name -> operator name, in MXNet 1.9.1's order.
_FLUENT = {name: name for name in (
    # shape and layout
    "reshape", "reshape_like", "zeros_like", "ones_like", "broadcast_axes", "repeat", "pad",
    "swapaxes", "split", "slice", "slice_axis", "slice_like", "take", "one_hot", "pick",
    # sorting and indexing
    "sort", "topk", "argsort", "argmax", "argmax_channel", "argmin",
    # element-wise, shape queries
    "clip", "abs", "sign", "flatten", "shape_array", "size_array", "expand_dims",
    "broadcast_to", "broadcast_like", "tile", "transpose", "flip", "depth_to_space",
    "space_to_depth", "diag",
    # reductions
    "sum", "nansum", "prod", "nanprod", "mean", "max", "min", "norm",
    # rounding
    "round", "rint", "fix", "floor", "ceil", "trunc",
    # trigonometric and hyperbolic
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "degrees", "radians", "sinh", "cosh",
    "tanh", "arcsinh", "arccosh", "arctanh",
    # exponents, powers, activations
    "exp", "expm1", "log", "log10", "log2", "log1p", "sqrt", "rsqrt", "cbrt", "rcbrt",
    "square", "reciprocal", "relu", "sigmoid", "softmax", "log_softmax", "softmin", "squeeze",
)}
_FLUENT["astype"] = "cast"

# Methods that only make sense for arrays.
_NDARRAY_ONLY = ("wait_to_read", "asnumpy", "asscalar", "copy", "as_in_context", "detach",
                 "backward")


def _operator_method(method_name, op_name):
    def method(self, *args, **kwargs):
        return getattr(_op, op_name)(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = method_name
    method.__doc__ = "mx.sym.%s with this symbol as its first input." % op_name
    return method


def _ndarray_only_method(name):
    def method(self, *args, **kwargs):  # noqa: ARG001 (any call is refused)
        raise NotImplementedForSymbol(method, None)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = "Only available on NDArray: raises NotImplementedForSymbol."
    return method


def _attach(cls):
    """Adds the methods to `cls`; returns the names added."""
    registered = set(_LIB.list_op_names())
    added = []
    for method_name, op_name in _FLUENT.items():
        if op_name in registered and not hasattr(cls, method_name):
            setattr(cls, method_name, _operator_method(method_name, op_name))
            added.append(method_name)
    for name in _NDARRAY_ONLY:
        if not hasattr(cls, name):
            setattr(cls, name, _ndarray_only_method(name))
            added.append(name)
    if not hasattr(cls, "__abs__") and "abs" in registered:
        cls.__abs__ = lambda self: self.abs()
        added.append("__abs__")
    return added


ATTACHED = tuple(_attach(Symbol))
