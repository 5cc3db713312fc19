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
#include "ops/train_mode.h"
#include "profiler/hooks.h"

namespace nanomx::ops {
namespace {

// Kernel providers (kernel.h): a backend's kernels for a device type, registered at load and
// called once when the table is built, in registration order.
struct KernelProvider {
  DeviceType device;
  void (*register_kernels)();
};
constexpr size_t kMaxProviders = 8;
constinit std::array<std::atomic<const KernelProvider*>, kMaxProviders> g_providers{};

// Kernel columns per operator: 0 for the host types (cpu_pinned and cpu_shared run cpu's
// kernels), 1 always empty (a device type without a provider), then one per provider.
constexpr size_t kHostColumn = 0, kEmptyColumn = 1;
constexpr size_t kDeviceSlots = 2 + kMaxProviders;
constexpr size_t kTypeCodes = 8;  // MXNet's device type codes are below 8
// By device type code; written when the table is built, before any kernel lookup.
constinit std::array<uint8_t, kTypeCodes> g_column_of_type = [] {
  std::array<uint8_t, kTypeCodes> c{};
  c.fill(kEmptyColumn);
  for (DeviceType t : {DeviceType::kCPU, DeviceType::kCPUPinned, DeviceType::kCPUShared}) {
    c[static_cast<size_t>(t)] = kHostColumn;
  }
  return c;
}();

size_t device_slot(DeviceType device) {
  const auto code = static_cast<size_t>(device);
  return code < kTypeCodes ? g_column_of_type[code] : kEmptyColumn;
}

std::string device_name(DeviceType device) {
  const std::string s = Context{device, 0}.str();  // "gpu(0)"
  return s.substr(0, s.find('('));
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
  register_linalg_ops(r);
  register_init_ops(r);
  register_index_ops(r);
  register_random_ops(r);
  register_math_ops(r);
  register_nn_ops(r);
  register_convolution_ops(r);
  register_pooling_ops(r);
  register_normalization_ops(r);
  register_nn_layer_ops(r);
  register_fused_convolution_ops(r);
  register_optimizer_ops(r);
  register_custom_ops(r);
  register_backward_ops(r);
  register_gradient_rules();
  register_custom_gradient();
  t.kernel_table = std::make_unique<std::atomic<const Kernel*>[]>(t.ops.size() * kDeviceSlots);
  for (size_t i = 0; i < t.ops.size() * kDeviceSlots; ++i) t.kernel_table[i] = nullptr;
  kernel_slots = t.kernel_table.get();
  for (size_t i = 0; i < kMaxProviders; ++i) {
    const KernelProvider* provider = g_providers[i].load(std::memory_order_acquire);
    if (provider == nullptr) break;
    const auto code = static_cast<size_t>(provider->device);
    if (!Context{provider->device, 0}.is_cpu()) g_column_of_type[code] = 2 + i;
    provider->register_kernels();
  }
  building = nullptr;
  return t;
}

Table& table() {
  static Table& t = build_table();
  return t;
}

// The table, also while it is being built (the kernel files register through this).
Table& current_table() { return building != nullptr ? *building : table(); }

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

// ---- kernels --------------------------------------------------------------------------------

void register_kernel_provider(DeviceType device, void (*register_kernels)()) {
  const auto code = static_cast<size_t>(device);
  NANOMX_CHECK(code < kTypeCodes && register_kernels != nullptr)
      << "register_kernel_provider: invalid device type code " << code << " or no function";
  auto* provider = new KernelProvider{device, register_kernels};  // kept for the process
  for (auto& slot : g_providers) {
    const KernelProvider* empty = nullptr;
    if (slot.compare_exchange_strong(empty, provider, std::memory_order_acq_rel)) return;
  }
  delete provider;
  NANOMX_THROW() << "register_kernel_provider: more than " << kMaxProviders << " providers";
}

void register_kernel(std::string_view name, DeviceType device, Kernel kernel) {
  Table& t = current_table();
  const Op* op = find_op(name);
  NANOMX_CHECK(op != nullptr) << "register_kernel: unknown operator '" << name << "'";
  NANOMX_CHECK(static_cast<bool>(kernel))
      << "register_kernel: empty kernel for '" << op->name << "' on " << device_name(device);
  NANOMX_CHECK(device_slot(device) != kEmptyColumn)
      << "register_kernel: '" << op->name << "' on " << device_name(device)
      << ", a device type without a kernel provider (register_kernel_provider)";
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
  auto add = [&](DeviceType d) {
    if (find_kernel(op, d) != nullptr)
      registered += (registered.empty() ? "" : ", ") + device_name(d);
  };
  add(DeviceType::kCPU);
  for (const auto& slot : g_providers) {
    const KernelProvider* provider = slot.load(std::memory_order_acquire);
    if (provider == nullptr) break;
    if (!Context{provider->device, 0}.is_cpu()) add(provider->device);
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

std::string join_names(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

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
                 std::span<const NDArray> outputs, OutputList& results, size_t expect_outputs,
                 size_t* num_visible) {
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
  if (op.reads_train_mode) launch.params.set_train(training_mode());
  if (op.input_names && !op.variadic()) {
    // Inputs that depend on the attributes (a bias, prelu's gamma): counted now that they are
    // parsed, before any inference reads them (a variadic operator's parse counts its own).
    const std::vector<std::string> names = op.input_names(launch.params);
    NANOMX_CHECK(in.size() == names.size())
        << op.name << ": expected " << names.size() << " input(s), got " << in.size() << " ("
        << join_names(names) << " with these attributes)";
  }
  const ParsedParams& params = launch.params;
  const size_t n_out = static_cast<size_t>(op.outputs_of(params));
  NANOMX_CHECK(expect_outputs == 0 || n_out == expect_outputs)
      << op.name << ": the operator has " << n_out << " outputs, the caller takes "
      << expect_outputs << " (use invoke for all of them)";
  const size_t n_visible =
      op.num_visible_outputs ? static_cast<size_t>(op.visible_outputs_of(params)) : n_out;
  if (num_visible != nullptr) *num_visible = n_visible;
  NANOMX_CHECK(outputs.empty() || outputs.size() == n_out || outputs.size() == n_visible)
      << op.name << ": expected " << n_visible << " output array(s) (or none), got "
      << outputs.size();
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
    if (j < outputs.size()) {
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
