// CPU kernels of Convolution, Deconvolution and UpSampling and their backward operators
// (definitions in ops/convolution.cc). Each call is one ConvGeometry and up to three
// directions of it: forward, data gradient and weight gradient. Deconvolution (and bilinear
// UpSampling, a Deconvolution) is the transposed convolution, so its forward is the data
// gradient's direction and its data gradient the forward's. float32 runs through oneDNN's
// convolution primitives; float64 and float16 through im2col and cpu::gemm, accumulating in
// double. Nearest UpSampling is a copy and its gradient a sum over each block.
#include "ops/convolution.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/onednn/onednn.h"
#include "ops/fused_convolution.h"

namespace nanomx::ops::cpu {
namespace {

// Unused axes hold 1, so the products and the three-deep loops below serve 1-D to 3-D alike.
int64_t product(const ConvDims& d) { return d[0] * d[1] * d[2]; }

// ---- float32 through oneDNN ---------------------------------------------------------------

using onednn::dims;

dims spatial(const ConvDims& d, int nd) { return dims(d.begin(), d.begin() + nd); }

dims src_dims(const ConvGeometry& g) {
  dims d = {g.batch, g.in_channels};
  for (int i = 0; i < g.nd; ++i) d.push_back(g.src[static_cast<size_t>(i)]);
  return d;
}

dims dst_dims(const ConvGeometry& g) {
  dims d = {g.batch, g.out_channels};
  for (int i = 0; i < g.nd; ++i) d.push_back(g.dst[static_cast<size_t>(i)]);
  return d;
}

// (oc, ic, k...) or, grouped, (g, oc / g, ic / g, k...): the same row-major memory as MXNet's
// (oc, ic / g, k...) weight.
dims weight_dims(const ConvGeometry& g) {
  dims d;
  if (g.groups == 1) {
    d = {g.out_channels, g.in_channels};
  } else {
    d = {g.groups, g.out_channels / g.groups, g.in_channels / g.groups};
  }
  for (int i = 0; i < g.nd; ++i) d.push_back(g.kernel[static_cast<size_t>(i)]);
  return d;
}

// oneDNN counts the dilation as the gap between taps (0: none); MXNet as the tap spacing.
dims dilation(const ConvGeometry& g) {
  dims d;
  for (int i = 0; i < g.nd; ++i) d.push_back(g.dilate[static_cast<size_t>(i)] - 1);
  return d;
}

std::string conv_key(std::string_view direction, const ConvGeometry& g, bool bias) {
  return onednn::key_of(direction,
                        {src_dims(g), weight_dims(g), dst_dims(g), spatial(g.stride, g.nd),
                         dilation(g), spatial(g.pad_lo, g.nd), spatial(g.pad_hi, g.nd)},
                        {bias ? 1 : 0}, DType::kFloat32);
}

// Layouts left to the primitive: its fast implementations work on blocked layouts, which
// `run` reorders to and from (as MXNet 1.x's MKL-DNN convolution and torch do).
dnnl::memory::desc any(const dims& d) {
  return {d, dnnl::memory::data_type::f32, onednn::tag::any};
}

// Operations oneDNN applies to the convolution's result before writing it: the residual add
// (dst += result) and then ReLU, as _sg_mkldnn_conv folds them.
struct PostOps {
  bool sum = false;
  bool relu = false;
};

dnnl::convolution_forward::primitive_desc forward_pd(const ConvGeometry& g, bool bias,
                                                     PostOps post = {}) {
  using dnnl::algorithm, dnnl::prop_kind;
  const dims stride = spatial(g.stride, g.nd), pad_lo = spatial(g.pad_lo, g.nd),
             pad_hi = spatial(g.pad_hi, g.nd);
  const auto d =
      bias ? dnnl::convolution_forward::desc(
                 prop_kind::forward_training, algorithm::convolution_direct, any(src_dims(g)),
                 any(weight_dims(g)), onednn::plain_desc(dims{g.out_channels}, DType::kFloat32),
                 any(dst_dims(g)), stride, dilation(g), pad_lo, pad_hi)
           : dnnl::convolution_forward::desc(
                 prop_kind::forward_training, algorithm::convolution_direct, any(src_dims(g)),
                 any(weight_dims(g)), any(dst_dims(g)), stride, dilation(g), pad_lo, pad_hi);
  dnnl::primitive_attr attr = onednn::user_scratchpad();
  if (post.sum || post.relu) {
    dnnl::post_ops ops;
    if (post.sum) ops.append_sum(1.0f);
    if (post.relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return {d, attr, onednn::engine()};
}

// One argument of a primitive as the kernel holds it: row-major, of these dims.
struct Arg {
  int id;
  dims shape;
  const void* data;
  bool written;
  bool read_too = false;  // written, and read first (the destination of a sum post-op)
};

// `inward`: from the caller's row-major array into the primitive's layout (else back out): the
// two directions of one argument are two cached reorders.
void reorder(const std::string& key, int id, bool inward, const dnnl::memory& from,
             const dnnl::memory& to) {
  const std::string name = key + (inward ? "|reorder-in" : "|reorder-out") + std::to_string(id);
  const onednn::Primitive& r = onednn::cached(name, "reorder", [&] {
    const dnnl::reorder::primitive_desc pd(onednn::engine(), from.get_desc(), onednn::engine(),
                                           to.get_desc(), onednn::user_scratchpad());
    return onednn::Primitive{dnnl::reorder(pd), pd};
  });
  onednn::execute(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

// Runs `p` (cached under `key`) on row-major arrays: an argument the primitive wants in
// another layout goes through a temporary, reordered into before the call (what it reads) or
// out of after it (what it writes).
void run(const onednn::Primitive& p, const std::string& key, std::span<const Arg> args) {
  std::unordered_map<int, dnnl::memory> exec;
  std::vector<std::pair<dnnl::memory, dnnl::memory>> write_back;
  std::vector<NDArray> temps;
  std::vector<int> write_ids;
  for (const Arg& a : args) {
    const dnnl::memory::desc plain = onednn::plain_desc(a.shape, DType::kFloat32);
    const dnnl::memory::desc chosen = p.pd.query_md(dnnl::query::exec_arg_md, a.id);
    const dnnl::memory user = onednn::wrap(plain, const_cast<void*>(a.data));
    if (chosen == plain) {
      exec.emplace(a.id, user);
      continue;
    }
    temps.emplace_back(Shape{static_cast<int64_t>(chosen.get_size())}, Context::cpu(0),
                       DType::kUint8);
    const dnnl::memory inner = onednn::wrap(chosen, temps.back());
    if (a.written) {
      if (a.read_too) reorder(key, a.id, true, user, inner);
      write_back.emplace_back(inner, user);
      write_ids.push_back(a.id);
    } else {
      reorder(key, a.id, true, user, inner);
    }
    exec.emplace(a.id, inner);
  }
  onednn::execute(p, std::move(exec));
  for (size_t i = 0; i < write_back.size(); ++i) {
    reorder(key, write_ids[i], false, write_back[i].first, write_back[i].second);
  }
}

void forward_f32(const ConvGeometry& g, const float* x, const float* w, const float* b, float* y,
                 PostOps post = {}) {
  const bool bias = b != nullptr;
  const std::string key =
      conv_key(post.sum ? (post.relu ? "Convolution/forward+sum+relu" : "Convolution/forward+sum")
               : post.relu ? "Convolution/forward+relu"
                           : "Convolution/forward",
               g, bias);
  const onednn::Primitive& p = onednn::cached(key, "convolution_forward", [&] {
    const auto pd = forward_pd(g, bias, post);
    return onednn::Primitive{dnnl::convolution_forward(pd), pd};
  });
  std::vector<Arg> args = {{DNNL_ARG_SRC, src_dims(g), x, false},
                           {DNNL_ARG_WEIGHTS, weight_dims(g), w, false},
                           {DNNL_ARG_DST, dst_dims(g), y, true, post.sum}};
  if (bias) args.push_back({DNNL_ARG_BIAS, dims{g.out_channels}, b, false});
  run(p, key, args);
}

void backward_data_f32(const ConvGeometry& g, const float* dy, const float* w, float* dx) {
  const std::string key = conv_key("Convolution/backward_data", g, false);
  const onednn::Primitive& p = onednn::cached(key, "convolution_backward_data", [&] {
    const dnnl::convolution_backward_data::desc d(
        dnnl::algorithm::convolution_direct, any(src_dims(g)), any(weight_dims(g)),
        any(dst_dims(g)), spatial(g.stride, g.nd), dilation(g), spatial(g.pad_lo, g.nd),
        spatial(g.pad_hi, g.nd));
    const dnnl::convolution_backward_data::primitive_desc pd(
        d, onednn::user_scratchpad(), onednn::engine(), forward_pd(g, false));
    return onednn::Primitive{dnnl::convolution_backward_data(pd), pd};
  });
  const Arg args[] = {{DNNL_ARG_DIFF_DST, dst_dims(g), dy, false},
                      {DNNL_ARG_WEIGHTS, weight_dims(g), w, false},
                      {DNNL_ARG_DIFF_SRC, src_dims(g), dx, true}};
  run(p, key, args);
}

// dw (and db, when given) of the convolution from x with output gradient dy.
void backward_weights_f32(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                          float* db) {
  const bool bias = db != nullptr;
  const std::string key = conv_key("Convolution/backward_weights", g, bias);
  const onednn::Primitive& p = onednn::cached(key, "convolution_backward_weights", [&] {
    using W = dnnl::convolution_backward_weights;
    const dims stride = spatial(g.stride, g.nd), pad_lo = spatial(g.pad_lo, g.nd),
               pad_hi = spatial(g.pad_hi, g.nd);
    const auto d =
        bias ? W::desc(dnnl::algorithm::convolution_direct, any(src_dims(g)), any(weight_dims(g)),
                       onednn::plain_desc(dims{g.out_channels}, DType::kFloat32), any(dst_dims(g)),
                       stride, dilation(g), pad_lo, pad_hi)
             : W::desc(dnnl::algorithm::convolution_direct, any(src_dims(g)), any(weight_dims(g)),
                       any(dst_dims(g)), stride, dilation(g), pad_lo, pad_hi);
    const W::primitive_desc pd(d, onednn::user_scratchpad(), onednn::engine(), forward_pd(g, bias));
    return onednn::Primitive{W(pd), pd};
  });
  std::vector<Arg> args = {{DNNL_ARG_SRC, src_dims(g), x, false},
                           {DNNL_ARG_DIFF_DST, dst_dims(g), dy, false},
                           {DNNL_ARG_DIFF_WEIGHTS, weight_dims(g), dw, true}};
  if (bias) args.push_back({DNNL_ARG_DIFF_BIAS, dims{g.out_channels}, db, true});
  run(p, key, args);
}

// ---- float64 and float16: im2col and gemm -------------------------------------------------

// The columns of one group of one sample: row (c, k0, k1, k2) holds, for every output
// position, the input value that kernel tap sees there (0 in the padding).
template <typename T>
void im2col(const ConvGeometry& g, int64_t channels, const T* x, T* col) {
  const ConvDims &k = g.kernel, &s = g.stride, &d = g.dilate, &p = g.pad_lo, &in = g.src,
                 &out = g.dst;
  const int64_t plane = product(in);
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * plane;
    for (int64_t k0 = 0; k0 < k[0]; ++k0) {
      for (int64_t k1 = 0; k1 < k[1]; ++k1) {
        for (int64_t k2 = 0; k2 < k[2]; ++k2) {
          for (int64_t o0 = 0; o0 < out[0]; ++o0) {
            const int64_t i0 = o0 * s[0] - p[0] + k0 * d[0];
            for (int64_t o1 = 0; o1 < out[1]; ++o1) {
              const int64_t i1 = o1 * s[1] - p[1] + k1 * d[1];
              const bool row_inside = i0 >= 0 && i0 < in[0] && i1 >= 0 && i1 < in[1];
              for (int64_t o2 = 0; o2 < out[2]; ++o2) {
                const int64_t i2 = o2 * s[2] - p[2] + k2 * d[2];
                *col++ =
                    row_inside && i2 >= 0 && i2 < in[2] ? xc[(i0 * in[1] + i1) * in[2] + i2] : T{};
              }
            }
          }
        }
      }
    }
  }
}

// The transpose of im2col: every column entry added back onto the input position it came
// from (padding positions dropped).
template <typename T>
void col2im(const ConvGeometry& g, int64_t channels, const T* col, double* acc) {
  const ConvDims &k = g.kernel, &s = g.stride, &d = g.dilate, &p = g.pad_lo, &in = g.src,
                 &out = g.dst;
  const int64_t plane = product(in);
  for (int64_t c = 0; c < channels; ++c) {
    double* ac = acc + c * plane;
    for (int64_t k0 = 0; k0 < k[0]; ++k0) {
      for (int64_t k1 = 0; k1 < k[1]; ++k1) {
        for (int64_t k2 = 0; k2 < k[2]; ++k2) {
          for (int64_t o0 = 0; o0 < out[0]; ++o0) {
            const int64_t i0 = o0 * s[0] - p[0] + k0 * d[0];
            for (int64_t o1 = 0; o1 < out[1]; ++o1) {
              const int64_t i1 = o1 * s[1] - p[1] + k1 * d[1];
              const bool row_inside = i0 >= 0 && i0 < in[0] && i1 >= 0 && i1 < in[1];
              for (int64_t o2 = 0; o2 < out[2]; ++o2, ++col) {
                const int64_t i2 = o2 * s[2] - p[2] + k2 * d[2];
                if (row_inside && i2 >= 0 && i2 < in[2]) {
                  ac[(i0 * in[1] + i1) * in[2] + i2] += to_double(*col);
                }
              }
            }
          }
        }
      }
    }
  }
}

// The per-group matrix sizes: cg input channels, og output channels, K = cg * kernel taps
// rows of columns, P output positions, S input positions.
struct GroupDims {
  int64_t cg, og, K, P, S;
  explicit GroupDims(const ConvGeometry& g)
      : cg(g.in_channels / g.groups),
        og(g.out_channels / g.groups),
        K(cg * product(g.kernel)),
        P(product(g.dst)),
        S(product(g.src)) {}
};

template <typename T>
void forward_ref(DType dt, const ConvGeometry& g, const T* x, const T* w, T* y) {
  const GroupDims m(g);
  std::vector<T> col(static_cast<size_t>(m.K * m.P));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      im2col(g, m.cg, x + (n * g.in_channels + gi * m.cg) * m.S, col.data());
      gemm(dt, w + gi * m.og * m.K, col.data(), y + (n * g.out_channels + gi * m.og) * m.P,
           DotDims{.m = m.og, .k = m.K, .n = m.P});
    }
  }
}

template <typename T>
void backward_data_ref(DType dt, const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  const GroupDims m(g);
  std::vector<T> dcol(static_cast<size_t>(m.K * m.P));
  std::vector<double> acc(static_cast<size_t>(m.cg * m.S));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      // dcol = W_g^T dy_g: (K x og) times (og x P).
      gemm(dt, w + gi * m.og * m.K, dy + (n * g.out_channels + gi * m.og) * m.P, dcol.data(),
           DotDims{.m = m.K, .k = m.og, .n = m.P, .ta = true});
      std::fill(acc.begin(), acc.end(), 0.0);
      col2im(g, m.cg, dcol.data(), acc.data());
      T* out = dx + (n * g.in_channels + gi * m.cg) * m.S;
      for (size_t i = 0; i < acc.size(); ++i) out[i] = from_double<T>(acc[i]);
    }
  }
}

template <typename T>
void backward_weights_ref(DType dt, const ConvGeometry& g, const T* x, const T* dy, T* dw) {
  const GroupDims m(g);
  std::vector<T> col(static_cast<size_t>(m.K * m.P)), part(static_cast<size_t>(m.og * m.K));
  std::vector<double> acc(static_cast<size_t>(g.out_channels * m.K), 0.0);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      im2col(g, m.cg, x + (n * g.in_channels + gi * m.cg) * m.S, col.data());
      // dW_g += dy_g col^T: (og x P) times (P x K).
      gemm(dt, dy + (n * g.out_channels + gi * m.og) * m.P, col.data(), part.data(),
           DotDims{.m = m.og, .k = m.P, .n = m.K, .tb = true});
      double* a = acc.data() + gi * m.og * m.K;
      for (size_t i = 0; i < part.size(); ++i) a[i] += to_double(part[i]);
    }
  }
  for (size_t i = 0; i < acc.size(); ++i) dw[i] = from_double<T>(acc[i]);
}

