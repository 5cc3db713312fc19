// The symbolic graph: composition, listing, attributes and printing (symbol.h).
#include "symbol/symbol.h"

#include <algorithm>
#include <functional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "nanomx/error.h"
#include "nanomx/ops.h"
#include "nanomx/profiler.h"

namespace nanomx::symbol {
namespace {

bool is_hidden(const std::string& key) {
  return key.size() > 4 && key.starts_with("__") && key.ends_with("__");
}

// Keys MXNet stores as __key__ when given as plain attributes.
const std::vector<std::string>& hidden_keys() {
  static const std::vector<std::string> k = {"ctx_group", "lr_mult", "wd_mult", "force_mirroring",
                                             "mirror_stage"};
  return k;
}

std::shared_ptr<Node> make_variable(const std::string& name) {
  auto n = std::make_shared<Node>();
  n->name = name;
  return n;
}

}  // namespace

uint32_t Node::num_outputs() const {
  if (is_variable()) return 1;
  return static_cast<uint32_t>(op->outputs_of(parsed));
}

uint32_t Node::num_visible_outputs() const {
  if (is_variable()) return 1;
  return static_cast<uint32_t>(op->visible_outputs_of(parsed));
}

void Node::reparse() {
  if (is_variable()) return;
  ops::Attrs visible;
  for (const auto& [k, v] : attrs) {
    if (!is_hidden(k)) visible.emplace_back(k, v);
  }
  size_t count = inputs.size();
  if (op->variadic() && inputs.empty()) {
    auto it = attrs.find(op->num_inputs_key);
    count = 1;
    if (it != attrs.end()) {
      // The operator's parser checks the value itself; here only a usable count is needed.
      const std::string& v = it->second;
      if (!v.empty() && v.size() < 7 && v.find_first_not_of("0123456789") == std::string::npos)
        count = static_cast<size_t>(std::stoll(v)) * static_cast<size_t>(op->input_group);
    }
  } else if (!op->variadic() && inputs.empty()) {
    count = op->inputs.size();
  }
  try {
    // Into a fresh struct: a failed parse leaves the node's attributes as they were.
    ops::ParsedParams fresh;
    ops::parse_attrs_into(*op, visible, count, fresh);
    parsed = std::move(fresh);
  } catch (const Error& e) {
    NANOMX_THROW() << "Error in operator " << (name.empty() ? op->name : name) << ": " << e.what();
  }
}

const std::string& default_profiler_scope() {
  static const std::string s = "<unk>:";
  return s;
}

std::string profiler_scope_of(const Node& node) {
  auto it = node.attrs.find(kProfilerScopeAttr);
  return it == node.attrs.end() ? default_profiler_scope() : it->second;
}

namespace {
// A new node remembers the profiler scope it was made in (MXNet's __profiler_scope__), which
// names its arrays in the GPU memory profile. Outside any scope nothing is added, so symbols
// and their JSON are as before for programs that use no scopes.
void record_profiler_scope(Node& node) {
  std::string scope = profiler::scope();
  if (scope != default_profiler_scope())
    node.attrs.try_emplace(kProfilerScopeAttr, std::move(scope));
}
}  // namespace

Symbol Symbol::variable(const std::string& name, const Kwargs& attrs) {
  NANOMX_CHECK(!name.empty()) << "Variable: the name must not be empty";
  auto n = make_variable(name);
  for (const auto& [k, v] : attrs) n->attrs[k] = v;
  record_profiler_scope(*n);
  Symbol s;
  s.outputs.push_back({n, 0, 0});
  return s;
}

Symbol Symbol::atomic(const ops::Op& op, const Kwargs& attrs) {
  auto n = std::make_shared<Node>();
  n->op = &op;
  for (const auto& [k, v] : attrs) {
    const auto& hk = hidden_keys();
    n->attrs[std::find(hk.begin(), hk.end(), k) != hk.end() ? "__" + k + "__" : k] = v;
  }
  record_profiler_scope(*n);
  n->reparse();
  Symbol s;
  const uint32_t outs = n->num_visible_outputs();
  for (uint32_t i = 0; i < outs; ++i) s.outputs.push_back({n, i, 0});
  return s;
}

Symbol Symbol::group(const std::vector<Symbol>& symbols) {
  Symbol s;
  for (const Symbol& x : symbols)
    s.outputs.insert(s.outputs.end(), x.outputs.begin(), x.outputs.end());
  return s;
}

void Symbol::compose(const std::vector<Symbol>& args,
                     const std::vector<std::pair<std::string, Symbol>>& kwargs,
                     const std::string& name) {
  NANOMX_CHECK(!outputs.empty()) << "compose: the symbol is empty";
  for (size_t i = 0; i < args.size(); ++i) {
    NANOMX_CHECK(args[i].outputs.size() == 1)
        << "Argument " << i << " is a tuple, single value is required";
  }
  for (const auto& [k, v] : kwargs) {
    NANOMX_CHECK(v.outputs.size() == 1)
        << "Keyword argument " << k << " is a tuple, single value is required";
  }
  Node* head = outputs[0].node.get();
  for (const NodeEntry& e : outputs) {
    NANOMX_CHECK(e.node.get() == head) << "compose: cannot compose a group of several symbols";
  }
  NANOMX_CHECK(!head->is_variable()) << "Variable cannot be composed";
  if (!name.empty()) head->name = name;

  if (head->inputs.empty() && !head->op->inputs.empty()) {
    // An atomic operator node: fill its declared inputs.
    const ops::Op& op = *head->op;
    if (op.variadic()) {
      NANOMX_CHECK(kwargs.empty())
          << "compose: " << op.name << " takes a variable number of inputs, positional only";
      for (const Symbol& a : args) head->inputs.push_back(a.outputs[0]);
      if (!head->attrs.contains(op.num_inputs_key))
        head->attrs[op.num_inputs_key] =
            std::to_string(args.size() / static_cast<size_t>(op.input_group));
    } else {
      const std::vector<std::string> names = op.input_names_of(head->parsed);
      NANOMX_CHECK(args.size() <= names.size())
          << "compose: " << op.name << " takes " << names.size() << " inputs, " << args.size()
          << " given";
      std::vector<std::optional<NodeEntry>> slots(names.size());
      for (size_t i = 0; i < args.size(); ++i) slots[i] = args[i].outputs[0];
      for (const auto& [k, v] : kwargs) {
        auto it = std::find(names.begin(), names.end(), k);
        if (it == names.end()) {
          std::ostringstream msg;
          msg << "Symbol.ComposeKeyword argument name " << k << " not found.\nCandidate arguments:";
          for (size_t i = 0; i < names.size(); ++i) msg << "\n\t[" << i << "]" << names[i];
          NANOMX_THROW() << msg.str();
        }
        slots[static_cast<size_t>(it - names.begin())] = v.outputs[0];
      }
      for (size_t i = 0; i < names.size(); ++i) {
        if (!slots[i]) {
          // MXNet's quirk: the new variable gets a copy of the operator's attributes.
          auto var = make_variable(head->name.empty() ? names[i] : head->name + "_" + names[i]);
          var->attrs = head->attrs;
          slots[i] = NodeEntry{var, 0, 0};
        }
        head->inputs.push_back(*slots[i]);
      }
    }
    for (const auto& [i, init] : op.input_init) {
      if (static_cast<size_t>(i) >= head->inputs.size()) continue;
      Node* var = head->inputs[static_cast<size_t>(i)].node.get();
      if (var->is_variable() && !var->attrs.contains("__init__")) var->attrs["__init__"] = init;
    }
    head->reparse();
    return;
  }
  // A composed graph: replace its free variables, positionally in list_inputs order or by name.
  std::vector<Node*> order = topo_order();
  std::vector<Node*> vars;
  for (Node* n : order) {
    if (n->is_variable()) vars.push_back(n);
  }
  NANOMX_CHECK(args.size() <= vars.size())
      << "compose: " << args.size() << " positional inputs given, the symbol has " << vars.size();
  std::unordered_map<Node*, NodeEntry> replace;
  for (size_t i = 0; i < args.size(); ++i) replace[vars[i]] = args[i].outputs[0];
  for (const auto& [k, v] : kwargs) {
    bool found = false;
    for (Node* var : vars) {
      if (var->name == k) {
        replace[var] = v.outputs[0];
        found = true;
      }
    }
    if (!found) {
      std::ostringstream msg;
      msg << "Symbol.ComposeKeyword argument name " << k << " not found.\nCandidate arguments:";
      for (size_t i = 0; i < vars.size(); ++i) msg << "\n\t[" << i << "]" << vars[i]->name;
      NANOMX_THROW() << msg.str();
    }
  }
  for (Node* n : order) {
    for (NodeEntry& e : n->inputs) {
      auto it = replace.find(e.node.get());
      if (it != replace.end()) e = it->second;
    }
  }
}

Symbol Symbol::copy() const {
  std::unordered_map<const Node*, std::shared_ptr<Node>> copies;
  for (Node* n : topo_order()) {
    auto c = std::make_shared<Node>();
    c->op = n->op;
    c->name = n->name;
    c->attrs = n->attrs;
    c->parsed = n->parsed;
    for (const NodeEntry& e : n->inputs)
      c->inputs.push_back({copies.at(e.node.get()), e.index, e.version});
    for (const auto& d : n->control_deps) c->control_deps.push_back(copies.at(d.get()));
    copies[n] = c;
  }
  Symbol s;
  for (const NodeEntry& e : outputs)
    s.outputs.push_back({copies.at(e.node.get()), e.index, e.version});
  return s;
}

Symbol Symbol::operator[](size_t i) const {
  NANOMX_CHECK(i < outputs.size())
      << "Symbol index " << i << " out of range: the symbol has " << outputs.size() << " outputs";
  Symbol s;
  s.outputs.push_back(outputs[i]);
  return s;
}

std::vector<Node*> Symbol::topo_order() const {
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  // Iterative post-order DFS: inputs in order, then control deps, then the node.
  struct Frame {
    Node* node;
    size_t next;
  };
  for (const NodeEntry& head : outputs) {
    if (!seen.insert(head.node.get()).second) continue;
    std::vector<Frame> stack{{head.node.get(), 0}};
    while (!stack.empty()) {
      Frame& f = stack.back();
      const size_t n_in = f.node->inputs.size();
      const size_t total = n_in + f.node->control_deps.size();
      if (f.next < total) {
        Node* child = f.next < n_in ? f.node->inputs[f.next].node.get()
                                    : f.node->control_deps[f.next - n_in].get();
        ++f.next;
        if (seen.insert(child).second) stack.push_back({child, 0});
      } else {
        order.push_back(f.node);
        stack.pop_back();
      }
    }
  }
  return order;
}

Symbol Symbol::internals() const {
  Symbol s;
  // The owning pointers, from the entries that reach each node.
  std::unordered_map<Node*, std::shared_ptr<Node>> owners;
  for (const NodeEntry& e : outputs) owners.emplace(e.node.get(), e.node);
  for (Node* n : topo_order()) {
    for (const NodeEntry& e : n->inputs) owners.emplace(e.node.get(), e.node);
    for (const auto& d : n->control_deps) owners.emplace(d.get(), d);
  }
  for (Node* n : topo_order()) {
    const uint32_t outs = n->num_visible_outputs();
    for (uint32_t i = 0; i < outs; ++i) s.outputs.push_back({owners.at(n), i, 0});
  }
  return s;
}

Symbol Symbol::children() const {
  Symbol s;
  for (const NodeEntry& e : outputs) {
    for (const NodeEntry& in : e.node->inputs) s.outputs.push_back(in);
  }
  return s;
}

std::unordered_set<const Node*> Symbol::aux_variables() const {
  std::unordered_set<const Node*> aux;
  for (Node* n : topo_order()) {
    if (n->is_variable() || n->op->mutate_inputs.empty()) continue;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Node* in = n->inputs[i].node.get();
      if (in->is_variable() && n->op->mutates(static_cast<int>(i))) aux.insert(in);
    }
  }
  return aux;
}

