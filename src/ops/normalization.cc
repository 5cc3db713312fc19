// The normalization operators: BatchNorm, LayerNorm, InstanceNorm, GroupNorm and
// L2Normalization (MXNet 1.9.1's src/operator/nn/batch_norm.cc, layer_norm.cc, group_norm.cc,
// src/operator/instance_norm-inl.h and l2_normalization-inl.h). Definitions, shape and dtype
// inference here; their backward operators and gradient rules in normalization_backward.cc;
// CPU kernels in backends/cpu/kernels/normalization.cc and batch_norm.cc.
//
// Every bad input (an axis out of range, a parameter of the wrong shape, an integer dtype) is
// refused by inference, on the caller's thread: nothing runs, so BatchNorm's moving statistics
// are never half-updated by a call that fails.
#include "ops/normalization.h"

#include <array>
#include <string>
#include <vector>

#include "ops/op_params.h"
#include "ops/registry.h"

namespace nanomx::ops {

void register_normalization_backward_ops(Registry& r);  // normalization_backward.cc

namespace {

// The data's shape, merged with a caller's output array (the normalised output has the data's
// shape); a disagreement names both.
PartialShape data_shape(const std::string& op, const PartialShape& data, const PartialShape& out) {
  PartialShape d = data;
  NANOMX_CHECK(merge_shape(d, out))
      << op << ": 'data' has shape " << data << " but the output array has shape " << out;
  return d;
}

// `axis` of data `d` (known rank) in [0, ndim); negative counts from the end.
int checked_axis(const std::string& op, int64_t axis, const PartialShape& d) {
  const int ndim = d.ndim();
  NANOMX_CHECK(ndim >= 1) << op << ": 'data' must have at least one dimension, got shape " << d;
  NANOMX_CHECK(axis >= -ndim && axis < ndim)
      << op << ": axis " << axis << " is out of range for 'data' of shape " << d << " (expected "
      << -ndim << " <= axis < " << ndim << ")";
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

void require_rank(const std::string& op, const PartialShape& d, int min_ndim, const char* layout) {
  NANOMX_CHECK(d.ndim() >= min_ndim) << op << ": 'data' must have at least " << min_ndim
                                     << " dimensions " << layout << ", got shape " << d;
}

// Inputs first..first+names.size()-1 hold one value per channel (or group): each known one
// must be (count,) with the other's count; all become the merged (count,), which is returned.
// `source` says where count comes from, for the message.
PartialShape per_channel(const std::string& op, std::span<PartialShape> in, size_t first,
                         std::span<const char* const> names, int64_t count,
                         const std::string& source) {
  PartialShape c = PartialShape::of_rank(1);
  c[0] = count;
  for (size_t k = 0; k < names.size(); ++k) {
    PartialShape merged = c;
    NANOMX_CHECK(merge_shape(merged, in[first + k]))
        << op << ": '" << names[k] << "' has shape " << in[first + k] << ", expected " << c
        << " (one value per " << source << ")";
    c = merged;
  }
  for (size_t k = 0; k < names.size(); ++k) in[first + k] = c;
  return c;
}

std::string axis_source(const char* what, int axis, const PartialShape& d) {
  return std::string(what) + ": axis " + std::to_string(axis) + " of 'data' " + d.str();
}

// ---- BatchNorm ----------------------------------------------------------------------------

BatchNormParams parse_batch_norm(const Params& p) {
  BatchNormParams b;
  b.eps = p.get_float("eps", b.eps);
  b.momentum = static_cast<float>(p.get_float("momentum", b.momentum));
  b.fix_gamma = p.get_bool("fix_gamma", true);
  b.use_global_stats = p.get_bool("use_global_stats", false);
  b.output_mean_var = p.get_bool("output_mean_var", false);
  b.axis = p.get_int("axis", 1);
  // Accepted and checked for MXNet's scripts; they change nothing here (cudnn_off picks a GPU
  // implementation, the calibration range serves the quantized operator).
  p.get_bool("cudnn_off", false);
  for (const char* key : {"min_calib_range", "max_calib_range"}) {
    if (p.has(key) && p.get_string(key) != "None") p.get_float(key);
  }
  return b;
}

void batch_norm_shape(const ParsedParams& pp, std::span<PartialShape> in,
                      std::span<PartialShape> out) {
  const auto& p = pp.get<BatchNormParams>();
  PartialShape d = data_shape("BatchNorm", in[0], out[0]);
  if (!d.rank_known()) return;
  const int axis = checked_axis("BatchNorm", p.axis, d);
  static constexpr const char* kParams[] = {"gamma", "beta", "moving_mean", "moving_var"};
  // The channel count comes from the data or, when its dimension is unknown, from a parameter.
  const PartialShape c =
      per_channel("BatchNorm", in, 1, kParams, d[axis], axis_source("channel", axis, d));
  d[axis] = c[0];
  in[0] = d;
  out[0] = d;
  out[1] = c;
  out[2] = c;
}

bool is_float(DType t) {
  return t == DType::kFloat16 || t == DType::kFloat32 || t == DType::kFloat64;
}

void check_float_data(const std::string& op, DType t) {
  NANOMX_CHECK(is_float(t)) << op << ": 'data' has dtype " << dtype_name(t)
                            << "; it takes float16, float32 or float64";
}

void batch_norm_type(const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
  if (!in[0] && out[0]) in[0] = out[0];
  if (!in[0]) return;
  check_float_data("BatchNorm", *in[0]);
  const DType param = batch_norm_param_dtype(*in[0]);
  static constexpr const char* kNames[] = {"data", "gamma", "beta", "moving_mean", "moving_var"};
  for (size_t i = 1; i < in.size(); ++i) {
    NANOMX_CHECK(!in[i] || *in[i] == param)
        << "BatchNorm: '" << kNames[i] << "' has dtype " << dtype_name(*in[i]) << ", expected "
        << dtype_name(param) << " (gamma, beta and the moving statistics are float32 for "
        << "float16 data and of the data's dtype otherwise)";
    in[i] = param;
  }
  out[0] = in[0];
  out[1] = param;
  out[2] = param;
}

// ---- LayerNorm, InstanceNorm, GroupNorm ---------------------------------------------------

// Every input and output of the data's floating-point dtype (MXNet's ElemwiseType); a
// disagreement names both arguments.
InferTypeFn same_float_type(const std::string& op, std::vector<std::string> names) {
  return [op, names](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
    PartialDType t;
    size_t first = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i]) continue;
      if (!t) {
        t = in[i];
        first = i;
      }
      NANOMX_CHECK(*in[i] == *t) << op << ": '" << names[i] << "' has dtype " << dtype_name(*in[i])
                                 << " but '" << names[first] << "' has " << dtype_name(*t)
                                 << "; they must agree";
    }
    for (size_t j = 0; j < out.size() && !t; ++j) t = out[j];
    if (!t) return;
    check_float_data(op, *t);
    for (PartialDType& d : in) d = t;
    for (PartialDType& d : out) d = t;
  };
}

