"""The C calls every NDArray operation goes through: operator handles by name,
MXImperativeInvoke, and a new NDArray around a handle the C API gives out."""
from ..base import _LIB

_OP_HANDLES = {}

_new = _LIB.wrap  # a new NDArray owning a handle the C API just gave out


def _op_handle(name):
    handle = _OP_HANDLES.get(name)
    if handle is None:
        handle = _OP_HANDLES[name] = _LIB.get_op_handle(name)
    return handle


def _invoke(op, inputs, keys=(), vals=(), out=None):
    """MXImperativeInvoke: the new result (an NDArray, or a list for several outputs), or
    `out` (an NDArray or a list of them) written and returned."""
    return _LIB.invoke(op, inputs, keys, vals, out)
