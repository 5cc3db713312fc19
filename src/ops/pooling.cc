// Pooling and LRN, and their backward operators _backward_Pooling and _backward_LRN:
// definitions, shape and dtype inference, and gradient rules. The semantics are MXNet 1.9.1's
// (src/operator/nn/pooling.cc, pool.h, lrn.cc, lrn-inl.h); docs/mxnet-compat.md lists where
// nanomx departs. CPU kernels: backends/cpu/kernels/pooling.cc.
#include "ops/pooling.h"

#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "ops/backward_ops.h"
#include "ops/gradient.h"
#include "ops/op_params.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

// "(3,3)" (as shapes print) from the first n entries of a per-axis attribute.
std::string tuple_text(const std::array<int64_t, 3>& v, int n) {
  return Shape(std::span<const int64_t>(v.data(), static_cast<size_t>(n))).str();
}

// A per-axis tuple attribute (stride, pad): absent or empty gives `fallback` on every axis.
std::array<int64_t, 3> axis_tuple(const Params& a, const char* key, int ndim, int64_t fallback,
                                  int64_t min_value) {
  std::array<int64_t, 3> v = {fallback, fallback, fallback};
  const auto given = a.get_ints(key);
  if (!given || given->empty()) return v;
  // MXNet reads the first `ndim` entries; more are accepted when they are the default (its own
  // test_valid_max_pooling_pad_type_same passes pad=(0,0,0) with a 1-D kernel).
  const int given_ndim = static_cast<int>(given->size());
  bool extra_default = given_ndim > ndim;
  for (int i = ndim; i < given_ndim; ++i) {
    extra_default = extra_default && (*given)[static_cast<size_t>(i)] == fallback;
  }
  NANOMX_CHECK(given_ndim == ndim || extra_default)
      << "Pooling: '" << key << "' has " << given->size() << " entries but 'kernel' has " << ndim
      << " (one per spatial axis)";
  for (int i = 0; i < ndim; ++i) {
    const int64_t x = (*given)[static_cast<size_t>(i)];
    NANOMX_CHECK(x >= min_value) << "Pooling: '" << key << "' entries must be at least "
                                 << min_value << ", got " << x << " on spatial axis " << i;
    v[static_cast<size_t>(i)] = x;
  }
  return v;
}

