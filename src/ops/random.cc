// Random operator definitions, as MXNet 1.9.1 names and parameterises them
// (docs/mxnet-compat.md#operators): _random_uniform, _random_normal, _random_exponential,
// _random_gamma, _random_poisson, _random_randint (number parameters), _sample_uniform,
// _sample_normal, _sample_gamma, _sample_exponential, _sample_poisson (array parameters: one
// draw set per element, the output shape the parameters' shape + 'shape'), _sample_multinomial
// and _shuffle. Every one writes the process-wide generator's state, a further engine variable,
// so results follow push order. CPU kernels: backends/cpu/kernels/random.cc.
#include "ops/op_params.h"
#include "ops/registry.h"

namespace nanomx::ops {

RandomState& random_state() {
  static RandomState* state = [] {
    auto* s = new RandomState;  // lives for the process, as its engine variable
    // Orders the random operators; a failed one (bad parameters) leaves later ones working.
    s->var = engine::Engine::get().new_ordering_variable();
    return s;
  }();
  return *state;
}

void seed_random(uint64_t seed) {
  RandomState* state = &random_state();
  const engine::VarHandle writes[] = {state->var};
  engine::Engine::get().push([state, seed] { state->generator.seed(seed); }, Context::cpu(0), {},
                             writes);
}

namespace {

template <bool kUniform>
RandomParams parse_random(const Params& p) {
  const char* op = kUniform ? "_random_uniform" : "_random_normal";
  RandomParams r;
  r.a = kUniform ? p.get_float("low", 0.0) : p.get_float("loc", 0.0);
  r.b = kUniform ? p.get_float("high", 1.0) : p.get_float("scale", 1.0);
  if constexpr (kUniform) {
    NANOMX_CHECK(r.a <= r.b) << op << ": 'low' (" << r.a << ") is greater than 'high' (" << r.b
                             << ")";
  } else {
    NANOMX_CHECK(r.b >= 0) << op << ": 'scale' (" << r.b << ") is negative";
  }
  if (p.has("shape")) r.shape = p.get_shape("shape");
  if (p.has("dtype") && p.get_string("dtype") != "None") {
    r.dtype = p.get_dtype("dtype", DType::kFloat32);
  }
  r.ctx = parse_ctx(p);
  return r;
}

template <bool kUniform>
Op random_op(const char* name, std::vector<std::string> keys) {
  return {.name = name,
          .inputs = {},
          .keys = std::move(keys),
          .parse = parser(parse_random<kUniform>),
          .infer_shape =
              [](const ParsedParams& p, std::span<PartialShape>, std::span<PartialShape> out) {
                const auto& r = p.get<RandomParams>();
                if (r.shape) {
                  out[0] = *r.shape;
                } else {
                  NANOMX_CHECK(out[0].rank_known())
                      << p.op() << ": required attribute 'shape' is missing";
                }
              },
          .infer_type =
              [](const ParsedParams& p, std::span<PartialDType>, std::span<PartialDType> out) {
                const auto& r = p.get<RandomParams>();
                const DType d = r.dtype ? *r.dtype : out[0] ? *out[0] : DType::kFloat32;
                NANOMX_CHECK(d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16)
                    << p.op() << ": dtype " << dtype_name(d)
                    << " is not supported (valid: float32, float64, float16)";
                out[0] = d;
              },
          .backward = {.differentiable = false},
          .state_var = [] { return random_state().var; },
          .default_context = [](const ParsedParams& p) { return p.get<RandomParams>().ctx; }};
}

void parse_common(const Params& p, SampleParams& s) {
  if (p.has("shape")) s.shape = p.get_shape("shape");
  if (p.has("dtype") && p.get_string("dtype") != "None") {
    s.dtype = p.get_dtype("dtype", DType::kFloat32);
  }
  if (p.has("ctx")) s.ctx = parse_ctx(p);
}

void check_float(const std::string& op, DType d) {
  NANOMX_CHECK(d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16)
      << op << ": Output type must be float16, float32, float64: got " << dtype_name(d);
}

// _random_<d>: numbers for parameters, 'shape' required (or the caller's output).
Op random_op(const char* name, std::vector<std::string> keys, SampleParams (*parse)(const Params&),
             bool integer) {
  return {
      .name = name,
      .inputs = {},
      .keys = std::move(keys),
      .parse = parser(parse),
      .infer_shape = shape_from_attribute<SampleParams>,
      .infer_type =
          [integer](const ParsedParams& p, std::span<PartialDType>, std::span<PartialDType> out) {
            const auto& s = p.get<SampleParams>();
            const DType fallback = integer ? DType::kInt32 : DType::kFloat32;
            const DType d = s.dtype ? *s.dtype : out[0] ? *out[0] : fallback;
            if (integer) {
              NANOMX_CHECK(d == DType::kInt32 || d == DType::kInt64)
                  << p.op() << ": dtype " << dtype_name(d)
                  << " is not supported (valid: int32, int64)";
            } else {
              check_float(p.op(), d);
            }
            out[0] = d;
          },
      .backward = {.differentiable = false},
      .state_var = [] { return random_state().var; },
      .default_context = [](const ParsedParams& p) { return p.get<SampleParams>().ctx; }};
}

// _sample_<d>: one or two parameter arrays of one shape and dtype.
Op sample_op(const char* name, std::vector<std::string> inputs) {
  return {.name = name,
          .inputs = std::move(inputs),
          .keys = {"shape", "dtype"},
          .parse = parser(+[](const Params& p) {
            SampleParams s;
            parse_common(p, s);
            return s;
          }),
          .infer_shape =
              [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
                for (size_t i = 1; i < in.size(); ++i) {
                  if (in[0].known() && in[i].known()) {
                    NANOMX_CHECK(in[0] == in[i])
                        << p.op() << ": the parameter arrays must "
                        << "share one shape, got " << in[0] << " and " << in[i];
                  }
                }
                if (!in[0].known()) return;
                Shape s = in[0].shape();
                const auto& sp = p.get<SampleParams>();
                if (sp.shape) {
                  for (int64_t d : sp.shape->dims()) s.push_back(d);
                }
                out[0] = s;
              },
          .infer_type =
              [](const ParsedParams& p, std::span<PartialDType> in, std::span<PartialDType> out) {
                for (size_t i = 1; i < in.size(); ++i) {
                  NANOMX_CHECK(!in[0] || !in[i] || in[0] == in[i])
                      << p.op() << ": the parameter arrays must share one dtype, got "
                      << dtype_name(*in[0]) << " and " << dtype_name(*in[i]);
                }
                const auto& s = p.get<SampleParams>();
                const DType d = s.dtype ? *s.dtype : DType::kFloat32;
                check_float(p.op(), d);
                out[0] = d;
              },
          .backward = {.differentiable = false},
          .state_var = [] { return random_state().var; }};
}

template <int kKind>
SampleParams parse_random(const Params& p) {
  SampleParams s;
  switch (kKind) {
    case 0:  // exponential
      s.a = p.get_float("lam", 1.0);
      NANOMX_CHECK(s.a > 0) << p.op() << ": 'lam' (" << s.a << ") must be positive";
      break;
    case 1:  // gamma
      s.a = p.get_float("alpha", 1.0);
      s.b = p.get_float("beta", 1.0);
      NANOMX_CHECK(s.a > 0 && s.b > 0)
          << p.op() << ": 'alpha' (" << s.a << ") and 'beta' (" << s.b << ") must be positive";
      break;
    case 2:  // poisson
      s.a = p.get_float("lam", 1.0);
      NANOMX_CHECK(s.a >= 0) << p.op() << ": 'lam' (" << s.a << ") must be non-negative";
      break;
    default:  // randint
      s.a = static_cast<double>(p.get_int("low"));
      s.b = static_cast<double>(p.get_int("high"));
      NANOMX_CHECK(s.a < s.b) << p.op() << ": 'low' (" << s.a << ") must be less than 'high' ("
                              << s.b << ")";
  }
  parse_common(p, s);
  return s;
}

}  // namespace

void register_random_ops(Registry& r) {
  r.add(random_op<true>("_random_uniform", {"low", "high", "shape", "dtype", "ctx"}),
        {"uniform", "random_uniform"});
  r.add(random_op<false>("_random_normal", {"loc", "scale", "shape", "dtype", "ctx"}),
        {"normal", "random_normal"});
  r.add(random_op("_random_exponential", {"lam", "shape", "ctx", "dtype"}, parse_random<0>, false),
        {"random_exponential"});
  r.add(random_op("_random_gamma", {"alpha", "beta", "shape", "ctx", "dtype"}, parse_random<1>,
                  false),
        {"random_gamma"});
  r.add(random_op("_random_poisson", {"lam", "shape", "ctx", "dtype"}, parse_random<2>, false),
        {"random_poisson"});
  r.add(
      random_op("_random_randint", {"low", "high", "shape", "ctx", "dtype"}, parse_random<3>, true),
      {"random_randint"});
  r.add(sample_op("_sample_uniform", {"low", "high"}), {"sample_uniform"});
  r.add(sample_op("_sample_normal", {"mu", "sigma"}), {"sample_normal"});
  r.add(sample_op("_sample_gamma", {"alpha", "beta"}), {"sample_gamma"});
  r.add(sample_op("_sample_exponential", {"lam"}), {"sample_exponential"});
  r.add(sample_op("_sample_poisson", {"lam"}), {"sample_poisson"});
  r.add(
      {.name = "_sample_multinomial",
       .inputs = {"data"},
       .keys = {"shape", "get_prob", "dtype"},
       .parse = parser(+[](const Params& p) {
         SampleParams s;
         parse_common(p, s);
         s.get_prob = p.get_bool("get_prob", false);
         return s;
       }),
       .infer_shape =
           [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
             if (!in[0].known()) return;
             const Shape& d = in[0].shape();
             NANOMX_CHECK(d.ndim() >= 1) << "_sample_multinomial: 'data' must have at least "
                                            "one dimension, got "
                                         << d;
             std::vector<int64_t> s(d.begin(), d.end() - 1);
             const auto& sp = p.get<SampleParams>();
             if (sp.shape) s.insert(s.end(), sp.shape->begin(), sp.shape->end());
             if (s.empty()) s.push_back(1);
             for (PartialShape& o : out) o = Shape(s);
           },
       .infer_type =
           [](const ParsedParams& p, std::span<PartialDType> in, std::span<PartialDType> out) {
             const auto& s = p.get<SampleParams>();
             const DType d = s.dtype ? *s.dtype : DType::kInt32;
             NANOMX_CHECK(d != DType::kInt8 && d != DType::kInt64)
                 << "_sample_multinomial: dtype " << dtype_name(d)
                 << " is not supported (valid: uint8, int32, float16, float32, float64)";
             out[0] = d;
             if (out.size() > 1) out[1] = in[0];
           },
       .num_outputs = [](const ParsedParams& p) { return p.get<SampleParams>().get_prob ? 2 : 1; },
       .backward = {.differentiable = false},
       .state_var = [] { return random_state().var; }},
      {"sample_multinomial"});
  r.add({.name = "_shuffle",
         .inputs = {"data"},
         .keys = {},
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               PartialShape merged = in[0];
               merge_shape(merged, out[0]);
               out[0] = merged;
             },
         .backward = {.differentiable = false},
         .state_var = [] { return random_state().var; }},
        {"shuffle"});
}

}  // namespace nanomx::ops
