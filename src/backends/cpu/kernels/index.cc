// CPU kernels of the indexing and ordering operators (definitions in ops/index.cc).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

// An index element as an integer (floats truncate toward zero).
template <typename T>
int64_t index_value(T v) {
  const double d = to_double(v);
  return std::isfinite(d) ? static_cast<int64_t>(d) : INT64_MIN;
}

void pick_kernel(const ParsedParams& p, std::span<const NDArray> in,
                 std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  const Shape& data = in[0].shape();
  const auto& pp = p.get<PickParams>();
  const int axis = normalize_axis(pp.axis, data.ndim(), "pick");
  const AxisSplit split = split_at_axis(data, axis);
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  const bool wrap = pp.wrap;
  if (out.size() == 0) return;
  NANOMX_CHECK(len > 0) << "pick: cannot pick from an empty axis";
  dispatch_dtype(in[1].dtype(), [&](auto itag) {
    using I = decltype(itag);
    const I* idx = in[1].data_as<I>();
    dispatch_size(dtype_size(out.dtype()), [&](auto tag) {
      using E = decltype(tag);
      const E* x = static_cast<const E*>(in[0].data());
      E* o = static_cast<E*>(out.data());
      for (int64_t a = 0; a < outer; ++a) {
        for (int64_t i = 0; i < inner; ++i) {
          int64_t j = index_value(idx[a * inner + i]);
          j = wrap ? ((j % len) + len) % len : std::clamp<int64_t>(j, 0, len - 1);
          o[a * inner + i] = x[(a * len + j) * inner + i];
        }
      }
    });
  });
}

// pick's gradient: zeros, then each output gradient at the position it was picked from.
void pick_backward_kernel(const ParsedParams& p, std::span<const NDArray> in,
                          std::span<const NDArray> outs) {
  const NDArray& dx = outs[0];
  const Shape& data = in[1].shape();
  const auto& pp = p.get<PickParams>();
  const int axis = normalize_axis(pp.axis, data.ndim(), "_backward_pick");
  const AxisSplit split = split_at_axis(data, axis);
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  if (dx.nbytes()) std::memset(dx.data(), 0, dx.nbytes());
  if (len == 0) return;
  dispatch_dtype(in[2].dtype(), [&](auto itag) {
    using I = decltype(itag);
    const I* idx = in[2].data_as<I>();
    dispatch_size(dtype_size(dx.dtype()), [&](auto tag) {
      using E = decltype(tag);
      const E* g = static_cast<const E*>(in[0].data());
      E* o = static_cast<E*>(dx.data());
      for (int64_t a = 0; a < outer; ++a) {
        for (int64_t i = 0; i < inner; ++i) {
          int64_t j = index_value(idx[a * inner + i]);
          j = pp.wrap ? ((j % len) + len) % len : std::clamp<int64_t>(j, 0, len - 1);
          o[(a * len + j) * inner + i] = g[a * inner + i];
        }
      }
    });
  });
}

void fill_element_kernel(const ParsedParams&, std::span<const NDArray> in,
                         std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  const int64_t rows = in[0].shape()[0], cols = in[0].shape()[1];
  if (out.data() != in[0].data() && out.nbytes()) {
    std::memmove(out.data(), in[0].data(), out.nbytes());
  }
  dispatch_dtype(in[2].dtype(), [&](auto itag) {
    using I = decltype(itag);
    const I* idx = in[2].data_as<I>();
    dispatch_size(dtype_size(out.dtype()), [&](auto tag) {
      using E = decltype(tag);
      const E* val = static_cast<const E*>(in[1].data());
      E* o = static_cast<E*>(out.data());
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t j = index_value(idx[i]);
        NANOMX_CHECK(0 <= j && j < cols) << "fill_element_0index: index " << to_double(idx[i])
                                         << " in row " << i << " out of range [0, " << cols << ")";
        o[i * cols + j] = val[i];
      }
    });
  });
}

