// Every operator's gradient rule (ops/gradient.h), in one place so that the rules read as the
// table of derivatives they are. docs/symbolic.md lists them.
#include <string>
#include <vector>

#include "ops/gradient.h"
#include "ops/registry.h"

namespace nanomx::ops {

void register_gradient_rules() {
  // d(x + s) = g: no backward call, the output gradient is the input's.
  register_gradient("_plus_scalar",
                    [](GradientBuilder& b) { return std::vector<GradValue>{b.out_grad(0)}; });
  // d(x * s) = g * s, the same operator with the forward call's attributes.
  register_gradient("_mul_scalar", [](GradientBuilder& b) {
    return std::vector<GradValue>{b.add1("_mul_scalar", b.attrs(), {b.out_grad(0)})};
  });
}

}  // namespace nanomx::ops