LayerNormParams parse_layer_norm(const Params& p) {
  LayerNormParams l;
  l.axis = p.get_int("axis", -1);
  l.eps = static_cast<float>(p.get_float("eps", l.eps));
  l.output_mean_var = p.get_bool("output_mean_var", false);
  return l;
}

constexpr const char* kGammaBeta[] = {"gamma", "beta"};

void layer_norm_shape(const ParsedParams& pp, std::span<PartialShape> in,
                      std::span<PartialShape> out) {
  const auto& p = pp.get<LayerNormParams>();
  PartialShape d = data_shape("LayerNorm", in[0], out[0]);
  if (!d.rank_known()) return;
  const int axis = checked_axis("LayerNorm", p.axis, d);
  const PartialShape c =
      per_channel("LayerNorm", in, 1, kGammaBeta, d[axis], axis_source("element", axis, d));
  d[axis] = c[0];
  // mean and std keep the normalised axis, as 1.
  PartialShape moments = d;
  moments[axis] = 1;
  in[0] = d;
  out[0] = d;
  out[1] = moments;
  out[2] = moments;
}

void instance_norm_shape(const ParsedParams&, std::span<PartialShape> in,
                         std::span<PartialShape> out) {
  PartialShape d = data_shape("InstanceNorm", in[0], out[0]);
  if (!d.rank_known()) return;
  require_rank("InstanceNorm", d, 3, "(batch, channel, spatial...)");
  const PartialShape c =
      per_channel("InstanceNorm", in, 1, kGammaBeta, d[1], axis_source("channel", 1, d));
  d[1] = c[0];
  PartialShape moments = PartialShape::of_rank(2);
  moments[0] = d[0];
  moments[1] = d[1];
  in[0] = d;
  out[0] = d;
  out[1] = moments;
  out[2] = moments;
}

