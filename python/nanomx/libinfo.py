"""Finds the compiled extension nanomx._capi.

Looked for, in order: the folder named by NANOMX_LIBRARY_PATH, this package's own folder (an
installed copy), and the build folders of a source checkout (build/release, then build/*).
"""
import glob
import importlib.machinery
import importlib.util
import os
import sys

__version__ = "0.1.0"

_EXTENSION = "_capi"


def _candidates():
    env = os.environ.get("NANOMX_LIBRARY_PATH") or os.environ.get("MXNET_LIBRARY_PATH")
    if env:
        yield env if os.path.isdir(env) else os.path.dirname(env)
    here = os.path.dirname(os.path.abspath(__file__))
    yield here
    root = os.path.dirname(os.path.dirname(here))
    yield os.path.join(root, "build", "release", "python", "nanomx")
    for folder in sorted(glob.glob(os.path.join(root, "build", "*", "python", "nanomx"))):
        yield folder


def find_extension():
    """Path of the extension module; raises ImportError saying where it looked."""
    looked = []
    for folder in _candidates():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, _EXTENSION + suffix)
            if os.path.isfile(path):
                return path
        looked.append(folder)
    raise ImportError(
        "nanomx: the compiled extension %s was not found (looked in: %s). Build it with "
        "`scripts/run` or `cmake --build build/release --target nanomx_python`, or set "
        "NANOMX_LIBRARY_PATH to the folder that holds it." % (_EXTENSION, ", ".join(looked)))


def load_extension():
    """Imports nanomx._capi from wherever find_extension() finds it."""
    name = __package__ + "." + _EXTENSION
    if name in sys.modules:
        return sys.modules[name]
    path = find_extension()
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module