PoolingParams parse_pooling(const Params& a) {
  PoolingParams p;
  const std::string type = a.get_string("pool_type", "max");
  if (type == "max") {
    p.type = PoolType::kMax;
  } else if (type == "avg") {
    p.type = PoolType::kAvg;
  } else if (type == "sum") {
    p.type = PoolType::kSum;
  } else if (type == "lp") {
    p.type = PoolType::kLp;
  } else {
    NANOMX_THROW() << "Pooling: pool_type '" << type << "' is not one of max, avg, sum, lp";
  }
  const std::string conv = a.get_string("pooling_convention", "valid");
  if (conv == "valid") {
    p.convention = PoolConvention::kValid;
  } else if (conv == "full") {
    p.convention = PoolConvention::kFull;
  } else if (conv == "same") {
    p.convention = PoolConvention::kSame;
  } else {
    NANOMX_THROW() << "Pooling: pooling_convention '" << conv
                   << "' is not one of valid, full, same";
  }
  p.global_pool = a.get_bool("global_pool", false);
  // Read for its check only: the CPU has no cuDNN to turn off.
  static_cast<void>(a.get_bool("cudnn_off", false));

  const std::vector<int64_t> kernel = a.get_ints("kernel").value_or(std::vector<int64_t>{});
  NANOMX_CHECK(kernel.size() <= 3)
      << "Pooling: 'kernel' has " << kernel.size()
      << " entries; pooling is 1-D, 2-D or 3-D (one entry per spatial axis)";
  NANOMX_CHECK(!kernel.empty() || p.global_pool)
      << "Pooling: 'kernel' is required unless global_pool=True";
  p.kernel_ndim = static_cast<int>(kernel.size());
  for (int i = 0; i < p.kernel_ndim; ++i) {
    p.kernel[static_cast<size_t>(i)] = kernel[static_cast<size_t>(i)];
    NANOMX_CHECK(kernel[static_cast<size_t>(i)] >= 1)
        << "Pooling: 'kernel' entries must be at least 1, got " << kernel[static_cast<size_t>(i)]
        << " on spatial axis " << i;
  }

  // The layout, given or implied by the kernel's rank (MXNet's PoolingParamParser); global
  // pooling without either takes the data's rank.
  const std::string layout = a.get_string("layout", "None");
  if (layout != "None") {
    static const char* const kLayouts[] = {"NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"};
    bool known = false;
    for (const char* l : kLayouts) known = known || layout == l;
    NANOMX_CHECK(known) << "Pooling: layout '" << layout
                        << "' is not one of NCW, NCHW, NCDHW, NWC, NHWC, NDHWC";
    p.data_ndim = static_cast<int>(layout.size());
    p.channel_last = layout.back() == 'C';
    NANOMX_CHECK(p.kernel_ndim == 0 || p.kernel_ndim + 2 == p.data_ndim)
        << "Pooling: layout '" << layout << "' is for " << p.data_ndim - 2
        << "-D pooling but 'kernel' " << tuple_text(p.kernel, p.kernel_ndim) << " has "
        << p.kernel_ndim << " entries";
  } else if (p.kernel_ndim > 0) {
    p.data_ndim = p.kernel_ndim + 2;
  }

  // With global pooling the kernel's values, the stride and the pad are ignored (MXNet
  // replaces them by the input's extent, 1 and 0): read for their syntax only.
  if (p.global_pool) {
    static_cast<void>(a.get_ints("stride"));
    static_cast<void>(a.get_ints("pad"));
    p.stride = {1, 1, 1};
    p.pad = {0, 0, 0};
  } else {
    p.stride = axis_tuple(a, "stride", p.kernel_ndim, 1, 1);
    p.pad = axis_tuple(a, "pad", p.kernel_ndim, 0, 0);
  }

  const bool has_p = a.has("p_value") && a.get_string("p_value") != "None";
  if (has_p) p.p_value = static_cast<int>(a.get_int("p_value"));
  if (p.type == PoolType::kLp) {
    NANOMX_CHECK(has_p) << "Pooling: pool_type='lp' requires 'p_value' (1, 2 or 3)";
    NANOMX_CHECK(p.p_value >= 1 && p.p_value <= 3)
        << "Pooling: p_value " << p.p_value << " is not supported (lp pooling takes 1, 2 or 3)";
  } else {
    p.p_value = 1;
  }
  if (a.has("count_include_pad") && a.get_string("count_include_pad") != "None") {
    p.count_include_pad = a.get_bool("count_include_pad");
  }

  if (p.convention == PoolConvention::kSame) {
    NANOMX_CHECK(p.pad == (std::array<int64_t, 3>{0, 0, 0}))
        << "Pooling: pooling_convention='same' takes no 'pad', got "
        << tuple_text(p.pad, p.kernel_ndim);
  }
  // A window wholly in the padding has no maximum and no average: MXNet's CPU pooling (its
  // oneDNN path, the default build's) refuses such a pad for max and avg.
  if (!p.global_pool && (p.type == PoolType::kMax || p.type == PoolType::kAvg)) {
    for (int i = 0; i < p.kernel_ndim; ++i) {
      const auto u = static_cast<size_t>(i);
      NANOMX_CHECK(p.pad[u] < p.kernel[u])
          << "Pooling: 'pad' " << tuple_text(p.pad, p.kernel_ndim)
          << " must be smaller than 'kernel' " << tuple_text(p.kernel, p.kernel_ndim)
          << " on every axis for " << type << " pooling (axis " << i << ")";
    }
  }
  return p;
}

}  // namespace

