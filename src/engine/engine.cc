#include <algorithm>
#include <mutex>
#include <string>

#include "engine/engines.h"
#include "engine/var.h"
#include "nanomx/env.h"
#include "nanomx/error.h"

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
    op.num_input_shapes = options.input_shapes.size();
    op.num_shapes = options.input_shapes.size() + options.output_shapes.size();
    size_t total_dims = 0;
    for (auto shapes : {options.input_shapes, options.output_shapes}) {
      for (const Shape* s : shapes) total_dims += static_cast<size_t>(s->ndim());
    }
    const bool fits =
        total_dims <= OprBlock::kInlineDims && op.num_shapes <= OprBlock::kInlineShapes;
    if (!fits) {
      op.dims_heap.resize(std::max<size_t>(total_dims, 1));
      op.ndims_heap.resize(op.num_shapes);
    }
    int64_t* dims = fits ? op.dims_inline : op.dims_heap.data();
    int* ndims = fits ? op.ndims_inline : op.ndims_heap.data();
    for (auto shapes : {options.input_shapes, options.output_shapes}) {
      for (const Shape* s : shapes) {
        *ndims++ = s->ndim();
        dims = std::copy(s->dims().begin(), s->dims().end(), dims);
      }
    }
    static const profiler::NameId kOperatorCategory = profiler::intern("operator");
    op.flow_id = profiler::flow_start(kOperatorCategory, options.profile_mode);
  }
}

namespace {
std::exception_ptr wrap_error(const OprBlock& op) {
  std::string what;
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  return std::make_exception_ptr(
      Error(std::string("operator ") + (op.name ? op.name : "(unnamed)") + " failed: " + what));
}

void record(const OprBlock& op, uint64_t begin, uint64_t end) {
  profiler::ShapeView inline_views[OprBlock::kInlineShapes];
  std::vector<profiler::ShapeView> heap_views;
  profiler::ShapeView* views = inline_views;
  if (op.num_shapes > OprBlock::kInlineShapes) {
    heap_views.resize(op.num_shapes);
    views = heap_views.data();
  }
  const int64_t* dims = op.dims();
  const int* ndims = op.ndims();
  for (size_t i = 0; i < op.num_shapes; ++i) {
    views[i] = {dims, ndims[i]};
    dims += ndims[i];
  }
  profiler::OperatorShapes shapes{
      std::span<const profiler::ShapeView>(views, op.num_input_shapes),
      std::span<const profiler::ShapeView>(views + op.num_input_shapes,
                                           op.num_shapes - op.num_input_shapes)};
  profiler::record_operator(op.name_id, op.slot, begin, end, shapes, op.flow_id);
}
}  // namespace

std::exception_ptr run_opr_block(OprBlock& op, bool& new_error) {
  new_error = false;
  if (op.prop != FnProperty::kNoSkip && op.prop != FnProperty::kDeleteVar) {
    for (const auto* list : {&op.reads, &op.writes}) {
      for (Var* v : *list) {
        std::lock_guard lock(v->mutex);
        if (v->error) return v->error;  // skipped: inherits the input's error
      }
    }
  }
  const uint64_t begin = op.profiled ? profiler::now_ticks() : 0;
  std::exception_ptr error;
  try {
    if (op.fn) op.fn();
  } catch (...) {
    error = wrap_error(op);
    new_error = true;
  }
  if (op.profiled) record(op, begin, profiler::now_ticks());
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

Engine& Engine::get() {
  // Never destroyed: arrays with static lifetime may push deletions during static destruction.
  static Engine* engine = [] {
    const auto type_name = env::get("ENGINE_TYPE");
    const EngineType type =
        type_name ? parse_engine_type(*type_name) : EngineType::kThreadedPerDevice;
    return create(type, env::get_int("CPU_WORKER_NTHREADS", 1)).release();
  }();
  return *engine;
}

}  // namespace nanomx::engine