GroupNormParams parse_group_norm(const Params& p) {
  GroupNormParams g;
  g.num_groups = p.get_int("num_groups", 1);
  g.eps = static_cast<float>(p.get_float("eps", g.eps));
  g.output_mean_var = p.get_bool("output_mean_var", false);
  NANOMX_CHECK(g.num_groups >= 1) << "GroupNorm: num_groups must be at least 1, got "
                                  << g.num_groups;
  return g;
}

// MXNet 1.9.1's GroupNorm takes gamma and beta of shape (num_groups,): one scale and shift per
// group, not per channel.
void group_norm_shape(const ParsedParams& pp, std::span<PartialShape> in,
                      std::span<PartialShape> out) {
  const auto& p = pp.get<GroupNormParams>();
  PartialShape d = data_shape("GroupNorm", in[0], out[0]);
  if (d.rank_known()) {
    require_rank("GroupNorm", d, 3, "(batch, channel, spatial...)");
    NANOMX_CHECK(!d.dim_known(1) || d[1] % p.num_groups == 0)
        << "GroupNorm: the " << d[1] << " channels of 'data' " << d
        << " cannot be split into num_groups=" << p.num_groups << " equal groups";
  }
  per_channel("GroupNorm", in, 1, kGammaBeta, p.num_groups, "group (num_groups)");
  if (!d.rank_known()) return;
  PartialShape moments = PartialShape::of_rank(2);
  moments[0] = d[0];
  moments[1] = p.num_groups;
  in[0] = d;
  out[0] = d;
  out[1] = moments;
  out[2] = moments;
}

// ---- L2Normalization ----------------------------------------------------------------------

L2NormalizationParams parse_l2_normalization(const Params& p) {
  L2NormalizationParams l;
  l.eps = static_cast<float>(p.get_float("eps", l.eps));
  const std::string mode = p.get_string("mode", "instance");
  if (mode == "instance") {
    l.mode = L2Mode::kInstance;
  } else if (mode == "channel") {
    l.mode = L2Mode::kChannel;
  } else if (mode == "spatial") {
    l.mode = L2Mode::kSpatial;
  } else {
    NANOMX_THROW() << "L2Normalization: mode '" << mode
                   << "' is not one of instance, channel, spatial";
  }
  return l;
}

// The norm: (N,) per instance; (N, 1, spatial...) per position across channels; (N, C) per
// channel across positions (MXNet's shapes).
void l2_normalization_shape(const ParsedParams& pp, std::span<PartialShape> in,
                            std::span<PartialShape> out) {
  const auto& p = pp.get<L2NormalizationParams>();
  const PartialShape d = data_shape("L2Normalization", in[0], out[0]);
  if (!d.rank_known()) return;
  PartialShape norm;
  if (p.mode == L2Mode::kInstance) {
    NANOMX_CHECK(d.ndim() >= 1) << "L2Normalization: 'data' must have at least one dimension, "
                                << "got shape " << d;
    norm = PartialShape::of_rank(1);
    norm[0] = d[0];
  } else {
    require_rank("L2Normalization", d, 3,
                 p.mode == L2Mode::kChannel ? "in channel mode" : "in spatial mode");
    if (p.mode == L2Mode::kChannel) {
      norm = d;
      norm[1] = 1;
    } else {
      norm = PartialShape::of_rank(2);
      norm[0] = d[0];
      norm[1] = d[1];
    }
  }
  in[0] = d;
  out[0] = d;
  out[1] = norm;
}

