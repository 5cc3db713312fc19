#include "ops/registry.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "base/object_pool.h"
#include "nanomx/storage.h"
#include "profiler/hooks.h"

namespace nanomx::ops {
namespace {

// Kernel slots per operator: cpu (cpu_pinned and cpu_shared run cpu's kernels) and gpu.
constexpr size_t kDeviceSlots = 2;

size_t device_slot(DeviceType device) { return device == DeviceType::kGPU ? 1 : 0; }

const char* device_name(DeviceType device) {
  switch (device) {
    case DeviceType::kGPU:
      return "gpu";
    case DeviceType::kCPUPinned:
      return "cpu_pinned";
    case DeviceType::kCPUShared:
      return "cpu_shared";
    default:
      return "cpu";
  }
}

struct Table {
  std::vector<std::unique_ptr<Op>> ops;
  std::map<std::string, Op*, std::less<>> by_name;
  // Row op.index, column device_slot: read without a lock on every call, written under
  // kernel_mutex (kernels are owned by `kernels` and never freed).
  std::unique_ptr<std::atomic<const Kernel*>[]> kernel_table;
  std::mutex kernel_mutex;
  std::vector<std::unique_ptr<Kernel>> kernels;
};

// The table being built, seen only by the thread building it: another thread's first lookup
// must wait for the finished table (table()'s static initialisation), not read a half-built one
// (four threads' first invoke once failed with "unknown operator").
thread_local Table* building = nullptr;
// The table's kernel slots, set once while it is built (before any Op can be looked up), so the
// call path reads a kernel with one load.
std::atomic<const Kernel*>* kernel_slots = nullptr;

Table& build_table() {
  // Never destroyed: operations still pending at exit run its kernels after static destructors.
  static Table& t = *new Table;
  building = &t;
  Registry r;
  register_elemwise_ops(r);
  register_layout_ops(r);
  register_reduce_ops(r);
  register_dot_ops(r);
  register_shape_ops(r);
  register_init_ops(r);
  register_sample_ops(r);
  register_index_ops(r);
  register_random_ops(r);
  register_math_ops(r);
  register_nn_ops(r);
  register_optimizer_ops(r);
  register_custom_ops(r);
  register_backward_ops(r);
  register_gradient_rules();
  register_custom_gradient();
  t.kernel_table = std::make_unique<std::atomic<const Kernel*>[]>(t.ops.size() * kDeviceSlots);
  for (size_t i = 0; i < t.ops.size() * kDeviceSlots; ++i) t.kernel_table[i] = nullptr;
  kernel_slots = t.kernel_table.get();
  register_cpu_kernels();
#ifdef NANOMX_HAVE_CUDA
  register_cuda_kernels();  // ops/cuda/kernels.cc: only when a GPU is visible
#endif
  building = nullptr;
  return t;
}

Table& table() {
  static Table& t = build_table();
  return t;
}

// The table, also while it is being built (the kernel files register through this).
Table& current_table() { return building != nullptr ? *building : table(); }

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
  NANOMX_CHECK(!p->variadic() || p->inputs.size() == 1)
      << "variadic operator '" << p->name << "' needs exactly one input name";
  NANOMX_CHECK(static_cast<bool>(p->infer_shape))
      << "operator '" << p->name << "' has no shape inference";
  p->index = t.ops.size();
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
  Table& t = current_table();
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
    if (op.any_keys) break;
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
  {
    // The common text (Python's repr of a float, "1.0", "-0.5", "1e-08") through from_chars:
    // correctly rounded like strtod, at a fraction of its cost. Anything else (a '+', hex,
    // out of range) takes strtod's path below, as before.
    std::string_view view = *v;
    while (!view.empty() && std::isspace(static_cast<unsigned char>(view.front()))) {
      view.remove_prefix(1);
    }
    while (!view.empty() && std::isspace(static_cast<unsigned char>(view.back()))) {
      view.remove_suffix(1);
    }
    double d = 0;
    const char* end = view.data() + view.size();
    const auto [ptr, ec] = std::from_chars(view.data(), end, d);
    if (!view.empty() && ec == std::errc() && ptr == end) return d;
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

std::optional<std::vector<double>> Params::get_floats(std::string_view key) const {
  const std::string* v = find(key);
  if (!v) return std::nullopt;
  std::string t = trim(*v);
  if (!t.empty() && (t.front() == '(' || t.front() == '[')) {
    const char close = t.front() == '(' ? ')' : ']';
    if (t.back() != close) bad(key, *v, "a tuple of numbers");
    t = t.substr(1, t.size() - 2);
  }
  std::vector<double> result;
  std::stringstream ss(t);
  std::string item;
  std::vector<std::string> items;
  while (std::getline(ss, item, ',')) items.push_back(trim(item));
  if (!items.empty() && items.back().empty()) items.pop_back();  // "(0.5,)"
  for (const std::string& it : items) {
    char* end = nullptr;
    const double d = std::strtod(it.c_str(), &end);
    if (it.empty() || *end != '\0') bad(key, *v, "a tuple of numbers");
    result.push_back(d);
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

// ---- kernels --------------------------------------------------------------------------------

void register_kernel(std::string_view name, DeviceType device, Kernel kernel) {
  Table& t = current_table();
  const Op* op = find_op(name);
  NANOMX_CHECK(op != nullptr) << "register_kernel: unknown operator '" << name << "'";
  NANOMX_CHECK(static_cast<bool>(kernel))
      << "register_kernel: empty kernel for '" << op->name << "' on " << device_name(device);
  std::lock_guard lock(t.kernel_mutex);
  std::atomic<const Kernel*>& slot = t.kernel_table[op->index * kDeviceSlots + device_slot(device)];
  NANOMX_CHECK(slot.load(std::memory_order_relaxed) == nullptr)
      << "register_kernel: '" << op->name << "' already has a " << device_name(device) << " kernel";
  t.kernels.push_back(std::make_unique<Kernel>(std::move(kernel)));
  slot.store(t.kernels.back().get(), std::memory_order_release);
}

const Kernel* find_kernel(const Op& op, DeviceType device) {
  return kernel_slots[op.index * kDeviceSlots + device_slot(device)].load(
      std::memory_order_acquire);
}

const Kernel& get_kernel(const Op& op, DeviceType device) {
  const Kernel* kernel = find_kernel(op, device);
  if (kernel != nullptr) return *kernel;
  std::string registered;
  for (DeviceType d : {DeviceType::kCPU, DeviceType::kGPU}) {
    if (find_kernel(op, d) != nullptr)
      registered += (registered.empty() ? "" : ", ") + std::string(device_name(d));
  }
  NANOMX_THROW() << op.name << ": no kernel for device " << device_name(device)
                 << " (registered: " << (registered.empty() ? "none" : registered) << ")";
  std::abort();  // unreachable: the line above throws
}

// ---- definition helpers ---------------------------------------------------------------------

std::vector<std::string> Op::output_names_of(const ParsedParams& p) const {
  if (output_names) return output_names(p);
  const int n = outputs_of(p);
  if (n == 1) return {"output"};
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("output" + std::to_string(i));
  return names;
}

void parse_attrs_into(const Op& op, const Attrs& attrs, size_t num_inputs, ParsedParams& out) {
  if (attrs.empty() && !op.parse) {  // nothing to check or parse (broadcast_add, negative, ...)
    out.clear(&op.name);
    return;
  }
  Params reader(op, attrs);
  if (op.variadic() && reader.has(op.num_inputs_key)) {
    const int64_t n = reader.get_int(op.num_inputs_key);
    NANOMX_CHECK(n >= 0 && n * op.input_group == static_cast<int64_t>(num_inputs))
        << op.name << ": attribute '" << op.num_inputs_key << "' = " << n << " but " << num_inputs
        << " input(s) given"
        << (op.input_group > 1 ? " (" + std::to_string(op.input_group) + " per group)" : "");
  }
  out = ParsedParams(&op.name);
  if (op.parse) op.parse(reader, out);
}

ParsedParams parse_attrs(const Op& op, const Attrs& attrs, size_t num_inputs) {
  ParsedParams parsed;
  parse_attrs_into(op, attrs, num_inputs, parsed);
  return parsed;
}

namespace {

std::string input_name(const Op& op, size_t i) {
  if (op.variadic()) return op.inputs[0] + "[" + std::to_string(i) + "]";
  return i < op.inputs.size() ? op.inputs[i] : "input " + std::to_string(i);
}

void check_counts(const Op& op, const ParsedParams& p, size_t num_in, size_t num_out) {
  const size_t want = op.input_names ? op.input_names(p).size() : op.inputs.size();
  NANOMX_CHECK(op.variadic() ? num_in >= 1 : num_in == want)
      << op.name << ": expected " << (op.variadic() ? "at least 1" : std::to_string(want))
      << " input(s), got " << num_in;
  const int n = op.outputs_of(p);
  NANOMX_CHECK(num_out == static_cast<size_t>(n))
      << op.name << ": " << num_out << " output slot(s) given, the operator has " << n;
}

}  // namespace

void infer_shapes(const Op& op, const ParsedParams& p, std::span<PartialShape> in,
                  std::span<PartialShape> out) {
  check_counts(op, p, in.size(), out.size());
  op.infer_shape(p, in, out);
}

bool infer_known_shapes(const Op& op, const ParsedParams& p, std::span<const Shape* const> in,
                        std::span<Shape> out) {
  check_counts(op, p, in.size(), out.size());
  return op.infer_shape_known != nullptr && op.infer_shape_known(p, in, out);
}

namespace {

// Every input and output has one dtype (MXNet's ElemwiseType).
void same_type(const Op& op, std::span<PartialDType> in, std::span<PartialDType> out) {
  // The common case first: every input known and alike.
  if (!in.empty() && in[0]) {
    bool alike = true;
    for (size_t i = 1; i < in.size(); ++i) alike = alike && in[i] == in[0];
    for (const PartialDType& o : out) alike = alike && (!o || o == in[0]);
    if (alike) {
      for (PartialDType& o : out) o = in[0];
      return;
    }
  }
  PartialDType merged;
  size_t first = 0;
  const size_t n = in.size() + out.size();
  auto slot = [&](size_t i) -> PartialDType& { return i < in.size() ? in[i] : out[i - in.size()]; };
  auto name = [&](size_t i) {
    return i < in.size() ? "'" + input_name(op, i) + "'" : std::string("the output");
  };
  for (size_t i = 0; i < n; ++i) {
    if (!slot(i)) continue;
    if (!merged) {
      merged = slot(i);
      first = i;
      continue;
    }
    NANOMX_CHECK(*slot(i) == *merged)
        << op.name << ": " << name(first) << " has dtype " << dtype_name(*merged) << " but "
        << name(i) << " has " << dtype_name(*slot(i));
  }
  for (size_t i = 0; i < n; ++i) slot(i) = merged;
}

void infer_types_unchecked(const Op& op, const ParsedParams& p, std::span<PartialDType> in,
                           std::span<PartialDType> out) {
  if (op.infer_type) {
    op.infer_type(p, in, out);
  } else {
    same_type(op, in, out);
  }
}

}  // namespace

void infer_types(const Op& op, const ParsedParams& p, std::span<PartialDType> in,
                 std::span<PartialDType> out) {
  check_counts(op, p, in.size(), out.size());
  infer_types_unchecked(op, p, in, out);
}

// ---- invoke -------------------------------------------------------------------------------

namespace {

// What the engine runs: the kernel with the call's parsed attributes and its own references to
// the inputs and outputs (so their storage outlives the call). The lists are inline for a few
// arrays: an operator call allocates nothing here beyond what the engine's std::function needs
// for this object. That std::function holds it through a new-expression (too big for its inline
// buffer): made on the pushing thread and destroyed on a worker, it comes from a process-wide
// block pool (base/object_pool.h).
struct Launch : base::Pooled<Launch> {
  const Kernel* kernel = nullptr;
  ParsedParams params;
  SmallVector<NDArray, 4> in;
  SmallVector<NDArray, 2> out;  // what the kernel writes: an output, or its temporary
  // (temporary, output) where an output shares storage with an input it may not overwrite.
  std::vector<std::pair<NDArray, NDArray>> copy_back;

  void operator()() const { run(in.span()); }

  // The kernel on `inputs` (the launch's own references, or the caller's arrays when the call
  // runs before invoke returns), then the copies out of temporaries.
  void run(std::span<const NDArray> inputs) const {
    (*kernel)(params, inputs, out.span());
    for (const auto& [temp, dest] : copy_back) {
      if (dest.nbytes()) std::memcpy(dest.data(), temp.data(), dest.nbytes());
    }
  }
};

std::string input_shape_list(std::span<const NDArray> in) {
  std::string list;
  for (size_t i = 0; i < in.size(); ++i) list += (i ? ", " : "") + in[i].shape().str();
  return list;
}

// The eager fast path: every input shape is known, so an operator with infer_shape_known infers
// into Shapes directly, and the default dtype rule (one dtype for all) is a comparison. False
// where it cannot decide (no shortcut, a custom dtype rule, anything that disagrees): the
// general path then infers again and reports what is wrong.
bool infer_known(const Op& op, const ParsedParams& params, std::span<const NDArray> in,
                 std::span<const NDArray> outputs, std::span<Shape> out_shapes,
                 std::span<DType> out_types) {
  if (op.infer_shape_known == nullptr || op.infer_type || in.empty()) return false;
  const DType dtype = in[0].dtype();
  for (const NDArray& a : in) {
    if (a.dtype() != dtype) return false;
  }
  // Inline for a few inputs (every call passes here), on the heap for more.
  SmallVector<const Shape*, 6> shapes;
  shapes.reserve(in.size());
  for (const NDArray& a : in) shapes.push_back(&a.shape());
  if (!op.infer_shape_known(params, std::span<const Shape* const>(shapes.data(), shapes.size()),
                            out_shapes)) {
    return false;
  }
  // Given outputs were constraints of the general inference: any mismatch is reported there.
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (outputs[j].dtype() != dtype || !(outputs[j].shape() == out_shapes[j])) return false;
  }
  for (DType& t : out_types) t = dtype;
  return true;
}

// Inference on partial shapes and dtypes (any operator, any case), the given outputs as
// constraints; throws naming the operator and the shapes when the outputs stay unknown.
void infer_general(const Op& op, const ParsedParams& params, std::span<const NDArray> in,
                   std::span<const NDArray> outputs, std::span<Shape> out_shapes,
                   std::span<DType> out_types) {
  const size_t n_in = in.size(), n_out = out_shapes.size();
  SmallVector<PartialShape, 6> shapes;
  SmallVector<PartialDType, 6> types;
  shapes.reserve(n_in + n_out);
  types.reserve(n_in + n_out);
  for (const NDArray& a : in) {
    shapes.emplace_back(a.shape());
    types.emplace_back(a.dtype());
  }
  for (const NDArray& o : outputs) {
    shapes.emplace_back(o.shape());
    types.emplace_back(o.dtype());
  }
  for (size_t j = outputs.size(); j < n_out; ++j) {
    shapes.emplace_back();
    types.emplace_back();
  }
  const std::span<PartialShape> in_shapes = shapes.span().first(n_in);
  const std::span<PartialShape> out_partial = shapes.span().subspan(n_in);
  const std::span<PartialDType> out_partial_types = types.span().subspan(n_in);
  op.infer_shape(params, in_shapes, out_partial);
  infer_types_unchecked(op, params, types.span().first(n_in), out_partial_types);
  for (size_t j = 0; j < n_out; ++j) {
    NANOMX_CHECK(out_partial[j].known() && out_partial_types[j])
        << op.name << ": cannot infer the shape and dtype of output " << j << " (got "
        << out_partial[j] << ") from inputs " << shape_list(in_shapes);
    out_shapes[j] = std::move(out_partial[j]).take_shape();
    out_types[j] = *out_partial_types[j];
  }
}

}  // namespace

void invoke_into(const Op& op, std::span<const NDArray> in, const Attrs& attrs,
                 std::span<const NDArray> outputs, OutputList& results, size_t expect_outputs) {
  // Attribute-dependent inputs are a prefix of `inputs`; parsing checks the exact count.
  NANOMX_CHECK(op.variadic()    ? !in.empty()
               : op.input_names ? in.size() <= op.inputs.size()
                                : in.size() == op.inputs.size())
      << op.name << ": expected "
      << (op.variadic() ? "at least 1" : std::to_string(op.inputs.size())) << " input(s), got "
      << in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    NANOMX_CHECK(!in[i].is_none()) << op.name << ": input '" << input_name(op, i)
                                   << "' is a none array (no shape, never assigned)";
  }
  Launch launch;
  parse_attrs_into(op, attrs, in.size(), launch.params);
  const ParsedParams& params = launch.params;
  const size_t n_out = static_cast<size_t>(op.outputs_of(params));
  NANOMX_CHECK(expect_outputs == 0 || n_out == expect_outputs)
      << op.name << ": the operator has " << n_out << " outputs, the caller takes "
      << expect_outputs << " (use invoke for all of them)";
  NANOMX_CHECK(outputs.empty() || outputs.size() == n_out)
      << op.name << ": expected " << n_out << " output array(s) (or none), got " << outputs.size();
  for (const NDArray& o : outputs) {
    NANOMX_CHECK(!o.is_none()) << op.name << ": output is a none array (no shape, never assigned)";
  }
  const size_t n_in = in.size();
  SmallVector<Shape, 4> out_shapes(n_out);
  SmallVector<DType, 4> out_types(n_out);
  const bool fast = infer_known(op, params, in, outputs, out_shapes.span(), out_types.span());
  if (!fast) infer_general(op, params, in, outputs, out_shapes.span(), out_types.span());
  const Context ctx = !outputs.empty()     ? outputs[0].ctx()
                      : !in.empty()        ? in[0].ctx()
                      : op.default_context ? op.default_context(params)
                                           : Context::cpu(0);
  if (!op.run_async) {
    launch.kernel = find_kernel(op, ctx.dev_type);
    if (launch.kernel == nullptr) launch.kernel = &get_kernel(op, ctx.dev_type);  // throws
  }
  results.clear();
  results.reserve(n_out);
  // The GPU memory profile names what an operator allocates after it, under the current scope
  // (MXNet: `init:_random_uniform`). Only while it records: an eager call is ~0.15 µs, and two
  // thread-local exchanges across libraries cost it ~10 % (runtime_bench BM_TinyOpInvokeWait).
  const storage::AllocationLabelScope label({{}, op.name}, profiler::active(profiler::kMemory));
  for (size_t j = 0; j < n_out; ++j) {
    if (!outputs.empty()) {
      const NDArray& given = outputs[j];
      NANOMX_CHECK(given.shape() == out_shapes[j] && given.dtype() == out_types[j])
          << op.name << ": output array has shape " << given.shape() << " and dtype "
          << dtype_name(given.dtype()) << ", expected shape " << out_shapes[j] << " and dtype "
          << dtype_name(out_types[j]) << " (inputs: " << input_shape_list(in) << ")";
      results.push_back(given);
    } else {
      results.emplace_back(std::move(out_shapes[j]), ctx, out_types[j]);
    }
  }
  // An input sharing an output's storage is safe only where the operator declares that pair in
  // place and only when it is exactly the output; otherwise the kernel writes a temporary that
  // is then copied.
  launch.out.reserve(n_out);
  for (size_t j = 0; j < n_out; ++j) {
    const NDArray& out = results[j];
    bool aliased = false;
    for (size_t i = 0; i < n_in; ++i) {
      const NDArray& a = in[i];
      if (!a.same_storage(out)) continue;
      const bool exact =
          a.data() == out.data() && a.shape() == out.shape() && a.dtype() == out.dtype();
      aliased = aliased || !(exact && op.may_share(static_cast<int>(i), static_cast<int>(j)));
    }
    if (aliased) {
      NDArray temp(out.shape(), out.ctx(), out.dtype());
      launch.copy_back.emplace_back(temp, out);
      launch.out.push_back(std::move(temp));
    } else {
      launch.out.push_back(out);
    }
  }
  // The engine variables: the inputs' (read), then the state's and the outputs' (written).
  SmallVector<engine::VarHandle, 8> vars;
  vars.reserve(n_in + n_out + 1 + op.mutate_inputs.size());
  for (const NDArray& a : in) vars.push_back(a.var());
  if (op.state_var) vars.push_back(op.state_var());
  // A variable listed as both read and written counts as written (engine.h).
  if (op.input_group > 1) {
    for (size_t i = 0; i < n_in; ++i) {
      if (op.mutates(static_cast<int>(i))) vars.push_back(in[i].var());
    }
  } else {
    for (const int i : op.mutate_inputs) {
      if (static_cast<size_t>(i) < n_in) vars.push_back(in[i].var());
    }
  }
  for (const NDArray& o : results) vars.push_back(o.var());
  engine::PushOptions options;
  options.name = op.engine_name.c_str();
  options.name_id = op.engine_name_id;
  // The engine copies the shapes during push, so pointers to the caller's arrays will do.
  SmallVector<const Shape*, 8> shape_ptrs;
  if (profiler::active(options.profile_mode)) {
    for (const NDArray& a : in) shape_ptrs.push_back(&a.shape());
    for (const NDArray& o : results) shape_ptrs.push_back(&o.shape());
    options.input_shapes = shape_ptrs.span().first(n_in);
    options.output_shapes = shape_ptrs.span().subspan(n_in);
  }
  // The cost estimate that lets a small call run on the calling thread (engine.h).
  size_t bytes = 0;
  for (const NDArray& a : in) bytes += a.nbytes();
  for (const NDArray& o : results) bytes += o.nbytes();
  options.bytes_touched = bytes;
  const Context push_ctx = results[0].ctx();
  const std::span<const engine::VarHandle> all_vars = vars.span();
  auto keep_inputs = [&] {  // the launch's own references, for work that outlives this call
    launch.in.reserve(n_in);
    for (const NDArray& a : in) launch.in.push_back(a);
  };
  if (op.run_async) {
    NANOMX_CHECK(launch.copy_back.empty())
        << op.name << ": an output may not share storage with an input of this operator";
    keep_inputs();
    // Unnamed: never profiled (the work it hands off is).
    engine::PushOptions async_options;
    async_options.prop = engine::FnProperty::kAsync;
    engine::Engine::get().push_async(
        [call = std::make_shared<Launch>(std::move(launch)),
         run = &op.run_async](engine::Completion done) {
          (*run)(call->params, call->in.span(), call->out.span(), std::move(done));
        },
        push_ctx, all_vars.first(n_in), all_vars.subspan(n_in), async_options);
    return;
  }
  engine::Engine& engine = engine::Engine::get();
  // Ready and small: it runs right here, on the caller's arrays (they outlive this call), with no
  // owning function to build (engine.h, try_run_inline).
  if (engine.try_run_inline([&] { launch.run(in); }, push_ctx, all_vars.first(n_in),
                            all_vars.subspan(n_in), options)) {
    return;
  }
  keep_inputs();
  engine.push(std::move(launch), push_ctx, all_vars.first(n_in), all_vars.subspan(n_in), options);
}

std::vector<NDArray> invoke(const Op& op, std::span<const NDArray> inputs, const Attrs& attrs,
                            std::span<const NDArray> outputs) {
  OutputList results;
  invoke_into(op, inputs, attrs, outputs, results);
  return {results.begin(), results.end()};
}

NDArray invoke_one(const Op& op, std::span<const NDArray> inputs, const Attrs& attrs,
                   std::span<const NDArray> outputs) {
  OutputList results;
  invoke_into(op, inputs, attrs, outputs, results, /*expect_outputs=*/1);
  return std::move(results[0]);
}

std::vector<NDArray> invoke(std::string_view name, std::span<const NDArray> inputs,
                            const Attrs& attrs, std::span<const NDArray> outputs) {
  return invoke(get_op(name), inputs, attrs, outputs);
}

}  // namespace nanomx::ops