// db[c] = the sum of dy over the batch and the positions of channel c.
template <typename T>
void channel_sum(const T* dy, int64_t batch, int64_t channels, int64_t plane, T* db) {
  for (int64_t c = 0; c < channels; ++c) {
    double s = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const T* p = dy + (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) s += to_double(p[i]);
    }
    db[c] = from_double<T>(s);
  }
}

template <typename T>
void add_bias(T* y, const T* b, int64_t batch, int64_t channels, int64_t plane) {
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      T* p = y + (n * channels + c) * plane;
      if constexpr (std::is_same_v<T, half>) {
        const float bc = static_cast<float>(b[c]);
        for (int64_t i = 0; i < plane; ++i) p[i] = half(static_cast<float>(p[i]) + bc);
      } else {
        for (int64_t i = 0; i < plane; ++i) p[i] += b[c];
      }
    }
  }
}

// ---- the three directions, per dtype ------------------------------------------------------

template <typename Fn>
void dispatch_conv(DType dt, const std::string& op, Fn&& fn) {
  switch (dt) {
    case DType::kFloat32:
      return fn(float{});
    case DType::kFloat64:
      return fn(double{});
    case DType::kFloat16:
      return fn(half{});
    default:
      NANOMX_THROW() << op << ": the CPU kernel supports float16, float32 and float64, got "
                     << dtype_name(dt);
  }
}

