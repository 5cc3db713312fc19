// The tape and backward (autograd/autograd.h).
#include "autograd/autograd.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nanomx/error.h"
#include "ops/gradient.h"
#include "ops/op.h"
#include "ops/train_mode.h"

namespace nanomx {

// One call on the tape, or a leaf (op == nullptr). Arrays saved here are detached copies (no
// entry of their own), so the graph has no cycles: an output's entry refers to its node, the
// node to its inputs' entries, and nothing refers back.
struct AutogradNode {
  const ops::Op* op = nullptr;
  ops::Attrs attrs;
  std::vector<NDArray> inputs;
  std::vector<NDArray> outputs;
  std::vector<std::shared_ptr<AutogradEntry>> input_entries;  // null: a constant input
  bool freed = false;  // backward without retain_graph went through it
  // Leaves only.
  NDArray grad;
  autograd::GradReq req = autograd::GradReq::kNull;
};

struct AutogradEntry {
  std::shared_ptr<AutogradNode> node;
  int index = 0;  // which output of the node
};

namespace autograd {
namespace {

thread_local bool recording = false;

// Restores both flags when backward leaves, however it leaves.
class FlagScope {
 public:
  FlagScope(bool rec, bool train)
      : old_recording_(set_recording(rec)), old_training_(set_training(train)) {}
  ~FlagScope() {
    set_recording(old_recording_);
    set_training(old_training_);
  }
  FlagScope(const FlagScope&) = delete;
  FlagScope& operator=(const FlagScope&) = delete;

