"""Test data for mx.test_utils: random arrays and shapes, small structured arrays, numpy
reference reductions, random matrices with real eigenvalues, and statistical checks of random
generators. Private: nanomx.test_utils re-exports every public name here; import them from
there.

rand_ndarray, rand_sparse_ndarray and create_sparse_array raise NotImplementedError for
'row_sparse'/'csr' (nanomx has no sparse storage); chi_square_check needs scipy.
"""
import sys

import numpy as np
import numpy.random as rnd

from .ndarray import array
# test_utils defines these before it imports this module (at its end).
from .test_utils import _SPARSE_REFUSED, default_context, default_dtype

mx = sys.modules[__name__.rpartition(".")[0]]


# ---- random data ----
def random_arrays(*shapes):
    """Standard-normal float32 numpy arrays of the given shapes (one array when one shape)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, **kwargs):
    low, high = kwargs.pop("low", 0.0), kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", default_dtype())
    if kwargs:
        raise TypeError("Got unexpected argument/s : " + str(kwargs.keys()))
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """k distinct elements of `population`, in random order."""
    assert 0 <= k <= len(population)
    population_copy = population[:]
    np.random.shuffle(population_copy)
    return population_copy[0:k]


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A standard-normal NDArray of `shape`; sparse stypes raise NotImplementedError."""
    if stype != "default":
        raise NotImplementedError(_SPARSE_REFUSED % (stype,))
    return array(random_arrays(shape), dtype=dtype, ctx=ctx or default_context())


def rand_sparse_ndarray(shape, stype, *args, **kwargs):
    raise NotImplementedError(_SPARSE_REFUSED % (stype,))


def create_sparse_array(shape, stype, *args, **kwargs):
    raise NotImplementedError(_SPARSE_REFUSED % (stype,))


create_sparse_array_zd = create_sparse_array


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1), rnd.randint(low, dim2 + 1)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of `num_dim` dimensions, each in [1, dim] ([0, dim] with zero sizes)."""
    return tuple(rnd.randint(0 if allow_zero_size else 1, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    return (np.random.randint(x_low, x_high, dtype=np.int64),
            np.random.randint(y_low, y_high, dtype=np.int64))


def assign_each(the_input, function):
    """function applied to each element of a numpy array (a copy when function is None)."""
    if function is None:
        return np.array(the_input)
    return np.vectorize(function, otypes=[np.float64])(the_input).reshape(the_input.shape)


def assign_each2(input1, input2, function):
    if function is None:
        return np.array(input1)
    assert input1.shape == input2.shape
    return np.vectorize(function, otypes=[np.float64])(input1, input2).reshape(input1.shape)


def create_2d_tensor(rows, columns, dtype=np.int64):
    column = mx.nd.arange(0, rows, dtype=dtype).reshape(rows, 1)
    return mx.nd.broadcast_to(column, shape=(rows, columns))


def create_vector(size, dtype=np.int64):
    return mx.nd.arange(0, size, dtype=dtype)


def get_identity_mat(size):
    return mx.nd.array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size):
    eye = np.eye(size, dtype=np.float32)
    return mx.nd.array([eye, eye])


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """numpy_reduce_func applied over each axis of `axis` (None: all) in turn."""
    axes = [axis] if isinstance(axis, int) else (list(axis) if axis is not None
                                                 else list(range(dat.ndim)))
    ret = dat
    for i in sorted(axes, reverse=True):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axes:
            shape[i] = 1
        ret = ret.reshape(tuple(shape))
    return ret


def collapse_sum_like(a, shape):
    """`a` summed over the axes that broadcasting `shape` to a.shape would have added."""
    assert len(a.shape) >= len(shape)
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[i + lead]:
            assert s == 1
            axes.append(i + lead)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


# ---- random distributions ----
def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """nbuckets equal-probability buckets from the quantile function ppf."""
    assert nbuckets > 0
    probs = [1.0 / nbuckets] * nbuckets
    return [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
            for i in range(nbuckets)], probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the sample mean lies within mu +- 3 sigma / sqrt(n)."""
    mean = np.array(generator(nsamples)).mean()
    return mu - 3 * sigma / np.sqrt(nsamples) < mean < mu + 3 * sigma / np.sqrt(nsamples)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance lies within sigma^2 +- 3 sqrt(2 sigma^4 / (n - 1))."""
    var = np.array(generator(nsamples)).var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return sigma ** 2 - bound < var < sigma ** 2 + bound


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """(p value, observed, expected frequencies) of a chi-square test of generator's samples
    against bucket probabilities (buckets: (low, high) ranges or discrete values)."""
    try:
        import scipy.stats as ss
    except ImportError:
        raise ImportError("chi_square_check needs scipy (scipy.stats), which is not "
                          "installed") from None
    assert isinstance(buckets, list) and len(probs) == len(buckets)
    samples = np.asarray(generator(nsamples))
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    observed = np.zeros(len(buckets), dtype=np.int64)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.array(buckets, dtype=np.float32).reshape(-1)
        if np.any(np.diff(edges) < 0):
            raise ValueError("buckets must be ascending and must not overlap")
        ids = np.searchsorted(edges, samples, side="right") // 2
        for i in range(len(buckets)):
            observed[i] = np.count_nonzero(ids == i)
    else:
        for i, value in enumerate(buckets):
            observed[i] = np.count_nonzero(samples == value)
    _, p = ss.chisquare(f_obs=observed, f_exp=expected)
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Runs chi_square_check nrepeat times; AssertionError when fewer than success_rate of the
    runs have p > alpha. Returns the p values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    ps = [r[0] for r in results]
    if (np.array(ps) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError("Generator test fails, Chi-square p=%s, obs_freq=%s, "
                             "expected_freq=%s.\nbuckets=%s, probs=%s"
                             % (ps, [r[1] for r in results], [r[2] for r in results],
                                buckets, probs))
    return ps


# ---- random matrices ----
def new_matrix_with_real_eigvals_2d(n):
    """A well-conditioned n x n matrix with real eigenvalues in [-10, 10]."""
    while True:
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        v /= np.linalg.norm(v, axis=0, keepdims=True)
        q = np.matmul(np.eye(n) - 2 * np.matmul(v, v.T),
                      np.diag(np.random.uniform(-1.0, 1.0, n)))
        if np.linalg.cond(q, 2) < 3:
            break
    return np.matmul(np.matmul(np.linalg.inv(q), np.diag(np.random.uniform(-10.0, 10.0, n))), q)


def new_matrix_with_real_eigvals_nd(shape):
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(n)]).reshape(shape)


def new_orthonormal_matrix_2d(n):
    x = np.random.randn(n, n)
    return np.linalg.qr(np.matmul(x.T, x))[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    q = new_orthonormal_matrix_2d(n)
    return np.matmul(np.matmul(q.T, np.diag(np.random.uniform(-10.0, 10.0, n))), q)


def new_sym_matrix_with_real_eigvals_nd(shape):
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(n)]).reshape(shape)
