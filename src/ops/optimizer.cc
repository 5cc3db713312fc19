// The optimizer update operators MXNet's optimizers call: sgd_update, sgd_mom_update,
// mp_sgd_update, mp_sgd_mom_update, adam_update, and the multi-tensor multi_sgd_update /
// multi_sgd_mom_update (inputs weight, grad[, mom] per weight; one output per weight) that
// MXNet's SGD runs on dense arrays. Each writes the new weight into its output
// (called with out=weight, in place) and updates its state inputs (momentum, Adam's mean and
// variance, the float32 master weight) in place: those are declared as mutated inputs, so the
// engine orders them as written. They are not differentiable. CPU kernels:
// backends/cpu/kernels/optimizer.cc; formulas: docs/symbolic.md.
#include "ops/optimizer.h"

#include <string>
#include <vector>

#include "ops/registry.h"

namespace nanomx::ops {
namespace {

enum class Family { kSgd, kSgdMom, kAdam };

std::vector<std::string> keys_of(Family f) {
  switch (f) {
    case Family::kSgd:
      return {"lr", "wd", "rescale_grad", "clip_gradient", "lazy_update"};
    case Family::kSgdMom:
      return {"lr", "momentum", "wd", "rescale_grad", "clip_gradient", "lazy_update"};
    case Family::kAdam:
      return {"lr", "beta1",        "beta2",         "epsilon",
              "wd", "rescale_grad", "clip_gradient", "lazy_update"};
  }
  return {};
}

template <Family kFamily>
OptimizerParams parse_optimizer(const Params& p) {
  OptimizerParams o;
  NANOMX_CHECK(p.has("lr")) << p.op() << ": required attribute 'lr' is missing";
  o.lr = p.get_float("lr");
  o.wd = p.get_float("wd", 0.0);
  o.rescale_grad = p.get_float("rescale_grad", 1.0);
  o.clip_gradient = p.get_float("clip_gradient", -1.0);
  o.lazy_update = p.get_bool("lazy_update", true);
  if constexpr (kFamily == Family::kSgdMom) o.momentum = p.get_float("momentum", 0.0);
  if constexpr (kFamily == Family::kAdam) {
    o.beta1 = p.get_float("beta1", 0.9);
    o.beta2 = p.get_float("beta2", 0.999);
    o.epsilon = p.get_float("epsilon", 1e-8);
  }
  return o;
}

// The mixed-precision forms: weight and grad share a dtype (float16 in practice), the state
// inputs (momentum, weight32) are float32, the output has the weight's dtype.
void mp_type(const ParsedParams& p, std::span<PartialDType> in, std::span<PartialDType> out) {
  if (!in[0] && out[0]) in[0] = out[0];
  if (!in[0] && in[1]) in[0] = in[1];
  if (!in[1]) in[1] = in[0];
  NANOMX_CHECK(!in[0] || *in[0] == *in[1])
      << p.op() << ": 'weight' has dtype " << dtype_name(*in[0]) << " but 'grad' has "
      << dtype_name(*in[1]);
  for (size_t i = 2; i < in.size(); ++i) {
    NANOMX_CHECK(!in[i] || *in[i] == DType::kFloat32)
        << p.op() << ": input " << i << " (the float32 state) has dtype " << dtype_name(*in[i])
        << ", expected float32";
    in[i] = DType::kFloat32;
  }
  if (in[0]) {
    NANOMX_CHECK(!out[0] || *out[0] == *in[0])
        << p.op() << ": the output has dtype " << dtype_name(*out[0]) << " but 'weight' has "
        << dtype_name(*in[0]);
    out[0] = in[0];
  }
}

template <Family kFamily>
Op update_op(const char* name, std::vector<std::string> inputs, std::vector<int> mutated) {
  return {.name = name,
          .inputs = std::move(inputs),
          .keys = keys_of(kFamily),
          .parse = parser(parse_optimizer<kFamily>),
          .inplace = {{0, 0}},
          .backward = {.differentiable = false},
          .mutate_inputs = std::move(mutated)};
}

template <bool kMomentum>
MultiSgdParams parse_multi_sgd(const Params& p) {
  MultiSgdParams m;
  NANOMX_CHECK(p.has("lrs")) << p.op() << ": required attribute 'lrs' is missing";
  NANOMX_CHECK(p.has("wds")) << p.op() << ": required attribute 'wds' is missing";
  m.lrs = *p.get_floats("lrs");
  m.wds = *p.get_floats("wds");
  // Without num_weights (MXNet's default is 1) the rates say how many: a symbol is made before
  // its inputs are known, and the count is then filled in from them.
  m.num_weights = static_cast<int>(p.get_int("num_weights", static_cast<int64_t>(m.lrs.size())));
  NANOMX_CHECK(m.num_weights >= 1)
      << p.op() << ": num_weights must be at least 1, got " << m.num_weights;
  NANOMX_CHECK(m.lrs.size() == static_cast<size_t>(m.num_weights) &&
               m.wds.size() == static_cast<size_t>(m.num_weights))
      << p.op() << ": 'lrs' has " << m.lrs.size() << " and 'wds' " << m.wds.size()
      << " entries, expected num_weights = " << m.num_weights << " each";
  m.rescale_grad = p.get_float("rescale_grad", 1.0);
  m.clip_gradient = p.get_float("clip_gradient", -1.0);
  if constexpr (kMomentum) m.momentum = p.get_float("momentum", 0.0);
  return m;
}

// Each group (weight, grad[, mom]) has one shape, which is its output's.
template <int kGroup>
void multi_infer_shape(const ParsedParams& pp, std::span<PartialShape> in,
                       std::span<PartialShape> out) {
  const auto& m = pp.get<MultiSgdParams>();
  NANOMX_CHECK(in.size() == static_cast<size_t>(m.num_weights) * kGroup)
      << pp.op() << ": num_weights = " << m.num_weights << " needs " << m.num_weights * kGroup
      << " inputs (" << (kGroup == 3 ? "weight, grad, mom" : "weight, grad") << " per weight), got "
      << in.size();
  for (int g = 0; g < m.num_weights; ++g) {
    PartialShape s = out[g];
    for (int k = 0; k < kGroup; ++k) {
      NANOMX_CHECK(merge_shape(s, in[g * kGroup + k]))
          << pp.op() << ": weight " << g << ": shapes " << s.str() << " and "
          << in[g * kGroup + k].str() << " do not match";
    }
    for (int k = 0; k < kGroup; ++k) in[g * kGroup + k] = s;
    out[g] = s;
  }
}

template <int kGroup>
void multi_infer_type(const ParsedParams& pp, std::span<PartialDType> in,
                      std::span<PartialDType> out) {
  const size_t groups = out.size();
  for (size_t g = 0; g < groups && (g + 1) * kGroup <= in.size(); ++g) {
    PartialDType t = out[g];
    for (int k = 0; k < kGroup; ++k) {
      const PartialDType& x = in[g * kGroup + k];
      if (!x) continue;
      NANOMX_CHECK(!t || *t == *x) << pp.op() << ": weight " << g << ": dtypes " << dtype_name(*t)
                                   << " and " << dtype_name(*x) << " differ";
      t = x;
    }
    for (int k = 0; k < kGroup; ++k) in[g * kGroup + k] = t;
    out[g] = t;
  }
}

template <bool kMomentum>
Op multi_sgd_op(const char* name) {
  constexpr int kGroup = kMomentum ? 3 : 2;
  std::vector<std::string> keys = {"lrs", "wds", "rescale_grad", "clip_gradient", "num_weights"};
  if (kMomentum) keys.push_back("momentum");
  return {.name = name,
          .inputs = {"data"},
          .keys = std::move(keys),
          .num_inputs_key = "num_weights",
          .input_group = kGroup,
          .parse = parser(parse_multi_sgd<kMomentum>),
          .infer_shape = multi_infer_shape<kGroup>,
          .infer_type = multi_infer_type<kGroup>,
          .num_outputs = [](const ParsedParams& p) { return p.get<MultiSgdParams>().num_weights; },
          .inplace = {{0, 0}},
          .backward = {.differentiable = false},
          .mutate_inputs = kMomentum ? std::vector<int>{2} : std::vector<int>{}};
}

}  // namespace

void register_optimizer_ops(Registry& r) {
  r.add(multi_sgd_op<false>("multi_sgd_update"));
  r.add(multi_sgd_op<true>("multi_sgd_mom_update"));
  register_same_shape(r, update_op<Family::kSgd>("sgd_update", {"weight", "grad"}, {}));
  register_same_shape(r,
                      update_op<Family::kSgdMom>("sgd_mom_update", {"weight", "grad", "mom"}, {2}));
  register_same_shape(
      r, update_op<Family::kAdam>("adam_update", {"weight", "grad", "mean", "var"}, {2, 3}));
  Op mp = update_op<Family::kSgd>("mp_sgd_update", {"weight", "grad", "weight32"}, {2});
  mp.infer_type = mp_type;
  register_same_shape(r, std::move(mp));
  Op mp_mom = update_op<Family::kSgdMom>("mp_sgd_mom_update", {"weight", "grad", "mom", "weight32"},
                                         {2, 3});
  mp_mom.infer_type = mp_type;
  register_same_shape(r, std::move(mp_mom));
}

}  // namespace nanomx::ops
