// The gradient rule table and the eager builder (gradient.h).
#include "ops/gradient.h"

#include <memory>
#include <string>
#include <vector>

#include "nanomx/error.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

// Row op.index. Written only while the registry is built (register_gradient_rules), read
// afterwards without a lock: the registry's static initialisation orders the two.
std::vector<std::unique_ptr<GradientFn>>& rules() {
  static std::vector<std::unique_ptr<GradientFn>> r;
  return r;
}

// Runs each added call at once; values are arrays in a list.
class EagerBuilder final : public GradientBuilder {
 public:
  EagerBuilder(const Op& op, const Attrs& attrs, std::span<const NDArray> inputs,
               std::span<const NDArray> outputs, std::span<const NDArray> out_grads)
      : op_(op), attrs_(attrs), params_(parse_attrs(op, attrs, inputs.size())) {
    values_.assign(inputs.begin(), inputs.end());
    values_.insert(values_.end(), outputs.begin(), outputs.end());
    for (size_t i = 0; i < outputs.size(); ++i) {
      const NDArray& g = i < out_grads.size() ? out_grads[i] : NDArray();
      // Nothing flowed into this output: its gradient is zeros of its shape.
      values_.push_back(g.is_none() ? invoke_one(get_op("zeros_like"), {&outputs[i], 1}, {}) : g);
    }
    num_inputs_ = static_cast<int>(inputs.size());
    num_outputs_ = static_cast<int>(outputs.size());
  }

  const Op& op() const override { return op_; }
  const ParsedParams& params() const override { return params_; }
  const Attrs& attrs() const override { return attrs_; }
  int num_inputs() const override { return num_inputs_; }
  int num_outputs() const override { return num_outputs_; }
  GradValue input(int i) override { return at(i, num_inputs_, 0, "input"); }
  GradValue output(int i) override { return at(i, num_outputs_, num_inputs_, "output"); }
  GradValue out_grad(int i) override {
    return at(i, num_outputs_, num_inputs_ + num_outputs_, "output gradient");
  }
  std::vector<GradValue> add(std::string_view name, const Attrs& attrs,
                             std::vector<GradValue> inputs) override {
    std::vector<NDArray> in;
    in.reserve(inputs.size());
    for (GradValue v : inputs) {
      NANOMX_CHECK(v.valid() && static_cast<size_t>(v.id) < values_.size())
          << op_.name << ": gradient rule passed an invalid value to " << name;
      in.push_back(values_[v.id]);
    }
    std::vector<GradValue> out;
    for (NDArray& a : invoke(get_op(name), in, attrs)) {
      out.push_back({static_cast<int32_t>(values_.size())});
      values_.push_back(std::move(a));
    }
    return out;
  }
  const NDArray& value(GradValue v) const { return values_.at(static_cast<size_t>(v.id)); }

 private:
  GradValue at(int i, int count, int base, const char* what) const {
    NANOMX_CHECK(i >= 0 && i < count)
        << op_.name << ": gradient rule asked for " << what << " " << i << " of " << count;
    return {base + i};
  }
  const Op& op_;
  const Attrs& attrs_;
  ParsedParams params_;
  int num_inputs_ = 0, num_outputs_ = 0;
  std::vector<NDArray> values_;
};

}  // namespace

void register_gradient(std::string_view name, GradientFn rule) {
  const Op* op = find_op(name);
  NANOMX_CHECK(op != nullptr) << "register_gradient: unknown operator '" << name << "'";
  NANOMX_CHECK(static_cast<bool>(rule)) << "register_gradient: empty rule for '" << op->name << "'";
  auto& r = rules();
  if (r.size() <= op->index) r.resize(op->index + 1);
  NANOMX_CHECK(r[op->index] == nullptr)
      << "register_gradient: '" << op->name << "' already has a gradient rule";
  r[op->index] = std::make_unique<GradientFn>(std::move(rule));
}

const GradientFn* find_gradient(const Op& op) {
  // `op` came from the registry, so the registry and with it every rule is already built.
  const auto& r = rules();
  return op.index < r.size() ? r[op.index].get() : nullptr;
}

std::vector<NDArray> gradient_eager(const Op& op, const Attrs& attrs,
                                    std::span<const NDArray> inputs,
                                    std::span<const NDArray> outputs,
                                    std::span<const NDArray> out_grads) {
  const GradientFn* rule = find_gradient(op);
  NANOMX_CHECK(rule != nullptr) << "Operator " << op.name
                                << " is non-differentiable because it has no gradient rule";
  EagerBuilder b(op, attrs, inputs, outputs, out_grads);
  const std::vector<GradValue> grads = (*rule)(b);
  NANOMX_CHECK(grads.size() == inputs.size())
      << op.name << ": gradient rule returned " << grads.size() << " gradients for "
      << inputs.size() << " inputs";
  std::vector<NDArray> result;
  result.reserve(grads.size());
  for (GradValue g : grads) result.push_back(g.valid() ? b.value(g) : NDArray());
  return result;
}

}  // namespace nanomx::ops
