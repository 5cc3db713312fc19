// Dropout, LeakyReLU and Embedding with their backward operators and gradient rules, as MXNet
// 1.9.1 defines them (src/operator/nn/dropout.cc, src/operator/leaky_relu.cc,
// src/operator/tensor/indexing_op.cc); the loss layers are in ops/loss_layers.cc. CPU kernels:
// backends/cpu/kernels/nn_layers.cc. Dropout and LeakyReLU(rrelu) draw from the process-wide
// generator that mx.random.seed seeds, and read the call's train mode.
#include "ops/nn_layers.h"

#include <string>
#include <vector>

#include "ops/backward_ops.h"
#include "ops/gradient.h"
#include "ops/op_params.h"
#include "ops/registry.h"

namespace nanomx::ops {

InferTypeFn one_float_type(const char* op) {
  return [op](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
    PartialDType t;
    auto take = [&](const PartialDType& d) {
      if (!d) return;
      NANOMX_CHECK(!t || *t == *d)
          << op << ": dtypes " << dtype_name(*t) << " and " << dtype_name(*d)
          << " differ; every input and output takes one dtype";
      t = d;
    };
    for (const PartialDType& d : in) take(d);
    for (const PartialDType& d : out) take(d);
    if (!t) return;
    NANOMX_CHECK(is_float_dtype(*t)) << op << ": 'data' has dtype " << dtype_name(*t)
                                     << "; it takes float16, float32 or float64";
    for (PartialDType& d : in) d = t;
    for (PartialDType& d : out) d = t;
  };
}

Shape prelu_gamma_shape(const Shape& gamma, const Shape& data) {
  std::vector<int64_t> expanded(static_cast<size_t>(data.ndim()), 1);
  int s = gamma.ndim() - 1;
  for (int i = data.ndim() - 1; i >= 0; --i) {
    if (s >= 0 && i <= 1 && (data[i] == gamma[s] || gamma[s] == 1)) {
      expanded[static_cast<size_t>(i)] = gamma[s];
      --s;
    }
  }
  NANOMX_CHECK(s == -1) << "LeakyReLU(prelu): 'gamma' of shape " << gamma
                        << " cannot be broadcast to 'data' of shape " << data
                        << " (gamma's axes, right-aligned, match data's axes 0 and 1 only, each "
                           "equal or 1: (C,) or (1,) for data (N, C, ...))";
  return Shape(expanded);
}

namespace {

// `slot` merged with `inferred`; a disagreement names the operator and the argument.
void fill(const std::string& op, PartialShape& slot, const PartialShape& inferred,
          const char* name) {
  PartialShape merged = slot;
  NANOMX_CHECK(merge_shape(merged, inferred))
      << op << ": '" << name << "' has shape " << slot << ", expected " << inferred;
  slot = merged;
}

// ---- Dropout -------------------------------------------------------------------------------

DropoutParams parse_dropout(const Params& p) {
  DropoutParams d;
  const double given = p.get_float("p", 0.5);
  d.p = static_cast<float>(given);
  // p = 1 is MXNet's too: every element dropped, and its mask 0 * (1 / 0) is NaN
  // (MXNet's test_dropout asserts the NaN).
  NANOMX_CHECK(d.p >= 0.0f && d.p <= 1.0f)
      << "Dropout: p = " << given
      << " is out of range: it is the fraction of the input dropped and must be in [0, 1]";
  const std::string mode = p.get_string("mode", "training");
  NANOMX_CHECK(mode == "training" || mode == "always")
      << "Dropout: mode '" << mode << "' is not one of training, always";
  d.always = mode == "always";
  if (auto axes = p.get_ints("axes")) d.axes = *axes;
  // cuDNN's choice: accepted and ignored (nanomx draws its own masks), its value still checked.
  if (p.has("cudnn_off") && p.get_string("cudnn_off") != "None") (void)p.get_bool("cudnn_off");
  return d;
}

// The mask's shape: data's with every axis in `axes` set to 1 (the mask is broadcast along it).
PartialShape dropout_mask_shape(const std::string& op, const DropoutParams& d,
                                const PartialShape& data) {
  if (!data.rank_known()) return PartialShape();
  PartialShape mask = data;
  const int n = data.ndim();
  for (int64_t a : d.axes) {
    NANOMX_CHECK(a >= -n && a < n) << op << ": axis " << a << " in 'axes' is out of range for "
                                   << "'data' of shape " << data << " (" << n << " axes)";
    mask[static_cast<int>(a < 0 ? a + n : a)] = 1;
  }
  return mask;
}

void infer_dropout(const ParsedParams& pp, std::span<PartialShape> in,
                   std::span<PartialShape> out) {
  fill("Dropout", in[0], out[0], "data");
  out[0] = in[0];
  const PartialShape mask = dropout_mask_shape("Dropout", pp.get<DropoutParams>(), in[0]);
  if (mask.rank_known()) out[1] = mask;
}

// ---- LeakyReLU -----------------------------------------------------------------------------

LeakyReLUParams parse_leaky_relu(const Params& p) {
  static const std::pair<const char*, LeakyAct> kActs[] = {
      {"leaky", LeakyAct::kLeaky}, {"prelu", LeakyAct::kPrelu}, {"rrelu", LeakyAct::kRrelu},
      {"elu", LeakyAct::kElu},     {"selu", LeakyAct::kSelu},   {"gelu", LeakyAct::kGelu}};
  LeakyReLUParams l;
  const std::string act = p.get_string("act_type", "leaky");
  bool found = false;
  for (const auto& [name, value] : kActs) {
    if (act == name) {
      l.act = value;
      found = true;
    }
  }
  NANOMX_CHECK(found) << "LeakyReLU: act_type '" << act
                      << "' is not one of leaky, prelu, rrelu, elu, selu, gelu";
  l.slope = static_cast<float>(p.get_float("slope", 0.25));
  l.lower_bound = static_cast<float>(p.get_float("lower_bound", 0.125));
  l.upper_bound = static_cast<float>(p.get_float("upper_bound", 0.334));
  NANOMX_CHECK(l.act != LeakyAct::kRrelu || l.lower_bound <= l.upper_bound)
      << "LeakyReLU(rrelu): lower_bound (" << l.lower_bound << ") is greater than upper_bound ("
      << l.upper_bound << ")";
  return l;
}

void infer_leaky_relu(const ParsedParams& pp, std::span<PartialShape> in,
                      std::span<PartialShape> out) {
  const auto& l = pp.get<LeakyReLUParams>();
  fill("LeakyReLU", in[0], out[0], "data");
  const PartialShape& d = in[0];
  for (PartialShape& o : out) o = d;  // the output, and rrelu's mask
  if (l.act != LeakyAct::kPrelu || !d.rank_known()) return;
  NANOMX_CHECK(d.ndim() >= 1) << "LeakyReLU(prelu): 'data' must have at least one axis, got " << d;
  if (!in[1].rank_known()) {
    // One slope per channel (axis 1), as MXNet infers it; 1-D data shares one slope.
    PartialShape gamma = PartialShape::of_rank(1);
    gamma[0] = d.ndim() >= 2 ? d[1] : 1;
    in[1] = gamma;
  } else if (in[1].known() && d.known()) {
    (void)prelu_gamma_shape(in[1].shape(), d.shape());
  }
}

// _backward_LeakyReLU's inputs, as MXNet's ElemwiseGradUseInOut lists them: the output
// gradient, the forward inputs, the forward outputs.
std::vector<std::string> leaky_backward_inputs(const ParsedParams& p) {
  switch (p.get<LeakyReLUParams>().act) {
    case LeakyAct::kPrelu:
      return {"out_grad", "data", "gamma", "output"};
    case LeakyAct::kRrelu:
      return {"out_grad", "data", "output", "mask"};
    default:
      return {"out_grad", "data", "output"};
  }
}

void infer_leaky_backward(const ParsedParams& pp, std::span<PartialShape> in,
                          std::span<PartialShape> out) {
  const std::string name = "_backward_LeakyReLU";
  const bool prelu = pp.get<LeakyReLUParams>().act == LeakyAct::kPrelu;
  const std::vector<std::string> names = leaky_backward_inputs(pp);
  NANOMX_CHECK(in.size() == names.size())
      << name << ": expected " << names.size() << " inputs, got " << in.size();
  // Every input but gamma has data's shape, as has data's gradient.
  std::vector<PartialShape*> slots;
  std::vector<std::string> slot_names;
  for (size_t i = 0; i < in.size(); ++i) {
    if (prelu && i == 2) continue;
    slots.push_back(&in[i]);
    slot_names.push_back(names[i]);
  }
  slots.push_back(&out[0]);
  slot_names.emplace_back("data_grad");
  merge_all(name, slots, slot_names);
  if (!prelu) return;
  PartialShape* gamma[] = {&in[2], &out[1]};
  const std::string gamma_names[] = {"gamma", "gamma_grad"};
  merge_all(name, gamma, gamma_names);
  if (in[1].known() && in[2].known()) (void)prelu_gamma_shape(in[2].shape(), in[1].shape());
}

// ---- Embedding -----------------------------------------------------------------------------

EmbeddingParams parse_embedding(const Params& p) {
  EmbeddingParams e{p.get_int("input_dim"), p.get_int("output_dim"),
                    p.get_dtype("dtype", DType::kFloat32)};
  NANOMX_CHECK(e.input_dim >= 1) << "Embedding: input_dim must be at least 1, got " << e.input_dim;
  NANOMX_CHECK(e.output_dim >= 1) << "Embedding: output_dim must be at least 1, got "
                                  << e.output_dim;
  NANOMX_CHECK(!p.get_bool("sparse_grad", false))
      << "Embedding: sparse_grad=True is not supported (nanomx has no row_sparse storage; the "
         "weight's gradient is always dense): use sparse_grad=False";
  return e;
}

void infer_embedding(const ParsedParams& pp, std::span<PartialShape> in,
                     std::span<PartialShape> out) {
  const auto& e = pp.get<EmbeddingParams>();
  fill("Embedding", in[1], Shape{e.input_dim, e.output_dim}, "weight (input_dim, output_dim)");
  const PartialShape& d = in[0];
  if (d.rank_known()) {
    PartialShape o = PartialShape::of_rank(d.ndim() + 1);
    for (int i = 0; i < d.ndim(); ++i) o[i] = d[i];
    o[d.ndim()] = e.output_dim;
    out[0] = o;
  } else if (out[0].rank_known() && out[0].ndim() >= 1) {
    // The indices' shape from a caller's output: all of it but the last axis.
    PartialShape idx = PartialShape::of_rank(out[0].ndim() - 1);
    for (int i = 0; i + 1 < out[0].ndim(); ++i) idx[i] = out[0][i];
    in[0] = idx;
  }
}

// The indices take any dtype; the weight and the output share one: the weight's, else the
// output's, else the dtype attribute (MXNet's EmbeddingOpType).
void infer_embedding_type(const ParsedParams& pp, std::span<PartialDType> in,
                          std::span<PartialDType> out) {
  if (in[1] && out[0]) {
    NANOMX_CHECK(*in[1] == *out[0])
        << "Embedding: 'weight' has dtype " << dtype_name(*in[1]) << " but the output has dtype "
        << dtype_name(*out[0]) << "; they must agree";
  }
  const PartialDType t = in[1] ? in[1] : out[0] ? out[0] : pp.get<EmbeddingParams>().dtype;
  in[1] = t;
  out[0] = t;
}

void register_forward(Registry& r) {
  r.add({.name = "Dropout",
         .inputs = {"data"},
         .keys = {"p", "mode", "axes", "cudnn_off"},
         .parse = parser(parse_dropout),
         .infer_shape = infer_dropout,
         .infer_type = one_float_type("Dropout"),
         .num_outputs = [](const ParsedParams&) { return 2; },
         // The mask (already scaled by 1 / (1 - p)) is kept for the gradient only.
         .num_visible_outputs = [](const ParsedParams&) { return 1; },
         .output_names =
             [](const ParsedParams&) {
               return std::vector<std::string>{"output", "mask"};
             },
         .inplace = {{0, 0}},
         .backward = {.outputs = {1}},
         .state_var = [] { return random_state().var; },
         .reads_train_mode = true});
  r.add({.name = "LeakyReLU",
         .inputs = {"data", "gamma"},
         .keys = {"act_type", "slope", "lower_bound", "upper_bound"},
         .parse = parser(parse_leaky_relu),
         .infer_shape = infer_leaky_relu,
         .infer_type = one_float_type("LeakyReLU"),
         // rrelu also returns the slopes it drew (MXNet declares no hidden outputs here).
         .num_outputs =
             [](const ParsedParams& p) {
               return p.get<LeakyReLUParams>().act == LeakyAct::kRrelu ? 2 : 1;
             },
         .input_names =
             [](const ParsedParams& p) {
               if (p.get<LeakyReLUParams>().act == LeakyAct::kPrelu) {
                 return std::vector<std::string>{"data", "gamma"};
               }
               return std::vector<std::string>{"data"};
             },
         .output_names =
             [](const ParsedParams& p) {
               if (p.get<LeakyReLUParams>().act == LeakyAct::kRrelu) {
                 return std::vector<std::string>{"output", "mask"};
               }
               return std::vector<std::string>{"output"};
             },
         .inplace = {{0, 0}},
         // data and the output always; gamma (prelu) and the mask (rrelu) where the call has
         // them.
         .backward = {.inputs = {0, 1}, .outputs = {0, 1}},
         // Only rrelu draws, but the generator is declared per operator, not per call.
         .state_var = [] { return random_state().var; },
         .reads_train_mode = true,
         .input_init = {{1, R"(["Constant", {"value": 0.25}])"}}});
  r.add({.name = "Embedding",
         .inputs = {"data", "weight"},
         .keys = {"input_dim", "output_dim", "dtype", "sparse_grad"},
         .parse = parser(parse_embedding),
         .infer_shape = infer_embedding,
         .infer_type = infer_embedding_type,
         .backward = {.inputs = {0}}});
}

void register_backward(Registry& r) {
  const Op& dropout = fwd_op("Dropout");
  // (dy, mask) -> dy * mask, the mask broadcast along `axes`.
  add_float(r, with_attrs_of(dropout, {.name = "_backward_Dropout",
                                       .inputs = {"out_grad", "mask"},
                                       .infer_shape =
                                           [](const ParsedParams& pp, std::span<PartialShape> in,
                                              std::span<PartialShape> out) {
                                             const std::string name = "_backward_Dropout";
                                             PartialShape* slots[] = {&in[0], &out[0]};
                                             const std::string names[] = {"out_grad", "data_grad"};
                                             merge_all(name, slots, names);
                                             const PartialShape mask = dropout_mask_shape(
                                                 name, pp.get<DropoutParams>(), in[0]);
                                             if (mask.rank_known()) fill(name, in[1], mask, "mask");
                                           },
                                       .inplace = {{0, 0}},
                                       .backward = {.differentiable = false}}));

  // (dy, x[, gamma], y[, mask]) -> dx[, dgamma].
  add_float(r, with_attrs_of(fwd_op("LeakyReLU"),
                             {.name = "_backward_LeakyReLU",
                              .inputs = {"out_grad", "data", "gamma", "output", "mask"},
                              .infer_shape = infer_leaky_backward,
                              .num_outputs =
                                  [](const ParsedParams& p) {
                                    return p.get<LeakyReLUParams>().act == LeakyAct::kPrelu ? 2 : 1;
                                  },
                              .input_names = leaky_backward_inputs,
                              .output_names =
                                  [](const ParsedParams& p) {
                                    if (p.get<LeakyReLUParams>().act == LeakyAct::kPrelu) {
                                      return std::vector<std::string>{"data_grad", "gamma_grad"};
                                    }
                                    return std::vector<std::string>{"data_grad"};
                                  },
                              .inplace = {{0, 0}},
                              .backward = {.differentiable = false}}));

  const Op& embedding = fwd_op("Embedding");
  // (dy, indices) -> (zeros for the indices, the dense weight gradient: dy's rows added into
  // the rows the indices picked).
  r.add(with_attrs_of(
      embedding,
      {.name = "_backward_Embedding",
       .inputs = {"out_grad", "data"},
       .infer_shape =
           [&embedding](const ParsedParams& pp, std::span<PartialShape> in,
                        std::span<PartialShape> out) {
             const std::string name = "_backward_Embedding";
             const auto& e = pp.get<EmbeddingParams>();
             const Shape weight{e.input_dim, e.output_dim};
             check_out_grad(embedding, pp, {in[1], weight}, in[0], name);
             outputs_like(name, {"out_grad", "data"}, in, out, {1});
             out[1] = weight;
           },
       .infer_type =
           [](const ParsedParams& pp, std::span<PartialDType> in, std::span<PartialDType> out) {
             if (!out[0]) out[0] = in[1];
             if (!out[1]) out[1] = in[0] ? in[0] : pp.get<EmbeddingParams>().dtype;
           },
       .num_outputs = [](const ParsedParams&) { return 2; },
       .output_names =
           [](const ParsedParams&) {
             return std::vector<std::string>{"data_grad", "weight_grad"};
           },
       .backward = {.differentiable = false}}));
}

using Grads = std::vector<GradValue>;

}  // namespace

void register_nn_layer_ops(Registry& r) {
  register_forward(r);
  register_backward(r);
  register_loss_layer_ops(r);
}

void register_nn_layer_rules() {
  // dx = dy * mask (the ones of inference included); the mask is Dropout's hidden output.
  register_gradient("Dropout", [](GradientBuilder& b) {
    return Grads{b.add1("_backward_Dropout", b.attrs(), {b.out_grad(0), b.output(1)})};
  });
  register_gradient("LeakyReLU", [](GradientBuilder& b) {
    switch (b.params().get<LeakyReLUParams>().act) {
      case LeakyAct::kPrelu:
        return b.add("_backward_LeakyReLU", b.attrs(),
                     {b.out_grad(0), b.input(0), b.input(1), b.output(0)});
      case LeakyAct::kRrelu:
        return Grads{b.add1("_backward_LeakyReLU", b.attrs(),
                            {b.out_grad(0), b.input(0), b.output(0), b.output(1)})};
      default:
        return Grads{
            b.add1("_backward_LeakyReLU", b.attrs(), {b.out_grad(0), b.input(0), b.output(0)})};
    }
  });
  // Only the weight gets a gradient; the indices get none (MXNet refuses to compute one).
  register_gradient("Embedding", [](GradientBuilder& b) {
    const Grads g = b.add("_backward_Embedding", b.attrs(), {b.out_grad(0), b.input(0)});
    return Grads{GradValue{}, g.at(1)};
  });
  register_loss_layer_rules();
}

}  // namespace nanomx::ops
