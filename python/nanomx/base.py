"""What every part of the package shares: the error type and the loaded C API."""
import numbers

import numpy as np

from . import libinfo


class MXNetError(RuntimeError):
    """An error reported by nanomx's C API (the text is MXGetLastError's)."""


_LIB = libinfo.load_extension()
_LIB.set_error_class(MXNetError)

__version__ = libinfo.__version__


class _NullType(object):
    """Placeholder for arguments that were not given."""

    def __repr__(self):
        return "_Null"


_Null = _NullType()

string_types = (str,)
numeric_types = (float, int, np.generic)
integer_types = (int, np.integer)


def is_numeric(value):
    return isinstance(value, numbers.Number) or isinstance(value, np.generic)


def py_str(x):
    """Text from the bytes a C call returned (UTF-8), as MXNet's base.py gives it."""
    return x.decode("utf-8")


def _as_list(obj):
    """`obj` itself when it is a list or tuple, else [obj]."""
    if isinstance(obj, (list, tuple)):
        return obj
    return [obj]


class NotImplementedForSymbol(MXNetError):
    """An NDArray-only function (asnumpy, wait_to_read, ...) was called on a Symbol."""

    def __init__(self, function, alias, *args):
        super(NotImplementedForSymbol, self).__init__()
        self.function = function.__name__
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = "Function %s" % self.function
        if self.alias:
            msg += ' (namely operator "%s")' % self.alias
        if self.args:
            msg += " with arguments (%s)" % ", ".join(self.args)
        return msg + " is not implemented for Symbol and only available in NDArray."
