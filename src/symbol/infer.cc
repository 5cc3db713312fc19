// Shape and dtype inference over a whole graph: each operator's own rule applied forward and
// backward over the nodes until nothing changes, as MXNet's InferShape / InferType passes do.
#include <sstream>
#include <unordered_map>

#include "nanomx/error.h"
#include "symbol/symbol.h"

namespace nanomx::symbol {
namespace {

std::string shape_text(const ops::PartialShape& s) { return s.str(); }
std::string shape_text(const ops::PartialDType& t) {
  return t ? std::string(dtype_name(*t)) : std::string("unknown");
}
bool known_of(const ops::PartialShape& s) { return s.known(); }
bool known_of(const ops::PartialDType& t) { return t.has_value(); }
bool merge(ops::PartialShape& into, const ops::PartialShape& from) {
  return ops::merge_shape(into, from);
}
bool merge(ops::PartialDType& into, const ops::PartialDType& from) {
  if (!from) return true;
  if (!into) {
    into = from;
    return true;
  }
  return *into == *from;
}
void run_op(const Node& n, std::span<ops::PartialShape> in, std::span<ops::PartialShape> out) {
  ops::infer_shapes(*n.op, n.parsed, in, out);
}
void run_op(const Node& n, std::span<ops::PartialDType> in, std::span<ops::PartialDType> out) {
  ops::infer_types(*n.op, n.parsed, in, out);
}

// Runs the pass; `slots` holds one value per entry, variables' slots filled on entry.
template <typename T>
void run_pass(const IndexedGraph& g, std::vector<T>& slots, const char* what) {
  auto visit = [&](Node* n) -> bool {
    if (n->is_variable()) return false;
    std::vector<T> in, out;
    for (const NodeEntry& e : n->inputs) in.push_back(slots[g.entry(e)]);
    const size_t first = g.row_ptr[g.id.at(n)];
    for (uint32_t i = 0; i < n->num_outputs(); ++i) out.push_back(slots[first + i]);
    const std::vector<T> in0 = in, out0 = out;
    try {
      run_op(*n, in, out);
    } catch (const Error& e) {
      NANOMX_THROW() << "Error in operator " << n->name << ": " << e.what();
    }
    bool changed = false;
    const std::vector<std::string> in_names = n->op->input_names_of(n->parsed);
    auto apply = [&](T& slot, const T& provided, const T& inferred, const std::string& where) {
      if (!merge(slot, inferred)) {
        // MXNet's wording first; then which operator and slot, for graphs of many nodes.
        NANOMX_THROW() << "Error in operator " << n->name << ": " << what
                       << " inconsistent, Provided = " << shape_text(provided) << ", inferred "
                       << (what[0] == 'S' ? "shape" : "type") << "=" << shape_text(inferred)
                       << " (operator " << n->op->name << ", " << where << ")";
      }
      changed = changed || !(slot == provided);
    };
    for (size_t i = 0; i < in.size(); ++i) {
      apply(slots[g.entry(n->inputs[i])], in0[i], in[i],
            "input '" + (i < in_names.size() ? in_names[i] : std::to_string(i)) + "' from " +
                n->inputs[i].node->name);
    }
    for (size_t i = 0; i < out.size(); ++i)
      apply(slots[first + i], out0[i], out[i], "output " + std::to_string(i));
    return changed;
  };
  // Forward then backward until a whole round changes nothing (bounded: each change fills
  // something that was unknown).
  for (size_t round = 0; round < 2 * slots.size() + 2; ++round) {
    bool changed = false;
    for (Node* n : g.nodes) changed = visit(n) || changed;
    for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) changed = visit(*it) || changed;
    if (!changed) break;
  }
}

template <typename T, typename R>
void collect(const Symbol& sym, const IndexedGraph& g, const std::vector<T>& slots, R& r) {
  bool complete = true;
  for (const T& s : slots) complete = complete && known_of(s);
  const std::unordered_set<const Node*> aux = sym.aux_variables();
  for (Node* n : g.nodes) {
    if (!n->is_variable()) continue;
    (aux.contains(n) ? r.aux : r.args).push_back(slots[g.row_ptr[g.id.at(n)]]);
  }
  for (const NodeEntry& e : sym.outputs) r.outputs.push_back(slots[g.entry(e)]);
  r.complete = complete;
}

}  // namespace

ShapeResult infer_shape(const Symbol& sym, const std::map<std::string, ops::PartialShape>& known) {
  const IndexedGraph g = index_graph(sym);
  std::vector<ops::PartialShape> slots(g.row_ptr.back());
  for (Node* n : g.nodes) {
    if (!n->is_variable()) continue;
    ops::PartialShape& s = slots[g.row_ptr[g.id.at(n)]];
    auto it = known.find(n->name);
    if (it != known.end()) {
      s = it->second;
    } else if (auto a = n->attrs.find("__shape__"); a != n->attrs.end()) {
      s = parse_shape_attr(a->second);
    }
  }
  run_pass(g, slots, "Shape");
  ShapeResult r;
  collect(sym, g, slots, r);
  return r;
}

TypeResult infer_type(const Symbol& sym, const std::map<std::string, DType>& known) {
  const IndexedGraph g = index_graph(sym);
  std::vector<ops::PartialDType> slots(g.row_ptr.back());
  for (Node* n : g.nodes) {
    if (!n->is_variable()) continue;
    ops::PartialDType& t = slots[g.row_ptr[g.id.at(n)]];
    auto it = known.find(n->name);
    if (it != known.end()) {
      t = it->second;
    } else if (auto a = n->attrs.find("__dtype__"); a != n->attrs.end()) {
      const std::string& text = a->second;
      const bool digits = !text.empty() && text.size() < 4 &&
                          text.find_first_not_of("0123456789") == std::string::npos;
      const int id = digits ? std::stoi(text) : -1;
      NANOMX_CHECK(dtype_valid(id))
          << "variable " << n->name << ": __dtype__ " << a->second << " is not a known type id";
      t = static_cast<DType>(id);
    }
  }
  run_pass(g, slots, "Type");
  TypeResult r;
  collect(sym, g, slots, r);
  return r;
}

}  // namespace nanomx::symbol
