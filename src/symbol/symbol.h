// The symbolic graph (MXNet's nnvm Symbol): variables and operator nodes linked by
// (node, output index, version) entries, and a Symbol as a list of such output entries.
// Composition, listing, attributes, shape and dtype inference over the whole graph, MXNet's
// JSON graph format and debug printing; docs/symbolic.md describes the behaviour. Automatic
// naming (NameManager) is the caller's job, as in MXNet: nodes arrive here already named.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ops/op.h"
#include "ops/shape_inference.h"

namespace nanomx::symbol {

struct Node;

struct NodeEntry {
  std::shared_ptr<Node> node;
  uint32_t index = 0;
  uint32_t version = 0;
};

struct Node {
  const ops::Op* op = nullptr;  // null: a variable
  std::string name;
  // Every attribute as the user gave it (strings), hidden __x__ keys included; sorted, as the
  // JSON writer wants them.
  std::map<std::string, std::string> attrs;
  std::vector<NodeEntry> inputs;
  std::vector<std::shared_ptr<Node>> control_deps;
  // The operator's parsed attributes (re-parsed whenever attrs or the input count change).
  ops::ParsedParams parsed;

  bool is_variable() const { return op == nullptr; }
  uint32_t num_outputs() const;
  // The outputs a symbol of this node shows (Op::num_visible_outputs): BatchNorm's batch mean
  // and variance and Dropout's mask are entries of the graph but not outputs of the symbol.
  uint32_t num_visible_outputs() const;
  // Parses attrs (hidden keys left out) for op with the current input count.
  void reparse();
};

using Kwargs = std::vector<std::pair<std::string, std::string>>;

// The profiler scope a node was made in (MXNet's hidden attribute), which names its arrays in
// the GPU memory profile: `tensordot:` for a node made inside profiler.scope("tensordot").
// Symbol::variable / atomic record the current scope unless it is the default.
inline constexpr const char* kProfilerScopeAttr = "__profiler_scope__";
// The node's recorded scope, or the default "<unk>:".
std::string profiler_scope_of(const Node& node);

class Symbol {
 public:
  std::vector<NodeEntry> outputs;

  // A variable named `name` with the given attributes.
  static Symbol variable(const std::string& name, const Kwargs& attrs = {});
  // An operator node without inputs yet (filled by compose); attrs are validated by the
  // operator's parser here, as MXNet's MXSymbolCreateAtomicSymbol does.
  static Symbol atomic(const ops::Op& op, const Kwargs& attrs);
  // Several symbols' outputs side by side.
  static Symbol group(const std::vector<Symbol>& symbols);

  // Fills the inputs of this (single operator node, without inputs) symbol: positional
  // symbols first, then by input name; missing inputs become variables `<name>_<input>`.
  void compose(const std::vector<Symbol>& args,
               const std::vector<std::pair<std::string, Symbol>>& kwargs, const std::string& name);
  // A deep copy of the graph (nodes are shared otherwise).
  Symbol copy() const;
  Symbol operator[](size_t i) const;
  Symbol internals() const;
  Symbol children() const;  // empty outputs when the head has no inputs

  // Variables in topo_order(): the arguments, then (apart) the auxiliary states: the variables
  // that feed an input their operator writes (Op::mutate_inputs: BatchNorm's moving_mean and
  // moving_var), as MXNet's FMutateInputs makes them. list_inputs() lists both, in graph order.
  std::vector<std::string> list_arguments() const;
  std::vector<std::string> list_outputs() const;
  std::vector<std::string> list_auxiliary_states() const;
  std::vector<std::string> list_inputs() const;

  // The head node's attribute (only for a single-node symbol).
  std::optional<std::string> get_attr(const std::string& key) const;
  void set_attr(const std::string& key, const std::string& value);
  // Shallow: the head node's attributes; recursive: "node$key" for every node (MXNet's
  // MXSymbolListAttr).
  Kwargs list_attr(bool recursive) const;

  std::string to_json() const;
  static Symbol from_json(const std::string& json);
  std::string debug_str() const;

  // Post-order DFS of every node reachable from the outputs (MXNet's order everywhere).
  std::vector<Node*> topo_order() const;
  // The variable nodes in topo_order() that are auxiliary states (above).
  std::unordered_set<const Node*> aux_variables() const;
};

// The graph flattened: nodes in topological order (Symbol::topo_order) and one slot per output
// entry, nodes' entries side by side; what the inference passes and the executor index by.
struct IndexedGraph {
  std::vector<Node*> nodes;
  std::unordered_map<const Node*, size_t> id;
  std::vector<size_t> row_ptr;  // first entry slot of each node; one more at the end
  size_t entry(const NodeEntry& e) const { return row_ptr[id.at(e.node.get())] + e.index; }
  size_t num_entries() const { return row_ptr.back(); }
};
IndexedGraph index_graph(const Symbol& sym);

// Result of shape inference: per argument / output / aux state, in listing order.
struct ShapeResult {
  std::vector<ops::PartialShape> args, outputs, aux;
  bool complete = false;
};
// `known`: shapes of arguments by name (absent: unknown, then the variable's __shape__).
ShapeResult infer_shape(const Symbol& sym, const std::map<std::string, ops::PartialShape>& known);

struct TypeResult {
  std::vector<ops::PartialDType> args, outputs, aux;
  bool complete = false;
};
TypeResult infer_type(const Symbol& sym, const std::map<std::string, DType>& known);

// "(2, 3)" / "[2,3]" style shape text; 0 is an unknown dimension (MXNet's legacy mode).
ops::PartialShape parse_shape_attr(const std::string& text);

}  // namespace nanomx::symbol
