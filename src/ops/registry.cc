#include "ops/registry.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>

#include "base/object_pool.h"
#include "profiler/hooks.h"

namespace nanomx::ops {
namespace {

struct Table {
  std::vector<std::unique_ptr<Op>> ops;
  std::map<std::string, Op*, std::less<>> by_name;
};

Table* building = nullptr;

Table& build_table() {
  static Table t;
  building = &t;
  Registry r;
  register_elemwise_ops(r);
  register_layout_ops(r);
  register_reduce_ops(r);
  register_dot_ops(r);
  register_index_ops(r);
  register_random_ops(r);
  building = nullptr;
  return t;
}

Table& table() {
  static Table& t = build_table();
  return t;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::optional<int64_t> parse_int_text(const std::string& text) {
  std::string t = trim(text);
  if (!t.empty() && (t.back() == 'L' || t.back() == 'l')) t.pop_back();  // Python 2 longs
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) return std::nullopt;
  return static_cast<int64_t>(v);
}

}  // namespace

Op& Registry::add(Op op, std::vector<std::string> aliases) {
  NANOMX_CHECK(building != nullptr) << "operators register only while the registry is built";
  Table& t = *building;
  auto owned = std::make_unique<Op>(std::move(op));
  Op* p = owned.get();
  NANOMX_CHECK(p->inputs.size() <= kMaxInputs)
      << "operator '" << p->name << "' has " << p->inputs.size() << " inputs (at most "
      << kMaxInputs << ")";
  const std::string& engine_name = p->engine_name.empty() ? p->name : p->engine_name;
  p->engine_name = engine_name;
  p->engine_name_id = profiler::intern(p->engine_name);
  t.ops.push_back(std::move(owned));
  aliases.insert(aliases.begin(), p->name);
  for (const std::string& a : aliases) {
    NANOMX_CHECK(t.by_name.emplace(a, p).second) << "operator '" << a << "' registered twice";
  }
  return *p;
}

const Op* find_op(std::string_view name) {
  Table& t = table();
  auto it = t.by_name.find(name);
  return it == t.by_name.end() ? nullptr : it->second;
}

const Op& get_op(std::string_view name) {
  const Op* op = find_op(name);
  NANOMX_CHECK(op != nullptr) << "unknown operator '" << name << "'";
  return *op;
}

std::vector<std::string> list_op_names() {
  std::vector<std::string> names;
  for (const auto& [name, op] : table().by_name) names.push_back(name);
  return names;
}

const std::string& op_name(const Op& op) { return op.name; }

// ---- Params -------------------------------------------------------------------------------

Params::Params(const Op& op, const Attrs& attrs) : op_name_(op.name), attrs_(attrs) {
  for (const auto& [key, value] : attrs) {
    if (std::find(op.keys.begin(), op.keys.end(), key) != op.keys.end()) continue;
    std::ostringstream valid;
    for (size_t i = 0; i < op.keys.size(); ++i) valid << (i ? ", " : "") << op.keys[i];
    NANOMX_THROW() << op.name << ": unknown attribute '" << key
                   << "' (valid: " << (op.keys.empty() ? "none" : valid.str()) << ")";
  }
  for (size_t i = 0; i < attrs.size(); ++i) {
    for (size_t j = i + 1; j < attrs.size(); ++j) {
      NANOMX_CHECK(attrs[i].first != attrs[j].first)
          << op.name << ": attribute '" << attrs[i].first << "' given twice";
    }
  }
}

const std::string* Params::find(std::string_view key) const {
  for (const auto& [k, v] : attrs_) {
    if (k == key) return &v;
  }
  return nullptr;
}

const std::string* Params::require(std::string_view key) const {
  const std::string* v = find(key);
  NANOMX_CHECK(v != nullptr) << op_name_ << ": required attribute '" << key << "' is missing";
  return v;
}

void Params::bad(std::string_view key, const std::string& value, const char* kind) const {
  NANOMX_THROW() << op_name_ << ": attribute '" << key << "' = '" << value << "' is not " << kind;
  std::abort();  // unreachable: the line above throws
}

double Params::get_float(std::string_view key, std::optional<double> fallback) const {
  const std::string* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    v = require(key);
  }
  std::string t = trim(*v);
  if (t == "inf" || t == "+inf") return INFINITY;
  if (t == "-inf") return -INFINITY;
  if (t == "nan") return NAN;
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0') bad(key, *v, "a number");
  return d;
}

int64_t Params::get_int(std::string_view key, std::optional<int64_t> fallback) const {
  const std::string* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    v = require(key);
  }
  auto parsed = parse_int_text(*v);
  if (!parsed) bad(key, *v, "an integer");
  return *parsed;
}

