// The CUDA kernels of the indexing operators: take, pick, one_hot, where, sort/argsort/topk,
// gather_nd/scatter_nd and the index checks of fill_element_0index and _onehot_encode.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cuda/kernels/gpu_kernel.h"
#include "nanomx/dtype.h"
#include "ops/op_params.h"

namespace nanomx::ops::cuda_kernels {

// An index (or condition) array as the kernels read it: any of the float and integer types
// MXNet uses for indices.
cu::Indices indices_of(const ParsedParams& p, const NDArray& a) {
  cu::IndexType t;
  switch (a.dtype()) {
    case DType::kFloat32:
      t = cu::IndexType::kF32;
      break;
    case DType::kFloat64:
      t = cu::IndexType::kF64;
      break;
    case DType::kFloat16:
      t = cu::IndexType::kF16;
      break;
    case DType::kInt32:
      t = cu::IndexType::kI32;
      break;
    case DType::kInt64:
      t = cu::IndexType::kI64;
      break;
    case DType::kUint8:
      t = cu::IndexType::kU8;
      break;
    case DType::kInt8:
      t = cu::IndexType::kI8;
      break;
    default:
      NANOMX_THROW() << p.op() << ": the CUDA kernel reads indices of the float types, int32, "
                     << "int64, uint8 and int8, not " << dtype_name(a.dtype());
  }
  return {a.data(), t};
}

namespace {

// A position a kernel reports (the smallest bad index, for the error message): set above every
// position before the kernels, read back after them. Reading waits for the stream: the
// operators that must report a bad index wait for their work, as take's raise mode.
class ReportedPosition {
 public:
  explicit ReportedPosition(cudaStream_t s) : scratch_(sizeof(int64_t), s), stream_(s) {
    NANOMX_CUDA_CALL(cudaMemsetAsync(scratch_.get(), 0x7F, sizeof(int64_t), s));
  }
  int64_t* device() const { return scratch_.int64s(); }
  // The position, or -1 when none was reported.
  int64_t wait() const {
    int64_t position = 0;
    NANOMX_CUDA_CALL(cudaMemcpyAsync(&position, scratch_.get(), sizeof position,
                                     cudaMemcpyDeviceToHost, stream_));
    NANOMX_CUDA_CALL(cudaStreamSynchronize(stream_));
    return position == kNone ? -1 : position;
  }

 private:
  static constexpr int64_t kNone = 0x7F7F7F7F7F7F7F7F;
  DeviceScratch scratch_;
  cudaStream_t stream_;
};

// Element `flat` of a GPU index array as a double (for an error message: waits for a copy).
double index_value_at(const NDArray& a, int64_t flat) {
  const size_t size = dtype_size(a.dtype());
  std::vector<unsigned char> bytes(size);
  NANOMX_CUDA_CALL(cudaMemcpy(bytes.data(),
                              static_cast<const unsigned char*>(a.data()) + flat * size, size,
                              cudaMemcpyDeviceToHost));
  return dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, bytes.data(), sizeof v);
    return to_double(v);
  });
}

// take (data, indices): rows of data along the axis. In raise mode an index out of range is an
// error, which needs the kernel's result: the worker waits for its stream then (the other modes
// never wait).
void take(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const auto& t = p.get<TakeParams>();
  const Shape& a = in[0].shape();
  const int axis = normalize_axis(t.axis, a.ndim(), "take");
  const AxisSplit split = split_at_axis(a, axis);
  const int64_t outer = split.outer, n = split.len, inner = split.inner;
  const int64_t m = in[1].size();
  if (out[0].size() == 0) return;
  NANOMX_CHECK(n > 0) << "take: cannot take from an empty axis " << axis << " of " << a;
  const int mode = t.mode == TakeParams::kClip ? 0 : t.mode == TakeParams::kWrap ? 1 : 2;
  const cu::Indices idx = indices_of(p, in[1]);
  if (mode != 2) {
    check_launch(p, cu::take(in[0].data(), idx, out[0].data(), dtype_size(out[0].dtype()), outer, n,
                             inner, m, mode, nullptr, s));
    return;
  }
  const ReportedPosition bad(s);
  check_launch(p, cu::take(in[0].data(), idx, out[0].data(), dtype_size(out[0].dtype()), outer, n,
                           inner, m, mode, bad.device(), s));
  const int64_t position = bad.wait();
  NANOMX_CHECK(position < 0) << "take: take operator contains indices out of bound (index "
                             << position << " for axis " << axis << " of size " << n << ")";
}

// pick (data, index): one element along the axis per position.
void pick(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const auto& pp = p.get<PickParams>();
  const Shape& data = in[0].shape();
  const int axis = normalize_axis(pp.axis, data.ndim(), "pick");
  const AxisSplit split = split_at_axis(data, axis);
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  if (out[0].size() == 0) return;
  NANOMX_CHECK(len > 0) << "pick: cannot pick from an empty axis";
  check_launch(p, cu::pick(in[0].data(), indices_of(p, in[1]), out[0].data(),
                           dtype_size(out[0].dtype()), outer, len, inner, pp.wrap, s));
}

