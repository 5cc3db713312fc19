// Shapes that may be partly unknown, and the device-neutral shape rules the operators share
// (broadcasting, Reshape's codes, reductions, slices). Operators infer on these alone, before
// any array exists (MXNet's FInferShape role); the kernels of every device reuse the results.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nanomx/dtype.h"
#include "nanomx/shape.h"

namespace nanomx::ops {

// A shape whose rank, or some of whose dimensions, may not be known yet. A default-constructed
// one knows nothing; a dimension of kUnknownDim is unknown (0 is a real, empty dimension).
class PartialShape {
 public:
  static constexpr int64_t kUnknownDim = -1;

  PartialShape() = default;
  PartialShape(Shape shape) : dims_(std::move(shape)), rank_known_(true) {}  // NOLINT: implicit
  // A rank known, every dimension unknown.
  static PartialShape of_rank(int ndim);

  bool rank_known() const { return rank_known_; }
  int ndim() const { return rank_known_ ? dims_.ndim() : -1; }
  int64_t operator[](int axis) const { return dims_[axis]; }
  int64_t& operator[](int axis) { return dims_[axis]; }
  bool dim_known(int axis) const { return dims_[axis] != kUnknownDim; }
  // The rank and every dimension known.
  bool known() const;
  // The shape itself; only when known().
  const Shape& shape() const { return dims_; }
  Shape take_shape() && { return std::move(dims_); }
  // "(2,3)", "(2,?)", "?" (unknown rank).
  std::string str() const;
  bool operator==(const PartialShape& other) const {
    return rank_known_ == other.rank_known_ && dims_ == other.dims_;
  }

 private:
  Shape dims_;
  bool rank_known_ = false;
};

std::ostream& operator<<(std::ostream& os, const PartialShape& s);

// A dtype that may not be known yet (MXNet's -1).
using PartialDType = std::optional<DType>;

// Fills what `into` does not know from `from`; false when both know something and disagree.
bool merge_shape(PartialShape& into, const PartialShape& from);

// "(2,3), (4,3)": shapes for messages.
std::string shape_list(std::span<const Shape> shapes);
std::string shape_list(std::span<const PartialShape> shapes);

// Numpy broadcasting of two (partial) shapes, right-aligned. Throws "<op>: shapes of 'lhs' A and
// 'rhs' B cannot be broadcast together (axis i: a vs b)".
PartialShape broadcast_shapes(const std::string& op, const PartialShape& a, const PartialShape& b);

// broadcast_shapes for known shapes, into `out`; false (and `out` unspecified) when they cannot
// be broadcast, for the caller to fall back to broadcast_shapes and its message.
bool broadcast_known(const Shape& a, const Shape& b, Shape& out);

// MXNet's Reshape shape inference (codes 0, -1, -2, -3, -4; `reverse` matches from the right).
// Throws naming both shapes.
Shape infer_reshape(const std::vector<int64_t>& spec, const Shape& src, bool reverse);
// The same codes on a source of known rank with unknown dims: what can be known is.
PartialShape infer_reshape_partial(const std::vector<int64_t>& spec, const PartialShape& src,
                                   bool reverse);

// Which axes a reduction over `axes` (empty: all; `exclude`: all but these) removes, and the
// shapes it gives. Axis errors name the operator and the input shape.
struct ReduceSpec {
  std::vector<bool> reduced;
  Shape kept;  // the input shape with reduced axes set to 1
  Shape out;   // (1,) for a reduction over every axis without keepdims (MXNet 1.x)
};
ReduceSpec reduce_spec(const std::string& op, const std::optional<std::vector<int64_t>>& axes,
                       bool keepdims, bool exclude, const Shape& in);

// A strided region of an array: per axis the first index, the step and the count.
struct Region {
  std::vector<int64_t> begin, step, count;
  Shape shape() const { return Shape(count); }
};
Region full_region(const Shape& shape);
// Python slicing on one axis; nullopt bounds mean the full range in the step's direction.
void slice_axis_range(const std::string& op, int axis, int64_t dim, std::optional<int64_t> b,
                      std::optional<int64_t> e, int64_t step, Region& r);
// begin / end / step (MXNet's slice): tuples no longer than ndim, None = full range.
using IndexTuple = std::vector<std::optional<int64_t>>;
Region slice_region(const std::string& op, const IndexTuple& begin, const IndexTuple& end,
                    const std::optional<IndexTuple>& step, const Shape& shape, const char* arg);
// Element strides of `shape` walked through `region`, and the offset of its first element.
std::pair<std::vector<int64_t>, int64_t> region_strides(const Shape& shape, const Region& r);

// A shape seen around one axis: the product of the dimensions before it (outer), its length
// (len) and the product of those after it (inner). Every kernel that works along an axis
// (softmax, pick, take, argmax, ...) walks this, on every device.
struct AxisSplit {
  int64_t outer = 1;
  int64_t len = 1;
  int64_t inner = 1;
};
// `axis` already normalized (0 <= axis < ndim).
AxisSplit split_at_axis(const Shape& shape, int axis);

}  // namespace nanomx::ops
