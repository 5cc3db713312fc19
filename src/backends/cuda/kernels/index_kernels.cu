// The CUDA kernels that order, scatter and draw: sort/argsort/topk and _shuffle (a segmented
// merge sort), gather_nd/scatter_nd and the index checks, Pad, and the random samplers
// (launch.h says what each computes).
#include <utility>

#include "backends/cuda/kernels/device.cuh"

namespace nanomx::ops::cuda {
namespace {

// ---- sorting ----

// The CPU's order (backends/cpu/kernels/index.cc): by value (in the compute type: float for half),
// NaN last ascending and first descending, equal values (and NaNs among themselves) in index
// order. A total order on (value, index) pairs.
template <typename T>
__device__ __forceinline__ bool sorts_before(bool ascend, T ku, int64_t iu, T kv, int64_t iv) {
  const Acc<T> u = widen(ku), v = widen(kv);
  if constexpr (!std::is_integral_v<T>) {
    const bool nan_u = u != u, nan_v = v != v;
    if (nan_u || nan_v) {
      if (nan_u && nan_v) return iu < iv;
      return ascend ? nan_v : nan_u;
    }
  }
  if (u != v) return ascend ? u < v : u > v;
  return iu < iv;
}

// Lane l = (o, i) of x into keys[l * len + j], with j its index.
template <typename T>
__global__ void sort_load_kernel(const T* x, T* keys, int64_t* idx, int64_t lanes, int64_t len,
                                 int64_t inner) {
  NANOMX_CUDA_LOOP(e, lanes * len) {
    const int64_t lane = e / len, j = e % len;
    keys[e] = x[((lane / inner) * len + j) * inner + lane % inner];
    idx[e] = j;
  }
}

// One merge pass: each lane's sorted runs of `width` merged in pairs. An element's place in
// the merged run is its rank in its own run plus the count of the other run's elements that
// sort before it (a binary search): one thread per element, no two writing the same place
// (the order is total).
template <typename T>
__global__ void merge_pass_kernel(bool ascend, const T* keys, const int64_t* idx, T* keys_out,
                                  int64_t* idx_out, int64_t lanes, int64_t len, int64_t width) {
  NANOMX_CUDA_LOOP(e, lanes * len) {
    const int64_t lane = e - e % len, p = e % len;
    const int64_t start = p - p % (2 * width);
    const int64_t mid = start + width < len ? start + width : len;
    const int64_t end = start + 2 * width < len ? start + 2 * width : len;
    const bool left = p < mid;
    int64_t lo = left ? mid : start, hi = left ? end : mid;
    const int64_t other = lo, own_rank = left ? p - start : p - mid;
    const T k = keys[e];
    const int64_t i = idx[e];
    while (lo < hi) {
      const int64_t m = lo + (hi - lo) / 2;
      if (sorts_before(ascend, keys[lane + m], idx[lane + m], k, i)) {
        lo = m + 1;
      } else {
        hi = m;
      }
    }
    const int64_t dest = lane + start + own_rank + (lo - other);
    keys_out[dest] = k;
    idx_out[dest] = i;
  }
}

// Sorts the (keys, idx) pairs of every lane, ping-ponging with (keys2, idx2); true when the
// result ended in the second pair.
template <typename T>
bool merge_sort(bool ascend, T* keys, int64_t* idx, T* keys2, int64_t* idx2, int64_t lanes,
                int64_t len, cudaStream_t stream) {
  bool second = false;
  for (int64_t width = 1; width < len; width *= 2) {
    launch_kernel(grid_for(lanes * len), stream, merge_pass_kernel<T>, ascend,
                  static_cast<const T*>(second ? keys2 : keys),
                  static_cast<const int64_t*>(second ? idx2 : idx), second ? keys : keys2,
                  second ? idx : idx2, lanes, len, width);
    second = !second;
  }
  return second;
}

template <typename T>
__global__ void sort_values_kernel(const T* keys, T* out, int64_t lanes, int64_t len, int64_t k,
                                   int64_t inner) {
  NANOMX_CUDA_LOOP(e, lanes * k) {
    const int64_t lane = e / k, j = e % k;
    out[((lane / inner) * k + j) * inner + lane % inner] = keys[lane * len + j];
  }
}

template <typename I>
__global__ void sort_indices_kernel(const int64_t* idx, I* out, int64_t lanes, int64_t len,
                                    int64_t k, int64_t inner) {
  NANOMX_CUDA_LOOP(e, lanes * k) {
    const int64_t lane = e / k, j = e % k;
    out[((lane / inner) * k + j) * inner + lane % inner] =
        from_double<I>(static_cast<double>(idx[lane * len + j]));
  }
}

template <typename T>
__global__ void sort_mask_kernel(const int64_t* idx, T* out, int64_t lanes, int64_t len, int64_t k,
                                 int64_t inner) {
  NANOMX_CUDA_LOOP(e, lanes * k) {
    const int64_t lane = e / k, j = e % k;
    out[((lane / inner) * len + idx[lane * len + j]) * inner + lane % inner] = from_double<T>(1.0);
  }
}

__global__ void random_keys_kernel(uint64_t* keys, int64_t* idx, int64_t n, uint64_t key) {
  NANOMX_CUDA_LOOP(i, n) {
    keys[i] = random_bits(key, static_cast<uint64_t>(i));
    idx[i] = i;
  }
}

template <typename E>
__global__ void gather_rows_kernel(const E* x, const int64_t* perm, E* out, int64_t rows,
                                   int64_t row) {
  NANOMX_CUDA_LOOP(e, rows * row) { out[e] = x[perm[e / row] * row + e % row]; }
}

// ---- gather / scatter by index tuples ----

__global__ void nd_offsets_kernel(Indices idx, NdIndex nd, int64_t* offsets, int64_t* bad) {
  NANOMX_CUDA_LOOP(j, nd.count) {
    int64_t off = 0;
    bool ok = true;
    for (int64_t a = 0; a < nd.m && ok; ++a) {
      const int64_t size = nd.dims[a];
      int64_t k = index_at(idx, a * nd.count + j);
      if (k < 0 && k >= -size) k += size;
      ok = k >= 0 && k < size;
      if (ok) off = off * size + k;
    }
    offsets[j] = ok ? off : -1;  // the copies skip a tuple out of range
    if (!ok) atomic_min_i64(bad, j);
  }
}

template <typename E>
__global__ void gather_slabs_kernel(const E* x, const int64_t* offsets, E* out, int64_t count,
                                    int64_t slab) {
  NANOMX_CUDA_LOOP(e, count * slab) {
    const int64_t at = offsets[e / slab];
    if (at >= 0) out[e] = x[at * slab + e % slab];
  }
}

__global__ void last_writer_kernel(const int64_t* offsets, int64_t count, int64_t* winner) {
  NANOMX_CUDA_LOOP(j, count) {
    if (offsets[j] >= 0) atomic_max_i64(&winner[offsets[j]], j);
  }
}

template <typename E>
__global__ void scatter_slabs_kernel(const E* v, const int64_t* offsets, E* out, int64_t count,
                                     int64_t slab, const int64_t* winner) {
  NANOMX_CUDA_LOOP(e, count * slab) {
    const int64_t j = e / slab, at = offsets[j];
    if (at >= 0 && winner[at] == j) out[at * slab + e % slab] = v[e];
  }
}

__global__ void bad_index_kernel(Indices idx, int64_t n, int64_t limit, int64_t* bad) {
  NANOMX_CUDA_LOOP(i, n) {
    const int64_t k = index_at(idx, i);
    if (k < 0 || k >= limit) atomic_min_i64(bad, i);
  }
}

template <typename E>
__global__ void fill_element_kernel(const E* val, Indices idx, E* out, int64_t rows, int64_t cols) {
  NANOMX_CUDA_LOOP(i, rows) {
    const int64_t k = index_at(idx, i);
    if (k >= 0 && k < cols) out[i * cols + k] = val[i];
  }
}

// ---- Pad ----

template <typename T>
__global__ void pad_kernel(const T* x, T* out, int64_t n, PadLayout l, Acc<T> value) {
  NANOMX_CUDA_LOOP(e, n) {
    int64_t rest = e, src = 0, stride = 1;
    bool outside = false;
    for (int d = l.ndim - 1; d >= 0; --d) {
      const int64_t len = l.in_shape[d];
      int64_t j = rest % l.out_shape[d] - l.before[d];
      rest /= l.out_shape[d];
      if (j < 0 || j >= len) {
        if (l.mode == 0) {
          outside = true;
        } else if (l.mode == 1) {
          j = j < 0 ? 0 : len - 1;
        } else {
          j = j < 0 ? -j : 2 * (len - 1) - j;  // about the end elements, not repeating them
        }
      }
      src += j * stride;
      stride *= len;
    }
    out[e] = outside ? narrow<T>(value) : x[src];
  }
}

// ---- random samplers ----

// Element i's own substream: draw t of it is uniform01(random_bits(key, i), t).
struct ElementStream {
  uint64_t key;
  uint64_t t = 0;
  __device__ double next() { return uniform01(key, t++); }
  __device__ double next_open() { return 1.0 - next(); }  // in (0, 1]: safe under log and pow
};

__device__ __forceinline__ double normal01(ElementStream& r) {
  const double u1 = r.next_open(), u2 = r.next();
  return sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
}

// Marsaglia and Tsang's method; below shape 1 through gamma(shape + 1) * U^(1 / shape).
__device__ __forceinline__ double gamma_draw(double shape, ElementStream& r) {
  double boost = 1.0;
  if (shape < 1.0) {
    boost = pow(r.next_open(), 1.0 / shape);
    shape += 1.0;
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal01(r);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = r.next_open();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * boost;
    if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v * boost;
  }
}

// Below a mean of 10, multiplying uniforms until the product drops under e^-mean; above,
// Hoermann's transformed rejection with squeeze (PTRS), as numpy.
__device__ __forceinline__ double poisson_draw(double mean, ElementStream& r) {
  if (mean <= 0.0) return 0.0;
  if (mean < 10.0) {
    const double limit = exp(-mean);
    double product = 1.0;
    for (int64_t k = 0;; ++k) {
      product *= r.next();
      if (product <= limit) return static_cast<double>(k);
    }
  }
  const double slam = sqrt(mean), loglam = log(mean);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
  for (;;) {
    const double u = r.next() - 0.5, v = r.next();
    const double us = 0.5 - fabs(u);
    const double k = floor((2.0 * a / us + b) * u + mean + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(invalpha) - log(a / (us * us) + b) <= -mean + k * loglam - lgamma(k + 1.0)) {
      return k;
    }
  }
}

template <typename T>
__global__ void sample_kernel(Sampler kind, T* out, int64_t n, int64_t per, Indices a, Indices b,
                              double a0, double b0, uint64_t key) {
  NANOMX_CUDA_LOOP(i, n) {
    ElementStream r{random_bits(key, static_cast<uint64_t>(i))};
    const double pa = a.data ? index_as_double(a, i / per) : a0;
    const double pb = b.data ? index_as_double(b, i / per) : b0;
    double v = 0;
    switch (kind) {
      case Sampler::kUniform:
        v = pa + (pb - pa) * r.next();
        break;
      case Sampler::kNormal:
        v = pa + pb * normal01(r);
        break;
      case Sampler::kGamma:
        v = gamma_draw(pa, r) * pb;
        break;
      case Sampler::kExponential:
        v = -log(r.next_open()) / pa;
        break;
      case Sampler::kPoisson:
        v = poisson_draw(pa, r);
        break;
      case Sampler::kRandint: {
        const double span = floor(pb) - floor(pa);
        v = floor(pa) + floor(r.next() * span);
        if (v > floor(pb) - 1) v = floor(pb) - 1;
        break;
      }
    }
    out[i] = from_double<T>(v);
  }
}

template <typename T, typename L>
__global__ void multinomial_kernel(Indices prob, int64_t rows, int64_t k, int64_t per, T* out,
                                   L* logp, uint64_t key) {
  NANOMX_CUDA_LOOP(e, rows * per) {
    const int64_t r = e / per;
    const double u = uniform01(key, static_cast<uint64_t>(e));
    double acc = 0;
    int64_t c = k - 1;
    for (int64_t i = 0; i < k; ++i) {
      acc += index_as_double(prob, r * k + i);
      if (u < acc) {
        c = i;
        break;
      }
    }
    out[e] = from_double<T>(static_cast<double>(c));
    if (logp != nullptr) logp[e] = from_double<L>(log(index_as_double(prob, r * k + c)));
  }
}

}  // namespace

size_t sort_scratch_bytes(Elem e, int64_t n) {
  return static_cast<size_t>(n) * 2 * (sizeof(int64_t) + elem_size(e));
}

cudaError_t sort(ConstTensor x, int64_t outer, int64_t len, int64_t inner, int64_t k, bool ascend,
                 void* scratch, Tensor values, Tensor indices, Tensor mask, cudaStream_t stream) {
  const int64_t lanes = outer * inner, n = lanes * len;
  if (n == 0 || k == 0) return cudaGetLastError();
  dispatch_any(x.elem, [&](auto tag) {
    using T = decltype(tag);
    // The indices first: int64-aligned whatever T's size.
    auto* idx = static_cast<int64_t*>(scratch);
    int64_t* idx2 = idx + n;
    auto* keys = reinterpret_cast<T*>(idx2 + n);
    T* keys2 = keys + n;
    launch_kernel(grid_for(n), stream, sort_load_kernel<T>, as<T>(x), keys, idx, lanes, len, inner);
    if (merge_sort(ascend, keys, idx, keys2, idx2, lanes, len, stream)) {
      std::swap(keys, keys2);
      std::swap(idx, idx2);
    }
    const unsigned grid = grid_for(lanes * k);
    if (values.data != nullptr) {
      launch_kernel(grid, stream, sort_values_kernel<T>, static_cast<const T*>(keys), as<T>(values),
                    lanes, len, k, inner);
    }
    if (mask.data != nullptr) {
      launch_kernel(grid, stream, sort_mask_kernel<T>, static_cast<const int64_t*>(idx),
                    as<T>(mask), lanes, len, k, inner);
    }
    if (indices.data != nullptr) {
      dispatch_any(indices.elem, [&](auto itag) {
        using I = decltype(itag);
        launch_kernel(grid, stream, sort_indices_kernel<I>, static_cast<const int64_t*>(idx),
                      as<I>(indices), lanes, len, k, inner);
      });
    }
  });
  return cudaGetLastError();
}

size_t shuffle_scratch_bytes(int64_t rows) {
  return static_cast<size_t>(rows) * 2 * (sizeof(int64_t) + sizeof(uint64_t));
}

cudaError_t shuffle_rows(const void* x, void* out, int64_t rows, int64_t row, size_t elem_bytes,
                         uint64_t key, void* scratch, cudaStream_t stream) {
  if (rows == 0 || row == 0) return cudaGetLastError();
  auto* idx = static_cast<int64_t*>(scratch);
  int64_t* idx2 = idx + rows;
  auto* keys = reinterpret_cast<uint64_t*>(idx2 + rows);
  uint64_t* keys2 = keys + rows;
  launch_kernel(grid_for(rows), stream, random_keys_kernel, keys, idx, rows, key);
  const int64_t* perm = merge_sort(true, keys, idx, keys2, idx2, 1, rows, stream) ? idx2 : idx;
  by_size(elem_bytes, [&](auto tag) {
    using E = decltype(tag);
    launch_kernel(grid_for(rows * row), stream, gather_rows_kernel<E>, static_cast<const E*>(x),
                  perm, static_cast<E*>(out), rows, row);
  });
  return cudaGetLastError();
}

cudaError_t nd_offsets(Indices idx, const NdIndex& nd, int64_t* offsets, int64_t* bad,
                       cudaStream_t stream) {
  if (nd.count > 0) {
    launch_kernel(grid_for(nd.count), stream, nd_offsets_kernel, idx, nd, offsets, bad);
  }
  return cudaGetLastError();
}

cudaError_t gather_slabs(const void* x, const int64_t* offsets, void* out, size_t elem_bytes,
                         int64_t count, int64_t slab, cudaStream_t stream) {
  if (count * slab > 0) {
    by_size(elem_bytes, [&](auto tag) {
      using E = decltype(tag);
      launch_kernel(grid_for(count * slab), stream, gather_slabs_kernel<E>,
                    static_cast<const E*>(x), offsets, static_cast<E*>(out), count, slab);
    });
  }
  return cudaGetLastError();
}

cudaError_t scatter_slabs(const void* v, const int64_t* offsets, void* out, size_t elem_bytes,
                          int64_t count, int64_t slab, int64_t* winner, int64_t out_slabs,
                          cudaStream_t stream) {
  if (count * slab == 0) return cudaGetLastError();
  const cudaError_t status =
      cudaMemsetAsync(winner, 0xFF, static_cast<size_t>(out_slabs) * sizeof(int64_t), stream);
  if (status != cudaSuccess) return status;
  launch_kernel(grid_for(count), stream, last_writer_kernel, offsets, count, winner);
  by_size(elem_bytes, [&](auto tag) {
    using E = decltype(tag);
    launch_kernel(grid_for(count * slab), stream, scatter_slabs_kernel<E>, static_cast<const E*>(v),
                  offsets, static_cast<E*>(out), count, slab, static_cast<const int64_t*>(winner));
  });
  return cudaGetLastError();
}

cudaError_t find_bad_index(Indices idx, int64_t n, int64_t limit, int64_t* bad,
                           cudaStream_t stream) {
  if (n > 0) launch_kernel(grid_for(n), stream, bad_index_kernel, idx, n, limit, bad);
  return cudaGetLastError();
}

cudaError_t fill_element(const void* val, Indices idx, void* out, size_t elem_bytes, int64_t rows,
                         int64_t cols, cudaStream_t stream) {
  if (rows > 0) {
    by_size(elem_bytes, [&](auto tag) {
      using E = decltype(tag);
      launch_kernel(grid_for(rows), stream, fill_element_kernel<E>, static_cast<const E*>(val), idx,
                    static_cast<E*>(out), rows, cols);
    });
  }
  return cudaGetLastError();
}

cudaError_t pad(ConstTensor x, Tensor out, int64_t n, const PadLayout& layout, double value,
                cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, pad_kernel<T>, as<T>(x), as<T>(out), n, layout,
                    rounded<T>(value));
    });
  }
  return cudaGetLastError();
}

cudaError_t sample(Sampler kind, Tensor out, int64_t n, int64_t per, Indices a, Indices b,
                   double a0, double b0, uint64_t key, cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, sample_kernel<T>, kind, as<T>(out), n, per > 0 ? per : 1,
                    a, b, a0, b0, key);
    });
  }
  return cudaGetLastError();
}

cudaError_t multinomial(Indices prob, int64_t rows, int64_t k, int64_t per, Tensor out, Tensor logp,
                        uint64_t key, cudaStream_t stream) {
  if (rows * per == 0 || k == 0) return cudaGetLastError();
  dispatch_any(out.elem, [&](auto tag) {
    using T = decltype(tag);
    if (logp.data == nullptr) {
      launch_kernel(grid_for(rows * per), stream, multinomial_kernel<T, float>, prob, rows, k, per,
                    as<T>(out), static_cast<float*>(nullptr), key);
      return;
    }
    dispatch(logp.elem, [&](auto ltag) {
      using L = decltype(ltag);
      launch_kernel(grid_for(rows * per), stream, multinomial_kernel<T, L>, prob, rows, k, per,
                    as<T>(out), as<L>(logp), key);
    });
  });
  return cudaGetLastError();
}

}  // namespace nanomx::ops::cuda
