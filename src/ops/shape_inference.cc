#include "ops/shape_inference.h"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "nanomx/error.h"

namespace nanomx::ops {

PartialShape PartialShape::of_rank(int ndim) {
  PartialShape s{Shape()};
  for (int i = 0; i < ndim; ++i) s.dims_.push_back(kUnknownDim);
  return s;
}

bool PartialShape::known() const {
  if (!rank_known_) return false;
  for (int64_t d : dims_.dims()) {
    if (d == kUnknownDim) return false;
  }
  return true;
}

std::string PartialShape::str() const {
  if (!rank_known_) return "?";
  std::ostringstream os;
  os << '(';
  for (int i = 0; i < dims_.ndim(); ++i) {
    if (i) os << ',';
    if (dims_[i] == kUnknownDim) {
      os << '?';
    } else {
      os << dims_[i];
    }
  }
  if (dims_.ndim() == 1) os << ',';
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const PartialShape& s) { return os << s.str(); }

bool merge_shape(PartialShape& into, const PartialShape& from) {
  if (!from.rank_known()) return true;
  if (!into.rank_known()) {
    into = from;
    return true;
  }
  if (into.ndim() != from.ndim()) return false;
  for (int i = 0; i < into.ndim(); ++i) {
    if (!from.dim_known(i)) continue;
    if (!into.dim_known(i)) {
      into[i] = from[i];
    } else if (into[i] != from[i]) {
      return false;
    }
  }
  return true;
}

std::string shape_list(std::span<const Shape> shapes) {
  std::ostringstream os;
  for (size_t i = 0; i < shapes.size(); ++i) os << (i ? ", " : "") << shapes[i];
  return os.str();
}

std::string shape_list(std::span<const PartialShape> shapes) {
  std::ostringstream os;
  for (size_t i = 0; i < shapes.size(); ++i) os << (i ? ", " : "") << shapes[i];
  return os.str();
}

PartialShape broadcast_shapes(const std::string& op, const PartialShape& a, const PartialShape& b) {
  if (!a.rank_known() || !b.rank_known()) return {};
  if (a == b && a.known()) return a;  // the common case: no broadcasting
  const int nd = std::max(a.ndim(), b.ndim());
  PartialShape out = PartialShape::of_rank(nd);
  for (int i = 0; i < nd; ++i) {
    const int ia = i - (nd - a.ndim()), ib = i - (nd - b.ndim());
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    constexpr int64_t kUnknown = PartialShape::kUnknownDim;
    if (da == kUnknown || db == kUnknown) {
      // An unknown against a known d > 1 must be 1 or d: the result is d either way.
      const int64_t known = da == kUnknown ? db : da;
      out[i] = known != kUnknown && known != 1 ? known : kUnknown;
      continue;
    }
    NANOMX_CHECK(da == db || da == 1 || db == 1)
        << op << ": shapes of 'lhs' " << a << " and 'rhs' " << b
        << " cannot be broadcast together (axis " << i << ": " << da << " vs " << db << ")";
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool broadcast_known(const Shape& a, const Shape& b, Shape& out) {
  if (a == b) {  // the common case: no broadcasting
    out = a;
    return true;
  }
  const int nd = std::max(a.ndim(), b.ndim());
  // Built in a local buffer, then copied once: the result is usually inline.
  int64_t local[Shape::kInlineDims];
  std::vector<int64_t> heap;
  int64_t* dims = local;
  if (nd > Shape::kInlineDims) {
    heap.resize(static_cast<size_t>(nd));
    dims = heap.data();
  }
  for (int i = 0; i < nd; ++i) {
    const int ia = i - (nd - a.ndim()), ib = i - (nd - b.ndim());
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) return false;
    dims[i] = da == 1 ? db : da;
  }
  out = Shape(std::span<const int64_t>(dims, static_cast<size_t>(nd)));
  return true;
}

// MXNet's Reshape codes: 0 copy a dim, -1 infer, -2 copy the rest, -3 merge two, -4 split one.
Shape infer_reshape(const std::vector<int64_t>& spec_in, const Shape& src_shape, bool reverse) {
  std::vector<int64_t> spec = spec_in, src = src_shape.to_vector();
  if (reverse) {
    std::reverse(spec.begin(), spec.end());
    std::reverse(src.begin(), src.end());
  }
  auto fail = [&](const std::string& why) {
    NANOMX_THROW() << "Reshape: cannot reshape 'data' of shape " << src_shape << " with shape "
                   << Shape(spec_in) << ": " << why;
  };
  std::vector<int64_t> out;
  int infer = -1;
  size_t i = 0;
  auto next_src = [&]() -> int64_t {
    if (i >= src.size()) fail("more input dimensions referenced than exist");
    return src[i++];
  };
  for (size_t j = 0; j < spec.size(); ++j) {
    const int64_t v = spec[j];
    if (v > 0) {
      out.push_back(v);
      ++i;
    } else if (v == 0) {
      out.push_back(next_src());
    } else if (v == -1) {
      if (infer >= 0) fail("more than one -1");
      infer = static_cast<int>(out.size());
      out.push_back(1);
      ++i;
    } else if (v == -2) {
      while (i < src.size()) out.push_back(src[i++]);
    } else if (v == -3) {
      const int64_t a = next_src();
      out.push_back(a * next_src());
    } else if (v == -4) {
      if (j + 2 >= spec.size()) fail("-4 needs two following values");
      const int64_t d = next_src();
      int64_t d1 = spec[j + 1], d2 = spec[j + 2];
      j += 2;
      if (reverse) std::swap(d1, d2);
      if (d1 == -1 && d2 > 0) d1 = d % d2 == 0 ? d / d2 : -2;
      if (d2 == -1 && d1 > 0) d2 = d % d1 == 0 ? d / d1 : -2;
      if (d1 < 0 || d2 < 0 || d1 * d2 != d) fail("-4 split does not match the dimension");
      if (reverse) std::swap(d1, d2);
      out.push_back(d1);
      out.push_back(d2);
    } else {
      fail("invalid value " + std::to_string(v));
    }
  }
  if (infer >= 0) {
    int64_t known = 1;
    for (size_t k = 0; k < out.size(); ++k) {
      if (static_cast<int>(k) != infer) known *= out[k];
    }
    const int64_t total = src_shape.size();
    if (known == 0 || total % known != 0) fail("the size cannot be inferred");
    out[static_cast<size_t>(infer)] = total / known;
  }
  if (reverse) std::reverse(out.begin(), out.end());
  Shape result(out);
  if (result.size() != src_shape.size()) {
    fail("the result " + result.str() + " has " + std::to_string(result.size()) +
         " elements, not " + std::to_string(src_shape.size()));
  }
  return result;
}

// infer_reshape's walk on a shape of known rank with unknown dims: a dim copied (0, -2) stays
// as it is, a merge (-3) or a split (-4 with -1) of an unknown dim is unknown, and so is -1
// whenever some input dim is unknown.
PartialShape infer_reshape_partial(const std::vector<int64_t>& spec_in, const PartialShape& src_in,
                                   bool reverse) {
  constexpr int64_t kU = PartialShape::kUnknownDim;
  std::vector<int64_t> spec = spec_in, src;
  for (int d = 0; d < src_in.ndim(); ++d) src.push_back(src_in[d]);
  if (reverse) {
    std::reverse(spec.begin(), spec.end());
    std::reverse(src.begin(), src.end());
  }
  auto fail = [&](const std::string& why) {
    NANOMX_THROW() << "Reshape: cannot reshape 'data' of shape " << src_in << " with shape "
                   << Shape(spec_in) << ": " << why;
  };
  std::vector<int64_t> out;
  bool inferred = false;
  size_t i = 0;
  auto next_src = [&]() -> int64_t {
    if (i >= src.size()) fail("more input dimensions referenced than exist");
    return src[i++];
  };
  for (size_t j = 0; j < spec.size(); ++j) {
    const int64_t v = spec[j];
    if (v > 0) {
      out.push_back(v);
      ++i;
    } else if (v == 0) {
      out.push_back(next_src());
    } else if (v == -1) {
      if (inferred) fail("more than one -1");
      inferred = true;
      out.push_back(kU);
      ++i;
    } else if (v == -2) {
      while (i < src.size()) out.push_back(src[i++]);
    } else if (v == -3) {
      const int64_t a = next_src(), b = next_src();
      out.push_back(a == kU || b == kU ? kU : a * b);
    } else if (v == -4) {
      if (j + 2 >= spec.size()) fail("-4 needs two following values");
      const int64_t d = next_src();
      int64_t d1 = spec[j + 1], d2 = spec[j + 2];
      j += 2;
      if (reverse) std::swap(d1, d2);
      if (d1 == -1 && d2 == -1) fail("Split dims cannot both be -1.");
      if (d != kU) {
        if (d1 == -1) d1 = d2 > 0 && d % d2 == 0 ? d / d2 : -2;
        if (d2 == -1) d2 = d1 > 0 && d % d1 == 0 ? d / d1 : -2;
        if (d1 < 0 || d2 < 0 || d1 * d2 != d) fail("-4 split does not match the dimension");
      } else {
        if (d1 == -1) d1 = kU;
        if (d2 == -1) d2 = kU;
      }
      if (reverse) std::swap(d1, d2);
      out.push_back(d1);
      out.push_back(d2);
    } else {
      fail("invalid value " + std::to_string(v));
    }
  }
  if (reverse) std::reverse(out.begin(), out.end());
  PartialShape result = PartialShape::of_rank(static_cast<int>(out.size()));
  for (size_t k = 0; k < out.size(); ++k) result[static_cast<int>(k)] = out[k];
  return result;
}

ReduceSpec reduce_spec(const std::string& op, const std::optional<std::vector<int64_t>>& axes,
                       bool keepdims, bool exclude, const Shape& in) {
  const int nd = in.ndim();
  ReduceSpec spec;
  // No axes (absent or empty) reduces every axis, with or without `exclude` (as MXNet 1.x).
  spec.reduced.assign(static_cast<size_t>(nd), !axes || axes->empty() ? true : exclude);
  if (axes) {
    std::vector<bool> seen(static_cast<size_t>(nd), false);
    for (int64_t a : *axes) {
      const int n = normalize_axis(a, nd, op.c_str());
      NANOMX_CHECK(!seen[static_cast<size_t>(n)])
          << op << ": axis " << a << " appears twice in 'axis' for 'data' of shape " << in;
      seen[static_cast<size_t>(n)] = true;
      spec.reduced[static_cast<size_t>(n)] = !exclude;
    }
  }
  std::vector<int64_t> kept, out;
  for (int i = 0; i < nd; ++i) {
    const bool r = spec.reduced[static_cast<size_t>(i)];
    kept.push_back(r ? 1 : in[i]);
    if (!r || keepdims) out.push_back(r ? 1 : in[i]);
  }
  if (out.empty()) out.push_back(1);  // MXNet 1.x legacy shape for a full reduction
  spec.kept = Shape(kept);
  spec.out = Shape(out);
  return spec;
}

Region full_region(const Shape& shape) {
  Region r;
  for (int64_t d : shape.dims()) {
    r.begin.push_back(0);
    r.step.push_back(1);
    r.count.push_back(d);
  }
  return r;
}

void slice_axis_range(const std::string& op, int axis, int64_t dim, std::optional<int64_t> b,
                      std::optional<int64_t> e, int64_t step, Region& r) {
  NANOMX_CHECK(step != 0) << op << ": step is 0 on axis " << axis;
  int64_t begin, end, count;
  if (step > 0) {
    begin = b ? (*b < 0 ? *b + dim : *b) : 0;
    end = e ? (*e < 0 ? *e + dim : *e) : dim;
    begin = std::clamp<int64_t>(begin, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    count = end > begin ? (end - begin + step - 1) / step : 0;
  } else {
    begin = b ? (*b < 0 ? *b + dim : *b) : dim - 1;
    end = e ? (*e < 0 ? *e + dim : *e) : -1;
    begin = std::clamp<int64_t>(begin, -1, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    count = begin > end ? (begin - end + (-step) - 1) / (-step) : 0;
  }
  r.begin[static_cast<size_t>(axis)] = count ? begin : 0;
  r.step[static_cast<size_t>(axis)] = step;
  r.count[static_cast<size_t>(axis)] = count;
}

Region slice_region(const std::string& op, const IndexTuple& begin, const IndexTuple& end,
                    const std::optional<IndexTuple>& step, const Shape& shape, const char* arg) {
  NANOMX_CHECK(static_cast<int>(begin.size()) <= shape.ndim())
      << op << ": " << begin.size() << " slice entries for '" << arg << "' of shape " << shape;
  Region r = full_region(shape);
  for (size_t i = 0; i < begin.size(); ++i) {
    const int64_t st = step && !step->empty() && (*step)[i] ? *(*step)[i] : 1;
    slice_axis_range(op, static_cast<int>(i), shape[static_cast<int>(i)], begin[i], end[i], st, r);
  }
  return r;
}

std::pair<std::vector<int64_t>, int64_t> region_strides(const Shape& shape, const Region& r) {
  auto strides = shape.strides();
  int64_t base = 0;
  for (size_t i = 0; i < strides.size(); ++i) {
    base += r.begin[i] * strides[i];
    strides[i] *= r.step[i];
  }
  return {strides, base};
}

AxisSplit split_at_axis(const Shape& shape, int axis) {
  AxisSplit a;
  for (int i = 0; i < axis; ++i) a.outer *= shape[i];
  a.len = shape[axis];
  for (int i = axis + 1; i < shape.ndim(); ++i) a.inner *= shape[i];
  return a;
}

}  // namespace nanomx::ops
