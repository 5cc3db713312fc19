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
