#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "engine/engines.h"
#include "engine/var.h"
#include "nanomx/env.h"
#include "nanomx/error.h"
#include "profiler/hooks.h"

namespace nanomx::engine {

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
    // Packed straight into the operation (profiler::pack_operator_shapes' format: n_in, n_out,
    // then rank and dims of each, zero-padded to a multiple of 4 words).
    size_t words = 2 + options.input_shapes.size() + options.output_shapes.size();
    for (auto shapes : {options.input_shapes, options.output_shapes}) {
      for (const Shape* s : shapes) words += s->dims().size();
    }
    const size_t padded = (words + 3) & ~size_t{3};
    int64_t* out = nullptr;
    if (words == 2 || padded > profiler::kMaxShapeWords) {
      op.num_shape_words = 0;  // no shapes, or too many to record
    } else if (padded <= OprBlock::kInlineShapeWords) {
      out = op.shape_words_inline;
    } else {
      op.shape_words_heap.resize(padded);
      out = op.shape_words_heap.data();
    }
    if (out != nullptr) {
      op.num_shape_words = padded;
      int64_t* at = out;
      *at++ = static_cast<int64_t>(options.input_shapes.size());
      *at++ = static_cast<int64_t>(options.output_shapes.size());
      for (auto shapes : {options.input_shapes, options.output_shapes}) {
        for (const Shape* s : shapes) {
          *at++ = s->ndim();
          at = std::copy(s->dims().begin(), s->dims().end(), at);
        }
      }
      while (at < out + padded) *at++ = 0;
    }
    static const profiler::NameId kOperatorCategory = profiler::intern("operator");
    op.flow_id = profiler::flow_start(kOperatorCategory, options.profile_mode);
  }
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
ErrorRef wrap_error(const OprBlock& op) {
  std::string what;
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  return std::make_shared<const std::string>(
      std::string("operator ") + (op.name ? op.name : "(unnamed)") + " failed: " + what);
}

}  // namespace

void raise_error(const ErrorRef& error) { throw Error(*error); }

ErrorRef run_opr_block(OprBlock& op, bool& new_error) {
  new_error = false;
  if (op.prop != FnProperty::kNoSkip && op.prop != FnProperty::kDeleteVar) {
    for (const auto* list : {&op.reads, &op.writes}) {
      for (Var* v : *list) {
        if (!v->has_error.load(std::memory_order_acquire)) continue;
        std::lock_guard lock(v->mutex);
        if (v->error) return v->error;  // skipped: inherits the input's error
      }
    }
  }
  const uint64_t begin = op.profiled ? profiler::now_ticks() : 0;
  ErrorRef error;
  try {
    if (op.fn) op.fn();
  } catch (...) {
    error = wrap_error(op);
    new_error = true;
  }
  if (op.profiled) {
    profiler::record_operator_packed(op.name_id, op.slot, begin, profiler::now_ticks(),
                                     op.shape_words(), op.num_shape_words, op.flow_id);
  }
  return error;
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

std::unique_ptr<Engine> Engine::create(EngineType type, int cpu_workers) {
  NANOMX_CHECK(cpu_workers >= 1) << "engine: cpu worker threads must be at least 1, got "
                                 << cpu_workers;
  if (type == EngineType::kNaive) return make_naive_engine();
  return make_threaded_engine(cpu_workers);
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
    global_engine = create(type, env::get_int("CPU_WORKER_NTHREADS", 1)).release();
    // Registered after the dynamic linker's own exit handler, so it runs before it.
    std::atexit(finish_pending_work_at_exit);
    return global_engine;
  }();
  return *engine;
}

}  // namespace nanomx::engine
