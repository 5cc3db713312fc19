// The gradient graph (gradient_graph.h): a graph builder for the operators' gradient rules and
// the reverse walk that feeds it.
#include "symbol/gradient_graph.h"

#include <cstdlib>
#include <string>
#include <unordered_map>
#include <utility>

#include "nanomx/error.h"
#include "ops/gradient.h"
#include "ops/registry.h"

namespace nanomx::symbol {
namespace {

bool hidden_key(const std::string& key) {
  return key.size() > 4 && key.starts_with("__") && key.ends_with("__");
}

std::shared_ptr<Node> make_node(const ops::Op& op, std::string name, std::vector<NodeEntry> inputs,
                                const ops::Attrs& attrs = {}) {
  auto n = std::make_shared<Node>();
  n->op = &op;
  n->name = std::move(name);
  for (const auto& [k, v] : attrs) n->attrs[k] = v;
  n->inputs = std::move(inputs);
  n->reparse();
  return n;
}

// A zero gradient shaped like `like` (MXNet's zeros_like node).
NodeEntry zeros_like(const NodeEntry& like, const std::string& name) {
  return {make_node(ops::get_op("zeros_like"), name, {like}), 0, 0};
}

size_t grad_sum_cap() {
  const char* v = std::getenv("MXNET_EXEC_INPLACE_GRAD_SUM_CAP");
  if (v == nullptr || *v == '\0') return 8;
  const long n = std::strtol(v, nullptr, 10);
  return n > 0 ? static_cast<size_t>(n) : 8;
}

// The sum of the gradients flowing into one entry; a null node when none flows.
NodeEntry aggregate(std::vector<NodeEntry> terms) {
  if (terms.empty()) return {};
  if (terms.size() == 1) return terms[0];
  if (terms.size() < grad_sum_cap()) {
    const ops::Attrs attrs = {{"num_args", std::to_string(terms.size())}};
    return {make_node(ops::get_op("ElementWiseSum"), "sum_grad", std::move(terms), attrs), 0, 0};
  }
  // Many terms: a chain of pairwise sums (MXNet's _grad_add chain, for in-place accumulation).
  const ops::Op* add = ops::find_op("_grad_add");
  const ops::Attrs attrs = add ? ops::Attrs{} : ops::Attrs{{"num_args", "2"}};
  if (add == nullptr) add = &ops::get_op("ElementWiseSum");
  NodeEntry sum = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    sum = {make_node(*add, "sum_grad_" + std::to_string(i), {sum, terms[i]}, attrs), 0, 0};
  }
  return sum;
}

// Adds nodes to the graph; values are entries in a list (forward inputs, forward outputs, output
// gradients, then whatever the rule adds).
class GraphBuilder final : public ops::GradientBuilder {
 public:
  // `inputs`: the forward node's inputs as the backward nodes read them.
  GraphBuilder(std::shared_ptr<Node> fwd, std::vector<NodeEntry> inputs,
               std::vector<NodeEntry> out_grads)
      : fwd_(std::move(fwd)), out_grads_(std::move(out_grads)) {
    for (const auto& [k, v] : fwd_->attrs) {
      if (!hidden_key(k)) attrs_.emplace_back(k, v);
    }
    for (NodeEntry& e : inputs) values_.push_back(std::move(e));
    for (uint32_t i = 0; i < fwd_->num_outputs(); ++i) values_.push_back({fwd_, i, 0});
    grad_base_ = values_.size();
    for (size_t i = 0; i < out_grads_.size(); ++i) values_.emplace_back();  // made on demand
  }

  const ops::Op& op() const override { return *fwd_->op; }
  const ops::ParsedParams& params() const override { return fwd_->parsed; }
  const ops::Attrs& attrs() const override { return attrs_; }
  int num_inputs() const override { return static_cast<int>(fwd_->inputs.size()); }
  int num_outputs() const override { return static_cast<int>(fwd_->num_outputs()); }
  ops::GradValue input(int i) override { return at(i, num_inputs(), 0, "input"); }
  ops::GradValue output(int i) override { return at(i, num_outputs(), num_inputs(), "output"); }
  ops::GradValue out_grad(int i) override {
    const ops::GradValue v = at(i, num_outputs(), static_cast<int>(grad_base_), "output gradient");
    NodeEntry& slot = values_[static_cast<size_t>(v.id)];
    if (!slot.node) {
      slot = out_grads_[static_cast<size_t>(i)].node
                 ? out_grads_[static_cast<size_t>(i)]
                 : zeros_like({fwd_, static_cast<uint32_t>(i), 0},
                              fwd_->name + "_out" + std::to_string(i) + "_zeros");
    }
    return v;
  }
  std::vector<ops::GradValue> add(std::string_view name, const ops::Attrs& attrs,
                                  std::vector<ops::GradValue> inputs) override {
    std::vector<NodeEntry> in;
    in.reserve(inputs.size());
    for (ops::GradValue v : inputs) {
      NANOMX_CHECK(v.valid() && static_cast<size_t>(v.id) < values_.size() &&
                   values_[static_cast<size_t>(v.id)].node)
          << fwd_->op->name << ": gradient rule passed an invalid value to " << name;
      in.push_back(values_[static_cast<size_t>(v.id)]);
    }
    // The first node a rule adds is MXNet's "<name>_backward", ordered after the forward node.
    std::string node_name = fwd_->name + "_backward";
    if (added_ > 0) node_name += "_" + std::to_string(added_);
    std::shared_ptr<Node> n;
    try {
      n = make_node(ops::get_op(name), std::move(node_name), std::move(in), attrs);
    } catch (const Error& e) {
      NANOMX_THROW() << "gradient of " << fwd_->name << " (" << fwd_->op->name << "): " << e.what();
    }
    // Gradient nodes belong to their forward node's profiler scope (MXNet copies the attribute):
    // `tensordot:dot_backward` in the GPU memory profile.
    if (auto it = fwd_->attrs.find(kProfilerScopeAttr); it != fwd_->attrs.end())
      n->attrs.try_emplace(kProfilerScopeAttr, it->second);
    if (added_ == 0) n->control_deps.push_back(fwd_);
    ++added_;
    std::vector<ops::GradValue> out;
    for (uint32_t i = 0; i < n->num_outputs(); ++i) {
      out.push_back({static_cast<int32_t>(values_.size())});
      values_.push_back({n, i, 0});
    }
    return out;
  }
  const NodeEntry& value(ops::GradValue v) const { return values_.at(static_cast<size_t>(v.id)); }

 private:
  ops::GradValue at(int i, int count, int base, const char* what) const {
    NANOMX_CHECK(i >= 0 && i < count)
        << fwd_->op->name << ": gradient rule asked for " << what << " " << i << " of " << count;
    return {base + i};
  }
  std::shared_ptr<Node> fwd_;
  std::vector<NodeEntry> out_grads_;
  ops::Attrs attrs_;
  std::vector<NodeEntry> values_;
  size_t grad_base_ = 0;
  int added_ = 0;
};

struct EntryKey {
  const Node* node;
  uint32_t index;
  bool operator==(const EntryKey& o) const { return node == o.node && index == o.index; }
};
struct EntryHash {
  size_t operator()(const EntryKey& k) const {
    return std::hash<const void*>()(k.node) * 31 + k.index;
  }
};

}  // namespace

bool default_mirror(const Node& node, bool env_mirror) {
  if (node.is_variable() || node.op->name == "Dropout") return false;
  if (auto it = node.attrs.find("__force_mirroring__"); it != node.attrs.end()) {
    const std::string& v = it->second;
    if (v == "True" || v == "true" || v == "1") return true;
  }
  if (!env_mirror) return false;
  const std::string& op = node.op->name;
  return op != "Convolution" && op != "FullyConnected" && op != "Concat" && op != "SoftmaxOutput" &&
         op != "Softmax";
}

GradientGraph build_gradient_graph(const Symbol& forward, const std::vector<NodeEntry>& xs,
                                   const MirrorFn& mirror) {
  const std::vector<Node*> topo = forward.topo_order();
  // Owning pointers of every node (topo_order gives raw ones).
  std::unordered_map<const Node*, std::shared_ptr<Node>> owner;
  for (const NodeEntry& e : forward.outputs) owner[e.node.get()] = e.node;
  for (Node* n : topo) {
    for (const NodeEntry& e : n->inputs) owner[e.node.get()] = e.node;
    for (const auto& d : n->control_deps) owner[d.get()] = d;
  }
  // Mirrors: copies of the chosen nodes, inputs rewired to the mirrors of their producers.
  std::unordered_map<const Node*, std::shared_ptr<Node>> mapped;
  for (Node* n : topo) {
    if (mirror && !n->is_variable() && mirror(*n)) {
      auto m = std::make_shared<Node>(*n);
      m->name += "_mirror";
      for (NodeEntry& e : m->inputs) e.node = mapped.at(e.node.get());
      for (auto& d : m->control_deps) d = mapped.at(d.get());
      mapped[n] = std::move(m);
    } else {
      mapped[n] = owner.at(n);
    }
  }

  std::unordered_map<EntryKey, std::vector<NodeEntry>, EntryHash> flowing;
  GradientGraph g;
  const ops::Op* id_op = ops::find_op("_identity_with_attr_like_rhs");
  for (size_t i = 0; i < forward.outputs.size(); ++i) {
    auto var = std::make_shared<Node>();
    var->name = "_head_grad_" + std::to_string(i);
    g.head_grads.push_back(var);
    NodeEntry head{var, 0, 0};
    // MXNet wraps the head gradient so that it takes the output's shape and dtype.
    if (id_op != nullptr) {
      head = {make_node(*id_op, var->name + "_id", {head, forward.outputs[i]}), 0, 0};
    }
    const NodeEntry& out = forward.outputs[i];
    flowing[{out.node.get(), out.index}].push_back(head);
  }

  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    Node* n = *it;
    if (n->is_variable()) continue;
    std::vector<NodeEntry> out_grads(n->num_outputs());
    bool any = false;
    for (uint32_t i = 0; i < n->num_outputs(); ++i) {
      auto f = flowing.find({n, i});
      if (f == flowing.end()) continue;
      out_grads[i] = aggregate(std::move(f->second));
      flowing.erase(f);
      any = any || out_grads[i].node != nullptr;
    }
    if (!any) continue;  // nothing flows back through this node
    const ops::GradientFn* rule = ops::find_gradient(*n->op);
    NANOMX_CHECK(rule != nullptr) << "Operator " << n->op->name
                                  << " is non-differentiable because it didn't register "
                                     "FGradient attribute.";
    // Backward nodes read the mirrors of mirrored inputs, for every node (nnvm rewires only the
    // mirrors' own inputs): then no backward node reads a mirrored node's forward output, whose
    // buffer is free as soon as its forward consumers ran, which is the point of mirroring.
    std::vector<NodeEntry> inputs;
    for (const NodeEntry& e : n->inputs)
      inputs.push_back({mapped.at(e.node.get()), e.index, e.version});
    GraphBuilder b(mapped.at(n), std::move(inputs), std::move(out_grads));
    const std::vector<ops::GradValue> in_grads = (*rule)(b);
    NANOMX_CHECK(in_grads.size() == n->inputs.size())
        << n->op->name << ": gradient rule returned " << in_grads.size() << " gradients for "
        << n->inputs.size() << " inputs (node " << n->name << ")";
    for (size_t i = 0; i < in_grads.size(); ++i) {
      if (!in_grads[i].valid()) continue;
      const NodeEntry& e = n->inputs[i];
      flowing[{e.node.get(), e.index}].push_back(b.value(in_grads[i]));
    }
  }

  for (const NodeEntry& x : xs) {
    auto f = flowing.find({x.node.get(), x.index});
    NodeEntry grad = f == flowing.end() ? NodeEntry{} : aggregate(f->second);
    if (!grad.node) grad = zeros_like(x, "zeros_like");
    g.grads.push_back(grad);
  }
  return g;
}

}  // namespace nanomx::symbol