// y = conv(x, w) (+ b when given).
void conv_forward(const std::string& op, const ConvGeometry& g, const NDArray& x, const NDArray& w,
                  const NDArray* b, const NDArray& y) {
  dispatch_conv(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      forward_f32(g, x.data_as<float>(), w.data_as<float>(), b ? b->data_as<float>() : nullptr,
                  y.data_as<float>());
    } else {
      forward_ref<T>(x.dtype(), g, x.data_as<T>(), w.data_as<T>(), y.data_as<T>());
      if (b) add_bias(y.data_as<T>(), b->data_as<T>(), g.batch, g.out_channels, product(g.dst));
    }
  });
}

// dx = the data gradient of conv(., w) for output gradient dy.
void conv_backward_data(const std::string& op, const ConvGeometry& g, const NDArray& dy,
                        const NDArray& w, const NDArray& dx) {
  dispatch_conv(dy.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      backward_data_f32(g, dy.data_as<float>(), w.data_as<float>(), dx.data_as<float>());
    } else {
      backward_data_ref<T>(dy.dtype(), g, dy.data_as<T>(), w.data_as<T>(), dx.data_as<T>());
    }
  });
}

// dw (and db, when given: the sum of dy per output channel) of conv(x, .) for dy.
void conv_backward_weights(const std::string& op, const ConvGeometry& g, const NDArray& x,
                           const NDArray& dy, const NDArray& dw, const NDArray* db) {
  dispatch_conv(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      backward_weights_f32(g, x.data_as<float>(), dy.data_as<float>(), dw.data_as<float>(),
                           db ? db->data_as<float>() : nullptr);
    } else {
      backward_weights_ref<T>(x.dtype(), g, x.data_as<T>(), dy.data_as<T>(), dw.data_as<T>());
      if (db) {
        channel_sum(dy.data_as<T>(), g.batch, g.out_channels, product(g.dst), db->data_as<T>());
      }
    }
  });
}

