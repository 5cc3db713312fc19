// Convolution, Deconvolution and UpSampling: attributes, shape and dtype inference, their
// backward operators and gradient rules, with MXNet 1.9.1's semantics (src/operator/nn/
// convolution.cc, deconvolution.cc, upsampling.cc). CPU kernels:
// backends/cpu/kernels/convolution.cc. docs/mxnet-compat.md lists where nanomx refuses what
// MXNet would run into undefined behaviour.
#include "ops/convolution.h"

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "ops/backward_ops.h"
#include "ops/gradient.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

constexpr int64_t kUnknown = PartialShape::kUnknownDim;

// "(3,3)": the first `nd` entries, as MXNet prints a TShape.
std::string dims_text(const ConvDims& d, int nd) {
  std::ostringstream s;
  s << '(';
  for (int i = 0; i < nd; ++i) s << (i ? "," : "") << d[i];
  s << (nd == 1 ? ",)" : ")");
  return s.str();
}

std::string ints_text(const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << '(';
  for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  s << (v.size() == 1 ? ",)" : ")");
  return s.str();
}

// A per-axis attribute (stride, dilate, pad, adj): absent or () gives `fallback` on every axis
// (MXNet's defaults), otherwise one entry per kernel axis, each at least `min`.
ConvDims axes_attr(const Params& p, const char* key, const ConvolutionParams& c, int64_t fallback,
                   int64_t min) {
  ConvDims out = {fallback, fallback, fallback};
  const auto v = p.get_ints(key);
  if (!v || v->empty()) return out;
  NANOMX_CHECK(static_cast<int>(v->size()) == c.nd)
      << p.op() << ": " << key << " " << ints_text(*v) << " must have as many dimensions as kernel "
      << dims_text(c.kernel, c.nd);
  for (int i = 0; i < c.nd; ++i) {
    NANOMX_CHECK((*v)[static_cast<size_t>(i)] >= min)
        << p.op() << ": " << key << " " << ints_text(*v) << " must be at least " << min
        << " on every axis";
    out[static_cast<size_t>(i)] = (*v)[static_cast<size_t>(i)];
  }
  return out;
}

// The attributes Convolution and Deconvolution share. MXNet's defaults differ in two: no_bias
// (False for Convolution, True for Deconvolution) and workspace (1024 and 512 MB).
void parse_common(const Params& p, ConvolutionParams& c, bool deconv) {
  const std::string& op = p.op();
  const auto kernel = p.get_ints("kernel");
  NANOMX_CHECK(kernel.has_value()) << op << ": required attribute 'kernel' is missing";
  NANOMX_CHECK(!kernel->empty() && kernel->size() <= 3)
      << op << ": kernel " << ints_text(*kernel) << " has " << kernel->size()
      << " dimensions; 1-D, 2-D and 3-D kernels are supported";
  c.nd = static_cast<int>(kernel->size());
  c.kernel = {1, 1, 1};
  for (int i = 0; i < c.nd; ++i) {
    c.kernel[static_cast<size_t>(i)] = (*kernel)[static_cast<size_t>(i)];
    NANOMX_CHECK(c.kernel[static_cast<size_t>(i)] >= 1)
        << op << ": kernel " << ints_text(*kernel) << " must be at least 1 on every axis";
  }
  c.stride = axes_attr(p, "stride", c, 1, 1);
  c.dilate = axes_attr(p, "dilate", c, 1, 1);
  c.pad = axes_attr(p, "pad", c, 0, 0);
  c.num_filter = p.get_int("num_filter");
  NANOMX_CHECK(c.num_filter >= 1) << op << ": num_filter must be at least 1, got " << c.num_filter;
  c.num_group = p.get_int("num_group", 1);
  NANOMX_CHECK(c.num_group >= 1) << op << ": num_group must be at least 1, got " << c.num_group;
  NANOMX_CHECK(c.num_filter % c.num_group == 0)
      << op << ": num_filter " << c.num_filter << " is not divisible by num_group " << c.num_group;
  c.workspace = p.get_int("workspace", deconv ? 512 : 1024);
  NANOMX_CHECK(c.workspace >= 0) << op << ": workspace must not be negative, got " << c.workspace;
  c.no_bias = p.get_bool("no_bias", deconv);
  c.cudnn_off = p.get_bool("cudnn_off", false);
  const std::string tune = p.get_string("cudnn_tune", "None");
  if (tune == "None") {
    c.cudnn_tune = -1;
  } else if (tune == "off") {
    c.cudnn_tune = 0;
  } else if (tune == "limited_workspace") {
    c.cudnn_tune = 1;
  } else if (tune == "fastest") {
    c.cudnn_tune = 2;
  } else {
    NANOMX_THROW() << op << ": cudnn_tune '" << tune
                   << "' is not one of None, off, limited_workspace, fastest";
  }
  // Only the channels-first layouts: MXNet 1.9.1's CPU convolution refuses the others
  // (convolution-inl.h: "Only support NCW, NCHW and NCDHW layout").
  const std::string layout = p.get_string("layout", "None");
  static const char* const kLayouts[] = {"", "NCW", "NCHW", "NCDHW"};
  if (layout != "None") {
    NANOMX_CHECK(layout != "NHWC" && layout != "NDHWC")
        << op << ": layout " << layout
        << " is not supported (MXNet 1.9.1 runs channels-last layouts on GPU only); the CPU "
           "takes NCW, NCHW and NCDHW";
    NANOMX_CHECK(layout == "NCW" || layout == "NCHW" || layout == "NCDHW")
        << op << ": layout '" << layout << "' is not one of NCW, NCHW, NCDHW, NHWC, NDHWC";
    NANOMX_CHECK(layout == kLayouts[c.nd])
        << op << ": layout " << layout << " does not fit the " << c.nd << "-D kernel "
        << dims_text(c.kernel, c.nd) << " (expected " << kLayouts[c.nd] << ")";
  }
}

