"""mx.test_utils: each helper's behaviour, including how failures are reported."""
import gzip
import os
import struct
import sys

import numpy as np
import pytest

import nanomx as mx
from nanomx import test_utils as tu


@pytest.fixture(autouse=True)
def _seeded():
    """Fixed seeds: the statistical checks and finite differences below are then repeatable."""
    np.random.seed(20240)
    mx.random.seed(20240)


# ---- contexts and tolerances ----
def test_default_context_follows_with_blocks_and_set_default_context():
    assert tu.default_context() == mx.cpu(0)
    with mx.cpu(1):
        assert tu.default_context() == mx.cpu(1)
        tu.set_default_context(mx.cpu(2))  # lasts until the block ends, as in MXNet
        assert tu.default_context() == mx.cpu(2)
    assert tu.default_context() == mx.cpu(0)
    tu.set_default_context(mx.cpu(3))
    try:
        assert tu.default_context() == mx.cpu(3)
    finally:
        tu.set_default_context(mx.cpu(0))
    assert mx.nd.zeros((1,)).context == mx.cpu(0)


def test_tolerances_by_dtype():
    assert tu.default_rtols()[np.dtype(np.float16)] == 1e-2
    assert tu.default_atols()[np.dtype(np.float32)] == 1e-3
    assert tu.default_rtols()[np.dtype(np.int32)] == 0
    assert tu.default_numeric_eps()[np.dtype(np.float64)] == 1.0 / 2**14
    # The larger of the two inputs' defaults; numbers and NDArrays count by their dtype.
    assert tu.get_tols(np.ones(2, np.float16), np.ones(2), None, None) == (1e-2, 1e-1)
    assert tu.get_tols(mx.nd.ones(2), 1.0, None, None) == (1e-4, 1e-3)
    assert tu.get_tols(np.ones(2), np.ones(2), 0.5, {np.dtype(np.float64): 0.25}) == (0.5, 0.25)
    assert tu.get_rtol() == 1e-5 and tu.get_atol(7) == 7 and tu.get_etol() == 0


# ---- comparisons ----
def test_assert_almost_equal_accepts_numpy_ndarray_and_numbers():
    a = np.random.rand(3, 4).astype(np.float32)
    tu.assert_almost_equal(a, mx.nd.array(a))
    tu.assert_almost_equal(mx.nd.array(a), mx.nd.array(a) + 1e-6)
    tu.assert_almost_equal(a, a + 5e-4)  # float32: atol 1e-3
    tu.assert_almost_equal(2.0, np.float64(2.0))
    tu.assert_almost_equal(np.array([True, False]), np.array([True, False]))
    tu.assert_almost_equal(np.array([1.0, np.nan]), np.array([1.0, np.nan]), equal_nan=True)
    tu.assert_almost_equal(np.ones((2, 3)), np.ones(3))  # broadcasting, as MXNet


def test_assert_almost_equal_reports_mismatch_location_and_names():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    b = a.copy()
    b[1, 0] = 3.5
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(a, b, names=("EXPECTED", "GOT"))
    text = str(info.value)
    assert "exceeds tolerance rtol=1.000000e-05, atol=1.000000e-20" in text
    assert "mismatch 25.000000%" in text
    assert "Location of maximum error: (1, 0), EXPECTED=3.00000000, GOT=3.50000000" in text
    assert "EXPECTED: array" in text and "GOT: array" in text


def test_assert_almost_equal_failures_nan_shape_bool_and_tolerances():
    with pytest.raises(AssertionError, match="mismatch 50"):
        tu.assert_almost_equal(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    with pytest.raises(AssertionError, match="cannot be compared"):
        tu.assert_almost_equal(np.ones(3), np.ones(4))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.ones(3), np.ones((1, 3)), use_broadcast=False)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True]), np.array([False]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1, 2], np.int32), np.array([1, 3], np.int32))
    tu.assert_almost_equal(np.array([1.0]), np.array([1.2]), rtol=0.5, atol=0)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1.0]), np.array([1.2]), rtol=0.01, atol=0)


