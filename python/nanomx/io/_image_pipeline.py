"""The handle of nanomx's C++ image pipeline (decode, augment, batch on a thread pool), shared by
mx.image.ImageIter and mx.io.ImageRecordIter, which differ only in how they build its config."""
from ..base import _LIB
from ..ndarray import NDArray
from .io import DataBatch


def create(cfg):
    """A pipeline handle for the config dict (each value passed as its str())."""
    keys = list(cfg)
    return _LIB.image_iter_create(keys, [str(cfg[k]) for k in keys])


def next_batch(handle):
    """The pipeline's next DataBatch; StopIteration at the end of the epoch."""
    got = _LIB.image_iter_next(handle)
    if got is None:
        raise StopIteration
    data, label, pad = got
    return DataBatch([NDArray(data)], [NDArray(label)], pad=pad)


def free(owner):
    """Frees owner._handle and clears it. The iterators take it as their __del__ itself (a class
    attribute, not a call from a method, which would look this module up in globals that may be
    cleared at interpreter shutdown); a constructor that raised may have left no handle, and at
    shutdown the library may already be gone."""
    handle = getattr(owner, "_handle", None)
    if handle is not None:
        try:
            _LIB.image_iter_free(handle)
        except Exception:  # interpreter shutdown
            pass
        owner._handle = None