ConvolutionParams parse_convolution(const Params& p) {
  ConvolutionParams c;
  parse_common(p, c, false);
  return c;
}

DeconvolutionParams parse_deconvolution(const Params& p) {
  DeconvolutionParams c;
  parse_common(p, c, true);
  const std::string& op = p.op();
  c.adj = axes_attr(p, "adj", c, 0, 0);
  const auto target = p.get_ints("target_shape");
  if (target && !target->empty()) {
    bool any = false, all = true;
    for (const int64_t t : *target) {
      NANOMX_CHECK(t >= 0) << op << ": target_shape " << ints_text(*target)
                           << " has a negative size";
      any = any || t > 0;
      all = all && t > 0;
    }
    if (any) {
      // MXNet reads one entry per kernel axis and gives a zero-size axis where an entry is 0.
      NANOMX_CHECK(static_cast<int>(target->size()) == c.nd)
          << op << ": target_shape " << ints_text(*target)
          << " must have as many dimensions as kernel " << dims_text(c.kernel, c.nd);
      NANOMX_CHECK(all) << op << ": target_shape " << ints_text(*target)
                        << " must give every spatial size (or be all zeros: none)";
      c.has_target = true;
      for (int i = 0; i < c.nd; ++i)
        c.target[static_cast<size_t>(i)] = (*target)[static_cast<size_t>(i)];
    }
  }
  if (!c.has_target) {
    for (int i = 0; i < c.nd; ++i) {
      NANOMX_CHECK(c.adj[static_cast<size_t>(i)] < c.stride[static_cast<size_t>(i)])
          << op << ": adj " << dims_text(c.adj, c.nd) << " must be smaller than stride "
          << dims_text(c.stride, c.nd) << " on every axis";
    }
  }
  if (c.nd == 3) {
    NANOMX_CHECK(c.dilate[0] == 1 && c.dilate[1] == 1 && c.dilate[2] == 1)
        << op << ": dilate " << dims_text(c.dilate, 3)
        << " is not supported with a 3-D kernel (MXNet 1.9.1 refuses dilated 3-D deconvolution)";
  }
  return c;
}