std::vector<std::string> Symbol::list_arguments() const {
  const std::unordered_set<const Node*> aux = aux_variables();
  std::vector<std::string> names;
  for (Node* n : topo_order()) {
    if (n->is_variable() && !aux.contains(n)) names.push_back(n->name);
  }
  return names;
}

std::vector<std::string> Symbol::list_inputs() const {
  std::vector<std::string> names;
  for (Node* n : topo_order()) {
    if (n->is_variable()) names.push_back(n->name);
  }
  return names;
}

std::vector<std::string> Symbol::list_auxiliary_states() const {
  const std::unordered_set<const Node*> aux = aux_variables();
  std::vector<std::string> names;
  for (Node* n : topo_order()) {
    if (aux.contains(n)) names.push_back(n->name);
  }
  return names;
}

std::vector<std::string> Symbol::list_outputs() const {
  std::vector<std::string> names;
  for (const NodeEntry& e : outputs) {
    if (e.node->is_variable()) {
      names.push_back(e.node->name);
    } else {
      names.push_back(e.node->name + "_" + e.node->op->output_names_of(e.node->parsed).at(e.index));
    }
  }
  return names;
}

std::optional<std::string> Symbol::get_attr(const std::string& key) const {
  NANOMX_CHECK(!outputs.empty()) << "attr: the symbol is empty";
  const Node* n = outputs[0].node.get();
  for (const NodeEntry& e : outputs) {
    if (e.node.get() != n) return std::nullopt;
  }
  auto it = n->attrs.find(key);
  if (it != n->attrs.end()) return it->second;
  it = n->attrs.find("__" + key + "__");
  if (it != n->attrs.end()) return it->second;
  return std::nullopt;
}

