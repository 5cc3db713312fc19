// The parsed attributes of the shape, indexing, sorting and creation operators added for MXNet
// parity (ops/shape_ops.cc, ops/init_ops.cc, ops/sample_ops.cc), read by their kernels. The
// semantics follow MXNet 1.9.1 (docs/mxnet-compat.md#operators).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nanomx/context.h"
#include "nanomx/dtype.h"
#include "nanomx/shape.h"

namespace nanomx::ops {

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