UpSamplingParams parse_upsampling(const Params& p) {
  UpSamplingParams u;
  u.scale = p.get_int("scale");
  NANOMX_CHECK(u.scale >= 1) << "UpSampling: scale must be at least 1, got " << u.scale;
  u.num_filter = p.get_int("num_filter", 0);
  NANOMX_CHECK(u.num_filter >= 0) << "UpSampling: num_filter must not be negative, got "
                                  << u.num_filter;
  const std::string type = p.get_string("sample_type");
  if (type == "nearest") {
    u.type = UpSampleType::kNearest;
  } else if (type == "bilinear") {
    u.type = UpSampleType::kBilinear;
  } else {
    NANOMX_THROW() << "UpSampling: sample_type '" << type << "' is not one of nearest, bilinear";
  }
  const std::string mode = p.get_string("multi_input_mode", "concat");
  if (mode == "concat") {
    u.mode = UpSampleMode::kConcat;
  } else if (mode == "sum") {
    u.mode = UpSampleMode::kSum;
  } else {
    NANOMX_THROW() << "UpSampling: multi_input_mode '" << mode << "' is not one of concat, sum";
  }
  // Required in MXNet; nanomx's calls may leave the count to their inputs (the registry checks
  // a given one against them).
  u.num_args = p.get_int("num_args", 0);
  NANOMX_CHECK(!p.has("num_args") || u.num_args >= 1)
      << "UpSampling: num_args must be at least 1, got " << u.num_args;
  u.workspace = p.get_int("workspace", 512);
  NANOMX_CHECK(u.workspace >= 0) << "UpSampling: workspace must not be negative, got "
                                 << u.workspace;
  return u;
}

// ---- shape inference --------------------------------------------------------------------

// The data's rank must be the kernel's plus two, and no dimension may be zero: MXNet 1.9.1
// reads a 0 as an unknown dimension outside numpy shape semantics, so an empty batch never
// runs there either.
void check_data(const std::string& op, const ConvolutionParams& p, const PartialShape& d) {
  static const char* const kNames[] = {"", "(N, C, W)", "(N, C, H, W)", "(N, C, D, H, W)"};
  NANOMX_CHECK(d.ndim() == p.nd + 2)
      << op << ": a " << p.nd << "-D kernel " << dims_text(p.kernel, p.nd) << " needs " << p.nd + 2
      << "-D data " << kNames[p.nd] << ", got " << d;
  for (int i = 0; i < d.ndim(); ++i) {
    NANOMX_CHECK(d[i] != 0) << op << ": data " << d
                            << " has a zero-size dimension (an empty batch or channel axis is not "
                               "supported, as in MXNet 1.9.1)";
  }
  if (d.dim_known(1)) {
    NANOMX_CHECK(d[1] % p.num_group == 0)
        << op << ": the data's " << d[1] << " channels (data " << d
        << ") are not divisible by num_group " << p.num_group;
  }
}

// The eager path runs inference without the registry's count check, so it is made here.
void check_inputs(const std::string& op, const ConvolutionParams& p, size_t count) {
  const size_t want = p.no_bias ? 2 : 3;
  NANOMX_CHECK(count == want) << op << ": expected " << want << " inputs ("
                              << (p.no_bias ? "data, weight" : "data, weight, bias")
                              << ") with no_bias=" << (p.no_bias ? "True" : "False") << ", got "
                              << count;
}

// Fills `slot` with `inferred` or checks that they agree, naming the argument and the data.
void fill(const std::string& op, PartialShape& slot, const PartialShape& inferred, const char* name,
          const PartialShape& data) {
  if (!slot.rank_known()) {
    slot = inferred;
    return;
  }
  PartialShape merged = slot;
  NANOMX_CHECK(merge_shape(merged, inferred)) << op << ": '" << name << "' has shape " << slot
                                              << ", expected " << inferred << " for data " << data;
  slot = merged;
}

