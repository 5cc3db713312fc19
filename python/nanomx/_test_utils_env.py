"""Devices, environment variables and the process, for mx.test_utils: list_gpus, environment,
set_env_var, discard_stderr and the run/platform/build queries (is_cd_run, is_aarch64_run,
has_tvm_ops, is_op_runnable). Private: nanomx.test_utils re-exports every public name here;
import them from there.
"""
import os
import platform
import sys
from contextlib import contextmanager

from .runtime import Features
from .util import getenv, setenv

mx = sys.modules[__name__.rpartition(".")[0]]


# ---- devices, environment, process ----
def list_gpus():
    """range over the GPU ids nanomx can use (empty without GPUs)."""
    return range(mx.util.get_gpu_count())


@contextmanager
def environment(*args):
    """`with environment(name, value):` or `with environment({name: value, ...}):` sets
    environment variables (None unsets) for the block, as the C runtime sees them, and
    restores the previous values afterwards, even when the block raises."""
    if len(args) == 1 and isinstance(args[0], dict):
        env_vars = args[0]
    elif len(args) == 2:
        env_vars = {args[0]: args[1]}
    else:
        raise ValueError("Expecting one dict arg or two args: env var name and value")
    snapshot = {name: os.environ.get(name) for name in env_vars}

    def apply(values):
        for name, value in values.items():
            setenv(name, value)
            if getenv(name) != value:
                raise RuntimeError("Could not set env var %s=%s within C Runtime" % (name, value))
    apply(env_vars)
    try:
        yield
    finally:
        mx.nd.waitall()
        apply(snapshot)


def set_env_var(key, val, default_val=""):
    """Sets environment variable `key` to `val`; returns its previous value (default_val
    when it was unset)."""
    prev = os.environ.get(key, default_val)
    setenv(key, val)
    return prev


@contextmanager
def discard_stderr():
    """`with discard_stderr():` sends file descriptor 2 (C code's output too) to /dev/null."""
    with open(os.devnull, "w") as bit_bucket:
        sys.stderr.flush()
        old = os.dup(2)
        try:
            os.dup2(bit_bucket.fileno(), 2)
            yield
        finally:
            sys.stderr.flush()
            os.dup2(old, 2)
            os.close(old)


def is_cd_run():
    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run():
    return platform.machine() == "aarch64"


def has_tvm_ops():
    """False: nanomx has no TVM-generated operators."""
    return Features().is_enabled("TVM_OP")


def is_op_runnable():
    """True: every nanomx operator runs on every context it supports."""
    return True
