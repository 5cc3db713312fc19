// The operators' CUDA kernels (the float dtypes; the integer ones where docs/cuda.md says):
// argument checks and shapes here, the kernels in kernels.cu, matrix products through cuBLAS.
// Registered only when a GPU is visible. Never run on a GPU yet: see docs/cuda.md.
#ifdef NANOMX_HAVE_CUDA

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "base/cuda_util.h"
#include "nanomx/env.h"
#include "nanomx/gpu.h"
#include "nanomx/shape.h"
#include "ops/cuda/cublas_library.h"
#include "ops/cuda/launch.h"
#include "ops/kernel.h"
#include "ops/math_params.h"
#include "ops/nn.h"
#include "ops/op_params.h"
#include "ops/optimizer_ops.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "ops/shape_params.h"

namespace nanomx::ops {
namespace {

namespace cu = nanomx::ops::cuda;

// The stream a kernel launches on: the GPU worker's. Elsewhere (the naive engine runs operators
// on the calling thread) the thread's default per-thread stream, synchronized before returning,
// so that the operation is complete when the engine thinks it is.
class StreamScope {
 public:
  explicit StreamScope(int dev_id) : stream_(nanomx::cuda::current_stream()) {
    if (stream_ == nullptr) {
      NANOMX_CUDA_CALL(cudaSetDevice(dev_id));
      stream_ = cudaStreamPerThread;
      sync_ = true;
    }
  }
  ~StreamScope() noexcept(false) {
    if (sync_ && std::uncaught_exceptions() == 0) {
      NANOMX_CUDA_CALL(cudaStreamSynchronize(stream_));
    }
  }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_;
  bool sync_ = false;
};

void check_launch(const ParsedParams& p, cudaError_t status) {
  NANOMX_CHECK(status == cudaSuccess)
      << p.op() << ": CUDA kernel launch failed: " << cudaGetErrorString(status);
}

using GpuKernel = void (*)(const ParsedParams&, std::span<const NDArray>, std::span<const NDArray>,
                           cudaStream_t);

// What a kernel takes, every array on the output's GPU and: kSameFloat (the default) of the
// output's dtype, float32, float64 or float16; kSame of the output's dtype, any of the seven
// (the arithmetic whose kernels have the CPU's integer semantics too); kAnyFloat each of the
// float dtypes (mp_sgd's float16 weights, float32 master copy); kAnyType any dtypes (Cast and
// the layout and indexing operators: they convert or move elements); kCopy: _copyto between
// devices (any dtype, inputs anywhere: the copy reads host memory too).
enum class Operands { kSameFloat, kSame, kAnyFloat, kAnyType, kCopy };

// The checks `operands` asks for, then the kernel on the right stream.
template <GpuKernel K, Operands operands = Operands::kSameFloat>
void gpu_kernel(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out) {
  constexpr bool kCopy = operands == Operands::kCopy;
  constexpr bool kFloatOnly = operands == Operands::kSameFloat || operands == Operands::kAnyFloat;
  constexpr bool kOneDtype = operands == Operands::kSameFloat || operands == Operands::kSame;
  const Context ctx = out[0].ctx();
  auto check = [&](const NDArray& a, const char* what, size_t i) {
    NANOMX_CHECK(kCopy || a.ctx() == ctx)
        << p.op() << ": " << what << " " << i << " is on " << a.ctx().str()
        << ", the operator runs on " << ctx.str() << " (copy it there with as_in_context / copyto)";
    NANOMX_CHECK(!kFloatOnly || is_float_dtype(a.dtype()))
        << p.op() << ": its CUDA kernel supports float32, float64 and float16 (docs/cuda.md), "
        << what << " " << i << " is " << dtype_name(a.dtype());
    NANOMX_CHECK(!kOneDtype || a.dtype() == out[0].dtype())
        << p.op() << ": " << what << " " << i << " is " << dtype_name(a.dtype()) << ", the output "
        << dtype_name(out[0].dtype()) << " (the CUDA kernels take one dtype; cast first)";
  };
  for (size_t i = 0; i < in.size(); ++i) check(in[i], "input", i);
  for (size_t i = 0; i < out.size(); ++i) check(out[i], "output", i);
  StreamScope stream(ctx.dev_id);
  K(p, in, out, stream.get());
}

// Scratch in stream-ordered memory, freed after the work queued before the free.
class DeviceScratch {
 public:
  DeviceScratch(size_t bytes, cudaStream_t s) : stream_(s) {
    if (bytes > 0) NANOMX_CUDA_CALL(cudaMallocAsync(&data_, bytes, s));
  }
  ~DeviceScratch() {
    if (data_ != nullptr) (void)cudaFreeAsync(data_, stream_);
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  void* get() const { return data_; }
  int64_t* int64s() const { return static_cast<int64_t*>(data_); }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

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

cu::Elem elem_of(DType t) {
  switch (t) {
    case DType::kFloat32:
      return cu::Elem::kFloat32;
    case DType::kFloat64:
      return cu::Elem::kFloat64;
    case DType::kFloat16:
      return cu::Elem::kFloat16;
    case DType::kUint8:
      return cu::Elem::kUint8;
    case DType::kInt8:
      return cu::Elem::kInt8;
    case DType::kInt32:
      return cu::Elem::kInt32;
    case DType::kInt64:
      return cu::Elem::kInt64;
  }
  NANOMX_THROW() << "the CUDA kernels know no dtype " << static_cast<int>(t);
  return cu::Elem::kFloat32;  // not reached: NANOMX_THROW throws
}
cu::ConstTensor f(const NDArray& a) { return {a.data(), elem_of(a.dtype())}; }
cu::Tensor fw(const NDArray& a) { return {a.data(), elem_of(a.dtype())}; }

// The element strides of `part` over `full` (aligned on the right): 0 on the axes `part`
// broadcasts along.
void broadcast_strides_into(const Shape& part, const Shape& full, int64_t* strides) {
  const auto own = part.strides();
  for (int d = 0; d < full.ndim(); ++d) {
    const int i = d - (full.ndim() - part.ndim());
    strides[d] = i < 0 || (part[i] == 1 && full[d] != 1) ? 0 : own[static_cast<size_t>(i)];
  }
}

// ---- elementwise ----

template <cu::BinaryOp Op>
void binary(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  const Shape& os = out[0].shape();
  if (in[0].shape() == os && in[1].shape() == os) {
    check_launch(p, cu::binary(Op, f(in[0]), f(in[1]), fw(out[0]), out[0].size(), s));
    return;
  }
  NANOMX_CHECK(os.ndim() <= cu::kMaxDims)
      << p.op() << ": broadcasting over " << os.ndim() << " axes; the CUDA kernel handles up to "
      << cu::kMaxDims;
  cu::Broadcast bc;
  bc.ndim = os.ndim();
  broadcast_strides_into(in[0].shape(), os, bc.a_strides);
  broadcast_strides_into(in[1].shape(), os, bc.b_strides);
  for (int d = 0; d < os.ndim(); ++d) bc.shape[d] = os[d];
  check_launch(p, cu::binary_broadcast(Op, f(in[0]), f(in[1]), fw(out[0]), out[0].size(), bc, s));
}

// add_n (the gradient graphs' sums): left to right, as the CPU kernel.
void add_n(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
           cudaStream_t s) {
  const int64_t n = out[0].size();
  if (in.size() == 1) {
    if (in[0].data() != out[0].data() && n > 0) {
      NANOMX_CUDA_CALL(cudaMemcpyAsync(out[0].data(), in[0].data(), out[0].nbytes(),
                                       cudaMemcpyDeviceToDevice, s));
    }
    return;
  }
  check_launch(p, cu::binary(cu::BinaryOp::kAdd, f(in[0]), f(in[1]), fw(out[0]), n, s));
  for (size_t k = 2; k < in.size(); ++k) {
    check_launch(p, cu::binary(cu::BinaryOp::kAdd, f(out[0]), f(in[k]), fw(out[0]), n, s));
  }
}

// x op s, or s op x (kReversed: _rminus_scalar, _rdiv_scalar, ...).
template <cu::BinaryOp Op, bool kReversed>
void scalar(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  check_launch(p, cu::scalar(Op, kReversed, f(in[0]), p.get<ScalarParams>().scalar, fw(out[0]),
                             out[0].size(), s));
}

template <cu::UnaryOp Op>
void unary(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
           cudaStream_t s) {
  check_launch(p, cu::unary(Op, f(in[0]), fw(out[0]), out[0].size(), s));
}

void activation(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                cudaStream_t s) {
  cu::UnaryOp op = cu::UnaryOp::kRelu;
  switch (p.get<ActivationParams>().act) {
    case ActType::kRelu:
      op = cu::UnaryOp::kRelu;
      break;
    case ActType::kSigmoid:
      op = cu::UnaryOp::kSigmoid;
      break;
    case ActType::kTanh:
      op = cu::UnaryOp::kTanh;
      break;
    case ActType::kSoftRelu:
      op = cu::UnaryOp::kSoftRelu;
      break;
    case ActType::kSoftSign:
      op = cu::UnaryOp::kSoftSign;
      break;
  }
  check_launch(p, cu::unary(op, f(in[0]), fw(out[0]), out[0].size(), s));
}

void activation_backward(const ParsedParams& p, std::span<const NDArray> in,
                         std::span<const NDArray> out, cudaStream_t s) {
  cu::ActGrad g = cu::ActGrad::kRelu;
  const NDArray* v = &in[1];  // the output y
  switch (p.get<ActivationParams>().act) {
    case ActType::kRelu:
      g = cu::ActGrad::kRelu;
      break;
    case ActType::kSigmoid:
      g = cu::ActGrad::kSigmoid;
      break;
    case ActType::kTanh:
      g = cu::ActGrad::kTanh;
      break;
    case ActType::kSoftRelu:
      g = cu::ActGrad::kSoftRelu;
      break;
    case ActType::kSoftSign:
      g = cu::ActGrad::kSoftSign;
      v = &in[2];  // the input x
      break;
  }
  check_launch(p, cu::activation_grad(g, f(in[0]), f(*v), fw(out[0]), out[0].size(), s));
}

void fill(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
          cudaStream_t s) {
  check_launch(p, cu::fill(fw(out[0]), p.get<FillParams>().value, out[0].size(), s));
}

template <int kValue>
void fill_like(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
               cudaStream_t s) {
  check_launch(p, cu::fill(fw(out[0]), static_cast<double>(kValue), out[0].size(), s));
}

// _copyto, _copy, Cast between equal dtypes: a device copy (either side may be host memory:
// unified addressing).
void copy(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  NANOMX_CHECK(in[0].dtype() == out[0].dtype())
      << p.op() << ": the CUDA kernel copies without converting (" << dtype_name(in[0].dtype())
      << " to " << dtype_name(out[0].dtype()) << " is not supported yet)";
  if (out[0].nbytes() == 0 || in[0].data() == out[0].data()) return;
  NANOMX_CUDA_CALL(
      cudaMemcpyAsync(out[0].data(), in[0].data(), out[0].nbytes(), cudaMemcpyDefault, s));
}

// Cast between the float dtypes (a copy when they are equal).
void cast(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  if (in[0].dtype() == out[0].dtype()) {
    copy(p, in, out, s);
    return;
  }
  check_launch(p, cu::cast(f(in[0]), fw(out[0]), out[0].size(), s));
}

// _backward_linear_reg_out (label, output) -> (d_data, d_label): (out - label) * grad_scale /
// (label's entries per row), as the CPU kernel.
void linear_reg_backward(const ParsedParams& p, std::span<const NDArray> in,
                         std::span<const NDArray> out, cudaStream_t s) {
  const NDArray &label = in[0], &y = in[1];
  check_launch(p, cu::fill(fw(out[1]), 0.0, out[1].size(), s));  // the label gets no gradient
  if (y.size() == 0) return;
  const int64_t per_row = label.size() / label.shape()[0];
  const double scale = p.get<RegressionOutputParams>().grad_scale / static_cast<double>(per_row);
  check_launch(p, cu::softmax_output_grad_dense(f(y), f(label), fw(out[0]), y.size(), scale, s));
}

// ---- layout: strided walks (every layout operator is one or a few) ----

// A walk of `shape` reading `src` with src_strides from src_base and writing `dst` with
// dst_strides from dst_base (element strides); at most kMaxDims axes.
void walk(const ParsedParams& p, const NDArray& src, std::span<const int64_t> shape,
          std::span<const int64_t> src_strides, int64_t src_base, const NDArray& dst,
          std::span<const int64_t> dst_strides, int64_t dst_base, cudaStream_t s) {
  NANOMX_CHECK(shape.size() <= static_cast<size_t>(cu::kMaxDims))
      << p.op() << ": " << shape.size() << " axes; the CUDA kernel handles up to " << cu::kMaxDims;
  cu::Strided w;
  w.ndim = static_cast<int>(shape.size());
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    w.shape[d] = shape[d];
    w.src_strides[d] = src_strides[d];
    w.dst_strides[d] = dst_strides[d];
    n *= shape[d];
  }
  w.src_base = src_base;
  w.dst_base = dst_base;
  check_launch(p, cu::copy_strided(src.data(), dst.data(), dtype_size(dst.dtype()), n, w, s));
}

// dst (contiguous, its own shape) = src walked with src_strides from src_base.
void gather(const ParsedParams& p, const NDArray& src, std::span<const int64_t> src_strides,
            int64_t src_base, const NDArray& dst, cudaStream_t s) {
  const auto dst_strides = dst.shape().strides();
  walk(p, src, dst.shape().dims(), src_strides, src_base, dst, dst_strides, 0, s);
}

void slice(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
           cudaStream_t s) {
  const auto& sp = p.get<SliceParams>();
  const Region r = slice_region(p.op(), sp.begin, sp.end, sp.step, in[0].shape(), "data");
  const auto [strides, base] = region_strides(in[0].shape(), r);
  gather(p, in[0], strides, base, out[0], s);
}

void slice_axis(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                cudaStream_t s) {
  const auto& sp = p.get<SliceAxisParams>();
  const Shape& shape = in[0].shape();
  const int axis = normalize_axis(sp.axis, shape.ndim(), "slice_axis");
  Region r = full_region(shape);
  slice_axis_range("slice_axis", axis, shape[axis], sp.begin, sp.end, 1, r);
  const auto [strides, base] = region_strides(shape, r);
  gather(p, in[0], strides, base, out[0], s);
}

// _slice_assign (lhs, rhs): out = lhs with rhs written into the region.
void slice_assign(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                  cudaStream_t s) {
  const auto& sp = p.get<SliceParams>();
  const Region r = slice_region(p.op(), sp.begin, sp.end, sp.step, in[0].shape(), "lhs");
  copy(p, in.first(1), out, s);
  const auto [strides, base] = region_strides(out[0].shape(), r);
  const auto rhs_strides = in[1].shape().strides();
  walk(p, in[1], r.count, rhs_strides, 0, out[0], strides, base, s);
}

void slice_like(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                cudaStream_t s) {
  Region r = full_region(in[0].shape());
  r.count = out[0].shape().to_vector();
  const auto [strides, base] = region_strides(in[0].shape(), r);
  gather(p, in[0], strides, base, out[0], s);
}

void broadcast_to(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                  cudaStream_t s) {
  const LayoutWalk w = broadcast_to_walk(in[0].shape(), out[0].shape());
  gather(p, in[0], w.strides, w.base, out[0], s);
}

void transpose(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
               cudaStream_t s) {
  const LayoutWalk w = transpose_walk(in[0].shape(), p.get<AxesParams>().values);
  gather(p, in[0], w.strides, w.base, out[0], s);
}

void reverse(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
             cudaStream_t s) {
  const LayoutWalk w = reverse_walk(in[0].shape(), p.get<AxesParams>().values);
  gather(p, in[0], w.strides, w.base, out[0], s);
}

// SliceChannel: output k is the k-th equal part of the input along the axis.
void split(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
           cudaStream_t s) {
  const auto& sp = p.get<SplitParams>();
  const Shape& src = in[0].shape();
  const int axis = normalize_axis(sp.axis, src.ndim(), "SliceChannel");
  const int64_t part = src[axis] / sp.num_outputs;
  Region r = full_region(src);
  r.count[static_cast<size_t>(axis)] = part;
  for (size_t k = 0; k < out.size(); ++k) {
    r.begin[static_cast<size_t>(axis)] = static_cast<int64_t>(k) * part;
    auto [strides, base] = region_strides(src, r);
    if (sp.squeeze_axis) strides.erase(strides.begin() + axis);
    gather(p, in[0], strides, base, out[k], s);
  }
}

// Concat: input k into the output's slab at its offset along the axis.
void concat(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  const Shape& os = out[0].shape();
  const int axis = normalize_axis(p.get<AxisParams>().axis, os.ndim(), "Concat");
  const auto out_strides = os.strides();
  int64_t offset = 0;
  for (const NDArray& x : in) {
    const auto x_strides = x.shape().strides();
    walk(p, x, x.shape().dims(), x_strides, 0, out[0], out_strides,
         offset * out_strides[static_cast<size_t>(axis)], s);
    offset += x.shape()[axis];
  }
}

// stack: input k at index k of the new axis.
void stack(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
           cudaStream_t s) {
  const Shape& os = out[0].shape();
  const int axis = normalize_axis(p.get<AxisParams>().axis, os.ndim(), "stack");
  std::vector<int64_t> dst = os.strides();
  const int64_t step = dst[static_cast<size_t>(axis)];
  dst.erase(dst.begin() + axis);
  for (size_t k = 0; k < in.size(); ++k) {
    const auto x_strides = in[k].shape().strides();
    walk(p, in[k], in[k].shape().dims(), x_strides, 0, out[0], dst, static_cast<int64_t>(k) * step,
         s);
  }
}

// dst (contiguous) = src walked over the index space `space` with `strides` (tile, repeat,
// SwapAxis: a space larger than either array's shape, stride 0 on the repeated axes).
void gather_space(const ParsedParams& p, const NDArray& src, const std::vector<int64_t>& space,
                  std::span<const int64_t> strides, int64_t base, const NDArray& dst,
                  cudaStream_t s) {
  const auto dst_strides = Shape(space).strides();
  walk(p, src, space, strides, base, dst, dst_strides, 0, s);
}

void swapaxis(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
              cudaStream_t s) {
  const auto& a = p.get<AxisParams>();
  const LayoutWalk w = swapaxis_walk(in[0].shape(), a.axis, a.axis2);
  gather_space(p, in[0], w.space, w.strides, w.base, out[0], s);
}

// At most 4 axes: the walk's space has two per axis, and the walk takes 8.
void tile(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const LayoutWalk w = tile_walk(in[0].shape(), *p.get<AxisListParams>().axes);
  gather_space(p, in[0], w.space, w.strides, w.base, out[0], s);
}

void repeat(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  const auto& a = p.get<AxisParams>();
  const LayoutWalk w = repeat_walk(in[0].shape(), a.count, a.opt_axis);
  gather_space(p, in[0], w.space, w.strides, w.base, out[0], s);
}

void clip(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const auto& c = p.get<ClipParams>();
  check_launch(p, cu::clip(f(in[0]), fw(out[0]), out[0].size(), c.lo, c.hi, s));
}

// _backward_clip (dy, x): dy where x was inside [lo, hi].
void clip_backward(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                   cudaStream_t s) {
  const auto& c = p.get<ClipParams>();
  check_launch(p, cu::clip_grad(f(in[0]), f(in[1]), fw(out[0]), out[0].size(), c.lo, c.hi, s));
}

void arange(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
            cudaStream_t s) {
  const auto& r = p.get<RangeParams>();
  const double start = r.stop ? r.start : (r.infer_range ? r.start : 0);
  check_launch(p, cu::arange(fw(out[0]), out[0].size(), start, r.step, r.repeat, s));
}

void linspace(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
              cudaStream_t s) {
  const auto& r = p.get<RangeParams>();
  const double den = static_cast<double>(r.endpoint ? r.num - 1 : r.num);
  const double step = den > 0 ? (*r.stop - r.start) / den : 0;
  check_launch(p, cu::linspace(fw(out[0]), out[0].size(), r.start, step, s));
}

void eye(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
         cudaStream_t s) {
  const Shape& sh = out[0].shape();
  check_launch(p, cu::eye(fw(out[0]), sh[0], sh[1], p.get<RangeParams>().k, s));
}

// _slice_assign_scalar: out = data with the region set to the scalar.
void slice_assign_scalar(const ParsedParams& p, std::span<const NDArray> in,
                         std::span<const NDArray> out, cudaStream_t s) {
  const auto& sp = p.get<SliceParams>();
  const Region r = slice_region(p.op(), sp.begin, sp.end, sp.step, in[0].shape(), "data");
  copy(p, in.first(1), out, s);
  const auto [strides, base] = region_strides(out[0].shape(), r);
  NANOMX_CHECK(r.count.size() <= static_cast<size_t>(cu::kMaxDims))
      << p.op() << ": " << r.count.size() << " axes; the CUDA kernel handles up to "
      << cu::kMaxDims;
  cu::Strided w;
  w.ndim = static_cast<int>(r.count.size());
  int64_t n = 1;
  for (size_t d = 0; d < r.count.size(); ++d) {
    w.shape[d] = r.count[d];
    w.dst_strides[d] = strides[d];
    n *= r.count[d];
  }
  w.dst_base = base;
  check_launch(p, cu::fill_strided(fw(out[0]), sp.scalar, n, w, s));
}

// ---- indexing ----

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

// take (data, indices): rows of data along the axis. In raise mode an index out of range is an
// error, which needs the kernel's result: the worker waits for its stream then (the other modes
// never wait).
void take(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const auto& t = p.get<TakeParams>();
  const Shape& a = in[0].shape();
  const int axis = normalize_axis(t.axis, a.ndim(), "take");
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= a[d];
  for (int d = axis + 1; d < a.ndim(); ++d) inner *= a[d];
  const int64_t n = a[axis], m = in[1].size();
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
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= data[d];
  for (int d = axis + 1; d < data.ndim(); ++d) inner *= data[d];
  if (out[0].size() == 0) return;
  NANOMX_CHECK(data[axis] > 0) << "pick: cannot pick from an empty axis";
  check_launch(p, cu::pick(in[0].data(), indices_of(p, in[1]), out[0].data(),
                           dtype_size(out[0].dtype()), outer, data[axis], inner, pp.wrap, s));
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

// ---- reductions ----

// sum / mean over any set of axes: one pass per run of adjacent reduced axes, the last run
// first; the intermediate results live in stream-ordered memory (cudaMallocAsync).
// The axes of `full` that `part` (aligned on the right) broadcast along: summed for its gradient.
std::vector<bool> broadcast_axes(const Shape& part, const Shape& full) {
  std::vector<bool> reduced(static_cast<size_t>(full.ndim()), false);
  const int lead = full.ndim() - part.ndim();
  for (int d = 0; d < full.ndim(); ++d) {
    reduced[static_cast<size_t>(d)] = d < lead || (part[d - lead] == 1 && full[d] != 1);
  }
  return reduced;
}

// Reduces x (of shape `dims`) over the axes marked in `reduced` into `out` with `r`: one pass
// per run of adjacent reduced axes, the last run first, the later passes combining the earlier
// ones' results (a plain sum after the norms' first pass); the last pass scales by `scale` and
// takes the root when `root`. Intermediate results live in stream-ordered memory
// (cudaMallocAsync). No axis reduced: a copy.
void reduce_axes(const ParsedParams& p, cu::Reducer r, cu::ConstTensor x, std::vector<int64_t> dims,
                 std::vector<bool> reduced, cu::Tensor out, int64_t out_size, double scale,
                 bool root, int64_t int_mean_count, cudaStream_t s) {
  cu::ConstTensor src = x;
  std::vector<void*> temps;
  auto free_temps = [&] {
    for (void* t : temps) (void)cudaFreeAsync(t, s);
  };
  bool any = false;
  try {
    for (;;) {
      int b = static_cast<int>(dims.size());
      while (b > 0 && !reduced[static_cast<size_t>(b - 1)]) --b;
      if (b == 0) break;
      int a = b - 1;
      while (a > 0 && reduced[static_cast<size_t>(a - 1)]) --a;
      int64_t outer = 1, len = 1, inner = 1;
      for (int d = 0; d < a; ++d) outer *= dims[static_cast<size_t>(d)];
      for (int d = a; d < b; ++d) len *= dims[static_cast<size_t>(d)];
      for (size_t d = static_cast<size_t>(b); d < dims.size(); ++d) inner *= dims[d];
      dims.erase(dims.begin() + a, dims.begin() + b);
      reduced.erase(reduced.begin() + a, reduced.begin() + b);
      bool last = true;
      for (bool more : reduced) last = last && !more;
      cu::Tensor dst = out;
      if (!last) {
        void* t = nullptr;
        NANOMX_CUDA_CALL(
            cudaMallocAsync(&t, static_cast<size_t>(outer * inner) * cu::elem_size(dst.elem), s));
        temps.push_back(t);
        dst.data = t;
      }
      const cu::Reducer pass = any && (r == cu::Reducer::kAbsSum || r == cu::Reducer::kSquareSum)
                                   ? cu::Reducer::kSum
                                   : r;
      check_launch(p, cu::reduce(pass, src, dst, outer, len, inner, last ? scale : 1.0,
                                 last && root, last ? int_mean_count : 0, s));
      src = dst;
      any = true;
    }
    if (!any) {
      NANOMX_CUDA_CALL(cudaMemcpyAsync(out.data, src.data,
                                       static_cast<size_t>(out_size) * cu::elem_size(out.elem),
                                       cudaMemcpyDeviceToDevice, s));
    }
  } catch (...) {
    free_temps();
    throw;
  }
  free_temps();
}

void sum_axes(const ParsedParams& p, cu::ConstTensor x, std::vector<int64_t> dims,
              std::vector<bool> reduced, const NDArray& out, double scale, cudaStream_t s) {
  reduce_axes(p, cu::Reducer::kSum, x, std::move(dims), std::move(reduced), fw(out), out.size(),
              scale, false, 0, s);
}

// The reductions: sum, mean, prod, max, min, nansum, nanprod, norm (ord 1 or 2) over any set of
// axes. kMean: the sum divided by the count (an empty mean is NaN, as numpy; 0 for integers, as
// the CPU's). Integer sums, products and means wrap as the CPU's (cu::reduce).
template <cu::Reducer R, bool kMean = false>
void reduce_tensor(const ParsedParams& p, cu::ConstTensor x, const Shape& is, cu::Tensor out,
                   int64_t out_size, cudaStream_t s) {
  const auto& r = p.get<ReduceParams>();
  const ReduceSpec spec = reduce_spec(p.op(), r.axis, r.keepdims, r.exclude, is);
  int64_t total = 1;
  for (int d = 0; d < is.ndim(); ++d) {
    if (spec.reduced[static_cast<size_t>(d)]) total *= is[d];
  }
  if (out_size == 0) return;
  const bool norm = R == cu::Reducer::kSquareSum;  // norm's ord picks the reducer below
  const cu::Reducer reducer = norm && r.ord == 1 ? cu::Reducer::kAbsSum : R;
  if (is.size() == 0) {
    NANOMX_CHECK(reducer != cu::Reducer::kMax && reducer != cu::Reducer::kMin)
        << p.op() << ": zero-size reduction of " << is << " has no identity";
    const bool ones = reducer == cu::Reducer::kProd || reducer == cu::Reducer::kNanProd;
    const bool float_out = out.elem == cu::Elem::kFloat32 || out.elem == cu::Elem::kFloat64 ||
                           out.elem == cu::Elem::kFloat16;
    const double empty_mean = float_out ? NAN : 0.0;
    check_launch(p, cu::fill(out, kMean ? empty_mean : ones ? 1.0 : 0.0, out_size, s));
    return;
  }
  reduce_axes(p, reducer, x, std::vector<int64_t>(is.begin(), is.end()), spec.reduced, out,
              out_size, kMean ? 1.0 / static_cast<double>(total) : 1.0,
              reducer == cu::Reducer::kSquareSum, kMean ? total : 0, s);
}
template <cu::Reducer R, bool kMean = false>
void reduce(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  reduce_tensor<R, kMean>(p, f(in[0]), in[0].shape(), fw(out[0]), out[0].size(), s);
}

// argmax / argmin / argmax_channel: along one axis, or over the array flattened.
template <bool kMax>
void arg_reduce(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                cudaStream_t s) {
  const auto& a = p.get<ArgReduceParams>();
  const Shape& shape = in[0].shape();
  if (out[0].size() == 0) return;
  int64_t outer = 1, len = in[0].size(), inner = 1;
  if (a.axis) {
    const int axis = normalize_axis(*a.axis, shape.ndim(), p.op().c_str());
    for (int d = 0; d < axis; ++d) outer *= shape[d];
    for (int d = axis + 1; d < shape.ndim(); ++d) inner *= shape[d];
    len = shape[axis];
  }
  check_launch(p, cu::arg_reduce(kMax, f(in[0]), fw(out[0]), outer, len, inner, s));
}

// _backward_sum / _backward_mean (dy, data) -> d_data: dy spread over the reduced axes
// (divided by their size for mean).
template <bool kMean>
void reduce_backward(const ParsedParams& p, std::span<const NDArray> in,
                     std::span<const NDArray> out, cudaStream_t s) {
  const auto& r = p.get<ReduceParams>();
  const Shape& shape = in[1].shape();
  const ReduceSpec spec = reduce_spec(p.op(), r.axis, r.keepdims, r.exclude, shape);
  NANOMX_CHECK(shape.ndim() <= cu::kMaxDims)
      << p.op() << ": " << shape.ndim() << " axes; the CUDA kernel handles up to " << cu::kMaxDims;
  const double scale = kMean && shape.size() > 0 ? static_cast<double>(spec.kept.size()) /
                                                       static_cast<double>(shape.size())
                                                 : 1.0;
  cu::Broadcast bc;
  bc.ndim = shape.ndim();
  const auto kept_strides = spec.kept.strides();
  for (int d = 0; d < shape.ndim(); ++d) {
    bc.shape[d] = shape[d];
    bc.a_strides[d] = spec.kept[d] == 1 ? 0 : kept_strides[static_cast<size_t>(d)];
  }
  check_launch(p, cu::broadcast_scaled(f(in[0]), fw(out[0]), out[0].size(), bc, scale, s));
}

// _broadcast_backward (dy, input) -> d_input: dy summed down to the input's shape (aligned on
// the right; the axes the forward broadcast are summed).
void broadcast_backward(const ParsedParams& p, std::span<const NDArray> in,
                        std::span<const NDArray> out, cudaStream_t s) {
  const Shape &full = in[0].shape(), &part = in[1].shape();
  if (out[0].size() == 0) return;
  if (in[0].size() == 0) {
    check_launch(p, cu::fill(fw(out[0]), 0.0, out[0].size(), s));
    return;
  }
  sum_axes(p, f(in[0]), std::vector<int64_t>(full.begin(), full.end()), broadcast_axes(part, full),
           out[0], 1.0, s);
}

// _backward_<unary>(dy, v) = dy * d(v[, scalar]).
template <cu::UnaryGradOp Op>
void unary_backward(const ParsedParams& p, std::span<const NDArray> in,
                    std::span<const NDArray> out, cudaStream_t s) {
  // The scalar operators' gradients (the table's last rows) read the forward call's scalar.
  const double scalar = Op >= cu::UnaryGradOp::kRDivScalar ? p.get<ScalarParams>().scalar : 0.0;
  check_launch(p, cu::unary_grad(Op, f(in[0]), f(in[1]), fw(out[0]), out[0].size(), scalar, s));
}

// The binary operators' gradients (dy[, lhs, rhs]) -> (d_lhs, d_rhs): the partials at full
// size, then, where an input was broadcast, summed down to its shape (sum_axes).
template <cu::BinaryGradOp Op>
void binary_backward(const ParsedParams& p, std::span<const NDArray> in,
                     std::span<const NDArray> out, cudaStream_t s) {
  const NDArray& dy = in[0];
  const Shape& full = dy.shape();
  const bool inputs = in.size() == 3;
  const Shape& sl = inputs ? in[1].shape() : full;
  const Shape& sr = inputs ? in[2].shape() : full;
  NANOMX_CHECK(full.ndim() <= cu::kMaxDims)
      << p.op() << ": " << full.ndim() << " axes; the CUDA kernel handles up to " << cu::kMaxDims;
  cu::Broadcast bc;
  bc.ndim = full.ndim();
  for (int d = 0; d < full.ndim(); ++d) bc.shape[d] = full[d];
  broadcast_strides_into(sl, full, bc.a_strides);
  broadcast_strides_into(sr, full, bc.b_strides);
  const cu::ConstTensor l = inputs ? f(in[1]) : cu::ConstTensor{nullptr, f(dy).elem};
  const cu::ConstTensor r = inputs ? f(in[2]) : cu::ConstTensor{nullptr, f(dy).elem};
  const int64_t n = dy.size();
  if (sl == full && sr == full) {
    check_launch(p, cu::binary_grad(Op, f(dy), l, r, fw(out[0]), fw(out[1]), n, bc, s));
    return;
  }
  if (n == 0) {
    check_launch(p, cu::fill(fw(out[0]), 0.0, out[0].size(), s));
    check_launch(p, cu::fill(fw(out[1]), 0.0, out[1].size(), s));
    return;
  }
  const size_t bytes = static_cast<size_t>(n) * cu::elem_size(f(dy).elem);
  void* temp = nullptr;
  NANOMX_CUDA_CALL(cudaMallocAsync(&temp, 2 * bytes, s));
  cu::Tensor pl = fw(out[0]), pr = fw(out[1]);
  pl.data = temp;
  pr.data = static_cast<char*>(temp) + bytes;
  try {
    check_launch(p, cu::binary_grad(Op, f(dy), l, r, pl, pr, n, bc, s));
    const std::vector<int64_t> dims(full.begin(), full.end());
    sum_axes(p, pl, dims, broadcast_axes(sl, full), out[0], 1.0, s);
    sum_axes(p, pr, dims, broadcast_axes(sr, full), out[1], 1.0, s);
  } catch (...) {
    (void)cudaFreeAsync(temp, s);
    throw;
  }
  NANOMX_CUDA_CALL(cudaFreeAsync(temp, s));
}

// _backward_softmax / _backward_log_softmax / _backward_softmin: (dy, y) or (dy, x, y).
template <int kKind>
void softmax_backward(const ParsedParams& p, std::span<const NDArray> in,
                      std::span<const NDArray> out, cudaStream_t s) {
  const auto& sp = p.get<SoftmaxParams>();
  const NDArray& y = in.back();
  const Shape& sh = y.shape();
  if (y.size() == 0) return;
  const int axis = normalize_axis(sp.axis, sh.ndim(), p.op().c_str());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= sh[d];
  for (int d = axis + 1; d < sh.ndim(); ++d) inner *= sh[d];
  check_launch(p, cu::softmax_grad(kKind, f(in[0]), f(y), fw(out[0]), outer, sh[axis], inner,
                                   sp.temperature, s));
}

// softmax / log_softmax along an axis; softmin (kMin): the softmax of -x, as a softmax at the
// negated temperature.
template <bool kLog, bool kMin = false>
void softmax(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
             cudaStream_t s) {
  const auto& sp = p.get<SoftmaxParams>();
  const Shape& sh = in[0].shape();
  if (in[0].size() == 0) return;
  const int axis = normalize_axis(sp.axis, sh.ndim(), p.op().c_str());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= sh[d];
  for (int d = axis + 1; d < sh.ndim(); ++d) inner *= sh[d];
  const double temperature = kMin ? -sp.temperature : sp.temperature;
  check_launch(p, cu::softmax(f(in[0]), fw(out[0]), outer, sh[axis], inner, temperature, kLog, s));
}

// SoftmaxOutput's forward: a softmax over the rows MXNet normalizes.
void softmax_output(const ParsedParams& p, std::span<const NDArray> in,
                    std::span<const NDArray> out, cudaStream_t s) {
  const auto& sp = p.get<SoftmaxOutputParams>();
  const Shape& sh = in[0].shape();
  const int64_t size = in[0].size();
  if (size == 0) return;
  int64_t outer, len, inner = 1;
  if (sp.multi_output) {
    outer = sh[0];
    len = sh[1];
    inner = size / (outer * len);
  } else if (sp.preserve_shape) {
    len = sh[sh.ndim() - 1];
    outer = size / len;
  } else {
    outer = sh[0];
    len = size / outer;
  }
  check_launch(p, cu::softmax(f(in[0]), fw(out[0]), outer, len, inner, 1.0, false, s));
}

// (output, label) -> (d_data, d_label): the CPU kernel's rules (cpu/backward_ops.cc), labels
// as class indices of the output's dtype, or probabilities of the output's shape.
void softmax_output_backward(const ParsedParams& p, std::span<const NDArray> in,
                             std::span<const NDArray> out, cudaStream_t s) {
  const auto& sp = p.get<SoftmaxOutputParams>();
  const NDArray &y = in[0], &label = in[1];
  const Shape& sh = y.shape();
  const int64_t size = y.size();
  check_launch(p, cu::fill(fw(out[1]), 0.0, out[1].size(), s));  // the label gets no gradient
  if (size == 0) return;
  if (label.shape() == sh) {
    check_launch(p,
                 cu::softmax_output_grad_dense(f(y), f(label), fw(out[0]), size, sp.grad_scale, s));
    return;
  }
  cu::SoftmaxOutputGrad g;
  if (sp.multi_output) {
    g.classes = sh[1];
    g.inner = size / (sh[0] * g.classes);
    g.rows = sh[0] * g.inner;
  } else if (sp.preserve_shape) {
    g.classes = sh[sh.ndim() - 1];
    g.rows = size / g.classes;
  } else {
    g.rows = sh[0];
    g.classes = size / g.rows;
  }
  NANOMX_CHECK(label.size() == g.rows)
      << p.op() << ": 'label' " << label.shape() << " has " << label.size() << " entries, 'output' "
      << sh << " has " << g.rows << " rows";
  g.grad_scale = static_cast<float>(sp.grad_scale);
  g.ignore_label = static_cast<float>(sp.ignore_label);
  g.smooth_alpha = static_cast<float>(sp.smooth_alpha);
  g.use_ignore = sp.use_ignore;
  g.out_grad = sp.out_grad;
  g.divide_by_valid = sp.normalization == "valid";
  g.divide_by_inner = sp.multi_output && !g.divide_by_valid;
  if (sp.normalization == "batch") {
    g.batch = static_cast<float>(label.shape().ndim() > 0 ? label.shape()[0] : 1);
  }
  check_launch(p, cu::softmax_output_grad(f(y), f(label), fw(out[0]), g, s));
}

// ---- random sampling ----

// Each call takes a key from the process's generator (mx.random.seed), in the order the state
// variable imposes on every random operator, CPU or GPU: a seeded program draws the same GPU
// numbers on every run (not the CPU's: a GPU stream of its own, as MXNet's).
template <bool kUniform>
void random_sample(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
                   cudaStream_t s) {
  const auto& r = p.get<RandomParams>();
  const uint64_t key = random_state().generator();
  check_launch(p, cu::random_fill(kUniform, fw(out[0]), out[0].size(), key, r.a, r.b, s));
}

// ---- sorting, gather/scatter by index tuples, Pad, diag (index_kernels.cu) ----

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

// _copyto: a copy between devices (either side may be host memory), converting where the
// dtypes differ (the output's decides, as the CPU's): an input elsewhere is first copied to a
// scratch on the output's GPU, where the cast kernel reads it.
void copy_to(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
             cudaStream_t s) {
  if (in[0].dtype() == out[0].dtype()) {
    copy(p, in, out, s);
    return;
  }
  if (out[0].size() == 0) return;
  if (in[0].ctx() == out[0].ctx()) {
    check_launch(p, cu::cast(f(in[0]), fw(out[0]), out[0].size(), s));
    return;
  }
  DeviceScratch staged(in[0].nbytes(), s);
  NANOMX_CUDA_CALL(
      cudaMemcpyAsync(staged.get(), in[0].data(), in[0].nbytes(), cudaMemcpyDefault, s));
  check_launch(p, cu::cast({staged.get(), elem_of(in[0].dtype())}, fw(out[0]), out[0].size(), s));
}

// norm: in the input's dtype (a reduction), or, with an out_dtype another, as the CPU: the input
// read as float64 (a cast into scratch), the norm in double, converted once to the output's
// dtype.
void norm(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  if (in[0].dtype() == out[0].dtype()) {
    reduce<cu::Reducer::kSquareSum>(p, in, out, s);
    return;
  }
  const int64_t n = in[0].size(), m = out[0].size();
  DeviceScratch wide(static_cast<size_t>(n + m) * sizeof(double), s);
  const cu::Tensor wide_in{wide.get(), cu::Elem::kFloat64};
  const cu::Tensor wide_out{static_cast<double*>(wide.get()) + n, cu::Elem::kFloat64};
  check_launch(p, cu::cast(f(in[0]), wide_in, n, s));
  reduce_tensor<cu::Reducer::kSquareSum>(p, wide_in, in[0].shape(), wide_out, m, s);
  check_launch(p, cu::cast(wide_out, fw(out[0]), m, s));
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

// _shuffle: the rows (axis 0) in a random order drawn from the process's generator.
void shuffle(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
             cudaStream_t s) {
  const Shape& sh = in[0].shape();
  const int64_t rows = sh.ndim() > 0 ? sh[0] : 1;
  if (out[0].size() == 0) return;
  const uint64_t key = random_state().generator();
  const size_t esize = dtype_size(out[0].dtype());
  const void* src = in[0].data();
  DeviceScratch copy(src == out[0].data() ? out[0].nbytes() : 0, s);  // rows read while written
  if (copy.get() != nullptr) {
    NANOMX_CUDA_CALL(
        cudaMemcpyAsync(copy.get(), src, out[0].nbytes(), cudaMemcpyDeviceToDevice, s));
    src = copy.get();
  }
  DeviceScratch scratch(cu::shuffle_scratch_bytes(rows), s);
  check_launch(p, cu::shuffle_rows(src, out[0].data(), rows, out[0].size() / rows, esize, key,
                                   scratch.get(), s));
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

void pad(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
         cudaStream_t s) {
  const auto& pp = p.get<PadParams>();
  const Shape &is = in[0].shape(), &os = out[0].shape();
  NANOMX_CHECK(is.ndim() <= cu::kMaxDims)
      << "Pad: " << is.ndim() << " axes; the CUDA kernel handles up to " << cu::kMaxDims;
  cu::PadLayout l;
  l.ndim = is.ndim();
  for (int d = 0; d < is.ndim(); ++d) {
    l.in_shape[d] = is[d];
    l.out_shape[d] = os[d];
    l.before[d] = pp.width[2 * static_cast<size_t>(d)];
  }
  l.mode = pp.mode == PadParams::kConstant ? 0 : pp.mode == PadParams::kEdge ? 1 : 2;
  check_launch(p, cu::pad(f(in[0]), fw(out[0]), out[0].size(), l, pp.value, s));
}

// diag: a 1-D input onto the k-th diagonal of a zeroed matrix; otherwise the k-th diagonal of
// axes (axis1, axis2) gathered as the last axis (a strided walk, as the CPU's).
void diag(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const auto& d = p.get<DiagParams>();
  const Shape& sh = in[0].shape();
  if (out[0].size() == 0) return;
  if (sh.ndim() == 1) {
    const int64_t n = out[0].shape()[0];
    NANOMX_CUDA_CALL(cudaMemsetAsync(out[0].data(), 0, out[0].nbytes(), s));
    const std::vector<int64_t> shape = {sh[0]}, src = {1}, dst = {n + 1};
    walk(p, in[0], shape, src, 0, out[0], dst, d.k >= 0 ? d.k : -d.k * n, s);
    return;
  }
  const LayoutWalk w = diag_walk(sh, d.k, d.axis1, d.axis2);
  gather_space(p, in[0], w.space, w.strides, w.base, out[0], s);
}

// ---- the other random samplers ----

// _random_exponential, _random_gamma, _random_poisson, _random_randint: scalar parameters.
template <cu::Sampler K>
void random_draw(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
                 cudaStream_t s) {
  const auto& sp = p.get<SampleParams>();
  const uint64_t key = random_state().generator();
  check_launch(p, cu::sample(K, fw(out[0]), out[0].size(), 1, {}, {}, sp.a, sp.b, key, s));
}

// _sample_<distribution> (parameter arrays): each parameter element draws size(out) /
// size(params) values into its row. The parameters are checked as the CPU checks them (read
// back: a wait for the stream).
template <cu::Sampler K>
void sample_draw(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                 cudaStream_t s) {
  const int64_t n = in[0].size();
  if (n == 0 || out[0].size() == 0) return;
  std::vector<std::vector<double>> params(in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    params[k] = dispatch_dtype(in[k].dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> host(static_cast<size_t>(n));
      NANOMX_CUDA_CALL(
          cudaMemcpyAsync(host.data(), in[k].data(), in[k].nbytes(), cudaMemcpyDeviceToHost, s));
      NANOMX_CUDA_CALL(cudaStreamSynchronize(s));
      std::vector<double> v(host.size());
      for (size_t i = 0; i < host.size(); ++i) v[i] = to_double(host[i]);
      return v;
    });
  }
  for (int64_t i = 0; i < n; ++i) {
    const double a = params[0][static_cast<size_t>(i)];
    const double b = in.size() > 1 ? params[1][static_cast<size_t>(i)] : 1.0;
    bool ok = true;
    if constexpr (K == cu::Sampler::kUniform) ok = a <= b;
    if constexpr (K == cu::Sampler::kNormal) ok = b > 0;
    if constexpr (K == cu::Sampler::kGamma) ok = a > 0 && b > 0;
    if constexpr (K == cu::Sampler::kExponential) ok = a > 0;
    if constexpr (K == cu::Sampler::kPoisson) ok = a >= 0;
    NANOMX_CHECK(ok) << "sampling: invalid distribution parameter(s) at element " << i << ": " << a
                     << (in.size() > 1 ? ", " + std::to_string(b) : std::string());
  }
  const uint64_t key = random_state().generator();
  const cu::Indices b = in.size() > 1 ? indices_of(p, in[1]) : cu::Indices{};
  check_launch(p, cu::sample(K, fw(out[0]), out[0].size(), out[0].size() / n, indices_of(p, in[0]),
                             b, 0.0, 1.0, key, s));
}

// _sample_multinomial: rows of probabilities over the last axis.
void multinomial(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                 cudaStream_t s) {
  const Shape& d = in[0].shape();
  const int64_t k = d[d.ndim() - 1];
  const int64_t rows = k > 0 ? in[0].size() / k : 0;
  if (rows == 0 || out[0].size() == 0) return;
  const cu::Tensor logp = out.size() > 1 ? fw(out[1]) : cu::Tensor{nullptr, cu::Elem::kFloat32};
  const uint64_t key = random_state().generator();
  check_launch(p, cu::multinomial(indices_of(p, in[0]), rows, k, out[0].size() / rows, fw(out[0]),
                                  logp, key, s));
}

// ---- optimizers ----

template <bool kMomentum>
void sgd(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
         cudaStream_t s) {
  const auto& o = p.get<OptimizerParams>();
  const cu::Tensor mom = kMomentum ? fw(in[2]) : cu::Tensor{nullptr, elem_of(out[0].dtype())};
  check_launch(p, cu::sgd(f(in[0]), f(in[1]), mom, fw(out[0]), out[0].size(), o.lr, o.wd,
                          o.rescale_grad, o.clip_gradient, o.momentum, s));
}

// multi_sgd_update / multi_sgd_mom_update: one sgd launch per weight, with its lr and wd.
template <bool kMomentum>
void multi_sgd(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
               cudaStream_t s) {
  const auto& m = p.get<MultiSgdParams>();
  constexpr int kGroup = kMomentum ? 3 : 2;
  for (int w = 0; w < m.num_weights; ++w) {
    const NDArray& weight = in[static_cast<size_t>(w * kGroup)];
    const cu::Tensor mom = kMomentum ? fw(in[static_cast<size_t>(w * kGroup + 2)])
                                     : cu::Tensor{nullptr, elem_of(weight.dtype())};
    check_launch(p, cu::sgd(f(weight), f(in[static_cast<size_t>(w * kGroup + 1)]), mom,
                            fw(out[static_cast<size_t>(w)]), out[static_cast<size_t>(w)].size(),
                            m.lrs[static_cast<size_t>(w)], m.wds[static_cast<size_t>(w)],
                            m.rescale_grad, m.clip_gradient, m.momentum, s));
  }
}

void adam(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const auto& o = p.get<OptimizerParams>();
  check_launch(
      p, cu::adam(f(in[0]), f(in[1]), fw(in[2]), fw(in[3]), fw(out[0]), out[0].size(), o.lr, o.wd,
                  o.rescale_grad, o.clip_gradient, o.beta1, o.beta2, o.epsilon, s));
}

// mp_sgd_update / mp_sgd_mom_update: weight and gradient in one dtype, the momentum and the
// master copy float32 (the operator's inference says so).
template <bool kMomentum>
void mp_sgd(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  const auto& o = p.get<OptimizerParams>();
  const NDArray& w32 = in[kMomentum ? 3 : 2];
  NANOMX_CHECK(in[1].dtype() == out[0].dtype() && w32.dtype() == DType::kFloat32 &&
               (!kMomentum || in[2].dtype() == DType::kFloat32))
      << p.op() << ": the weight and gradient must share a dtype and the master weight"
      << (kMomentum ? " and momentum" : "") << " be float32";
  float* mom = kMomentum ? static_cast<float*>(in[2].data()) : nullptr;
  check_launch(p,
               cu::mp_sgd(f(in[1]), mom, static_cast<float*>(w32.data()), fw(out[0]), out[0].size(),
                          static_cast<float>(o.lr), static_cast<float>(o.wd),
                          static_cast<float>(o.rescale_grad), static_cast<float>(o.clip_gradient),
                          static_cast<float>(o.momentum), s));
}

// ---- matrix products (cuBLAS) ----

// One cuBLAS handle per thread (a handle is not to be shared between threads launching at
// once), on the thread's device. TF32 is off unless NANOMX_CUBLAS_TF32=1, so that results match
// the CPU's float32 within tolerance.
cublasHandle_t blas_handle() {
  thread_local cublasHandle_t handle = nullptr;
  thread_local int device = -1;
  int current = 0;
  NANOMX_CUDA_CALL(cudaGetDevice(&current));
  if (handle == nullptr || device != current) {
    // A handle of another device is dropped (threads stay on one device in practice).
    NANOMX_CHECK(cu::cublas().create(&handle) == CUBLAS_STATUS_SUCCESS)
        << "cuBLAS: cannot create a handle on gpu(" << current << ")";
    static const bool tf32 = env::get_int("CUBLAS_TF32", 0) != 0;
    NANOMX_CHECK(cu::cublas().set_math_mode(
                     handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH) ==
                 CUBLAS_STATUS_SUCCESS)
        << "cuBLAS: cannot set the math mode";
    device = current;
  }
  return handle;
}

// Row-major C (m x n) = op(A) op(B) for `batch` products whose operands lie one after the
// other (A: m*k apart, B: k*n, C: m*n): column-major C^T = op(B)^T op(A)^T. float32 through
// cublasSgemm (one product) or its strided-batched form, float64 through the Dgemm pair, float16
// through cublasGemmStridedBatchedEx computing in float32.
void gemm_batched(const ParsedParams& p, cu::ConstTensor a, cu::ConstTensor b, cu::Tensor c,
                  const DotDims& d, int64_t batch, cudaStream_t s) {
  if (batch == 0 || d.m == 0 || d.n == 0) return;
  if (d.k == 0) {  // an empty sum: zeros
    NANOMX_CUDA_CALL(cudaMemsetAsync(
        c.data, 0, static_cast<size_t>(batch * d.m * d.n) * cu::elem_size(c.elem), s));
    return;
  }
  NANOMX_CHECK(d.m <= INT32_MAX && d.n <= INT32_MAX && d.k <= INT32_MAX && batch <= INT32_MAX)
      << p.op() << ": " << batch << " x " << d.m << " x " << d.k << " x " << d.n
      << " exceeds cuBLAS' int range";
  cublasHandle_t h = blas_handle();
  const cu::CublasLibrary& blas = cu::cublas();
  NANOMX_CHECK(blas.set_stream(h, s) == CUBLAS_STATUS_SUCCESS) << "cuBLAS: cannot set the stream";
  const int lda = static_cast<int>(d.ta ? d.m : d.k), ldb = static_cast<int>(d.tb ? d.k : d.n);
  const cublasOperation_t op_b = d.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = d.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int n = static_cast<int>(d.n), m = static_cast<int>(d.m), k = static_cast<int>(d.k);
  const long long sa = d.m * d.k, sb = d.k * d.n, sc = d.m * d.n;
  const int count = static_cast<int>(batch);
  cublasStatus_t status = CUBLAS_STATUS_NOT_SUPPORTED;
  switch (c.elem) {
    case cu::Elem::kFloat32: {
      const float alpha = 1.f, beta = 0.f;
      const auto* A = static_cast<const float*>(a.data);
      const auto* B = static_cast<const float*>(b.data);
      auto* C = static_cast<float*>(c.data);
      status = batch == 1 ? blas.sgemm(h, op_b, op_a, n, m, k, &alpha, B, ldb, A, lda, &beta, C, n)
                          : blas.sgemm_strided_batched(h, op_b, op_a, n, m, k, &alpha, B, ldb, sb,
                                                       A, lda, sa, &beta, C, n, sc, count);
      break;
    }
    case cu::Elem::kFloat64: {
      const double alpha = 1.0, beta = 0.0;
      const auto* A = static_cast<const double*>(a.data);
      const auto* B = static_cast<const double*>(b.data);
      auto* C = static_cast<double*>(c.data);
      status = batch == 1 ? blas.dgemm(h, op_b, op_a, n, m, k, &alpha, B, ldb, A, lda, &beta, C, n)
                          : blas.dgemm_strided_batched(h, op_b, op_a, n, m, k, &alpha, B, ldb, sb,
                                                       A, lda, sa, &beta, C, n, sc, count);
      break;
    }
    case cu::Elem::kFloat16: {
      const float alpha = 1.f, beta = 0.f;
      status = blas.gemm_strided_batched_ex(
          h, op_b, op_a, n, m, k, &alpha, b.data, CUDA_R_16F, ldb, sb, a.data, CUDA_R_16F, lda, sa,
          &beta, c.data, CUDA_R_16F, n, sc, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      break;
    }
    default:  // the integer types: gpu_kernel refuses them before (kSameFloat)
      break;
  }
  NANOMX_CHECK(status == CUBLAS_STATUS_SUCCESS)
      << p.op() << ": the cuBLAS matrix product failed (status " << static_cast<int>(status) << ")";
}

void gemm(const ParsedParams& p, cu::ConstTensor a, cu::ConstTensor b, cu::Tensor c,
          const DotDims& d, cudaStream_t s) {
  gemm_batched(p, a, b, c, d, 1, s);
}

void dot(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
         cudaStream_t s) {
  const DotDims d = dot_dims(p.get<DotParams>(), in[0].shape(), in[1].shape(), nullptr);
  gemm(p, f(in[0]), f(in[1]), fw(out[0]), d, s);
}

void batch_dot(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
               cudaStream_t s) {
  int64_t batch = 0;
  const DotDims d =
      batch_dot_dims(p.get<DotParams>(), in[0].shape(), in[1].shape(), nullptr, &batch);
  gemm_batched(p, f(in[0]), f(in[1]), fw(out[0]), d, batch, s);
}

// dA and dB of C = op(A) op(B), `batch` products at once: MXNet's four cases (as the CPU's
// dot_grads in cpu/backward_ops.cc).
void dot_grads(const ParsedParams& p, cu::ConstTensor dc, cu::ConstTensor a, cu::ConstTensor b,
               cu::Tensor da, cu::Tensor db, const DotDims& d, int64_t batch, cudaStream_t s) {
  const int64_t m = d.m, k = d.k, n = d.n;
  // The products' operands are m*k (A), k*n (B) and m*n (C) apart whatever the transposes, so
  // each gradient product below keeps its operands' strides by its own dims.
  if (!d.ta && !d.tb) {
    gemm_batched(p, dc, b, da, DotDims{m, n, k, false, true}, batch, s);  // dA = dC B^T
    gemm_batched(p, a, dc, db, DotDims{k, m, n, true, false}, batch, s);  // dB = A^T dC
  } else if (d.ta && !d.tb) {
    gemm_batched(p, b, dc, da, DotDims{k, n, m, false, true}, batch, s);   // dA = B dC^T
    gemm_batched(p, a, dc, db, DotDims{k, m, n, false, false}, batch, s);  // dB = A dC
  } else if (!d.ta && d.tb) {
    gemm_batched(p, dc, b, da, DotDims{m, n, k, false, false}, batch, s);  // dA = dC B
    gemm_batched(p, dc, a, db, DotDims{n, m, k, true, false}, batch, s);   // dB = dC^T A
  } else {
    gemm_batched(p, b, dc, da, DotDims{k, n, m, true, true}, batch, s);  // dA = B^T dC^T
    gemm_batched(p, dc, a, db, DotDims{n, m, k, true, true}, batch, s);  // dB = dC^T A^T
  }
}

void dot_backward(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                  cudaStream_t s) {
  const DotDims d = dot_dims(p.get<DotParams>(), in[1].shape(), in[2].shape(), nullptr);
  dot_grads(p, f(in[0]), f(in[1]), f(in[2]), fw(out[0]), fw(out[1]), d, 1, s);
}

void batch_dot_backward(const ParsedParams& p, std::span<const NDArray> in,
                        std::span<const NDArray> out, cudaStream_t s) {
  int64_t batch = 0;
  const DotDims d =
      batch_dot_dims(p.get<DotParams>(), in[1].shape(), in[2].shape(), nullptr, &batch);
  dot_grads(p, f(in[0]), f(in[1]), f(in[2]), fw(out[0]), fw(out[1]), d, batch, s);
}

void fully_connected(const ParsedParams& p, std::span<const NDArray> in,
                     std::span<const NDArray> out, cudaStream_t s) {
  const auto& fc = p.get<FullyConnectedParams>();
  const int64_t n = fc.num_hidden;
  const int64_t k = in[1].shape()[1];
  const int64_t m = k == 0 ? 0 : in[0].size() / k;
  gemm(p, f(in[0]), f(in[1]), fw(out[0]), DotDims{m, k, n, false, true}, s);
  if (!fc.no_bias) check_launch(p, cu::add_bias(fw(out[0]), f(in[2]), m, n, s));
}

// dW = dY^T X, db = column sums of dY, dX = dY W (last: dX may share X's buffer).
void fully_connected_backward(const ParsedParams& p, std::span<const NDArray> in,
                              std::span<const NDArray> out, cudaStream_t s) {
  const auto& fc = p.get<FullyConnectedParams>();
  const NDArray &dy = in[0], &x = in[1], &w = in[2];
  const int64_t n = fc.num_hidden, k = w.shape()[1];
  const int64_t m = n == 0 ? 0 : dy.size() / n;
  gemm(p, f(dy), f(x), fw(out[1]), DotDims{n, m, k, true, false}, s);
  if (!fc.no_bias)
    check_launch(p, cu::reduce(cu::Reducer::kSum, f(dy), fw(out[2]), 1, m, n, 1.0, false, 0, s));
  gemm(p, f(dy), f(w), fw(out[0]), DotDims{m, n, k, false, false}, s);
}

// A binary operator's four names: broadcast_<op>, _<op> (elementwise), _<op>_scalar and, where
// it exists, _r<op>_scalar.
template <cu::BinaryOp Op>
void register_binary_family(const std::function<void(std::string_view, Kernel)>& add,
                            const std::string& name, bool reversed) {
  constexpr Operands kSame = Operands::kSame;  // integer kernels too
  add("broadcast_" + name, gpu_kernel<binary<Op>, kSame>);
  add("_" + name, gpu_kernel<binary<Op>, kSame>);
  add("_" + name + "_scalar", gpu_kernel<scalar<Op, false>, kSame>);
  if (reversed) add("_r" + name + "_scalar", gpu_kernel<scalar<Op, true>, kSame>);
}

}  // namespace

void for_each_cuda_kernel(const std::function<void(std::string_view, Kernel)>& add) {
  using B = cu::BinaryOp;
  using U = cu::UnaryOp;
  // Arithmetic with integer kernels too: every operand of the output's dtype, any dtype.
  constexpr Operands kSame = Operands::kSame;
  for (const char* prefix : {"broadcast_", "elemwise_"}) {
    const std::string p = prefix;
    add(p + "add", gpu_kernel<binary<B::kAdd>, kSame>);
    add(p + "sub", gpu_kernel<binary<B::kSub>, kSame>);
    add(p + "mul", gpu_kernel<binary<B::kMul>, kSame>);
    add(p + "div", gpu_kernel<binary<B::kDiv>, kSame>);
  }
  add("_grad_add", gpu_kernel<binary<B::kAdd>, kSame>);
  add("add_n", gpu_kernel<add_n, kSame>);
  add("_identity_with_attr_like_rhs", gpu_kernel<copy, kSame>);
  add("_plus_scalar", gpu_kernel<scalar<B::kAdd, false>, kSame>);
  add("_minus_scalar", gpu_kernel<scalar<B::kSub, false>, kSame>);
  add("_rminus_scalar", gpu_kernel<scalar<B::kSub, true>, kSame>);
  add("_mul_scalar", gpu_kernel<scalar<B::kMul, false>, kSame>);
  add("_div_scalar", gpu_kernel<scalar<B::kDiv, false>, kSame>);
  add("_rdiv_scalar", gpu_kernel<scalar<B::kDiv, true>, kSame>);
  register_binary_family<B::kPower>(add, "power", true);
  register_binary_family<B::kMaximum>(add, "maximum", false);
  register_binary_family<B::kMinimum>(add, "minimum", false);
  register_binary_family<B::kMod>(add, "mod", true);
  register_binary_family<B::kHypot>(add, "hypot", false);
  register_binary_family<B::kEqual>(add, "equal", false);
  register_binary_family<B::kNotEqual>(add, "not_equal", false);
  register_binary_family<B::kGreater>(add, "greater", false);
  register_binary_family<B::kGreaterEqual>(add, "greater_equal", false);
  register_binary_family<B::kLesser>(add, "lesser", false);
  register_binary_family<B::kLesserEqual>(add, "lesser_equal", false);
  register_binary_family<B::kLogicalAnd>(add, "logical_and", false);
  register_binary_family<B::kLogicalOr>(add, "logical_or", false);
  register_binary_family<B::kLogicalXor>(add, "logical_xor", false);
  const std::pair<const char*, Kernel> unaries[] = {
      {"negative", gpu_kernel<unary<U::kNegative>, kSame>},
      {"square", gpu_kernel<unary<U::kSquare>, kSame>},
      {"sqrt", gpu_kernel<unary<U::kSqrt>, kSame>},
      {"exp", gpu_kernel<unary<U::kExp>, kSame>},
      {"log", gpu_kernel<unary<U::kLog>, kSame>},
      {"relu", gpu_kernel<unary<U::kRelu>, kSame>},
      {"sigmoid", gpu_kernel<unary<U::kSigmoid>, kSame>},
      {"tanh", gpu_kernel<unary<U::kTanh>, kSame>},
      {"expm1", gpu_kernel<unary<U::kExpm1>, kSame>},
      {"log1p", gpu_kernel<unary<U::kLog1p>, kSame>},
      {"log2", gpu_kernel<unary<U::kLog2>, kSame>},
      {"log10", gpu_kernel<unary<U::kLog10>, kSame>},
      {"abs", gpu_kernel<unary<U::kAbs>, kSame>},
      {"sign", gpu_kernel<unary<U::kSign>, kSame>},
      {"rsqrt", gpu_kernel<unary<U::kRsqrt>, kSame>},
      {"cbrt", gpu_kernel<unary<U::kCbrt>, kSame>},
      {"rcbrt", gpu_kernel<unary<U::kRcbrt>, kSame>},
      {"reciprocal", gpu_kernel<unary<U::kReciprocal>, kSame>},
      {"sin", gpu_kernel<unary<U::kSin>, kSame>},
      {"cos", gpu_kernel<unary<U::kCos>, kSame>},
      {"tan", gpu_kernel<unary<U::kTan>, kSame>},
      {"arcsin", gpu_kernel<unary<U::kArcsin>, kSame>},
      {"arccos", gpu_kernel<unary<U::kArccos>, kSame>},
      {"arctan", gpu_kernel<unary<U::kArctan>, kSame>},
      {"sinh", gpu_kernel<unary<U::kSinh>, kSame>},
      {"cosh", gpu_kernel<unary<U::kCosh>, kSame>},
      {"arcsinh", gpu_kernel<unary<U::kArcsinh>, kSame>},
      {"arccosh", gpu_kernel<unary<U::kArccosh>, kSame>},
      {"arctanh", gpu_kernel<unary<U::kArctanh>, kSame>},
      {"degrees", gpu_kernel<unary<U::kDegrees>, kSame>},
      {"radians", gpu_kernel<unary<U::kRadians>, kSame>},
      {"floor", gpu_kernel<unary<U::kFloor>, kSame>},
      {"ceil", gpu_kernel<unary<U::kCeil>, kSame>},
      {"round", gpu_kernel<unary<U::kRound>, kSame>},
      {"rint", gpu_kernel<unary<U::kRint>, kSame>},
      {"fix", gpu_kernel<unary<U::kTrunc>, kSame>},
      {"trunc", gpu_kernel<unary<U::kTrunc>, kSame>},
      {"erf", gpu_kernel<unary<U::kErf>, kSame>},
      {"gamma", gpu_kernel<unary<U::kGamma>, kSame>},
      {"gammaln", gpu_kernel<unary<U::kGammaln>, kSame>},
      {"logical_not", gpu_kernel<unary<U::kLogicalNot>, kSame>},
  };
  for (const auto& [name, kernel] : unaries) add(name, kernel);
  add("Activation", gpu_kernel<activation>);
  add("_backward_Activation", gpu_kernel<activation_backward>);
  add("_random_uniform", gpu_kernel<random_sample<true>>);
  add("_random_normal", gpu_kernel<random_sample<false>>);
  add("_zeros", gpu_kernel<fill, kSame>);
  add("_ones", gpu_kernel<fill, kSame>);
  add("_full", gpu_kernel<fill, kSame>);
  add("_zeros_without_dtype", gpu_kernel<fill, kSame>);
  add("zeros_like", gpu_kernel<fill_like<0>, kSame>);
  add("ones_like", gpu_kernel<fill_like<1>, kSame>);
  add("_copyto", gpu_kernel<copy_to, Operands::kCopy>);
  add("Cast", gpu_kernel<cast, Operands::kAnyType>);
  add("_copy", gpu_kernel<copy, kSame>);
  // Layout operators move elements of any dtype, every array on the GPU.
  constexpr Operands kAnyType = Operands::kAnyType;
  add("slice", gpu_kernel<slice, kAnyType>);
  add("slice_axis", gpu_kernel<slice_axis, kAnyType>);
  add("_slice_assign", gpu_kernel<slice_assign, kAnyType>);
  add("slice_like", gpu_kernel<slice_like, kAnyType>);
  add("broadcast_to", gpu_kernel<broadcast_to, kAnyType>);
  add("transpose", gpu_kernel<transpose, kAnyType>);
  add("reverse", gpu_kernel<reverse, kAnyType>);
  add("SliceChannel", gpu_kernel<split, kAnyType>);
  add("Concat", gpu_kernel<concat, kAnyType>);
  add("stack", gpu_kernel<stack, kAnyType>);
  add("SwapAxis", gpu_kernel<swapaxis, kAnyType>);
  add("tile", gpu_kernel<tile, kAnyType>);
  add("repeat", gpu_kernel<repeat, kAnyType>);
  add("clip", gpu_kernel<clip, kSame>);
  add("_backward_clip", gpu_kernel<clip_backward>);
  add("_arange", gpu_kernel<arange, kSame>);
  add("take", gpu_kernel<take, kAnyType>);
  add("pick", gpu_kernel<pick, kAnyType>);
  add("one_hot", gpu_kernel<one_hot, kAnyType>);
  add("where", gpu_kernel<where, kAnyType>);
  add("_linspace", gpu_kernel<linspace, kSame>);
  add("_eye", gpu_kernel<eye, kSame>);
  add("_slice_assign_scalar", gpu_kernel<slice_assign_scalar, kSame>);
  add("batch_take", gpu_kernel<batch_take, kAnyType>);
  // Operators whose kernel is a copy (a new shape over the same elements, or the identity).
  for (const char* name : {"Reshape", "Flatten", "expand_dims", "squeeze", "_backward_copy",
                           "_backward_reshape", "LinearRegressionOutput"}) {
    add(name, gpu_kernel<copy, kSame>);
  }
  add("_backward_cast", gpu_kernel<cast, Operands::kAnyType>);
  add("_backward_linear_reg_out", gpu_kernel<linear_reg_backward>);
  using R = cu::Reducer;
  add("sum", gpu_kernel<reduce<R::kSum>, kSame>);
  add("prod", gpu_kernel<reduce<R::kProd>, kSame>);
  add("max", gpu_kernel<reduce<R::kMax>, kSame>);
  add("min", gpu_kernel<reduce<R::kMin>, kSame>);
  add("nansum", gpu_kernel<reduce<R::kNanSum>, kSame>);
  add("nanprod", gpu_kernel<reduce<R::kNanProd>, kSame>);
  add("norm", gpu_kernel<norm, kAnyType>);
  add("argmax", gpu_kernel<arg_reduce<true>, kSame>);
  add("argmin", gpu_kernel<arg_reduce<false>, kSame>);
  add("argmax_channel", gpu_kernel<arg_reduce<true>, kSame>);
  add("_backward_sum", gpu_kernel<reduce_backward<false>>);
  add("_backward_mean", gpu_kernel<reduce_backward<true>>);
  add("_broadcast_backward", gpu_kernel<broadcast_backward>);
  add("_backward_softmax", gpu_kernel<softmax_backward<0>>);
  using UG = cu::UnaryGradOp;
  const std::pair<const char*, Kernel> unary_gradients[] = {
      {"_backward_relu", gpu_kernel<unary_backward<UG::kRelu>>},
      {"_backward_sigmoid", gpu_kernel<unary_backward<UG::kSigmoid>>},
      {"_backward_tanh", gpu_kernel<unary_backward<UG::kTanh>>},
      {"_backward_sqrt", gpu_kernel<unary_backward<UG::kSqrt>>},
      {"_backward_rsqrt", gpu_kernel<unary_backward<UG::kRsqrt>>},
      {"_backward_cbrt", gpu_kernel<unary_backward<UG::kCbrt>>},
      {"_backward_square", gpu_kernel<unary_backward<UG::kSquare>>},
      {"_backward_expm1", gpu_kernel<unary_backward<UG::kExpm1>>},
      {"_backward_log", gpu_kernel<unary_backward<UG::kLog>>},
      {"_backward_log1p", gpu_kernel<unary_backward<UG::kLog1p>>},
      {"_backward_log2", gpu_kernel<unary_backward<UG::kLog2>>},
      {"_backward_log10", gpu_kernel<unary_backward<UG::kLog10>>},
      {"_backward_abs", gpu_kernel<unary_backward<UG::kAbs>>},
      {"_backward_reciprocal", gpu_kernel<unary_backward<UG::kReciprocal>>},
      {"_backward_sin", gpu_kernel<unary_backward<UG::kSin>>},
      {"_backward_cos", gpu_kernel<unary_backward<UG::kCos>>},
      {"_backward_tan", gpu_kernel<unary_backward<UG::kTan>>},
      {"_backward_arcsin", gpu_kernel<unary_backward<UG::kArcsin>>},
      {"_backward_arccos", gpu_kernel<unary_backward<UG::kArccos>>},
      {"_backward_arctan", gpu_kernel<unary_backward<UG::kArctan>>},
      {"_backward_sinh", gpu_kernel<unary_backward<UG::kSinh>>},
      {"_backward_cosh", gpu_kernel<unary_backward<UG::kCosh>>},
      {"_backward_arcsinh", gpu_kernel<unary_backward<UG::kArcsinh>>},
      {"_backward_arccosh", gpu_kernel<unary_backward<UG::kArccosh>>},
      {"_backward_arctanh", gpu_kernel<unary_backward<UG::kArctanh>>},
      {"_backward_degrees", gpu_kernel<unary_backward<UG::kDegrees>>},
      {"_backward_radians", gpu_kernel<unary_backward<UG::kRadians>>},
      {"_backward_erf", gpu_kernel<unary_backward<UG::kErf>>},
      {"_backward_rcbrt", gpu_kernel<unary_backward<UG::kRcbrt>>},
      {"_backward_rdiv_scalar", gpu_kernel<unary_backward<UG::kRDivScalar>>},
      {"_backward_power_scalar", gpu_kernel<unary_backward<UG::kPowerScalar>>},
      {"_backward_rpower_scalar", gpu_kernel<unary_backward<UG::kRPowerScalar>>},
      {"_backward_maximum_scalar", gpu_kernel<unary_backward<UG::kMaximumScalar>>},
      {"_backward_minimum_scalar", gpu_kernel<unary_backward<UG::kMinimumScalar>>},
      {"_backward_hypot_scalar", gpu_kernel<unary_backward<UG::kHypotScalar>>},
      {"_backward_mod_scalar", gpu_kernel<unary_backward<UG::kModScalar>>},
      {"_backward_rmod_scalar", gpu_kernel<unary_backward<UG::kRModScalar>>},
  };
  for (const auto& [name, kernel] : unary_gradients) add(name, kernel);
  using G = cu::BinaryGradOp;
  add("_backward_sub", gpu_kernel<binary_backward<G::kSub>>);
  add("_backward_mul", gpu_kernel<binary_backward<G::kMul>>);
  add("_backward_div", gpu_kernel<binary_backward<G::kDiv>>);
  add("_backward_power", gpu_kernel<binary_backward<G::kPower>>);
  add("_backward_maximum", gpu_kernel<binary_backward<G::kMaximum>>);
  add("_backward_minimum", gpu_kernel<binary_backward<G::kMinimum>>);
  add("_backward_hypot", gpu_kernel<binary_backward<G::kHypot>>);
  add("_backward_mod", gpu_kernel<binary_backward<G::kMod>>);
  add("_backward_broadcast_add", gpu_kernel<binary_backward<G::kAdd>>);
  add("_backward_broadcast_sub", gpu_kernel<binary_backward<G::kSub>>);
  add("_backward_broadcast_mul", gpu_kernel<binary_backward<G::kMul>>);
  add("_backward_broadcast_div", gpu_kernel<binary_backward<G::kDiv>>);
  add("_backward_broadcast_power", gpu_kernel<binary_backward<G::kPower>>);
  add("_backward_broadcast_maximum", gpu_kernel<binary_backward<G::kMaximum>>);
  add("_backward_broadcast_minimum", gpu_kernel<binary_backward<G::kMinimum>>);
  add("_backward_broadcast_hypot", gpu_kernel<binary_backward<G::kHypot>>);
  add("_backward_broadcast_mod", gpu_kernel<binary_backward<G::kMod>>);
  add("_backward_log_softmax", gpu_kernel<softmax_backward<1>>);
  add("_backward_softmin", gpu_kernel<softmax_backward<2>>);
  add("mean", gpu_kernel<reduce<R::kSum, true>, kSame>);
  add("softmax", gpu_kernel<softmax<false>>);
  add("log_softmax", gpu_kernel<softmax<true>>);
  add("softmin", gpu_kernel<softmax<false, true>>);
  // Ordering, index tuples, padding: any dtype (indices of any numeric dtype).
  add("sort", gpu_kernel<sort, kAnyType>);
  add("argsort", gpu_kernel<sort, kAnyType>);
  add("topk", gpu_kernel<sort, kAnyType>);
  add("_shuffle", gpu_kernel<shuffle, kAnyType>);
  add("gather_nd", gpu_kernel<gather_nd, kAnyType>);
  add("scatter_nd", gpu_kernel<scatter_nd, kAnyType>);
  add("_scatter_set_nd", gpu_kernel<scatter_set_nd, kAnyType>);
  add("fill_element_0index", gpu_kernel<fill_element_0index, kAnyType>);
  add("_onehot_encode", gpu_kernel<onehot_encode, kAnyType>);
  add("Pad", gpu_kernel<pad, kAnyType>);
  add("diag", gpu_kernel<diag, kAnyType>);
  // The samplers: a float (randint: any) output, parameters of any numeric dtype.
  using S = cu::Sampler;
  add("_random_exponential", gpu_kernel<random_draw<S::kExponential>, kAnyType>);
  add("_random_gamma", gpu_kernel<random_draw<S::kGamma>, kAnyType>);
  add("_random_poisson", gpu_kernel<random_draw<S::kPoisson>, kAnyType>);
  add("_random_randint", gpu_kernel<random_draw<S::kRandint>, kAnyType>);
  add("_sample_uniform", gpu_kernel<sample_draw<S::kUniform>, kAnyType>);
  add("_sample_normal", gpu_kernel<sample_draw<S::kNormal>, kAnyType>);
  add("_sample_gamma", gpu_kernel<sample_draw<S::kGamma>, kAnyType>);
  add("_sample_exponential", gpu_kernel<sample_draw<S::kExponential>, kAnyType>);
  add("_sample_poisson", gpu_kernel<sample_draw<S::kPoisson>, kAnyType>);
  add("_sample_multinomial", gpu_kernel<multinomial, kAnyType>);
  add("SoftmaxOutput", gpu_kernel<softmax_output>);
  add("sgd_update", gpu_kernel<sgd<false>>);
  add("sgd_mom_update", gpu_kernel<sgd<true>>);
  add("multi_sgd_update", gpu_kernel<multi_sgd<false>>);
  add("multi_sgd_mom_update", gpu_kernel<multi_sgd<true>>);
  add("adam_update", gpu_kernel<adam>);
  add("mp_sgd_update", gpu_kernel<mp_sgd<false>, Operands::kAnyFloat>);
  add("mp_sgd_mom_update", gpu_kernel<mp_sgd<true>, Operands::kAnyFloat>);
  add("_backward_SoftmaxOutput", gpu_kernel<softmax_output_backward>);
  add("dot", gpu_kernel<dot>);
  add("_backward_dot", gpu_kernel<dot_backward>);
  add("batch_dot", gpu_kernel<batch_dot>);
  add("_backward_batch_dot", gpu_kernel<batch_dot_backward>);
  add("FullyConnected", gpu_kernel<fully_connected>);
  add("_backward_FullyConnected", gpu_kernel<fully_connected_backward>);
}

void register_cuda_kernels() {
  if (num_gpus() == 0) return;  // without a GPU, gpu has no kernels (as a build without CUDA)
  for_each_cuda_kernel([](std::string_view name, Kernel kernel) {
    register_kernel(name, DeviceType::kGPU, std::move(kernel));
  });
}

}  // namespace nanomx::ops

#endif  // NANOMX_HAVE_CUDA
