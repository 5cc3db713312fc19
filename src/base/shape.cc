#include "nanomx/shape.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "nanomx/error.h"

namespace nanomx {

void Shape::assign(const int64_t* dims, size_t n) {
  NANOMX_CHECK(n <= static_cast<size_t>(INT32_MAX)) << "shape with " << n << " dimensions";
  const auto count = static_cast<int32_t>(n);
  if (count > capacity_) {
    auto* buffer = new int64_t[n];
    std::memcpy(buffer, dims, n * sizeof(int64_t));
    release();
    heap_ = buffer;
    capacity_ = count;
  } else if (n) {
    std::memmove(data(), dims, n * sizeof(int64_t));
  }
  ndim_ = count;
}

void Shape::free_heap() noexcept {
  delete[] heap_;
  capacity_ = kInlineDims;
  std::fill(inline_, inline_ + kInlineDims, 0);
}

void Shape::push_back(int64_t dim) {
  if (ndim_ == capacity_) {
    const auto capacity = static_cast<size_t>(capacity_) * 2;
    auto* buffer = new int64_t[capacity];
    std::copy(begin(), end(), buffer);
    const int32_t n = ndim_;
    release();
    heap_ = buffer;
    capacity_ = static_cast<int32_t>(capacity);
    ndim_ = n;
  }
  data()[ndim_++] = dim;
}

void Shape::size_error() const {
  for (int64_t d : dims()) {
    if (d < 0) fail("negative dimension in shape ", str());
  }
  fail("shape ", str(), " has more elements than int64 can count");
}

std::vector<int64_t> Shape::strides() const {
  std::vector<int64_t> result(static_cast<size_t>(ndim_));
  const int64_t* dims = data();
  int64_t stride = 1;
  for (size_t i = result.size(); i-- > 0;) {
    result[i] = stride;
    stride *= dims[i];
  }
  return result;
}

std::string Shape::str() const {
  std::ostringstream os;
  os << '(';
  for (int i = 0; i < ndim_; ++i) {
    if (i) os << ',';
    os << (*this)[i];
  }
  if (ndim_ == 1) os << ',';
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) { return os << shape.str(); }

int normalize_axis(int64_t axis, int ndim, const char* what) {
  const int64_t a = axis < 0 ? axis + ndim : axis;
  NANOMX_CHECK(a >= 0 && a < ndim)
      << what << ": axis " << axis << " out of range for an array of " << ndim << " dimensions";
  return static_cast<int>(a);
}

}  // namespace nanomx