bool Params::get_bool(std::string_view key, std::optional<bool> fallback) const {
  const std::string* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    v = require(key);
  }
  const std::string t = trim(*v);
  if (t == "True" || t == "true" || t == "1") return true;
  if (t == "False" || t == "false" || t == "0") return false;
  bad(key, *v, "a boolean (True, False, 1, 0)");
}

std::string Params::get_string(std::string_view key, std::optional<std::string> fallback) const {
  const std::string* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    v = require(key);
  }
  std::string t = trim(*v);
  if (t.size() >= 2 && (t.front() == '\'' || t.front() == '"') && t.back() == t.front()) {
    t = t.substr(1, t.size() - 2);
  }
  return t;
}

DType Params::get_dtype(std::string_view key, DType fallback) const {
  const std::string* v = find(key);
  if (!v || get_string(key) == "None") return fallback;
  try {
    return parse_dtype(get_string(key));
  } catch (const Error& e) {
    NANOMX_THROW() << op_name_ << ": attribute '" << key << "': " << e.what();
  }
  return fallback;
}

std::optional<std::vector<std::optional<int64_t>>> Params::get_tuple(std::string_view key) const {
  const std::string* v = find(key);
  if (!v) return std::nullopt;
  std::string t = trim(*v);
  if (t == "None") return std::nullopt;
  std::vector<std::optional<int64_t>> result;
  if (!t.empty() && (t.front() == '(' || t.front() == '[')) {
    const char close = t.front() == '(' ? ')' : ']';
    if (t.back() != close) bad(key, *v, "a tuple");
    t = t.substr(1, t.size() - 2);
    if (trim(t).empty()) return result;
    std::stringstream ss(t);
    std::string item;
    std::vector<std::string> items;
    while (std::getline(ss, item, ',')) items.push_back(trim(item));
    if (!items.empty() && items.back().empty()) items.pop_back();  // "(3,)"
    for (const std::string& it : items) {
      if (it == "None") {
        result.push_back(std::nullopt);
        continue;
      }
      auto parsed = parse_int_text(it);
      if (!parsed) bad(key, *v, "a tuple of integers");
      result.push_back(*parsed);
    }
    return result;
  }
  auto parsed = parse_int_text(t);
  if (!parsed) bad(key, *v, "an integer or a tuple of integers");
  result.push_back(*parsed);
  return result;
}

std::optional<std::vector<int64_t>> Params::get_ints(std::string_view key) const {
  auto tuple = get_tuple(key);
  if (!tuple) return std::nullopt;
  std::vector<int64_t> result;
  for (const auto& item : *tuple) {
    if (!item) bad(key, *find(key), "a tuple of integers (None is not allowed here)");
    result.push_back(*item);
  }
  return result;
}

Shape Params::get_shape(std::string_view key) const {
  require(key);
  auto dims = get_ints(key);
  if (!dims) bad(key, *find(key), "a shape");
  for (int64_t d : *dims) {
    if (d < 0) bad(key, *find(key), "a shape (negative dimension)");
  }
  return Shape(*dims);
}

std::string shape_list(std::span<const NDArray> in) {
  std::ostringstream os;
  for (size_t i = 0; i < in.size(); ++i) os << (i ? ", " : "") << in[i].shape();
  return os.str();
}

Context parse_ctx(const Params& p) {
  if (!p.has("ctx")) return Context::cpu(0);
  const std::string text = p.get_string("ctx");
  if (text.empty() || text == "None") return Context::cpu(0);
  int type = 0;
  std::string id_text;
  for (auto [prefix, code] : {std::pair{"cpu_pinned(", 3}, std::pair{"cpu_shared(", 5},
                              std::pair{"cpu(", 1}, std::pair{"gpu(", 2}}) {
    const std::string pre = prefix;
    if (text.rfind(pre, 0) == 0 && text.back() == ')') {
      type = code;
      id_text = text.substr(pre.size(), text.size() - pre.size() - 1);
      break;
    }
  }
  auto id = parse_int_text(id_text);
  NANOMX_CHECK(type != 0 && id) << p.op() << ": attribute 'ctx' = '" << text
                                << "' is not a context (cpu(0), gpu(0), ...)";
  return make_context(type, static_cast<int>(*id));
}

// ---- invoke -------------------------------------------------------------------------------

namespace {

// What the engine runs: the kernel with its own references to the inputs (so their storage
// outlives the call) and the output. Inputs are kept inline: an operator call allocates nothing
// here beyond what the engine's std::function needs for this object. That std::function holds
// it through a new-expression (too big for its inline buffer): made on the pushing thread and
// destroyed on a worker, it comes from a process-wide block pool (base/object_pool.h).
struct Launch : base::Pooled<Launch> {
  Kernel kernel;
  std::array<NDArray, kMaxInputs> in;
  size_t num_in = 0;
  NDArray out;
  NDArray temp;  // not none when the kernel writes a temporary that is then copied to out

