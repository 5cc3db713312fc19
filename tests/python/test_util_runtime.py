"""mx.util, mx.runtime, the base helpers and Symbol's fluent methods."""
import os
import threading

import numpy as np
import pytest

import nanomx as mx
from nanomx import _symbol_fluent, runtime, util
from nanomx.base import MXNetError, NotImplementedForSymbol, _as_list, py_str


# ---- mx.util ----
def test_getenv_setenv_reach_the_c_runtime():
    util.setenv("NANOMX_UTIL_X", "abc")
    assert util.getenv("NANOMX_UTIL_X") == "abc" and os.environ["NANOMX_UTIL_X"] == "abc"
    util.setenv("NANOMX_UTIL_X", None)
    assert util.getenv("NANOMX_UTIL_X") is None and "NANOMX_UTIL_X" not in os.environ
    util.setenv("NANOMX_UTIL_X", None)  # unsetting an unset variable is fine


def test_np_shape_flag_scope_and_previous_value():
    assert not mx.is_np_shape()
    assert util.set_np_shape(True) is False
    assert mx.is_np_shape()
    assert util.set_np_shape(False) is True
    with mx.np_shape():
        assert mx.is_np_shape()
        with mx.np_shape(False):
            assert not mx.is_np_shape()
        assert mx.is_np_shape()
    assert not mx.is_np_shape()
    with pytest.raises(ZeroDivisionError):
        with mx.np_shape(True):
            1 / 0
    assert not mx.is_np_shape()


def test_np_shape_flag_is_per_thread():
    seen = []
    with mx.np_shape(True):
        t = threading.Thread(target=lambda: seen.append(mx.is_np_shape()))
        t.start()
        t.join()
    assert seen == [False]


def test_use_np_shape_decorates_functions_and_classes():
    @mx.use_np_shape
    def scalar_one():
        """doc"""
        return mx.is_np_shape(), mx.nd.ones(shape=())

    active, one = scalar_one()
    assert active and one.shape == () and scalar_one.__name__ == "scalar_one"
    assert scalar_one.__doc__ == "doc" and not mx.is_np_shape()

    @mx.use_np_shape
    class Holder(object):
        def method(self):
            return mx.is_np_shape()

        @property
        def prop(self):
            return mx.is_np_shape()

    assert Holder().method() and Holder().prop and not mx.is_np_shape()
    with pytest.raises(TypeError, match="use_np_shape can only decorate"):
        mx.use_np_shape(3)


def test_zero_size_and_scalar_arrays_in_both_modes():
    for active in (False, True):
        with mx.np_shape(active):
            assert mx.nd.ones((2, 0, 3)).shape == (2, 0, 3)
            assert mx.nd.zeros(()).shape == ()


def test_np_array_semantics_is_refused_clearly():
    assert mx.is_np_array() is False
    with mx.np_array(False):
        assert not mx.is_np_array()
    with pytest.raises(NotImplementedError, match="NumPy-array semantics"):
        with mx.np_array(True):
            pass

    @mx.use_np
    def f():
        return 1

    with pytest.raises(NotImplementedError, match="not available in nanomx"):
        f()

    @util.use_np_array
    class Block(object):
        def __init__(self):
            pass

    with pytest.raises(NotImplementedError):
        Block()
    with pytest.raises(NotImplementedError):
        util.set_np()
    with pytest.raises(ValueError):
        util.set_np(shape=False, array=True)
    util.set_np(shape=True, array=False)
    assert mx.is_np_shape()
    util.reset_np()
    assert not mx.is_np_shape()


def test_makedirs_gpu_count_and_memory(tmp_path):
    target = tmp_path / "a" / "b"
    util.makedirs(str(target))
    util.makedirs(str(target))
    assert target.is_dir()
    assert util.get_gpu_count() == mx.context.num_gpus()
    if util.get_gpu_count() == 0:
        with pytest.raises(MXNetError):
            util.get_gpu_memory(0)
    else:
        free, total = util.get_gpu_memory(0)
        assert 0 < free <= total
    with pytest.raises(ValueError):
        util.get_cuda_compute_capability(mx.cpu())


def test_set_module():
    @util.set_module("mxnet.test")
    def g():
        pass

    assert g.__module__ == "mxnet.test"


# ---- mx.runtime ----
EXPECTED_NAMES = [
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
    "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
    "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
    "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER", "DEBUG", "TVM_OP"]


def test_features_names_order_singleton_and_lookup():
    features = runtime.Features()
    assert list(features) == EXPECTED_NAMES
    assert runtime.Features() is features
    assert [f.name for f in runtime.feature_list()] == EXPECTED_NAMES
    for name, feature in features.items():
        assert features.is_enabled(name) == feature.enabled
        assert features.is_enabled(name.lower()) == feature.enabled
        assert repr(feature) == ("\u2714 " if feature.enabled else "\u2716 ") + name
    with pytest.raises(RuntimeError, match="Feature 'THIS GIRL IS ON FIRE' is unknown"):
        features.is_enabled("this girl is on fire")
    assert repr(features).startswith("[")


def _mapped_libraries():
    with open("/proc/self/maps") as f:
        return {os.path.basename(line.split()[-1]) for line in f if "/" in line}


