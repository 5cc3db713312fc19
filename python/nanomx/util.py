"""mx.util: environment variables as the C runtime sees them, the NumPy-shape flag, the
NumPy-array flag (refused: nanomx has no mx.np), GPU count and memory (MXNet 1.9.1's util).

What the NumPy-shape flag changes in nanomx: nothing in how arrays behave. nanomx's NDArrays
always accept scalar `()` and zero-size `(2, 0, 3)` shapes, with or without the flag (MXNet
refuses them outside it), and symbolic shape inference keeps MXNet's legacy reading in both
modes (a 0 dimension means "unknown"). The flag is kept per thread, as MXNet keeps it, so code
that sets, scopes and queries it (np_shape, use_np_shape, is_np_shape) runs unchanged.
"""
import ctypes
import functools
import inspect
import logging
import os
import threading

__all__ = ["getenv", "setenv", "makedirs", "get_gpu_count", "get_gpu_memory", "set_np_shape",
           "is_np_shape", "np_shape", "use_np_shape", "np_array", "is_np_array", "use_np_array",
           "use_np", "set_np", "reset_np", "set_module", "get_cuda_compute_capability"]

_LIBC = ctypes.CDLL(None)
_LIBC.getenv.restype = ctypes.c_char_p
_LIBC.getenv.argtypes = [ctypes.c_char_p]


# ---- environment variables ----
def getenv(name):
    """The value of environment variable `name` as the C runtime (and so nanomx's library)
    sees it, or None when it is unset."""
    value = _LIBC.getenv(name.encode("utf-8"))
    return None if value is None else value.decode("utf-8")


def setenv(name, value):
    """Sets (or, with value None, unsets) environment variable `name` for this process: Python's
    os.environ and the C runtime that nanomx's library reads both see the change."""
    if value is None:
        os.environ.pop(name, None)
        os.unsetenv(name)
    else:
        os.environ[name] = str(value)


def makedirs(d):
    """Creates directory `d` and its parents; an existing directory is fine."""
    os.makedirs(os.path.expanduser(d), exist_ok=True)


# ---- GPUs ----
def get_gpu_count():
    """The number of GPUs nanomx can use (0 without CUDA or without a visible GPU)."""
    from .context import num_gpus
    return num_gpus()


def get_gpu_memory(gpu_dev_id):
    """(free, total) bytes of GPU `gpu_dev_id`; MXNetError when there is no such GPU."""
    from .context import gpu_memory_info
    return gpu_memory_info(gpu_dev_id)


def get_cuda_compute_capability(ctx):
    """The compute capability of the GPU of `ctx` as an int (sm_80 -> 80), read from the CUDA
    driver library; ValueError for a CPU context, OSError when the driver is not there."""
    if ctx.device_type != "gpu":
        raise ValueError("Expecting a gpu context to get cuda compute capability, while "
                         "received ctx %s" % ctx)
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            cuda = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        raise OSError("could not load the CUDA driver library (libcuda.so)")
    major, minor, device = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    for step, call in (("cuInit", lambda: cuda.cuInit(0)),
                       ("cuDeviceGet", lambda: cuda.cuDeviceGet(ctypes.byref(device),
                                                                ctx.device_id)),
                       ("cuDeviceComputeCapability",
                        lambda: cuda.cuDeviceComputeCapability(ctypes.byref(major),
                                                               ctypes.byref(minor), device))):
        code = call()
        if code != 0:
            raise RuntimeError("%s failed with error code %d" % (step, code))
    return major.value * 10 + minor.value


# ---- NumPy-shape semantics (a per-thread flag) ----
_STATE = threading.local()
_logged = set()