void Symbol::set_attr(const std::string& key, const std::string& value) {
  NANOMX_CHECK(!outputs.empty()) << "set_attr: the symbol is empty";
  Node* n = outputs[0].node.get();
  for (const NodeEntry& e : outputs) {
    NANOMX_CHECK(e.node.get() == n) << "set_attr: cannot set an attribute on a group of symbols";
  }
  for (const std::string& h : hidden_keys()) {
    if (key != h && key.ends_with(h)) {
      NANOMX_THROW() << "setting variable attributes with " << key
                     << " is deprecated. please instead use\nw = Variable(" << h
                     << "=2)\nsym = YourSymbolName(" << key.substr(0, key.size() - h.size() - 1)
                     << "=w)";
    }
  }
  const auto& hk = hidden_keys();
  const std::string k = std::find(hk.begin(), hk.end(), key) != hk.end() ? "__" + key + "__" : key;
  const auto old = n->attrs;
  n->attrs[k] = value;
  if (!is_hidden(k)) {
    try {
      n->reparse();
    } catch (...) {
      n->attrs = old;
      throw;
    }
  }
}

Kwargs Symbol::list_attr(bool recursive) const {
  Kwargs out;
  auto add = [&](const Node& n, const std::string& prefix) {
    for (const auto& [k, v] : n.attrs) {
      out.emplace_back(prefix + k, v);
      // Hidden keys are reported under their plain name as well, as MXNet does.
      for (const std::string& h : hidden_keys()) {
        if (k == "__" + h + "__") out.emplace_back(prefix + h, v);
      }
    }
  };
  if (recursive) {
    for (Node* n : topo_order()) add(*n, n->name + "$");
  } else if (!outputs.empty()) {
    add(*outputs[0].node, "");
  }
  return out;
}

