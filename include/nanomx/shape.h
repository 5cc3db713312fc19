// The shape of an NDArray: a list of int64 dimensions (rank 0 allowed, sizes may be 0).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace nanomx {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int ndim() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int axis) const { return dims_[static_cast<size_t>(axis)]; }
  int64_t& operator[](int axis) { return dims_[static_cast<size_t>(axis)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& dims() { return dims_; }
  const int64_t* data() const { return dims_.data(); }
  // Number of elements (1 for rank 0). Throws when the product overflows int64.
  int64_t size() const;
  // Row-major strides in elements.
  std::vector<int64_t> strides() const;
  // "(2,3)", "(5,)", "()".
  std::string str() const;

  bool operator==(const Shape& other) const = default;

 private:
  std::vector<int64_t> dims_;
};

std::ostream& operator<<(std::ostream& os, const Shape& shape);

// Normalizes an axis that may be negative; throws "<what>: axis a out of range for shape s".
int normalize_axis(int64_t axis, int ndim, const char* what);

}  // namespace nanomx