 private:
  bool old_recording_, old_training_;
};

constexpr const char* kNotInGraph =
    "Cannot differentiate node because it is not in a computational graph. You need to set "
    "is_recording to true or use autograd.record() to save computational graphs for backward. If "
    "you want to differentiate the same graph twice, you need to pass retain_graph=True to "
    "backward.";

NDArray sum(const NDArray& a, const NDArray& b) {
  const NDArray in[] = {a, b};
  return ops::invoke_one(ops::get_op("broadcast_add"), in, {});
}

struct NodeHash {
  size_t operator()(const AutogradNode* n) const { return std::hash<const void*>()(n); }
};

}  // namespace

bool is_recording() { return recording; }
bool is_training() { return ops::training_mode(); }
bool set_recording(bool on) { return std::exchange(recording, on); }
bool set_training(bool on) { return ops::set_training_mode(on); }

void mark_variables(std::span<NDArray> variables, std::span<const NDArray> grads,
                    std::span<const GradReq> reqs) {
  NANOMX_CHECK(grads.size() == variables.size() && reqs.size() == variables.size())
      << "mark_variables: " << variables.size() << " variables but " << grads.size()
      << " gradients and " << reqs.size() << " requests (expected one of each per variable)";
  for (size_t i = 0; i < variables.size(); ++i) {
    NANOMX_CHECK(!variables[i].is_none()) << "mark_variables: variable " << i << " is a none array";
    NANOMX_CHECK(reqs[i] == GradReq::kNull || reqs[i] == GradReq::kWrite ||
                 reqs[i] == GradReq::kAdd)
        << "mark_variables: variable " << i << ": invalid grad_req code "
        << static_cast<uint32_t>(reqs[i]) << " (expected 0 null, 1 write, 3 add)";
    NANOMX_CHECK(grads[i].is_none() || grads[i].shape() == variables[i].shape())
        << "mark_variables: variable " << i << " has shape " << variables[i].shape()
        << " but its gradient buffer has shape " << grads[i].shape();
    auto node = std::make_shared<AutogradNode>();
    node->grad = grads[i].detach();
    node->req = reqs[i];
    node->outputs.push_back(variables[i].detach());
    variables[i].set_autograd_entry(std::make_shared<AutogradEntry>(std::move(node), 0));
  }
}

NDArray grad_of(const NDArray& array) {
  const auto& entry = array.autograd_entry();
  if (!entry || entry->node->op != nullptr) return NDArray();
  return entry->node->grad;
}

bool in_graph(const NDArray& array) { return array.autograd_entry() != nullptr; }

void check_outputs(std::span<const NDArray> outputs) {
  for (const NDArray& o : outputs) {
    NANOMX_CHECK(!in_graph(o))
        << "Assigning to NDArrays that are already in a computational graph will cause "
           "undefined behavior when evaluating gradients. Please call backward first to clear "
           "the graph or do this out side of a record section. Also note that you cannot use "
           "inplace operations like +=, *=, relu(x, out=x), y[idx]=x, etc inside a record "
           "section.";
  }
}

bool record(const ops::Op& op, const ops::Attrs& attrs, std::span<const NDArray> inputs,
            std::span<NDArray> outputs) {
  if (!std::any_of(inputs.begin(), inputs.end(), in_graph)) return false;
  auto node = std::make_shared<AutogradNode>();
  node->op = &op;
  node->attrs = attrs;
  node->inputs.reserve(inputs.size());
  node->input_entries.reserve(inputs.size());
  for (const NDArray& a : inputs) {
    node->inputs.push_back(a.detach());
    node->input_entries.push_back(a.autograd_entry());
  }
  node->outputs.reserve(outputs.size());
  for (const NDArray& o : outputs) node->outputs.push_back(o.detach());
  for (size_t j = 0; j < outputs.size(); ++j) {
    outputs[j].set_autograd_entry(std::make_shared<AutogradEntry>(node, static_cast<int>(j)));
  }
  return true;
}

std::vector<NDArray> backward(std::span<const NDArray> heads, std::span<const NDArray> head_grads,
                              std::span<const NDArray> variables, bool retain_graph,
                              bool create_graph, bool train_mode) {
  NANOMX_CHECK(!create_graph)
      << "autograd: create_graph=True (recording the backward pass for higher-order gradients) "
         "is not supported by nanomx";
  NANOMX_CHECK(head_grads.empty() || head_grads.size() == heads.size())
      << "backward: " << heads.size() << " heads but " << head_grads.size()
      << " head gradients (expected one per head, or none)";
  // The graph below the heads: every node reachable, in an order where a node comes after every
  // node that consumes its outputs (reverse topological order of the forward calls).
  std::vector<AutogradNode*> order;
  // Every node reached, kept alive here: freeing a node's history below drops its references
  // to the nodes under it while this walk still visits them.
  std::vector<std::shared_ptr<AutogradNode>> reached;
  std::unordered_map<const AutogradNode*, int, NodeHash> state;  // 1 visiting, 2 done
  std::vector<std::pair<AutogradNode*, size_t>> stack;
  for (const NDArray& h : heads) {
    const auto& entry = h.autograd_entry();
    NANOMX_CHECK(entry != nullptr && !entry->node->freed) << kNotInGraph;
    if (state.count(entry->node.get())) continue;
    stack.emplace_back(entry->node.get(), 0);
    reached.push_back(entry->node);
    state[entry->node.get()] = 1;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->input_entries.size()) {
        const auto& in = node->input_entries[next++];
        if (in == nullptr || state.count(in->node.get())) continue;
        NANOMX_CHECK(!in->node->freed) << kNotInGraph;
        state[in->node.get()] = 1;
        reached.push_back(in->node);
        stack.emplace_back(in->node.get(), 0);
        continue;
      }
      state[node] = 2;
      order.push_back(node);  // post-order: inputs before their consumers
      stack.pop_back();
    }
  }
  std::reverse(order.begin(), order.end());

  // Gradients flowing into each (node, output), summed as they arrive.
  std::unordered_map<const AutogradNode*, std::vector<NDArray>, NodeHash> grads;
  auto accumulate = [&](const AutogradEntry& e, const NDArray& g) {
    auto& slots = grads[e.node.get()];
    if (slots.empty()) slots.resize(e.node->outputs.size());
    NDArray& slot = slots.at(static_cast<size_t>(e.index));
    slot = slot.is_none() ? g : sum(slot, g);
  };