// The bias of a transposed convolution: per channel of its output, the geometry's source.
void bias_to_source(const std::string& op, const ConvGeometry& g, const NDArray& b,
                    const NDArray& y) {
  dispatch_conv(y.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    add_bias(y.data_as<T>(), b.data_as<T>(), g.batch, g.in_channels, product(g.src));
  });
}

void bias_grad_of_source(const std::string& op, const ConvGeometry& g, const NDArray& dy,
                         const NDArray& db) {
  dispatch_conv(dy.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    channel_sum(dy.data_as<T>(), g.batch, g.in_channels, product(g.src), db.data_as<T>());
  });
}

// ---- the operators ------------------------------------------------------------------------

void convolution(const ParsedParams& pp, std::span<const NDArray> in,
                 std::span<const NDArray> out) {
  const auto& p = pp.get<ConvolutionParams>();
  const ConvGeometry g = convolution_geometry(p, in[0].shape(), out[0].shape());
  conv_forward(pp.op(), g, in[0], in[1], p.no_bias ? nullptr : &in[2], out[0]);
}

// (dy, x, w) -> (dx, dw[, db]).
void convolution_backward(const ParsedParams& pp, std::span<const NDArray> in,
                          std::span<const NDArray> out) {
  const auto& p = pp.get<ConvolutionParams>();
  const ConvGeometry g = convolution_geometry(p, in[1].shape(), in[0].shape());
  conv_backward_weights(pp.op(), g, in[1], in[0], out[1], p.no_bias ? nullptr : &out[2]);
  // The first layer's data gradient is usually wanted by nothing (the data has no gradient).
  if (pp.output_wanted(0)) conv_backward_data(pp.op(), g, in[0], in[2], out[0]);
}