std::string pooled_shape(const PoolingParams& p, const PartialShape& data, PartialShape& out) {
  const int nd = data.ndim();
  if (nd < 3 || nd > 5) {
    std::ostringstream m;
    m << "Pooling: 'data' must be 3-D (batch, channel, width), 4-D (batch, channel, height, "
         "width) or 5-D (batch, channel, depth, height, width), got "
      << data;
    return m.str();
  }
  if (p.data_ndim != 0 && nd != p.data_ndim) {
    std::ostringstream m;
    m << "Pooling: " << p.data_ndim - 2 << "-D pooling (";
    if (p.kernel_ndim > 0) {
      m << "kernel " << tuple_text(p.kernel, p.kernel_ndim);
    } else {
      m << "the layout";
    }
    m << ") takes " << p.data_ndim << "-D data, got 'data' of shape " << data;
    return m.str();
  }
  if (p.convention == PoolConvention::kSame && nd != 3) {
    std::ostringstream m;
    m << "Pooling: pooling_convention='same' supports 1-D pooling only (3-D data), got 'data' "
         "of shape "
      << data;
    return m.str();
  }
  const int first = p.channel_last ? 1 : 2;  // the first spatial axis
  out = data;
  for (int i = 0; i < nd - 2; ++i) {
    const int axis = first + i;
    if (p.global_pool) {
      out[axis] = 1;
      continue;
    }
    if (!data.dim_known(axis)) continue;
    const auto u = static_cast<size_t>(i);
    const int64_t x = data[axis], k = p.kernel[u], s = p.stride[u], pad = p.pad[u];
    if (k > x + 2 * pad) {
      std::ostringstream m;
      m << "Pooling: kernel " << tuple_text(p.kernel, p.kernel_ndim) << " exceeds 'data' " << data
        << " padded by " << tuple_text(p.pad, p.kernel_ndim) << " on spatial axis " << i << " ("
        << k << " > " << x << " + 2*" << pad << ")";
      return m.str();
    }
    out[axis] = pooled_extent(p.convention, x, k, s, pad);
  }
  return {};
}

PoolGeometry pooling_geometry(const PoolingParams& p, const Shape& data) {
  PoolGeometry g;
  const int nd = data.ndim();
  g.nsp = nd - 2;
  g.channel_last = p.channel_last;
  g.batch = data[0];
  g.channels = p.channel_last ? data[nd - 1] : data[1];
  const int first = p.channel_last ? 1 : 2;
  for (int i = 0; i < g.nsp; ++i) {
    const auto a = static_cast<size_t>(3 - g.nsp + i);  // right-aligned into three axes
    const auto u = static_cast<size_t>(i);
    const int64_t x = data[first + i];
    g.in[a] = x;
    if (p.global_pool) {
      g.kernel[a] = x;
      g.out[a] = 1;
      continue;
    }
    g.kernel[a] = p.kernel[u];
    g.stride[a] = p.stride[u];
    g.pad[a] = p.pad[u];
    g.out[a] = pooled_extent(p.convention, x, p.kernel[u], p.stride[u], p.pad[u]);
  }
  return g;
}

namespace {

void pooling_infer(const ParsedParams& pp, std::span<PartialShape> in,
                   std::span<PartialShape> out) {
  if (!in[0].rank_known()) return;
  PartialShape o;
  const std::string error = pooled_shape(pp.get<PoolingParams>(), in[0], o);
  NANOMX_CHECK(error.empty()) << error;
  out[0] = std::move(o);
}

bool pooling_infer_known(const ParsedParams& pp, std::span<const Shape* const> in,
                         std::span<Shape> out) {
  PartialShape o;
  if (!pooled_shape(pp.get<PoolingParams>(), *in[0], o).empty()) return false;
  out[0] = std::move(o).take_shape();
  return true;
}

// Every output takes the data's dtype, which must be a floating-point one (MXNet's
// MSHADOW_REAL_TYPE_SWITCH); refused here, before anything runs.
void float_data_type(const ParsedParams& pp, std::span<PartialDType> in,
                     std::span<PartialDType> out) {
  for (size_t j = 0; j < out.size() && !in[0]; ++j) in[0] = out[j];
  if (!in[0]) return;
  NANOMX_CHECK(is_float_dtype(*in[0])) << pp.op() << ": 'data' has dtype " << dtype_name(*in[0])
                                       << "; it takes float16, float32 or float64";
  for (PartialDType& o : out) o = in[0];
}

LRNParams parse_lrn(const Params& a) {
  LRNParams p;
  p.alpha = a.get_float("alpha", 1e-4);
  p.beta = a.get_float("beta", 0.75);
  p.knorm = a.get_float("knorm", 2.0);
  p.nsize = a.get_int("nsize");
  NANOMX_CHECK(p.nsize >= 1 && p.nsize % 2 == 1)
      << "LRN: 'nsize' must be an odd number of channels (at least 1), got " << p.nsize;
  return p;
}

void check_lrn_data(const std::string& op, const PartialShape& d) {
  NANOMX_CHECK(!d.rank_known() || d.ndim() == 4)
      << op << ": 'data' must be 4-D (batch, channel, height, width), got " << d;
}

// The output and tmp_norm have the data's shape (an output's shape gives the data's).
void lrn_infer(const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
  if (!in[0].rank_known()) {
    if (!out[0].rank_known()) return;
    in[0] = out[0];
  }
  check_lrn_data("LRN", in[0]);
  out[0] = in[0];
  out[1] = in[0];
}

bool lrn_infer_known(const ParsedParams&, std::span<const Shape* const> in, std::span<Shape> out) {
  if (in[0]->ndim() != 4) return false;
  out[0] = *in[0];
  out[1] = *in[0];
  return true;
}

}  // namespace

