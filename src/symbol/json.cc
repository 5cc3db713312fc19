// MXNet's JSON graph format (nnvm's saveload_json with dmlc's JSONWriter layout), written byte
// for byte as MXNet 1.9 writes it and read with the legacy keys MXNet still accepts.
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <unordered_map>
#include <variant>

#include "nanomx/error.h"
#include "nanomx/ops.h"
#include "symbol/symbol.h"

namespace nanomx::symbol {
namespace {

constexpr int64_t kMXNetVersion = 10901;

// dmlc::JSONWriter: a scope stack of (multi-line, item count).
class Writer {
 public:
  std::ostringstream os;
  void begin_object(bool multi_line = true) { open('{', multi_line); }
  void end_object() { close('}'); }
  void begin_array(bool multi_line) { open('[', multi_line); }
  void end_array() { close(']'); }
  void key(const std::string& k) {
    if (scopes_.back().count > 0) os << ", ";
    separator();
    string(k);
    os << ": ";
    ++scopes_.back().count;
  }
  void item() {
    if (scopes_.back().count > 0) os << ", ";
    ++scopes_.back().count;
    separator();
  }
  void string(const std::string& s) {
    os << '"';
    for (char c : s) {
      switch (c) {
        case '\r':
          os << "\\r";
          break;
        case '\n':
          os << "\\n";
          break;
        case '\t':
          os << "\\t";
          break;
        case '\\':
          os << "\\\\";
          break;
        case '"':
          os << "\\\"";
          break;
        default:
          os << c;
      }
    }
    os << '"';
  }
  void ints(const std::vector<int64_t>& v) {
    begin_array(v.size() > 10);
    for (int64_t x : v) {
      item();
      os << x;
    }
    end_array();
  }