  FlagScope flags(/*rec=*/false, train_mode);
  for (size_t i = 0; i < heads.size(); ++i) {
    const NDArray& given = head_grads.empty() ? NDArray() : head_grads[i];
    NDArray g = given;
    if (g.is_none()) {
      const NDArray head = heads[i].detach();
      g = ops::invoke_one(ops::get_op("ones_like"), {&head, 1}, {});
    } else {
      NANOMX_CHECK(g.shape() == heads[i].shape())
          << "backward: head gradient " << i << " has shape " << g.shape() << " but head " << i
          << " has shape " << heads[i].shape();
    }
    accumulate(*heads[i].autograd_entry(), g.detach());
  }

  // Variables asked for by grad(): their entries, checked before any work.
  for (size_t i = 0; i < variables.size(); ++i) {
    NANOMX_CHECK(in_graph(variables[i])) << "Cannot differentiate with respect to the " << i
                                         << "-th variable because it does not require gradient.";
    NANOMX_CHECK(state.count(variables[i].autograd_entry()->node.get()))
        << "Cannot differentiate with respect to the " << i
        << "-th variable because it is unreachable from the outputs.";
  }
  if (variables.empty()) {
    const bool any = std::any_of(order.begin(), order.end(), [](const AutogradNode* n) {
      return n->op == nullptr && n->req != GradReq::kNull;
    });
    NANOMX_CHECK(any) << "There are no inputs in computation graph that require gradients.";
  }

  for (AutogradNode* node : order) {
    if (node->op == nullptr) continue;
    auto it = grads.find(node);
    if (it == grads.end()) continue;  // nothing flows through this call
    std::vector<NDArray> out_grads = it->second;
    out_grads.resize(node->outputs.size());
    const std::vector<NDArray> in_grads =
        ops::gradient_eager(*node->op, node->attrs, node->inputs, node->outputs, out_grads);
    for (size_t i = 0; i < in_grads.size() && i < node->input_entries.size(); ++i) {
      const auto& in = node->input_entries[i];
      if (in == nullptr || in_grads[i].is_none()) continue;
      accumulate(*in, in_grads[i]);
    }
    // Once consumed, a call's incoming gradients are not needed again.
    if (variables.empty()) grads.erase(node);
  }

  std::vector<NDArray> result;
  if (!variables.empty()) {
    for (const NDArray& v : variables) {
      const AutogradEntry& e = *v.autograd_entry();
      auto it = grads.find(e.node.get());
      NDArray g = it == grads.end() ? NDArray() : it->second.at(static_cast<size_t>(e.index));
      if (g.is_none()) {  // reachable, but nothing flowed: zeros
        const NDArray value = v.detach();
        g = ops::invoke_one(ops::get_op("zeros_like"), {&value, 1}, {});
      }
      result.push_back(g);
    }
  } else {
    for (AutogradNode* node : order) {
      if (node->op != nullptr || node->req == GradReq::kNull || node->grad.is_none()) continue;
      auto it = grads.find(node);
      const NDArray g = it == grads.end() ? NDArray() : it->second.at(0);
      if (node->req == GradReq::kAdd) {
        if (g.is_none()) continue;
        const NDArray in[] = {node->grad, g};
        const NDArray out[] = {node->grad};
        ops::invoke(ops::get_op("broadcast_add"), in, {}, out);
      } else if (g.is_none()) {
        const NDArray out[] = {node->grad};
        ops::invoke(ops::get_op("zeros_like"), {&node->grad, 1}, {}, out);
      } else {
        const NDArray out[] = {node->grad};
        ops::invoke(ops::get_op("_copyto"), {&g, 1}, {}, out);
      }
    }
  }
  if (!retain_graph) {
    for (AutogradNode* node : order) {
      if (node->op == nullptr) continue;  // leaves stay marked
      node->freed = true;
      node->inputs.clear();
      node->outputs.clear();
      node->input_entries.clear();
    }
  }
  return result;
}

}  // namespace autograd
}  // namespace nanomx
