"""mx.test_utils: helpers to test code written against nanomx, with MXNet 1.9.1's names,
signatures and tolerances, so test suites written for MXNet import and run unchanged.

    from nanomx.test_utils import assert_almost_equal, check_numeric_gradient
    check_numeric_gradient(mx.sym.tanh(mx.sym.var('x')), [np.random.rand(3, 4)])

This module defines the default context, the tolerances and the comparisons
(assert_almost_equal and its kin, retry, compare_optimizer); it re-exports the other helpers
from private modules, so every name is imported from here: _test_utils_data (random arrays,
shapes and matrices, checks of random generators), _test_utils_gradients (simple_forward,
numeric_grad, check_numeric_gradient, check_symbolic_forward/backward, check_speed,
check_consistency), _test_utils_env (devices, environment variables, the process) and
_test_utils_datasets (download, the data set getters, DummyIter).

Departures (nanomx has no sparse storage, no mx.np, no network at test time): rand_ndarray and
the sparse helpers raise NotImplementedError for 'row_sparse'/'csr'; comparisons run in numpy
(MXNet uses mx.nd.contrib.allclose for two same-context arrays: the same test); shapes that do
not broadcast fail as AssertionError; check_consistency drops contexts whose device is not
present (a GPU in a CPU-only process) and says so; the dataset getters read local copies and
raise RuntimeError naming the files when they are absent and the download fails.
"""
# Star imports of this module by MXNet's tests expect `mx` and `np` among its names. The
# imports marked "star import" are used only by the _test_utils_* modules: they stay here so
# that `from nanomx.test_utils import *` keeps bringing the names it always has.
import bz2  # noqa: F401 (star import)
import gzip  # noqa: F401 (star import)
import json
import logging  # noqa: F401 (star import)
import numbers
import os  # noqa: F401 (star import)
import platform  # noqa: F401 (star import)
import struct  # noqa: F401 (star import)
import sys
import time  # noqa: F401 (star import)
import traceback  # noqa: F401 (star import)
import zipfile  # noqa: F401 (star import)
from collections import OrderedDict  # noqa: F401 (star import)
from contextlib import contextmanager  # noqa: F401 (star import)

import numpy as np
import numpy.random as rnd  # noqa: F401 (star import)
import numpy.testing as npt

from .context import Context, current_context  # noqa: F401 (Context: MXNet exports it)
from .context import _context_stack
from .io import DataIter  # noqa: F401 (star import)
from .ndarray import NDArray, array  # noqa: F401 (array: star import)
from .runtime import Features  # noqa: F401 (star import)
from .symbol import Symbol  # noqa: F401 (star import)
from .util import getenv, setenv, use_np  # noqa: F401 (MXNet's test_utils exports them)

mx = sys.modules[__name__.rpartition(".")[0]]

_SPARSE_REFUSED = ("sparse storage type %r is not supported by nanomx (only 'default' dense "
                   "arrays exist)")


# ---- contexts and tolerances ----
def default_context():
    """The context tests run on: the current default context (cpu(0) unless changed)."""
    return current_context()


def set_default_context(ctx):
    """Makes `ctx` the default context of this thread (inside a `with ctx2:` block it lasts
    until the block ends, as in MXNet)."""
    stack = _context_stack()
    if stack:
        stack[-1] = ctx
    else:
        stack.append(ctx)


def default_dtype():
    return np.float32


_FLOAT_RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4,
               np.dtype(np.float64): 1e-5}
_FLOAT_ATOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3,
               np.dtype(np.float64): 1e-20}
_EXACT_TYPES = (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                np.int64, np.uint64)


def default_rtols():
    """Relative tolerance by dtype: 1e-2 float16, 1e-4 float32, 1e-5 float64, 0 integers."""
    return {**_FLOAT_RTOL, **{np.dtype(t): 0 for t in _EXACT_TYPES}}


def default_atols():
    """Absolute tolerance by dtype: 1e-1 float16, 1e-3 float32, 1e-20 float64, 0 integers."""
    return {**_FLOAT_ATOL, **{np.dtype(t): 0 for t in _EXACT_TYPES}}


def default_numeric_eps():
    """Finite-difference step by dtype (powers of two: no bits lost when added)."""
    return {np.dtype(np.float16): 1.0 / 2**6, np.dtype(np.float32): 1.0 / 2**9,
            np.dtype(np.float64): 1.0 / 2**14}