void infer_convolution(const ParsedParams& pp, std::span<PartialShape> in,
                       std::span<PartialShape> out) {
  const auto& p = pp.get<ConvolutionParams>();
  const std::string& op = pp.op();
  check_inputs(op, p, in.size());
  PartialShape& d = in[0];
  if (!d.rank_known()) return;
  check_data(op, p, d);
  PartialShape w = PartialShape::of_rank(p.nd + 2);
  w[0] = p.num_filter;
  w[1] = d.dim_known(1) ? d[1] / p.num_group : kUnknown;
  for (int i = 0; i < p.nd; ++i) w[2 + i] = p.kernel[static_cast<size_t>(i)];
  fill(op, in[1], w, "weight", d);
  if (!p.no_bias) fill(op, in[2], Shape{p.num_filter}, "bias", d);
  // MXNet's partial inference backwards from a known output: the batch, and a spatial size
  // wherever the stride is 1 (the only case with one answer).
  if (out[0].rank_known() && out[0].ndim() == d.ndim()) {
    const PartialShape& o = out[0];
    if (!d.dim_known(0) && o.dim_known(0)) d[0] = o[0];
    for (int i = 0; i < p.nd; ++i) {
      const auto a = static_cast<size_t>(i);
      if (d.dim_known(2 + i) || !o.dim_known(2 + i) || p.stride[a] != 1) continue;
      const int64_t size = o[2 + i] + dilated_extent(p, i) - 1 - 2 * p.pad[a];
      if (size >= 1) d[2 + i] = size;
    }
  }
  PartialShape o = PartialShape::of_rank(p.nd + 2);
  o[0] = d[0];
  o[1] = p.num_filter;
  for (int i = 0; i < p.nd; ++i) {
    const auto a = static_cast<size_t>(i);
    if (!d.dim_known(2 + i)) continue;
    const int64_t padded = d[2 + i] + 2 * p.pad[a];
    const int64_t extent = dilated_extent(p, i);
    NANOMX_CHECK(extent <= padded)
        << op << ": the kernel " << dims_text(p.kernel, p.nd) << " (dilate "
        << dims_text(p.dilate, p.nd) << ") spans " << extent << " on spatial axis " << i
        << ", more than the padded input's " << padded << " (data " << d << ", pad "
        << dims_text(p.pad, p.nd) << ")";
    o[2 + i] = (padded - extent) / p.stride[a] + 1;
  }
  out[0] = o;
}

// Deconvolution's pad and adj on one spatial axis for an input of size x (MXNet's InferPad).
void deconv_axis(const DeconvolutionParams& p, int i, int64_t x, int64_t& pad, int64_t& adj) {
  const auto a = static_cast<size_t>(i);
  if (!p.has_target) {
    pad = p.pad[a];
    adj = p.adj[a];
    return;
  }
  const int64_t full = p.stride[a] * (x - 1) + dilated_extent(p, i);
  NANOMX_CHECK(full >= p.target[a]) << "Deconvolution: target_shape " << dims_text(p.target, p.nd)
                                    << " is too big: on spatial axis " << i << " an input of size "
                                    << x << " reaches at most " << full;
  const int64_t extra = full - p.target[a];
  adj = extra % 2;
  pad = (extra + 1) / 2;
  NANOMX_CHECK(adj < p.stride[a]) << "Deconvolution: target_shape " << dims_text(p.target, p.nd)
                                  << " needs adj " << adj << " on spatial axis " << i
                                  << ", which must be smaller than the stride " << p.stride[a];
}

void infer_deconvolution(const ParsedParams& pp, std::span<PartialShape> in,
                         std::span<PartialShape> out) {
  const auto& p = pp.get<DeconvolutionParams>();
  const std::string& op = pp.op();
  check_inputs(op, p, in.size());
  PartialShape& d = in[0];
  if (!d.rank_known()) return;
  check_data(op, p, d);
  // (C, num_filter / num_group, kernel...): the transposed convolution's weight.
  PartialShape w = PartialShape::of_rank(p.nd + 2);
  w[0] = d[1];
  w[1] = p.num_filter / p.num_group;
  for (int i = 0; i < p.nd; ++i) w[2 + i] = p.kernel[static_cast<size_t>(i)];
  fill(op, in[1], w, "weight", d);
  if (!p.no_bias) fill(op, in[2], Shape{p.num_filter}, "bias", d);
  PartialShape o = PartialShape::of_rank(p.nd + 2);
  o[0] = d[0];
  o[1] = p.num_filter;
  for (int i = 0; i < p.nd; ++i) {
    if (!d.dim_known(2 + i)) continue;
    int64_t pad = 0, adj = 0;
    deconv_axis(p, i, d[2 + i], pad, adj);
    const auto a = static_cast<size_t>(i);
    const int64_t size = p.stride[a] * (d[2 + i] - 1) + dilated_extent(p, i) - 2 * pad + adj;
    NANOMX_CHECK(size >= 1) << op << ": the output would have size " << size << " on spatial axis "
                            << i << " (data " << d << ", kernel " << dims_text(p.kernel, p.nd)
                            << ", stride " << dims_text(p.stride, p.nd) << ", pad "
                            << dims_text(p.pad, p.nd) << ", adj " << dims_text(p.adj, p.nd) << ")";
    o[2 + i] = size;
  }
  out[0] = o;
}

