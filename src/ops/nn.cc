// The neural-network operators: FullyConnected, Activation, SoftmaxOutput (alias Softmax),
// LinearRegressionOutput, softmax / log_softmax / softmin (Flatten is in layout.cc).
// Definitions, shape and dtype inference; CPU kernels in backends/cpu/kernels/nn.cc.
// docs/symbolic.md lists their MXNet semantics.
#include "ops/nn.h"

#include <cstdint>

#include "ops/op_params.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

// Input and output shapes agree (both directions); the label of a loss likewise.
void same_shape(const std::string& op, std::span<PartialShape> in, std::span<PartialShape> out) {
  PartialShape s = out[0];
  for (size_t i = 0; i < in.size(); ++i) {
    NANOMX_CHECK(merge_shape(s, in[i]))
        << op << ": shapes " << s.str() << " and " << in[i].str() << " do not match";
  }
  for (auto& x : in) x = s;
  out[0] = s;
}

PartialShape flatten_shape(const PartialShape& d) {
  if (!d.rank_known()) return PartialShape();
  PartialShape out = PartialShape::of_rank(2);
  if (d.ndim() == 0) {
    out[0] = 1;
    out[1] = 1;
    return out;
  }
  out[0] = d[0];
  int64_t rest = 1;
  for (int i = 1; i < d.ndim(); ++i) {
    if (!d.dim_known(i)) return out;
    NANOMX_CHECK(d[i] == 0 || rest <= INT64_MAX / d[i])
        << "Flatten: the size of " << d.str() << " overflows int64";
    rest *= d[i];
  }
  out[1] = rest;
  return out;
}

std::vector<std::string> fc_inputs(const ParsedParams& p) {
  if (p.get<FullyConnectedParams>().no_bias) return {"data", "weight"};
  return {"data", "weight", "bias"};
}

void fc_infer(const ParsedParams& pp, std::span<PartialShape> in, std::span<PartialShape> out) {
  const auto& p = pp.get<FullyConnectedParams>();
  const PartialShape& d = in[0];
  if (!d.rank_known()) return;
  NANOMX_CHECK(d.ndim() >= 1) << "FullyConnected: 'data' must have at least one dimension, got "
                              << d.str();
  int64_t k = PartialShape::kUnknownDim;
  PartialShape o;
  if (p.flatten) {
    const PartialShape f = flatten_shape(d);
    k = d.ndim() == 1 ? 1 : f[1];
    o = PartialShape::of_rank(2);
    o[0] = d.ndim() == 1 ? 1 : d[0];
    o[1] = p.num_hidden;
  } else {
    k = d[d.ndim() - 1];
    o = d;
    o[d.ndim() - 1] = p.num_hidden;
  }
  PartialShape w = PartialShape::of_rank(2);
  w[0] = p.num_hidden;
  w[1] = k;
  auto fill = [](PartialShape& slot, const PartialShape& inferred, const char* name) {
    if (!slot.rank_known()) {
      slot = inferred;
      return;
    }
    PartialShape merged = slot;
    NANOMX_CHECK(merge_shape(merged, inferred)) << "FullyConnected: '" << name << "' has shape "
                                                << slot.str() << ", expected " << inferred.str();
    slot = merged;
  };
  fill(in[1], w, "weight");
  if (!p.no_bias) fill(in[2], Shape{p.num_hidden}, "bias");
  out[0] = o;
}

void label_type(const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
  if (!in[0] && out[0]) in[0] = out[0];
  if (in[0]) out[0] = in[0];
  if (!in[1]) in[1] = in[0];
}

SoftmaxParams parse_softmax(const Params& p) {
  SoftmaxParams s;
  s.axis = p.get_int("axis", -1);
  if (p.has("temperature") && p.get_string("temperature") != "None") {
    s.temperature = p.get_float("temperature");
    NANOMX_CHECK(s.temperature != 0) << p.op() << ": attribute 'temperature' must not be 0";
  }
  if (p.has("dtype") && p.get_string("dtype") != "None") {
    s.dtype = p.get_dtype("dtype", DType::kFloat32);
    NANOMX_CHECK(is_float_dtype(*s.dtype))
        << p.op() << ": attribute 'dtype' = '" << dtype_name(*s.dtype)
        << "' is not a floating-point type (valid: float16, float32, float64)";
  }
  NANOMX_CHECK(!p.get_bool("use_length", false))
      << p.op() << ": use_length=True is not supported (nanomx's " << p.op()
      << " takes no 'length' input)";
  return s;
}