void onehot_kernel(const ParsedParams&, std::span<const NDArray> in,
                   std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  const int64_t rows = out.shape()[0], cols = out.shape()[1];
  dispatch_dtype(in[0].dtype(), [&](auto itag) {
    using I = decltype(itag);
    const I* idx = in[0].data_as<I>();
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t j = index_value(idx[i]);
      NANOMX_CHECK(0 <= j && j < cols) << "_onehot_encode: index " << to_double(idx[i])
                                       << " in row " << i << " out of range [0, " << cols << ")";
    }
    dispatch_dtype(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* o = out.data_as<T>();
      const T zero = from_double<T>(0), one = from_double<T>(1);
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t j = index_value(idx[i]);
        for (int64_t c = 0; c < cols; ++c) o[i * cols + c] = c == j ? one : zero;
      }
    });
  });
}

void take_kernel(const ParsedParams& p, std::span<const NDArray> in,
                 std::span<const NDArray> outs) {
  const auto& t = p.get<TakeParams>();
  const Shape& a = in[0].shape();
  const int axis = normalize_axis(t.axis, a.ndim(), "take");
  const AxisSplit split = split_at_axis(a, axis);
  const int64_t outer = split.outer, n = split.len, inner = split.inner;
  const int64_t m = in[1].size();
  if (outs[0].size() == 0) return;
  NANOMX_CHECK(n > 0) << "take: cannot take from an empty axis " << axis << " of " << a;
  std::vector<int64_t> rows(static_cast<size_t>(m));
  dispatch_dtype(in[1].dtype(), [&](auto itag) {
    using I = decltype(itag);
    const I* idx = in[1].data_as<I>();
    for (int64_t j = 0; j < m; ++j) {
      int64_t k = index_value(idx[j]);
      if (t.mode == TakeParams::kClip) {
        k = std::clamp<int64_t>(k, 0, n - 1);
      } else if (t.mode == TakeParams::kWrap) {
        k = ((k % n) + n) % n;
      } else {
        NANOMX_CHECK(k >= -n && k < n)
            << "take: take operator contains indices out of bound (" << to_double(idx[j])
            << " for axis " << axis << " of size " << n << ")";
        if (k < 0) k += n;
      }
      rows[static_cast<size_t>(j)] = k;
    }
  });
  const size_t bytes = static_cast<size_t>(inner) * dtype_size(outs[0].dtype());
  const auto* x = static_cast<const unsigned char*>(in[0].data());
  auto* o = static_cast<unsigned char*>(outs[0].data());
  for (int64_t r = 0; r < outer; ++r) {
    for (int64_t j = 0; j < m; ++j) {
      std::memcpy(o + (r * m + j) * static_cast<int64_t>(bytes),
                  x + (r * n + rows[static_cast<size_t>(j)]) * static_cast<int64_t>(bytes), bytes);
    }
  }
}

void batch_take_kernel(const ParsedParams&, std::span<const NDArray> in,
                       std::span<const NDArray> outs) {
  const Shape& a = in[0].shape();
  const int64_t cols = a[a.ndim() - 1], rows = in[1].size();
  if (rows == 0) return;
  dispatch_dtype(in[1].dtype(), [&](auto itag) {
    using I = decltype(itag);
    const I* idx = in[1].data_as<I>();
    dispatch_size(dtype_size(outs[0].dtype()), [&](auto tag) {
      using E = decltype(tag);
      const E* x = static_cast<const E*>(in[0].data());
      E* o = static_cast<E*>(outs[0].data());
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t j = std::clamp<int64_t>(index_value(idx[i]), 0, cols - 1);
        o[i] = x[i * cols + j];
      }
    });
  });
}

void one_hot_kernel(const ParsedParams& p, std::span<const NDArray> in,
                    std::span<const NDArray> outs) {
  const auto& oh = p.get<OneHotParams>();
  const int64_t n = in[0].size(), depth = oh.depth;
  dispatch_dtype(in[0].dtype(), [&](auto itag) {
    using I = decltype(itag);
    const I* idx = in[0].data_as<I>();
    dispatch_dtype(outs[0].dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* o = outs[0].data_as<T>();
      const T on = from_double<T>(oh.on), off = from_double<T>(oh.off);
      std::fill(o, o + n * depth, off);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t j = index_value(idx[i]);
        if (j >= 0 && j < depth) o[i * depth + j] = on;  // others stay all off
      }
    });
  });
}

