// Pooling and LRN: their parsed attributes and the pooling geometry (output extents and each
// window's bounds) shared by the definitions (ops/pooling.cc) and the kernels of every device
// (backends/cpu/kernels/pooling.cc). The semantics are MXNet 1.9.1's src/operator/nn/pool.h,
// pooling.cc and lrn-inl.h.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "nanomx/shape.h"
#include "ops/shape_inference.h"

namespace nanomx::ops {

enum class PoolType : uint8_t { kMax, kAvg, kSum, kLp };
enum class PoolConvention : uint8_t { kValid, kFull, kSame };

struct PoolingParams {
  // Per spatial axis, outermost first; the first kernel_ndim entries are the call's (stride 1
  // and pad 0 where it gave none).
  std::array<int64_t, 3> kernel{}, stride{}, pad{};
  int kernel_ndim = 0;  // 0: no kernel (global_pool)
  // The data rank the call fixes through 'layout' or 'kernel' (3, 4 or 5); 0: the data decides
  // (global_pool without either), as MXNet's PoolingParamParser leaves it.
  int data_ndim = 0;
  bool channel_last = false;  // layout NWC / NHWC / NDHWC
  PoolType type = PoolType::kMax;
  PoolConvention convention = PoolConvention::kValid;
  bool global_pool = false;
  bool count_include_pad = true;  // avg only
  int p_value = 1;                // lp only: 1, 2 or 3
};

// Ceiling of a / b for a >= 0, b > 0.
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The output extent along one spatial axis of extent x (MXNet's PoolingShape): valid
// floor((x + 2p - k) / s) + 1, full ceil((x + 2p - k) / s) + 1, same ceil((x + 2p) / s). The
// caller has checked k <= x + 2p.
inline int64_t pooled_extent(PoolConvention c, int64_t x, int64_t k, int64_t s, int64_t p) {
  switch (c) {
    case PoolConvention::kFull:
      return ceil_div(x + 2 * p - k, s) + 1;
    case PoolConvention::kSame:
      return ceil_div(x + 2 * p, s);
    case PoolConvention::kValid:
      break;
  }
  return (x + 2 * p - k) / s + 1;
}

// Output o's window along one axis, as MXNet's CPU pool.h bounds it: the input elements
// [begin, end) (clipped to the input on both sides; empty where the window lies wholly in the
// padding, which 'full' and 'same' windows past the edge can), and `padded`, the window's
// length counting the left padding and the right padding up to p only: avg's divisor with
// count_include_pad. A 'full' window running past the padded edge is cut there, not at k.
struct PoolWindow {
  int64_t begin = 0, end = 0, padded = 0;
};
inline PoolWindow pool_window(int64_t o, int64_t x, int64_t k, int64_t s, int64_t p) {
  const int64_t start = o * s - p;
  const int64_t stop = std::min(start + k, x + p);
  PoolWindow w;
  w.begin = std::max<int64_t>(start, 0);
  w.end = std::max(w.begin, std::min(start + k, x));
  w.padded = std::max<int64_t>(stop - start, 0);
  return w;
}

// One call's pooling seen channel-first with three spatial axes: a 1-D or 2-D pooling has
// leading axes of extent 1 (kernel 1, stride 1, pad 0). Global pooling has its kernel set to
// the input's extents. What every device's kernel walks.
struct PoolGeometry {
  int nsp = 0;  // spatial axes of the data: 1, 2 or 3
  int64_t batch = 0, channels = 0;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{};
  bool channel_last = false;
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
};

// The geometry of a call on data of shape `data`, already checked by the shape inference.
PoolGeometry pooling_geometry(const PoolingParams& p, const Shape& data);

// Pooling's output shape, where it can be known: unknown data dims give unknown output dims.
// Returns an empty string, or the message for attributes that do not fit the data (rank,
// layout, a kernel larger than the padded input, 'same' on more than one spatial axis).
std::string pooled_shape(const PoolingParams& p, const PartialShape& data, PartialShape& out);

struct LRNParams {
  double alpha = 1e-4;
  double beta = 0.75;
  double knorm = 2;
  int64_t nsize = 0;  // odd
};

}  // namespace nanomx::ops
