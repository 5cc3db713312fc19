// The parsed attributes of the math operators (ops/math.cc): softmax and the index reductions.
// The scalar operators use ScalarParams and the value reductions ReduceParams (ops/op_params.h).
#pragma once

#include <cstdint>
#include <optional>

#include "nanomx/dtype.h"

namespace nanomx::ops {

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

}  // namespace nanomx::ops