// y = the transposed convolution of x: the data gradient of the convolution from y to x.
void deconvolution(const ParsedParams& pp, std::span<const NDArray> in,
                   std::span<const NDArray> out) {
  const auto& p = pp.get<DeconvolutionParams>();
  const ConvGeometry g = deconvolution_geometry(p, in[0].shape(), out[0].shape());
  conv_backward_data(pp.op(), g, in[0], in[1], out[0]);
  if (!p.no_bias) bias_to_source(pp.op(), g, in[2], out[0]);
}

// (dy, x, w) -> (dx, dw[, db]): dx is that convolution of dy, dw its weight gradient with
// dy as the source and x as the output gradient.
void deconvolution_backward(const ParsedParams& pp, std::span<const NDArray> in,
                            std::span<const NDArray> out) {
  const auto& p = pp.get<DeconvolutionParams>();
  const ConvGeometry g = deconvolution_geometry(p, in[1].shape(), in[0].shape());
  conv_backward_weights(pp.op(), g, in[0], in[1], out[1], nullptr);
  if (!p.no_bias) bias_grad_of_source(pp.op(), g, in[0], out[2]);
  conv_forward(pp.op(), g, in[0], in[2], nullptr, out[0]);
}

// Nearest: input i, scaled by its own factor to the output's size, fills its channels of the
// output (concat) or is added to it (sum).
template <typename T>
void nearest_forward(const UpSamplingParams& p, std::span<const NDArray> in, const NDArray& out) {
  const Shape& os = out.shape();
  const int64_t batch = os[0], channels = os[1], oh = os[2], ow = os[3];
  T* y = out.data_as<T>();
  if (p.mode == UpSampleMode::kSum && in.size() > 1) {
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t r = 0; r < oh; ++r) {
          T* row = y + ((n * channels + c) * oh + r) * ow;
          for (int64_t col = 0; col < ow; ++col) {
            double s = 0;
            for (const NDArray& x : in) {
              const Shape& xs = x.shape();
              const int64_t f = oh / xs[2];
              s +=
                  to_double(x.data_as<T>()[((n * channels + c) * xs[2] + r / f) * xs[3] + col / f]);
            }
            row[col] = from_double<T>(s);
          }
        }
      }
    }
    return;
  }
  int64_t offset = 0;
  for (const NDArray& x : in) {
    const Shape& xs = x.shape();
    const int64_t cx = xs[1], h = xs[2], w = xs[3], f = oh / h;
    const T* src = x.data_as<T>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < cx; ++c) {
        for (int64_t r = 0; r < oh; ++r) {
          const T* from = src + ((n * cx + c) * h + r / f) * w;
          T* row = y + ((n * channels + offset + c) * oh + r) * ow;
          for (int64_t col = 0; col < ow; ++col) row[col] = from[col / f];
        }
      }
    }
    offset += cx;
  }
}

