// _random_uniform and _random_normal definitions: no inputs, the generator's state written as
// a further engine variable. CPU kernels: cpu/random.cc.
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

}  // namespace

void register_random_ops(Registry& r) {
  r.add(random_op<true>("_random_uniform", {"low", "high", "shape", "dtype", "ctx"}),
        {"uniform", "random_uniform"});
  r.add(random_op<false>("_random_normal", {"loc", "scale", "shape", "dtype", "ctx"}),
        {"normal", "random_normal"});
}

}  // namespace nanomx::ops