def test_almost_equal_same_and_ignore_nan():
    assert tu.almost_equal(np.ones(3), np.ones(3) + 1e-7)
    assert not tu.almost_equal(np.ones(3), np.ones(3) + 1e-3)
    assert tu.same(np.arange(4), mx.nd.array(np.arange(4)).asnumpy().astype(np.int64))
    assert not tu.same(np.arange(4), np.arange(1, 5))
    assert not tu.same(np.ones(3), np.ones(4))
    tu.assert_almost_equal_ignore_nan(np.array([1.0, np.nan, 3.0]), np.array([1.0, 7.0, 3.0]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_ignore_nan(np.array([1.0, np.nan]), np.array([2.0, 0.0]))


def test_assert_almost_equal_with_err_and_assert_allclose():
    a = np.zeros(10)
    b = a.copy()
    b[0] = 1.0
    tu.assert_almost_equal_with_err(a, b, rtol=1e-5, atol=1e-5, etol=0.2)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(a, b, rtol=1e-5, atol=1e-5, etol=0.05)
    tu.assert_allclose(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    with pytest.raises(AssertionError):
        tu.assert_allclose(np.array([1.0]), np.array([1.0 + 1e-6]))


def test_assert_exception():
    tu.assert_exception(int, ValueError, "x")
    with pytest.raises(AssertionError, match="did not raise ValueError"):
        tu.assert_exception(int, ValueError, "3")
    with pytest.raises(TypeError):  # another exception type passes through
        tu.assert_exception(int, ValueError, None)


def test_retry_reruns_until_success():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) >= 2

    flaky()
    assert len(calls) == 2

    @tu.retry(2)
    def failing():
        raise AssertionError("always")

    with pytest.raises(AssertionError, match="always"):
        failing()


# ---- random data ----
def test_random_arrays_and_shapes():
    a = tu.random_arrays((2, 3))
    assert a.shape == (2, 3) and a.dtype == np.float32
    b, c = tu.random_arrays((4,), ())
    assert b.shape == (4,) and c.shape == ()
    u = tu.random_uniform_arrays((5,), low=2.0, high=3.0)[0]
    assert u.shape == (5,) and np.all((u >= 2) & (u <= 3))
    for _ in range(20):
        s2 = tu.rand_shape_2d(3, 4)
        assert 1 <= s2[0] <= 3 and 1 <= s2[1] <= 4
        assert all(1 <= d <= 2 for d in tu.rand_shape_3d(2, 2, 2))
        nd_shape = tu.rand_shape_nd(4, dim=3, allow_zero_size=True)
        assert len(nd_shape) == 4 and all(0 <= d <= 3 for d in nd_shape)
    sample = tu.random_sample(list(range(10)), 4)
    assert len(sample) == 4 and len(set(sample)) == 4
    with pytest.raises(AssertionError):
        tu.random_sample([1, 2], 3)


def test_rand_ndarray_dense_and_sparse_refused():
    x = tu.rand_ndarray((3, 4), dtype="float64")
    assert isinstance(x, mx.nd.NDArray) and x.shape == (3, 4) and x.dtype == np.float64
    assert x.context == tu.default_context()
    for stype in ("row_sparse", "csr"):
        with pytest.raises(NotImplementedError, match="not supported by nanomx"):
            tu.rand_ndarray((3, 4), stype)
        with pytest.raises(NotImplementedError):
            tu.create_sparse_array((3, 4), stype)


def test_np_reduce_and_collapse_sum_like():
    x = np.random.rand(2, 3, 4)
    np.testing.assert_allclose(tu.np_reduce(x, 1, False, np.sum), x.sum(axis=1))
    np.testing.assert_allclose(tu.np_reduce(x, (0, 2), True, np.max),
                               x.max(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(tu.np_reduce(x, None, False, np.sum), x.sum())
    np.testing.assert_allclose(tu.collapse_sum_like(x, (3, 1)), x.sum(axis=(0, 2))[:, None])
    assert tu.collapse_sum_like(np.zeros((0, 3)), (3,)).shape == (3,)


def test_assign_each_and_tensor_builders():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(tu.assign_each(x, lambda v: v * 2), x * 2)
    np.testing.assert_allclose(tu.assign_each2(x, x, lambda p, q: p + q), x * 2)
    assert tu.create_vector(4).asnumpy().tolist() == [0, 1, 2, 3]
    assert tu.create_2d_tensor(2, 3).asnumpy().tolist() == [[0, 0, 0], [1, 1, 1]]
    assert tu.get_identity_mat_batch(2).shape == (2, 2, 2)


# ---- symbolic checks ----
def test_simple_forward():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    out = tu.simple_forward(x * y, x=np.full((2,), 3.0), y=np.full((2,), 2.0))
    np.testing.assert_allclose(out, [6.0, 6.0])
    outs = tu.simple_forward(mx.sym.Group([x + y, x - y]), x=np.ones(2), y=np.ones(2))
    assert len(outs) == 2


def test_check_symbolic_forward_list_dict_and_failure():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    a, b = np.random.rand(2, 3), np.random.rand(2, 3)
    outs = tu.check_symbolic_forward(x * y, [a, b], [a * b])
    assert outs[0].shape == (2, 3)
    prod = mx.sym.elemwise_mul(x, y, name="prod")
    tu.check_symbolic_forward(prod, {"x": a, "y": b}, {"prod_output": a * b})
    with pytest.raises(AssertionError, match="EXPECTED_.*FORWARD_"):
        tu.check_symbolic_forward(x * y, [a, b], [a * b + 1])
    with pytest.raises(ValueError, match="do not match"):
        tu.check_symbolic_forward(x * y, {"x": a}, [a])


def test_check_symbolic_backward_grad_reqs_and_failure():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    a, b, g = np.random.rand(2, 3), np.random.rand(2, 3), np.random.rand(2, 3)
    grads = tu.check_symbolic_backward(x * y, [a, b], [g], [g * b, g * a])
    assert set(grads) == {"x", "y"}
    tu.check_symbolic_backward(x * y, [a, b], [g], {"x": g * b, "y": g * a}, grad_req="add")
    tu.check_symbolic_backward(x * y, [a, b], [g], [g * b, g * a],
                               grad_req={"x": "write", "y": "null"})
    with pytest.raises(AssertionError, match="BACKWARD_x"):
        tu.check_symbolic_backward(x * y, [a, b], [g], [g * a, g * a])


def test_check_numeric_gradient_passes_and_catches_a_wrong_gradient():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    tu.check_numeric_gradient(mx.sym.tanh(x) * y, [np.random.rand(2, 3), np.random.rand(2, 3)])
    tu.check_numeric_gradient(mx.sym.sum(x * x, axis=1), {"x": np.random.rand(3, 2)},
                              numeric_eps=1e-3, rtol=1e-2, atol=1e-3, grad_nodes=["x"],
                              dtype=np.float64)
    tu.check_numeric_gradient(x * y, [np.random.rand(2), np.random.rand(2)],
                              grad_nodes={"x": "add", "y": "null"})
    # BlockGrad's gradient is zero, finite differences see the identity: reported as a mismatch.
    with pytest.raises(AssertionError, match="NUMERICAL_x.*BACKWARD_x|BACKWARD_x"):
        tu.check_numeric_gradient(mx.sym.BlockGrad(x), [np.random.rand(2, 2) + 1])
    with pytest.raises(ValueError, match="too small"):
        tu.check_numeric_gradient(mx.sym.exp(x), [np.random.rand(2)], numeric_eps=1e-7)
    with pytest.raises(ValueError):
        tu.check_numeric_gradient(x, [np.ones(2)], grad_nodes="x")


def test_check_numeric_gradient_with_aux_states():
    data = mx.sym.var("data")
    bn = mx.sym.BatchNorm(data, fix_gamma=False, name="bn")
    shape = (3, 2, 2, 2)
    loc = [np.random.normal(size=shape), np.ones(2), np.zeros(2)]
    aux = [np.zeros(2), np.ones(2)]
    tu.check_numeric_gradient(bn, loc, aux_states=aux, numeric_eps=1e-2, rtol=0.16, atol=1e-2)
    with pytest.raises(ValueError, match="aux_states"):
        tu.check_numeric_gradient(bn, loc, aux_states={"bn_moving_mean": np.zeros(2)})


def test_numeric_grad_central_difference():
    x = mx.sym.var("x")
    exe = (x * x).simple_bind(mx.cpu(), x=(3,))
    loc = {"x": np.array([1.0, 2.0, -3.0], dtype=np.float32)}
    grads = tu.numeric_grad(exe, loc, eps=1e-2)
    np.testing.assert_allclose(grads["x"], [2.0, 4.0, -6.0], rtol=1e-3)
    np.testing.assert_allclose(loc["x"], [1.0, 2.0, -3.0])  # the caller's array is untouched


def test_check_consistency_on_present_devices_and_reports_differences():
    x = mx.sym.var("x")
    ctx_list = [{"ctx": mx.cpu(0), "x": (2, 3), "type_dict": {"x": np.float64}},
                {"ctx": mx.cpu(0), "x": (2, 3), "type_dict": {"x": np.float32}},
                {"ctx": mx.gpu(mx.context.num_gpus()), "x": (2, 3)}]  # absent: skipped
    sym = mx.sym.tanh(x, name="t")
    gt = tu.check_consistency(sym, ctx_list)
    assert set(gt) == {"t_output", "x"} and gt["t_output"].dtype == np.float64
    truth = {k: v * 0 + 5 for k, v in gt.items()}
    with pytest.raises(AssertionError):
        tu.check_consistency(sym, ctx_list[:2], ground_truth=truth)
    with pytest.raises(ValueError):
        tu.check_consistency(sym, ctx_list[:1])


def test_check_speed_returns_seconds():
    x = mx.sym.var("x")
    assert tu.check_speed(mx.sym.exp(x), x=(4, 4), N=2) >= 0
    assert tu.check_speed(mx.sym.exp(x), location={"x": np.ones((2, 2))}, N=1,
                          typ="forward") >= 0
    with pytest.raises(ValueError):
        tu.check_speed(mx.sym.exp(x), x=(2,), typ="both")


def test_same_symbol_structure_and_same_array():
    x = mx.sym.var("x")
    assert tu.same_symbol_structure(mx.sym.exp(x), mx.sym.exp(mx.sym.var("y")))
    assert not tu.same_symbol_structure(mx.sym.exp(x), mx.sym.log(x))
    a = mx.nd.ones((2,))
    assert tu.same_array(a, a)
    assert not tu.same_array(a, a.copy())


def test_check_gluon_hybridize_consistency():
    def builder(prefix):
        net = mx.gluon.nn.HybridSequential(prefix=prefix)
        with net.name_scope():
            net.add(mx.gluon.nn.Dense(3, activation="tanh"))
        return net

    data = [mx.nd.random.uniform(shape=(2, 4))]
    tu.check_gluon_hybridize_consistency(builder, data)


def test_compare_optimizer_and_ndarray_tuple():
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.1),
                         (3, 2), np.float32)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1),
                             mx.optimizer.SGD(learning_rate=0.5), (3, 2), np.float32)
    tu.compare_ndarray_tuple((mx.nd.ones(2), None), (mx.nd.ones(2), None))
    with pytest.raises(AssertionError):
        tu.compare_ndarray_tuple((mx.nd.ones(2),), (mx.nd.zeros(2),))