  void operator()() const {
    const std::span<const NDArray> inputs(in.data(), num_in);
    if (temp.is_none()) {
      kernel(inputs, out);
      return;
    }
    kernel(inputs, temp);
    if (out.nbytes()) std::memcpy(out.data(), temp.data(), out.nbytes());
  }
};

}  // namespace

NDArray invoke_one(const Op& op, std::span<const NDArray> in, const Attrs& attrs,
                   std::span<const NDArray> outputs) {
  NANOMX_CHECK(in.size() == op.inputs.size())
      << op.name << ": expected " << op.inputs.size() << " input(s), got " << in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    NANOMX_CHECK(!in[i].is_none())
        << op.name << ": input '" << op.inputs[i] << "' is a none array (no shape, never assigned)";
  }
  NANOMX_CHECK(outputs.size() <= 1)
      << op.name << ": expected at most 1 output array, got " << outputs.size();
  const NDArray* given = outputs.empty() ? nullptr : &outputs[0];
  NANOMX_CHECK(!given || !given->is_none())
      << op.name << ": output is a none array (no shape, never assigned)";
  Params params(op, attrs);
  Plan plan = op.plan(params, in, given);
  Launch launch;
  NDArray& out = launch.out;
  if (given) {
    NANOMX_CHECK(given->shape() == plan.shape && given->dtype() == plan.dtype)
        << op.name << ": output array has shape " << given->shape() << " and dtype "
        << dtype_name(given->dtype()) << ", expected shape " << plan.shape << " and dtype "
        << dtype_name(plan.dtype) << " (inputs: " << shape_list(in) << ")";
    out = *given;
  } else {
    const Context ctx = in.empty() ? plan.ctx : in[0].ctx();
    out = NDArray(std::move(plan.shape), ctx, plan.dtype);
  }
  launch.kernel = std::move(plan.kernel);
  // An input sharing the output's storage is safe only for in-place-capable kernels and only
  // when it is exactly the output; otherwise the kernel writes a temporary that is then copied.
  bool aliased = false;
  for (const NDArray& a : in) {
    if (!a.same_storage(out)) continue;
    const bool exact =
        a.data() == out.data() && a.shape() == out.shape() && a.dtype() == out.dtype();
    aliased = aliased || !(op.inplace_ok && exact);
  }
  if (aliased) launch.temp = NDArray(out.shape(), out.ctx(), out.dtype());
  std::copy(in.begin(), in.end(), launch.in.begin());
  launch.num_in = in.size();

  engine::VarHandle reads[kMaxInputs];
  for (size_t i = 0; i < in.size(); ++i) reads[i] = in[i].var();
  engine::VarHandle write_buffer[4];
  std::span<const engine::VarHandle> writes;
  std::vector<engine::VarHandle> write_heap;
  if (plan.extra_writes.size() < std::size(write_buffer)) {
    std::copy(plan.extra_writes.begin(), plan.extra_writes.end(), write_buffer);
    write_buffer[plan.extra_writes.size()] = out.var();
    writes = std::span(write_buffer, plan.extra_writes.size() + 1);
  } else {
    write_heap = std::move(plan.extra_writes);
    write_heap.push_back(out.var());
    writes = write_heap;
  }
  engine::PushOptions options;
  options.name = op.engine_name.c_str();
  options.name_id = op.engine_name_id;
  // The engine copies the shapes during push, so pointers to the caller's arrays will do.
  // `launch` is moved into the engine's function before push runs: point at `result` instead.
  NDArray result = out;
  const Shape* in_shapes[kMaxInputs];
  const Shape* out_shapes[] = {&result.shape()};
  if (profiler::active(options.profile_mode)) {
    for (size_t i = 0; i < in.size(); ++i) in_shapes[i] = &in[i].shape();
    options.input_shapes = std::span<const Shape* const>(in_shapes, in.size());
    options.output_shapes = out_shapes;
  }
  const Context ctx = out.ctx();
  engine::Engine::get().push(std::move(launch), ctx, std::span(reads, in.size()), writes, options);
  return result;
}

std::vector<NDArray> invoke(const Op& op, std::span<const NDArray> inputs, const Attrs& attrs,
                            std::span<const NDArray> outputs) {
  return {invoke_one(op, inputs, attrs, outputs)};
}

std::vector<NDArray> invoke(std::string_view name, std::span<const NDArray> inputs,
                            const Attrs& attrs, std::span<const NDArray> outputs) {
  return invoke(get_op(name), inputs, attrs, outputs);
}

}  // namespace nanomx::ops