void register_pooling_ops(Registry& r) {
  r.add({.name = "Pooling",
         .inputs = {"data"},
         .keys = {"kernel", "pool_type", "global_pool", "cudnn_off", "pooling_convention", "stride",
                  "pad", "p_value", "count_include_pad", "layout"},
         .parse = parser(parse_pooling),
         .infer_shape = pooling_infer,
         .infer_shape_known = pooling_infer_known,
         .infer_type = float_data_type,
         // max and lp differentiate from the input and the output (MXNet's
         // ElemwiseGradUseInOut); avg and sum need neither but get both, as in MXNet.
         .backward = {.inputs = {0}, .outputs = {0}}},
        {"_npx_pooling"});
  r.add({.name = "LRN",
         .inputs = {"data"},
         .keys = {"alpha", "beta", "knorm", "nsize"},
         .parse = parser(parse_lrn),
         .infer_shape = lrn_infer,
         .infer_shape_known = lrn_infer_known,
         .infer_type = float_data_type,
         .num_outputs = [](const ParsedParams&) { return 2; },
         // tmp_norm, knorm + alpha/nsize * (sum of squares), is kept for the gradient.
         .num_visible_outputs = [](const ParsedParams&) { return 1; },
         .output_names =
             [](const ParsedParams&) {
               return std::vector<std::string>{"output", "tmp_norm"};
             },
         .backward = {.inputs = {0}, .outputs = {1}}});

  const Op& pooling = fwd_op("Pooling");
  // (dy, x, y) -> dx: MXNet's input order.
  add_float(r, with_attrs_of(
                   pooling, {.name = "_backward_Pooling",
                             .inputs = {"out_grad", "data", "output"},
                             .infer_shape =
                                 [&pooling](const ParsedParams& p, std::span<PartialShape> in,
                                            std::span<PartialShape> out) {
                                   const std::string name = "_backward_Pooling";
                                   check_out_grad(pooling, p, {in[1]}, in[0], name);
                                   PartialShape* ys[] = {&in[0], &in[2]};
                                   const std::string y_names[] = {"out_grad", "output"};
                                   merge_all(name, ys, y_names);
                                   outputs_like(name, {"out_grad", "data", "output"}, in, out, {1});
                                 },
                             .backward = {.differentiable = false}}));
  // (dy, x, tmp_norm) -> dx.
  add_float(
      r, with_attrs_of(
             fwd_op("LRN"),
             {.name = "_backward_LRN",
              .inputs = {"out_grad", "data", "tmp_norm"},
              .infer_shape =
                  [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
                    PartialShape* slots[] = {&in[0], &in[1], &in[2], &out[0]};
                    const std::string names[] = {"out_grad", "data", "tmp_norm", "data_grad"};
                    merge_all("_backward_LRN", slots, names);
                    check_lrn_data("_backward_LRN", in[1]);
                  },
              .backward = {.differentiable = false}}));
}

void register_pooling_rules() {
  register_gradient("Pooling", [](GradientBuilder& b) {
    return std::vector<GradValue>{
        b.add1("_backward_Pooling", b.attrs(), {b.out_grad(0), b.input(0), b.output(0)})};
  });
  // The gradient reads the hidden tmp_norm; none flows into it.
  register_gradient("LRN", [](GradientBuilder& b) {
    return std::vector<GradValue>{
        b.add1("_backward_LRN", b.attrs(), {b.out_grad(0), b.input(0), b.output(1)})};
  });
}

}  // namespace nanomx::ops