std::vector<std::string> upsampling_inputs(const ParsedParams& pp) {
  const auto& p = pp.get<UpSamplingParams>();
  if (p.type == UpSampleType::kBilinear) return {"data", "weight"};
  std::vector<std::string> names;
  for (int64_t i = 0; i < std::max<int64_t>(p.num_args, 1); ++i) {
    names.push_back("arg" + std::to_string(i));
  }
  return names;
}

void check_4d(const PartialShape& s, const char* what, size_t i) {
  NANOMX_CHECK(s.ndim() == 4) << "UpSampling: " << what << " takes 4-D inputs (N, C, H, W); input "
                              << i << " has shape " << s;
  for (int a = 0; a < 4; ++a) {
    NANOMX_CHECK(s[a] != 0) << "UpSampling: input " << i << " " << s
                            << " has a zero-size dimension (not supported, as in MXNet 1.9.1)";
  }
}

void infer_upsampling(const ParsedParams& pp, std::span<PartialShape> in,
                      std::span<PartialShape> out) {
  const auto& p = pp.get<UpSamplingParams>();
  if (p.type == UpSampleType::kBilinear) {
    NANOMX_CHECK(in.size() == 2) << "UpSampling: bilinear takes 2 inputs (data, weight), got "
                                 << in.size();
    const PartialShape& d = in[0];
    if (!d.known()) return;
    check_4d(d, "bilinear", 0);
    NANOMX_CHECK(p.num_filter == d[1])
        << "UpSampling: bilinear needs num_filter equal to the data's channel count " << d[1]
        << " (data " << d << "), got num_filter " << p.num_filter;
    const int64_t k = 2 * p.scale - p.scale % 2;
    fill("UpSampling", in[1], Shape{d[1], 1, k, k}, "weight", d);
    out[0] = Shape{d[0], d[1], d[2] * p.scale, d[3] * p.scale};
    return;
  }
  for (const PartialShape& s : in) {
    if (!s.known()) return;
  }
  const PartialShape& first = in[0];
  for (size_t i = 0; i < in.size(); ++i) check_4d(in[i], "nearest", i);
  // Every input is scaled to the first's scaled size, by its own whole factor.
  const int64_t oh = first[2] * p.scale, ow = first[3] * p.scale;
  int64_t channels = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const PartialShape& s = in[i];
    NANOMX_CHECK(s[0] == first[0]) << "UpSampling: input " << i << " " << s
                                   << " has another batch size than input 0 " << first;
    NANOMX_CHECK(oh % s[2] == 0 && ow % s[3] == 0 && oh / s[2] == ow / s[3])
        << "UpSampling: input " << i << " " << s << " cannot be scaled to the output size (" << oh
        << ", " << ow << ") by one whole factor";
    if (p.mode == UpSampleMode::kSum) {
      NANOMX_CHECK(channels == 0 || channels == s[1])
          << "UpSampling: with multi_input_mode=sum every input needs the same channel count; "
          << "input " << i << " " << s << " has " << s[1] << ", input 0 " << first[1];
      channels = s[1];
    } else {
      channels += s[1];
    }
  }
  out[0] = Shape{first[0], channels, oh, ow};
}