// The output has the input's shape; the axis is checked as soon as the rank is known (on the
// calling thread, not in the kernel).
void infer_softmax_shape(const ParsedParams& p, std::span<PartialShape> in,
                         std::span<PartialShape> out) {
  PartialShape merged = in[0];
  NANOMX_CHECK(merge_shape(merged, out[0]))
      << p.op() << ": shapes of 'data' " << in[0] << " and the output " << out[0] << " differ";
  if (merged.rank_known()) {
    normalize_axis(p.get<SoftmaxParams>().axis, merged.ndim(), p.op().c_str());
  }
  in[0] = merged;
  out[0] = merged;
}

void infer_softmax_type(const ParsedParams& p, std::span<PartialDType> in,
                        std::span<PartialDType> out) {
  const auto& s = p.get<SoftmaxParams>();
  if (in[0]) {
    NANOMX_CHECK(is_float_dtype(*in[0])) << p.op() << ": 'data' has dtype " << dtype_name(*in[0])
                                         << "; it takes float16, float32 or float64";
  }
  if (s.dtype) {
    out[0] = s.dtype;
  } else if (in[0]) {
    out[0] = in[0];
  } else if (out[0]) {
    in[0] = out[0];
  }
}

}  // namespace

AxisSplit softmax_output_split(const SoftmaxOutputParams& p, const Shape& shape) {
  if (p.multi_output) return split_at_axis(shape, 1);
  const int64_t size = shape.size();
  if (p.preserve_shape) {
    const int64_t len = shape[shape.ndim() - 1];
    return {.outer = size / len, .len = len};
  }
  return {.outer = shape[0], .len = size / shape[0]};
}