# ---- environment and process helpers ----
def test_environment_sets_and_restores_even_on_error():
    os.environ.pop("NANOMX_TU_A", None)
    os.environ["NANOMX_TU_B"] = "old"
    with tu.environment({"NANOMX_TU_A": "1", "NANOMX_TU_B": None}):
        assert mx.util.getenv("NANOMX_TU_A") == "1" and mx.util.getenv("NANOMX_TU_B") is None
    assert "NANOMX_TU_A" not in os.environ and os.environ["NANOMX_TU_B"] == "old"
    with pytest.raises(KeyError):
        with tu.environment("NANOMX_TU_B", "new"):
            assert mx.util.getenv("NANOMX_TU_B") == "new"
            raise KeyError("x")
    assert mx.util.getenv("NANOMX_TU_B") == "old"
    with pytest.raises(ValueError):
        with tu.environment("only-a-name"):
            pass
    assert tu.set_env_var("NANOMX_TU_B", "v2") == "old"
    assert tu.set_env_var("NANOMX_TU_C", "v", default_val="none") == "none"
    os.environ.pop("NANOMX_TU_B")
    os.environ.pop("NANOMX_TU_C")


def test_discard_stderr_silences_file_descriptor_2(capfd):
    with tu.discard_stderr():
        os.write(2, b"hidden\n")
    os.write(2, b"shown\n")
    err = capfd.readouterr().err
    assert "hidden" not in err and "shown" in err


