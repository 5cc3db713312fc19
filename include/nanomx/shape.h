// The shape of an NDArray: a list of int64 dimensions (rank 0 allowed, sizes may be 0).
//
// Up to kInlineDims dimensions live inside the Shape itself, so copying an array's shape (every
// NDArray copy, every operator call) does not allocate; higher ranks use a heap buffer.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <vector>

// The C++ API: exported from libnanomx.so (nanomx/export.h).
#pragma GCC visibility push(default)

namespace nanomx {

class Shape {
 public:
  static constexpr int kInlineDims = 6;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.size()); }
  // Any contiguous int64 range: a std::vector<int64_t>, a std::span, another shape's dims().
  explicit Shape(std::span<const int64_t> dims) { assign(dims.data(), dims.size()); }
  // Copies and moves of inline shapes copy the fixed-size buffer (no loop, no call).
  Shape(const Shape& other) {
    if (other.on_heap()) {
      assign(other.heap_, static_cast<size_t>(other.ndim_));
    } else {
      copy_inline(other);
    }
  }
  Shape(Shape&& other) noexcept { take(other); }
  Shape& operator=(const Shape& other) {
    if (this == &other) return *this;
    if (other.on_heap() || on_heap()) {
      assign(other.data(), static_cast<size_t>(other.ndim_));
    } else {
      copy_inline(other);
    }
    return *this;
  }
  Shape& operator=(Shape&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~Shape() { release(); }

  int ndim() const { return ndim_; }
  int64_t operator[](int axis) const { return data()[axis]; }
  int64_t& operator[](int axis) { return data()[axis]; }
  std::span<const int64_t> dims() const { return {data(), static_cast<size_t>(ndim_)}; }
  std::span<int64_t> dims() { return {data(), static_cast<size_t>(ndim_)}; }
  const int64_t* data() const { return on_heap() ? heap_ : inline_; }
  int64_t* data() { return on_heap() ? heap_ : inline_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + ndim_; }
  // Appends a dimension.
  void push_back(int64_t dim);
  // The dims as a vector (for code that edits a copy).
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }
  // Number of elements (1 for rank 0). Throws when a dimension is negative or the product
  // overflows int64. Inline: every operator call asks for several sizes.
  int64_t size() const {
    int64_t total = 1;
    for (int64_t d : dims()) {
      if (d < 0 || __builtin_mul_overflow(total, d, &total)) size_error();
    }
    return total;
  }
  // Row-major strides in elements.
  std::vector<int64_t> strides() const;
  // "(2,3)", "(5,)", "()".
  std::string str() const;

  bool operator==(const Shape& other) const {
    if (ndim_ != other.ndim_) return false;
    const int64_t *a = data(), *b = other.data();
    for (int i = 0; i < ndim_; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }

 private:
  bool on_heap() const { return capacity_ > kInlineDims; }
  void assign(const int64_t* dims, size_t n);
  void copy_inline(const Shape& other) noexcept {
    ndim_ = other.ndim_;
    capacity_ = kInlineDims;
    for (int i = 0; i < kInlineDims; ++i) inline_[i] = other.inline_[i];
  }
  void take(Shape& other) noexcept {
    if (other.on_heap()) {
      ndim_ = other.ndim_;
      capacity_ = other.capacity_;
      heap_ = other.heap_;
      other.ndim_ = 0;
      other.capacity_ = kInlineDims;
    } else {
      copy_inline(other);
      other.ndim_ = 0;
    }
  }
  void release() noexcept {
    if (on_heap()) free_heap();
  }
  void free_heap() noexcept;
  [[noreturn]] void size_error() const;

  int32_t ndim_ = 0;
  int32_t capacity_ = kInlineDims;  // > kInlineDims: heap_ holds the dims
  union {
    int64_t inline_[kInlineDims] = {};
    int64_t* heap_;
  };
};

std::ostream& operator<<(std::ostream& os, const Shape& shape);

// Normalizes an axis that may be negative; throws "<what>: axis a out of range for shape s".
int normalize_axis(int64_t axis, int ndim, const char* what);

}  // namespace nanomx

#pragma GCC visibility pop