void where_kernel(const ParsedParams&, std::span<const NDArray> in, std::span<const NDArray> outs) {
  const int64_t n = outs[0].size();
  if (n == 0) return;
  const bool rows = in[0].shape() != in[1].shape();
  const int64_t row = rows ? n / in[0].size() : 1;
  dispatch_dtype(in[0].dtype(), [&](auto ctag) {
    using C = decltype(ctag);
    const C* c = in[0].data_as<C>();
    dispatch_size(dtype_size(outs[0].dtype()), [&](auto tag) {
      using E = decltype(tag);
      const E* x = static_cast<const E*>(in[1].data());
      const E* y = static_cast<const E*>(in[2].data());
      E* o = static_cast<E*>(outs[0].data());
      for (int64_t i = 0; i < n; ++i) o[i] = to_double(c[i / row]) != 0 ? x[i] : y[i];
    });
  });
}

// The flat offsets (in units of the trailing slab) that gather_nd's indices select; negative
// indices wrap once, anything else out of range throws.
std::vector<int64_t> nd_offsets(const char* op, const Shape& data, const NDArray& indices) {
  const int64_t m = indices.shape()[0], count = indices.size() / std::max<int64_t>(m, 1);
  std::vector<int64_t> offsets(static_cast<size_t>(m ? count : 0), 0);
  dispatch_dtype(indices.dtype(), [&](auto itag) {
    using I = decltype(itag);
    const I* idx = indices.data_as<I>();
    if constexpr (std::is_integral_v<I>) {
      if (m == 1) {  // one axis indexed (the Python indexing path): a bounds check per index
        const int64_t size = data[0];
        bool in_range = true;
        for (int64_t j = 0; j < count; ++j) {
          const int64_t k = static_cast<int64_t>(idx[j]);
          offsets[static_cast<size_t>(j)] = k;
          in_range = in_range && k >= 0 && k < size;
        }
        if (in_range) return;  // else the general loop below wraps or reports
      }
    }
    for (int64_t j = 0; j < (m ? count : 0); ++j) {
      int64_t off = 0;
      for (int64_t a = 0; a < m; ++a) {
        const int64_t size = data[static_cast<int>(a)];
        int64_t k = index_value(idx[a * count + j]);
        if (k < 0 && k >= -size) k += size;
        NANOMX_CHECK(k >= 0 && k < size)
            << op << ": IndexError: index " << to_double(idx[a * count + j])
            << " is out of bounds for axis " << a << " with size " << size;
        off = off * size + k;
      }
      offsets[static_cast<size_t>(j)] = off;
    }
  });
  return offsets;
}

size_t slab_bytes(const Shape& data, int64_t m, DType dtype) {
  int64_t slab = 1;
  for (int a = static_cast<int>(m); a < data.ndim(); ++a) slab *= data[a];
  return static_cast<size_t>(slab) * dtype_size(dtype);
}

void gather_nd_kernel(const ParsedParams&, std::span<const NDArray> in,
                      std::span<const NDArray> outs) {
  const Shape& data = in[0].shape();
  const auto offsets = nd_offsets("gather_nd", data, in[1]);
  const size_t slab = slab_bytes(data, in[1].shape()[0], outs[0].dtype());
  const size_t esize = dtype_size(outs[0].dtype());
  if (slab == esize) {  // one element per index (a[mask], a[idx] on 1-D): typed copies
    dispatch_size(esize, [&](auto tag) {
      using E = decltype(tag);
      const E* x = static_cast<const E*>(in[0].data());
      E* o = static_cast<E*>(outs[0].data());
      for (size_t j = 0; j < offsets.size(); ++j) o[j] = x[offsets[j]];
    });
    return;
  }
  const auto* x = static_cast<const unsigned char*>(in[0].data());
  auto* o = static_cast<unsigned char*>(outs[0].data());
  for (size_t j = 0; j < offsets.size(); ++j) {
    if (slab) std::memcpy(o + j * slab, x + static_cast<size_t>(offsets[j]) * slab, slab);
  }
}