def test_flags_and_gpu_list():
    assert tu.is_cd_run() is False
    assert isinstance(tu.is_aarch64_run(), bool)
    assert tu.has_tvm_ops() is False and tu.is_op_runnable() is True
    assert list(tu.list_gpus()) == list(range(mx.context.num_gpus()))


def test_dummy_iter_repeats_the_first_batch():
    real = mx.io.NDArrayIter(np.arange(8.0).reshape(4, 2), batch_size=2)
    it = tu.DummyIter(real)
    first, second = next(it), next(it)
    assert first is second and it.batch_size == 2
    assert it.provide_data == real.provide_data


# ---- distributions ----
def test_mean_var_checks_and_buckets():
    gen = lambda n: np.random.normal(0, 1.0, size=n)  # noqa: E731
    assert tu.mean_check(gen, 0, 1.0, nsamples=100000)
    assert not tu.mean_check(lambda n: np.random.normal(1, 1.0, size=n), 0, 1.0, 100000)
    assert tu.var_check(gen, 1.0, nsamples=100000)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda p: p, 4)
    assert buckets == [(0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0)]
    assert probs == [0.25] * 4


def test_chi_square_check_needs_scipy_or_runs():
    gen = lambda n: np.random.uniform(size=n)  # noqa: E731
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda p: p, 5)
    try:
        import scipy.stats  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="scipy"):
            tu.chi_square_check(gen, buckets, probs, nsamples=1000)
        return
    assert tu.verify_generator(gen, buckets, probs, nsamples=10000, nrepeat=3)


