"""Serialisation: pickling NDArrays (MXNDArraySaveRawBytes / MXNDArrayLoadFromRawBytes) and
save / load of NDArrays, lists and dicts of them in MXNet's .params format."""
import os

from ..base import _LIB
from ._imperative import _new
from .ndarray import NDArray

__all__ = ["save", "load"]


def _ndarray_reduce(self):
    return NDArray, (None,), self.__getstate__()


def _ndarray_getstate(self):
    if self.handle is None:
        return {"handle": None}
    return {"handle": bytearray(_LIB.save_raw_bytes(self.handle))}


def _ndarray_setstate(self, state):
    # Only what __getstate__ made: anything else would silently give an empty array.
    if not isinstance(state, dict):
        raise TypeError("NDArray.__setstate__: state must be the dict made by __getstate__, "
                        "got %s" % type(state).__name__)
    if "handle" not in state:
        raise ValueError("NDArray.__setstate__: state has no 'handle' entry (expected the "
                         "dict made by __getstate__, with the array's bytes or None)")
    blob = state["handle"]
    old = self.handle
    self.handle = _LIB.load_from_raw_bytes(blob) if blob is not None else None
    self.writable = True
    if old:
        _LIB.free(old)


def save(fname, data):
    """Saves an NDArray, a list of NDArrays or a dict str -> NDArray in MXNet's .params format."""
    fname = os.fspath(fname)
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        keys = list(data.keys())
        if not all(isinstance(k, str) for k in keys):
            raise TypeError("save: dict keys must be str")
        values = list(data.values())
    elif isinstance(data, (list, tuple)):
        keys, values = None, list(data)
    else:
        raise TypeError("save only accepts a dict str->NDArray, a list of NDArray or an "
                        "NDArray, got %s" % type(data).__name__)
    if not all(isinstance(v, NDArray) for v in values):
        raise TypeError("save: every value must be an NDArray")
    _LIB.save(fname, [v.handle for v in values], keys)


def load(fname):
    """Loads a file written by save (or MXNet): a list, or a dict when the file has names."""
    fname = os.fspath(fname)
    handles, names = _LIB.load(fname)
    arrays = [_new(h) for h in handles]
    if not names:
        return arrays
    return dict(zip(names, arrays))


# Installed on NDArray by ndarray.py.
_MEMBERS = {
    "__reduce__": _ndarray_reduce,
    "__getstate__": _ndarray_getstate,
    "__setstate__": _ndarray_setstate,
}