def effective_dtype(dat):
    """The dtype whose tolerances apply to `dat` (its own: nanomx's GPU code uses no TF32)."""
    return np.dtype(dat.dtype)


def get_tolerance(dat, tol, default_tol):
    """`tol` itself when it is a number, else its entry (or default_tol's) for dat's dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    tol = {} if tol is None else tol
    if dtype in tol:
        return tol[dtype]
    if dtype in default_tol:
        return default_tol[dtype]
    return default_tol[np.dtype(np.float64)] if dtype.kind in "fc" else 0


def get_tols(x, y, rtol, atol):
    """(rtol, atol) to compare x and y: the larger of the two inputs' per-dtype tolerances."""
    x = np.asarray(x) if not hasattr(x, "dtype") else x
    y = np.asarray(y) if not hasattr(y, "dtype") else y
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_etol(etol=None):
    return 0 if etol is None else etol


# ---- comparisons ----
def _to_numpy(x):
    if isinstance(x, NDArray):
        return x.asnumpy()
    return x if isinstance(x, np.ndarray) else np.asarray(x)


def same(a, b):
    """Whether two arrays are equal element for element (and in shape)."""
    return np.array_equal(_to_numpy(a), _to_numpy(b))


def checkShapes(a, b):
    if a.shape != b.shape:
        raise AssertionError(npt.build_err_msg(
            [a, b], err_msg="a.shape = %s and b.shape = %s are not equal" % (a.shape, b.shape)))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """np.allclose of a and b with the default float64 tolerances for those not given."""
    a, b = _to_numpy(a), _to_numpy(b)
    if not use_broadcast:
        checkShapes(a, b)
    return np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol), equal_nan=equal_nan)


def _violations(a, b, rtol, atol, equal_nan):
    """|a - b| / (atol + rtol |b|) per element: > 1 fails; equal values (infinities too) are
    0, a NaN against anything but an allowed NaN is inf."""
    with np.errstate(invalid="ignore", over="ignore"):
        af, bf = a.astype(np.float64), b.astype(np.float64)
        diff = np.where(af == bf, 0.0, np.abs(af - bf))
        ratio = diff / (atol + rtol * np.abs(bf) + 1e-20)
    nan_a, nan_b = np.isnan(af), np.isnan(bf)
    ratio = np.where(nan_a | nan_b, np.inf, ratio)
    if equal_nan:
        ratio = np.where(nan_a & nan_b, 0.0, ratio)
    return np.where(np.isnan(ratio), np.inf, ratio)


def locationError(a, b, index, names, maxError=False):
    """'Location of [maximum ]error: (i, j), a=..., b=...' for one element."""
    return "Location of %serror: %s, %s=%.8f, %s=%.8f" % (
        "maximum " if maxError else "", str(index), names[0], a[index], names[1], b[index])