// Every input and the output of one floating-point dtype (MXNet's UNIFORM_TYPE_CHECK, and its
// CPU kernels' real types), the message naming the arguments.
InferTypeFn uniform_float(std::function<std::vector<std::string>(const ParsedParams&)> names) {
  return [names](const ParsedParams& p, std::span<PartialDType> in, std::span<PartialDType> out) {
    const std::vector<std::string> n = names(p);
    auto name = [&](size_t i) { return i < n.size() ? n[i] : "input " + std::to_string(i); };
    PartialDType t;
    size_t from = 0;
    for (size_t i = 0; i < in.size() && !t; ++i) {
      t = in[i];
      from = i;
    }
    if (!t) t = out[0];
    if (!t) return;
    NANOMX_CHECK(*t == DType::kFloat32 || *t == DType::kFloat64 || *t == DType::kFloat16)
        << p.op() << ": dtype " << dtype_name(*t)
        << " is not supported (float16, float32, float64)";
    for (size_t i = 0; i < in.size(); ++i) {
      NANOMX_CHECK(!in[i] || *in[i] == *t)
          << p.op() << ": '" << name(i) << "' has dtype " << dtype_name(*in[i]) << " but '"
          << name(from) << "' has " << dtype_name(*t) << "; they must agree";
      in[i] = t;
    }
    out[0] = t;
  };
}

std::vector<std::string> conv_inputs(bool no_bias) {
  if (no_bias) return {"data", "weight"};
  return {"data", "weight", "bias"};
}

template <typename P>
std::vector<std::string> conv_input_names(const ParsedParams& p) {
  return conv_inputs(p.get<P>().no_bias);
}

const std::vector<std::string>& conv_keys() {
  static const std::vector<std::string> k = {"kernel",     "stride",    "dilate",    "pad",
                                             "num_filter", "num_group", "workspace", "no_bias",
                                             "cudnn_tune", "cudnn_off", "layout"};
  return k;
}

// _backward_Convolution / _backward_Deconvolution: (dy, data, weight) -> (ddata, dweight[,
// dbias]), every shape from the forward operator's inference.
template <typename P>
Op conv_backward(const Op& fwd, const std::string& name) {
  return with_attrs_of(
      fwd, {.name = name,
            .inputs = {"out_grad", "data", "weight"},
            .infer_shape =
                [&fwd, name](const ParsedParams& pp, std::span<PartialShape> in,
                             std::span<PartialShape> out) {
                  const auto& p = pp.get<P>();
                  std::vector<PartialShape> fwd_in = {in[1], in[2]};
                  if (!p.no_bias) fwd_in.emplace_back(Shape{p.num_filter});
                  check_out_grad(fwd, pp, fwd_in, in[0], name);
                  // The forward inference checks the weight against the data and fills it in.
                  std::vector<PartialShape> fwd_out(1);
                  fwd.infer_shape(pp, fwd_in, fwd_out);
                  in[1] = fwd_in[0];
                  in[2] = fwd_in[1];
                  outputs_like(name, {"out_grad", "data", "weight"}, in, out, {1, 2});
                  if (!p.no_bias) out[2] = Shape{p.num_filter};
                },
            .num_outputs = [](const ParsedParams& p) { return p.get<P>().no_bias ? 2 : 3; },
            .output_names =
                [](const ParsedParams& p) {
                  std::vector<std::string> n = {"data_grad", "weight_grad"};
                  if (!p.get<P>().no_bias) n.emplace_back("bias_grad");
                  return n;
                },
            .backward = {.differentiable = false}});
}

}  // namespace

// ---- shared geometry (ops/convolution.h) ---------------------------------------------------

void deconvolution_pad_adj(const DeconvolutionParams& p, const ConvDims& data_spatial,
                           ConvDims& pad, ConvDims& adj) {
  pad = {0, 0, 0};
  adj = {0, 0, 0};
  for (int i = 0; i < p.nd; ++i) {
    const auto a = static_cast<size_t>(i);
    deconv_axis(p, i, data_spatial[a], pad[a], adj[a]);
  }
}

ConvGeometry convolution_geometry(const ConvolutionParams& p, const Shape& data, const Shape& out) {
  ConvGeometry g;
  g.nd = p.nd;
  g.batch = data[0];
  g.in_channels = data[1];
  g.out_channels = p.num_filter;
  g.groups = p.num_group;
  g.kernel = p.kernel;
  g.stride = p.stride;
  g.dilate = p.dilate;
  g.pad_lo = p.pad;
  g.pad_hi = p.pad;
  g.src = {1, 1, 1};
  g.dst = {1, 1, 1};
  for (int i = 0; i < p.nd; ++i) {
    g.src[static_cast<size_t>(i)] = data[2 + i];
    g.dst[static_cast<size_t>(i)] = out[2 + i];
  }
  return g;
}