std::vector<std::string> moment_names(const char* second) { return {"output", "mean", second}; }

}  // namespace

void register_normalization_ops(Registry& r) {
  r.add({.name = "BatchNorm",
         .inputs = {"data", "gamma", "beta", "moving_mean", "moving_var"},
         .keys = {"eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var", "axis",
                  "cudnn_off", "min_calib_range", "max_calib_range"},
         .parse = parser(parse_batch_norm),
         .infer_shape = batch_norm_shape,
         .infer_type = batch_norm_type,
         .num_outputs = [](const ParsedParams&) { return 3; },
         // mean and var (the inverse standard deviation, as MXNet) are kept for the gradient.
         .num_visible_outputs =
             [](const ParsedParams& p) { return p.get<BatchNormParams>().output_mean_var ? 3 : 1; },
         .output_names = [](const ParsedParams&) { return moment_names("var"); },
         .backward = {.inputs = {0, 1}, .outputs = {1, 2}},
         // Training updates moving_mean and moving_var in the forward call.
         .mutate_inputs = {3, 4},
         .reads_train_mode = true,
         .input_init = {{3, R"(["zero", {}])"}, {4, R"(["one", {}])"}}},
        // MXNet 1.x keeps its legacy BatchNorm_v1 beside it (the same computation on axis 1).
        {"BatchNorm_v1"});
  r.add({.name = "LayerNorm",
         .inputs = {"data", "gamma", "beta"},
         .keys = {"axis", "eps", "output_mean_var"},
         .parse = parser(parse_layer_norm),
         .infer_shape = layer_norm_shape,
         .infer_type = same_float_type("LayerNorm", {"data", "gamma", "beta"}),
         .num_outputs = [](const ParsedParams&) { return 3; },
         .num_visible_outputs =
             [](const ParsedParams& p) { return p.get<LayerNormParams>().output_mean_var ? 3 : 1; },
         .output_names = [](const ParsedParams&) { return moment_names("std"); },
         .inplace = {{0, 0}},
         .backward = {.inputs = {0, 1}, .outputs = {1, 2}}});
  r.add({.name = "InstanceNorm",
         .inputs = {"data", "gamma", "beta"},
         .keys = {"eps"},
         .parse = parser(+[](const Params& p) {
           return InstanceNormParams{static_cast<float>(p.get_float("eps", 1e-3f))};
         }),
         .infer_shape = instance_norm_shape,
         .infer_type = same_float_type("InstanceNorm", {"data", "gamma", "beta"}),
         .num_outputs = [](const ParsedParams&) { return 3; },
         .num_visible_outputs = [](const ParsedParams&) { return 1; },
         .output_names = [](const ParsedParams&) { return moment_names("var"); },
         .backward = {.inputs = {0, 1}, .outputs = {1, 2}}});
  r.add({.name = "GroupNorm",
         .inputs = {"data", "gamma", "beta"},
         .keys = {"num_groups", "eps", "output_mean_var"},
         .parse = parser(parse_group_norm),
         .infer_shape = group_norm_shape,
         .infer_type = same_float_type("GroupNorm", {"data", "gamma", "beta"}),
         .num_outputs = [](const ParsedParams&) { return 3; },
         .num_visible_outputs =
             [](const ParsedParams& p) { return p.get<GroupNormParams>().output_mean_var ? 3 : 1; },
         .output_names = [](const ParsedParams&) { return moment_names("std"); },
         .inplace = {{0, 0}},
         .backward = {.inputs = {0, 1}, .outputs = {1, 2}}});
  r.add({.name = "L2Normalization",
         .inputs = {"data"},
         .keys = {"eps", "mode"},
         .parse = parser(parse_l2_normalization),
         .infer_shape = l2_normalization_shape,
         .infer_type = same_float_type("L2Normalization", {"data"}),
         .num_outputs = [](const ParsedParams&) { return 2; },
         .num_visible_outputs = [](const ParsedParams&) { return 1; },
         .output_names =
             [](const ParsedParams&) {
               return std::vector<std::string>{"output", "norm"};
             },
         .backward = {.outputs = {0, 1}}});
  register_normalization_backward_ops(r);
}

}  // namespace nanomx::ops
