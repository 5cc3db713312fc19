// dot: matrix product through OpenBLAS for float32/float64, a plain kernel for the other dtypes.
// lhs (..., K) or, with transpose_a, (K, ...); rhs (K, ...) or, with transpose_b, (..., K). The
// result has lhs's other dims then rhs's; two 1-D vectors give (1,) (MXNet 1.x).
#include <cblas.h>

#include <cstring>

#include "ops/cpu/kernels.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

struct DotDims {
  int64_t m, k, n;
  bool ta, tb;
};

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

void dot_kernel(const NDArray& a, const NDArray& b, const NDArray& out, const DotDims& d) {
  if (d.m == 0 || d.n == 0) return;
  if (d.k == 0) {
    std::memset(out.data(), 0, out.nbytes());
    return;
  }
  const auto ta = d.ta ? CblasTrans : CblasNoTrans;
  const auto tb = d.tb ? CblasTrans : CblasNoTrans;
  const auto lda = static_cast<blasint>(d.ta ? d.m : d.k);
  const auto ldb = static_cast<blasint>(d.tb ? d.k : d.n);
  const auto m = static_cast<blasint>(d.m), n = static_cast<blasint>(d.n),
             k = static_cast<blasint>(d.k);
  switch (out.dtype()) {
    case DType::kFloat32:
      cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a.data_as<float>(), lda, b.data_as<float>(),
                  ldb, 0.0f, out.data_as<float>(), n);
      return;
    case DType::kFloat64:
      cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a.data_as<double>(), lda,
                  b.data_as<double>(), ldb, 0.0, out.data_as<double>(), n);
      return;
    default:
      dispatch_dtype(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        gemm_plain<T>(a.data_as<T>(), b.data_as<T>(), out.data_as<T>(), d);
      });
  }
}

Plan plan_dot(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const Shape &sa = in[0].shape(), &sb = in[1].shape();
  const bool ta = p.get_bool("transpose_a", false), tb = p.get_bool("transpose_b", false);
  NANOMX_CHECK(in[0].dtype() == in[1].dtype())
      << "dot: 'lhs' has dtype " << dtype_name(in[0].dtype()) << " but 'rhs' has "
      << dtype_name(in[1].dtype());
  NANOMX_CHECK(sa.ndim() >= 1 && sb.ndim() >= 1)
      << "dot: 'lhs' " << sa << " and 'rhs' " << sb << " must have at least one dimension";
  DotDims d{1, 0, 1, ta, tb};
  std::vector<int64_t> out;
  // lhs: K is its last dim (first with transpose_a); the rest is M.
  d.k = ta ? sa[0] : sa[sa.ndim() - 1];
  for (int i = 0; i < sa.ndim(); ++i) {
    if (i == (ta ? 0 : sa.ndim() - 1)) continue;
    d.m *= sa[i];
    out.push_back(sa[i]);
  }
  const int64_t kb = tb ? sb[sb.ndim() - 1] : sb[0];
  NANOMX_CHECK(d.k == kb) << "dot: shapes of 'lhs' " << sa << " and 'rhs' " << sb
                          << " do not match (transpose_a=" << ta << ", transpose_b=" << tb
                          << "): " << d.k << " vs " << kb;
  for (int i = 0; i < sb.ndim(); ++i) {
    if (i == (tb ? sb.ndim() - 1 : 0)) continue;
    d.n *= sb[i];
    out.push_back(sb[i]);
  }
  if (out.empty()) out.push_back(1);
  NANOMX_CHECK(d.m <= INT32_MAX && d.n <= INT32_MAX && d.k <= INT32_MAX)
      << "dot: matrix dimensions of " << sa << " x " << sb << " exceed the BLAS int range";
  Plan plan;
  plan.shape = Shape(out);
  plan.dtype = in[0].dtype();
  plan.kernel = [d](std::span<const NDArray> in, const NDArray& out) {
    dot_kernel(in[0], in[1], out, d);
  };
  return plan;
}

}  // namespace

void register_dot_ops(Registry& r) {
  r.add({.name = "dot",
         .inputs = {"lhs", "rhs"},
         .keys = {"transpose_a", "transpose_b"},
         .plan = plan_dot});
}

}  // namespace nanomx::ops