// The convolution Deconvolution transposes runs from its output (num_filter channels) to its
// data; the weight (C, num_filter / groups, kernel...) is that convolution's weight as it is.
// Its high padding stays `pad`: the adj extra rows lie past the last window and get zeros,
// as in MXNet's col2im into a padded buffer.
ConvGeometry deconvolution_geometry(const DeconvolutionParams& p, const Shape& data,
                                    const Shape& out) {
  ConvDims spatial = {1, 1, 1};
  for (int i = 0; i < p.nd; ++i) spatial[static_cast<size_t>(i)] = data[2 + i];
  ConvDims pad, adj;
  deconvolution_pad_adj(p, spatial, pad, adj);
  ConvGeometry g;
  g.nd = p.nd;
  g.batch = data[0];
  g.in_channels = out[1];
  g.out_channels = data[1];
  g.groups = p.num_group;
  g.kernel = p.kernel;
  g.stride = p.stride;
  g.dilate = p.dilate;
  g.pad_lo = pad;
  g.pad_hi = pad;
  g.src = {1, 1, 1};
  g.dst = {1, 1, 1};
  for (int i = 0; i < p.nd; ++i) {
    g.src[static_cast<size_t>(i)] = out[2 + i];
    g.dst[static_cast<size_t>(i)] = data[2 + i];
  }
  return g;
}

DeconvolutionParams upsampling_deconvolution(const UpSamplingParams& p) {
  DeconvolutionParams d;
  d.nd = 2;
  const int64_t k = 2 * p.scale - p.scale % 2;
  const int64_t pad = p.scale / 2;  // ceil((scale - 1) / 2)
  d.kernel = {k, k, 1};
  d.stride = {p.scale, p.scale, 1};
  d.dilate = {1, 1, 1};
  d.pad = {pad, pad, 0};
  d.num_filter = p.num_filter;
  d.num_group = p.num_filter;
  d.no_bias = true;
  d.workspace = p.workspace;
  return d;
}

