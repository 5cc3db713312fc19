// The parsed attributes of each operator: made once per call by the operator's definition and
// read by the kernels of every device. The semantics follow MXNet 1.9.1
// (docs/mxnet-compat.md#operators).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
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
// walk the same description (backends/cpu/kernels/layout.cc, backends/cuda/kernels/layout.cc).
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
// SliceChannel's output k: the k-th equal part of the input along the axis (without that axis
// when squeeze_axis).
LayoutWalk split_walk(const SplitParams& s, const Shape& src, int64_t k);
// dot's M, K, N for the inputs' shapes; throws naming both shapes.
struct DotDims {
  int64_t m = 1, k = 0, n = 1;
  bool ta = false, tb = false;
};
DotDims dot_dims(const DotParams& p, const Shape& a, const Shape& b, Shape* out);
// batch_dot's per-batch M, K, N and the batch count; throws naming both shapes.
DotDims batch_dot_dims(const DotParams& p, const Shape& a, const Shape& b, Shape* out,
                       int64_t* batch);

// ---- math: softmax and the index reductions (the scalar operators use ScalarParams, the
// value reductions ReduceParams) -----------------------------------------------------------

// softmax, log_softmax, softmin: `axis` (default -1), `temperature` (None: 1), output `dtype`
// (None: the input's).
struct SoftmaxParams {
  int64_t axis = -1;
  double temperature = 1.0;
  std::optional<DType> dtype;
};

// argmax, argmin, argmax_channel: one axis or none (the array flattened).
struct ArgReduceParams {
  std::optional<int64_t> axis;
  bool keepdims = false;
};

// The element types that are floating point (softmax's inputs and outputs).
inline bool is_float_dtype(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16;
}

// ---- layout, indexing, ordering, creation and sampling ------------------------------------

// expand_dims(axis), stack(axis), Concat(dim), SwapAxis(dim1, dim2), repeat(repeats, axis).
struct AxisParams {
  int64_t axis = 0;
  int64_t axis2 = 0;                // SwapAxis's dim2
  int64_t count = 1;                // repeat's repeats
  std::optional<int64_t> opt_axis;  // repeat's axis (None: flattened)
};
// squeeze(axis=None), slice_like(axes=()), tile(reps).
struct AxisListParams {
  std::optional<std::vector<int64_t>> axes;
};
struct PadParams {
  enum Mode { kConstant, kEdge, kReflect } mode = kConstant;
  std::vector<int64_t> width;  // (before_0, after_0, before_1, after_1, ...)
  double value = 0;
};
struct TakeParams {
  int64_t axis = 0;
  enum Mode { kClip, kWrap, kRaise } mode = kClip;
};
struct OneHotParams {
  int64_t depth = 0;
  double on = 1, off = 0;
  DType dtype = DType::kFloat32;
};
struct ScatterParams {
  Shape shape;
};
struct DiagParams {
  int64_t k = 0, axis1 = 0, axis2 = 1;
};
// sort, argsort and topk; `ret` says what topk returns.
struct SortParams {
  std::optional<int64_t> axis = -1;  // None: the flattened array
  bool ascend = true;
  int64_t k = 0;  // topk: <= 0 means every element
  enum Ret { kValue, kIndices, kMask, kBoth } ret = kValue;
  DType dtype = DType::kFloat32;  // of indices
};
// The output shape of sort/argsort/topk and where it sorts: outer x inner lanes of `len`
// elements, `inner` apart, of which the first `k` in sorted order are kept.
struct SortLayout {
  int64_t outer = 1, len = 1, inner = 1, k = 1;
  Shape out;
};
SortLayout sort_layout(const SortParams& p, const Shape& in, const char* op);

// _arange, _linspace, _eye.
struct RangeParams {
  double start = 0;
  std::optional<double> stop;
  double step = 1;
  int64_t repeat = 1;
  bool infer_range = false;
  int64_t num = 0;  // linspace
  bool endpoint = true;
  int64_t n = 0, m = 0, k = 0;  // eye
  DType dtype = DType::kFloat32;
  Context ctx = Context::cpu(0);
};

// The added random operators: _random_{exponential,gamma,poisson,randint} (a, b, shape),
// _sample_* (shape appended to the parameters' shape), _sample_multinomial, _shuffle.
struct SampleParams {
  double a = 1, b = 1;
  std::optional<Shape> shape;
  std::optional<DType> dtype;
  bool get_prob = false;
  Context ctx = Context::cpu(0);
};

}  // namespace nanomx::ops