def test_features_tell_the_truth_about_this_build():
    features = runtime.Features()
    assert features.is_enabled("CUDA") == (mx.context.num_gpus() > 0)
    libs = _mapped_libraries()
    assert features.is_enabled("MKLDNN") == any(n.startswith("libdnnl") for n in libs)
    assert features.is_enabled("BLAS_OPEN") == any(n.startswith("libopenblas") for n in libs)
    assert features.is_enabled("PROFILER") and features.is_enabled("CXX14")
    assert not features.is_enabled("TVM_OP") and not features.is_enabled("CAFFE")
    assert not features.is_enabled("LAPACK")  # no linalg_* operators in nanomx
    with open("/proc/cpuinfo") as f:
        flags = next(line for line in f if line.startswith("flags")).split()
    assert features.is_enabled("CPU_AVX2") == ("avx2" in flags)
    assert features.is_enabled("CPU_SSE3") == ("pni" in flags)
    library = runtime._loaded_library("libnanomx.so")
    if library:
        plugin = os.path.join(os.path.dirname(library), "libnanomx_kvstore_mpi.so")
        if "NANOMX_KVSTORE_MPI_LIBRARY" not in os.environ:
            assert features.is_enabled("DIST_KVSTORE") == os.path.isfile(plugin)


def test_elf_reader_lists_needed_libraries():
    needed, _ = runtime._elf_facts(runtime._LIB.__file__)
    assert needed and all(n.endswith(".so") or ".so." in n for n in needed)
    assert runtime._elf_facts(__file__) == ([], False)  # not an ELF file


# ---- base helpers ----
def test_base_helpers():
    assert py_str(b"abc") == "abc"
    assert _as_list(3) == [3] and _as_list([1, 2]) == [1, 2] and _as_list((1,)) == (1,)
    err = NotImplementedForSymbol(test_base_helpers, "op", 1)
    assert isinstance(err, MXNetError)
    assert str(err) == ('Function test_base_helpers (namely operator "op") with arguments '
                        "(<class 'int'>) is not implemented for Symbol and only available in "
                        "NDArray.")


# ---- Symbol fluent methods ----
def _run(sym, **inputs):
    exe = sym.bind(mx.cpu(), args={k: mx.nd.array(v) for k, v in inputs.items()})
    return [o.asnumpy() for o in exe.forward()]


FLUENT_CASES = [
    ("reshape", ((3, 2),), {}), ("transpose", (), {"axes": (1, 0)}), ("sum", (), {"axis": 1}),
    ("mean", (), {}), ("max", (), {"axis": 0}), ("min", (), {}), ("flatten", (), {}),
    ("expand_dims", (), {"axis": 1}), ("exp", (), {}), ("log", (), {}), ("sqrt", (), {}),
    ("square", (), {}), ("abs", (), {}), ("sigmoid", (), {}), ("relu", (), {}),
    ("softmax", (), {}), ("log_softmax", (), {"axis": 0}), ("slice_axis", (),
                                                            {"axis": 1, "begin": 0, "end": 2}),
    ("clip", (), {"a_min": 0.2, "a_max": 0.6}), ("tile", (), {"reps": (2, 1)}),
    ("repeat", (), {"repeats": 2, "axis": 0}), ("zeros_like", (), {}), ("ones_like", (), {}),
    ("flip", (), {"axis": 1}), ("norm", (), {}), ("argmax", (), {"axis": 1}),
]


@pytest.mark.parametrize("method,args,kwargs", FLUENT_CASES)
def test_fluent_method_equals_operator(method, args, kwargs):
    x = mx.sym.var("x")
    data = np.random.uniform(0.1, 1.0, size=(2, 3)).astype(np.float32)
    op_name = _symbol_fluent._FLUENT[method]
    expected = _run(getattr(mx.sym, op_name)(x, *args, **kwargs), x=data)
    got = _run(getattr(x, method)(*args, **kwargs), x=data)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-6)


def test_fluent_astype_split_squeeze_abs():
    x = mx.sym.var("x")
    assert x.astype("float64").infer_type(x="float32")[1] == [np.float64]
    parts = x.split(num_outputs=3, axis=1)
    assert len(parts) == 3 and parts.infer_shape(x=(2, 3))[1] == [(2, 1)] * 3
    assert x.squeeze(axis=1).infer_shape(x=(2, 1))[1] == [(2,)]
    np.testing.assert_allclose(_run(abs(x), x=np.array([-1.0, 2.0]))[0], [1.0, 2.0])


def test_fluent_methods_follow_the_registered_operators():
    registered = set(mx.base._LIB.list_op_names())
    for method, op_name in _symbol_fluent._FLUENT.items():
        assert hasattr(mx.sym.Symbol, method) == (op_name in registered), method
    assert not hasattr(mx.sym.var("x"), "shape_array")  # no such operator in nanomx


@pytest.mark.parametrize("name", ["asnumpy", "wait_to_read", "asscalar", "copy",
                                  "as_in_context", "detach", "backward"])
def test_ndarray_only_methods_raise_not_implemented_for_symbol(name):
    with pytest.raises(NotImplementedForSymbol, match="only available in NDArray"):
        getattr(mx.sym.var("x"), name)()


def test_top_level_names():
    assert mx.np_shape is util.np_shape and mx.use_np_shape is util.use_np_shape
    assert mx.is_np_shape is util.is_np_shape and mx.set_np_shape is util.set_np_shape
    assert mx.test_utils.assert_almost_equal and mx.runtime.Features and mx.util.getenv