// The gradient of input i: dy over its block of f x f output positions, summed.
template <typename T>
void nearest_backward(const UpSamplingParams& p, const NDArray& dy,
                      std::span<const NDArray> grads) {
  const Shape& ds = dy.shape();
  const int64_t batch = ds[0], channels = ds[1], oh = ds[2], ow = ds[3];
  const T* g = dy.data_as<T>();
  int64_t offset = 0;
  for (const NDArray& dx : grads) {
    const Shape& xs = dx.shape();
    const int64_t cx = xs[1], h = xs[2], w = xs[3], f = oh / h;
    const int64_t first = p.mode == UpSampleMode::kSum ? 0 : offset;
    T* out = dx.data_as<T>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < cx; ++c) {
        const T* plane = g + (n * channels + first + c) * oh * ow;
        for (int64_t r = 0; r < h; ++r) {
          for (int64_t col = 0; col < w; ++col) {
            double s = 0;
            for (int64_t a = 0; a < f; ++a) {
              const T* line = plane + (r * f + a) * ow + col * f;
              for (int64_t b = 0; b < f; ++b) s += to_double(line[b]);
            }
            out[((n * cx + c) * h + r) * w + col] = from_double<T>(s);
          }
        }
      }
    }
    offset += cx;
  }
}

void upsampling(const ParsedParams& pp, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& p = pp.get<UpSamplingParams>();
  if (p.type == UpSampleType::kBilinear) {
    const DeconvolutionParams d = upsampling_deconvolution(p);
    const ConvGeometry g = deconvolution_geometry(d, in[0].shape(), out[0].shape());
    conv_backward_data(pp.op(), g, in[0], in[1], out[0]);
    return;
  }
  dispatch_conv(in[0].dtype(), pp.op(),
                [&](auto tag) { nearest_forward<decltype(tag)>(p, in, out[0]); });
}

