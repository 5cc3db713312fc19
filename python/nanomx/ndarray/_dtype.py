"""Element types: MXNet's type codes of the dtypes the library supports, and conversions between
them and numpy's dtypes."""
import numpy as np

from ..base import _LIB

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
