// The parsed attributes of each operator: made once per call by the operator's definition and
// read by the kernels of every device.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "nanomx/context.h"
#include "nanomx/dtype.h"
#include "nanomx/engine.h"
#include "nanomx/shape.h"
#include "ops/shape_inference.h"

namespace nanomx::ops {

struct ScalarParams {
  double scalar = 0;
};
struct ClipParams {
  double lo = 0, hi = 0;
};
struct CastParams {
  DType dtype = DType::kFloat32;
};
// _full, _zeros, _ones. Without 'shape', a caller's output array gives shape and dtype.
struct FillParams {
  std::optional<Shape> shape;
  std::optional<DType> dtype;
  double value = 0;
  Context ctx = Context::cpu(0);
};
struct SliceParams {
  IndexTuple begin, end;
  std::optional<IndexTuple> step;
  double scalar = 0;  // _slice_assign_scalar
};
struct SliceAxisParams {
  int64_t axis = 0;
  std::optional<int64_t> begin, end;
};
struct AxesParams {  // broadcast_to's shape, transpose's axes, reverse's axis
  std::vector<int64_t> values;
};
struct ReshapeParams {
  std::vector<int64_t> shape;
  bool reverse = false;
};
struct ReduceParams {
  std::optional<std::vector<int64_t>> axis;
  bool keepdims = false, exclude = false;
  int ord = 2;                     // norm
  std::optional<DType> out_dtype;  // norm (absent: the input's dtype)
};
struct DotParams {
  bool transpose_a = false, transpose_b = false;
};
struct PickParams {
  int64_t axis = -1;
  bool keepdims = false, wrap = false;
};
struct RandomParams {
  double a = 0, b = 1;  // low/high or loc/scale
  std::optional<Shape> shape;
  std::optional<DType> dtype;
  Context ctx = Context::cpu(0);
};
struct SplitParams {
  int num_outputs = 1;
  int64_t axis = 1;
  bool squeeze_axis = false;
};

// The one process-wide seedable generator behind _random_uniform / _random_normal, ordered by
// its own engine variable so that results follow push order.
struct RandomState {
  std::mt19937_64 generator{0};
  engine::VarHandle var = nullptr;
};
RandomState& random_state();

// transpose's axes (empty: reversed) checked against the rank; throws naming the operator.
std::vector<int64_t> transpose_axes(const std::vector<int64_t>& given, const Shape& src);

// A layout operator as a strided read of its input: element (i_0, ..., i_n) of `space`, in
// row-major order, is the input's element base + sum(i_d * strides[d]). Every device's kernels
// walk the same description (cpu/layout.cc, cpu/shape_ops.cc, cuda/kernels.cc).
struct LayoutWalk {
  std::vector<int64_t> space, strides;
  int64_t base = 0;
};
LayoutWalk transpose_walk(const Shape& src, const std::vector<int64_t>& axes);
LayoutWalk reverse_walk(const Shape& src, const std::vector<int64_t>& axes);
LayoutWalk broadcast_to_walk(const Shape& src, const Shape& out);
LayoutWalk swapaxis_walk(const Shape& src, int64_t dim1, int64_t dim2);
// tile: the space (r0, d0, r1, d1, ...) with stride 0 on each repetition axis.
LayoutWalk tile_walk(const Shape& src, const std::vector<int64_t>& reps);
// repeat: (d0, ..., d_axis, count, ...) with stride 0 on the repetition axis; no axis: the
// array flattened, each element `count` times.
LayoutWalk repeat_walk(const Shape& src, int64_t count, std::optional<int64_t> axis);
// diag of an array of 2 or more axes: the k-th diagonal of (axis1, axis2) walked as the last
// axis of the output's shape (the space), the other axes in order before it.
LayoutWalk diag_walk(const Shape& src, int64_t k, int64_t axis1, int64_t axis2);
// dot's M, K, N for the inputs' shapes; throws naming both shapes.
struct DotDims {
  int64_t m = 1, k = 0, n = 1;
  bool ta = false, tb = false;
};
DotDims dot_dims(const DotParams& p, const Shape& a, const Shape& b, Shape* out);
// batch_dot's per-batch M, K, N and the batch count; throws naming both shapes.
DotDims batch_dot_dims(const DotParams& p, const Shape& a, const Shape& b, Shape* out,
                       int64_t* batch);

}  // namespace nanomx::ops