void register_convolution_ops(Registry& r) {
  r.add({.name = "Convolution",
         .inputs = {"data", "weight", "bias"},
         .keys = conv_keys(),
         .parse = parser(parse_convolution),
         .infer_shape = infer_convolution,
         .infer_type = uniform_float(conv_input_names<ConvolutionParams>),
         .input_names = conv_input_names<ConvolutionParams>,
         .backward = {.inputs = {0, 1}}});
  std::vector<std::string> deconv_keys = conv_keys();
  deconv_keys.insert(deconv_keys.end(), {"adj", "target_shape"});
  r.add({.name = "Deconvolution",
         .inputs = {"data", "weight", "bias"},
         .keys = deconv_keys,
         .parse = parser(parse_deconvolution),
         .infer_shape = infer_deconvolution,
         .infer_type = uniform_float(conv_input_names<DeconvolutionParams>),
         .input_names = conv_input_names<DeconvolutionParams>,
         .backward = {.inputs = {0, 1}}});
  // Variadic as in MXNet (key_var_num_args): nearest takes any number of inputs, bilinear
  // (data, weight).
  r.add(
       {.name = "UpSampling",
        .inputs = {"data"},
        .keys = {"scale", "num_filter", "sample_type", "multi_input_mode", "num_args", "workspace"},
        .num_inputs_key = "num_args",
        .parse = parser(parse_upsampling),
        .infer_shape = infer_upsampling,
        .infer_type = uniform_float(upsampling_inputs),
        .input_names = upsampling_inputs,
        // Bilinear reads (data, weight); nearest with several inputs reads each one, for its
        // shape alone (the list is static: its first two).
        .backward = {.inputs = {0, 1}}})
      // A weight variable starts as a bilinear kernel (MXNet's FSetInputVarAttrOnCompose).
      .input_init = {{1, R"(["bilinear", {}])"}};

  const Op& conv = fwd_op("Convolution");
  add_float(r, conv_backward<ConvolutionParams>(conv, "_backward_Convolution"));
  const Op& deconv = fwd_op("Deconvolution");
  add_float(r, conv_backward<DeconvolutionParams>(deconv, "_backward_Deconvolution"));

  // Bilinear: (dy, data, weight) -> (ddata, dweight). Nearest: (dy) -> ddata for one input,
  // (dy, arg0, ..., argN-1) -> N gradients for several (the inputs give their shapes, which a
  // concatenated or summed dy does not). The count is its own (the forward's num_args, which
  // the rule always states, counts the forward's inputs), hence a variadic key never given.
  const Op& up = fwd_op("UpSampling");
  add_float(
      r, with_attrs_of(
             up,
             {.name = "_backward_UpSampling",
              .inputs = {"args"},
              .num_inputs_key = "__num_inputs__",
              .infer_shape =
                  [&up](const ParsedParams& pp, std::span<PartialShape> in,
                        std::span<PartialShape> out) {
                    const auto& p = pp.get<UpSamplingParams>();
                    const std::string name = "_backward_UpSampling";
                    if (p.type == UpSampleType::kBilinear) {
                      NANOMX_CHECK(in.size() == 3)
                          << name << ": bilinear takes (out_grad, data, weight), got " << in.size()
                          << " input(s)";
                      std::vector<PartialShape> fwd_in = {in[1], in[2]};
                      check_out_grad(up, pp, fwd_in, in[0], name);
                      outputs_like(name, {"out_grad", "data", "weight"}, in, out, {1, 2});
                      return;
                    }
                    const auto n = static_cast<size_t>(std::max<int64_t>(p.num_args, 1));
                    if (in.size() == 1) {
                      NANOMX_CHECK(n == 1) << name << ": " << n
                                           << " inputs' gradients need the inputs after out_grad";
                      const PartialShape& dy = in[0];
                      if (!dy.known()) return;
                      NANOMX_CHECK(dy.ndim() == 4 && dy[2] % p.scale == 0 && dy[3] % p.scale == 0)
                          << name << ": out_grad " << dy << " is not a 4-D output of scale "
                          << p.scale;
                      out[0] = Shape{dy[0], dy[1], dy[2] / p.scale, dy[3] / p.scale};
                      return;
                    }
                    NANOMX_CHECK(in.size() == n + 1) << name << ": expected out_grad and " << n
                                                     << " inputs, got " << in.size() << " input(s)";
                    std::vector<PartialShape> fwd_in(in.begin() + 1, in.end());
                    check_out_grad(up, pp, fwd_in, in[0], name);
                    std::vector<std::string> names = {"out_grad"};
                    std::vector<int> like;
                    for (size_t i = 0; i < n; ++i) {
                      names.push_back("arg" + std::to_string(i));
                      like.push_back(static_cast<int>(i + 1));
                    }
                    outputs_like(name, names, in, out, like);
                  },
              .num_outputs =
                  [](const ParsedParams& pp) {
                    const auto& p = pp.get<UpSamplingParams>();
                    if (p.type == UpSampleType::kBilinear) return 2;
                    return static_cast<int>(std::max<int64_t>(p.num_args, 1));
                  },
              .backward = {.differentiable = false}}));
}

void register_convolution_rules() {
  // MXNet's ConvolutionGrad / DeconvolutionGrad read (dy, data, weight); the bias only lends
  // its shape, which the attributes give.
  for (const char* name : {"Convolution", "Deconvolution"}) {
    const std::string backward = std::string("_backward_") + name;
    register_gradient(name, [backward](GradientBuilder& b) {
      return b.add(backward, b.attrs(), {b.out_grad(0), b.input(0), b.input(1)});
    });
  }
  register_gradient("UpSampling", [](GradientBuilder& b) {
    const auto& p = b.params().get<UpSamplingParams>();
    // The forward call's attributes with its input count stated (an eager call may leave it
    // to the inputs): the backward's output count.
    Attrs attrs;
    for (const auto& kv : b.attrs()) {
      if (kv.first != "num_args") attrs.push_back(kv);
    }
    attrs.emplace_back("num_args", std::to_string(b.num_inputs()));
    std::vector<GradValue> in = {b.out_grad(0)};
    if (p.type == UpSampleType::kBilinear || b.num_inputs() > 1) {
      for (int i = 0; i < b.num_inputs(); ++i) in.push_back(b.input(i));
    }
    return b.add("_backward_UpSampling", attrs, std::move(in));
  });
}

}  // namespace nanomx::ops