void scatter_into(const char* op, const NDArray& values, const NDArray& indices,
                  const NDArray& out) {
  const Shape& shape = out.shape();
  const auto offsets = nd_offsets(op, shape, indices);
  const size_t slab = slab_bytes(shape, indices.shape()[0], out.dtype());
  const auto* v = static_cast<const unsigned char*>(values.data());
  auto* o = static_cast<unsigned char*>(out.data());
  for (size_t j = 0; j < offsets.size(); ++j) {
    if (slab) std::memcpy(o + static_cast<size_t>(offsets[j]) * slab, v + j * slab, slab);
  }
}

void scatter_nd_kernel(const ParsedParams&, std::span<const NDArray> in,
                       std::span<const NDArray> outs) {
  if (outs[0].nbytes()) std::memset(outs[0].data(), 0, outs[0].nbytes());
  scatter_into("scatter_nd", in[0], in[1], outs[0]);
}

void scatter_set_nd_kernel(const ParsedParams&, std::span<const NDArray> in,
                           std::span<const NDArray> outs) {
  if (outs[0].data() != in[0].data() && outs[0].nbytes()) {
    std::memmove(outs[0].data(), in[0].data(), outs[0].nbytes());
  }
  scatter_into("_scatter_set_nd", in[1], in[2], outs[0]);
}

// sort, argsort, topk: each lane sorted by value, NaN last ascending and first descending (as
// numpy's sort, and its reverse, place it); equal values keep index order, so results are
// deterministic. Values are compared in the element's compute type (float for half).
template <typename C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

