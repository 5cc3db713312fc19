// dot's CPU kernel: matrix product through OpenBLAS for float32/float64, a plain kernel for the
// other dtypes (definition in ops/linalg.cc).
#include <cblas.h>

#include <cstring>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

template <typename T>
void gemm_plain(const T* a, const T* b, T* c, const DotDims& d) {
  using C = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_t<T>>;
  const int64_t lda = d.ta ? d.m : d.k, ldb = d.tb ? d.k : d.n;
  std::vector<C> row(static_cast<size_t>(d.n));
  for (int64_t i = 0; i < d.m; ++i) {
    std::fill(row.begin(), row.end(), C{});
    for (int64_t p = 0; p < d.k; ++p) {
      const T av = d.ta ? a[p * lda + i] : a[i * lda + p];
      C ac;
      if constexpr (std::is_integral_v<T>) {
        ac = static_cast<uint64_t>(static_cast<int64_t>(av));
      } else {
        ac = to_compute(av);
      }
      for (int64_t j = 0; j < d.n; ++j) {
        const T bv = d.tb ? b[j * ldb + p] : b[p * ldb + j];
        if constexpr (std::is_integral_v<T>) {
          row[static_cast<size_t>(j)] += ac * static_cast<uint64_t>(static_cast<int64_t>(bv));
        } else {
          row[static_cast<size_t>(j)] += ac * to_compute(bv);
        }
      }
    }
    for (int64_t j = 0; j < d.n; ++j) {
      if constexpr (std::is_same_v<T, half>) {
        c[i * d.n + j] = half(row[static_cast<size_t>(j)]);
      } else {
        c[i * d.n + j] = static_cast<T>(row[static_cast<size_t>(j)]);
      }
    }
  }
}

}  // namespace

void gemm(DType dtype, const void* a, const void* b, void* c, const DotDims& d) {
  if (d.m == 0 || d.n == 0) return;
  if (d.k == 0) {
    std::memset(c, 0, static_cast<size_t>(d.m * d.n) * dtype_size(dtype));
    return;
  }
  const auto ta = d.ta ? CblasTrans : CblasNoTrans;
  const auto tb = d.tb ? CblasTrans : CblasNoTrans;
  const auto lda = static_cast<blasint>(d.ta ? d.m : d.k);
  const auto ldb = static_cast<blasint>(d.tb ? d.k : d.n);
  const auto m = static_cast<blasint>(d.m), n = static_cast<blasint>(d.n),
             k = static_cast<blasint>(d.k);
  switch (dtype) {
    case DType::kFloat32:
      cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, static_cast<const float*>(a), lda,
                  static_cast<const float*>(b), ldb, 0.0f, static_cast<float*>(c), n);
      return;
    case DType::kFloat64:
      cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, static_cast<const double*>(a), lda,
                  static_cast<const double*>(b), ldb, 0.0, static_cast<double*>(c), n);
      return;
    default:
      dispatch_dtype(dtype, [&](auto tag) {
        using T = decltype(tag);
        gemm_plain<T>(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), d);
      });
  }
}

namespace {

void dot(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out) {
  const DotDims d = dot_dims(p.get<DotParams>(), in[0].shape(), in[1].shape(), nullptr);
  gemm(out[0].dtype(), in[0].data(), in[1].data(), out[0].data(), d);
}

// One matrix product per batch entry, on the inputs' and output's slabs.
void batch_dot(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out) {
  int64_t batch = 0;
  const DotDims d =
      batch_dot_dims(p.get<DotParams>(), in[0].shape(), in[1].shape(), nullptr, &batch);
  const DType dtype = out[0].dtype();
  const size_t esize = dtype_size(dtype);
  const auto* a = static_cast<const char*>(in[0].data());
  const auto* b = static_cast<const char*>(in[1].data());
  auto* o = static_cast<char*>(out[0].data());
  const auto sa = static_cast<size_t>(d.m * d.k) * esize,
             sb = static_cast<size_t>(d.k * d.n) * esize,
             so = static_cast<size_t>(d.m * d.n) * esize;
  for (int64_t i = 0; i < batch; ++i) {
    const auto at = static_cast<size_t>(i);
    gemm(dtype, a + at * sa, b + at * sb, o + at * so, d);
  }
}

}  // namespace

void register_linalg_kernels() {
  register_kernel("dot", DeviceType::kCPU, dot);
  register_kernel("batch_dot", DeviceType::kCPU, batch_dot);
}

}  // namespace nanomx::ops::cpu
