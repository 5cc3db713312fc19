// The CUDA kernels of the neural-network operators: Activation, softmax / log_softmax /
// softmin, SoftmaxOutput, the regression outputs' gradient.
#include "ops/nn.h"

#include "backends/cuda/kernels/gpu_kernel.h"
#include "ops/op_params.h"

namespace nanomx::ops::cuda_kernels {
namespace {

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

// _backward_softmax / _backward_log_softmax / _backward_softmin: (dy, y) or (dy, x, y).
template <int kKind>
void softmax_backward(const ParsedParams& p, std::span<const NDArray> in,
                      std::span<const NDArray> out, cudaStream_t s) {
  const auto& sp = p.get<SoftmaxParams>();
  const NDArray& y = in.back();
  const Shape& sh = y.shape();
  if (y.size() == 0) return;
  const int axis = normalize_axis(sp.axis, sh.ndim(), p.op().c_str());
  const AxisSplit split = split_at_axis(sh, axis);
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  check_launch(
      p, cu::softmax_grad(kKind, f(in[0]), f(y), fw(out[0]), outer, len, inner, sp.temperature, s));
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
  const AxisSplit split = split_at_axis(sh, axis);
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  const double temperature = kMin ? -sp.temperature : sp.temperature;
  check_launch(p, cu::softmax(f(in[0]), fw(out[0]), outer, len, inner, temperature, kLog, s));
}

// SoftmaxOutput's forward: a softmax over the rows MXNet normalizes.
void softmax_output(const ParsedParams& p, std::span<const NDArray> in,
                    std::span<const NDArray> out, cudaStream_t s) {
  const auto& sp = p.get<SoftmaxOutputParams>();
  const Shape& sh = in[0].shape();
  const int64_t size = in[0].size();
  if (size == 0) return;
  const AxisSplit split = softmax_output_split(sp, sh);
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  check_launch(p, cu::softmax(f(in[0]), fw(out[0]), outer, len, inner, 1.0, false, s));
}

// (output, label) -> (d_data, d_label): the CPU kernel's rules (backends/cpu/kernels/backward.cc),
// labels as class indices of the output's dtype, or probabilities of the output's shape.
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
  // rows x classes, classes `inner` apart (multi_output: axis 1 of (n, k, rest)).
  const AxisSplit split = softmax_output_split(sp, sh);
  g.classes = split.len;
  g.inner = split.inner;
  g.rows = split.outer * split.inner;
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

}  // namespace

void add_nn_kernels(const AddKernel& add) {
  add("Activation", gpu_kernel<activation>);
  add("_backward_Activation", gpu_kernel<activation_backward>);
  add("_backward_linear_reg_out", gpu_kernel<linear_reg_backward>);
  add("_backward_softmax", gpu_kernel<softmax_backward<0>>);
  add("_backward_log_softmax", gpu_kernel<softmax_backward<1>>);
  add("_backward_softmin", gpu_kernel<softmax_backward<2>>);
  add("softmax", gpu_kernel<softmax<false>>);
  add("log_softmax", gpu_kernel<softmax<true>>);
  add("softmin", gpu_kernel<softmax<false, true>>);
  add("SoftmaxOutput", gpu_kernel<softmax_output>);
  add("_backward_SoftmaxOutput", gpu_kernel<softmax_output_backward>);
}

}  // namespace nanomx::ops::cuda_kernels