// batch_take (data (..., cols), indices): one element per row, the index clipped.
void batch_take(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                cudaStream_t s) {
  const Shape& a = in[0].shape();
  const int64_t cols = a[a.ndim() - 1], rows = in[1].size();
  if (rows == 0) return;
  check_launch(p, cu::pick(in[0].data(), indices_of(p, in[1]), out[0].data(),
                           dtype_size(out[0].dtype()), rows, cols, 1, false, s));
}

void one_hot(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
             cudaStream_t s) {
  const auto& oh = p.get<OneHotParams>();
  check_launch(
      p, cu::one_hot(indices_of(p, in[0]), fw(out[0]), in[0].size(), oh.depth, oh.on, oh.off, s));
}

// where (condition, x, y): the condition of x's shape, or one per row of x.
void where(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
           cudaStream_t s) {
  const int64_t n = out[0].size();
  if (n == 0) return;
  const int64_t row = in[0].shape() != in[1].shape() ? n / in[0].size() : 1;
  check_launch(p, cu::where(indices_of(p, in[0]), in[1].data(), in[2].data(), out[0].data(),
                            dtype_size(out[0].dtype()), n, row, s));
}

// sort / argsort / topk: what SortParams::ret asks for, in the CPU's order.
void sort(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const auto& sp = p.get<SortParams>();
  const SortLayout l = sort_layout(sp, in[0].shape(), p.op().c_str());
  const cu::Tensor none{nullptr, elem_of(in[0].dtype())};
  cu::Tensor values = none, indices = none, mask = none;
  switch (sp.ret) {
    case SortParams::kValue:
      values = fw(out[0]);
      break;
    case SortParams::kIndices:
      indices = fw(out[0]);
      break;
    case SortParams::kMask:
      mask = fw(out[0]);
      if (out[0].nbytes() > 0) {
        NANOMX_CUDA_CALL(cudaMemsetAsync(out[0].data(), 0, out[0].nbytes(), s));
      }
      break;
    case SortParams::kBoth:
      values = fw(out[0]);
      indices = fw(out[1]);
      break;
  }
  const int64_t n = in[0].size();
  if (n == 0) return;
  DeviceScratch scratch(cu::sort_scratch_bytes(elem_of(in[0].dtype()), n), s);
  check_launch(p, cu::sort(f(in[0]), l.outer, l.len, l.inner, l.k, sp.ascend, scratch.get(), values,
                           indices, mask, s));
}

// The index tuples of gather_nd / scatter_nd (indices of shape (m, ...) into data's first m
// axes): their slab offsets, -1 where a tuple is out of range; `bad` gets the first such.
struct NdTuples {
  cu::NdIndex nd;
  int64_t slab = 1;
};
NdTuples nd_tuples(const ParsedParams& p, const Shape& data, const NDArray& indices) {
  NdTuples t;
  t.nd.m = indices.shape().ndim() > 0 ? indices.shape()[0] : 0;
  t.nd.count = t.nd.m > 0 ? indices.size() / t.nd.m : 0;
  NANOMX_CHECK(t.nd.m <= cu::kMaxDims) << p.op() << ": indices index " << t.nd.m
                                       << " axes; the CUDA kernel handles up to " << cu::kMaxDims;
  for (int64_t a = 0; a < t.nd.m; ++a) t.nd.dims[a] = data[static_cast<int>(a)];
  for (int d = static_cast<int>(t.nd.m); d < data.ndim(); ++d) t.slab *= data[d];
  return t;
}
// Throws the CPU's message for tuple j, which nd_offsets reported out of range.
void throw_bad_tuple(const ParsedParams& p, const NDArray& indices, const NdTuples& t, int64_t j) {
  for (int64_t a = 0; a < t.nd.m; ++a) {
    const double v = index_value_at(indices, a * t.nd.count + j);
    const int64_t size = t.nd.dims[a];
    const int64_t k = std::isfinite(v) ? static_cast<int64_t>(v) : INT64_MIN;
    if (k < -size || k >= size) {
      NANOMX_THROW() << p.op() << ": IndexError: index " << v << " is out of bounds for axis " << a
                     << " with size " << size;
    }
  }
  NANOMX_THROW() << p.op() << ": index tuple " << j << " is out of bounds";
}

void gather_nd(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
               cudaStream_t s) {
  const NdTuples t = nd_tuples(p, in[0].shape(), in[1]);
  if (t.nd.count == 0 || out[0].size() == 0) return;
  DeviceScratch offsets(static_cast<size_t>(t.nd.count) * sizeof(int64_t), s);
  const ReportedPosition bad(s);
  check_launch(p, cu::nd_offsets(indices_of(p, in[1]), t.nd, offsets.int64s(), bad.device(), s));
  check_launch(p, cu::gather_slabs(in[0].data(), offsets.int64s(), out[0].data(),
                                   dtype_size(out[0].dtype()), t.nd.count, t.slab, s));
  if (const int64_t j = bad.wait(); j >= 0) throw_bad_tuple(p, in[1], t, j);
}