def test_matrix_generators():
    m = tu.new_matrix_with_real_eigvals_nd((2, 3, 3))
    assert m.shape == (2, 3, 3)
    assert np.allclose(np.linalg.eigvals(m[0]).imag, 0, atol=1e-6)
    s = tu.new_sym_matrix_with_real_eigvals_2d(3)
    np.testing.assert_allclose(s, s.T, atol=1e-10)
    q = tu.new_orthonormal_matrix_2d(3)
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-10)


# ---- files ----
def test_download_from_file_url_keeps_existing_and_reports_failure(tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("payload")
    dest = tu.download(src.as_uri(), fname="copy.txt", dirname=str(tmp_path / "d"))
    assert open(dest).read() == "payload"
    src.write_text("changed")
    assert open(tu.download(src.as_uri(), fname=dest)).read() == "payload"
    assert open(tu.download(src.as_uri(), fname=dest, overwrite=True)).read() == "changed"
    with pytest.raises(OSError):
        tu.download((tmp_path / "missing").as_uri(), fname=str(tmp_path / "m"), retries=0)


def _write_idx(path, magic_and_dims, payload):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">" + "I" * len(magic_and_dims), *magic_and_dims))
        f.write(payload)


def test_get_mnist_reads_local_files_and_explains_a_failure(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def offline(url, *args, **kwargs):
        raise OSError("network unreachable")

    monkeypatch.setattr(tu, "download", offline)
    with pytest.raises(RuntimeError, match="get_mnist: .*train-labels-idx1-ubyte.gz.*network"):
        tu.get_mnist()
    with pytest.raises(RuntimeError, match="get_cifar10"):
        tu.get_cifar10()
    with pytest.raises(RuntimeError, match="get_mnist_ubyte"):
        tu.get_mnist_ubyte()
    with pytest.raises(NotImplementedError, match="MNISTIter"):
        tu.get_mnist_iterator(2, (784,))
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    for prefix, n in (("train", 3), ("t10k", 2)):
        _write_idx("%s-labels-idx1-ubyte.gz" % prefix, (2049, n), bytes(range(n)))
        _write_idx("%s-images-idx3-ubyte.gz" % prefix, (2051, n, 28, 28), bytes(n * 784))
    data = tu.get_mnist()
    assert data["train_data"].shape == (3, 1, 28, 28) and data["test_label"].tolist() == [0, 1]
    assert data["train_data"].dtype == np.float32


def test_star_import_exports_mx_and_np():
    namespace = {}
    exec("from nanomx.test_utils import *", namespace)
    assert namespace["mx"] is sys.modules["nanomx"] and namespace["np"] is np
    assert "assert_almost_equal" in namespace and "use_np" in namespace
