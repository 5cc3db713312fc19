// What the host side of the CUDA kernels shares (the files of this folder, one per operator
// family): the stream a kernel launches on, the checks gpu_kernel makes before launching, scratch
// in stream-ordered memory, the arrays as the launchers (launch.h) take them, and the helpers more
// than one family calls. Internal to the CUDA backend.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "backends/cuda/cuda_call.h"
#include "backends/cuda/kernels/launch.h"
#include "nanomx/ndarray.h"
#include "nanomx/shape.h"
#include "ops/kernel.h"
#include "ops/op_params.h"

namespace nanomx::ops::cuda_kernels {

namespace cu = nanomx::ops::cuda;

using AddKernel = std::function<void(std::string_view, Kernel)>;

// Each family's kernels with their operators' names, to `add` (for_each_cuda_kernel calls them
// all).
void add_elemwise_kernels(const AddKernel& add);
void add_backward_kernels(const AddKernel& add);
void add_reduce_kernels(const AddKernel& add);
void add_layout_kernels(const AddKernel& add);
void add_index_kernels(const AddKernel& add);
void add_init_kernels(const AddKernel& add);
void add_random_kernels(const AddKernel& add);
void add_nn_kernels(const AddKernel& add);
void add_optimizer_kernels(const AddKernel& add);
void add_linalg_kernels(const AddKernel& add);

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

inline void check_launch(const ParsedParams& p, cudaError_t status) {
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

inline cu::Elem elem_of(DType t) {
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
inline cu::ConstTensor f(const NDArray& a) { return {a.data(), elem_of(a.dtype())}; }
inline cu::Tensor fw(const NDArray& a) { return {a.data(), elem_of(a.dtype())}; }

// ---- defined in elemwise.cc ----
// The element strides of `part` over `full` (aligned on the right): 0 on the axes `part`
// broadcasts along.
void broadcast_strides_into(const Shape& part, const Shape& full, int64_t* strides);

// _copyto, _copy, Cast between equal dtypes: a device copy (either side may be host memory:
// unified addressing).
void copy(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s);

// ---- defined in index.cc ----
// An index (or condition) array as the kernels read it: any of the float and integer types
// MXNet uses for indices.
cu::Indices indices_of(const ParsedParams& p, const NDArray& a);

// ---- defined in reduce.cc ----
// The axes of `full` that `part` (aligned on the right) broadcast along: summed for its gradient.
std::vector<bool> broadcast_axes(const Shape& part, const Shape& full);
// `out` = x (of shape `dims`) summed over the axes marked in `reduced`, times `scale`.
void sum_axes(const ParsedParams& p, cu::ConstTensor x, std::vector<int64_t> dims,
              std::vector<bool> reduced, const NDArray& out, double scale, cudaStream_t s);

}  // namespace nanomx::ops::cuda_kernels