template <typename T>
void sort_lanes(const SortParams& sp, const SortLayout& l, const NDArray& in,
                std::span<const NDArray> outs) {
  using C = compute_t<T>;
  const T* x = in.data_as<T>();
  const SortParams::Ret ret = sp.ret;
  const bool values_only = ret == SortParams::kValue && l.k == l.len;
  std::vector<C> vals;
  std::vector<bool> zero_signs;  // the signs of a lane's zeros, in index order
  std::vector<std::pair<C, int64_t>> entries;
  // Indices are written through the index output's dtype.
  const NDArray* idx_out = ret == SortParams::kIndices ? &outs[0]
                           : ret == SortParams::kBoth  ? &outs[1]
                                                       : nullptr;
  if (ret == SortParams::kMask && outs[0].nbytes()) {
    std::memset(outs[0].data(), 0, outs[0].nbytes());
  }
  for (int64_t a = 0; a < l.outer; ++a) {
    for (int64_t i = 0; i < l.inner; ++i) {
      const int64_t base = a * l.len * l.inner + i;
      const int64_t obase = a * l.k * l.inner + i;
      if (values_only) {  // sort: the values alone
        vals.resize(static_cast<size_t>(l.len));
        zero_signs.clear();
        for (int64_t j = 0; j < l.len; ++j) {
          const C v = to_compute(x[base + j * l.inner]);
          vals[static_cast<size_t>(j)] = v;
          if constexpr (std::is_floating_point_v<C>) {
            if (v == 0) zero_signs.push_back(std::signbit(v));
          }
        }
        auto nan_end = vals.end();
        auto first = vals.begin();
        if (sp.ascend) {
          nan_end = std::partition(vals.begin(), vals.end(), [](C v) { return !is_nan(v); });
          std::sort(vals.begin(), nan_end);
        } else {
          first = std::partition(vals.begin(), vals.end(), [](C v) { return is_nan(v); });
          std::sort(first, vals.end(), [](C u, C v) { return u > v; });
        }
        // -0 and 0 compare equal, so std::sort leaves their order open: they are put back in
        // index order, as equal values are everywhere else (cheaper than a stable sort).
        if (!zero_signs.empty()) {
          const auto zeros =
              sp.ascend ? std::equal_range(vals.begin(), nan_end, C(0))
                        : std::equal_range(first, vals.end(), C(0), [](C u, C v) { return u > v; });
          for (size_t z = 0; z < zero_signs.size(); ++z) {
            zeros.first[static_cast<ptrdiff_t>(z)] = zero_signs[z] ? C(-0.0) : C(0);
          }
        }
        T* o = outs[0].data_as<T>();
        for (int64_t j = 0; j < l.len; ++j) {
          const C v = vals[static_cast<size_t>(j)];
          if constexpr (std::is_same_v<T, half>) {
            o[obase + j * l.inner] = half(v);
          } else {
            o[obase + j * l.inner] = v;
          }
        }
        continue;
      }
      entries.resize(static_cast<size_t>(l.len));
      for (int64_t j = 0; j < l.len; ++j) {
        entries[static_cast<size_t>(j)] = {to_compute(x[base + j * l.inner]), j};
      }
      // NaNs to their end first (stable: in index order), then the rest by (value, index).
      using E = std::pair<C, int64_t>;
      auto begin = entries.begin(), end = entries.end();
      if (sp.ascend) {
        end = std::stable_partition(begin, end, [](const E& e) { return !is_nan(e.first); });
      } else {
        begin = std::stable_partition(begin, end, [](const E& e) { return is_nan(e.first); });
      }
      auto order = [asc = sp.ascend](const E& u, const E& v) {
        if (u.first != v.first) return asc ? u.first < v.first : u.first > v.first;
        return u.second < v.second;
      };
      const int64_t take = l.k;
      const auto sorted = entries.begin() + static_cast<ptrdiff_t>(take);
      if (sorted <= begin) {  // the top k are all NaN (descending): already in order
      } else if (sorted >= end) {
        std::sort(begin, end, order);
      } else {
        std::partial_sort(begin, sorted, end, order);
      }
      for (int64_t j = 0; j < take; ++j) {
        const int64_t src = entries[static_cast<size_t>(j)].second;
        if (ret == SortParams::kMask) {
          outs[0].data_as<T>()[base + src * l.inner] = from_double<T>(1);
          continue;
        }
        if (ret == SortParams::kValue || ret == SortParams::kBoth) {
          outs[0].data_as<T>()[obase + j * l.inner] = x[base + src * l.inner];
        }
        if (idx_out) {
          dispatch_dtype(idx_out->dtype(), [&](auto itag) {
            using I = decltype(itag);
            idx_out->data_as<I>()[obase + j * l.inner] = from_double<I>(static_cast<double>(src));
          });
        }
      }
    }
  }
}

void sort_kernel(const ParsedParams& p, std::span<const NDArray> in,
                 std::span<const NDArray> outs) {
  const auto& sp = p.get<SortParams>();
  const SortLayout l = sort_layout(sp, in[0].shape(), p.op().c_str());
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    sort_lanes<T>(sp, l, in[0], outs);
  });
}

}  // namespace

void register_index_kernels() {
  register_kernel("pick", DeviceType::kCPU, pick_kernel);
  register_kernel("_backward_pick", DeviceType::kCPU, pick_backward_kernel);
  register_kernel("fill_element_0index", DeviceType::kCPU, fill_element_kernel);
  register_kernel("_onehot_encode", DeviceType::kCPU, onehot_kernel);
  constexpr DeviceType kCPU = DeviceType::kCPU;
  register_kernel("take", kCPU, take_kernel);
  register_kernel("batch_take", kCPU, batch_take_kernel);
  register_kernel("one_hot", kCPU, one_hot_kernel);
  register_kernel("where", kCPU, where_kernel);
  register_kernel("gather_nd", kCPU, gather_nd_kernel);
  register_kernel("scatter_nd", kCPU, scatter_nd_kernel);
  register_kernel("_scatter_set_nd", kCPU, scatter_set_nd_kernel);
  for (const char* name : {"sort", "argsort", "topk"}) register_kernel(name, kCPU, sort_kernel);
}

}  // namespace nanomx::ops::cpu