 private:
  struct Scope {
    bool multi_line;
    size_t count;
  };
  void open(char c, bool multi_line) {
    os << c;
    scopes_.push_back({multi_line, 0});
  }
  void close(char c) {
    const Scope s = scopes_.back();
    scopes_.pop_back();
    if (s.multi_line && s.count != 0) separator();
    os << c;
  }
  void separator() {
    if (scopes_.empty() || scopes_.back().multi_line)
      os << '\n' << std::string(scopes_.size() * 2, ' ');
  }
  std::vector<Scope> scopes_;
};

// A small JSON reader: enough for graph files (objects, arrays, strings, numbers).
struct Value {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Value>,
               std::vector<std::pair<std::string, Value>>>
      v;
  bool is_object() const { return v.index() == 5; }
  bool is_array() const { return v.index() == 4; }
  bool is_string() const { return v.index() == 3; }
  bool is_number() const { return v.index() == 2; }
  const std::vector<Value>& array(const char* what) const {
    NANOMX_CHECK(is_array()) << "load_json: " << what << " must be an array";
    return std::get<4>(v);
  }
  const std::vector<std::pair<std::string, Value>>& object(const char* what) const {
    NANOMX_CHECK(is_object()) << "load_json: " << what << " must be an object";
    return std::get<5>(v);
  }
  const std::string& str(const char* what) const {
    NANOMX_CHECK(is_string()) << "load_json: " << what << " must be a string";
    return std::get<3>(v);
  }
  int64_t integer(const char* what) const {
    NANOMX_CHECK(is_number()) << "load_json: " << what << " must be a number";
    const double d = std::get<2>(v);
    // Ids, indices and versions: integers well inside int64 (the cast is undefined outside).
    NANOMX_CHECK(d >= -9.0e15 && d <= 9.0e15 && d == std::floor(d))
        << "load_json: " << what << " must be an integer, got " << d;
    return static_cast<int64_t>(d);
  }
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  Value parse() {
    Value v = value();
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const char* what) {
    NANOMX_THROW() << "load_json: invalid JSON at offset " << i_ << ": " << what;
    std::abort();
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  void expect(char c) {
    ws();
    if (i_ >= s_.size() || s_[i_] != c) fail("unexpected character");
    ++i_;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ >= s_.size()) fail("unterminated escape");
        const char e = s_[i_++];
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 'r':
            out += '\r';
            break;
          case 't':
            out += '\t';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'u': {
            if (i_ + 4 > s_.size()) fail("short \\u escape");
            unsigned code = 0;
            for (size_t k = 0; k < 4; ++k) {
              const char h = s_[i_ + k];
              const int digit = h >= '0' && h <= '9'   ? h - '0'
                                : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                       : -1;
              if (digit < 0) fail("bad \\u escape");
              code = code * 16 + static_cast<unsigned>(digit);
            }
            i_ += 4;
            if (code < 0x80) {
              out += static_cast<char>(code);
            } else if (code < 0x800) {
              out += static_cast<char>(0xC0 | (code >> 6));
              out += static_cast<char>(0x80 | (code & 0x3F));
            } else {
              out += static_cast<char>(0xE0 | (code >> 12));
              out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
              out += static_cast<char>(0x80 | (code & 0x3F));
            }
            break;
          }
          default:
            out += e;
        }
      } else {
        out += c;
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  Value value() {
    // Graph files nest four levels deep; a bound keeps hostile input off the stack's end.
    if (++depth_ > 64) fail("nested too deeply");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    const char c = s_[i_];
    Value v;
    if (c == '{') {
      ++i_;
      std::vector<std::pair<std::string, Value>> obj;
      ws();
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
      } else {
        for (;;) {
          std::string k = string();
          expect(':');
          obj.emplace_back(std::move(k), value());
          ws();
          if (i_ < s_.size() && s_[i_] == ',') {
            ++i_;
            continue;
          }
          expect('}');
          break;
        }
      }
      v.v = std::move(obj);
    } else if (c == '[') {
      ++i_;
      std::vector<Value> arr;
      ws();
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
      } else {
        for (;;) {
          arr.push_back(value());
          ws();
          if (i_ < s_.size() && s_[i_] == ',') {
            ++i_;
            continue;
          }
          expect(']');
          break;
        }
      }
      v.v = std::move(arr);
    } else if (c == '"') {
      v.v = string();
    } else if (s_.compare(i_, 4, "true") == 0) {
      i_ += 4;
      v.v = true;
    } else if (s_.compare(i_, 5, "false") == 0) {
      i_ += 5;
      v.v = false;
    } else if (s_.compare(i_, 4, "null") == 0) {
      i_ += 4;
      v.v = nullptr;
    } else {
      size_t used = 0;
      try {
        v.v = std::stod(s_.substr(i_, 64), &used);
      } catch (...) {
        fail("expected a value");
      }
      i_ += used;
    }
    return v;
  }
  const std::string& s_;
  size_t i_ = 0;
  int depth_ = 0;
};

const Value* find(const std::vector<std::pair<std::string, Value>>& obj, const std::string& k) {
  for (const auto& [key, v] : obj) {
    if (key == k) return &v;
  }
  return nullptr;
}

// Older MXNet wrote hidden attributes without underscores ("lr_mult") and per-input ones on
// the operator ("weight_lr_mult"); MXNet's upgrader moves them to "__lr_mult__" on the node or
// on that input's variable.
void upgrade_legacy_keys(Node& n, const std::string& op) {
  static const char* const kHidden[] = {"ctx_group", "lr_mult", "wd_mult", "force_mirroring",
                                        "mirror_stage"};
  const ops::Op* def = op == "null" ? nullptr : ops::find_op(op);
  std::map<std::string, std::string> kept;
  for (const auto& [k, v] : n.attrs) {
    bool moved = false;
    for (const char* h : kHidden) {
      const std::string key(h);
      if (k == key) {
        kept["__" + key + "__"] = v;
        moved = true;
      } else if (def != nullptr && k.size() > key.size() + 1 && k.ends_with("_" + key)) {
        const std::string input = k.substr(0, k.size() - key.size() - 1);
        for (size_t i = 0; i < def->inputs.size() && i < n.inputs.size(); ++i) {
          if (def->inputs[i] == input && n.inputs[i].node->is_variable()) {
            n.inputs[i].node->attrs["__" + key + "__"] = v;
            moved = true;
          }
        }
      }
    }
    if (!moved) kept[k] = v;
  }
  n.attrs = std::move(kept);
}

}  // namespace

