// _random_uniform and _random_normal: one process-wide seedable generator (mt19937_64), its state
// ordered by its own engine variable so that results follow push order.
#include <cmath>
#include <numbers>
#include <random>

#include "ops/cpu/kernels.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

struct RandomState {
  std::mt19937_64 generator{0};
  engine::VarHandle var = nullptr;
};

RandomState& random_state() {
  static RandomState* state = [] {
    auto* s = new RandomState;  // lives for the process, as its engine variable
    s->var = engine::Engine::get().new_variable();
    return s;
  }();
  return *state;
}

double uniform01(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

enum class Distribution { kUniform, kNormal };

template <Distribution D>
Plan plan_random(const Params& p, std::span<const NDArray>, const NDArray* given) {
  const char* op = D == Distribution::kUniform ? "_random_uniform" : "_random_normal";
  const double a = D == Distribution::kUniform ? p.get_float("low", 0.0) : p.get_float("loc", 0.0);
  const double b =
      D == Distribution::kUniform ? p.get_float("high", 1.0) : p.get_float("scale", 1.0);
  if constexpr (D == Distribution::kUniform) {
    NANOMX_CHECK(a <= b) << op << ": 'low' (" << a << ") is greater than 'high' (" << b << ")";
  } else {
    NANOMX_CHECK(b >= 0) << op << ": 'scale' (" << b << ") is negative";
  }
  Plan plan;
  plan.shape = p.has("shape") || !given ? p.get_shape("shape") : given->shape();
  plan.dtype = p.get_dtype("dtype", given ? given->dtype() : DType::kFloat32);
  NANOMX_CHECK(plan.dtype == DType::kFloat32 || plan.dtype == DType::kFloat64 ||
               plan.dtype == DType::kFloat16)
      << op << ": dtype " << dtype_name(plan.dtype)
      << " is not supported (valid: float32, float64, float16)";
  plan.ctx = parse_ctx(p);
  RandomState* state = &random_state();
  plan.extra_writes.push_back(state->var);
  plan.kernel = [a, b, state](std::span<const NDArray>, const NDArray& out) {
    dispatch_dtype(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* o = out.data_as<T>();
      const int64_t n = out.size();
      auto& g = state->generator;
      if constexpr (D == Distribution::kUniform) {
        for (int64_t i = 0; i < n; ++i) o[i] = from_double<T>(a + (b - a) * uniform01(g));
      } else {
        for (int64_t i = 0; i < n; i += 2) {  // Box-Muller, two values per pair
          const double u1 = 1.0 - uniform01(g), u2 = uniform01(g);
          const double r = std::sqrt(-2.0 * std::log(u1));
          o[i] = from_double<T>(a + b * r * std::cos(2 * std::numbers::pi * u2));
          if (i + 1 < n) o[i + 1] = from_double<T>(a + b * r * std::sin(2 * std::numbers::pi * u2));
        }
      }
    });
  };
  return plan;
}

}  // namespace

void seed_random(uint64_t seed) {
  RandomState* state = &random_state();
  const engine::VarHandle writes[] = {state->var};
  engine::Engine::get().push([state, seed] { state->generator.seed(seed); }, Context::cpu(0), {},
                             writes);
}

void register_random_ops(Registry& r) {
  r.add({.name = "_random_uniform",
         .inputs = {},
         .keys = {"low", "high", "shape", "dtype", "ctx"},
         .plan = plan_random<Distribution::kUniform>},
        {"uniform", "random_uniform"});
  r.add({.name = "_random_normal",
         .inputs = {},
         .keys = {"loc", "scale", "shape", "dtype", "ctx"},
         .plan = plan_random<Distribution::kNormal>},
        {"normal", "random_normal"});
}

}  // namespace nanomx::ops