// out (already holding what the tuples do not address) with `values` scattered into it.
void scatter_into(const ParsedParams& p, const NDArray& values, const NDArray& indices,
                  const NDArray& out, cudaStream_t s) {
  const NdTuples t = nd_tuples(p, out.shape(), indices);
  if (t.nd.count == 0 || out.size() == 0) return;
  DeviceScratch offsets(static_cast<size_t>(t.nd.count) * sizeof(int64_t), s);
  const int64_t out_slabs = out.size() / t.slab;
  DeviceScratch winner(static_cast<size_t>(out_slabs) * sizeof(int64_t), s);
  const ReportedPosition bad(s);
  check_launch(p, cu::nd_offsets(indices_of(p, indices), t.nd, offsets.int64s(), bad.device(), s));
  check_launch(
      p, cu::scatter_slabs(values.data(), offsets.int64s(), out.data(), dtype_size(out.dtype()),
                           t.nd.count, t.slab, winner.int64s(), out_slabs, s));
  if (const int64_t j = bad.wait(); j >= 0) throw_bad_tuple(p, indices, t, j);
}

void scatter_nd(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                cudaStream_t s) {
  if (out[0].nbytes() > 0) NANOMX_CUDA_CALL(cudaMemsetAsync(out[0].data(), 0, out[0].nbytes(), s));
  scatter_into(p, in[0], in[1], out[0], s);
}

// _scatter_set_nd (lhs, rhs, indices): lhs with rhs's values at the tuples.
void scatter_set_nd(const ParsedParams& p, std::span<const NDArray> in,
                    std::span<const NDArray> out, cudaStream_t s) {
  copy(p, in.first(1), out, s);
  scatter_into(p, in[1], in[2], out[0], s);
}

// fill_element_0index (lhs (rows, cols), values (rows), indices (rows)): lhs with values[i] at
// column indices[i] of row i.
void fill_element_0index(const ParsedParams& p, std::span<const NDArray> in,
                         std::span<const NDArray> out, cudaStream_t s) {
  const int64_t rows = in[0].shape()[0], cols = in[0].shape()[1];
  copy(p, in.first(1), out, s);
  const cu::Indices idx = indices_of(p, in[2]);
  const ReportedPosition bad(s);
  check_launch(p, cu::find_bad_index(idx, rows, cols, bad.device(), s));
  check_launch(p, cu::fill_element(in[1].data(), idx, out[0].data(), dtype_size(out[0].dtype()),
                                   rows, cols, s));
  if (const int64_t i = bad.wait(); i >= 0) {
    NANOMX_THROW() << "fill_element_0index: index " << index_value_at(in[2], i) << " in row " << i
                   << " out of range [0, " << cols << ")";
  }
}

// _onehot_encode (indices (rows), out (rows, cols)): each row 1 at its index, 0 elsewhere.
void onehot_encode(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                   cudaStream_t s) {
  const int64_t rows = out[0].shape()[0], cols = out[0].shape()[1];
  const cu::Indices idx = indices_of(p, in[0]);
  const ReportedPosition bad(s);
  check_launch(p, cu::find_bad_index(idx, rows, cols, bad.device(), s));
  check_launch(p, cu::one_hot(idx, fw(out[0]), rows, cols, 1.0, 0.0, s));
  if (const int64_t i = bad.wait(); i >= 0) {
    NANOMX_THROW() << "_onehot_encode: index " << index_value_at(in[0], i) << " in row " << i
                   << " out of range [0, " << cols << ")";
  }
}

}  // namespace

void add_index_kernels(const AddKernel& add) {
  constexpr Operands kAnyType = Operands::kAnyType;
  add("take", gpu_kernel<take, kAnyType>);
  add("pick", gpu_kernel<pick, kAnyType>);
  add("one_hot", gpu_kernel<one_hot, kAnyType>);
  add("where", gpu_kernel<where, kAnyType>);
  add("batch_take", gpu_kernel<batch_take, kAnyType>);
  // Ordering, index tuples: any dtype (indices of any numeric dtype).
  add("sort", gpu_kernel<sort, kAnyType>);
  add("argsort", gpu_kernel<sort, kAnyType>);
  add("topk", gpu_kernel<sort, kAnyType>);
  add("gather_nd", gpu_kernel<gather_nd, kAnyType>);
  add("scatter_nd", gpu_kernel<scatter_nd, kAnyType>);
  add("_scatter_set_nd", gpu_kernel<scatter_set_nd, kAnyType>);
  add("fill_element_0index", gpu_kernel<fill_element_0index, kAnyType>);
  add("_onehot_encode", gpu_kernel<onehot_encode, kAnyType>);
}

}  // namespace nanomx::ops::cuda_kernels
