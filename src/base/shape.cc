#include "nanomx/shape.h"

#include <sstream>

#include "nanomx/error.h"

namespace nanomx {

int64_t Shape::size() const {
  int64_t total = 1;
  for (int64_t d : dims_) {
    NANOMX_CHECK(d >= 0) << "negative dimension in shape " << str();
    NANOMX_CHECK(!__builtin_mul_overflow(total, d, &total))
        << "shape " << str() << " has more elements than int64 can count";
  }
  return total;
}

std::vector<int64_t> Shape::strides() const {
  std::vector<int64_t> result(dims_.size());
  int64_t stride = 1;
  for (size_t i = dims_.size(); i-- > 0;) {
    result[i] = stride;
    stride *= dims_[i];
  }
  return result;
}

std::string Shape::str() const {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) os << ',';
    os << dims_[i];
  }
  if (dims_.size() == 1) os << ',';
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