def set_np_shape(active):
    """Turns the NumPy-shape flag of this thread on or off; returns its previous value.

    Turning it off while the NumPy-array flag is on is refused (ValueError), as in MXNet.
    """
    if active:
        if "shape" not in _logged:
            logging.info("NumPy-shape semantics has been activated in your code.")
            _logged.add("shape")
    elif is_np_array():
        raise ValueError("Deactivating NumPy shape semantics while NumPy array semantics is "
                         "still active is not allowed. Please consider calling "
                         "`npx.reset_np()` to deactivate both of them.")
    previous = is_np_shape()
    _STATE.np_shape = bool(active)
    return previous


def is_np_shape():
    """Whether the NumPy-shape flag is on in this thread (off by default)."""
    return getattr(_STATE, "np_shape", False)


class _NumpyShapeScope(object):
    """`with` scope that sets the NumPy-shape flag and restores the previous value on exit."""

    def __init__(self, active):
        self._active = active
        self._previous = None

    def __enter__(self):
        if self._active is not None:
            self._previous = set_np_shape(self._active)
        return self

    def __exit__(self, ptype, value, trace):
        if self._active is not None and self._previous != self._active:
            set_np_shape(self._previous)


def np_shape(active=True):
    """A `with` scope in which the NumPy-shape flag is `active`."""
    return _NumpyShapeScope(active)


def _decorate(func, scope, decorator_name):
    """Runs func (or every method and property of a class) inside scope()."""
    if inspect.isclass(func):
        members = inspect.getmembers(func, predicate=lambda f: inspect.isfunction(f)
                                     or inspect.ismethod(f) or isinstance(f, property))
        for name, member in members:
            if isinstance(member, property):
                setattr(func, name, property(_decorate(member.__get__, scope, decorator_name),
                                             member.__set__, member.__delattr__,
                                             member.__doc__))
            else:
                setattr(func, name, _decorate(member, scope, decorator_name))
        return func
    if callable(func):
        @functools.wraps(func)
        def scoped(*args, **kwargs):
            with scope():
                return func(*args, **kwargs)
        return scoped
    raise TypeError("%s can only decorate classes and callable objects, while received a %s"
                    % (decorator_name, type(func)))


def use_np_shape(func):
    """Decorator: runs a function, or every method and property of a class, with the
    NumPy-shape flag on."""
    return _decorate(func, lambda: np_shape(True), "use_np_shape")


# ---- NumPy-array semantics: refused (nanomx has no mx.np / mx.npx) ----
_NP_ARRAY_REFUSED = ("NumPy-array semantics (mx.np / mx.npx arrays) is not available in nanomx: "
                     "it implements MXNet 1.x's legacy mx.nd API only")


class _NumpyArrayScope(object):
    """`with` scope for the NumPy-array flag: entering with active=True raises
    NotImplementedError; active=False is a no-op (the flag is always off)."""

    def __init__(self, active):
        self._active = active

    def __enter__(self):
        if self._active:
            raise NotImplementedError(_NP_ARRAY_REFUSED)
        return self

    def __exit__(self, ptype, value, trace):
        return None


def np_array(active=True):
    """A `with` scope for the NumPy-array flag (active=True is refused, see module doc)."""
    return _NumpyArrayScope(active)


def is_np_array():
    """Always False: nanomx never creates mx.np arrays."""
    return False


def use_np_array(func):
    """Decorator accepted so that modules using it load; calling what it decorates raises
    NotImplementedError (NumPy-array semantics is not available)."""
    return _decorate(func, lambda: np_array(True), "use_np_array")


def use_np(func):
    """use_np_shape(use_np_array(func)): decorating works, calling raises NotImplementedError."""
    return use_np_shape(use_np_array(func))


def set_np(shape=True, array=True):
    """Sets both flags; array=True is refused (NotImplementedError), shape only is honoured."""
    if not shape and array:
        raise ValueError("NumPy Shape semantics is required in using NumPy array semantics.")
    if array:
        raise NotImplementedError(_NP_ARRAY_REFUSED)
    set_np_shape(shape)


def reset_np():
    """Turns both flags off."""
    set_np(shape=False, array=False)


def set_module(module):
    """Decorator that sets the __module__ a function or class reports."""
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator
