// Inference fusion of Convolution chains (symbol/fuse.h).
#include "symbol/fuse.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ops/fused_convolution.h"
#include "ops/nn.h"
#include "ops/normalization.h"
#include "ops/registry.h"

namespace nanomx::symbol {
namespace {

// Copies every operator node reachable from `sym` (inputs rewired to the copies); variables are
// shared.
Symbol clone_operators(const Symbol& sym) {
  std::unordered_map<const Node*, std::shared_ptr<Node>> copies;
  auto copy_of = [&](const std::shared_ptr<Node>& n) -> std::shared_ptr<Node> {
    if (n->is_variable()) return n;
    return copies.at(n.get());
  };
  for (Node* n : sym.topo_order()) {
    if (n->is_variable()) continue;
    auto c = std::make_shared<Node>(*n);
    for (NodeEntry& e : c->inputs) e.node = copy_of(e.node);
    for (auto& d : c->control_deps) d = copy_of(d);
    copies.emplace(n, std::move(c));
  }
  Symbol out;
  for (const NodeEntry& e : sym.outputs)
    out.outputs.push_back({copy_of(e.node), e.index, e.version});
  return out;
}

struct Reader {
  Node* node;  // null: an output of the symbol
  size_t input;
};

// Who reads each (node, output index): other nodes' inputs and the symbol's outputs.
std::map<std::pair<const Node*, uint32_t>, std::vector<Reader>> readers_of(const Symbol& sym) {
  std::map<std::pair<const Node*, uint32_t>, std::vector<Reader>> readers;
  for (Node* n : sym.topo_order()) {
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      readers[{n->inputs[i].node.get(), n->inputs[i].index}].push_back({n, i});
    }
  }
  for (const NodeEntry& e : sym.outputs) readers[{e.node.get(), e.index}].push_back({nullptr, 0});
  return readers;
}

bool is_op(const Node* n, std::string_view name) {
  return n != nullptr && !n->is_variable() && n->op->name == name;
}

bool is_relu(const Node* n) {
  return is_op(n, "Activation") &&
         n->parsed.get<ops::ActivationParams>().act == ops::ActType::kRelu;
}

// The one node reading output 0 of `n` as its input `input` (any input when -1), or null.
Node* only_reader(const std::map<std::pair<const Node*, uint32_t>, std::vector<Reader>>& readers,
                  const Node* n) {
  auto it = readers.find({n, 0});
  if (it == readers.end() || it->second.size() != 1) return nullptr;
  return it->second[0].node;
}

bool unread(const std::map<std::pair<const Node*, uint32_t>, std::vector<Reader>>& readers,
            const Node* n, uint32_t index) {
  auto it = readers.find({n, index});
  return it == readers.end() || it->second.empty();
}

// Folds the chain that starts at Convolution `conv`; false when there is nothing to fold.
bool fuse_chain(Symbol& sym, const std::shared_ptr<Node>& conv) {
  const auto readers = readers_of(sym);
  std::vector<Node*> chain = {conv.get()};
  Node* bn = nullptr;
  NodeEntry residual;
  bool relu = false;
  Node* next = only_reader(readers, conv.get());
  if (is_op(next, "BatchNorm") && next->inputs[0].node == conv) {
    const auto& p = next->parsed.get<ops::BatchNormParams>();
    if (p.axis == 1 && !p.output_mean_var && unread(readers, next, 1) && unread(readers, next, 2)) {
      bn = next;
      chain.push_back(bn);
      next = only_reader(readers, bn);
    }
  }
  if (is_op(next, "elemwise_add") && next->inputs.size() == 2) {
    const Node* last = chain.back();
    const bool first = next->inputs[0].node.get() == last && next->inputs[0].index == 0;
    const bool second = next->inputs[1].node.get() == last && next->inputs[1].index == 0;
    if (first != second) {  // the other operand is the residual (not the chain itself)
      residual = next->inputs[first ? 1 : 0];
      chain.push_back(next);
      next = only_reader(readers, next);
    }
  }
  if (is_relu(next)) {
    relu = true;
    chain.push_back(next);
  }
  if (chain.size() == 1) return false;

  auto fused = std::make_shared<Node>();
  fused->op = &ops::get_op(ops::kFusedConvOp);
  fused->name = conv->name;
  fused->attrs = conv->attrs;
  fused->inputs = conv->inputs;
  std::string names;
  for (const Node* n : chain) names += (names.empty() ? "" : ",") + n->name;
  fused->attrs["fused_nodes"] = names;
  if (bn != nullptr) {
    const auto& p = bn->parsed.get<ops::BatchNormParams>();
    fused->attrs["with_bn"] = "True";
    char eps[32];
    std::snprintf(eps, sizeof eps, "%.17g", p.eps);
    fused->attrs["bn_eps"] = eps;
    fused->attrs["bn_fix_gamma"] = p.fix_gamma ? "True" : "False";
    for (size_t i = 1; i < 5; ++i) fused->inputs.push_back(bn->inputs[i]);
  }
  if (residual.node) {
    fused->attrs["with_sum"] = "True";
    fused->inputs.push_back(residual);
  }
  if (relu) fused->attrs["with_relu"] = "True";
  fused->reparse();

  // Every reader of the chain's last value now reads the fused node.
  const Node* last = chain.back();
  const NodeEntry replacement{fused, 0, 0};
  for (Node* n : sym.topo_order()) {
    for (NodeEntry& e : n->inputs) {
      if (e.node.get() == last && e.index == 0) e = replacement;
    }
  }
  for (NodeEntry& e : sym.outputs) {
    if (e.node.get() == last && e.index == 0) e = replacement;
  }
  return true;
}

}  // namespace

bool fusion_enabled_by_env() {
  const char* v = std::getenv("NANOMX_FUSE");
  return v == nullptr || std::string_view(v) != "0";
}

std::optional<Symbol> fuse_for_inference(const Symbol& sym) {
  Symbol out = clone_operators(sym);
  // Owning pointers of the convolutions, in graph order (each fusion leaves the others' nodes
  // in place, so the list stays valid).
  std::vector<std::shared_ptr<Node>> convs;
  {
    std::unordered_map<const Node*, std::shared_ptr<Node>> owner;
    for (Node* n : out.topo_order()) {
      for (const NodeEntry& e : n->inputs) owner.emplace(e.node.get(), e.node);
    }
    for (const NodeEntry& e : out.outputs) owner.emplace(e.node.get(), e.node);
    for (Node* n : out.topo_order()) {
      if (is_op(n, "Convolution")) convs.push_back(owner.at(n));
    }
  }
  bool any = false;
  for (const auto& conv : convs) any = fuse_chain(out, conv) || any;
  if (!any) return std::nullopt;
  return out;
}

}  // namespace nanomx::symbol