std::string Symbol::to_json() const {
  const std::vector<Node*> nodes = topo_order();
  std::unordered_map<const Node*, int64_t> id;
  std::vector<int64_t> arg_nodes, row_ptr{0};
  for (size_t i = 0; i < nodes.size(); ++i) {
    id[nodes[i]] = static_cast<int64_t>(i);
    if (nodes[i]->is_variable()) arg_nodes.push_back(static_cast<int64_t>(i));
    row_ptr.push_back(row_ptr.back() + nodes[i]->num_outputs());
  }
  Writer w;
  auto entries = [&](const std::vector<NodeEntry>& es) {
    w.begin_array(es.size() > 10);
    for (const NodeEntry& e : es) {
      w.item();
      w.ints({id.at(e.node.get()), e.index, e.version});
    }
    w.end_array();
  };
  w.begin_object();
  w.key("nodes");
  w.begin_array(true);
  for (Node* n : nodes) {
    w.item();
    w.begin_object();
    w.key("op");
    w.string(n->is_variable() ? "null" : n->op->name);
    w.key("name");
    w.string(n->name);
    if (!n->attrs.empty()) {
      w.key("attrs");
      w.begin_object(n->attrs.size() > 1);
      for (const auto& [k, v] : n->attrs) {
        w.key(k);
        w.string(v);
      }
      w.end_object();
    }
    w.key("inputs");
    entries(n->inputs);
    if (!n->control_deps.empty()) {
      w.key("control_deps");
      std::vector<int64_t> deps;
      for (const auto& d : n->control_deps) deps.push_back(id.at(d.get()));
      w.ints(deps);
    }
    w.end_object();
  }
  w.end_array();
  w.key("arg_nodes");
  w.ints(arg_nodes);
  w.key("node_row_ptr");
  w.ints(row_ptr);
  w.key("heads");
  entries(outputs);
  w.key("attrs");
  w.begin_object(false);
  w.key("mxnet_version");
  w.begin_array(false);
  w.item();
  w.string("int");
  w.item();
  w.os << kMXNetVersion;
  w.end_array();
  w.end_object();
  w.end_object();
  return w.os.str();
}