void register_nn_ops(Registry& r) {
  r.add({.name = "FullyConnected",
         .inputs = {"data", "weight", "bias"},
         .keys = {"num_hidden", "no_bias", "flatten"},
         .parse = parser(+[](const Params& p) {
           FullyConnectedParams f{p.get_int("num_hidden"), p.get_bool("no_bias", false),
                                  p.get_bool("flatten", true)};
           NANOMX_CHECK(f.num_hidden >= 1)
               << "FullyConnected: num_hidden must be at least 1, got " << f.num_hidden;
           return f;
         }),
         .infer_shape = fc_infer,
         .input_names = fc_inputs,
         .backward = {.inputs = {0, 1}}});
  r.add({.name = "Activation",
         .inputs = {"data"},
         .keys = {"act_type"},
         .parse = parser(+[](const Params& p) {
           const std::string t = p.get_string("act_type");
           ActivationParams a;
           if (t == "relu")
             a.act = ActType::kRelu;
           else if (t == "sigmoid")
             a.act = ActType::kSigmoid;
           else if (t == "tanh")
             a.act = ActType::kTanh;
           else if (t == "softrelu")
             a.act = ActType::kSoftRelu;
           else if (t == "softsign")
             a.act = ActType::kSoftSign;
           else
             NANOMX_THROW() << "Activation: act_type '" << t
                            << "' is not one of relu, sigmoid, tanh, softrelu, softsign";
           return a;
         }),
         .infer_shape = [](const ParsedParams&, std::span<PartialShape> in,
                           std::span<PartialShape> out) { same_shape("Activation", in, out); },
         .inplace = {{0, 0}},
         // relu/sigmoid/tanh differentiate from the output, softrelu/softsign from the input.
         .backward = {.inputs = {0}, .outputs = {0}}});
  r.add({.name = "SoftmaxOutput",
         .inputs = {"data", "label"},
         .keys = {"grad_scale", "ignore_label", "multi_output", "use_ignore", "preserve_shape",
                  "normalization", "out_grad", "smooth_alpha"},
         .parse = parser(+[](const Params& p) {
           SoftmaxOutputParams s{
               p.get_float("grad_scale", 1.0),      p.get_float("ignore_label", -1.0),
               p.get_bool("multi_output", false),   p.get_bool("use_ignore", false),
               p.get_bool("preserve_shape", false), p.get_string("normalization", "null"),
               p.get_bool("out_grad", false),       p.get_float("smooth_alpha", 0.0)};
           NANOMX_CHECK(s.normalization == "null" || s.normalization == "batch" ||
                        s.normalization == "valid")
               << "SoftmaxOutput: normalization '" << s.normalization
               << "' is not one of null, batch, valid";
           return s;
         }),
         .infer_shape =
             [](const ParsedParams& pp, std::span<PartialShape> in, std::span<PartialShape> out) {
               const auto& p = pp.get<SoftmaxOutputParams>();
               if (!in[0].rank_known() && out[0].rank_known()) in[0] = out[0];
               const PartialShape& d = in[0];
               if (!d.rank_known()) return;
               NANOMX_CHECK(d.ndim() >= 1)
                   << "SoftmaxOutput: 'data' must have at least one dimension, got " << d.str();
               out[0] = d;
               // The label: data's shape without the class axis (or data's own shape, for
               // probabilities).
               PartialShape l;
               if (p.multi_output) {
                 NANOMX_CHECK(d.ndim() >= 2) << "SoftmaxOutput(multi_output): 'data' " << d.str()
                                             << " must have at least two dimensions";
                 l = PartialShape::of_rank(d.ndim() - 1);
                 l[0] = d[0];
                 for (int i = 2; i < d.ndim(); ++i) l[i - 1] = d[i];
               } else {
                 l = PartialShape::of_rank(d.ndim() - 1);
                 for (int i = 0; i + 1 < d.ndim(); ++i) l[i] = d[i];
               }
               if (in[1].rank_known() && in[1].ndim() == d.ndim()) {
                 PartialShape m = in[1];
                 NANOMX_CHECK(merge_shape(m, d)) << "SoftmaxOutput: 'label' " << in[1].str()
                                                 << " does not match 'data' " << d.str();
                 in[1] = m;
                 return;
               }
               PartialShape m = in[1].rank_known() ? in[1] : l;
               NANOMX_CHECK(merge_shape(m, l))
                   << "SoftmaxOutput: 'label' " << in[1].str() << " does not match 'data' "
                   << d.str() << " (expected " << l.str() << ")";
               in[1] = m;
             },
         .infer_type = label_type,
         .backward = {.inputs = {1}, .outputs = {0}}},
        {"Softmax"});
  r.add({.name = "LinearRegressionOutput",
         .inputs = {"data", "label"},
         .keys = {"grad_scale"},
         .parse = parser(+[](const Params& p) {
           return RegressionOutputParams{p.get_float("grad_scale", 1.0)};
         }),
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               // MXNet also accepts a 1-D label for (N, 1) data.
               if (in[1].rank_known() && in[1].ndim() == 1 && in[0].rank_known() &&
                   in[0].ndim() == 2 && (!in[0].dim_known(1) || in[0][1] == 1)) {
                 PartialShape d = in[0];
                 d[1] = 1;
                 if (!d.dim_known(0)) d[0] = in[1][0];
                 in[0] = d;
                 out[0] = d;
                 return;
               }
               same_shape("LinearRegressionOutput", in, out);
             },
         .infer_type = label_type,
         .backward = {.inputs = {1}, .outputs = {0}}});
  for (const char* name : {"softmax", "log_softmax", "softmin"}) {
    r.add({.name = name,
           .inputs = {"data"},
           .keys = {"axis", "temperature", "dtype", "use_length"},
           .parse = parser(parse_softmax),
           .infer_shape = infer_softmax_shape,
           .infer_type = infer_softmax_type,
           // The input only for its dtype, when the call gives an output dtype.
           .backward = {.inputs = {0}, .outputs = {0}}});
  }
}

}  // namespace nanomx::ops