def _mismatch_message(a, b, rtol, atol, names, equal_nan, mismatches):
    a, b = np.broadcast_arrays(a, b)
    ok = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    ratio = _violations(a, b, rtol, atol, equal_nan)
    worst = np.argsort(-ratio, axis=None, kind="stable")[:max(1, mismatches[0])]
    worst = [np.unravel_index(i, a.shape) for i in worst if not ok.flat[i]]
    lines = ["*** Maximum errors for vector of size %d:  rtol=%s, atol=%s" % (a.size, rtol, atol)]
    for n, idx in enumerate(worst, 1):
        lines.append("%3d: Error %f  %s" % (n, ratio[idx], locationError(a, b, idx, names)))
    top = worst[0] if worst else ()
    message = "Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %f%%).\n%s" % (
        ratio[top] if worst else 0.0, rtol, atol, 100.0 * np.count_nonzero(~ok) / max(a.size, 1),
        locationError(a, b, top, names, maxError=True) if worst else "")
    with np.printoptions(threshold=4, suppress=True):
        return "\n".join(lines) + "\n" + npt.build_err_msg([a, b], err_msg=message, names=names)


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Asserts |a - b| <= atol + rtol |b| element-wise (numpy arrays, NDArrays or numbers).

    rtol/atol: a number, a dict dtype -> number, or None for the per-dtype defaults (the larger
    of the two inputs'). The AssertionError names the inputs (`names`), the largest violations
    (up to mismatches[0] of them), their locations and the mismatching fraction.
    """
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _to_numpy(a), _to_numpy(b)
    if not use_broadcast:
        checkShapes(a, b)
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        npt.assert_equal(a, b)
        return
    try:
        if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
            return
    except ValueError as e:  # shapes that do not broadcast
        raise AssertionError("%s.shape=%s and %s.shape=%s cannot be compared: %s"
                             % (names[0], a.shape, names[1], b.shape, e)) from None
    raise AssertionError(_mismatch_message(a, b, rtol, atol, names, equal_nan, mismatches))


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"),
                                 equal_nan=False, mismatches=(10, 10)):
    """assert_almost_equal that tolerates a fraction `etol` of mismatching elements."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _to_numpy(a), _to_numpy(b)
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if 1 - np.count_nonzero(close) / close.size > etol:
        raise AssertionError(_mismatch_message(a, b, rtol, atol, names, equal_nan, mismatches))


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """assert_almost_equal with the positions where either input is NaN left out."""
    a, b = np.copy(_to_numpy(a)), np.copy(_to_numpy(b))
    nan_mask = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan_mask] = 0
    b[nan_mask] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs):
    """Asserts that f(*args, **kwargs) raises exception_type."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError("%s did not raise %s" % (getattr(f, "__name__", f),
                                                  exception_type.__name__))


def retry(n):
    """Decorator: reruns a stochastic test up to n times while it fails an assertion."""
    assert n > 0

    def decorate(f):
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    f(*args, **kwargs)
                    return
                except AssertionError:
                    if i == n - 1:
                        raise
                    mx.nd.waitall()
        return wrapper
    return decorate


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Runs one update of opt1 and of opt2 from the same weights and gradients and compares
    the states and weights (a list of shapes: opt2 updates them all in one call)."""
    if w_stype != "default" or g_stype != "default":
        raise NotImplementedError(_SPARSE_REFUSED % (w_stype if w_stype != "default"
                                                     else g_stype,))
    ctx = default_context()
    if not isinstance(shape, list):
        assert ntensors == 1
        w2 = mx.random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        g2 = mx.random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        w1, g1 = w2.copyto(ctx), g2.copyto(ctx)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1 = tuple(mx.random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    g1 = tuple(mx.random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    w2, g2 = tuple(w.copy() for w in w1), tuple(g.copy() for g in g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def same_symbol_structure(sym1, sym2):
    """Whether node i runs the same operator in both graphs, for every i."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2))


def same_array(array1, array2):
    """Whether two NDArrays share memory (a change to one shows in the other)."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


# ---- the helpers of the private modules, re-exported ----
# Imported last: those modules import names defined above from this module, which
# nanomx/__init__.py imports before anything else can import them.
from ._test_utils_data import (  # noqa: E402,F401
    random_arrays, random_uniform_arrays, random_sample, rand_ndarray, rand_sparse_ndarray,
    create_sparse_array, create_sparse_array_zd, rand_shape_2d, rand_shape_3d, rand_shape_nd,
    rand_coord_2d, assign_each, assign_each2, create_2d_tensor, create_vector, get_identity_mat,
    get_identity_mat_batch, np_reduce, collapse_sum_like, gen_buckets_probs_with_ppf,
    mean_check, var_check, chi_square_check, verify_generator, new_matrix_with_real_eigvals_2d,
    new_matrix_with_real_eigvals_nd, new_orthonormal_matrix_2d,
    new_sym_matrix_with_real_eigvals_2d, new_sym_matrix_with_real_eigvals_nd)
from ._test_utils_gradients import (  # noqa: E402,F401
    simple_forward, numeric_grad, check_numeric_gradient, check_symbolic_forward,
    check_symbolic_backward, check_speed, check_consistency, check_gluon_hybridize_consistency)
from ._test_utils_env import (  # noqa: E402,F401
    list_gpus, environment, set_env_var, discard_stderr, is_cd_run, is_aarch64_run,
    has_tvm_ops, is_op_runnable)
from ._test_utils_datasets import (  # noqa: E402,F401
    download, get_mnist, get_mnist_pkl, get_mnist_ubyte, get_cifar10, get_mnist_iterator,
    get_zip_data, get_bz2_data, get_im2rec_path, DummyIter)