Symbol Symbol::from_json(const std::string& json) {
  const Value root = Reader(json).parse();
  const auto& top = root.object("the graph");
  for (const char* k : {"nodes", "arg_nodes", "heads"}) {
    NANOMX_CHECK(find(top, k) != nullptr) << "load_json: the graph has no \"" << k << "\" key";
  }
  // Files without a version are MXNet 0.8's; older than 1.9 get the legacy-key upgrade.
  int64_t version = 800;
  if (const Value* attrs = find(top, "attrs")) {
    if (const Value* v = find(attrs->object("the graph's attrs"), "mxnet_version")) {
      const auto& pair = v->array("mxnet_version");
      NANOMX_CHECK(pair.size() == 2) << "load_json: mxnet_version must be [\"int\", N]";
      version = pair[1].integer("mxnet_version");
    }
  }
  std::vector<std::shared_ptr<Node>> nodes;
  for (const Value& jn : find(top, "nodes")->array("nodes")) {
    const auto& obj = jn.object("a node");
    for (const auto& [k, v] : obj) {
      if (k != "op" && k != "name" && k != "inputs" && k != "attrs" && k != "attr" &&
          k != "param" && k != "control_deps" && k != "subgraphs" && k != "backward_source_id") {
        NANOMX_THROW() << "JSONReader: Unknown field " << k
                       << ", candidates are: \n\"op\"\n\"name\"\n\"inputs\"\n\"attrs\"\n\"attr\"\n"
                          "\"param\"\n\"control_deps\"\n\"subgraphs\"\n\"backward_source_id\"";
      }
    }
    for (const char* k : {"op", "name", "inputs"}) {
      NANOMX_CHECK(find(obj, k) != nullptr)
          << "load_json: node " << nodes.size() << " has no \"" << k << "\" key";
    }
    auto n = std::make_shared<Node>();
    n->name = find(obj, "name")->str("a node's name");
    const std::string& op = find(obj, "op")->str("a node's op");
    // Legacy files keep attributes under "param" (0.8) or "attr"; "attrs" wins.
    for (const char* k : {"param", "attr", "attrs"}) {
      if (const Value* a = find(obj, k)) {
        for (const auto& [key, v] : a->object("a node's attrs"))
          n->attrs[key] = v.str("an attribute");
      }
    }
    for (const Value& e : find(obj, "inputs")->array("a node's inputs")) {
      const auto& t = e.array("an input entry");
      NANOMX_CHECK(t.size() == 2 || t.size() == 3)
          << "load_json: node " << n->name << ": an input entry has " << t.size()
          << " numbers, expected [node, output, version]";
      const int64_t src = t[0].integer("an input's node id");
      NANOMX_CHECK(src >= 0 && static_cast<size_t>(src) < nodes.size())
          << "load_json: node " << n->name << " reads node " << src << ", which is not before it";
      n->inputs.push_back({nodes[static_cast<size_t>(src)],
                           static_cast<uint32_t>(t[1].integer("an output index")),
                           t.size() == 3 ? static_cast<uint32_t>(t[2].integer("a version")) : 0});
    }
    if (const Value* d = find(obj, "control_deps")) {
      for (const Value& x : d->array("control_deps")) {
        const int64_t src = x.integer("a control dependency");
        NANOMX_CHECK(src >= 0 && static_cast<size_t>(src) < nodes.size())
            << "load_json: node " << n->name << ": bad control dependency " << src;
        n->control_deps.push_back(nodes[static_cast<size_t>(src)]);
      }
    }
    if (version < 10900) upgrade_legacy_keys(*n, op);
    if (op != "null") {
      n->op = ops::find_op(op);
      NANOMX_CHECK(n->op != nullptr) << "Failed loading Op " << n->name << " of type " << op
                                     << ": the operator is not registered";
      try {
        n->reparse();
      } catch (const Error& e) {
        NANOMX_THROW() << "Failed loading Op " << n->name << " of type " << op << ": " << e.what();
      }
      for (const NodeEntry& e : n->inputs) {
        NANOMX_CHECK(e.index < e.node->num_outputs())
            << "load_json: node " << n->name << " reads output " << e.index << " of "
            << e.node->name << ", which has " << e.node->num_outputs();
      }
    }
    nodes.push_back(std::move(n));
  }
  for (const Value& a : find(top, "arg_nodes")->array("arg_nodes")) {
    const int64_t i = a.integer("an arg_nodes id");
    NANOMX_CHECK(i >= 0 && static_cast<size_t>(i) < nodes.size() &&
                 nodes[static_cast<size_t>(i)]->is_variable())
        << "load_json: arg_nodes names node " << i << ", which is not a variable";
  }
  Symbol s;
  for (const Value& h : find(top, "heads")->array("heads")) {
    const auto& t = h.array("a head entry");
    NANOMX_CHECK(t.size() == 2 || t.size() == 3) << "load_json: a head entry has " << t.size()
                                                 << " numbers, expected [node, output, version]";
    const int64_t i = t[0].integer("a head's node id");
    NANOMX_CHECK(i >= 0 && static_cast<size_t>(i) < nodes.size())
        << "load_json: a head names node " << i << " of " << nodes.size();
    const auto& node = nodes[static_cast<size_t>(i)];
    const auto index = static_cast<uint32_t>(t[1].integer("a head's output"));
    NANOMX_CHECK(index < node->num_outputs())
        << "load_json: a head reads output " << index << " of " << node->name;
    s.outputs.push_back(
        {node, index, t.size() == 3 ? static_cast<uint32_t>(t[2].integer("a version")) : 0});
  }
  return s;
}

}  // namespace nanomx::symbol