// Bilinear: (dy, x, w) -> (dx, dw); nearest: (dy[, inputs]) -> one gradient per input (the
// outputs carry the inputs' shapes).
void upsampling_backward(const ParsedParams& pp, std::span<const NDArray> in,
                         std::span<const NDArray> out) {
  const auto& p = pp.get<UpSamplingParams>();
  if (p.type == UpSampleType::kBilinear) {
    const DeconvolutionParams d = upsampling_deconvolution(p);
    const ConvGeometry g = deconvolution_geometry(d, in[1].shape(), in[0].shape());
    conv_backward_weights(pp.op(), g, in[0], in[1], out[1], nullptr);
    conv_forward(pp.op(), g, in[0], in[2], nullptr, out[0]);
    return;
  }
  dispatch_conv(in[0].dtype(), pp.op(),
                [&](auto tag) { nearest_backward<decltype(tag)>(p, in[0], out); });
}

// _sg_mkldnn_conv (ops/fused_convolution.h): BatchNorm folded into the weights and bias
// (w * s, (b - mean) * s + beta with s = gamma / sqrt(var + eps), per output channel), then one
// oneDNN convolution whose post-ops add the residual and apply ReLU. Other dtypes run the
// convolution, then the same steps in plain loops. Results equal the unfused nodes' within
// float rounding (tests/python/test_fusion.py).
void fused_convolution(const ParsedParams& pp, std::span<const NDArray> in,
                       std::span<const NDArray> out) {
  const auto& p = pp.get<FusedConvParams>();
  const ConvGeometry g = convolution_geometry(p.conv, in[0].shape(), out[0].shape());
  const int bn = fused_bn_input(p);
  const NDArray* bias = p.conv.no_bias ? nullptr : &in[2];
  const NDArray& y = out[0];
  const int64_t channels = g.out_channels, plane = product(g.dst);
  // The per-channel scale and shift of the folded BatchNorm (identity without one).
  std::vector<double> scale(static_cast<size_t>(channels), 1.0),
      shift(static_cast<size_t>(channels), 0.0);
  dispatch_conv(y.dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    if (p.with_bn) {
      const T* gamma = in[bn].data_as<T>();
      const T* beta = in[bn + 1].data_as<T>();
      const T* mean = in[bn + 2].data_as<T>();
      const T* var = in[bn + 3].data_as<T>();
      for (int64_t c = 0; c < channels; ++c) {
        const double s =
            (p.bn_fix_gamma ? 1.0 : to_double(gamma[c])) / std::sqrt(to_double(var[c]) + p.bn_eps);
        scale[static_cast<size_t>(c)] = s;
        shift[static_cast<size_t>(c)] = to_double(beta[c]) - to_double(mean[c]) * s;
      }
    }
    const T* sum = p.with_sum ? in[fused_sum_input(p)].data_as<T>() : nullptr;
    if constexpr (std::is_same_v<T, float>) {
      // Folded weights and bias: w * s and b * s + shift.
      const int64_t per_filter = in[1].size() / channels;
      NDArray w(in[1].shape(), Context::cpu(0), DType::kFloat32);
      NDArray b(Shape{channels}, Context::cpu(0), DType::kFloat32);
      const float* w0 = in[1].data_as<float>();
      float* w1 = w.data_as<float>();
      float* b1 = b.data_as<float>();
      for (int64_t c = 0; c < channels; ++c) {
        const auto s = static_cast<float>(scale[static_cast<size_t>(c)]);
        for (int64_t k = 0; k < per_filter; ++k)
          w1[c * per_filter + k] = w0[c * per_filter + k] * s;
        const double b0 = bias ? static_cast<double>(bias->data_as<float>()[c]) : 0.0;
        b1[c] =
            static_cast<float>(b0 * scale[static_cast<size_t>(c)] + shift[static_cast<size_t>(c)]);
      }
      if (sum != nullptr && sum != y.data_as<float>()) std::memcpy(y.data(), sum, y.nbytes());
      forward_f32(g, in[0].data_as<float>(), w1, b1, y.data_as<float>(),
                  {.sum = p.with_sum, .relu = p.with_relu});
    } else {
      conv_forward(pp.op(), g, in[0], in[1], bias, y);
      T* o = y.data_as<T>();
      for (int64_t n = 0; n < g.batch; ++n) {
        for (int64_t c = 0; c < channels; ++c) {
          const double s = scale[static_cast<size_t>(c)], t = shift[static_cast<size_t>(c)];
          const int64_t base = (n * channels + c) * plane;
          for (int64_t k = base; k < base + plane; ++k) {
            double v = to_double(o[k]) * s + t;
            if (sum != nullptr) v += to_double(sum[k]);
            if (p.with_relu && v < 0) v = 0;
            o[k] = from_double<T>(v);
          }
        }
      }
    }
  });
}

}  // namespace

void register_convolution_kernels() {
  register_kernel(kFusedConvOp, DeviceType::kCPU, fused_convolution);
  register_kernel("Convolution", DeviceType::kCPU, convolution);
  register_kernel("Deconvolution", DeviceType::kCPU, deconvolution);
  register_kernel("UpSampling", DeviceType::kCPU, upsampling);
  register_kernel("_backward_Convolution", DeviceType::kCPU, convolution_backward);
  register_kernel("_backward_Deconvolution", DeviceType::kCPU, deconvolution_backward);
  register_kernel("_backward_UpSampling", DeviceType::kCPU, upsampling_backward);
}

}  // namespace nanomx::ops::cpu