std::string Symbol::debug_str() const {
  std::ostringstream os;
  if (outputs.size() == 1 && outputs[0].node->is_variable()) {
    os << "Variable:" << outputs[0].node->name << "\n";
    return os.str();
  }
  os << "Symbol Outputs:\n";
  for (size_t i = 0; i < outputs.size(); ++i)
    os << "\toutput[" << i << "]=" << outputs[i].node->name << "(" << outputs[i].index << ")\n";
  for (Node* n : topo_order()) {
    if (n->is_variable()) {
      os << "Variable:" << n->name << "\n";
      continue;
    }
    os << "--------------------\n";
    os << "Op:" << n->op->name << ", Name=" << n->name << "\n";
    os << "Inputs:\n";
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const NodeEntry& e = n->inputs[i];
      os << "\targ[" << i << "]=" << e.node->name << "(" << e.index << ")";
      if (e.node->is_variable()) os << " version=" << e.version;
      os << "\n";
    }
    if (!n->attrs.empty()) {
      os << "Attrs:\n";
      for (const auto& [k, v] : n->attrs) os << "\t" << k << "=" << v << "\n";
    }
    if (!n->control_deps.empty()) {
      os << "Control deps:\n";
      for (size_t i = 0; i < n->control_deps.size(); ++i)
        os << "\tcdep[" << i << "]=" << n->control_deps[i]->name << "\n";
    }
  }
  return os.str();
}

ops::PartialShape parse_shape_attr(const std::string& text) {
  std::vector<int64_t> dims;
  size_t i = 0;
  auto bad = [&]() {
    NANOMX_THROW() << "invalid shape '" << text << "': expected a tuple of integers like (2, 3)";
  };
  while (i < text.size() && (text[i] == ' ' || text[i] == '(' || text[i] == '[')) ++i;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == ',' || c == ')' || c == ']' || c == 'L') {
      ++i;
      continue;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(text.substr(i), &used);
      } catch (const std::exception&) {
        bad();
      }
      dims.push_back(v);
      i += used;
      continue;
    }
    if (text.compare(i, 4, "None") == 0) {
      dims.push_back(0);
      i += 4;
      continue;
    }
    bad();
  }
  std::vector<int64_t> positive;
  for (int64_t d : dims) {
    if (d < -1) bad();
    positive.push_back(d > 0 ? d : 1);
  }
  ops::PartialShape s{Shape(std::span<const int64_t>(positive))};
  for (size_t a = 0; a < dims.size(); ++a) {
    if (dims[a] <= 0) s[static_cast<int>(a)] = ops::PartialShape::kUnknownDim;  // legacy: 0
  }
  return s;
}

IndexedGraph index_graph(const Symbol& sym) {
  IndexedGraph g;
  g.nodes = sym.topo_order();
  g.row_ptr.push_back(0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    g.id[g.nodes[i]] = i;
    g.row_ptr.push_back(g.row_ptr.back() + g.nodes[i]->num_outputs());
  }
  return g;
}

}  // namespace nanomx::symbol
