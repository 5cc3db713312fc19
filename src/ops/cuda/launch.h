// The CUDA kernels' launchers (kernels.cu), with a plain interface so that only kernels.cu goes
// through nvcc; the operators' kernels (kernels.cc) call them with the worker's stream.
// float32 only in this phase (docs/cuda.md). Never run on a GPU yet: see docs/cuda.md.
#pragma once

#ifdef NANOMX_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <cstdint>

namespace nanomx::ops::cuda {

enum class BinaryOp { kAdd, kSub, kMul, kDiv };
enum class ScalarOp { kAdd, kSub, kRSub, kMul, kDiv, kRDiv };
enum class UnaryOp {
  kNegative,
  kSquare,
  kSqrt,
  kExp,
  kLog,
  kRelu,
  kSigmoid,
  kTanh,
  kSoftRelu,
  kSoftSign
};
// The activation's derivative from its output y (relu, sigmoid, tanh, softrelu) or, for
// softsign, from its input.
enum class ActGrad { kRelu, kSigmoid, kTanh, kSoftRelu, kSoftSign };

constexpr int kMaxDims = 8;
// An output index space and each operand's element strides over it (0 where broadcast).
struct Broadcast {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t a_strides[kMaxDims] = {};
  int64_t b_strides[kMaxDims] = {};
};

// Launchers return the launch's status (cudaGetLastError), not the kernel's: that surfaces at
// the operation's completion event.
cudaError_t binary(BinaryOp op, const float* a, const float* b, float* out, int64_t n,
                   cudaStream_t stream);
cudaError_t binary_broadcast(BinaryOp op, const float* a, const float* b, float* out, int64_t n,
                             const Broadcast& bc, cudaStream_t stream);
cudaError_t scalar(ScalarOp op, const float* x, float s, float* out, int64_t n,
                   cudaStream_t stream);
cudaError_t unary(UnaryOp op, const float* x, float* out, int64_t n, cudaStream_t stream);
cudaError_t fill(float* out, float value, int64_t n, cudaStream_t stream);
// out[o * inner + i] = scale * sum_j x[(o * len + j) * inner + i]
cudaError_t reduce_sum(const float* x, float* out, int64_t outer, int64_t len, int64_t inner,
                       float scale, cudaStream_t stream);
// Softmax along the middle axis of (outer, len, inner), of x / temperature; log: log_softmax.
cudaError_t softmax(const float* x, float* out, int64_t outer, int64_t len, int64_t inner,
                    float temperature, bool log, cudaStream_t stream);
// out[i * n + j] += bias[j] for i < m
cudaError_t add_bias(float* out, const float* bias, int64_t m, int64_t n, cudaStream_t stream);
// dx = dy * f'(v)
cudaError_t activation_grad(ActGrad act, const float* dy, const float* v, float* dx, int64_t n,
                            cudaStream_t stream);
// sgd_update (mom null) / sgd_mom_update, as the CPU kernels.
cudaError_t sgd(const float* w, const float* g, float* mom, float* out, int64_t n, float lr,
                float wd, float rescale, float clip, float momentum, cudaStream_t stream);

// SoftmaxOutput's backward for index labels (one per row): rows x classes, classes `inner`
// apart (row r starts at (r / inner) * classes * inner + r % inner); grad = (y - target) * scale
// where target is 1 - smooth_alpha at the label and smooth_alpha / (classes - 1) elsewhere,
// rows whose label is `ignore_label` (use_ignore) get 0, out_grad multiplies by y. scale is
// grad_scale divided by: 1 (null), `batch` (batch), the count of non-ignored labels (valid,
// counted on the device; at least 1); multi_output without valid also divides by inner.
struct SoftmaxOutputGrad {
  int64_t rows = 0, classes = 0, inner = 1;
  float grad_scale = 1, ignore_label = -1, smooth_alpha = 0;
  bool use_ignore = false, out_grad = false, divide_by_valid = false, divide_by_inner = false;
  float batch = 1;  // the divisor of normalization "batch" (1 otherwise)
};
cudaError_t softmax_output_grad(const float* y, const float* label, float* grad,
                                const SoftmaxOutputGrad& g, cudaStream_t stream);
// grad[i] = (y[i] - label[i]) * scale: probability labels of the output's shape.
cudaError_t softmax_output_grad_dense(const float* y, const float* label, float* grad, int64_t n,
                                      float scale, cudaStream_t stream);

}  // namespace nanomx::ops::cuda

#endif  // NANOMX_HAVE_CUDA
