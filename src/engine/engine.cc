#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>

#include "engine/engines.h"
#include "engine/var.h"
#include "nanomx/env.h"
#include "nanomx/error.h"
#include "profiler/hooks.h"

namespace nanomx::engine {

OprBlock* new_async_opr_block(AsyncFn fn, Completer* completer, Context ctx,
                              std::span<const VarHandle> reads, std::span<const VarHandle> writes,
                              const PushOptions& options) {
  NANOMX_CHECK(fn) << "engine push_async" << (options.name ? " of " : "")
                   << (options.name ? options.name : "") << ": empty function";
  auto* op = new OprBlock;
  op->async = std::make_unique<AsyncState>();
  op->async->fn = std::move(fn);
  op->async->completer = completer;
  op->async->refs.store(1, std::memory_order_relaxed);  // the engine's
  try {
    init_opr_block(*op, ctx, reads, writes, options);
  } catch (...) {
    delete op;
    throw;
  }
  // Its span ends at the completion, maybe on another thread: the arrow shows where it began.
  start_push_flow(*op);
  return op;
}

namespace {
// The innermost CustomOpScope of this thread (null: none).
thread_local const std::string* custom_op_prefix = nullptr;
}  // namespace

CustomOpScope::CustomOpScope(std::string_view op_type)
    : previous_(custom_op_prefix), prefix_(op_type) {
  custom_op_prefix = &prefix_;
}

CustomOpScope::~CustomOpScope() { custom_op_prefix = previous_; }

namespace {
// The shapes packed into the operation as the profiler's record carries them
// (profiler::pack_operator_shapes' format: n_in, n_out, then rank and dims of each, zero-padded
// to a multiple of 4 words): written straight into the inline words in one pass when they fit
// (nearly every call), else counted first and put on the heap; none when there are no shapes
// or more than the profiler records.
void pack_shapes(OprBlock& op, std::span<const Shape* const> inputs,
                 std::span<const Shape* const> outputs) {
  op.num_shape_words = 0;
  if (inputs.empty() && outputs.empty()) return;
  auto write = [&](int64_t* out, size_t capacity) -> size_t {
    int64_t* at = out;
    int64_t* const limit = out + capacity;
    *at++ = static_cast<int64_t>(inputs.size());
    *at++ = static_cast<int64_t>(outputs.size());
    for (auto shapes : {inputs, outputs}) {
      for (const Shape* s : shapes) {
        const auto dims = s->dims();
        if (static_cast<size_t>(limit - at) < dims.size() + 1) return 0;  // does not fit
        *at++ = static_cast<int64_t>(dims.size());
        at = std::copy(dims.begin(), dims.end(), at);
      }
    }
    const size_t words = static_cast<size_t>(at - out);
    const size_t padded = (words + 3) & ~size_t{3};
    if (padded > capacity) return 0;
    while (at < out + padded) *at++ = 0;
    return padded;
  };
  op.num_shape_words = write(op.shape_words_inline, OprBlock::kInlineShapeWords);
  if (op.num_shape_words != 0) return;
  size_t words = 2 + inputs.size() + outputs.size();
  for (auto shapes : {inputs, outputs}) {
    for (const Shape* s : shapes) words += s->dims().size();
  }
  const size_t padded = (words + 3) & ~size_t{3};
  if (padded > profiler::kMaxShapeWords) return;  // too many to record
  op.shape_words_heap.resize(padded);
  op.num_shape_words = write(op.shape_words_heap.data(), padded);
}
}  // namespace

void init_opr_block(OprBlock& op, Context ctx, std::span<const VarHandle> reads,
                    std::span<const VarHandle> writes, const PushOptions& options) {
  op.ctx = ctx;
  op.prop = options.prop;
  op.name = options.name;
  op.name_id = options.name_id;
  op.writes.reserve(writes.size());
  for (Var* v : writes) {
    NANOMX_CHECK(v != nullptr) << "engine push" << (options.name ? " of " : "")
                               << (options.name ? options.name : "") << ": null write variable";
    if (std::find(op.writes.begin(), op.writes.end(), v) == op.writes.end()) op.writes.push_back(v);
  }
  op.reads.reserve(reads.size());
  for (Var* v : reads) {
    NANOMX_CHECK(v != nullptr) << "engine push" << (options.name ? " of " : "")
                               << (options.name ? options.name : "") << ": null read variable";
    if (std::find(op.writes.begin(), op.writes.end(), v) == op.writes.end() &&
        std::find(op.reads.begin(), op.reads.end(), v) == op.reads.end()) {
      op.reads.push_back(v);
    }
  }
  op.profiled = options.name != nullptr && profiler::active(options.profile_mode);
  if (op.profiled) {
    op.slot = ctx.profiler_slot();
    pack_shapes(op, options.input_shapes, options.output_shapes);
    const std::string* prefix = custom_op_prefix;
    // Inside a custom operator's body: "<op_type>::<name>" (interned only while profiling).
    if (prefix != nullptr) op.name_id = profiler::intern(*prefix + "::" + options.name);
    static const profiler::NameId kOperatorCategory = profiler::intern("operator");
    // The flow's category matches the operator's (names with "::" are "Custom Operator").
    static const profiler::NameId kCustomCategory = profiler::intern("Custom Operator");
    op.flow_category = prefix != nullptr ? kCustomCategory : kOperatorCategory;
    op.profile_mode = options.profile_mode;
  }
}

void start_push_flow(OprBlock& op) {
  if (op.profiled) op.flow_id = profiler::flow_start(op.flow_category, op.profile_mode);
}

namespace {
struct VarPool {
  base::SpinLock lock;
  Var* head = nullptr;  // guarded by lock
  size_t free = 0;      // guarded by lock
  std::atomic<size_t> allocated{0};
};
constinit VarPool var_pool;  // trivially destructible: usable during static destruction
// A recycled variable keeps its queue's buffer up to this many entries (bounded memory).
constexpr size_t kKeptQueueCapacity = 16;
}  // namespace

Var* new_var() {
  var_pool.lock.lock();
  Var* v = var_pool.head;
  if (v != nullptr) {
    var_pool.head = v->next_free;
    --var_pool.free;
  }
  var_pool.lock.unlock();
  if (v != nullptr) {
    v->next_free = nullptr;
    return v;
  }
  var_pool.allocated.fetch_add(1, std::memory_order_relaxed);
  return new Var;
}

void free_var(Var* v) noexcept {
  if (v == nullptr) return;
  // Back to a fresh variable's state. The caller is the variable's last user, so no lock is
  // needed; the pool's lock publishes these writes to the next owner.
  if (v->queue.capacity() > kKeptQueueCapacity) {
    std::vector<Var::Pending>().swap(v->queue);
  } else {
    v->queue.clear();
  }
  v->head = 0;
  v->running_reads = 0;
  v->write_active = false;
  v->writer = nullptr;
  v->deleting = false;
  v->orders_only = false;
  v->error.reset();
  v->has_error.store(false, std::memory_order_relaxed);
  var_pool.lock.lock();
  v->next_free = var_pool.head;
  var_pool.head = v;
  ++var_pool.free;
  var_pool.lock.unlock();
}

size_t var_pool_allocated() { return var_pool.allocated.load(std::memory_order_relaxed); }

size_t var_pool_free() {
  var_pool.lock.lock();
  const size_t n = var_pool.free;
  var_pool.lock.unlock();
  return n;
}

namespace {
const char* op_name(const OprBlock& op) { return op.name ? op.name : "(unnamed)"; }

ErrorRef wrap_error(const OprBlock& op, const std::exception_ptr& thrown) {
  std::string what;
  try {
    std::rethrow_exception(thrown);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  return std::make_shared<const std::string>(std::string("operator ") + op_name(op) +
                                             " failed: " + what);
}

// The error an input holds (op is then skipped and inherits it), or null.
ErrorRef input_error(const OprBlock& op) {
  if (op.prop == FnProperty::kNoSkip || op.prop == FnProperty::kDeleteVar) return nullptr;
  for (const auto* list : {&op.reads, &op.writes}) {
    for (Var* v : *list) {
      if (!v->has_error.load(std::memory_order_acquire)) continue;
      std::lock_guard lock(v->mutex);
      if (v->error) return v->error;
    }
  }
  return nullptr;
}

// Drops one Completion copy: the last one completes an operation nobody completed.
void release_handle(OprBlock* op) noexcept {
  if (op->async->handles.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
      !op->async->completed.load(std::memory_order_acquire)) {
    try {
      try_complete(op,
                   std::make_shared<const std::string>(
                       std::string("operator ") + op_name(*op) +
                       " failed: its completion was destroyed without being called"),
                   true);
    } catch (...) {  // finishing failed (out of memory): nothing to report it to
    }
  }
  release_opr_ref(op);
}

OprBlock* checked(OprBlock* op) {
  NANOMX_CHECK(op != nullptr) << "engine: an empty Completion (default-constructed or moved "
                                 "from) was called; only the one given to the operation can be";
  return op;
}

void complete_once(OprBlock* op, ErrorRef error) {
  NANOMX_CHECK(try_complete(op, std::move(error), true))
      << "engine: the completion of operator " << op_name(*op)
      << " was called more than once (an asynchronous operation completes exactly once)";
}
}  // namespace

void raise_error(const ErrorRef& error) { throw Error(*error); }

FunctionRef<void()> function_or_nothing(const std::function<void()>& fn) {
  static constexpr auto kNothing = [] {};
  return fn ? FunctionRef<void()>(fn) : FunctionRef<void()>(kNothing);
}

ErrorRef run_opr_block(OprBlock& op, FunctionRef<void()> fn, bool& new_error) {
  new_error = false;
  if (ErrorRef inherited = input_error(op)) return inherited;  // skipped
  const uint64_t begin = op.profiled ? profiler::now_ticks() : 0;
  ErrorRef error;
  try {
    fn();
  } catch (...) {
    error = wrap_error(op, std::current_exception());
    new_error = true;
  }
  if (op.profiled) {
    op.end_ticks = profiler::now_ticks();
    if (op.device_timed) {
      op.launch_flow_id = profiler::record_operator_launch(op.name_id, op.slot, begin, op.end_ticks,
                                                           op.flow_id, op.dependency_flow_id);
    } else {
      profiler::record_operator_packed(op.name_id, op.slot, begin, op.end_ticks, op.shape_words(),
                                       op.num_shape_words, op.flow_id, op.dependency_flow_id);
    }
  }
  return error;
}

void run_async_opr_block(OprBlock* op) {
  if (ErrorRef inherited = input_error(*op)) {
    try_complete(op, std::move(inherited), false);
    return;
  }
  op->async->started = true;
  if (op->profiled) op->async->begin_ticks = profiler::now_ticks();
  // The engine's own copy, held while the function runs: a function that throws after dropping
  // its copy completes op with what it threw, not with "destroyed without being called".
  op->async->handles.store(1, std::memory_order_relaxed);
  op->async->refs.fetch_add(1, std::memory_order_relaxed);
  const Completion self(op);
  try {
    op->async->fn(self);
  } catch (...) {
    ErrorRef error = wrap_error(*op, std::current_exception());
    if (!try_complete(op, error, true)) op->async->completer->report_late_error(std::move(error));
  }
}

bool try_complete(OprBlock* op, ErrorRef error, bool new_error) {
  if (op->async->completed.exchange(true, std::memory_order_acq_rel)) return false;
  if (op->profiled && op->async->started) {
    op->end_ticks = profiler::now_ticks();
    profiler::record_operator_packed(op->name_id, op->slot, op->async->begin_ticks, op->end_ticks,
                                     op->shape_words(), op->num_shape_words, op->flow_id,
                                     op->dependency_flow_id);
  }
  op->async->completer->finish_async(op, std::move(error), new_error);
  return true;
}

void release_opr_ref(OprBlock* op) noexcept {
  if (op->async->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete op;
}

Completion::Completion(const Completion& other) noexcept : op_(other.op_) {
  if (op_ != nullptr) {
    op_->async->refs.fetch_add(1, std::memory_order_relaxed);
    op_->async->handles.fetch_add(1, std::memory_order_relaxed);
  }
}

Completion& Completion::operator=(const Completion& other) noexcept {
  Completion copy(other);
  std::swap(op_, copy.op_);
  return *this;
}

Completion& Completion::operator=(Completion&& other) noexcept {
  Completion moved(std::move(other));
  std::swap(op_, moved.op_);
  return *this;
}

Completion::~Completion() {
  if (op_ != nullptr) release_handle(op_);
}

void Completion::done() const { complete_once(checked(op_), nullptr); }

void Completion::done(std::exception_ptr error) const {
  OprBlock* op = checked(op_);
  complete_once(op, error ? wrap_error(*op, error) : nullptr);
}

void Completion::fail(std::string_view message) const {
  OprBlock* op = checked(op_);
  complete_once(op, std::make_shared<const std::string>(std::string("operator ") + op_name(*op) +
                                                        " failed: " + std::string(message)));
}

EngineType parse_engine_type(std::string_view name) {
  if (name == "ThreadedEnginePerDevice" || name == "ThreadedEngine") {
    return EngineType::kThreadedPerDevice;
  }
  if (name == "NaiveEngine") return EngineType::kNaive;
  NANOMX_THROW() << "unknown engine type '" << name
                 << "' (valid: ThreadedEnginePerDevice, ThreadedEngine, NaiveEngine)";
  return EngineType::kNaive;
}

VarHandle Engine::new_ordering_variable() {
  VarHandle v = new_variable();
  v->orders_only = true;  // not yet shared: no lock needed
  return v;
}

std::unique_ptr<Engine> Engine::create(EngineType type, int cpu_workers, size_t inline_bytes) {
  NANOMX_CHECK(cpu_workers >= 1) << "engine: cpu worker threads must be at least 1, got "
                                 << cpu_workers;
  if (type == EngineType::kNaive) return make_naive_engine();
  return make_threaded_engine(cpu_workers, inline_bytes);
}

namespace {
Engine* global_engine = nullptr;

// At exit, before the libraries' own destructors run (OpenBLAS frees its buffers then), every
// pushed operation finishes: a worker still inside a kernel during teardown would crash. Errors
// kept on variables are dropped here; there is nobody left to raise them to.
void finish_pending_work_at_exit() {
  try {
    global_engine->wait_all();
  } catch (...) {
  }
}
}  // namespace

Engine& Engine::get() {
  // Never destroyed: arrays with static lifetime may push deletions during static destruction.
  static Engine* engine = [] {
    const auto type_name = env::get("ENGINE_TYPE");
    const EngineType type =
        type_name ? parse_engine_type(*type_name) : EngineType::kThreadedPerDevice;
    const int inline_bytes =
        env::get_int("ENGINE_INLINE_BYTES", static_cast<int>(kDefaultInlineBytes));
    NANOMX_CHECK(inline_bytes >= 0)
        << "environment variable NANOMX_ENGINE_INLINE_BYTES must be 0 (off) or a byte count, got "
        << inline_bytes;
    global_engine =
        create(type, env::get_int("CPU_WORKER_NTHREADS", 1), static_cast<size_t>(inline_bytes))
            .release();
    // Registered after the dynamic linker's own exit handler, so it runs before it.
    std::atexit(finish_pending_work_at_exit);
    return global_engine;
  }();
  return *engine;
}

}  // namespace nanomx::engine
