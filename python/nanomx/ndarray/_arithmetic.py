"""Arithmetic, comparison and logical operators: NDArray's ==, !=, <, <=, >, >=, **, %, unary +
and abs(), and the module functions add, subtract, multiply, divide, true_divide, power,
maximum, minimum, modulo, equal, not_equal, greater, greater_equal, lesser, lesser_equal,
logical_and, logical_or and logical_xor.

+, -, *, / and unary - are in NDArray's C base type. The rest follow MXNet 1.x: an NDArray with
an NDArray runs broadcast_<op>, with a number _<op>_scalar (the number cast to the array's dtype
first), a number with an NDArray the reflected scalar operator (s > a is _lesser_scalar(a, s)).
Comparisons give 1 and 0 in the input dtype. docs/mxnet-compat.md#operators has the rules.
"""
import operator

from ..base import numeric_types
from . import op as _op
from ._imperative import _invoke, _op_handle
from .ndarray import NDArray

__all__ = ["add", "subtract", "multiply", "divide", "true_divide"]


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


true_divide = divide


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


def _ndarray_pos(self):
    return self


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
__all__ += _MODULE_FUNCTIONS

# Installed on NDArray by ndarray.py.
_MEMBERS = {
    "__eq__": _ndarray_eq, "__ne__": _ndarray_ne, "__gt__": _ndarray_gt, "__ge__": _ndarray_ge,
    "__lt__": _ndarray_lt, "__le__": _ndarray_le, "__pow__": _ndarray_pow,
    "__rpow__": _ndarray_rpow, "__ipow__": _ndarray_ipow, "__mod__": _ndarray_mod,
    "__rmod__": _ndarray_rmod, "__imod__": _ndarray_imod, "__abs__": _ndarray_abs,
    "__pos__": _ndarray_pos, "__hash__": _ndarray_hash,
}
